import Foundation

/// A Tourbus content file (Protocols/import.md) read into plain structs: its source, POIs and
/// tours, and the stops whose ref names no POI of the file.
///
/// `parse` reads the whole file and lists every error it finds with its line and column, not
/// only the first: unknown elements and attributes, missing or duplicate ids, bad coordinates,
/// prices, languages, URLs and map points, and passed bounds. A fault of the XML itself (or of
/// the reader's bounds) ends the reading, since nothing after it can be trusted; so does the
/// `maxErrors`th error. A stop ref that names no POI of the file is no error here: the importer
/// may find it among POIs of the same source imported before (`unresolvedStops`).
public struct ContentDocument: Sendable, Hashable {
    /// Who the content comes from; with an id, it identifies a POI or a tour across imports.
    public var source: String
    public var pois: [ContentPOI]
    public var tours: [ContentTour]
    /// Stops whose ref names no POI of this file, in document order.
    public var unresolvedStops: [UnresolvedStop]

    public init(source: String, pois: [ContentPOI], tours: [ContentTour], unresolvedStops: [UnresolvedStop]) {
        self.source = source
        self.pois = pois
        self.tours = tours
        self.unresolvedStops = unresolvedStops
    }

    /// Reads a content file; throws every error found, in document order.
    public static func parse(_ bytes: [UInt8], limits: ContentLimits = ContentLimits()) throws(ContentErrors) -> ContentDocument {
        var parser = ContentParser(reader: XMLReader(bytes: bytes, limits: limits.xml), limits: limits)
        let document: ContentDocument?
        do {
            document = try parser.readDocument()
        } catch {
            document = nil
        }
        // Errors found at an element's end (a POI without a name) go back to the element's
        // place; the note that there were too many stays last.
        var errors = parser.errors
        let tooMany = errors.last.flatMap { if case .tooManyErrors = $0.kind { $0 } else { nil } }
        if tooMany != nil { errors.removeLast() }
        errors.sort { $0.position < $1.position }
        if let tooMany { errors.append(tooMany) }
        guard let document, errors.isEmpty else { throw ContentErrors(errors) }
        return document
    }

    /// Reads a content file; throws every error found, in document order.
    public static func parse(_ data: Data, limits: ContentLimits = ContentLimits()) throws(ContentErrors) -> ContentDocument {
        try parse([UInt8](data), limits: limits)
    }
}

/// Reading stopped: the XML is broken, a count bound was passed, or the errors are too many.
/// What was found is in `ContentParser.errors`.
private struct Halt: Error {}

/// Reads the events of one content file into a `ContentDocument`, noting errors as it goes.
private struct ContentParser {
    var reader: XMLReader
    let limits: ContentLimits
    private(set) var errors: [ContentError] = []
    /// Where each POI id (and each tour id) was first seen.
    var poiIDs: [String: XMLPosition] = [:]
    var tourIDs: [String: XMLPosition] = [:]
    private var poiCount = 0
    private var tourCount = 0

    init(reader: XMLReader, limits: ContentLimits) {
        self.reader = reader
        self.limits = limits
    }

    // MARK: - Elements

