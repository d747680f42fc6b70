import Bus
import Contracts
import Foundation
import ServiceKit

/// What a hit is: a catalog place or a tour (`kind` on the wire).
public enum HitKind: String, Codable, Sendable {
    case place, tour

    /// The kind of an index row: places are indexed under their ids, tours under minus theirs.
    public init(row id: Int64) { self = id < 0 ? .tour : .place }
}

/// One search result: the place's (or tour's) summary, and its distance when the query had a point.
public struct SearchHit: Codable, Sendable, Equatable {
    /// The index row: a place's id, or minus a tour's id. On the wire a hit has the place's or
    /// the tour's own id and its `kind`.
    public var id: Int64
    public var name: String
    public var category: String
    public var address: String?
    public var lat: Double
    public var lon: Double
    public var priceLevel: Int?
    public var popularity: Double
    public var rating: Double?
    public var reviewCount: Int?
    public var distanceM: Double?
    /// With `lang`: the language `name` came from.
    public var lang: TextLanguages?

    /// A place or a tour.
    public var kind: HitKind { HitKind(row: id) }
    /// The id of the place or tour, as the wire gives it.
    public var entityId: Int64 { kind == .tour ? -id : id }

    public init(id: Int64, name: String, category: String, address: String?, lat: Double, lon: Double, priceLevel: Int?,
                popularity: Double, rating: Double?, reviewCount: Int?, distanceM: Double?) {
        self.id = id
        self.name = name
        self.category = category
        self.address = address
        self.lat = lat
        self.lon = lon
        self.priceLevel = priceLevel
        self.popularity = popularity
        self.rating = rating
        self.reviewCount = reviewCount
        self.distanceM = distanceM
    }

    enum CodingKeys: String, CodingKey {
        case id, kind, name, category, address, lat, lon, popularity, rating, lang
        case priceLevel = "price_level"
        case reviewCount = "review_count"
        case distanceM = "distance_m"
    }

    public init(from decoder: Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        let entity = try c.decode(Int64.self, forKey: .id)
        id = try c.decode(HitKind.self, forKey: .kind) == .tour ? -entity : entity
        name = try c.decode(String.self, forKey: .name)
        category = try c.decode(String.self, forKey: .category)
        address = try c.decodeIfPresent(String.self, forKey: .address)
        lat = try c.decode(Double.self, forKey: .lat)
        lon = try c.decode(Double.self, forKey: .lon)
        priceLevel = try c.decodeIfPresent(Int.self, forKey: .priceLevel)
        popularity = try c.decode(Double.self, forKey: .popularity)
        rating = try c.decodeIfPresent(Double.self, forKey: .rating)
        reviewCount = try c.decodeIfPresent(Int.self, forKey: .reviewCount)
        distanceM = try c.decodeIfPresent(Double.self, forKey: .distanceM)
        lang = try c.decodeIfPresent(TextLanguages.self, forKey: .lang)
    }

    public func encode(to encoder: Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(entityId, forKey: .id)
        try c.encode(kind, forKey: .kind)
        try c.encode(name, forKey: .name)
        try c.encode(category, forKey: .category)
        try c.encodeIfPresent(address, forKey: .address)
        try c.encode(lat, forKey: .lat)
        try c.encode(lon, forKey: .lon)
        try c.encodeIfPresent(priceLevel, forKey: .priceLevel)
        try c.encode(popularity, forKey: .popularity)
        try c.encodeIfPresent(rating, forKey: .rating)
        try c.encodeIfPresent(reviewCount, forKey: .reviewCount)
        try c.encodeIfPresent(distanceM, forKey: .distanceM)
        try c.encodeIfPresent(lang, forKey: .lang)
    }
}

/// A page of hits and the cursor of the next one (nil on the last).
public struct SearchPage: Codable, Sendable, Equatable {
    public var hits: [SearchHit]
    public var nextCursor: String?

    enum CodingKeys: String, CodingKey {
        case hits
        case nextCursor = "next_cursor"
    }
}

/// How hits are ordered; ties always break by id, so pages are stable.
public enum SortOrder: String, Codable, Sendable {
    case distance, rating, popularity
}

/// Filters every search request accepts.
public struct PlaceFilters: Decodable, Sendable, Equatable {
    public var categories: [String]?
    public var excludeCategories: [String]?
    public var priceLevels: [Int]?
    public var minRating: Double?
    /// Only places open now, by their opening hours in their own time zone.
    public var openNow: Bool?

    enum CodingKeys: String, CodingKey {
        case openNow = "open_now"
        case categories
        case excludeCategories = "exclude_categories"
        case priceLevels = "price_levels"
        case minRating = "min_rating"
    }

    /// Checks the filters; category ids are checked against `known` when the catalog's list is at hand.
    func validate(knownCategories known: Set<String>?) throws(ServiceError) {
        for (list, field) in [(categories, "categories"), (excludeCategories, "exclude_categories")] {
            guard let list else { continue }
            guard list.count <= 20, list.allSatisfy({ !$0.isEmpty && $0.count <= 50 }) else {
                throw .invalid(field, "at most 20 category ids of 1-50 characters")
            }
            if let known, let unknown = list.first(where: { !known.contains($0) }) {
                throw .invalid(field, "unknown category '\(unknown)'; known: \(known.sorted().joined(separator: ", "))")
            }
        }
        if let levels = priceLevels, levels.count > 5 || !levels.allSatisfy({ (0...4).contains($0) }) {
            throw .invalid("price_levels", "price levels are 0 to 4")
        }
        if let rating = minRating, !(rating.isFinite && (0...5).contains(rating)) {
            throw .invalid("min_rating", "must be 0 to 5")
        }
    }
}

