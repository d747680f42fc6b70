import Bus
import Foundation

// The catalog's wire contract: its place, the writable fields `catalog.create` takes, and the
// events it publishes. Declared once here; the catalog publishes these types and its
// followers (search, social) decode the same ones.

/// The event types the catalog publishes.
public enum CatalogEvents {
    /// Body: the whole `Place` after the change (followers may read it as a `PlaceSummary`).
    public static let upserted = "catalog.place.upserted"
    /// Body: `PlaceDeleted`.
    public static let deleted = "catalog.place.deleted"
}

/// Body of `catalog.place.deleted` and the reply of `catalog.delete`.
public struct PlaceDeleted: Codable, Sendable, Equatable {
    public var id: Int64
    public init(id: Int64) { self.id = id }
}

/// A photo of a place: where it is and whom to credit.
public struct Photo: Codable, Sendable, Equatable {
    public var url: String
    public var attribution: String?

    public init(url: String, attribution: String? = nil) {
        self.url = url
        self.attribution = attribution
    }
}

/// A photo the catalog hosts itself (`catalog.photo.add`): a JPEG an admin uploaded, kept in
/// two sizes that fit within `HostedPhoto.sizes` pixels, served by `catalog.photo` and as
/// `GET /places/{place_id}/photos/{id}/{size}.jpg`. `width` and `height` are the larger size's.
public struct HostedPhoto: Codable, Sendable, Equatable {
    /// The longest side of each size kept, largest first.
    public static let sizes = [1280, 320]

    public var id: Int64
    public var width: Int
    public var height: Int
    public var attribution: String?
    public var caption: String?

    public init(id: Int64, width: Int, height: Int, attribution: String? = nil, caption: String? = nil) {
        self.id = id
        self.width = width
        self.height = height
        self.attribution = attribution
        self.caption = caption
    }
}

/// One opening period in a week: ISO weekday 1 (Monday) to 7, times `HH:MM` local to the place.
/// A `close` earlier than `open` runs past midnight; `24:00` closes at midnight.
public struct OpeningPeriod: Codable, Sendable, Equatable {
    public var day: Int
    public var open: String
    public var close: String

    public init(day: Int, open: String, close: String) {
        self.day = day
        self.open = open
        self.close = close
    }

    /// Minutes since midnight of a time as periods write it (`HH:MM`, 00:00 to 24:00), or nil
    /// for anything else.
    public static func minutes(_ hhmm: String) -> Int? {
        let parts = hhmm.split(separator: ":", omittingEmptySubsequences: false)
        guard parts.count == 2, parts[0].count == 2, parts[1].count == 2,
            let h = Int(parts[0]), let m = Int(parts[1]), (0...24).contains(h), (0...59).contains(m),
            h < 24 || m == 0
        else { return nil }
        return h * 60 + m
    }
}

/// A place (point of interest) as the catalog stores it, answers it and publishes it
/// (the body of `catalog.place.upserted`).
public struct Place: Codable, Sendable, Equatable {
    public var id: Int64
    public var name: String
    public var category: String
    public var lat: Double
    public var lon: Double
    public var address: String?
    public var phone: String?
    public var website: String?
    /// 0 (free) to 4 (most expensive).
    public var priceLevel: Int?
    public var description: String?
    public var openingHours: [OpeningPeriod]
    public var photos: [Photo]
    /// A non-negative score; higher is more popular.
    public var popularity: Double
    /// Ids of this place in other datasets (`{"osm":"node/123"}`), unique per source.
    public var externalIds: [String: String]
    public var createdAt: String
    public var updatedAt: String
    /// Starts at 1 and grows by one with every update.
    public var version: Int64
    /// The IANA time zone of the place (`Australia/Sydney`), which its opening hours are in.
    public var timezone: String? = nil
    /// The name in each language it has (`{"en": …, "ru": …}`), keyed by language tag; nil
    /// (and absent from the JSON) when it has none. `name` is the English one, or else the first given.
    public var nameI18n: [String: String]? = nil
    /// The description in each language it has; nil when it has none.
    public var descriptionI18n: [String: String]? = nil
    /// Opening hours as a source wrote them when they are not plain weekly periods (an
    /// OpenStreetMap `opening_hours` with holidays, months, sunrise …): kept, never guessed.
    public var openingHoursText: String? = nil
    /// When the place is on (an event's dates), read in its `timezone`; nil (and absent from
    /// the JSON) when it has none. See `Season`.
    public var seasons: [Season]? = nil
    /// The photos the catalog hosts (`catalog.photo.add`), oldest first; nil (and absent from
    /// the JSON) when it has none. Written only by the photo methods.
    public var hostedPhotos: [HostedPhoto]? = nil

