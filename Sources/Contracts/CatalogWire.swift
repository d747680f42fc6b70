import Bus
import Foundation
import Geo

// The params and results of the catalog's methods (Protocols/catalog.md) that are its own:
// listing, strings, imports, tours, their maps and progress, and the library. Places and
// tours themselves are in Catalog.swift and Tours.swift, since other services read them.

/// `catalog.list`: a page of places by id, optionally of one category.
public struct ListPlaces: Codable, Sendable, DeclaredShape {
    public var category: String?
    public var limit: Int?
    public var cursor: String?
    /// A language tag or Accept-Language list: each place's texts in it (`LanguagePreference`).
    public var lang: String?

    public init(category: String? = nil, limit: Int? = nil, cursor: String? = nil, lang: String? = nil) {
        self.category = category
        self.limit = limit
        self.cursor = cursor
        self.lang = lang
    }

    public static let fieldRules: [FieldRule] = [PageLimit.places.rule]
}

/// `catalog.get`: a place by id, its texts in `lang` when given.
public struct PlaceGet: Decodable, Sendable, DeclaredShape {
    public var id: Int64
    public var lang: String?

    public init(id: Int64, lang: String? = nil) {
        self.id = id
        self.lang = lang
    }
}

/// A place as a client gets it: the Place's members, and with a request's `lang`, its `name`
/// and `description` in that language and `lang` saying which languages they came from.
public struct LocalizedPlace: Codable, Sendable {
    public var place: Place
    public var lang: TextLanguages?

    enum CodingKeys: String, CodingKey { case lang }

    public init(from decoder: any Decoder) throws {
        place = try Place(from: decoder)
        lang = try decoder.container(keyedBy: CodingKeys.self).decodeIfPresent(TextLanguages.self, forKey: .lang)
    }

    public func encode(to encoder: Encoder) throws {
        try place.encode(to: encoder)
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encodeIfPresent(lang, forKey: .lang)
    }

    public init(place: Place, lang: TextLanguages? = nil) {
        self.place = place
        self.lang = lang
    }
}

/// A page of places and the cursor of the next page (nil on the last).
public struct PlacePage: Codable, Sendable {
    public var places: [LocalizedPlace]
    public var nextCursor: String?

    enum CodingKeys: String, CodingKey {
        case places
        case nextCursor = "next_cursor"
    }

    public init(places: [LocalizedPlace], nextCursor: String? = nil) {
        self.places = places
        self.nextCursor = nextCursor
    }
}

/// `catalog.update`: the place's id and only the fields to change; `null` clears an optional field.
public struct PlaceUpdate: Decodable, Sendable, DeclaredShape {
    public static let fieldRules = PlaceTexts.placeRules

    public var id: Int64
    /// When set, the update applies only if the place is still at this version (else `conflict`).
    public var expectedVersion: Int64?
    public var name: Patch<String> = .absent
    public var category: Patch<String> = .absent
    public var lat: Patch<Double> = .absent
    public var lon: Patch<Double> = .absent
    public var address: Patch<String> = .absent
    public var phone: Patch<String> = .absent
    public var website: Patch<String> = .absent
    public var priceLevel: Patch<Int> = .absent
    public var description: Patch<String> = .absent
    public var openingHours: Patch<[OpeningPeriod]> = .absent
    public var photos: Patch<[Photo]> = .absent
    public var popularity: Patch<Double> = .absent
    public var externalIds: Patch<[String: String]> = .absent
    public var timezone: Patch<String> = .absent
    public var nameI18n: Patch<[String: String]> = .absent
    public var descriptionI18n: Patch<[String: String]> = .absent
    public var openingHoursText: Patch<String> = .absent
    public var seasons: Patch<[Season]> = .absent

    enum CodingKeys: String, CodingKey {
        case id, name, category, lat, lon, address, phone, website, description, photos, popularity, timezone, seasons
        case expectedVersion = "expected_version"
        case priceLevel = "price_level"
        case openingHours = "opening_hours"
        case externalIds = "external_ids"
        case nameI18n = "name_i18n"
        case descriptionI18n = "description_i18n"
        case openingHoursText = "opening_hours_text"
    }