    mutating func readDocument() throws(Halt) -> ContentDocument {
        // The reader's first event is the root's start or an error: text outside the root is one.
        guard case .start(let name, let attributes, let position) = try next() else {
            try report(.wrongRoot, at: XMLPosition(line: 1, column: 1))
            throw Halt()
        }
        guard name == "content", reader.namespace == ContentFormat.namespace else {
            try report(.wrongRoot, at: position)
            throw Halt()
        }
        try allow(["source"], in: attributes, of: name, at: position)
        let source = try token(attributes, "source", of: name, at: position, maxBytes: ContentFormat.maxSourceBytes) ?? ""
        var pois: [ContentPOI] = []
        var tours: [ContentTour] = []
        var textSeen = false
        while let child = try nextChild(of: name, textSeen: &textSeen) {
            switch child.name {
            case "poi":
                poiCount += 1
                guard poiCount <= limits.maxPOIs else {
                    try report(.tooMany(what: "POIs in a file", limit: limits.maxPOIs), at: child.position)
                    throw Halt()
                }
                if let poi = try readPOI(child) { pois.append(poi) }
            case "tour":
                tourCount += 1
                guard tourCount <= limits.maxTours else {
                    try report(.tooMany(what: "tours in a file", limit: limits.maxTours), at: child.position)
                    throw Halt()
                }
                if let tour = try readTour(child) { tours.append(tour) }
            default:
                try unknown(child, in: name)
            }
        }
        // Read to the end: after the root the reader gives nil, or an error (text, a second root).
        _ = try nextOrEnd()
        var unresolved: [UnresolvedStop] = []
        for tour in tours {
            for stop in tour.stops where poiIDs[stop.ref] == nil {
                unresolved.append(UnresolvedStop(tour: tour.id, ref: stop.ref, position: stop.position))
            }
        }
        return ContentDocument(source: source, pois: pois, tours: tours, unresolvedStops: unresolved)
    }

    /// Reads a `<poi>` whose start tag was just read; nil if it has an error.
    mutating func readPOI(_ element: Child) throws(Halt) -> ContentPOI? {
        let (name, attributes, position) = (element.name, element.attributes, element.position)
        var valid = try allow(["id", "category", "lat", "lon"], in: attributes, of: name, at: position)
        let id = try identifier(attributes, of: name, at: position, seen: \.poiIDs)
        let category = try token(attributes, "category", of: name, at: position, maxBytes: ContentFormat.maxCategoryBytes)
        let lat = try coordinate(attributes, "lat", of: name, at: position, limit: 90)
        let lon = try coordinate(attributes, "lon", of: name, at: position, limit: 180)
        var names = Localized()
        var descriptions = Localized()
        var address: String?
        var phone: String?
        var website: String?
        var price: Int?
        var photos: [ContentPhoto] = []
        var photoCount = 0
        var seasons: [ContentSeason] = []
        var seasonCount = 0
        var seen: Set<String> = []
        var textSeen = false
        while let child = try nextChild(of: name, textSeen: &textSeen) {
            switch child.name {
            case "name":
                valid = try readLocalized(child, into: &names, in: name, maxBytes: ContentFormat.maxNameBytes) && valid
            case "description":
                valid = try readLocalized(child, into: &descriptions, in: name, maxBytes: ContentFormat.maxDescriptionBytes) && valid
            case "address", "phone", "website", "price":
                guard try once(child, in: name, seen: &seen) else {
                    valid = false
                    continue
                }
                try allow([], in: child.attributes, of: child.name, at: child.position)
                let text = try readText(of: child.name)
                switch child.name {
                case "address":
                    address = try nonEmpty(text, child.name, at: child.position, maxBytes: ContentFormat.maxAddressBytes)
                    valid = address != nil && valid
                case "phone":
                    phone = try nonEmpty(text, child.name, at: child.position, maxBytes: ContentFormat.maxPhoneBytes)
                    valid = phone != nil && valid
                case "website":
                    website = try url(text, child.name, at: child.position)
                    valid = website != nil && valid
                default:
                    price = ["0", "1", "2", "3", "4"].firstIndex(of: text)
                    if price == nil {
                        try report(.invalidValue(field: "price", why: "must be a whole number from 0 to 4"), at: child.position)
                        valid = false
                    }
                }
            case "photo":
                photoCount += 1
                guard photoCount <= limits.maxPhotosPerPOI else {
                    if photoCount == limits.maxPhotosPerPOI + 1 { try report(.tooMany(what: "photos in one <poi>", limit: limits.maxPhotosPerPOI), at: child.position) }
                    valid = false
                    try skip()
                    continue
                }
                try allow(["url", "attribution"], in: child.attributes, of: child.name, at: child.position)
                let photoURL = try url(try required(child.attributes, "url", of: child.name, at: child.position), "url", at: child.position)
                var attribution = child.attributes["attribution"]
                if let given = attribution {
                    attribution = try nonEmpty(given, "attribution", at: child.position, maxBytes: ContentFormat.maxAttributionBytes)
                }
                try empty(child)
                if let photoURL, attribution != nil || child.attributes["attribution"] == nil {
                    photos.append(ContentPhoto(url: photoURL, attribution: attribution, position: child.position))
                } else {
                    valid = false
                }
            case "season":
                seasonCount += 1
                guard seasonCount <= ContentFormat.maxSeasons else {
                    if seasonCount == ContentFormat.maxSeasons + 1 { try report(.tooMany(what: "seasons in one <poi>", limit: ContentFormat.maxSeasons), at: child.position) }
                    valid = false
                    try skip()
                    continue
                }
                try allow(["from", "to"], in: child.attributes, of: child.name, at: child.position)
                let from = try required(child.attributes, "from", of: child.name, at: child.position)
                let to = try required(child.attributes, "to", of: child.name, at: child.position)
                try empty(child)
                if let from, let to { seasons.append(ContentSeason(from: from, to: to)) } else { valid = false }
            default:
                try unknown(child, in: name)
            }
        }
        // A name or stop that is there but wrong has its own error: "missing" is only for none at all.
        if names.count == 0 { try report(.missingElement(element: name, child: "name"), at: position) }
        guard valid, let id, let category, let lat, let lon, !names.texts.isEmpty else { return nil }
        return ContentPOI(
            id: id, category: category, lat: lat, lon: lon, names: names.texts, descriptions: descriptions.texts,
            address: address, phone: phone, website: website, price: price, photos: photos, seasons: seasons, position: position)
    }