    public init(
        id: Int64, name: String, category: String, lat: Double, lon: Double, address: String? = nil, phone: String? = nil,
        website: String? = nil, priceLevel: Int? = nil, description: String? = nil, openingHours: [OpeningPeriod] = [],
        photos: [Photo] = [], popularity: Double = 0, externalIds: [String: String] = [:], createdAt: String, updatedAt: String,
        version: Int64 = 1, timezone: String? = nil, nameI18n: [String: String]? = nil, descriptionI18n: [String: String]? = nil,
        openingHoursText: String? = nil, seasons: [Season]? = nil, hostedPhotos: [HostedPhoto]? = nil
    ) {
        self.id = id
        self.name = name
        self.category = category
        self.lat = lat
        self.lon = lon
        self.address = address
        self.phone = phone
        self.website = website
        self.priceLevel = priceLevel
        self.description = description
        self.openingHours = openingHours
        self.photos = photos
        self.popularity = popularity
        self.externalIds = externalIds
        self.createdAt = createdAt
        self.updatedAt = updatedAt
        self.version = version
        self.timezone = timezone
        self.nameI18n = nameI18n
        self.descriptionI18n = descriptionI18n
        self.openingHoursText = openingHoursText
        self.seasons = seasons
        self.hostedPhotos = hostedPhotos
    }

    enum CodingKeys: String, CodingKey {
        case id, name, category, lat, lon, address, phone, website, description, photos, popularity, version, timezone, seasons
        case priceLevel = "price_level"
        case openingHours = "opening_hours"
        case externalIds = "external_ids"
        case createdAt = "created_at"
        case updatedAt = "updated_at"
        case nameI18n = "name_i18n"
        case descriptionI18n = "description_i18n"
        case openingHoursText = "opening_hours_text"
        case hostedPhotos = "hosted_photos"
    }
}

/// The part of a `Place` that a follower of `catalog.place.upserted` keeps to find places
/// (search): the same names and types, with what such a follower can do without optional.
/// A `Place` body decodes as one; other members are ignored.
public struct PlaceSummary: Codable, Sendable, Equatable {
    public var id: Int64
    public var name: String
    public var category: String
    public var lat: Double
    public var lon: Double
    public var address: String?
    public var priceLevel: Int?
    public var popularity: Double?
    public var openingHours: [OpeningPeriod]?
    public var description: String?
    public var timezone: String?
    public var nameI18n: [String: String]?
    public var descriptionI18n: [String: String]?
    public var seasons: [Season]?

    public init(
        id: Int64, name: String, category: String, lat: Double, lon: Double, address: String? = nil, priceLevel: Int? = nil,
        popularity: Double? = nil, openingHours: [OpeningPeriod]? = nil, description: String? = nil, timezone: String? = nil,
        nameI18n: [String: String]? = nil, descriptionI18n: [String: String]? = nil, seasons: [Season]? = nil
    ) {
        self.id = id
        self.name = name
        self.category = category
        self.lat = lat
        self.lon = lon
        self.address = address
        self.priceLevel = priceLevel
        self.popularity = popularity
        self.openingHours = openingHours
        self.description = description
        self.timezone = timezone
        self.nameI18n = nameI18n
        self.descriptionI18n = descriptionI18n
        self.seasons = seasons
    }

    /// The summary of a place, as a follower decoding its event body reads it.
    public init(_ place: Place) {
        self.init(
            id: place.id, name: place.name, category: place.category, lat: place.lat, lon: place.lon, address: place.address,
            priceLevel: place.priceLevel, popularity: place.popularity, openingHours: place.openingHours,
            description: place.description, timezone: place.timezone, nameI18n: place.nameI18n, descriptionI18n: place.descriptionI18n,
            seasons: place.seasons)
    }