    public init(from decoder: Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        id = try c.decode(Int64.self, forKey: .id)
        expectedVersion = try c.decodeIfPresent(Int64.self, forKey: .expectedVersion)
        name = try c.decodePatch(String.self, forKey: .name)
        category = try c.decodePatch(String.self, forKey: .category)
        lat = try c.decodePatch(Double.self, forKey: .lat)
        lon = try c.decodePatch(Double.self, forKey: .lon)
        address = try c.decodePatch(String.self, forKey: .address)
        phone = try c.decodePatch(String.self, forKey: .phone)
        website = try c.decodePatch(String.self, forKey: .website)
        priceLevel = try c.decodePatch(Int.self, forKey: .priceLevel)
        description = try c.decodePatch(String.self, forKey: .description)
        openingHours = try c.decodePatch([OpeningPeriod].self, forKey: .openingHours)
        photos = try c.decodePatch([Photo].self, forKey: .photos)
        popularity = try c.decodePatch(Double.self, forKey: .popularity)
        externalIds = try c.decodePatch([String: String].self, forKey: .externalIds)
        timezone = try c.decodePatch(String.self, forKey: .timezone)
        nameI18n = try c.decodePatch([String: String].self, forKey: .nameI18n)
        descriptionI18n = try c.decodePatch([String: String].self, forKey: .descriptionI18n)
        openingHoursText = try c.decodePatch(String.self, forKey: .openingHoursText)
        seasons = try c.decodePatch([Season].self, forKey: .seasons)
    }

    /// The place with this update applied (not yet validated).
    public func applied(to place: Place) throws(ServiceError) -> Place {
        var p = place
        p.name = try name.applied(to: p.name, field: "name")
        p.category = try category.applied(to: p.category, field: "category")
        p.lat = try lat.applied(to: p.lat, field: "lat")
        p.lon = try lon.applied(to: p.lon, field: "lon")
        p.address = address.applied(to: p.address)
        p.phone = phone.applied(to: p.phone)
        p.website = website.applied(to: p.website)
        p.priceLevel = priceLevel.applied(to: p.priceLevel)
        p.description = description.applied(to: p.description)
        p.openingHours = openingHours.applied(to: p.openingHours) ?? []
        p.photos = photos.applied(to: p.photos) ?? []
        p.popularity = popularity.applied(to: p.popularity) ?? 0
        p.externalIds = externalIds.applied(to: p.externalIds) ?? [:]
        p.timezone = timezone.applied(to: p.timezone)
        p.nameI18n = nameI18n.applied(to: p.nameI18n)
        p.descriptionI18n = descriptionI18n.applied(to: p.descriptionI18n)
        p.openingHoursText = openingHoursText.applied(to: p.openingHoursText)
        p.seasons = seasons.applied(to: p.seasons)
        return p
    }
}

/// `strings.get`: the interface strings in `lang`; with `since_version` the client's cached
/// version, answered without the table when it is still the current one.
public struct StringsGet: Codable, Sendable, DeclaredShape {
    public var lang: String?
    public var sinceVersion: String?

    enum CodingKeys: String, CodingKey {
        case lang
        case sinceVersion = "since_version"
    }

    public init(lang: String? = nil, sinceVersion: String? = nil) {
        self.lang = lang
        self.sinceVersion = sinceVersion
    }
}

/// The reply of `strings.get`: the version, the language chosen, and (unless the client has
/// this version) every key's text with the language it came from.
public struct StringsReply: Codable, Sendable, Equatable {
    public var version: String
    public var lang: String
    public var strings: [String: String]?
    public var from: [String: String]?
    /// True when `since_version` is the current version: the table is left out.
    public var unchanged: Bool?

    public init(version: String, lang: String, strings: [String: String]? = nil, from: [String: String]? = nil, unchanged: Bool? = nil) {
        self.version = version
        self.lang = lang
        self.strings = strings
        self.from = from
        self.unchanged = unchanged
    }
}

/// What a file is.
public enum ImportFormat: String, Codable, Sendable, CaseIterable {
    /// Our content format (Protocols/import.md), `urn:tourbus:content:1`.
    case content
    /// OpenStreetMap XML (`osmium cat -o FILE.osm`).
    case osm
}

/// `catalog.import.begin`.
public struct ImportBegin: Decodable, Sendable, DeclaredShape {
    /// `content` (the default) or `osm`.
    public var format: String?
    public var dryRun: Bool?

    enum CodingKeys: String, CodingKey {
        case format
        case dryRun = "dry_run"
    }

    public init(format: String? = nil, dryRun: Bool? = nil) {
        self.format = format
        self.dryRun = dryRun
    }
}

/// `catalog.import.append`: the next chunk of the document, or of a map image beside it (`file`).
public struct ImportAppend: Decodable, Sendable, DeclaredShape {
    public var importId: String
    public var file: String?
    public var chunk: String
    public var offset: Int?

