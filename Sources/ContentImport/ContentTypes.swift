/// The Tourbus content format (Protocols/import.md): its namespace and the bounds of its fields.
public enum ContentFormat {
    /// The namespace of every element: `<content xmlns="urn:tourbus:content:1" …>`.
    public static let namespace = "urn:tourbus:content:1"

    /// The longest `source`, in UTF-8 bytes.
    public static let maxSourceBytes = 50
    /// The longest id of a POI or tour, and the longest stop ref, in UTF-8 bytes.
    public static let maxIDBytes = 200
    /// The longest category id, in UTF-8 bytes.
    public static let maxCategoryBytes = 64
    /// The longest name, in UTF-8 bytes (the catalog's 200 characters, at 4 bytes each).
    public static let maxNameBytes = 800
    /// The longest description, in UTF-8 bytes (the catalog's 5,000 characters).
    public static let maxDescriptionBytes = 20_000
    /// The longest address, in UTF-8 bytes (the catalog's 500 characters).
    public static let maxAddressBytes = 2_000
    /// The longest phone number, in UTF-8 bytes (the catalog's 40 characters).
    public static let maxPhoneBytes = 160
    /// The longest website or photo URL, in UTF-8 bytes.
    public static let maxURLBytes = 2_000
    /// The longest photo attribution, in UTF-8 bytes (the catalog's 300 characters).
    public static let maxAttributionBytes = 1_200
    /// The longest map file name, in UTF-8 bytes.
    public static let maxFileNameBytes = 255
    /// The largest pixel coordinate of a map's control point.
    public static let maxPixel = 1_000_000.0
    /// Seasons of one POI (the catalog's bound).
    public static let maxSeasons = 20
}

/// The counts a content file is held to, and the XML bounds it is read with.
public struct ContentLimits: Sendable, Equatable {
    /// How the file is read: its size, nesting (the format needs 4 levels) and every name, value and text.
    public var xml: XMLLimits
    /// POIs in one file.
    public var maxPOIs: Int
    /// Tours in one file.
    public var maxTours: Int
    /// Stops in one tour.
    public var maxStopsPerTour: Int
    /// `name` elements of one POI or tour, and `description` elements likewise.
    public var maxNamesPerElement: Int
    /// Photos of one POI.
    public var maxPhotosPerPOI: Int
    /// Control points of one map.
    public var maxMapPoints: Int
    /// Errors listed before reading stops.
    public var maxErrors: Int

    /// A content file of at most 64 MiB, nested at most 8 deep, with the format's longest field
    /// (a description) as the longest text.
    public init(
        xml: XMLLimits = XMLLimits(
            maxBytes: 64 << 20, maxDepth: 8, maxAttributes: 16, maxNameBytes: 64,
            maxAttributeValueBytes: 4_096, maxTextBytes: 65_536),
        maxPOIs: Int = 200_000, maxTours: Int = 10_000, maxStopsPerTour: Int = 500, maxNamesPerElement: Int = 50,
        maxPhotosPerPOI: Int = 50, maxMapPoints: Int = 100, maxErrors: Int = 1_000
    ) {
        self.xml = xml
        self.maxPOIs = maxPOIs
        self.maxTours = maxTours
        self.maxStopsPerTour = maxStopsPerTour
        self.maxNamesPerElement = maxNamesPerElement
        self.maxPhotosPerPOI = maxPhotosPerPOI
        self.maxMapPoints = maxMapPoints
        self.maxErrors = maxErrors
    }
}

/// A text in one language (`<name lang="en">…</name>`), white space around it removed.
public struct LocalizedText: Sendable, Hashable {
    /// The language tag as written (`en`, `pt-BR`).
    public var lang: String
    public var text: String
    /// Where its element starts.
    public var position: XMLPosition

    public init(lang: String, text: String, position: XMLPosition) {
        self.lang = lang
        self.text = text
        self.position = position
    }
}

extension Array where Element == LocalizedText {
    /// The English text, or else the first one given (how the catalog picks a place's `name`).
    public var preferred: String? {
        (first { $0.lang.lowercased() == "en" } ?? first)?.text
    }
}

