import Bus
import Foundation

/// What a hit is: a catalog place or a tour (`kind` on the wire).
public enum HitKind: String, Codable, Sendable, CaseIterable {
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

    public init(
        id: Int64, name: String, category: String, address: String?, lat: Double, lon: Double, priceLevel: Int?,
        popularity: Double, rating: Double?, reviewCount: Int?, distanceM: Double?
    ) {
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

    public init(hits: [SearchHit], nextCursor: String? = nil) {
        self.hits = hits
        self.nextCursor = nextCursor
    }
}

/// How hits are ordered; ties always break by id, so pages are stable.
public enum SearchSort: String, Codable, Sendable, CaseIterable {
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
    public func validate(knownCategories known: Set<String>?) throws(ServiceError) {
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

    public init(categories: [String]? = nil, excludeCategories: [String]? = nil, priceLevels: [Int]? = nil, minRating: Double? = nil, openNow: Bool? = nil) {
        self.categories = categories
        self.excludeCategories = excludeCategories
        self.priceLevels = priceLevels
        self.minRating = minRating
        self.openNow = openNow
    }
}

/// `search.nearby`: places within `radius_m` of a point.
public struct NearbyQuery: Decodable, Sendable, DeclaredShape {
    public var near: Point
    public var radiusM: Double
    public var filters: PlaceFilters
    public var sort: SearchSort?
    public var limit: Int?
    public var cursor: String?
    /// Names in this language (`LanguagePreference`), and each hit's `lang`.
    public var lang: LanguagePreference?

    /// The largest radius, in metres.
    public static let maxRadius = 50_000.0

    enum CodingKeys: String, CodingKey {
        case near, sort, limit, cursor, lang
        case radiusM = "radius_m"
    }

    public init(from decoder: Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        near = try c.decode(Point.self, forKey: .near)
        radiusM = try c.decode(Double.self, forKey: .radiusM)
        sort = try SearchSort.decode(c, .sort)
        limit = try c.decodeIfPresent(Int.self, forKey: .limit)
        cursor = try c.decodeIfPresent(String.self, forKey: .cursor)
        lang = try LanguagePreference.read(c.decodeIfPresent(String.self, forKey: .lang))
        filters = try PlaceFilters(from: decoder)
    }