    enum CodingKeys: String, CodingKey {
        case file, chunk, offset
        case importId = "import_id"
    }

    public init(importId: String, file: String? = nil, chunk: String, offset: Int? = nil) {
        self.importId = importId
        self.file = file
        self.chunk = chunk
        self.offset = offset
    }
}

/// `catalog.import.commit` and `catalog.import.status`.
public struct ImportRef: Codable, Sendable, DeclaredShape {
    public var importId: String

    enum CodingKeys: String, CodingKey { case importId = "import_id" }

    public init(importId: String) {
        self.importId = importId
    }
}

/// How many of a kind an import created, updated and found unchanged.
public struct ImportCounts: Codable, Sendable, Equatable {
    public var created = 0, updated = 0, unchanged = 0

    public init() {

    }
}

/// One thing wrong with an import, where it is.
public struct ImportIssue: Codable, Sendable, Equatable {
    public var file: String?
    public var line: Int?
    public var column: Int?
    public var message: String

    public init(file: String? = nil, line: Int? = nil, column: Int? = nil, message: String) {
        self.file = file
        self.line = line
        self.column = column
        self.message = message
    }
}

/// What an import did (or, for a dry run or a refused file, would have done).
public struct ImportReport: Codable, Sendable, Equatable {
    public var places = ImportCounts()
    public var tours = ImportCounts()
    public var maps = ImportCounts()
    /// OpenStreetMap: elements passed over (no name or mapped tag are not counted; these are
    /// those whose name or coordinates broke a rule, and ways missing nodes).
    public var skipped: Int?
    /// OpenStreetMap: optional fields left out because they broke a rule (a website without a scheme).
    public var droppedFields: Int?
    public var errors: [ImportIssue] = []
    public var elapsedMs: Int?

    enum CodingKeys: String, CodingKey {
        case places, tours, maps, skipped, errors
        case droppedFields = "dropped_fields"
        case elapsedMs = "elapsed_ms"
    }

    public init(skipped: Int? = nil, droppedFields: Int? = nil, errors: [ImportIssue] = [], elapsedMs: Int? = nil) {
        self.skipped = skipped
        self.droppedFields = droppedFields
        self.errors = errors
        self.elapsedMs = elapsedMs
    }
}

/// `catalog.import.status` (and the reply of begin, append and commit).
public struct ImportStatus: Codable, Sendable {
    public var importId: String
    public var format: ImportFormat
    public var dryRun: Bool
    /// `receiving`, `queued`, `planning`, `applying`, `done` or `failed`.
    public var state: String
    public var bytes: Int
    public var report: ImportReport?

    enum CodingKeys: String, CodingKey {
        case format, state, bytes, report
        case importId = "import_id"
        case dryRun = "dry_run"
    }

    public init(importId: String, format: ImportFormat, dryRun: Bool, state: String, bytes: Int, report: ImportReport? = nil) {
        self.importId = importId
        self.format = format
        self.dryRun = dryRun
        self.state = state
        self.bytes = bytes
        self.report = report
    }
}

/// `tours.update`: the tour's id and only the fields to change; `null` clears an optional field.
public struct TourUpdate: Decodable, Sendable, DeclaredShape {
    public static let fieldRules = PlaceTexts.tourRules

    public var id: Int64
    /// When set, the update applies only if the tour is still at this version (else `conflict`).
    public var expectedVersion: Int64?
    public var name: Patch<String> = .absent
    public var nameI18n: Patch<[String: String]> = .absent
    public var description: Patch<String> = .absent
    public var descriptionI18n: Patch<[String: String]> = .absent
    public var stops: Patch<[Int64]> = .absent
    public var externalIds: Patch<[String: String]> = .absent

    enum CodingKeys: String, CodingKey {
        case id, name, description, stops
        case expectedVersion = "expected_version"
        case nameI18n = "name_i18n"
        case descriptionI18n = "description_i18n"
        case externalIds = "external_ids"
    }

    public init(from decoder: Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        id = try c.decode(Int64.self, forKey: .id)
        expectedVersion = try c.decodeIfPresent(Int64.self, forKey: .expectedVersion)
        name = try c.decodePatch(String.self, forKey: .name)
        nameI18n = try c.decodePatch([String: String].self, forKey: .nameI18n)
        description = try c.decodePatch(String.self, forKey: .description)
        descriptionI18n = try c.decodePatch([String: String].self, forKey: .descriptionI18n)
        stops = try c.decodePatch([Int64].self, forKey: .stops)
        externalIds = try c.decodePatch([String: String].self, forKey: .externalIds)
    }
}