/// `search.nearby`: places within `radius_m` of a point.
public struct NearbyQuery: Decodable, Sendable, DeclaredShape {
    public var lat: Double
    public var lon: Double
    public var radiusM: Double
    public var filters: PlaceFilters
    public var sort: SortOrder?
    public var limit: Int?
    public var cursor: String?
    /// Names in this language (`LanguagePreference`), and each hit's `lang`.
    public var lang: LanguagePreference?

    enum CodingKeys: String, CodingKey {
        case lat, lon, sort, limit, cursor, lang
        case radiusM = "radius_m"
    }

    public init(from decoder: Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        lat = try c.decode(Double.self, forKey: .lat)
        lon = try c.decode(Double.self, forKey: .lon)
        radiusM = try c.decode(Double.self, forKey: .radiusM)
        sort = try SortOrder.decode(c, .sort)
        limit = try c.decodeIfPresent(Int.self, forKey: .limit)
        cursor = try c.decodeIfPresent(String.self, forKey: .cursor)
        lang = try LanguagePreference.read(c.decodeIfPresent(String.self, forKey: .lang))
        filters = try PlaceFilters(from: decoder)
    }

    /// Reads a plain body by span, without `Decodable`: `lat`, `lon` and `radius_m` as JSON
    /// numbers, `limit` an integer literal, `sort` and `cursor` strings, each at most once, and
    /// nothing else. Nil for any other body (filters, a member given twice, null, a string for a
    /// number, an integer out of range, an unknown member): then the decoder reads it, with its
    /// answers and errors. The body has been checked as strict JSON by the server.
    init?(spans body: Data) {
        var lat: Double?, lon: Double?, radius: Double?, limit: Int?, sort: SortOrder?, cursor: String?
        func number(_ value: UnsafeBufferPointer<UInt8>) -> Double? { JSONNumber.finite(value) }
        let plain = JSONSpan.walkMembers(of: body) { key, value, range in
            if JSONSpan.key(key, is: "lat") {
                guard lat == nil, let number = number(value) else { return false }
                lat = number
            } else if JSONSpan.key(key, is: "lon") {
                guard lon == nil, let number = number(value) else { return false }
                lon = number
            } else if JSONSpan.key(key, is: "radius_m") {
                guard radius == nil, let number = number(value) else { return false }
                radius = number
            } else if JSONSpan.key(key, is: "limit") {
                guard limit == nil, let number = JSONNumber.integer(value).flatMap({ Int(exactly: $0) }) else { return false }
                limit = number
            } else if JSONSpan.key(key, is: "sort") {
                guard sort == nil, let name = JSONSpan.string(at: range, in: body), let value = SortOrder(rawValue: name) else { return false }
                sort = value
            } else if JSONSpan.key(key, is: "cursor") {
                guard cursor == nil, let value = JSONSpan.string(at: range, in: body) else { return false }
                cursor = value
            } else {
                // Anything else (a filter, a key written with escapes) is the decoder's.
                return false
            }
            return true
        }
        guard plain else { return nil }
        guard let lat, let lon, let radius else { return nil }
        (self.lat, self.lon, radiusM, self.limit, self.sort, self.cursor, filters, lang) = (lat, lon, radius, limit, sort, cursor, PlaceFilters(), nil)
    }
}

/// `search.viewport`: places inside a map box (west > east crosses the 180th meridian).
public struct ViewportQuery: Decodable, Sendable, DeclaredShape {
    public var south: Double
    public var west: Double
    public var north: Double
    public var east: Double
    public var filters: PlaceFilters
    public var sort: SortOrder?
    public var limit: Int?
    public var cursor: String?
    /// Names in this language (`LanguagePreference`), and each hit's `lang`.
    public var lang: LanguagePreference?

    enum CodingKeys: String, CodingKey {
        case south, west, north, east, sort, limit, cursor, lang
    }

    public init(from decoder: Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        south = try c.decode(Double.self, forKey: .south)
        west = try c.decode(Double.self, forKey: .west)
        north = try c.decode(Double.self, forKey: .north)
        east = try c.decode(Double.self, forKey: .east)
        sort = try SortOrder.decode(c, .sort)
        limit = try c.decodeIfPresent(Int.self, forKey: .limit)
        cursor = try c.decodeIfPresent(String.self, forKey: .cursor)
        lang = try LanguagePreference.read(c.decodeIfPresent(String.self, forKey: .lang))
        filters = try PlaceFilters(from: decoder)
    }
}

extension SortOrder {
    /// Decodes a sort name, answering an unknown one with the names that exist.
    static func decode<K: CodingKey>(_ c: KeyedDecodingContainer<K>, _ key: K) throws -> SortOrder? {
        guard let name = try c.decodeIfPresent(String.self, forKey: key) else { return nil }
        guard let order = SortOrder(rawValue: name) else {
            throw ServiceError.invalid("sort", "unknown sort '\(name)'; use distance, rating or popularity")
        }
        return order
    }
}

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