    /// The JSON member names this type reads (those of `Place`).
    public static let memberNames: Set<String> = Set(CodingKeys.allCases.map(\.rawValue))

    enum CodingKeys: String, CodingKey, CaseIterable {
        case id, name, category, lat, lon, address, popularity, description, timezone, seasons
        case priceLevel = "price_level"
        case openingHours = "opening_hours"
        case nameI18n = "name_i18n"
        case descriptionI18n = "description_i18n"
    }
}

/// The bounds of a place's and a tour's texts, declared once: the params of `catalog.create`,
/// `catalog.update`, `tours.create` and `tours.update` are held to them before their handlers,
/// and the catalog holds every stored place to them (imports too). Texts are bounded in UTF-8
/// bytes (4 per character) before their characters are counted (`TextRule`).
public enum PlaceTexts {
    public static let name = TextRule("name", maxCharacters: 200)
    public static let address = TextRule("address", maxCharacters: 500, lines: .multiple)
    public static let phone = TextRule("phone", maxCharacters: 40)
    public static let description = TextRule("description", maxCharacters: 5_000, lines: .multiple)
    public static let openingHoursText = TextRule("opening_hours_text", maxCharacters: 500)
    public static let photoAttribution = TextRule("attribution", maxCharacters: 300)
    /// What a hosted photo shows (`catalog.photo.add`).
    public static let photoCaption = TextRule("caption", maxCharacters: 300)
    /// A URL (a website, a photo's): at most this many characters.
    public static let url = TextRule("url", maxCharacters: 2_000)

    /// The rules of a tour's texts, and of a place's name and description, as field rules.
    public static let tourRules: [FieldRule] = [
        .text(name, trimmed: true), .text(name, at: "name_i18n[]"), .text(description), .text(description, at: "description_i18n[]"),
    ]
    /// The rules of a place's texts, as field rules.
    public static let placeRules: [FieldRule] =
        tourRules + [
            .text(address), .text(phone), .text(openingHoursText), .text(url, at: "website"),
            .text(url, at: "photos[].url"), .text(photoAttribution, at: "photos[].attribution"),
        ]
}

/// The writable fields of a place, as `catalog.create` takes them.
public struct PlaceInput: Codable, Sendable, Equatable, DeclaredShape {
    public static let fieldRules = PlaceTexts.placeRules

    /// Optional when `name_i18n` is given: then its English name, or else the first language's.
    public var name: String?
    public var category: String
    public var lat: Double
    public var lon: Double
    public var address: String?
    public var phone: String?
    public var website: String?
    public var priceLevel: Int?
    public var description: String?
    public var openingHours: [OpeningPeriod]?
    public var photos: [Photo]?
    public var popularity: Double?
    public var externalIds: [String: String]?
    public var timezone: String?
    public var nameI18n: [String: String]?
    public var descriptionI18n: [String: String]?
    public var openingHoursText: String?
    public var seasons: [Season]?

    /// The required fields; the optional ones start absent and are set by name.
    public init(name: String, category: String, lat: Double, lon: Double) {
        self.name = name
        self.category = category
        self.lat = lat
        self.lon = lon
    }

    enum CodingKeys: String, CodingKey {
        case name, category, lat, lon, address, phone, website, description, photos, popularity, timezone, seasons
        case priceLevel = "price_level"
        case openingHours = "opening_hours"
        case externalIds = "external_ids"
        case nameI18n = "name_i18n"
        case descriptionI18n = "description_i18n"
        case openingHoursText = "opening_hours_text"
    }
}

/// `catalog.get` and `catalog.delete`: a place by id.
public struct PlaceID: Codable, Sendable, DeclaredShape {
    public var id: Int64
    public init(id: Int64) { self.id = id }
}

/// A category of places, with how many places it has when listed.
public struct Category: Codable, Sendable, Equatable {
    public var id: String
    public var name: String
    public var count: Int?

    public init(id: String, name: String, count: Int? = nil) {
        self.id = id
        self.name = name
        self.count = count
    }
}

/// The reply of `catalog.categories` (search reads it to check the categories a query names).
public struct CategoryList: Codable, Sendable {
    public var categories: [Category]

    public init(categories: [Category]) { self.categories = categories }
}