/// `tours.get`: a tour by id, its texts in `lang` where it has them.
public struct TourGet: Decodable, Sendable, DeclaredShape {
    public var id: Int64
    public var lang: String?

    public init(id: Int64, lang: String? = nil) {
        self.id = id
        self.lang = lang
    }
}

/// `tours.list`: tours by id, or those with a stop within `near.radius_m` of a point, nearest first.
public struct TourList: Decodable, Sendable, DeclaredShape {
    /// Only the tours with a stop within `radius_m` of this point, nearest first.
    public var near: Point?
    public var radiusM: Double?
    public var limit: Int?
    public var cursor: String?
    /// A language tag or Accept-Language list: each tour's texts in it (`LanguagePreference`).
    public var lang: String?

    /// The radius without `radius_m`, and the largest, in metres.
    public static let defaultRadius = 10_000.0
    public static let maxRadius = 100_000.0

    enum CodingKeys: String, CodingKey {
        case near, limit, cursor, lang
        case radiusM = "radius_m"
    }

    public init(near: Point? = nil, radiusM: Double? = nil, limit: Int? = nil, cursor: String? = nil, lang: String? = nil) {
        self.near = near
        self.radiusM = radiusM
        self.limit = limit
        self.cursor = cursor
        self.lang = lang
    }

    public static let fieldRules: [FieldRule] = [PageLimit.tours.rule, .number("radius_m", 0...maxRadius, exclusiveMinimum: true)]
}

/// One stop of `tours.get`: the place's summary, in the tour's order.
public struct TourStop: Codable, Sendable, Equatable {
    public var id: Int64
    public var name: String
    public var category: String
    public var lat: Double
    public var lon: Double
    /// With `lang`: the language of `name`.
    public var lang: TextLanguages? = nil

    public init(id: Int64, name: String, category: String, lat: Double, lon: Double, lang: TextLanguages? = nil) {
        self.id = id
        self.name = name
        self.category = category
        self.lat = lat
        self.lon = lon
        self.lang = lang
    }
}

/// The reply of `tours.get`: the tour, and its stops' places in order (named in the request's
/// language where they have it).
public struct TourDetail: Codable, Sendable {
    public var tour: Tour
    public var places: [TourStop]
    /// With `lang`: the languages of the tour's `name` and `description`.
    public var lang: TextLanguages?

    enum CodingKeys: String, CodingKey { case places, lang }

    public init(from decoder: any Decoder) throws {
        tour = try Tour(from: decoder)
        let c = try decoder.container(keyedBy: CodingKeys.self)
        places = try c.decode([TourStop].self, forKey: .places)
        lang = try c.decodeIfPresent(TextLanguages.self, forKey: .lang)
    }

    public func encode(to encoder: Encoder) throws {
        try tour.encode(to: encoder)
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(places, forKey: .places)
        try c.encodeIfPresent(lang, forKey: .lang)
    }

    public init(tour: Tour, places: [TourStop], lang: TextLanguages? = nil) {
        self.tour = tour
        self.places = places
        self.lang = lang
    }
}

/// One tour of `tours.list`, with the distance to its nearest stop when the list was near a point.
public struct TourListItem: Codable, Sendable {
    public var tour: Tour
    public var distanceM: Double?
    /// With `lang`: the languages of the tour's `name` and `description`.
    public var lang: TextLanguages? = nil

    enum CodingKeys: String, CodingKey {
        case lang
        case distanceM = "distance_m"
    }

    public init(from decoder: any Decoder) throws {
        tour = try Tour(from: decoder)
        let c = try decoder.container(keyedBy: CodingKeys.self)
        distanceM = try c.decodeIfPresent(Double.self, forKey: .distanceM)
        lang = try c.decodeIfPresent(TextLanguages.self, forKey: .lang)
    }

    public func encode(to encoder: Encoder) throws {
        try tour.encode(to: encoder)
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encodeIfPresent(distanceM, forKey: .distanceM)
        try c.encodeIfPresent(lang, forKey: .lang)
    }

    public init(tour: Tour, distanceM: Double? = nil, lang: TextLanguages? = nil) {
        self.tour = tour
        self.distanceM = distanceM
        self.lang = lang
    }
}

/// A page of `tours.list` and the cursor of the next page (nil on the last).
public struct TourPage: Codable, Sendable {
    public var tours: [TourListItem]
    public var nextCursor: String?

