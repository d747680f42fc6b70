/// A place read from OpenStreetMap data: a named node, or a named way at the mean of its nodes,
/// that carries a tag of the mapping table.
public struct OSMPlace: Sendable, Equatable {
    /// `node/123` or `way/456`: the place's id in the source `osm`.
    public var externalID: String
    /// A category id, from the mapping table.
    public var category: String
    /// The `name` tag (the local name), trimmed.
    public var name: String
    /// `name:xx` tags by language code (`en`, `sv`, `zh-Hans`).
    public var localizedNames: [String: String]
    public var lat: Double
    public var lon: Double
    /// `addr:full`, or else `addr:street addr:housenumber, addr:postcode addr:city` from the parts there are.
    public var address: String?
    /// The first value of `phone`, or else of `contact:phone` (values separated by `;`).
    public var phone: String?
    /// The first value of `website`, or else of `contact:website`.
    public var website: String?
    /// The `description` tag.
    public var description: String?
    /// `opening_hours` as weekly periods, when it was one of the understood forms.
    public var openingHours: [OpeningHours.Period]
    /// `opening_hours` as it was written, when it was not understood (and so not turned into periods).
    public var openingHoursText: String?

    public init(
        externalID: String, category: String, name: String, localizedNames: [String: String] = [:], lat: Double, lon: Double,
        address: String? = nil, phone: String? = nil, website: String? = nil, description: String? = nil,
        openingHours: [OpeningHours.Period] = [], openingHoursText: String? = nil
    ) {
        self.externalID = externalID
        self.category = category
        self.name = name
        self.localizedNames = localizedNames
        self.lat = lat
        self.lon = lon
        self.address = address
        self.phone = phone
        self.website = website
        self.description = description
        self.openingHours = openingHours
        self.openingHoursText = openingHoursText
    }
}

/// What a read of OpenStreetMap data counted besides the places.
public struct OSMCounts: Sendable, Equatable {
    /// Every `node` and `way` element read, and the relations passed over.
    public var nodes = 0, ways = 0, relations = 0
    /// Named ways with a mapped tag left out because a node they list is not in the data.
    public var waysMissingNodes = 0
    /// Elements left out because they break a bound or lack a valid id or coordinate.
    public var invalidElements = 0

    public init() {}
}

/// Node coordinates for way centroids, kept compactly: 16 bytes a node (an id and two
/// coordinates in OpenStreetMap's own fixed point, 1e-7 degrees), found by binary search.
///
/// Extracts list nodes by increasing id (osmium and the OSM API both do); data that does not is
/// sorted once, after the last node and before the first lookup. A node given twice has no
/// coordinates: which copy a way means cannot be told.
struct NodeTable {
    private var ids: [Int64] = []
    private var lats: [Int32] = []
    private var lons: [Int32] = []
    private var sorted = true
    /// Ids given more than once.
    private(set) var ambiguous = Set<Int64>()

    var count: Int { ids.count }

    mutating func append(id: Int64, lat: Double, lon: Double) {
        if let last = ids.last, id <= last {
            if id == last { ambiguous.insert(id) } else { sorted = false }
        }
        ids.append(id)
        lats.append(Int32((lat * 1e7).rounded()))
        lons.append(Int32((lon * 1e7).rounded()))
    }

    /// Sorts by id when the nodes did not arrive in order.
    mutating func prepareForLookups() {
        guard !sorted else { return }
        let order = ids.indices.sorted { ids[$0] < ids[$1] }
        ids = order.map { ids[$0] }
        lats = order.map { lats[$0] }
        lons = order.map { lons[$0] }
        sorted = true
        for index in ids.indices.dropFirst() where ids[index] == ids[index - 1] { ambiguous.insert(ids[index]) }
    }

    /// The fixed-point coordinates of a node, or nil when it is not in the table (or is in it twice).
    func coordinate(of id: Int64) -> (lat: Int32, lon: Int32)? {
        guard !ambiguous.contains(id) else { return nil }
        var low = 0
        var high = ids.count
        while low < high {
            let mid = (low + high) / 2
            if ids[mid] < id { low = mid + 1 } else { high = mid }
        }
        guard low < ids.count, ids[low] == id else { return nil }
        return (lats[low], lons[low])
    }
}

