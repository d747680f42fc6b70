/// Which of a DEFLATE block's three Huffman codes a table error is about.
public enum HuffmanCodeKind: String, Sendable, Hashable {
    /// The code that codes the other two codes' lengths (a dynamic block's header).
    case codeLengths = "code length"
    /// Literals, the end-of-block symbol and match lengths.
    case literalLength = "literal/length"
    /// Match distances.
    case distance
}

/// Why a raw DEFLATE stream was refused.
public enum InflateError: Error, Sendable, Hashable, CustomStringConvertible {
    /// The input ended before the final block did.
    case truncated
    /// A block header with type 3, which RFC 1951 reserves.
    case badBlockType
    /// A stored block whose LEN is not the complement of its NLEN.
    case storedLengthMismatch
    /// A dynamic block's code lengths make no code: what is wrong with them.
    case badCodeLengths(String)
    /// More codes of some length than that length has room for.
    case overSubscribed(HuffmanCodeKind)
    /// Codes that leave some bit patterns meaning nothing (allowed only for a single code of one bit).
    case incomplete(HuffmanCodeKind)
    /// A code the block's table does not assign, or a symbol RFC 1951 leaves unused
    /// (literal/length 286 and 287, distance 30 and 31).
    case invalidSymbol(HuffmanCodeKind)
    /// A match reaching further back than the output so far.
    case distanceTooFar(distance: Int, available: Int)
    /// The output would pass the caller's limit; nothing past the limit was written.
    case outputLimitExceeded(limit: Int)
    /// Whole bytes after the final block.
    case trailingBytes(Int)

    public var description: String {
        switch self {
        case .truncated: "the DEFLATE stream ends before its final block does"
        case .badBlockType: "a DEFLATE block of the reserved type 3"
        case .storedLengthMismatch: "a stored DEFLATE block whose length and its complement disagree"
        case .badCodeLengths(let what): "bad Huffman code lengths: \(what)"
        case .overSubscribed(let kind): "an over-subscribed \(kind.rawValue) Huffman code"
        case .incomplete(let kind): "an incomplete \(kind.rawValue) Huffman code"
        case .invalidSymbol(let kind): "an invalid \(kind.rawValue) code"
        case .distanceTooFar(let distance, let available): "a match \(distance) bytes back after only \(available) bytes of output"
        case .outputLimitExceeded(let limit): "the DEFLATE output passes the limit of \(limit) bytes"
        case .trailingBytes(let count): "\(count) bytes after the final DEFLATE block"
        }
    }
}

/// A raw DEFLATE decoder (RFC 1951: stored, fixed and dynamic Huffman blocks), as zip entries
/// of method 8 carry it: no zlib or gzip wrapper.
///
/// Huffman codes are decoded through a table indexed by the next 10 input bits, which gives
/// most symbols in one look-up; the rare longer codes are walked bit by bit from the code's
/// counts per length (canonical decoding).
public enum Inflate {
    /// The bytes `input` decodes to, at most `maxOutputBytes` of them.
    ///
    /// The input must be exactly one stream: bytes after its final block are refused, so a
    /// caller that knows the compressed size learns when it was wrong.
    public static func decompress(_ input: [UInt8], maxOutputBytes: Int) throws(InflateError) -> [UInt8] {
        let result: Result<[UInt8], InflateError> = input.withUnsafeBufferPointer { buffer in
            Result { () throws(InflateError) in try decompress(buffer, maxOutputBytes: maxOutputBytes, sizeHint: nil) }
        }
        return try result.get()
    }

    /// The same over memory the caller holds; `sizeHint` (the expected output size, if known)
    /// sizes the first output buffer.
    static func decompress(_ input: UnsafeBufferPointer<UInt8>, maxOutputBytes: Int, sizeHint: Int?) throws(InflateError) -> [UInt8] {
        var decoder = InflateDecoder(input: input, maxOutput: max(0, maxOutputBytes), sizeHint: sizeHint)
        defer { decoder.output.release() }
        try decoder.run()
        let unused = decoder.bitCount / 8
        if decoder.position - unused < input.count { throw .trailingBytes(input.count - (decoder.position - unused)) }
        return decoder.output.array()
    }
}

/// The output of one decoding: memory of our own that grows by doubling, never past the limit.
struct InflateOutput {
    var base: UnsafeMutablePointer<UInt8>
    var capacity: Int
    var count = 0
    let limit: Int

    init(limit: Int, initialCapacity: Int) {
        self.limit = limit
        capacity = max(0, min(limit, initialCapacity))
        base = .allocate(capacity: max(1, capacity))
    }