    enum CodingKeys: String, CodingKey {
        case tours
        case nextCursor = "next_cursor"
    }

    public init(tours: [TourListItem], nextCursor: String? = nil) {
        self.tours = tours
        self.nextCursor = nextCursor
    }
}

/// `tours.locate`: where the caller is now, on tour `tour_id`, and their course when the phone knows it.
public struct TourLocate: Decodable, Sendable, DeclaredShape {
    public var tourId: Int64
    public var lat: Double
    public var lon: Double
    /// The phone's course over ground, degrees [0, 360) clockwise from north.
    public var courseDeg: Double?
    /// The language of the next stop's name, as `tours.get`'s `lang`.
    public var lang: String?

    enum CodingKeys: String, CodingKey {
        case lat, lon, lang
        case tourId = "tour_id"
        case courseDeg = "course_deg"
    }

    public init(tourId: Int64, lat: Double, lon: Double, courseDeg: Double? = nil, lang: String? = nil) {
        self.tourId = tourId
        self.lat = lat
        self.lon = lon
        self.courseDeg = courseDeg
        self.lang = lang
    }
}

/// `tours.progress` and `tours.progress.reset`: the caller's progress along tour `tour_id`.
public struct TourProgressRequest: Decodable, Sendable, DeclaredShape {
    public var tourId: Int64
    public var lang: String?

    enum CodingKeys: String, CodingKey {
        case lang
        case tourId = "tour_id"
    }

    public init(tourId: Int64, lang: String? = nil) {
        self.tourId = tourId
        self.lang = lang
    }
}

/// The first stop not yet visited, in tour order; with its distance and bearing from the
/// position `tours.locate` was given (absent in `tours.progress`, which has no position).
public struct NextStop: Codable, Sendable, Equatable {
    public var id: Int64
    public var name: String
    public var distanceM: Double?
    public var bearingDeg: Double?

    enum CodingKeys: String, CodingKey {
        case id, name
        case distanceM = "distance_m"
        case bearingDeg = "bearing_deg"
    }

    public init(id: Int64, name: String, distanceM: Double? = nil, bearingDeg: Double? = nil) {
        self.id = id
        self.name = name
        self.distanceM = distanceM
        self.bearingDeg = bearingDeg
    }
}

/// The reply of `tours.locate`. `x`, `y` and `on_map` are absent when the tour has no map,
/// the headings when there is none to give, `next_stop` when every stop is visited.
public struct TourPosition: Codable, Sendable {
    public var tourId: Int64
    public var x: Double?
    public var y: Double?
    public var onMap: Bool?
    public var headingDeg: Double?
    public var headingOnMapDeg: Double?
    public var nextStop: NextStop?
    /// The stops this position visited (within 30 m, not visited before), in tour order.
    public var arrived: [Int64]
    public var visitedCount: Int
    public var stopCount: Int
    public var finished: Bool

    enum CodingKeys: String, CodingKey {
        case x, y, arrived, finished
        case tourId = "tour_id"
        case onMap = "on_map"
        case headingDeg = "heading_deg"
        case headingOnMapDeg = "heading_on_map_deg"
        case nextStop = "next_stop"
        case visitedCount = "visited_count"
        case stopCount = "stop_count"
    }

    public init(
        tourId: Int64, x: Double? = nil, y: Double? = nil, onMap: Bool? = nil, headingDeg: Double? = nil, headingOnMapDeg: Double? = nil, nextStop: NextStop? = nil,
        arrived: [Int64], visitedCount: Int, stopCount: Int, finished: Bool
    ) {
        self.tourId = tourId
        self.x = x
        self.y = y
        self.onMap = onMap
        self.headingDeg = headingDeg
        self.headingOnMapDeg = headingOnMapDeg
        self.nextStop = nextStop
        self.arrived = arrived
        self.visitedCount = visitedCount
        self.stopCount = stopCount
        self.finished = finished
    }
}

/// The reply of `tours.progress` and `tours.progress.reset`: the visited stops in tour order
/// (only those still in the tour), the next one, and how many of how many.
public struct TourProgressReply: Codable, Sendable {
    public var tourId: Int64
    public var visited: [Int64]
    public var nextStop: NextStop?
    public var visitedCount: Int
    public var stopCount: Int
    public var finished: Bool

    enum CodingKeys: String, CodingKey {
        case visited, finished
        case tourId = "tour_id"
        case nextStop = "next_stop"
        case visitedCount = "visited_count"
        case stopCount = "stop_count"
    }