/// Turns the elements of an OpenStreetMap XML document (`osm`, `node`, `way`, `nd`, `tag`) into
/// places, one start or end tag at a time, then `finish()`; relations and anything else are passed over.
struct OSMCollector {
    /// The bounds of one element, the same as the element reader's.
    static let maxTags = OSMElementReader.maxTags
    static let maxWayNodes = OSMElementReader.maxWayNodes
    static let maxTagBytes = OSMElementReader.maxTagBytes

    let mapping: OSMMapping
    private(set) var places: [OSMPlace] = []
    private(set) var counts = OSMCounts()
    private var nodes = NodeTable()

    /// The node or way being read.
    private enum Current {
        case none
        case node(id: Int64, lat: Double, lon: Double)
        case way(id: Int64)
    }
    private var current = Current.none
    private var invalid = false
    private var tags: [String: String] = [:]
    private var wayNodes: [Int64] = []
    /// Places of ways (their index in `places`) and their nodes, waiting for `finish()`.
    private var pendingWays: [(index: Int, refs: [Int64])] = []

    init(mapping: OSMMapping) { self.mapping = mapping }

    /// A start tag, with a lookup of its attributes. Elements other than those named are passed over.
    mutating func start(_ name: String, attribute: (String) -> String?) {
        switch name {
        case "node":
            counts.nodes += 1
            beginElement()
            guard let id = attribute("id").flatMap(OSMNumber.id), let lat = attribute("lat").flatMap({ OSMNumber.degrees($0, limit: 90) }),
                let lon = attribute("lon").flatMap({ OSMNumber.degrees($0, limit: 180) })
            else {
                invalid = true
                return
            }
            nodes.append(id: id, lat: lat, lon: lon)
            current = .node(id: id, lat: lat, lon: lon)
        case "way":
            counts.ways += 1
            beginElement()
            guard let id = attribute("id").flatMap(OSMNumber.id) else {
                invalid = true
                return
            }
            current = .way(id: id)
        case "relation":
            counts.relations += 1
        case "nd":
            guard case .way = current, !invalid else { return }
            guard wayNodes.count < Self.maxWayNodes, let ref = attribute("ref").flatMap(OSMNumber.id) else {
                invalid = true
                return
            }
            wayNodes.append(ref)
        case "tag":
            // Tags of relations and of elements already found invalid are passed over.
            if case .none = current { return }
            guard !invalid else { return }
            guard let key = attribute("k"), let value = attribute("v"), tags.count < Self.maxTags,
                key.utf8.count <= Self.maxTagBytes, value.utf8.count <= Self.maxTagBytes
            else {
                invalid = true
                return
            }
            tags[key] = value
        default:
            return
        }
    }

    /// An end tag: a finished node or way becomes a place when it has a name and a mapped tag.
    mutating func end(_ name: String) {
        guard name == "node" || name == "way" else { return }
        defer { current = .none }
        if invalid {
            counts.invalidElements += 1
            return
        }
        guard let placeName = tags["name"]?.trimmingSpaces, !placeName.isEmpty, let category = mapping.category(for: tags) else { return }
        switch current {
        case .none:
            return
        case .node(let id, let lat, let lon):
            places.append(place(externalID: "node/\(id)", category: category, name: placeName, lat: lat, lon: lon))
        case .way(let id):
            var refs = wayNodes
            // A closed way repeats its first node at the end; it counts once.
            if refs.count > 1, refs.first == refs.last { refs.removeLast() }
            guard !refs.isEmpty else {
                counts.invalidElements += 1
                return
            }
            // The coordinates come in finish(), when every node has been read.
            pendingWays.append((places.count, refs))
            places.append(place(externalID: "way/\(id)", category: category, name: placeName, lat: 0, lon: 0))
        }
    }

    /// Ends the document: places of ways get the mean of their nodes, and ways with a node
    /// missing from the data are left out (and counted).
    mutating func finish() {
        nodes.prepareForLookups()
        var missing: Set<Int> = []
        for (index, refs) in pendingWays {
            var latSum: Int64 = 0
            var lonSum: Int64 = 0
            var complete = true
            for ref in refs {
                guard let coordinate = nodes.coordinate(of: ref) else {
                    complete = false
                    break
                }
                latSum += Int64(coordinate.lat)
                lonSum += Int64(coordinate.lon)
            }
            guard complete else {
                missing.insert(index)
                continue
            }
            let n = Double(refs.count)
            places[index].lat = Double(latSum) / n / 1e7
            places[index].lon = Double(lonSum) / n / 1e7
        }
        pendingWays = []
        counts.waysMissingNodes += missing.count
        if !missing.isEmpty {
            places = places.enumerated().filter { !missing.contains($0.offset) }.map(\.element)
        }
    }

