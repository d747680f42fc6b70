import Foundation

/// The Redis serialization protocol (RESP2), as far as clients send it: arrays of bulk
/// strings, and inline commands (a line of space-separated words, quotes allowed).
enum RESP {
    /// What the parser found at the front of the input.
    enum Parsed: Equatable {
        /// A whole command and how many input bytes it used.
        case command([[UInt8]], consumed: Int)
        /// More input is needed.
        case incomplete
        /// The input breaks the protocol; the connection cannot continue after this.
        case protocolError(String)
        /// A bulk string or line over the size limit; the connection cannot continue after this.
        case tooLarge(String)
    }

    /// Most arguments in one command.
    static let maxArguments = 4_096

    /// Parses one command from `input` starting at `start`.
    static func parse(_ input: [UInt8], from start: Int, maxBytes: Int) -> Parsed {
        guard start < input.count else { return .incomplete }
        if input[start] == UInt8(ascii: "*") { return parseArray(input, start, maxBytes) }
        return parseInline(input, start, maxBytes)
    }

    private static func line(_ input: [UInt8], _ start: Int, limit: Int) -> (end: Int, next: Int)? {
        var i = start
        let stop = min(input.count, start + limit + 2)
        while i < stop {
            if input[i] == 0x0A { return (i > start && input[i - 1] == 0x0D ? i - 1 : i, i + 1) }
            i += 1
        }
        return nil
    }

    private static func integer(_ bytes: ArraySlice<UInt8>) -> Int? {
        guard !bytes.isEmpty, bytes.count <= 18 else { return nil }
        return Int(String(decoding: bytes, as: UTF8.self))
    }

    private static func parseArray(_ input: [UInt8], _ start: Int, _ maxBytes: Int) -> Parsed {
        guard let header = line(input, start, limit: 32) else {
            return input.count - start > 34 ? .protocolError("invalid multibulk length") : .incomplete
        }
        guard let count = integer(input[(start + 1)..<header.end]), count <= maxArguments else {
            return .protocolError("invalid multibulk length")
        }
        var arguments: [[UInt8]] = []
        arguments.reserveCapacity(max(count, 0))
        var i = header.next
        var total = 0
        for _ in 0..<max(count, 0) {
            guard i < input.count else { return .incomplete }
            guard input[i] == UInt8(ascii: "$") else {
                return .protocolError("expected '$', got '\(Character(Unicode.Scalar(input[i])))'")
            }
            guard let sizeLine = line(input, i, limit: 32) else {
                return input.count - i > 34 ? .protocolError("invalid bulk length") : .incomplete
            }
            guard let size = integer(input[(i + 1)..<sizeLine.end]), size >= 0 else { return .protocolError("invalid bulk length") }
            total += size
            guard size <= maxBytes, total <= maxBytes else {
                return .tooLarge(size > maxBytes ? "bulk string of \(size) bytes exceeds the limit of \(maxBytes)"
                                                 : "command of more than \(maxBytes) bytes exceeds the limit")
            }
            let dataStart = sizeLine.next
            guard input.count >= dataStart + size + 2 else { return .incomplete }
            guard input[dataStart + size] == 0x0D, input[dataStart + size + 1] == 0x0A else {
                return .protocolError("bulk string longer than its declared length \(size)")
            }
            arguments.append(Array(input[dataStart..<(dataStart + size)]))
            i = dataStart + size + 2
        }
        return .command(arguments, consumed: i - start)
    }

    private static func parseInline(_ input: [UInt8], _ start: Int, _ maxBytes: Int) -> Parsed {
        guard let found = line(input, start, limit: maxBytes) else {
            return input.count - start > maxBytes ? .tooLarge("inline command over \(maxBytes) bytes") : .incomplete
        }
        guard let words = split(input[start..<found.end]) else { return .protocolError("unbalanced quotes in request") }
        return .command(words, consumed: found.next - start)
    }

    /// Splits an inline command into words: spaces separate, "double" quotes allow
    /// escapes (\n \t \" \\ \xHH), 'single' quotes are literal.
    static func split(_ line: ArraySlice<UInt8>) -> [[UInt8]]? {
        var words: [[UInt8]] = []
        var i = line.startIndex
        while i < line.endIndex {
            while i < line.endIndex, line[i] == 0x20 || line[i] == 0x09 { i += 1 }
            guard i < line.endIndex else { break }
            var word: [UInt8] = []
            let quote = line[i]
            if quote == UInt8(ascii: "\"") || quote == UInt8(ascii: "'") {
                i += 1
                var closed = false
                while i < line.endIndex {
                    let c = line[i]
                    if c == quote {
                        closed = true
                        i += 1
                        break
                    }
                    if quote == UInt8(ascii: "\""), c == UInt8(ascii: "\\"), i + 1 < line.endIndex {
                        let next = line[i + 1]
                        switch next {
                        case UInt8(ascii: "n"): word.append(0x0A)
                        case UInt8(ascii: "r"): word.append(0x0D)
                        case UInt8(ascii: "t"): word.append(0x09)
                        case UInt8(ascii: "x") where i + 3 < line.endIndex:
                            if let v = UInt8(String(decoding: line[(i + 2)...(i + 3)], as: UTF8.self), radix: 16) {
                                word.append(v)
                                i += 4
                                continue
                            }
                            word.append(next)
                        default: word.append(next)
                        }
                        i += 2
                        continue
                    }
                    word.append(c)
                    i += 1
                }
                guard closed, i == line.endIndex || line[i] == 0x20 || line[i] == 0x09 else { return nil }
            } else {
                while i < line.endIndex, line[i] != 0x20, line[i] != 0x09 {
                    word.append(line[i])
                    i += 1
                }
            }
            words.append(word)
        }
        return words
    }

    // MARK: Replies

    static func simple(_ text: String) -> [UInt8] { Array("+\(text)\r\n".utf8) }

    static func error(_ code: String, _ message: String) -> [UInt8] {
        let clean = message.replacingOccurrences(of: "\r", with: " ").replacingOccurrences(of: "\n", with: " ")
        return Array("-\(code) \(clean)\r\n".utf8)
    }

    static func bulk<Bytes: Collection>(_ bytes: Bytes) -> [UInt8] where Bytes.Element == UInt8 {
        var out = Array("$\(bytes.count)\r\n".utf8)
        out.reserveCapacity(out.count + bytes.count + 2)
        out.append(contentsOf: bytes)
        out.append(contentsOf: [0x0D, 0x0A])
        return out
    }

    static let emptyArray: [UInt8] = Array("*0\r\n".utf8)
}
