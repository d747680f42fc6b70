import Foundation

/// Why a text is not strict JSON, and where: a reason, a byte offset, and a short message.
///
/// The message never quotes the input (it may be hostile or secret), only positions and limits.
public struct JSONSyntaxError: Error, Sendable, Equatable, CustomStringConvertible {
    /// What is wrong with the text.
    public enum Reason: Sendable, Equatable {
        /// An array or object opens deeper than `limit` levels (`[]` is one level).
        case tooDeep(limit: Int)
        /// A comma directly before `]` or `}` (`[1,]`, `{"a":1,}`); offset is the comma's.
        case trailingComma
        /// A byte that cannot start or continue anything here (`[1 2]`, `{1:2}`, `tru`e misspelt).
        case unexpectedByte
        /// A backslash not followed by one of `" \ / b f n r t` or by `u` and four hex digits.
        case badEscape
        /// A raw byte below 0x20 inside a string (it must be escaped).
        case controlCharacter
        /// Bytes in a string that are not UTF-8: overlong forms, surrogates, above U+10FFFF, stray continuations.
        case invalidUTF8
        /// A number outside the grammar: leading zeros, `1.`, `.5`, `1e`, `-`, `1.2.3`.
        case badNumber
        /// Something other than whitespace after the one top-level value.
        case trailingData
        /// The text ends inside a value, or holds no value at all; offset is the text's length.
        case unexpectedEnd
        /// A `\uD800`–`\uDFFF` escape that is not a high surrogate directly followed by a low one.
        case loneSurrogate
        /// A key an object already has (escapes resolved), when keys must be unique; offset is the second's.
        case duplicateKey
    }

    /// What is wrong.
    public let reason: Reason
    /// The index of the first byte at fault, counted from 0; the text's length for `unexpectedEnd`.
    public let offset: Int

    public init(_ reason: Reason, at offset: Int) {
        self.reason = reason
        self.offset = offset
    }

    /// One short line, e.g. `trailing comma at byte 7`. Bytes are counted from 1 here, as a
    /// person counts them (the 7th byte), while `offset` counts from 0.
    public var message: String {
        let at = "at byte \(offset + 1)"
        switch reason {
        case .tooDeep(let limit): return "nesting deeper than \(limit) levels \(at)"
        case .trailingComma: return "trailing comma \(at)"
        case .unexpectedByte: return "unexpected character \(at)"
        case .badEscape: return "invalid escape sequence \(at)"
        case .controlCharacter: return "unescaped control character in a string \(at)"
        case .invalidUTF8: return "invalid UTF-8 \(at)"
        case .badNumber: return "malformed number \(at)"
        case .trailingData: return "unexpected data after the JSON value \(at)"
        case .unexpectedEnd: return "unexpected end of input after \(offset) bytes"
        case .loneSurrogate: return "unpaired surrogate escape \(at)"
        case .duplicateKey: return "duplicate key \(at)"
        }
    }

    public var description: String { message }
}

/// A strict RFC 8259 check of JSON text: one pass, no recursion, nesting depth bounded.
///
/// Foundation's parsers recurse once per level, so a few hundred `[` overflow a small
/// thread stack, and they accept more than RFC 8259 (a trailing comma). Every input path
/// runs this first, so Foundation only ever sees shallow, strictly valid JSON. The check
/// keeps a depth counter and one bit per open container (array or object), allocated on
/// the stack for any sensible limit; its cost grows with the input's length only.
///
/// What it accepts beyond the grammar is what Foundation also accepts: any top-level value,
/// duplicate keys (unless `uniqueKeys`: I-JSON, RFC 7493, which the gateway holds clients
/// to), and numbers of any magnitude (range is the decoder's business). What it
/// refuses that Foundation may take: trailing commas, `\u` escapes of unpaired surrogates
/// (they cannot become a Swift `String`), nesting deeper than `maxDepth`, and text that is
/// not UTF-8 (Foundation skips a byte order mark and guesses UTF-16 or UTF-32 from NUL
/// bytes at the start; RFC 8259 requires UTF-8 between systems).
public enum StrictJSON {
    /// Nesting levels accepted unless configured otherwise: ample for any envelope or body here.
    public static let defaultMaxDepth = 64