    /// Reads a `<tour>` whose start tag was just read; nil if it has an error.
    mutating func readTour(_ element: Child) throws(Halt) -> ContentTour? {
        let (name, attributes, position) = (element.name, element.attributes, element.position)
        var valid = try allow(["id"], in: attributes, of: name, at: position)
        let id = try identifier(attributes, of: name, at: position, seen: \.tourIDs)
        var names = Localized()
        var descriptions = Localized()
        var stops: [ContentStop] = []
        var stopCount = 0
        var map: ContentMap?
        var seen: Set<String> = []
        var textSeen = false
        while let child = try nextChild(of: name, textSeen: &textSeen) {
            switch child.name {
            case "name":
                valid = try readLocalized(child, into: &names, in: name, maxBytes: ContentFormat.maxNameBytes) && valid
            case "description":
                valid = try readLocalized(child, into: &descriptions, in: name, maxBytes: ContentFormat.maxDescriptionBytes) && valid
            case "stop":
                stopCount += 1
                valid = try allow(["ref"], in: child.attributes, of: child.name, at: child.position) && valid
                let ref = try required(child.attributes, "ref", of: child.name, at: child.position)
                try empty(child)
                guard let ref else {
                    valid = false
                    continue
                }
                guard ref.utf8.count <= ContentFormat.maxIDBytes, Self.isToken(ref) else {
                    try report(.invalidValue(field: "ref", why: "must be 1 to \(ContentFormat.maxIDBytes) bytes without white space"), at: child.position)
                    valid = false
                    continue
                }
                guard stopCount <= limits.maxStopsPerTour else {
                    if stopCount == limits.maxStopsPerTour + 1 { try report(.tooMany(what: "stops in one <tour>", limit: limits.maxStopsPerTour), at: child.position) }
                    valid = false
                    continue
                }
                stops.append(ContentStop(ref: ref, position: child.position))
            case "map":
                guard try once(child, in: name, seen: &seen) else {
                    valid = false
                    continue
                }
                map = try readMap(child)
                valid = map != nil && valid
            default:
                try unknown(child, in: name)
            }
        }
        // A name or stop that is there but wrong has its own error: "missing" is only for none at all.
        if names.count == 0 { try report(.missingElement(element: name, child: "name"), at: position) }
        if stopCount == 0 { try report(.missingElement(element: name, child: "stop"), at: position) }
        guard valid, let id, !names.texts.isEmpty, !stops.isEmpty else { return nil }
        return ContentTour(id: id, names: names.texts, descriptions: descriptions.texts, stops: stops, map: map, position: position)
    }