/// A photo of a POI: `<photo url="…" attribution="…"/>`.
public struct ContentPhoto: Sendable, Hashable {
    public var url: String
    public var attribution: String?
    public var position: XMLPosition

    public init(url: String, attribution: String?, position: XMLPosition) {
        self.url = url
        self.attribution = attribution
        self.position = position
    }
}

/// A point of interest of a content file, identified by `(source, id)`.
public struct ContentPOI: Sendable, Hashable {
    public var id: String
    public var category: String
    public var lat: Double
    public var lon: Double
    /// In the file's order; at least one.
    public var names: [LocalizedText]
    public var descriptions: [LocalizedText]
    public var address: String?
    public var phone: String?
    public var website: String?
    /// 0 to 4.
    public var price: Int?
    public var photos: [ContentPhoto]
    /// When it is on (`<season from="12-28" to="01-02"/>`), as written: the catalog checks the days.
    public var seasons: [ContentSeason] = []
    /// Where its `<poi>` starts.
    public var position: XMLPosition

    public init(
        id: String, category: String, lat: Double, lon: Double, names: [LocalizedText], descriptions: [LocalizedText] = [],
        address: String? = nil, phone: String? = nil, website: String? = nil, price: Int? = nil, photos: [ContentPhoto] = [],
        seasons: [ContentSeason] = [], position: XMLPosition
    ) {
        self.id = id
        self.category = category
        self.lat = lat
        self.lon = lon
        self.names = names
        self.descriptions = descriptions
        self.address = address
        self.phone = phone
        self.website = website
        self.price = price
        self.photos = photos
        self.seasons = seasons
        self.position = position
    }
}

/// A season of a POI: its `from` and `to` days as the file wrote them (`MM-DD` or `YYYY-MM-DD`).
public struct ContentSeason: Sendable, Hashable {
    public var from: String
    public var to: String

    public init(from: String, to: String) {
        self.from = from
        self.to = to
    }
}

/// One stop of a tour: the id of a POI (`<stop ref="…"/>`).
public struct ContentStop: Sendable, Hashable {
    public var ref: String
    public var position: XMLPosition

    public init(ref: String, position: XMLPosition) {
        self.ref = ref
        self.position = position
    }
}

/// A control point of a tour map: pixel `(x, y)` of the image (from its top left corner) is at `(lat, lon)`.
public struct ContentMapPoint: Sendable, Hashable {
    public var x: Double
    public var y: Double
    public var lat: Double
    public var lon: Double
    public var position: XMLPosition

    public init(x: Double, y: Double, lat: Double, lon: Double, position: XMLPosition) {
        self.x = x
        self.y = y
        self.lat = lat
        self.lon = lon
        self.position = position
    }
}

/// A tour's raster map: a JPEG that travels beside the XML, and at least 3 control points.
public struct ContentMap: Sendable, Hashable {
    /// A plain file name (no directory part) ending in `.jpg` or `.jpeg`.
    public var file: String
    public var points: [ContentMapPoint]
    public var position: XMLPosition

    public init(file: String, points: [ContentMapPoint], position: XMLPosition) {
        self.file = file
        self.points = points
        self.position = position
    }
}

/// A tour of a content file, identified by `(source, id)`: its stops in order, and maybe a map.
public struct ContentTour: Sendable, Hashable {
    public var id: String
    public var names: [LocalizedText]
    public var descriptions: [LocalizedText]
    /// In tour order; a POI may come more than once (a tour that ends where it began).
    public var stops: [ContentStop]
    public var map: ContentMap?
    public var position: XMLPosition

    public init(
        id: String, names: [LocalizedText], descriptions: [LocalizedText] = [], stops: [ContentStop], map: ContentMap? = nil,
        position: XMLPosition
    ) {
        self.id = id
        self.names = names
        self.descriptions = descriptions
        self.stops = stops
        self.map = map
        self.position = position
    }
}

/// A stop whose ref names no POI of the file: the importer resolves it against POIs of the same
/// source imported before, or refuses it.
public struct UnresolvedStop: Sendable, Hashable {
    /// The id of the tour with the stop.
    public var tour: String
    public var ref: String
    public var position: XMLPosition

