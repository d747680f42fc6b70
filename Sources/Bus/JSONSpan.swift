import Foundation

/// Finds where a top-level member's value lies in a JSON object, without decoding it.
///
/// The gateway passes reply bodies through to clients byte for byte; this lets it cut the
/// `body` out of an envelope instead of decoding and encoding it again. It assumes the
/// text is valid JSON (replies come from our own services) and answers nil if it is not
/// shaped as expected.
public enum JSONSpan {
    /// The byte range of the value of top-level `key` in the object `json`, or nil.
    public static func member(_ key: String, in json: Data) -> Range<Int>? {
        json.withUnsafeBytes { raw -> Range<Int>? in
            let bytes = raw.bindMemory(to: UInt8.self)
            let wanted = Array(key.utf8)
            var i = skipSpace(bytes, 0)
            guard i < bytes.count, bytes[i] == UInt8(ascii: "{") else { return nil }
            i += 1
            while true {
                i = skipSpace(bytes, i)
                guard i < bytes.count, bytes[i] == UInt8(ascii: "\"") else { return nil }
                let keyStart = i + 1
                guard let keyEnd = stringEnd(bytes, i) else { return nil }
                let matches = keyEnd - 1 - keyStart == wanted.count && wanted.indices.allSatisfy { bytes[keyStart + $0] == wanted[$0] }
                i = skipSpace(bytes, keyEnd)
                guard i < bytes.count, bytes[i] == UInt8(ascii: ":") else { return nil }
                let valueStart = skipSpace(bytes, i + 1)
                guard let valueEnd = valueEnd(bytes, valueStart) else { return nil }
                if matches { return (json.startIndex + valueStart)..<(json.startIndex + valueEnd) }
                i = skipSpace(bytes, valueEnd)
                guard i < bytes.count, bytes[i] == UInt8(ascii: ",") else { return nil }
                i += 1
            }
        }
    }

    /// The top-level member `key` when it is a string without escapes (ids, types, times),
    /// or nil: then the caller decodes the document properly.
    public static func plainString(_ key: String, in json: Data) -> String? {
        guard let range = member(key, in: json), range.count >= 2 else { return nil }
        let bytes = json[range]
        guard bytes.first == UInt8(ascii: "\""), bytes.last == UInt8(ascii: "\""), !bytes.contains(UInt8(ascii: "\\")) else { return nil }
        return String(decoding: bytes.dropFirst().dropLast(), as: UTF8.self)
    }

    /// The raw text of top-level member `key` (a number or a literal), or nil.
    public static func literal(_ key: String, in json: Data) -> String? {
        member(key, in: json).map { String(decoding: json[$0], as: UTF8.self) }
    }

    private static func skipSpace(_ b: UnsafeBufferPointer<UInt8>, _ start: Int) -> Int {
        var i = start
        while i < b.count, b[i] == 0x20 || b[i] == 0x0A || b[i] == 0x0D || b[i] == 0x09 { i += 1 }
        return i
    }

    /// The index just past the string starting at `start` (which is a quote).
    private static func stringEnd(_ b: UnsafeBufferPointer<UInt8>, _ start: Int) -> Int? {
        var i = start + 1
        while i < b.count {
            switch b[i] {
            case UInt8(ascii: "\\"): i += 2
            case UInt8(ascii: "\""): return i + 1
            default: i += 1
            }
        }
        return nil
    }

    /// The index just past the value starting at `start`.
    private static func valueEnd(_ b: UnsafeBufferPointer<UInt8>, _ start: Int) -> Int? {
        guard start < b.count else { return nil }
        switch b[start] {
        case UInt8(ascii: "\""):
            return stringEnd(b, start)
        case UInt8(ascii: "{"), UInt8(ascii: "["):
            var depth = 0
            var i = start
            while i < b.count {
                switch b[i] {
                case UInt8(ascii: "\""):
                    guard let end = stringEnd(b, i) else { return nil }
                    i = end
                    continue
                case UInt8(ascii: "{"), UInt8(ascii: "["):
                    depth += 1
                case UInt8(ascii: "}"), UInt8(ascii: "]"):
                    depth -= 1
                    if depth == 0 { return i + 1 }
                default:
                    break
                }
                i += 1
            }
            return nil
        default:
            var i = start
            while i < b.count, b[i] != UInt8(ascii: ","), b[i] != UInt8(ascii: "}"), b[i] != UInt8(ascii: "]"),
                  b[i] != 0x20, b[i] != 0x0A, b[i] != 0x0D, b[i] != 0x09 { i += 1 }
            return i > start ? i : nil
        }
    }
}