    /// Reads a `<map>` whose start tag was just read; nil if it has an error.
    mutating func readMap(_ element: Child) throws(Halt) -> ContentMap? {
        let (name, attributes, position) = (element.name, element.attributes, element.position)
        var valid = try allow(["file"], in: attributes, of: name, at: position)
        var file = try required(attributes, "file", of: name, at: position)
        if let given = file, !Self.isFileName(given) {
            try report(
                .invalidValue(field: "file", why: "must be a file name without a directory, ending in .jpg or .jpeg, at most \(ContentFormat.maxFileNameBytes) bytes"), at: position
            )
            file = nil
        }
        var points: [ContentMapPoint] = []
        var count = 0
        var textSeen = false
        while let child = try nextChild(of: name, textSeen: &textSeen) {
            guard child.name == "point" else {
                try unknown(child, in: name)
                continue
            }
            count += 1
            if count == limits.maxMapPoints + 1 {
                try report(.tooMany(what: "points in one <map>", limit: limits.maxMapPoints), at: child.position)
            }
            valid = try allow(["x", "y", "lat", "lon"], in: child.attributes, of: child.name, at: child.position) && valid
            let x = try pixel(child.attributes, "x", at: child.position)
            let y = try pixel(child.attributes, "y", at: child.position)
            let lat = try coordinate(child.attributes, "lat", of: child.name, at: child.position, limit: 90)
            let lon = try coordinate(child.attributes, "lon", of: child.name, at: child.position, limit: 180)
            try empty(child)
            if let x, let y, let lat, let lon, count <= limits.maxMapPoints {
                points.append(ContentMapPoint(x: x, y: y, lat: lat, lon: lon, position: child.position))
            } else {
                valid = false
            }
        }
        if count < 3 { try report(.tooFewMapPoints(count: count), at: position) }
        guard valid, let file, count >= 3, count <= limits.maxMapPoints else { return nil }
        return ContentMap(file: file, points: points, position: position)
    }

    /// The names (or descriptions) of one POI or tour, and where each language was first given.
    struct Localized {
        var texts: [LocalizedText] = []
        var languages: [String: XMLPosition] = [:]
        /// How many elements came, counted past the bound so it is reported once.
        var count = 0
    }

    /// Reads `<name lang="…">text</name>` (or a description) into `into`; false if it has an error.
    mutating func readLocalized(_ element: Child, into list: inout Localized, in parent: String, maxBytes: Int) throws(Halt) -> Bool {
        var valid = try allow(["lang"], in: element.attributes, of: element.name, at: element.position)
        let lang = try required(element.attributes, "lang", of: element.name, at: element.position)
        let text = try nonEmpty(try readText(of: element.name), element.name, at: element.position, maxBytes: maxBytes)
        list.count += 1
        if list.count == limits.maxNamesPerElement + 1 {
            try report(.tooMany(what: "<\(element.name)> elements in one <\(parent)>", limit: limits.maxNamesPerElement), at: element.position)
        }
        guard let lang else { return false }
        guard Self.isLanguageTag(lang) else {
            try report(.invalidValue(field: "lang", why: "must be a language tag such as en or pt-BR"), at: element.position)
            return false
        }
        if let first = list.languages[lang.lowercased()] {
            try report(.duplicateLanguage(element: element.name, lang: lang, first: first), at: element.position)
            valid = false
        } else {
            list.languages[lang.lowercased()] = element.position
        }
        guard valid, let text, list.count <= limits.maxNamesPerElement else { return false }
        list.texts.append(LocalizedText(lang: lang, text: text, position: element.position))
        return true
    }

    // MARK: - Events

    /// A child element's start tag.
    struct Child {
        let name: String
        let attributes: [XMLAttribute]
        let position: XMLPosition
    }

