import Bus
import Contracts
import Foundation
import ServiceKit

/// Where a page ended: the sort key and id of its last hit, exact to the bit.
struct SearchCursor: Equatable {
    var key: Double
    var id: Int64

    /// `s1:` then the key's bits in lower-case hex, `:` and the id, in base64url: written byte
    /// by byte (string interpolation and `Data` cost a nearby page more than its search).
    var encoded: String {
        var text: [UInt8] = Array("s1:".utf8)
        text.reserveCapacity(48)
        let hex = Array("0123456789abcdef".utf8)
        let bits = key.bitPattern
        var shift = max(0, (bits == 0 ? 0 : (63 - bits.leadingZeroBitCount) / 4 * 4))
        while true {
            text.append(hex[Int(bits >> UInt64(shift) & 15)])
            if shift == 0 { break }
            shift -= 4
        }
        text.append(UInt8(ascii: ":"))
        if id < 0 { text.append(UInt8(ascii: "-")) }
        var digits: [UInt8] = []
        var rest = id.magnitude
        repeat {
            digits.append(UInt8(ascii: "0") + UInt8(rest % 10))
            rest /= 10
        } while rest > 0
        text.append(contentsOf: digits.reversed())
        return Base64URL.encode(text)
    }

    static func decode(_ cursor: String) throws(ServiceError) -> SearchCursor {
        let parts = try OpaqueCursor.decode(cursor, maxLength: 100).split(separator: ":")
        guard parts.count == 3, parts[0] == "s1", let bits = UInt64(parts[1], radix: 16), let id = Int64(parts[2]) else {
            throw OpaqueCursor.invalid
        }
        let key = Double(bitPattern: bits)
        guard key.isFinite else { throw OpaqueCursor.invalid }
        return SearchCursor(key: key, id: id)
    }
}