    /// Throws unless `bytes` is exactly one JSON value (RFC 8259) with optional surrounding
    /// whitespace, nested at most `maxDepth` levels (`[]` and `{}` are one level), and with
    /// `uniqueKeys` no object giving a key twice (escapes resolved: `"a"` and `"\u0061"` are one;
    /// keys compare as Swift strings do, so canonically equivalent ones are one key, as they
    /// are in the dictionaries that read them).
    public static func check(_ bytes: UnsafeRawBufferPointer, maxDepth: Int = defaultMaxDepth, uniqueKeys: Bool = false) throws(JSONSyntaxError) {
        // One bit per open container; depth never exceeds the input's length.
        let words = (min(max(maxDepth, 0), bytes.count) + 63) / 64 + 1
        let failure = withUnsafeTemporaryAllocation(of: UInt64.self, capacity: words) { containers -> JSONSyntaxError? in
            var scanner = Scanner(bytes: bytes, maxDepth: maxDepth, containers: containers)
            scanner.uniqueKeys = uniqueKeys
            do throws(JSONSyntaxError) {
                try scanner.document()
                return nil
            } catch {
                return error
            }
        }
        if let failure { throw failure }
    }

    /// The same check, which also lends the top-level members of an object to `visit` as they
    /// are read, as `JSONSpan.walkMembers` does (the key between its quotes, escapes unresolved;
    /// the value's bytes and their range in `json`), so a reader of an envelope's head needs no
    /// second walk. After `visit` returns false the check goes on, visiting nothing more.
    /// Throws unless `json` is strict JSON; returns false when it is not an object or `visit`
    /// stopped.
    public static func checkMembers(
        _ json: Data, maxDepth: Int = defaultMaxDepth,
        _ visit: (_ key: UnsafeBufferPointer<UInt8>, _ value: UnsafeBufferPointer<UInt8>, _ range: Range<Int>) -> Bool
    ) throws(JSONSyntaxError) -> Bool {
        let outcome = json.withUnsafeBytes { raw -> Result<Bool, JSONSyntaxError> in
            let bytes = raw.bindMemory(to: UInt8.self)
            let words = (min(max(maxDepth, 0), raw.count) + 63) / 64 + 1
            return withUnsafeTemporaryAllocation(of: UInt64.self, capacity: words) { containers in
                var scanner = Scanner(bytes: raw, maxDepth: maxDepth, containers: containers)
                var accepted = true
                do throws(JSONSyntaxError) {
                    try scanner.document { keyStart, keyEnd, valueStart, valueEnd in
                        guard accepted else { return }
                        accepted = visit(
                            UnsafeBufferPointer(rebasing: bytes[(keyStart + 1)..<(keyEnd - 1)]),
                            UnsafeBufferPointer(rebasing: bytes[valueStart..<valueEnd]),
                            (json.startIndex + valueStart)..<(json.startIndex + valueEnd))
                    }
                } catch {
                    return .failure(error)
                }
                return .success(accepted && scanner.topIsObject)
            }
        }
        return try outcome.get()
    }

    /// Throws unless `bytes` (a `Data`, `[UInt8]`, `ArraySlice<UInt8>`…) is one strict JSON value;
    /// see `check(_:maxDepth:uniqueKeys:)` on a raw buffer.
    public static func check(_ bytes: some ContiguousBytes, maxDepth: Int = defaultMaxDepth, uniqueKeys: Bool = false) throws(JSONSyntaxError) {
        let failure = bytes.withUnsafeBytes { raw -> JSONSyntaxError? in
            do throws(JSONSyntaxError) {
                try check(raw, maxDepth: maxDepth, uniqueKeys: uniqueKeys)
                return nil
            } catch {
                return error
            }
        }
        if let failure { throw failure }
    }
}

/// The state machine behind `StrictJSON.check`: where it is in the text, what may come next,
/// and which containers are open.
private struct Scanner {
    /// What the grammar allows at the next non-whitespace byte.
    enum Expecting {
        /// A value: at the start, after `:`, after `,` in an array.
        case value
        /// A value or `]`, just after `[`.
        case valueOrArrayEnd
        /// A key or `}`, just after `{`.
        case keyOrObjectEnd
        /// A key, after `,` in an object.
        case key
        /// `:` after a key.
        case colon
        /// `,` or the end of the open container, or the end of the text at depth 0.
        case separatorOrEnd
    }

    let bytes: UnsafeRawBufferPointer
    let maxDepth: Int
    /// Bit `d` set: the container at depth `d + 1` is an object; clear: an array.
    let containers: UnsafeMutableBufferPointer<UInt64>
    var index = 0
    var depth = 0
    /// Where the last `,` was, for reporting a trailing comma there.
    var lastComma = 0
    /// Whether an object may not give a key twice; then the keys of each open object, by depth.
    var uniqueKeys = false
    var keys: [Set<String>] = []