    public init(tourId: Int64, visited: [Int64], nextStop: NextStop? = nil, visitedCount: Int, stopCount: Int, finished: Bool) {
        self.tourId = tourId
        self.visited = visited
        self.nextStop = nextStop
        self.visitedCount = visitedCount
        self.stopCount = stopCount
        self.finished = finished
    }
}

/// `library.add`: a tour to download for one of the caller's devices.
public struct LibraryAdd: Decodable, Sendable, DeclaredShape {
    public var tourId: Int64
    public var deviceId: String

    enum CodingKeys: String, CodingKey {
        case tourId = "tour_id"
        case deviceId = "device_id"
    }

    public init(tourId: Int64, deviceId: String) {
        self.tourId = tourId
        self.deviceId = deviceId
    }
}

/// `library.remove`: a tour of the caller's library.
public struct LibraryTourRef: Decodable, Sendable, DeclaredShape {
    public var tourId: Int64

    enum CodingKeys: String, CodingKey { case tourId = "tour_id" }

    public init(tourId: Int64) {
        self.tourId = tourId
    }
}

/// `library.hide`: a place of the caller's library.
public struct LibraryPlaceRef: Decodable, Sendable, DeclaredShape {
    public var placeId: Int64

    enum CodingKeys: String, CodingKey { case placeId = "place_id" }

    public init(placeId: Int64) {
        self.placeId = placeId
    }
}

/// `library.package`: one piece of a sealed package.
public struct LibraryPieceRequest: Decodable, Sendable, DeclaredShape {
    public var packageId: String
    public var piece: Int

    enum CodingKeys: String, CodingKey {
        case piece
        case packageId = "package_id"
    }

    public init(packageId: String, piece: Int) {
        self.packageId = packageId
        self.piece = piece
    }
}

/// The reply of `library.add`: what was signed, and how to fetch the sealed bytes.
public struct PackageManifest: Codable, Sendable {
    public var packageId: String
    public var format: String
    public var userId: Int64
    public var deviceId: String
    public var tourId: Int64
    public var issuedAt: String
    /// The sealed package's length in bytes, and its BLAKE2b-256 in hex.
    public var bytes: Int
    public var digest: String
    /// Ed25519 over `LibraryRules.signedBytes`, base64.
    public var signature: String
    /// The server's public signing key, base64 (as `library.key`).
    public var signingKey: String
    public var pieceBytes: Int
    public var pieces: Int
    /// The places the package holds, in the tour's order.
    public var places: [Int64]
    public var tiles: Int
    /// False when some levels of the map did not fit: the client fetches them with `tours.map.tile`.
    public var tilesComplete: Bool

    enum CodingKeys: String, CodingKey {
        case format, bytes, digest, signature, pieces, places, tiles
        case packageId = "package_id"
        case userId = "user_id"
        case deviceId = "device_id"
        case tourId = "tour_id"
        case issuedAt = "issued_at"
        case signingKey = "signing_key"
        case pieceBytes = "piece_bytes"
        case tilesComplete = "tiles_complete"
    }

    public init(
        packageId: String, format: String, userId: Int64, deviceId: String, tourId: Int64, issuedAt: String, bytes: Int, digest: String, signature: String, signingKey: String,
        pieceBytes: Int, pieces: Int, places: [Int64], tiles: Int, tilesComplete: Bool
    ) {
        self.packageId = packageId
        self.format = format
        self.userId = userId
        self.deviceId = deviceId
        self.tourId = tourId
        self.issuedAt = issuedAt
        self.bytes = bytes
        self.digest = digest
        self.signature = signature
        self.signingKey = signingKey
        self.pieceBytes = pieceBytes
        self.pieces = pieces
        self.places = places
        self.tiles = tiles
        self.tilesComplete = tilesComplete
    }
}

/// The reply of `library.package`: bytes `offset` … of the sealed package, base64.
public struct PackagePiece: Codable, Sendable {
    public var packageId: String
    public var piece: Int
    public var offset: Int
    public var data: String

    enum CodingKeys: String, CodingKey {
        case piece, offset, data
        case packageId = "package_id"
    }

    public init(packageId: String, piece: Int, offset: Int, data: String) {
        self.packageId = packageId
        self.piece = piece
        self.offset = offset
        self.data = data
    }
}

/// One tour of `library.list`.
public struct LibraryTour: Codable, Sendable {
    public var tourId: Int64
    /// Nil when the tour has been deleted from the catalog since.
    public var name: String?
    public var addedAt: String
    /// The places this tour brought (hidden ones left out).
    public var places: [Int64]

