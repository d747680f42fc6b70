import Foundation

/// JSON's number grammar: `-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?`.
public enum JSONNumber {
    /// The value of a JSON number's text, when it is one and a `Double` holds it as
    /// `JSONDecoder` reads it: finite, and not rounded to zero from a number that is not zero
    /// (`1e-400`), which the decoder refuses too.
    public static func finite(_ text: Data.SubSequence) -> Double? {
        text.withUnsafeBytes { raw in finite(raw.bindMemory(to: UInt8.self)) }
    }

    /// The same over contiguous bytes (a value `JSONSpan.walkMembers` gave, say).
    public static func finite(_ bytes: UnsafeBufferPointer<UInt8>) -> Double? {
        guard isValid(bytes), let value = Double(String(decoding: bytes, as: UTF8.self)), value.isFinite else { return nil }
        if value == 0 {
            // Zero only when every digit before the exponent is a zero.
            for byte in bytes {
                if byte == UInt8(ascii: "e") || byte == UInt8(ascii: "E") { break }
                if byte >= UInt8(ascii: "1") && byte <= UInt8(ascii: "9") { return nil }
            }
        }
        return value
    }

    /// The value of a JSON number's text when it is a plain integer literal (no fraction, no
    /// exponent) that fits an `Int64`, else nil.
    public static func integer(_ text: Data.SubSequence) -> Int64? {
        text.withUnsafeBytes { raw in integer(raw.bindMemory(to: UInt8.self)) }
    }

    /// The same over contiguous bytes (a value `JSONSpan.walkMembers` gave, say).
    public static func integer(_ bytes: UnsafeBufferPointer<UInt8>) -> Int64? {
        // Strict JSON has no `+` and no leading zeros; Int64's parser refuses `.` and `e`.
        guard isValid(bytes) else { return nil }
        return Int64(String(decoding: bytes, as: UTF8.self))
    }

    public static func isValid<Bytes: Collection<UInt8>>(_ bytes: Bytes) -> Bool {
        var i = bytes.startIndex
        func digits() -> Int {
            var count = 0
            while i != bytes.endIndex, (0x30...0x39).contains(bytes[i]) {
                i = bytes.index(after: i)
                count += 1
            }
            return count
        }
        func take(_ byte: UInt8) -> Bool {
            guard i != bytes.endIndex, bytes[i] == byte else { return false }
            i = bytes.index(after: i)
            return true
        }
        _ = take(UInt8(ascii: "-"))
        if take(UInt8(ascii: "0")) {
            // no more digits after a leading zero
        } else if digits() == 0 {
            return false
        }
        if take(UInt8(ascii: ".")), digits() == 0 { return false }
        if take(UInt8(ascii: "e")) || take(UInt8(ascii: "E")) {
            _ = take(UInt8(ascii: "+")) || take(UInt8(ascii: "-"))
            if digits() == 0 { return false }
        }
        return i == bytes.endIndex
    }
}

/// JSON values written as `JSONCoding.encoder` writes them, byte for byte, for types whose
/// JSON is written by hand where the encoder costs too much (a place on every create).
/// Tests hold each writer to the encoder's output.
public enum JSONText {
    /// A finite `Double` as its `description` without a trailing `.0` (so 12.0 is `12`, 1e-05
    /// stays `1e-05`), which is what Foundation's encoder does. The caller keeps non-finite
    /// numbers out (the encoder refuses them).
    public static func append(_ value: Double, to out: inout [UInt8]) {
        var text = value.description
        // Copied from its contiguous bytes: appending a `String.UTF8View` costs more than the digits.
        text.withUTF8 { bytes in
            let count = bytes.count
            let end = count >= 2 && bytes[count - 2] == UInt8(ascii: ".") && bytes[count - 1] == UInt8(ascii: "0") ? count - 2 : count
            out.append(contentsOf: UnsafeBufferPointer(rebasing: bytes[..<end]))
        }
    }

    /// An integer in decimal.
    public static func append(_ value: Int64, to out: inout [UInt8]) {
        var text = String(value)
        text.withUTF8 { out.append(contentsOf: $0) }
    }

    /// A string literal escaped as the encoder escapes (with `.withoutEscapingSlashes`): `"` and
    /// `\` behind a backslash, `\b \f \n \r \t`, other bytes below 0x20 as `\u00xx` (lower-case
    /// hex), everything else (`/`, DEL, any non-ASCII character) as it is.
    public static func append(_ value: String, to out: inout [UInt8]) {
        out.append(quote)
        var text = value
        text.withUTF8 { bytes in
            var mark = 0
            for i in 0..<bytes.count {
                let byte = bytes[i]
                guard byte < 0x20 || byte == quote || byte == backslash else { continue }
                out.append(contentsOf: UnsafeBufferPointer(rebasing: bytes[mark..<i]))
                mark = i + 1
                out.append(backslash)
                switch byte {
                case quote, backslash: out.append(byte)
                case 0x08: out.append(UInt8(ascii: "b"))
                case 0x0C: out.append(UInt8(ascii: "f"))
                case 0x0A: out.append(UInt8(ascii: "n"))
                case 0x0D: out.append(UInt8(ascii: "r"))
                case 0x09: out.append(UInt8(ascii: "t"))
                default:
                    out.append(contentsOf: [UInt8(ascii: "u"), UInt8(ascii: "0"), UInt8(ascii: "0"), hexDigits[Int(byte >> 4)], hexDigits[Int(byte & 15)]])
                }
            }
            out.append(contentsOf: UnsafeBufferPointer(rebasing: bytes[mark...]))
        }
        out.append(quote)
    }

    /// `"key":` for a key that needs no escape (the caller's own member names).
    public static func appendKey(_ key: StaticString, to out: inout [UInt8]) {
        out.append(quote)
        out.append(contentsOf: UnsafeBufferPointer(start: key.utf8Start, count: key.utf8CodeUnitCount))
        out.append(quote)
        out.append(UInt8(ascii: ":"))
    }

    private static let quote = UInt8(ascii: "\""), backslash = UInt8(ascii: "\\")
    private static let hexDigits = Array("0123456789abcdef".utf8)
}