    private mutating func beginElement() {
        invalid = false
        tags.removeAll(keepingCapacity: true)
        wayNodes.removeAll(keepingCapacity: true)
    }

    /// A place from the current tags.
    private func place(externalID: String, category: String, name: String, lat: Double, lon: Double) -> OSMPlace {
        var place = OSMPlace(externalID: externalID, category: category, name: name, lat: lat, lon: lon)
        for (key, value) in tags where key.hasPrefix("name:") {
            let language = key.dropFirst(5)
            let text = value.trimmingSpaces
            if Self.isLanguageCode(language), !text.isEmpty { place.localizedNames[String(language)] = text }
        }
        place.address = address()
        place.phone = firstValue("phone") ?? firstValue("contact:phone")
        place.website = firstValue("website") ?? firstValue("contact:website")
        if let description = tags["description"]?.trimmingSpaces, !description.isEmpty { place.description = description }
        if let hours = tags["opening_hours"] {
            switch OpeningHours.parse(hours) {
            case .periods(let periods): place.openingHours = periods
            case .keptAsText: place.openingHoursText = hours
            }
        }
        return place
    }

    /// The first of a tag's `;`-separated values, trimmed, or nil when there is none.
    private func firstValue(_ key: String) -> String? {
        guard let value = tags[key] else { return nil }
        let first = value.split(separator: ";", maxSplits: 1).first.map { String($0).trimmingSpaces } ?? ""
        return first.isEmpty ? nil : first
    }

    private func address() -> String? {
        if let full = tags["addr:full"]?.trimmingSpaces, !full.isEmpty { return full }
        func tag(_ key: String) -> String? { tags[key].map(\.trimmingSpaces).flatMap { $0.isEmpty ? nil : $0 } }
        let street = tag("addr:street") ?? tag("addr:place")
        let line1 = street.map { street in [street, tag("addr:housenumber")].compactMap { $0 }.joined(separator: " ") }
        let line2 = [tag("addr:postcode"), tag("addr:city")].compactMap { $0 }.joined(separator: " ")
        let address = [line1, line2.isEmpty ? nil : line2].compactMap { $0 }.joined(separator: ", ")
        return address.isEmpty ? nil : address
    }

    /// `en`, `sv`, `zh-Hans`, `be-tarask`: two or three lower-case letters, then subtags of 1-8
    /// letters or digits after `-`. Other `name:` suffixes (`name:etymology`, `name:left`) are not languages.
    static func isLanguageCode(_ code: Substring) -> Bool {
        let parts = code.split(separator: "-", omittingEmptySubsequences: false)
        guard let first = parts.first, (2...3).contains(first.utf8.count), first.utf8.allSatisfy({ $0 >= 0x61 && $0 <= 0x7A }) else { return false }
        return parts.dropFirst().allSatisfy { part in
            (1...8).contains(part.utf8.count) && part.utf8.allSatisfy { ($0 | 0x20) >= 0x61 && ($0 | 0x20) <= 0x7A || ($0 >= 0x30 && $0 <= 0x39) }
        }
    }
}

extension String {
    /// Without leading and trailing spaces, tabs and line breaks.
    var trimmingSpaces: String {
        let isSpace: (Character) -> Bool = { $0 == " " || $0 == "\t" || $0 == "\n" || $0 == "\r" }
        guard let first = firstIndex(where: { !isSpace($0) }), let last = lastIndex(where: { !isSpace($0) }) else { return "" }
        return String(self[first...last])
    }
}

/// Why OpenStreetMap data could not be read at all (single elements that break a bound are
/// left out and counted instead, see `OSMCounts.invalidElements`).
public enum OSMError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The XML itself is refused (too large, too deep, a DTD, malformed), with its position.
    case xml(XMLError)
    /// The root element is not `osm`.
    case notOSM(root: String)

    public var description: String {
        switch self {
        case .xml(let error): "\(error)"
        case .notOSM(let root): "the root element is <\(root)>, not <osm>: not OpenStreetMap XML"
        }
    }
}