    /// Room for `more` bytes past `count`, or the limit error.
    @inline(__always)
    mutating func reserve(_ more: Int) throws(InflateError) {
        if more <= capacity - count { return }
        if more > limit - count { throw .outputLimitExceeded(limit: limit) }
        // Doubling from at least 64 bytes, never past the limit, which has room (checked above).
        var grown = max(capacity, 64)
        while grown < count + more { grown = grown > limit / 2 ? limit : grown * 2 }
        grown = min(grown, limit)
        let moved = UnsafeMutablePointer<UInt8>.allocate(capacity: grown)
        moved.update(from: base, count: count)
        base.deallocate()
        base = moved
        capacity = grown
    }

    func array() -> [UInt8] { Array(UnsafeBufferPointer(start: base, count: count)) }

    func release() { base.deallocate() }
}

/// A Huffman code of at most 15 bits, ready for decoding.
struct HuffmanTable {
    static let primaryBits = 10
    static let primaryMask: UInt64 = (1 << primaryBits) - 1
    /// Entry flags: the code is longer than `primaryBits` (walk it), or no code starts so.
    static let longFlag: UInt32 = 1 << 5
    static let invalidFlag: UInt32 = 1 << 6

    let kind: HuffmanCodeKind
    /// Indexed by the next `primaryBits` input bits: symbol << 16 | flags | code length (bits 0-4).
    /// An invalid entry has length 1, so that too few bits report truncation before invalidity.
    var primary: [UInt32]
    /// Codes per length, 0...15.
    var counts: [Int]
    /// Symbols ordered by (code length, symbol): canonical code order.
    var symbols: [UInt16]

    /// The code given by each symbol's code length (0: unused).
    ///
    /// Over-subscribed lengths are refused, and so are incomplete ones, except that the
    /// literal/length and distance codes may hold a single code of one bit (and the distance
    /// code none at all), as zlib allows.
    init(lengths: ArraySlice<UInt8>, kind: HuffmanCodeKind) throws(InflateError) {
        self.kind = kind
        var counts = [Int](repeating: 0, count: 16)
        for length in lengths { counts[Int(length)] += 1 }
        counts[0] = 0
        var left = 1
        for length in 1...15 {
            left = left << 1 - counts[length]
            if left < 0 { throw .overSubscribed(kind) }
        }
        let used = counts.reduce(0, +)
        if left > 0 {
            let single = used == 1 && counts[1] == 1
            let none = used == 0 && kind == .distance
            if kind == .codeLengths || !(single || none) { throw .incomplete(kind) }
        }
        var offsets = [Int](repeating: 0, count: 16)
        for length in 1..<15 { offsets[length + 1] = offsets[length] + counts[length] }
        var symbols = [UInt16](repeating: 0, count: used)
        var primary = [UInt32](repeating: HuffmanTable.invalidFlag | 1, count: 1 << HuffmanTable.primaryBits)
        var nextCode = [Int](repeating: 0, count: 16)
        var code = 0
        for length in 1...15 {
            code = (code + counts[length - 1]) << 1
            nextCode[length] = code
        }
        for (index, length) in lengths.enumerated() where length > 0 {
            let length = Int(length)
            let symbol = index
            symbols[offsets[length]] = UInt16(symbol)
            offsets[length] += 1
            let reversed = HuffmanTable.reverse(nextCode[length], bits: length)
            nextCode[length] += 1
            if length <= HuffmanTable.primaryBits {
                let entry = UInt32(symbol) << 16 | UInt32(length)
                var slot = reversed
                while slot < primary.count {
                    primary[slot] = entry
                    slot += 1 << length
                }
            } else {
                primary[reversed & Int(HuffmanTable.primaryMask)] = HuffmanTable.longFlag
            }
        }
        self.primary = primary
        self.counts = counts
        self.symbols = symbols
    }

    /// The low `bits` bits of `code` in reverse order: DEFLATE sends codes from their top bit,
    /// packed from each byte's lowest bit.
    static func reverse(_ code: Int, bits: Int) -> Int {
        var reversed = 0
        var code = code
        for _ in 0..<bits {
            reversed = reversed << 1 | code & 1
            code >>= 1
        }
        return reversed
    }
}

/// One decoding in progress: the input, a bit buffer filled from its lowest bit, the output.
struct InflateDecoder {
    let input: UnsafeBufferPointer<UInt8>
    /// The next input byte to load into `bits`.
    var position = 0
    var bits: UInt64 = 0
    var bitCount = 0
    var output: InflateOutput

    init(input: UnsafeBufferPointer<UInt8>, maxOutput: Int, sizeHint: Int?) {
        self.input = input
        output = InflateOutput(limit: maxOutput, initialCapacity: sizeHint ?? max(1 << 16, input.count.multipliedReportingOverflow(by: 4).partialValue))
    }