    /// Reads a plain body by span, without `Decodable`: `near` an object of `lat` and `lon`,
    /// these and `radius_m` JSON numbers in range, `limit` an integer literal in range, `sort`
    /// and `cursor` strings, each at most once, and nothing else. Nil for any other body
    /// (filters, a member given twice, null, a string for a number, a number out of range, an
    /// unknown member): then the params check and the decoder read it, with their answers and
    /// errors. The body has been checked as strict JSON by the server.
    public init?(spans body: Data) {
        var lat: Double?
        var lon: Double?
        var radius: Double?
        var limit: Int?
        var sort: SearchSort?
        var cursor: String?
        var near = false
        func number(_ value: UnsafeBufferPointer<UInt8>, _ range: ClosedRange<Double>) -> Double? {
            guard let number = JSONNumber.finite(value), range.contains(number) else { return nil }
            // A literal too small to be told from 0 (`1e-400`) is the params check's to refuse.
            return number != 0 || DecimalLiteral(String(decoding: value, as: UTF8.self))?.isZero == true ? number : nil
        }
        let plain = JSONSpan.walkMembers(of: body) { key, value, range in
            if JSONSpan.key(key, is: "near") {
                guard !near else { return false }
                near = true
                return JSONSpan.walkMembers(of: body[range]) { key, value, _ in
                    if JSONSpan.key(key, is: "lat") {
                        guard lat == nil, let number = number(value, -90...90) else { return false }
                        lat = number
                    } else if JSONSpan.key(key, is: "lon") {
                        guard lon == nil, let number = number(value, -180...180) else { return false }
                        lon = number
                    } else {
                        return false
                    }
                    return true
                }
            } else if JSONSpan.key(key, is: "radius_m") {
                guard radius == nil, let number = number(value, 1...Self.maxRadius) else { return false }
                radius = number
            } else if JSONSpan.key(key, is: "limit") {
                guard limit == nil, let number = JSONNumber.integer(value).flatMap({ Int(exactly: $0) }),
                    (1...PageLimit.searchHits.maxLimit).contains(number)
                else { return false }
                limit = number
            } else if JSONSpan.key(key, is: "sort") {
                guard sort == nil, let name = JSONSpan.string(at: range, in: body), let value = SearchSort(rawValue: name) else { return false }
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
        (self.near, radiusM, self.limit, self.sort, self.cursor, filters, lang) = (Point(lat: lat, lon: lon), radius, limit, sort, cursor, PlaceFilters(), nil)
    }

    public static let fieldRules: [FieldRule] = [PageLimit.searchHits.rule, .number("radius_m", 1...maxRadius)]
}

/// `search.viewport`: places inside a map box (west > east crosses the 180th meridian).
public struct ViewportQuery: Decodable, Sendable, DeclaredShape {
    public var bbox: Box
    public var filters: PlaceFilters
    public var sort: SearchSort?
    public var limit: Int?
    public var cursor: String?
    /// Names in this language (`LanguagePreference`), and each hit's `lang`.
    public var lang: LanguagePreference?

    enum CodingKeys: String, CodingKey {
        case bbox, sort, limit, cursor, lang
    }

    public init(from decoder: Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        bbox = try c.decode(Box.self, forKey: .bbox)
        sort = try SearchSort.decode(c, .sort)
        limit = try c.decodeIfPresent(Int.self, forKey: .limit)
        cursor = try c.decodeIfPresent(String.self, forKey: .cursor)
        lang = try LanguagePreference.read(c.decodeIfPresent(String.self, forKey: .lang))
        filters = try PlaceFilters(from: decoder)
    }

    public static let fieldRules: [FieldRule] = [PageLimit.searchHits.rule]
}

extension SearchSort {
    /// Decodes a sort name, answering an unknown one with the names that exist.
    public static func decode<K: CodingKey>(_ c: KeyedDecodingContainer<K>, _ key: K) throws -> SearchSort? {
        guard let name = try c.decodeIfPresent(String.self, forKey: key) else { return nil }
        guard let order = SearchSort(rawValue: name) else {
            throw ServiceError.invalid("sort", "unknown sort '\(name)'; use distance, rating or popularity")
        }
        return order
    }
}

/// `search.text`: places whose name, category, address or description match `q`.
public struct TextQuery: Decodable, Sendable, DeclaredShape {
    public var q: String
    public var near: Point?
    public var radiusM: Double?
    public var bbox: Box?
    public var filters: PlaceFilters
    public var sort: TextSort?
    public var limit: Int?
    public var cursor: String?
    /// Names in this language (`LanguagePreference`), and each hit's `lang`. Matching is the
    /// same for every language: a place is found by all its names.
    public var lang: LanguagePreference?

    enum CodingKeys: String, CodingKey {
        case q, near, bbox, sort, limit, cursor, lang
        case radiusM = "radius_m"
    }

    public init(from decoder: Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        q = try c.decode(String.self, forKey: .q)
        near = try c.decodeIfPresent(Point.self, forKey: .near)
        radiusM = try c.decodeIfPresent(Double.self, forKey: .radiusM)
        bbox = try c.decodeIfPresent(Box.self, forKey: .bbox)
        if let name = try c.decodeIfPresent(String.self, forKey: .sort) {
            guard let order = TextSort(rawValue: name) else {
                throw ServiceError.invalid("sort", "unknown sort '\(name)'; use relevance, distance, rating or popularity")
            }
            sort = order
        }
        limit = try c.decodeIfPresent(Int.self, forKey: .limit)
        cursor = try c.decodeIfPresent(String.self, forKey: .cursor)
        lang = try LanguagePreference.read(c.decodeIfPresent(String.self, forKey: .lang))
        filters = try PlaceFilters(from: decoder)
    }

    public static let fieldRules: [FieldRule] = [PageLimit.searchHits.rule, .number("radius_m", 1...NearbyQuery.maxRadius)]
}

/// Orders of `search.text`.
public enum TextSort: String, Sendable {
    case relevance, distance, rating, popularity
}

/// `search.autocomplete`: place names and categories starting with what was typed.
public struct AutocompleteQuery: Codable, Sendable, DeclaredShape {
    public var prefix: String
    public var near: Point?
    public var limit: Int?
    /// Names in this language where they match what was typed (`LanguagePreference`).
    public var lang: LanguagePreference?

    enum CodingKeys: String, CodingKey { case prefix, near, limit, lang }

    public init(prefix: String, near: Point? = nil, limit: Int? = nil, lang: LanguagePreference? = nil) {
        (self.prefix, self.near, self.limit, self.lang) = (prefix, near, limit, lang)
    }

    public init(from decoder: Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        prefix = try c.decode(String.self, forKey: .prefix)
        near = try c.decodeIfPresent(Point.self, forKey: .near)
        limit = try c.decodeIfPresent(Int.self, forKey: .limit)
        lang = try LanguagePreference.read(c.decodeIfPresent(String.self, forKey: .lang))
    }

    /// The query as a client sends it: `lang` as its chain, a list that negotiates the same.
    public func encode(to encoder: Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(prefix, forKey: .prefix)
        try c.encodeIfPresent(near, forKey: .near)
        try c.encodeIfPresent(limit, forKey: .limit)
        try c.encodeIfPresent(lang?.chain.joined(separator: ","), forKey: .lang)
    }

    public static let fieldRules: [FieldRule] = [PageLimit.suggestions.rule]
}

/// One autocomplete suggestion (a `category`, a `place` or a `tour`), with where the typed words match in `text` (UTF-16 offsets, end exclusive).
public struct Suggestion: Codable, Sendable, Equatable {
    public var kind: String
    public var text: String
    public var id: Int64?
    public var category: String?
    public var distanceM: Double?
    public var highlights: [[Int]]
    /// With `lang`, for places and tours: the language `text` came from (absent: its own name).
    public var lang: TextLanguages? = nil

    enum CodingKeys: String, CodingKey {
        case kind, text, id, category, highlights, lang
        case distanceM = "distance_m"
    }

    public init(kind: String, text: String, id: Int64? = nil, category: String? = nil, distanceM: Double? = nil, highlights: [[Int]], lang: TextLanguages? = nil) {
        self.kind = kind
        self.text = text
        self.id = id
        self.category = category
        self.distanceM = distanceM
        self.highlights = highlights
        self.lang = lang
    }
}

/// The reply of `search.autocomplete`.
public struct Suggestions: Codable, Sendable, Equatable {
    public var suggestions: [Suggestion]

    public init(suggestions: [Suggestion]) {
        self.suggestions = suggestions
    }
}

/// `search.popular`: the places to show at an instant, near a point, in a box or anywhere.
public struct PopularQuery: Decodable, Sendable, DeclaredShape {
    /// A point, and how far from it (`radius_m`, default 10 km).
    public var near: Point?
    public var radiusM: Double?
    public var bbox: Box?
    /// RFC 3339; now when absent.
    public var at: String?
    public var limit: Int?

    enum CodingKeys: String, CodingKey {
        case near, bbox, at, limit
        case radiusM = "radius_m"
    }

    public static let fieldRules: [FieldRule] = [
        PageLimit.popularHits.rule, .number("radius_m", 1...NearbyQuery.maxRadius),
    ]
}

/// One place of `search.popular`: a search hit, and whether it is an event in season now.
public struct PopularHit: Codable, Sendable, Equatable {
    public var hit: SearchHit
    public var inSeason: Bool

    enum CodingKeys: String, CodingKey {
        case id, kind, name, category, address, lat, lon, popularity, rating
        case priceLevel = "price_level"
        case reviewCount = "review_count"
        case distanceM = "distance_m"
        case inSeason = "in_season"
    }

    /// The hit's members as `SearchHit` writes them, with `in_season`.
    public func encode(to encoder: Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(hit.entityId, forKey: .id)
        try c.encode(hit.kind, forKey: .kind)
        try c.encode(hit.name, forKey: .name)
        try c.encode(hit.category, forKey: .category)
        try c.encodeIfPresent(hit.address, forKey: .address)
        try c.encode(hit.lat, forKey: .lat)
        try c.encode(hit.lon, forKey: .lon)
        try c.encodeIfPresent(hit.priceLevel, forKey: .priceLevel)
        try c.encode(hit.popularity, forKey: .popularity)
        try c.encodeIfPresent(hit.rating, forKey: .rating)
        try c.encodeIfPresent(hit.reviewCount, forKey: .reviewCount)
        try c.encodeIfPresent(hit.distanceM, forKey: .distanceM)
        try c.encode(inSeason, forKey: .inSeason)
    }

    public init(from decoder: Decoder) throws {
        hit = try SearchHit(from: decoder)
        inSeason = try decoder.container(keyedBy: CodingKeys.self).decode(Bool.self, forKey: .inSeason)
    }

    public init(hit: SearchHit, inSeason: Bool) {
        self.hit = hit
        self.inSeason = inSeason
    }
}

/// The reply of `search.popular`: the instant it was asked for, and the places, best first.
public struct PopularPage: Codable, Sendable {
    public var at: String
    public var hits: [PopularHit]

    public init(at: String, hits: [PopularHit]) {
        self.at = at
        self.hits = hits
    }
}

/// How the traveller goes.
public enum TravelMode: String, Codable, Sendable, CaseIterable {
    case walking, bicycling, driving, transit

    /// A mode by its name; another is `invalid_argument` on `mode`, naming at most 40 bytes of it.
    public init(from decoder: Decoder) throws {
        let name = try decoder.singleValueContainer().decode(String.self)
        guard let mode = TravelMode(rawValue: name) else {
            throw ServiceError.invalid("mode", "unknown mode '\(Echo.clip(name, maxBytes: 40))'; use walking, bicycling, driving or transit")
        }
        self = mode
    }

    /// The average speed an estimate assumes, metres per second: walking 4.8 km/h, bicycling
    /// 15 km/h, driving 30 km/h and transit 20 km/h (city averages, stops and lights included).
    public var metresPerSecond: Double {
        switch self {
        case .walking: 4.8 / 3.6
        case .bicycling: 15 / 3.6
        case .driving: 30 / 3.6
        case .transit: 20 / 3.6
        }
    }
}

/// `directions.get`: from a point to a place (by id) or a point.
public struct DirectionsQuery: Decodable, Sendable, DeclaredShape {
    public enum Target: Decodable, Sendable {
        case place(Int64)
        case point(Point)

        public init(from decoder: Decoder) throws {
            let single = try decoder.singleValueContainer()
            if let id = try? single.decode(Int64.self) {
                self = .place(id)
            } else {
                self = .point(try single.decode(Point.self))
            }
        }
    }

    public var from: Point
    public var to: Target
    public var mode: TravelMode?
    /// The language of the steps' texts, negotiated as the catalog's strings.
    public var lang: LanguagePreference?

    enum CodingKeys: String, CodingKey {
        case from, to, mode, lang
    }

    public init(from decoder: Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        from = try c.decode(Point.self, forKey: .from)
        to = try c.decode(Target.self, forKey: .to)
        mode = try c.decodeIfPresent(TravelMode.self, forKey: .mode)
        lang = try LanguagePreference.read(c.decodeIfPresent(String.self, forKey: .lang))
    }

    public static let fieldRules: [FieldRule] = [FieldRule("to", .anyOf([Int64.self, Point.self]))]
}

/// `directions.plan`: the visits of a trip from `start`, in the order that makes it shortest.
public struct TripQuery: Decodable, Sendable, DeclaredShape {
    public var start: Point
    public var placeIds: [Int64]
    public var mode: TravelMode?
    public var roundTrip: Bool?

    enum CodingKeys: String, CodingKey {
        case start, mode
        case placeIds = "place_ids"
        case roundTrip = "round_trip"
    }
}

/// Where a route ends: a place (with its name) or a point.
public struct RouteEnd: Codable, Sendable {
    public var id: Int64?
    public var name: String?
    public var lat: Double
    public var lon: Double

    public init(id: Int64? = nil, name: String? = nil, lat: Double, lon: Double) {
        self.id = id
        self.name = name
        self.lat = lat
        self.lon = lon
    }
}

/// How a directions answer was made.
public enum RouteStatus: String, Codable, Sendable, CaseIterable {
    /// Along the street network: lengths and times of the route itself.
    case routed
    /// From the straight line and an average speed: transit, no street network there, or an
    /// end off it (`reason` says which).
    case estimate
    /// Both ends are on the street network, on pieces of it no path joins (`reason` says so).
    case noRoute = "no_route"
}

/// One step of a routed answer: a stretch along one street, and the turn onto it.
public struct RouteStep: Codable, Sendable, Equatable {
    /// `depart`, `turn`, `continue`, `arrive`.
    public var maneuver: String
    /// For turns: `left`, `right`, `slight left`, `slight right`, `sharp left`, `sharp right`,
    /// `straight`, `uturn`.
    public var modifier: String?
    /// The street's name (or ref); none for an unnamed footway or service road.
    public var street: String?
    /// Where the step begins, and its stretch's length and time.
    public var lat: Double
    public var lon: Double
    public var distanceM: Double
    public var durationS: Double
    /// What a traveller reads: "Turn left onto Mannerheimintie".
    public var instruction: String

    enum CodingKeys: String, CodingKey {
        case maneuver, modifier, street, lat, lon, instruction
        case distanceM = "distance_m"
        case durationS = "duration_s"
    }

    public init(
        maneuver: String, modifier: String?, street: String?, lat: Double, lon: Double, distanceM: Double, durationS: Double, instruction: String
    ) {
        self.maneuver = maneuver
        self.modifier = modifier
        self.street = street
        self.lat = lat
        self.lon = lon
        self.distanceM = distanceM
        self.durationS = durationS
        self.instruction = instruction
    }
}

/// The reply of `directions.get`.
public struct Directions: Codable, Sendable {
    public var to: RouteEnd
    public var mode: TravelMode
    public var status: RouteStatus
    /// Along the route when routed; the straight line's when an estimate; absent when no route.
    public var distanceM: Double?
    /// The straight line's initial bearing from `from` to `to`.
    public var bearingDeg: Double
    /// The route's time when routed; an average speed's estimate otherwise; absent when no route.
    public var durationS: Double?
    /// True unless routed: the time is an estimate from an average speed, not a route's.
    public var estimate: Bool
    /// Why the answer is not a route (an estimate, or no route).
    public var reason: String?
    /// The route's points, Google's encoded polyline at precision 5, when routed.
    public var polyline: String?
    /// Where the ends met the street network, when routed.
    public var snappedFrom: Point?
    public var snappedTo: Point?
    public var steps: [RouteStep]?
    /// The language of the steps' `instruction`s (`lang` negotiated as the catalog's strings), when routed.
    public var lang: String?
    /// Turn-by-turn directions in map apps that support the mode: `google`, `apple`, `osm`.
    public var links: [String: String]

    enum CodingKeys: String, CodingKey {
        case to, mode, status, estimate, reason, polyline, steps, links, lang
        case distanceM = "distance_m"
        case bearingDeg = "bearing_deg"
        case durationS = "duration_s"
        case snappedFrom = "snapped_from"
        case snappedTo = "snapped_to"
    }

    public init(
        to: RouteEnd, mode: TravelMode, status: RouteStatus, distanceM: Double?, bearingDeg: Double, durationS: Double?, reason: String? = nil,
        links: [String: String]
    ) {
        self.to = to
        self.mode = mode
        self.status = status
        self.distanceM = distanceM
        self.bearingDeg = bearingDeg
        self.durationS = durationS
        self.estimate = status != .routed
        self.reason = reason
        self.links = links
    }
}

/// `directions.matrix`: the time and length from each source to each destination.
public struct MatrixQuery: Decodable, Sendable, DeclaredShape {
    public static let maxPoints = 25
    public var sources: [Point]
    public var destinations: [Point]
    public var mode: TravelMode?
}

/// The reply of `directions.matrix`: `durations_s[i][j]` from source i to destination j, null
/// where no route joins them (or an end is off the network, when routed).
public struct TravelMatrix: Codable, Sendable {
    public var mode: TravelMode
    public var status: RouteStatus
    public var reason: String?
    public var durationsS: [[Double?]]
    public var distancesM: [[Double?]]

    enum CodingKeys: String, CodingKey {
        case mode, status, reason
        case durationsS = "durations_s"
        case distancesM = "distances_m"
    }

    public init(mode: TravelMode, status: RouteStatus, reason: String?, durationsS: [[Double?]], distancesM: [[Double?]]) {
        self.mode = mode
        self.status = status
        self.reason = reason
        self.durationsS = durationsS
        self.distancesM = distancesM
    }
}

/// One leg of a planned trip.
public struct TripLeg: Codable, Sendable {
    public var to: RouteEnd
    public var distanceM: Double
    public var durationS: Double

    enum CodingKeys: String, CodingKey {
        case to
        case distanceM = "distance_m"
        case durationS = "duration_s"
    }

    public init(to: RouteEnd, distanceM: Double, durationS: Double) {
        self.to = to
        self.distanceM = distanceM
        self.durationS = durationS
    }
}

/// The reply of `directions.plan`.
public struct TripPlan: Codable, Sendable {
    public var order: [Int64]
    public var legs: [TripLeg]
    public var totalDistanceM: Double
    public var totalDurationS: Double
    /// Whether the order is the shortest there is (up to `TripOrder.exactUpTo` places), or a heuristic's.
    public var exact: Bool
    /// False when the legs are routes (ordered by routed times), true when estimates.
    public var estimate = true
    public var reason: String?

    enum CodingKeys: String, CodingKey {
        case order, legs, exact, estimate, reason
        case totalDistanceM = "total_distance_m"
        case totalDurationS = "total_duration_s"
    }

    public init(order: [Int64], legs: [TripLeg], totalDistanceM: Double, totalDurationS: Double, exact: Bool) {
        self.order = order
        self.legs = legs
        self.totalDistanceM = totalDistanceM
        self.totalDurationS = totalDurationS
        self.exact = exact
    }
}