    init(bytes: UnsafeRawBufferPointer, maxDepth: Int, containers: UnsafeMutableBufferPointer<UInt64>) {
        self.bytes = bytes
        self.maxDepth = maxDepth
        self.containers = containers
    }

    // ASCII bytes the grammar names.
    static let quote = UInt8(ascii: "\""), backslash = UInt8(ascii: "\\"), comma = UInt8(ascii: ","), colon = UInt8(ascii: ":")
    static let openArray = UInt8(ascii: "["), closeArray = UInt8(ascii: "]")
    static let openObject = UInt8(ascii: "{"), closeObject = UInt8(ascii: "}")
    static let minus = UInt8(ascii: "-"), plus = UInt8(ascii: "+"), dot = UInt8(ascii: ".")
    static let zero = UInt8(ascii: "0"), nine = UInt8(ascii: "9")

    var innermostIsObject: Bool {
        let level = depth - 1
        return containers[level >> 6] & (1 << UInt64(level & 63)) != 0
    }

    mutating func open(object: Bool) throws(JSONSyntaxError) {
        guard depth < maxDepth else { throw JSONSyntaxError(.tooDeep(limit: maxDepth), at: index) }
        let word = depth >> 6
        let bit: UInt64 = 1 << UInt64(depth & 63)
        if object { containers[word] |= bit } else { containers[word] &= ~bit }
        if object && uniqueKeys {
            while keys.count <= depth { keys.append([]) }
            keys[depth].removeAll(keepingCapacity: true)
        }
        depth += 1
        index += 1
    }

    mutating func skipWhitespace() {
        while index < bytes.count {
            switch bytes[index] {
            case 0x20, 0x0A, 0x0D, 0x09: index += 1
            default: return
            }
        }
    }

    /// Whether the top-level value is an object (once the text is checked).
    var topIsObject: Bool { bytes.first { $0 != 0x20 && $0 != 0x0A && $0 != 0x0D && $0 != 0x09 } == Self.openObject }

    /// Checks the whole text: one value, whitespace around it, nothing else.
    mutating func document() throws(JSONSyntaxError) {
        try document { _, _, _, _ in }
    }

    /// Checks the whole text, calling `member` with the bounds of each member of a top-level
    /// object as its value ends: its key's (quotes included) and its value's.
    mutating func document(member: (_ keyStart: Int, _ keyEnd: Int, _ valueStart: Int, _ valueEnd: Int) -> Void) throws(JSONSyntaxError) {
        var expecting = Expecting.value
        // The member of the top-level object being read: its key's bounds, and where its value began.
        var keyStart = 0
        var keyEnd = 0
        var valueStart: Int?
        // Called where a value has ended at depth 1 (so not for the many values deeper down).
        func ended(at end: Int) {
            guard let start = valueStart else { return }
            member(keyStart, keyEnd, start, end)
            valueStart = nil
        }
        while true {
            skipWhitespace()
            guard index < bytes.count else {
                if expecting == .separatorOrEnd && depth == 0 { return }
                throw JSONSyntaxError(.unexpectedEnd, at: bytes.count)
            }
            let byte = bytes[index]
            switch expecting {
            case .value, .valueOrArrayEnd:
                if byte == Self.closeArray && expecting == .valueOrArrayEnd {
                    depth -= 1
                    index += 1
                    expecting = .separatorOrEnd
                    if depth == 1 { ended(at: index) }
                    continue
                }
                if byte == Self.closeArray && depth > 0 && !innermostIsObject {
                    // Inside an array, a value is expected (rather than a value or `]`) only after a comma.
                    throw JSONSyntaxError(.trailingComma, at: lastComma)
                }
                if depth == 1 && innermostIsObject { valueStart = index }
                switch byte {
                case Self.openArray:
                    try open(object: false)
                    expecting = .valueOrArrayEnd
                case Self.openObject:
                    try open(object: true)
                    expecting = .keyOrObjectEnd
                case Self.quote:
                    try string()
                    expecting = .separatorOrEnd
                case Self.minus, Self.zero...Self.nine:
                    try number()
                    expecting = .separatorOrEnd
                case UInt8(ascii: "t"):
                    try literal("true")
                    expecting = .separatorOrEnd
                case UInt8(ascii: "f"):
                    try literal("false")
                    expecting = .separatorOrEnd
                case UInt8(ascii: "n"):
                    try literal("null")
                    expecting = .separatorOrEnd
                default:
                    throw JSONSyntaxError(.unexpectedByte, at: index)
                }
                // A scalar has ended (a container opened one level deeper).
                if depth == 1 { ended(at: index) }
            case .keyOrObjectEnd, .key:
                if byte == Self.quote {
                    let start = index
                    try string()
                    if depth == 1 { (keyStart, keyEnd) = (start, index) }
                    if uniqueKeys, !keys[depth - 1].insert(key(start, index)).inserted {
                        throw JSONSyntaxError(.duplicateKey, at: start)
                    }
                    expecting = .colon
                } else if byte == Self.closeObject {
                    guard expecting == .keyOrObjectEnd else { throw JSONSyntaxError(.trailingComma, at: lastComma) }
                    depth -= 1
                    index += 1
                    expecting = .separatorOrEnd
                    if depth == 1 { ended(at: index) }
                } else {
                    throw JSONSyntaxError(.unexpectedByte, at: index)
                }
            case .colon:
                guard byte == Self.colon else { throw JSONSyntaxError(.unexpectedByte, at: index) }
                index += 1
                expecting = .value
            case .separatorOrEnd:
                guard depth > 0 else { throw JSONSyntaxError(.trailingData, at: index) }
                let inObject = innermostIsObject
                if byte == Self.comma {
                    lastComma = index
                    index += 1
                    expecting = inObject ? .key : .value
                } else if byte == (inObject ? Self.closeObject : Self.closeArray) {
                    depth -= 1
                    index += 1
                    if depth == 1 { ended(at: index) }
                } else {
                    throw JSONSyntaxError(.unexpectedByte, at: index)
                }
            }
        }
    }