    static let lengthBase: [UInt16] = [3, 4, 5, 6, 7, 8, 9, 10, 11, 13, 15, 17, 19, 23, 27, 31, 35, 43, 51, 59, 67, 83, 99, 115, 131, 163, 195, 227, 258]
    static let lengthExtra: [UInt8] = [0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3, 4, 4, 4, 4, 5, 5, 5, 5, 0]
    static let distanceBase: [UInt16] = [
        1, 2, 3, 4, 5, 7, 9, 13, 17, 25, 33, 49, 65, 97, 129, 193, 257, 385, 513, 769, 1025, 1537, 2049, 3073, 4097, 6145, 8193, 12289, 16385, 24577,
    ]
    static let distanceExtra: [UInt8] = [0, 0, 0, 0, 1, 1, 2, 2, 3, 3, 4, 4, 5, 5, 6, 6, 7, 7, 8, 8, 9, 9, 10, 10, 11, 11, 12, 12, 13, 13]
    /// The order a dynamic block sends its code length code's lengths in.
    static let codeLengthOrder = [16, 17, 18, 0, 8, 7, 9, 6, 10, 5, 11, 4, 12, 3, 13, 2, 14, 1, 15]

    static let fixedLiteralLength: HuffmanTable = {
        var lengths = [UInt8](repeating: 8, count: 288)
        for symbol in 144..<256 { lengths[symbol] = 9 }
        for symbol in 256..<280 { lengths[symbol] = 7 }
        // Complete by construction, so the build cannot fail.
        return (try? HuffmanTable(lengths: lengths[...], kind: .literalLength)) ?? HuffmanTable.empty
    }()
    static let fixedDistance: HuffmanTable = {
        let lengths = [UInt8](repeating: 5, count: 32)
        return (try? HuffmanTable(lengths: lengths[...], kind: .distance)) ?? HuffmanTable.empty
    }()

    /// Tops the bit buffer up to at least 57 bits while input lasts.
    @inline(__always)
    mutating func refill() {
        while bitCount <= 56, position < input.count {
            bits |= UInt64(input[position]) << UInt64(bitCount)
            position += 1
            bitCount += 8
        }
    }

    /// The next `count` bits (at most 32), first bit lowest.
    @inline(__always)
    mutating func take(_ count: Int) throws(InflateError) -> Int {
        if bitCount < count {
            refill()
            if bitCount < count { throw .truncated }
        }
        let value = Int(bits & ((1 << UInt64(count)) - 1))
        bits >>= UInt64(count)
        bitCount -= count
        return value
    }

    /// The next symbol of `table`.
    @inline(__always)
    mutating func decode(_ table: HuffmanTable) throws(InflateError) -> Int {
        if bitCount < 15 { refill() }
        let entry = table.primary[Int(bits & HuffmanTable.primaryMask)]
        let length = Int(entry & 31)
        if entry & (HuffmanTable.longFlag | HuffmanTable.invalidFlag) == 0, length <= bitCount {
            bits >>= UInt64(length)
            bitCount -= length
            return Int(entry >> 16)
        }
        if entry & HuffmanTable.longFlag != 0 { return try decodeLong(table) }
        if length > bitCount { throw .truncated }
        throw .invalidSymbol(table.kind)
    }

    /// Canonical decoding one bit at a time, for codes longer than the primary table.
    mutating func decodeLong(_ table: HuffmanTable) throws(InflateError) -> Int {
        var code = 0
        var first = 0
        var index = 0
        for length in 1...15 {
            if length > bitCount { throw .truncated }
            code |= Int((bits >> UInt64(length - 1)) & 1)
            let count = table.counts[length]
            if code - first < count {
                bits >>= UInt64(length)
                bitCount -= length
                return Int(table.symbols[index + code - first])
            }
            index += count
            first = (first + count) << 1
            code <<= 1
        }
        throw .invalidSymbol(table.kind)
    }

    /// Decodes blocks up to and including the final one.
    mutating func run() throws(InflateError) {
        var final = false
        while !final {
            final = try take(1) == 1
            switch try take(2) {
            case 0: try storedBlock()
            case 1: try huffmanBlock(InflateDecoder.fixedLiteralLength, InflateDecoder.fixedDistance)
            case 2:
                let (literalLength, distance) = try dynamicTables()
                try huffmanBlock(literalLength, distance)
            default: throw .badBlockType
            }
        }
    }