    public init(tour: String, ref: String, position: XMLPosition) {
        self.tour = tour
        self.ref = ref
        self.position = position
    }
}

/// One fault of a content file, with its place.
///
/// Messages quote element and attribute names, ids, refs and language tags (all bounded),
/// never texts.
public struct ContentError: Error, Sendable, Hashable, CustomStringConvertible {
    /// What is wrong.
    public enum Kind: Sendable, Hashable {
        /// The file is not well-formed or passes a bound of the XML reader; reading stopped here.
        case xml(XMLError.Reason)
        /// The root is not `<content>` in the namespace `urn:tourbus:content:1`.
        case wrongRoot
        /// An element the format does not have in this place (its content is skipped).
        case unknownElement(name: String, parent: String)
        /// An attribute the element does not have.
        case unknownAttribute(element: String, attribute: String)
        /// A required attribute is missing.
        case missingAttribute(element: String, attribute: String)
        /// A required child element is missing (a POI without a name, a tour without stops).
        case missingElement(element: String, child: String)
        /// A child element that may appear once appears again.
        case duplicateElement(element: String, child: String)
        /// A second POI (or tour) with an id already used in the file.
        case duplicateID(element: String, id: String, first: XMLPosition)
        /// A second name (or description) in a language already given for that POI or tour.
        case duplicateLanguage(element: String, lang: String, first: XMLPosition)
        /// A value outside its grammar or range; `why` says which.
        case invalidValue(field: String, why: String)
        /// A value longer than its bound, in UTF-8 bytes.
        case tooLong(field: String, limit: Int)
        /// More of something than its bound (POIs, tours, stops, names, photos, points).
        case tooMany(what: String, limit: Int)
        /// A map with fewer than 3 control points.
        case tooFewMapPoints(count: Int)
        /// Text other than white space where only elements go.
        case unexpectedText(element: String)
        /// `maxErrors` errors were listed and reading stopped.
        case tooManyErrors(limit: Int)
    }

    public let kind: Kind
    public let position: XMLPosition

    public init(_ kind: Kind, at position: XMLPosition) {
        self.kind = kind
        self.position = position
    }

    public var line: Int { position.line }
    public var column: Int { position.column }

    /// What is wrong, without the position.
    public var message: String {
        switch kind {
        case .xml(let reason): XMLError(reason, at: position).message
        case .wrongRoot: "the root element must be <content xmlns=\"\(ContentFormat.namespace)\">"
        case .unknownElement(let name, let parent): "<\(name)> is not allowed in <\(parent)>"
        case .unknownAttribute(let element, let attribute): "<\(element)> has no attribute \(attribute)"
        case .missingAttribute(let element, let attribute): "<\(element)> needs the attribute \(attribute)"
        case .missingElement(let element, let child): "<\(element)> needs at least one <\(child)>"
        case .duplicateElement(let element, let child): "<\(element)> may have only one <\(child)>"
        case .duplicateID(let element, let id, let first): "a second <\(element)> with id '\(id)' (the first is at \(first))"
        case .duplicateLanguage(let element, let lang, let first): "a second <\(element)> in language '\(lang)' (the first is at \(first))"
        case .invalidValue(let field, let why): "\(field) \(why)"
        case .tooLong(let field, let limit): "\(field) is longer than \(limit) bytes"
        case .tooMany(let what, let limit): "more than \(limit) \(what)"
        case .tooFewMapPoints(let count): "a map needs at least 3 control points, this one has \(count)"
        case .unexpectedText(let element): "text is not allowed directly in <\(element)>"
        case .tooManyErrors(let limit): "more than \(limit) errors; the rest are not listed"
        }
    }

    /// `line 3, column 5: <poi> needs the attribute id`.
    public var description: String { "\(position): \(message)" }
}

/// Every error found in a content file, in document order.
public struct ContentErrors: Error, Sendable, Hashable, CustomStringConvertible {
    public let errors: [ContentError]

    public init(_ errors: [ContentError]) { self.errors = errors }

    /// One error a line.
    public var description: String { errors.map(\.description).joined(separator: "\n") }
}