    enum CodingKeys: String, CodingKey {
        case name, places
        case tourId = "tour_id"
        case addedAt = "added_at"
    }

    public init(tourId: Int64, name: String? = nil, addedAt: String, places: [Int64]) {
        self.tourId = tourId
        self.name = name
        self.addedAt = addedAt
        self.places = places
    }
}

/// The reply of `library.list`, `library.remove` and `library.hide`.
public struct LibraryContents: Codable, Sendable {
    public var tours: [LibraryTour]
    /// Every place the library holds: those of its tours, less the hidden ones, ascending.
    public var places: [Int64]
    public var hidden: [Int64]

    public init(tours: [LibraryTour], places: [Int64], hidden: [Int64]) {
        self.tours = tours
        self.places = places
        self.hidden = hidden
    }
}

/// The reply of `library.key`.
public struct SigningKeyInfo: Codable, Sendable {
    public var algorithm = "ed25519"
    public var publicKey: String

    enum CodingKeys: String, CodingKey {
        case algorithm
        case publicKey = "public_key"
    }

    public init(publicKey: String) {
        self.publicKey = publicKey
    }
}

/// `tours.map.upload.commit` (and the reply of begin and append): an upload and how many bytes it holds.
public struct MapUpload: Codable, Sendable, DeclaredShape {
    public var uploadId: String
    public var bytes: Int?
    public var width: Int?
    public var height: Int?

    enum CodingKeys: String, CodingKey {
        case bytes, width, height
        case uploadId = "upload_id"
    }

    public init(uploadId: String, bytes: Int? = nil, width: Int? = nil, height: Int? = nil) {
        self.uploadId = uploadId
        self.bytes = bytes
        self.width = width
        self.height = height
    }
}

/// `catalog.photo.add`: a committed upload (`tours.map.upload.*`) becomes a photo the catalog
/// hosts for place `place_id`, with who made it and what it shows.
public struct PlacePhotoAdd: Decodable, Sendable, DeclaredShape {
    public static let fieldRules: [FieldRule] = [.text(PlaceTexts.photoAttribution), .text(PlaceTexts.photoCaption)]

    public var placeId: Int64
    public var uploadId: String
    public var attribution: String?
    public var caption: String?

    enum CodingKeys: String, CodingKey {
        case attribution, caption
        case placeId = "place_id"
        case uploadId = "upload_id"
    }

    public init(placeId: Int64, uploadId: String, attribution: String? = nil, caption: String? = nil) {
        self.placeId = placeId
        self.uploadId = uploadId
        self.attribution = attribution
        self.caption = caption
    }
}

/// `catalog.photo` (with `size`) and `catalog.photo.delete` (without): one hosted photo of a place.
public struct PlacePhotoRef: Codable, Sendable, DeclaredShape {
    public var placeId: Int64
    public var photoId: Int64
    public var size: Int?

    enum CodingKeys: String, CodingKey {
        case size
        case placeId = "place_id"
        case photoId = "photo_id"
    }

    public init(placeId: Int64, photoId: Int64, size: Int? = nil) {
        self.placeId = placeId
        self.photoId = photoId
        self.size = size
    }
}

/// The body of `catalog.photo`'s reply; the JPEG is its one attachment.
public struct PlacePhotoReply: Codable, Sendable, Equatable {
    public var contentType = "image/jpeg"
    public var placeId: Int64
    public var photoId: Int64
    public var size: Int
    public var width: Int
    public var height: Int
    public var bytes: Int

    enum CodingKeys: String, CodingKey {
        case size, width, height, bytes
        case contentType = "content_type"
        case placeId = "place_id"
        case photoId = "photo_id"
    }

    public init(placeId: Int64, photoId: Int64, size: Int, width: Int, height: Int, bytes: Int) {
        self.placeId = placeId
        self.photoId = photoId
        self.size = size
        self.width = width
        self.height = height
        self.bytes = bytes
    }
}

/// `tours.map.set`: a committed upload becomes the tour's map, placed by control points.
public struct MapSet: Decodable, Sendable, DeclaredShape {
    public struct Point: Codable, Sendable, Equatable {
        public var x: Double
        public var y: Double
        public var lat: Double
        public var lon: Double

        public init(x: Double, y: Double, lat: Double, lon: Double) {
            (self.x, self.y, self.lat, self.lon) = (x, y, lat, lon)
        }
    }

    public var tourId: Int64
    public var uploadId: String
    public var points: [Point]