/// The places of an OpenStreetMap XML document (`osmium cat -o FILE.osm`, the API's `map`
/// call): named nodes and ways that carry a tag of the mapping table, in document order.
///
/// Ways are placed at the mean of their nodes, a closed way's repeated last node counted once;
/// a way listing a node the document lacks is left out and counted. Relations are passed over.
/// Node coordinates are kept in a `NodeTable`, 16 bytes a node, until the end of the document.
public struct OSMDocument: Sendable, Equatable {
    public var places: [OSMPlace]
    public var counts: OSMCounts
    /// The street network, when asked for (read in the same pass).
    public var streets: OSMStreets?
    /// The addresses, streets, areas and postcodes a geocoder finds, read with the streets.
    public var addresses: [OSMAddress] = []

    /// The XML bounds for OpenStreetMap data of at most `maxBytes`: elements are shallow and
    /// have few attributes (a node has about ten); values are bounded generously so that one
    /// over-long tag value leaves its element out rather than refusing the whole file.
    public static func limits(maxBytes: Int) -> XMLLimits {
        XMLLimits(maxBytes: maxBytes, maxDepth: 8, maxAttributes: 16, maxNameBytes: 64, maxAttributeValueBytes: 4096, maxTextBytes: 4096)
    }

    /// Reads a whole document of at most `maxBytes` (default 1 GiB), and its street network and
    /// addresses with it when `streets` (an import's, read in the same pass).
    public init(bytes: [UInt8], mapping: OSMMapping, maxBytes: Int = 1 << 30, streets: Bool = false) throws(OSMError) {
        var collector = OSMCollector(mapping: mapping)
        var reader = OSMElementReader()
        var streetCollector = StreetCollector()
        var addressCollector = AddressCollector()
        try Self.walk(bytes, maxBytes: maxBytes) { name, attribute in
            collector.start(name, attribute: attribute)
            if streets { reader.start(name, attribute: attribute) }
        } end: { name in
            collector.end(name)
            if streets, let element = reader.end(name) {
                streetCollector.take(element)
                addressCollector.take(element)
            }
        }
        collector.finish()
        places = collector.places
        counts = collector.counts
        if streets {
            self.streets = streetCollector.finish(invalidElements: reader.invalid)
            addresses = addressCollector.finish()
        }
    }

    /// Runs `start` and `end` for each start and end tag of a whole document of at most
    /// `maxBytes`, after checking that its root is `osm`.
    static func walk(
        _ bytes: [UInt8], maxBytes: Int, start: (String, (String) -> String?) -> Void, end: (String) -> Void
    ) throws(OSMError) {
        var reader = XMLReader(bytes: bytes, limits: limits(maxBytes: maxBytes))
        var rootChecked = false
        while true {
            let event: XMLEvent?
            do {
                event = try reader.next()
            } catch {
                throw .xml(error)
            }
            guard let event else { return }
            switch event {
            case .start(let name, let attributes, _):
                if !rootChecked {
                    guard name == "osm" else { throw .notOSM(root: name) }
                    rootChecked = true
                }
                start(name) { attributes[$0] }
            case .end(let name, _):
                end(name)
            case .text:
                continue
            }
        }
    }
}

/// The numbers of an OSM file, as OSM writes them: decimal digits only. Swift's own parsers
/// also take `0x10`, `1e3`, `+5`, `inf` and `nan`, which name no OSM element or position.
enum OSMNumber {
    /// An element id: an optional `-` (editors number new elements below zero), then digits
    /// with no leading zero, at most 19 of them.
    static func id(_ text: String) -> Int64? {
        let digits = text.utf8.first == UInt8(ascii: "-") ? text.utf8.dropFirst() : Substring(text).utf8
        guard (1...19).contains(digits.count), digits.allSatisfy({ (0x30...0x39).contains($0) }),
            digits.count == 1 || digits.first != UInt8(ascii: "0")
        else { return nil }
        return Int64(text)
    }

    /// A latitude (`limit` 90) or longitude (180): `-?[0-9]+(\.[0-9]+)?`, at most 32 bytes, at
    /// most `limit` as written, as the content format's.
    static func degrees(_ text: String, limit: Int) -> Double? { DecimalText.decimal(text, signed: true, atMost: limit) }
}
