import Bus
import Foundation

// Paging: page sizes, the opaque cursors clients hand back, and the keys of snapshot pages.

/// The page sizes a list accepts: a default when the request names none, and a maximum.
public struct PageLimit: Sendable, Equatable {
    public let defaultLimit: Int
    public let maxLimit: Int

    public init(default defaultLimit: Int, max maxLimit: Int) {
        self.defaultLimit = defaultLimit
        self.maxLimit = maxLimit
    }

    /// The requested size, or the default; `invalid_argument` on `limit` outside 1 … max.
    public func validated(_ requested: Int?) throws(ServiceError) -> Int {
        let limit = requested ?? defaultLimit
        guard (1...maxLimit).contains(limit) else { throw .invalid("limit", "must be 1 to \(maxLimit)") }
        return limit
    }

    /// The requested size, or the default, brought within 1 … max (never an error).
    public func clamped(_ requested: Int?) -> Int {
        min(max(requested ?? defaultLimit, 1), maxLimit)
    }
}

extension PageLimit {
    /// The rule of a page's `limit` in a params type: 1 to `maxLimit`.
    public var rule: FieldRule { .integer("limit", 1...Int64(maxLimit)) }

    /// Each kind of page, declared once: its params type's rule and the service's reading of
    /// `limit` both come from it.
    public static let searchHits = PageLimit(default: 20, max: 50)
    public static let suggestions = PageLimit(default: 10, max: 20)
    public static let geoHits = PageLimit(default: 5, max: 20)
    public static let popularHits = PageLimit(default: 20, max: 50)
    public static let pins = PageLimit(default: 50, max: 200)
    public static let listItems = PageLimit(default: 20, max: 100)
    public static let recentSearches = PageLimit(default: 50, max: 50)
    public static let places = PageLimit(default: 20, max: 100)
    public static let tours = PageLimit(default: 20, max: 100)
    public static let annotations = PageLimit(default: 20, max: 100)
    /// Reviews, follows, blocks and chat.
    public static let social = PageLimit(default: 20, max: 50)
    public static let peopleAt = PageLimit(default: 50, max: 50)
}

/// base64url without padding (RFC 4648 §5): text that travels in URLs and RESP words as it is.
public enum Base64URL {
    /// The base64url letters of `data`, without padding (written here: Foundation's encoding
    /// and three replacements cost a search page's cursor more than its hits).
    public static func encode(_ data: Data) -> String { encode(Array(data)) }

    /// The same over bytes in hand (a cursor written byte by byte).
    public static func encode(_ data: [UInt8]) -> String {
        var out: [UInt8] = []
        out.reserveCapacity((data.count * 4 + 2) / 3)
        var bits: UInt32 = 0
        var count = 0
        for byte in data {
            bits = bits << 8 | UInt32(byte)
            count += 8
            while count >= 6 {
                count -= 6
                out.append(letters[Int(bits >> UInt32(count) & 63)])
            }
        }
        if count > 0 { out.append(letters[Int(bits << UInt32(6 - count) & 63)]) }
        return String(decoding: out, as: UTF8.self)
    }

    private static let letters = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_".utf8)

    /// The bytes, or nil when `text` is not base64url in its one canonical form (unpadded,
    /// the unused bits of the last letter zero): one value has one text.
    public static func decode(_ text: String) -> Data? {
        var base64 = text.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        base64 += String(repeating: "=", count: (4 - base64.count % 4) % 4)
        guard let data = Data(base64Encoded: base64), encode(data) == text else { return nil }
        return data
    }

    /// Whether a byte is one of the 64 letters (`A-Z a-z 0-9 - _`).
    public static func isAlphabet(_ byte: UInt8) -> Bool {
        (0x41...0x5A).contains(byte) || (0x61...0x7A).contains(byte) || (0x30...0x39).contains(byte) || byte == 0x2D || byte == 0x5F
    }
}

/// Page cursors clients hand back unchanged: a service's own text, base64url-encoded so
/// clients treat it as opaque and it travels in URLs and RESP words as it is.
public enum OpaqueCursor {
    /// Wraps a service's cursor text.
    public static func encode(_ text: String) -> String { Base64URL.encode(Data(text.utf8)) }

    /// Unwraps a cursor, or answers `invalid_argument` on the field `cursor` when it is not one.
    public static func decode(_ cursor: String, maxLength: Int = 128) throws(ServiceError) -> String {
        guard cursor.count <= maxLength, let data = Base64URL.decode(cursor), let text = String(data: data, encoding: .utf8) else {
            throw invalid
        }
        return text
    }

    /// What a cursor that is not one of the service's answers.
    public static let invalid = ServiceError.invalid("cursor", "not a cursor from this service")
}

/// An opaque cursor that holds one id after a tag (`p42`): the last row of the page, in a
/// list ordered by id.
public struct IDCursor: Sendable {
    public let tag: String
    public let maxLength: Int
    /// The smallest id a cursor may hold.
    public let minimum: Int64

    public init(tag: String, maxLength: Int = 128, minimum: Int64 = .min) {
        self.tag = tag
        self.maxLength = maxLength
        self.minimum = minimum
    }

    public func encode(_ id: Int64) -> String { OpaqueCursor.encode(tag + String(id)) }

    /// The id, or `invalid_argument` on `cursor`: only a cursor this encoder writes (no `+`,
    /// no leading zero), so one page has one cursor.
    public func decode(_ cursor: String) throws(ServiceError) -> Int64 {
        let text = try OpaqueCursor.decode(cursor, maxLength: maxLength)
        guard text.hasPrefix(tag), let id = Int64(text.dropFirst(tag.count)), id >= minimum, encode(id) == cursor else { throw OpaqueCursor.invalid }
        return id
    }
}

/// The `after`/`next` key of `sys.snapshot` pages that go through rows by id: the decimal id
/// of the last row of the previous page.
public enum SnapshotKey {
    /// The id after which a page starts: 0 for the first page; `invalid_argument` on `after`
    /// when the key is not one.
    public static func id(after: String?) throws(ServiceError) -> Int64 {
        guard let after else { return 0 }
        guard let id = Int64(after) else { throw .invalid("after", "not a snapshot key from this service") }
        return id
    }

    /// The key of the page after one that read `ids` of at most `limit`: nil when it was not full.
    public static func next(after ids: [Int64], limit: Int) -> String? {
        ids.count == limit ? ids.last.map { String($0) } : nil
    }
}