    /// The next event inside the root; an XML error is noted and ends the reading.
    mutating func next() throws(Halt) -> XMLEvent {
        guard let event = try nextOrEnd() else {
            // The reader gives nil only after the root has closed, which no caller reads past.
            try report(.xml(.syntax("the document ends early")), at: XMLPosition(line: 1, column: 1))
            throw Halt()
        }
        return event
    }

    /// The next event, or nil after the root; an XML error is noted and ends the reading.
    mutating func nextOrEnd() throws(Halt) -> XMLEvent? {
        do {
            return try reader.next()
        } catch {
            try report(.xml(error.reason), at: error.position)
            throw Halt()
        }
    }

    /// The next child element of `parent`, or nil at its end. Text that is not white space is
    /// reported once per parent (`textSeen`); an element of another namespace is reported and skipped.
    mutating func nextChild(of parent: String, textSeen: inout Bool) throws(Halt) -> Child? {
        while true {
            switch try next() {
            case .end:
                return nil
            case .text(let text, let position):
                if !textSeen, !Self.isWhitespace(text) {
                    textSeen = true
                    try report(.unexpectedText(element: parent), at: position)
                }
            case .start(let name, let attributes, let position):
                guard reader.namespace == ContentFormat.namespace else {
                    try report(.unknownElement(name: name, parent: parent), at: position)
                    try skip()
                    continue
                }
                return Child(name: name, attributes: attributes, position: position)
            }
        }
    }

    /// The text of an element whose start tag was just read, up to its end tag, white space
    /// around it removed; child elements are reported and skipped.
    mutating func readText(of element: String) throws(Halt) -> String {
        var text = ""
        var childSeen = false
        while true {
            switch try next() {
            case .end:
                return Self.trimmed(text)
            case .text(let part, _):
                // Text after a child element, which is an error already, is not kept: the text
                // stays one node, bounded by the reader.
                if !childSeen { text = part }
            case .start(let name, _, let position):
                childSeen = true
                try report(.unknownElement(name: name, parent: element), at: position)
                try skip()
            }
        }
    }

    /// Reads an element that must be empty (white space and comments aside) to its end.
    mutating func empty(_ element: Child) throws(Halt) {
        if !Self.isWhitespace(try readText(of: element.name)) {
            try report(.unexpectedText(element: element.name), at: element.position)
        }
    }

    /// Skips the rest of the element whose start tag was just read.
    mutating func skip() throws(Halt) {
        let depth = reader.depth
        while true {
            if case .end = try next(), reader.depth < depth { return }
        }
    }

    /// Reports an element the format does not have here, and skips it.
    mutating func unknown(_ child: Child, in parent: String) throws(Halt) {
        try report(.unknownElement(name: child.name, parent: parent), at: child.position)
        try skip()
    }

    /// False (and reported, and the element skipped) if `child` came before in this parent.
    mutating func once(_ child: Child, in parent: String, seen: inout Set<String>) throws(Halt) -> Bool {
        guard seen.insert(child.name).inserted else {
            try report(.duplicateElement(element: parent, child: child.name), at: child.position)
            try skip()
            return false
        }
        return true
    }

    // MARK: - Attributes and values

    /// Reports every attribute not in `names` (a default namespace declaration is always
    /// allowed); false if there was one.
    @discardableResult
    mutating func allow(_ names: [String], in attributes: [XMLAttribute], of element: String, at position: XMLPosition) throws(Halt) -> Bool {
        var valid = true
        for attribute in attributes where !names.contains(attribute.name) && attribute.name != "xmlns" {
            try report(.unknownAttribute(element: element, attribute: attribute.name), at: position)
            valid = false
        }
        return valid
    }

    /// The attribute's value, or nil (reported) if it is missing.
    mutating func required(_ attributes: [XMLAttribute], _ name: String, of element: String, at position: XMLPosition) throws(Halt) -> String? {
        guard let value = attributes[name] else {
            try report(.missingAttribute(element: element, attribute: name), at: position)
            return nil
        }
        return value
    }

