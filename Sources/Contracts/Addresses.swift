import Bus

// Addresses: the catalog keeps those of its OpenStreetMap imports and publishes them as events;
// search keeps a copy and answers `geo.search` and `geo.reverse` (Protocols/search.md, "Addresses").

extension Methods {
    public enum Geo {}
}

extension Methods.Geo {
    public static let search = Method<GeoSearchQuery, GeoHits>(
        "geo.search", .search, .anyone, .read,
        "addresses, streets, areas and postcodes matching free text q (one typo forgiven, the last word may be unfinished), by match then distance from near",
        errors: [.invalid("q", "must hold a letter or a digit")])
    public static let reverse = Method<GeoReverseQuery, GeoReverse>(
        "geo.reverse", .search, .anyone, .read,
        "the nearest house address to lat/lon, with its street, area and city, and the distance to it",
        errors: [.notFound("lat", "no house address lies within 50 km")])
}

/// The catalog's events about addresses. An OSM import keeps its addresses as one set, which
/// replaces the sets at least half of whose elements it has: `removed` for each of those, then
/// the new set's addresses in batches.
public enum AddressEvents {
    /// Body: `AddressBatch`.
    public static let upserted = "catalog.addresses.upserted"
    /// Body: `AddressSetRemoved`.
    public static let removed = "catalog.addresses.removed"
}

/// What a geocoder finds: a house's address, a street, an area (a city, a suburb) or a postcode.
public struct Address: Codable, Sendable, Equatable {
    public enum Kind: String, Codable, Sendable, CaseIterable {
        case house, street, area, postcode
    }
    /// The catalog's id of it, unique across sets.
    public var id: Int64
    public var kind: Kind
    /// The OpenStreetMap element (`node/1`, `way/2`, `relation/3`); a street's way of lowest id; none for a postcode.
    public var osm: String?
    public var housenumber: String?
    /// A house's street; a street's own name.
    public var street: String?
    public var postcode: String?
    /// The area a house or street lies in; an area's own name.
    public var area: String?
    /// The city it lies in; none for a city itself.
    public var city: String?
    /// A street's or an area's names by language (`sv`: `Mannerheimvägen`).
    public var names: [String: String]?
    public var lat: Double
    public var lon: Double

    public init(
        id: Int64, kind: Kind, osm: String? = nil, housenumber: String? = nil, street: String? = nil, postcode: String? = nil,
        area: String? = nil, city: String? = nil, names: [String: String]? = nil, lat: Double, lon: Double
    ) {
        self.id = id
        self.kind = kind
        self.osm = osm
        self.housenumber = housenumber
        self.street = street
        self.postcode = postcode
        self.area = area
        self.city = city
        self.names = names
        self.lat = lat
        self.lon = lon
    }

    /// How a person reads it, in the form of most of Europe: `Mannerheimintie 13, 00100
    /// Helsinki`, `Mannerheimintie, Helsinki`, `Kamppi, Helsinki`, `00100 Helsinki`. `street` and
    /// `area` are given in another language when asked for.
    public func label(street localStreet: String? = nil, area localArea: String? = nil) -> String {
        let street = localStreet ?? self.street
        let area = localArea ?? self.area
        switch kind {
        case .house:
            let line = [street, housenumber].compactMap { $0 }.joined(separator: " ")
            let place = [postcode, city].compactMap { $0 }.joined(separator: " ")
            return [line, place].filter { !$0.isEmpty }.joined(separator: ", ")
        case .street:
            return [street, city].compactMap { $0 }.joined(separator: ", ")
        case .area:
            return [area, city].compactMap { $0 }.joined(separator: ", ")
        case .postcode:
            return [postcode, city].compactMap { $0 }.joined(separator: " ")
        }
    }
}

/// Body of `catalog.addresses.upserted`: some of a set's addresses.
public struct AddressBatch: Codable, Sendable, Equatable {
    /// The most addresses of one event.
    public static let maxAddresses = 500

    public var setId: Int64
    /// The set's addresses in all: a copy holds the whole set once it has this many.
    public var total: Int
    public var addresses: [Address]

