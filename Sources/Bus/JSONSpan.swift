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
        member(key, in: json).flatMap { plainString(at: $0, in: json) }
    }

    /// The string at `range` of `json` when it has no escapes, or nil.
    public static func plainString(at range: Range<Int>, in json: Data) -> String? {
        // Over the contiguous bytes: a Data slice's generic iteration costs many times more.
        json.withUnsafeBytes { raw -> String? in
            let bytes = raw.bindMemory(to: UInt8.self)
            return plainString(UnsafeBufferPointer(rebasing: bytes[(range.lowerBound - json.startIndex)..<(range.upperBound - json.startIndex)]))
        }
    }

    /// The raw text of top-level member `key` (a number or a literal), or nil.
    public static func literal(_ key: String, in json: Data) -> String? {
        guard let range = member(key, in: json) else { return nil }
        return json.withUnsafeBytes { raw in
            let bytes = raw.bindMemory(to: UInt8.self)
            return String(decoding: UnsafeBufferPointer(rebasing: bytes[(range.lowerBound - json.startIndex)..<(range.upperBound - json.startIndex)]), as: UTF8.self)
        }
    }

    /// The top-level members of the object `json`, in order: each key with escapes resolved,
    /// and the byte range of its value. Nil when `json` is not shaped as an object.
    public static func members(of json: Data) -> [(key: String, value: Range<Int>)]? {
        var members: [(key: String, value: Range<Int>)] = []
        let whole = walkMembers(of: json) { key, _, range in
            guard let key = unescaped(key) else { return false }
            members.append((key, range))
            return true
        }
        return whole ? members : nil
    }

    /// Walks the top-level members of the object `json` without allocating: `visit` gets each
    /// key as written between its quotes (escapes unresolved), its value's bytes and their
    /// range in `json`, and returns false to stop. False when `json` is not shaped as an object
    /// or `visit` stopped.
    public static func walkMembers(
        of json: Data, _ visit: (_ key: UnsafeBufferPointer<UInt8>, _ value: UnsafeBufferPointer<UInt8>, _ range: Range<Int>) -> Bool
    ) -> Bool {
        json.withUnsafeBytes { raw -> Bool in
            let bytes = raw.bindMemory(to: UInt8.self)
            var i = skipSpace(bytes, 0)
            guard i < bytes.count, bytes[i] == UInt8(ascii: "{") else { return false }
            i = skipSpace(bytes, i + 1)
            if i < bytes.count, bytes[i] == UInt8(ascii: "}") { return true }
            while true {
                guard i < bytes.count, bytes[i] == UInt8(ascii: "\""), let keyEnd = stringEnd(bytes, i) else { return false }
                let key = UnsafeBufferPointer(rebasing: bytes[(i + 1)..<(keyEnd - 1)])
                i = skipSpace(bytes, keyEnd)
                guard i < bytes.count, bytes[i] == UInt8(ascii: ":") else { return false }
                let valueStart = skipSpace(bytes, i + 1)
                guard let valueEnd = valueEnd(bytes, valueStart),
                    visit(
                        key, UnsafeBufferPointer(rebasing: bytes[valueStart..<valueEnd]),
                        (json.startIndex + valueStart)..<(json.startIndex + valueEnd))
                else { return false }
                i = skipSpace(bytes, valueEnd)
                guard i < bytes.count else { return false }
                if bytes[i] == UInt8(ascii: "}") { return true }
                guard bytes[i] == UInt8(ascii: ",") else { return false }
                i = skipSpace(bytes, i + 1)
            }
        }
    }

    /// Whether a key `walkMembers` gave is `name`, byte for byte (a key written with escapes
    /// never is: whoever must read those reads `members(of:)`).
    public static func key(_ key: UnsafeBufferPointer<UInt8>, is name: StaticString) -> Bool {
        key.count == name.utf8CodeUnitCount && (key.isEmpty || memcmp(key.baseAddress!, name.utf8Start, key.count) == 0)
    }

    /// Whether a key `walkMembers` gave holds an escape.
    public static func hasEscape(_ key: UnsafeBufferPointer<UInt8>) -> Bool { key.contains(UInt8(ascii: "\\")) }

    /// A value `walkMembers` gave, when it is a string without escapes, or nil.
    public static func plainString(_ value: UnsafeBufferPointer<UInt8>) -> String? {
        guard value.count >= 2, value.first == UInt8(ascii: "\""), value.last == UInt8(ascii: "\""),
            !value.contains(UInt8(ascii: "\\"))
        else { return nil }
        return String(decoding: UnsafeBufferPointer(rebasing: value[1..<(value.count - 1)]), as: UTF8.self)
    }

    /// The byte ranges of the elements of the array at `range` of `json`, or nil when it is not an array.
    public static func elements(at range: Range<Int>, in json: Data) -> [Range<Int>]? {
        json.withUnsafeBytes { raw -> [Range<Int>]? in
            let bytes = UnsafeBufferPointer(rebasing: raw.bindMemory(to: UInt8.self)[..<(range.upperBound - json.startIndex)])
            var elements: [Range<Int>] = []
            var i = range.lowerBound - json.startIndex
            guard i < bytes.count, bytes[i] == UInt8(ascii: "[") else { return nil }
            i = skipSpace(bytes, i + 1)
            if i < bytes.count, bytes[i] == UInt8(ascii: "]") { return elements }
            while true {
                guard let end = valueEnd(bytes, i) else { return nil }
                elements.append((json.startIndex + i)..<(json.startIndex + end))
                i = skipSpace(bytes, end)
                guard i < bytes.count else { return nil }
                if bytes[i] == UInt8(ascii: "]") { return elements }
                guard bytes[i] == UInt8(ascii: ",") else { return nil }
                i = skipSpace(bytes, i + 1)
            }
        }
    }

    /// The string value at `range` of `json` (quotes included) with escapes resolved, or nil
    /// when it is not a string.
    public static func string(at range: Range<Int>, in json: Data) -> String? {
        guard range.count >= 2, json[range.lowerBound] == UInt8(ascii: "\""), json[range.upperBound - 1] == UInt8(ascii: "\"") else { return nil }
        return json.withUnsafeBytes { raw in
            let bytes = raw.bindMemory(to: UInt8.self)
            let start = range.lowerBound - json.startIndex + 1
            let end = range.upperBound - json.startIndex - 1
            return unescaped(UnsafeBufferPointer(rebasing: bytes[start..<end]))
        }
    }

    /// The text of a JSON string's inside with its escapes resolved; nil for a bad escape or a raw control character.
    private static func unescaped(_ b: UnsafeBufferPointer<UInt8>) -> String? {
        guard b.contains(where: { $0 == UInt8(ascii: "\\") || $0 < 0x20 }) else { return String(decoding: b, as: UTF8.self) }
        var out: [UInt8] = []
        out.reserveCapacity(b.count)
        var i = 0
        func hex4(_ at: Int) -> UInt32? {
            guard at + 4 <= b.count else { return nil }
            var value: UInt32 = 0
            for k in at..<(at + 4) {
                guard let digit = Character(Unicode.Scalar(b[k])).hexDigitValue else { return nil }
                value = value << 4 | UInt32(digit)
            }
            return value
        }
        while i < b.count {
            let byte = b[i]
            guard byte >= 0x20 else { return nil }
            guard byte == UInt8(ascii: "\\") else {
                out.append(byte)
                i += 1
                continue
            }
            guard i + 1 < b.count else { return nil }
            switch b[i + 1] {
            case UInt8(ascii: "\""), UInt8(ascii: "\\"), UInt8(ascii: "/"): out.append(b[i + 1])
            case UInt8(ascii: "b"): out.append(0x08)
            case UInt8(ascii: "f"): out.append(0x0C)
            case UInt8(ascii: "n"): out.append(0x0A)
            case UInt8(ascii: "r"): out.append(0x0D)
            case UInt8(ascii: "t"): out.append(0x09)
            case UInt8(ascii: "u"):
                guard var code = hex4(i + 2) else { return nil }
                i += 6
                if (0xD800..<0xDC00).contains(code) {
                    // A high surrogate must be followed by an escaped low one.
                    guard i + 1 < b.count, b[i] == UInt8(ascii: "\\"), b[i + 1] == UInt8(ascii: "u"), let low = hex4(i + 2),
                        (0xDC00..<0xE000).contains(low)
                    else { return nil }
                    code = 0x10000 + ((code - 0xD800) << 10) + (low - 0xDC00)
                    i += 6
                }
                guard let scalar = Unicode.Scalar(code) else { return nil }
                out.append(contentsOf: Array(String(Character(scalar)).utf8))
                continue
            default: return nil
            }
            i += 2
        }
        return String(decoding: out, as: UTF8.self)
    }

    private static func skipSpace(_ b: UnsafeBufferPointer<UInt8>, _ start: Int) -> Int {
        var i = start
        while i < b.count, b[i] == 0x20 || b[i] == 0x0A || b[i] == 0x0D || b[i] == 0x09 { i += 1 }
        return i
    }

    /// The index just past the string starting at `start` (which is a quote).
    private static func stringEnd(_ b: UnsafeBufferPointer<UInt8>, _ start: Int) -> Int? {
        var i = ByteScan.skipToQuoteOrEscape(UnsafeRawBufferPointer(b), from: start + 1, to: b.count)
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
                b[i] != 0x20, b[i] != 0x0A, b[i] != 0x0D, b[i] != 0x09
            { i += 1 }
            return i > start ? i : nil
        }
    }
}