    /// A required attribute that is 1 to `maxBytes` bytes without white space.
    mutating func token(_ attributes: [XMLAttribute], _ name: String, of element: String, at position: XMLPosition, maxBytes: Int) throws(Halt) -> String? {
        guard let value = try required(attributes, name, of: element, at: position) else { return nil }
        guard value.utf8.count <= maxBytes, Self.isToken(value) else {
            try report(.invalidValue(field: name, why: "must be 1 to \(maxBytes) bytes without white space"), at: position)
            return nil
        }
        return value
    }

    /// The `id` of a POI or tour, noted in `seen`; nil (reported) if missing, malformed or seen before.
    mutating func identifier(
        _ attributes: [XMLAttribute], of element: String, at position: XMLPosition,
        seen: WritableKeyPath<ContentParser, [String: XMLPosition]>
    ) throws(Halt) -> String? {
        guard let id = try token(attributes, "id", of: element, at: position, maxBytes: ContentFormat.maxIDBytes) else { return nil }
        if let first = self[keyPath: seen][id] {
            try report(.duplicateID(element: element, id: id, first: first), at: position)
            return nil
        }
        self[keyPath: seen][id] = position
        return id
    }

    /// A required latitude or longitude: a decimal number (`-33.8568`) from `-limit` to `limit`.
    mutating func coordinate(_ attributes: [XMLAttribute], _ name: String, of element: String, at position: XMLPosition, limit: Int) throws(Halt) -> Double? {
        guard let text = try required(attributes, name, of: element, at: position) else { return nil }
        guard let value = DecimalText.decimal(text, signed: true, atMost: limit) else {
            try report(.invalidValue(field: name, why: "must be a decimal number from -\(limit) to \(limit)"), at: position)
            return nil
        }
        return value + 0.0  // -0 is 0
    }

    /// A required pixel coordinate: a decimal number from 0 to `ContentFormat.maxPixel`.
    mutating func pixel(_ attributes: [XMLAttribute], _ name: String, at position: XMLPosition) throws(Halt) -> Double? {
        guard let text = try required(attributes, name, of: "point", at: position) else { return nil }
        guard let value = DecimalText.decimal(text, signed: false, atMost: Int(ContentFormat.maxPixel)) else {
            try report(.invalidValue(field: name, why: "must be a decimal number of pixels from 0 to \(Int(ContentFormat.maxPixel))"), at: position)
            return nil
        }
        return value
    }

    /// `text` if it is not empty and at most `maxBytes` bytes; else nil, reported.
    mutating func nonEmpty(_ text: String, _ field: String, at position: XMLPosition, maxBytes: Int) throws(Halt) -> String? {
        if text.utf8.count > maxBytes {
            try report(.tooLong(field: field, limit: maxBytes), at: position)
            return nil
        }
        if Self.isWhitespace(text) {
            try report(.invalidValue(field: field, why: "must not be empty"), at: position)
            return nil
        }
        return text
    }

    /// An http or https URL of at most `ContentFormat.maxURLBytes` bytes without white space; else nil, reported.
    mutating func url(_ text: String?, _ field: String, at position: XMLPosition) throws(Halt) -> String? {
        guard let text else { return nil }
        guard text.utf8.count <= ContentFormat.maxURLBytes else {
            try report(.tooLong(field: field, limit: ContentFormat.maxURLBytes), at: position)
            return nil
        }
        guard Self.isToken(text), let scheme = ["http://", "https://"].first(where: text.hasPrefix), text.utf8.count > scheme.utf8.count else {
            try report(.invalidValue(field: field, why: "must be an http:// or https:// URL without white space"), at: position)
            return nil
        }
        return text
    }

    /// Notes an error; past `maxErrors` notes that and ends the reading.
    mutating func report(_ kind: ContentError.Kind, at position: XMLPosition) throws(Halt) {
        guard errors.count < limits.maxErrors else {
            errors.append(ContentError(.tooManyErrors(limit: limits.maxErrors), at: position))
            throw Halt()
        }
        errors.append(ContentError(kind, at: position))
    }

    // MARK: - Grammar