    /// The key whose checked string (quotes included) lies from `start` to `end`, its escapes
    /// resolved (rare in keys: then the decoder resolves them).
    func key(_ start: Int, _ end: Int) -> String {
        let quoted = UnsafeRawBufferPointer(rebasing: bytes[start..<end])
        guard quoted.contains(Self.backslash) else { return String(decoding: quoted.dropFirst().dropLast(), as: UTF8.self) }
        return (try? JSONDecoder().decode(String.self, from: Data(quoted))) ?? String(decoding: quoted, as: UTF8.self)
    }

    /// `true`, `false` or `null`, whose first byte is at `index`.
    mutating func literal(_ word: StaticString) throws(JSONSyntaxError) {
        let expected = UnsafeRawBufferPointer(start: word.utf8Start, count: word.utf8CodeUnitCount)
        for offset in 0..<expected.count {
            guard index + offset < bytes.count else { throw JSONSyntaxError(.unexpectedEnd, at: bytes.count) }
            guard bytes[index + offset] == expected[offset] else { throw JSONSyntaxError(.unexpectedByte, at: index + offset) }
        }
        index += expected.count
    }

    /// One digit or more from `index`, in a loop over locals.
    mutating func requireDigits() throws(JSONSyntaxError) {
        let end = bytes.count
        guard index < end else { throw JSONSyntaxError(.unexpectedEnd, at: end) }
        var position = index
        while position < end && bytes[position] &- Self.zero < 10 { position += 1 }
        guard position > index else { throw JSONSyntaxError(.badNumber, at: index) }
        index = position
    }

    /// `-? (0 | [1-9][0-9]*) (. [0-9]+)? ([eE] [+-]? [0-9]+)?`, whose first byte is at `index`.
    /// A digit, `.`, `e`, `E`, `+` or `-` right after it (`01`, `1.2.3`, `1e5e`) is a bad number too.
    mutating func number() throws(JSONSyntaxError) {
        if bytes[index] == Self.minus { index += 1 }
        if index < bytes.count && bytes[index] == Self.zero {
            index += 1
        } else {
            try requireDigits()
        }
        if index < bytes.count && bytes[index] == Self.dot {
            index += 1
            try requireDigits()
        }
        if index < bytes.count && (bytes[index] | 0x20) == UInt8(ascii: "e") {
            index += 1
            if index < bytes.count && (bytes[index] == Self.plus || bytes[index] == Self.minus) { index += 1 }
            try requireDigits()
        }
        if index < bytes.count {
            switch bytes[index] {
            case Self.zero...Self.nine, Self.dot, Self.plus, Self.minus, UInt8(ascii: "e"), UInt8(ascii: "E"):
                throw JSONSyntaxError(.badNumber, at: index)
            default:
                break
            }
        }
    }

    /// The value of the hex digit at `at`, or nil.
    func hexDigit(_ at: Int) -> UInt32? {
        let byte = bytes[at]
        switch byte {
        case Self.zero...Self.nine: return UInt32(byte - Self.zero)
        case UInt8(ascii: "a")...UInt8(ascii: "f"): return UInt32(byte - UInt8(ascii: "a") + 10)
        case UInt8(ascii: "A")...UInt8(ascii: "F"): return UInt32(byte - UInt8(ascii: "A") + 10)
        default: return nil
        }
    }