    enum CodingKeys: String, CodingKey {
        case addresses, total
        case setId = "set_id"
    }

    public init(setId: Int64, total: Int, addresses: [Address]) {
        self.setId = setId
        self.total = total
        self.addresses = addresses
    }
}

/// Body of `catalog.addresses.removed`: a newer import's set replaced this one.
public struct AddressSetRemoved: Codable, Sendable, Equatable {
    public var setId: Int64

    enum CodingKeys: String, CodingKey {
        case setId = "set_id"
    }

    public init(setId: Int64) { self.setId = setId }
}

/// `geo.search`: free text, ranked by how well it matches, then by distance from `near`.
public struct GeoSearchQuery: Decodable, Sendable, DeclaredShape {
    /// Characters of `q`, at most.
    public static let maxCharacters = 200

    public var q: String
    public var near: Point?
    public var limit: Int?
    /// Street and area names in this language where the data has them.
    public var lang: LanguagePreference?

    enum CodingKeys: String, CodingKey {
        case q, near, limit, lang
    }

    public init(from decoder: Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        q = try c.decode(String.self, forKey: .q)
        near = try c.decodeIfPresent(Point.self, forKey: .near)
        limit = try c.decodeIfPresent(Int.self, forKey: .limit)
        lang = try LanguagePreference.read(c.decodeIfPresent(String.self, forKey: .lang))
    }

    public init(q: String, near: Point? = nil, limit: Int? = nil, lang: LanguagePreference? = nil) {
        self.q = q
        self.near = near
        self.limit = limit
        self.lang = lang
    }

    public static let fieldRules: [FieldRule] = [
        PageLimit.geoHits.rule, .string("q", characters: 1...maxCharacters, bytes: 4 * maxCharacters),
    ]
}

/// `geo.reverse`: a point.
public struct GeoReverseQuery: Decodable, Sendable, DeclaredShape {
    public var lat: Double
    public var lon: Double
    public var lang: LanguagePreference?

    enum CodingKeys: String, CodingKey {
        case lat, lon, lang
    }

    public init(from decoder: Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        lat = try c.decode(Double.self, forKey: .lat)
        lon = try c.decode(Double.self, forKey: .lon)
        lang = try LanguagePreference.read(c.decodeIfPresent(String.self, forKey: .lang))
    }

    public init(lat: Double, lon: Double) {
        (self.lat, self.lon, self.lang) = (lat, lon, nil)
    }

    public static let fieldRules: [FieldRule] = [.number("lat", -90...90), .number("lon", -180...180)]
}

/// One hit of `geo.search`, or the answer of `geo.reverse`.
public struct GeoHit: Codable, Sendable, Equatable {
    public var kind: Address.Kind
    /// The formatted address (`Address.label`).
    public var label: String
    public var lat: Double
    public var lon: Double
    public var housenumber: String?
    public var street: String?
    public var postcode: String?
    public var area: String?
    public var city: String?
    public var osm: String?
    /// From `near` (`geo.search`) or from the point asked about (`geo.reverse`), in metres.
    public var distanceM: Double?

    enum CodingKeys: String, CodingKey {
        case kind, label, lat, lon, housenumber, street, postcode, area, city, osm
        case distanceM = "distance_m"
    }

    public init(
        kind: Address.Kind, label: String, lat: Double, lon: Double, housenumber: String? = nil, street: String? = nil, postcode: String? = nil,
        area: String? = nil, city: String? = nil, osm: String? = nil, distanceM: Double? = nil
    ) {
        self.kind = kind
        self.label = label
        self.lat = lat
        self.lon = lon
        self.housenumber = housenumber
        self.street = street
        self.postcode = postcode
        self.area = area
        self.city = city
        self.osm = osm
        self.distanceM = distanceM
    }
}

/// The reply of `geo.search`: the best hits first.
public struct GeoHits: Codable, Sendable {
    public var hits: [GeoHit]

    public init(hits: [GeoHit]) { self.hits = hits }
}

/// The reply of `geo.reverse`.
public struct GeoReverse: Codable, Sendable {
    public var address: GeoHit

    public init(address: GeoHit) { self.address = address }
}
