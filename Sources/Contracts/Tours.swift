import Bus
import Foundation

// The catalog's tours on the wire: a tour as the catalog stores, answers and publishes it, and
// the events followers (search) read. Declared once here by the catalog, their publisher.

/// The event types of the catalog's tours.
public enum TourEvents {
    /// Body: the whole `Tour` after the change.
    public static let upserted = "catalog.tour.upserted"
    /// Body: `TourDeleted`.
    public static let deleted = "catalog.tour.deleted"
}

/// An ordered route of the catalog's places. A place may be a stop of any number of tours and
/// is stored once; a tour holds only the places' ids, in walking order.
public struct Tour: Codable, Sendable, Equatable {
    public var id: Int64
    /// The English name, or else the first one given (see `nameI18n`).
    public var name: String
    /// The name in each language it has (`{"en": …, "ru": …}`), keyed by BCP 47 tag.
    public var nameI18n: [String: String]
    public var description: String?
    public var descriptionI18n: [String: String]
    /// Place ids in walking order; each place at most once.
    public var stops: [Int64]
    /// Where the tour starts: its first stop's coordinates, nil while it has no stop.
    public var lat: Double?
    public var lon: Double?
    /// Ids of this tour in other datasets (`{"guide-co": "walk-7"}`), unique per source.
    public var externalIds: [String: String]
    public var createdAt: String
    public var updatedAt: String
    /// Starts at 1 and grows by one with every change, a stop removed with its place included.
    public var version: Int64

    public init(
        id: Int64, name: String, nameI18n: [String: String] = [:], description: String? = nil,
        descriptionI18n: [String: String] = [:], stops: [Int64], lat: Double? = nil, lon: Double? = nil,
        externalIds: [String: String] = [:], createdAt: String, updatedAt: String, version: Int64 = 1
    ) {
        self.id = id
        self.name = name
        self.nameI18n = nameI18n
        self.description = description
        self.descriptionI18n = descriptionI18n
        self.stops = stops
        self.lat = lat
        self.lon = lon
        self.externalIds = externalIds
        self.createdAt = createdAt
        self.updatedAt = updatedAt
        self.version = version
    }

    enum CodingKeys: String, CodingKey {
        case id, name, description, stops, lat, lon, version
        case nameI18n = "name_i18n"
        case descriptionI18n = "description_i18n"
        case externalIds = "external_ids"
        case createdAt = "created_at"
        case updatedAt = "updated_at"
    }
}

/// `tours.create`: a name (or names by language), and the stops in walking order.
public struct TourInput: Codable, Sendable, DeclaredShape {
    public static let fieldRules = PlaceTexts.tourRules

    /// Optional when `name_i18n` is given: then its English name, or else the first language's.
    public var name: String?
    public var nameI18n: [String: String]?
    public var description: String?
    public var descriptionI18n: [String: String]?
    public var stops: [Int64]
    public var externalIds: [String: String]?

    public init(
        name: String?, nameI18n: [String: String]? = nil, description: String? = nil, descriptionI18n: [String: String]? = nil,
        stops: [Int64], externalIds: [String: String]? = nil
    ) {
        self.name = name
        self.nameI18n = nameI18n
        self.description = description
        self.descriptionI18n = descriptionI18n
        self.stops = stops
        self.externalIds = externalIds
    }

    enum CodingKeys: String, CodingKey {
        case name, description, stops
        case nameI18n = "name_i18n"
        case descriptionI18n = "description_i18n"
        case externalIds = "external_ids"
    }
}

/// Body of `catalog.tour.deleted` and the reply of `tours.delete`.
public struct TourDeleted: Codable, Sendable, Equatable, DeclaredShape {
    public var id: Int64
    public init(id: Int64) { self.id = id }
}