    /// Nothing but space, tab, line feed and carriage return (or nothing).
    static func isWhitespace(_ text: String) -> Bool {
        text.utf8.allSatisfy(XMLReader.isWhitespace)
    }

    /// `text` without the space, tab, line feed and carriage return around it.
    static func trimmed(_ text: String) -> String {
        let utf8 = text.utf8
        guard let first = utf8.firstIndex(where: { !XMLReader.isWhitespace($0) }),
            let last = utf8.lastIndex(where: { !XMLReader.isWhitespace($0) })
        else { return "" }
        if first == utf8.startIndex, last == utf8.index(before: utf8.endIndex) { return text }
        // White space is ASCII, so both ends fall between whole characters.
        return String(decoding: utf8[first...last], as: UTF8.self)
    }

    /// At least one byte, and none of them space, tab, line feed or carriage return.
    static func isToken(_ text: String) -> Bool {
        !text.isEmpty && !text.utf8.contains(where: XMLReader.isWhitespace)
    }

    /// `[A-Za-z]{2,8}(-[A-Za-z0-9]{1,8})*`, at most 35 bytes: the shape of a BCP 47 language tag.
    static func isLanguageTag(_ text: String) -> Bool {
        guard text.utf8.count <= 35 else { return false }
        let parts = text.utf8.split(separator: UInt8(ascii: "-"), omittingEmptySubsequences: false)
        guard let first = parts.first, (2...8).contains(first.count), first.allSatisfy(isLetter) else { return false }
        return parts.dropFirst().allSatisfy { (1...8).contains($0.count) && $0.allSatisfy { isLetter($0) || ($0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9")) } }
    }

    private static func isLetter(_ byte: UInt8) -> Bool {
        (byte | 0x20) >= UInt8(ascii: "a") && (byte | 0x20) <= UInt8(ascii: "z")
    }

    /// A file name without a directory: no `/` or `\`, no tab or line break, not starting with
    /// `.`, ending in `.jpg` or `.jpeg` in any case, at most `ContentFormat.maxFileNameBytes` bytes.
    static func isFileName(_ text: String) -> Bool {
        let lower = text.lowercased()
        return text.utf8.count <= ContentFormat.maxFileNameBytes && !text.hasPrefix(".")
            && !text.utf8.contains { [UInt8(ascii: "/"), UInt8(ascii: "\\"), 0x09, 0x0A, 0x0D].contains($0) }
            && (lower.hasSuffix(".jpg") && lower.utf8.count > 4 || lower.hasSuffix(".jpeg") && lower.utf8.count > 5)
    }
}

/// Decimal numbers as both import formats write them: Swift's own parser also takes `0x10`,
/// `1e3`, `+5`, `inf` and `nan`.
enum DecimalText {
    /// `-?[0-9]+(\.[0-9]+)?` (no sign when `signed` is false), at most 32 bytes, whose
    /// magnitude as written is at most `limit`, as a Double. The bound is checked on the text,
    /// so `90.0000000000000001`, which a Double rounds to 90, is over 90.
    static func decimal(_ text: String, signed: Bool, atMost limit: Int) -> Double? {
        guard text.utf8.count <= 32 else { return nil }
        var bytes = Array(text.utf8)[...]
        if signed, bytes.first == UInt8(ascii: "-") { bytes = bytes.dropFirst() }
        let parts = bytes.split(separator: UInt8(ascii: "."), maxSplits: 1, omittingEmptySubsequences: false)
        guard parts.allSatisfy({ !$0.isEmpty && $0.allSatisfy { $0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9") } }) else { return nil }
        let whole = parts[0].drop { $0 == UInt8(ascii: "0") }
        guard whole.count <= 18, let units = Int(String(decoding: whole, as: UTF8.self)) ?? (whole.isEmpty ? 0 : nil) else { return nil }
        let fraction = parts.count > 1 && parts[1].contains { $0 != UInt8(ascii: "0") }
        guard units < limit || (units == limit && !fraction) else { return nil }
        return Double(text)
    }
}