    /// A stored block: to the byte boundary, LEN, NLEN, then LEN bytes as they are.
    mutating func storedBlock() throws(InflateError) {
        // Drop the partial byte, then give the whole bytes in the buffer back to the input.
        bits = 0
        position -= bitCount / 8
        bitCount = 0
        guard input.count - position >= 4 else { throw .truncated }
        let length = Int(input[position]) | Int(input[position + 1]) << 8
        let complement = Int(input[position + 2]) | Int(input[position + 3]) << 8
        position += 4
        if length != complement ^ 0xFFFF { throw .storedLengthMismatch }
        guard input.count - position >= length, let start = input.baseAddress else { throw .truncated }
        try output.reserve(length)
        (output.base + output.count).update(from: start + position, count: length)
        output.count += length
        position += length
    }

    /// A dynamic block's header: the code length code, then the two codes it codes.
    mutating func dynamicTables() throws(InflateError) -> (HuffmanTable, HuffmanTable) {
        let literalCount = try take(5) + 257
        let distanceCount = try take(5) + 1
        let codeLengthCount = try take(4) + 4
        if literalCount > 286 { throw .badCodeLengths("\(literalCount) literal/length codes, more than 286") }
        if distanceCount > 30 { throw .badCodeLengths("\(distanceCount) distance codes, more than 30") }
        var codeLengthLengths = [UInt8](repeating: 0, count: 19)
        for index in 0..<codeLengthCount {
            codeLengthLengths[InflateDecoder.codeLengthOrder[index]] = UInt8(try take(3))
        }
        let codeLengths = try HuffmanTable(lengths: codeLengthLengths[...], kind: .codeLengths)
        let total = literalCount + distanceCount
        var lengths = [UInt8](repeating: 0, count: total)
        var index = 0
        while index < total {
            let symbol = try decode(codeLengths)
            if symbol < 16 {
                lengths[index] = UInt8(symbol)
                index += 1
                continue
            }
            var value: UInt8 = 0
            var repeatCount: Int
            switch symbol {
            case 16:
                if index == 0 { throw .badCodeLengths("a repeat with no length before it") }
                value = lengths[index - 1]
                repeatCount = 3 + (try take(2))
            case 17: repeatCount = 3 + (try take(3))
            default: repeatCount = 11 + (try take(7))
            }
            if repeatCount > total - index { throw .badCodeLengths("a repeat past the last code") }
            for _ in 0..<repeatCount {
                lengths[index] = value
                index += 1
            }
        }
        if lengths[256] == 0 { throw .badCodeLengths("no code for the end of the block") }
        let literalLength = try HuffmanTable(lengths: lengths[0..<literalCount], kind: .literalLength)
        let distance = try HuffmanTable(lengths: lengths[literalCount...], kind: .distance)
        return (literalLength, distance)
    }

    /// Literals and matches up to the end-of-block symbol.
    mutating func huffmanBlock(_ literalLength: HuffmanTable, _ distanceTable: HuffmanTable) throws(InflateError) {
        while true {
            let symbol = try decode(literalLength)
            if symbol < 256 {
                try output.reserve(1)
                output.base[output.count] = UInt8(truncatingIfNeeded: symbol)
                output.count += 1
                continue
            }
            if symbol == 256 { return }
            let lengthIndex = symbol - 257
            if lengthIndex >= 29 { throw .invalidSymbol(.literalLength) }
            let length = Int(InflateDecoder.lengthBase[lengthIndex]) + (try take(Int(InflateDecoder.lengthExtra[lengthIndex])))
            let distanceSymbol = try decode(distanceTable)
            if distanceSymbol >= 30 { throw .invalidSymbol(.distance) }
            let distance = Int(InflateDecoder.distanceBase[distanceSymbol]) + (try take(Int(InflateDecoder.distanceExtra[distanceSymbol])))
            if distance > output.count { throw .distanceTooFar(distance: distance, available: output.count) }
            try output.reserve(length)
            let to = output.base + output.count
            let from = to - distance
            if distance >= length {
                to.update(from: from, count: length)
            } else {
                // Overlapping: the output repeats with period `distance`, so copy the repeated
                // part in chunks that double and stay whole periods (the source never overlaps).
                var copied = 0
                while copied < length {
                    let chunk = min(copied + distance, length - copied)
                    (to + copied).update(from: from, count: chunk)
                    copied += chunk
                }
            }
            output.count += length
        }
    }
}

extension HuffmanTable {
    /// Stands in for a fixed table whose build failed, which cannot happen; decodes nothing.
    static var empty: HuffmanTable {
        HuffmanTable(
            kind: .literalLength, primary: [UInt32](repeating: invalidFlag | 1, count: 1 << primaryBits),
            counts: [Int](repeating: 0, count: 16), symbols: [])
    }

    private init(kind: HuffmanCodeKind, primary: [UInt32], counts: [Int], symbols: [UInt16]) {
        self.kind = kind
        self.primary = primary
        self.counts = counts
        self.symbols = symbols
    }
}