    /// The code unit of the `\uXXXX` escape whose backslash is at `at`.
    func unicodeEscape(_ at: Int) throws(JSONSyntaxError) -> UInt32 {
        var value: UInt32 = 0
        for digit in (at + 2)..<(at + 6) {
            guard digit < bytes.count else { throw JSONSyntaxError(.unexpectedEnd, at: bytes.count) }
            guard let nibble = hexDigit(digit) else { throw JSONSyntaxError(.badEscape, at: at) }
            value = value << 4 | nibble
        }
        return value
    }

    /// A string whose opening quote is at `index`: escapes, control bytes and UTF-8 checked.
    mutating func string() throws(JSONSyntaxError) {
        index += 1
        while true {
            // Plain ASCII, the common case: eight bytes at a time, then a tight loop over locals.
            let end = bytes.count
            var position = ByteScan.skipPlain(bytes, from: index, to: end)
            while position < end {
                let byte = bytes[position]
                guard byte >= 0x20, byte < 0x80, byte != Self.quote, byte != Self.backslash else { break }
                position += 1
            }
            index = position
            guard index < bytes.count else { throw JSONSyntaxError(.unexpectedEnd, at: bytes.count) }
            let byte = bytes[index]
            if byte == Self.quote {
                index += 1
                return
            } else if byte == Self.backslash {
                try escape()
            } else if byte < 0x20 {
                throw JSONSyntaxError(.controlCharacter, at: index)
            } else {
                try multibyteScalar()
            }
        }
    }

    /// The escape whose backslash is at `index`.
    mutating func escape() throws(JSONSyntaxError) {
        let start = index
        guard index + 1 < bytes.count else { throw JSONSyntaxError(.unexpectedEnd, at: bytes.count) }
        switch bytes[index + 1] {
        case Self.quote, Self.backslash, UInt8(ascii: "/"), UInt8(ascii: "b"), UInt8(ascii: "f"),
            UInt8(ascii: "n"), UInt8(ascii: "r"), UInt8(ascii: "t"):
            index += 2
        case UInt8(ascii: "u"):
            let unit = try unicodeEscape(start)
            index += 6
            switch unit {
            case 0xD800...0xDBFF:
                // A high surrogate stands only with a low one escaped right after it.
                guard index < bytes.count else { throw JSONSyntaxError(.unexpectedEnd, at: bytes.count) }
                guard bytes[index] == Self.backslash else { throw JSONSyntaxError(.loneSurrogate, at: start) }
                guard index + 1 < bytes.count else { throw JSONSyntaxError(.unexpectedEnd, at: bytes.count) }
                guard bytes[index + 1] == UInt8(ascii: "u") else { throw JSONSyntaxError(.loneSurrogate, at: start) }
                let low = try unicodeEscape(index)
                guard (0xDC00...0xDFFF).contains(low) else { throw JSONSyntaxError(.loneSurrogate, at: start) }
                index += 6
            case 0xDC00...0xDFFF:
                throw JSONSyntaxError(.loneSurrogate, at: start)
            default:
                break
            }
        default:
            throw JSONSyntaxError(.badEscape, at: start)
        }
    }

    /// A UTF-8 sequence of two to four bytes whose lead byte (≥ 0x80) is at `index`
    /// (RFC 3629: no overlong forms, no surrogates, nothing above U+10FFFF).
    mutating func multibyteScalar() throws(JSONSyntaxError) {
        let start = index
        let lead = bytes[start]
        let length: Int
        var secondRange: ClosedRange<UInt8> = 0x80...0xBF
        switch lead {
        case 0xC2...0xDF: length = 2
        case 0xE0:
            length = 3
            secondRange = 0xA0...0xBF
        case 0xE1...0xEC, 0xEE...0xEF: length = 3
        case 0xED:
            length = 3
            secondRange = 0x80...0x9F
        case 0xF0:
            length = 4
            secondRange = 0x90...0xBF
        case 0xF1...0xF3: length = 4
        case 0xF4:
            length = 4
            secondRange = 0x80...0x8F
        default: throw JSONSyntaxError(.invalidUTF8, at: start)
        }
        for position in 1..<length {
            guard start + position < bytes.count else { throw JSONSyntaxError(.unexpectedEnd, at: bytes.count) }
            let byte = bytes[start + position]
            guard (position == 1 ? secondRange : 0x80...0xBF).contains(byte) else { throw JSONSyntaxError(.invalidUTF8, at: start) }
        }
        index += length
    }
}