    enum CodingKeys: String, CodingKey {
        case points
        case tourId = "tour_id"
        case uploadId = "upload_id"
    }

    public init(tourId: Int64, uploadId: String, points: [Point]) {
        self.tourId = tourId
        self.uploadId = uploadId
        self.points = points
    }
}

/// `tours.map.get` and `tours.map.tile`: a tour's map, and one tile of it.
public struct MapTileRequest: Decodable, Sendable, DeclaredShape {
    public var tourId: Int64
    public var z: Int?
    public var x: Int?
    public var y: Int?

    enum CodingKeys: String, CodingKey {
        case z, x, y
        case tourId = "tour_id"
    }

    public init(tourId: Int64, z: Int? = nil, x: Int? = nil, y: Int? = nil) {
        self.tourId = tourId
        self.z = z
        self.x = x
        self.y = y
    }
}

/// An affine map from a map image's pixel (column i, row j) to degrees: lon = a·i + b·j + c,
/// lat = d·i + e·j + f.
public struct MapTransform: Codable, Sendable, Hashable {
    public var a, b, c, d, e, f: Double

    public init(a: Double, b: Double, c: Double, d: Double, e: Double, f: Double) {
        (self.a, self.b, self.c, self.d, self.e, self.f) = (a, b, c, d, e, f)
    }
}

/// `tours.map.tile`'s reply: the tile's JPEG comes as the reply's one attachment (a frame of
/// its own over the bus, bytes in RESP, base64 `attachments` in JSON-RPC).
public struct TileReply: Codable, Sendable, Equatable {
    public var contentType: String
    public var bytes: Int

    enum CodingKeys: String, CodingKey {
        case bytes
        case contentType = "content_type"
    }

    public init(contentType: String, bytes: Int) {
        self.contentType = contentType
        self.bytes = bytes
    }
}

/// A tour's map as `tours.map.set` and `tours.map.get` answer it.
public struct TourMapInfo: Codable, Sendable {
    public struct Level: Codable, Sendable {
        public var z, width, height, columns, rows: Int

        public init(z: Int, width: Int, height: Int, columns: Int, rows: Int) {
            (self.z, self.width, self.height, self.columns, self.rows) = (z, width, height, columns, rows)
        }
    }

    public var tourId: Int64
    public var width: Int
    public var height: Int
    public var bytes: Int
    public var points: [MapSet.Point]
    public var residualsM: [Double]
    public var rmsM: Double
    /// Pixel (column i, row j) → degrees: lon = a·i + b·j + c, lat = d·i + e·j + f at the
    /// pixel's centre (the world file's numbers, by name).
    public var transform: MapTransform
    /// The six lines of an ESRI world file (`.jgw`), degrees per pixel.
    public var worldFile: String
    /// The side of a tile in pixels.
    public var tileSize: Int
    public var levels: [Level]
    public var tilesReady: Bool

    enum CodingKeys: String, CodingKey {
        case width, height, bytes, points, levels, transform
        case tourId = "tour_id"
        case residualsM = "residuals_m"
        case rmsM = "rms_m"
        case worldFile = "world_file"
        case tileSize = "tile_size"
        case tilesReady = "tiles_ready"
    }

    public init(
        tourId: Int64, width: Int, height: Int, bytes: Int, points: [MapSet.Point], residualsM: [Double], rmsM: Double, transform: MapTransform, worldFile: String, tileSize: Int,
        levels: [Level], tilesReady: Bool
    ) {
        self.tourId = tourId
        self.width = width
        self.height = height
        self.bytes = bytes
        self.points = points
        self.residualsM = residualsM
        self.rmsM = rmsM
        self.transform = transform
        self.worldFile = worldFile
        self.tileSize = tileSize
        self.levels = levels
        self.tilesReady = tilesReady
    }
}

/// The body of an append (`tours.map.upload.append`, `profile.photo.upload.append`): the next
/// piece of an upload, base64, at most `Chunks.maxBytes` bytes decoded.
public struct UploadChunk: Decodable, Sendable, DeclaredShape {
    public var uploadId: String
    public var chunk: String
    /// When given, the bytes the upload must hold already (a retried append is then refused, not doubled).
    public var offset: Int?

    enum CodingKeys: String, CodingKey {
        case chunk, offset
        case uploadId = "upload_id"
    }

    public init(uploadId: String, chunk: String, offset: Int? = nil) {
        self.uploadId = uploadId
        self.chunk = chunk
        self.offset = offset
    }
}
