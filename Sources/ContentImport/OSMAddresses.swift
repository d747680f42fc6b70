import Foundation
import Geo

/// What a geocoder finds, read from OpenStreetMap data (Protocols/search.md, "Addresses"): a
/// house's address, a named street, an area (a city, a suburb), or a postcode.
public struct OSMAddress: Sendable, Equatable {
    public enum Kind: String, Sendable, CaseIterable {
        case house, street, area, postcode
    }
    public var kind: Kind
    /// `node/1`, `way/2`, `relation/3`: the element (a street's, its way of lowest id); none for a postcode.
    public var osm: String?
    public var housenumber: String?
    /// A house's `addr:street` (or `addr:place`); a street's name.
    public var street: String?
    public var postcode: String?
    /// The area a house or street lies in; an area's own name.
    public var area: String?
    /// `addr:city`, or the city it lies in; none for a city itself.
    public var city: String?
    /// A street's or an area's `name:xx` tags, by language.
    public var names: [String: String]
    public var lat: Double
    public var lon: Double

    public init(
        kind: Kind, osm: String? = nil, housenumber: String? = nil, street: String? = nil, postcode: String? = nil, area: String? = nil,
        city: String? = nil, names: [String: String] = [:], lat: Double, lon: Double
    ) {
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
}

/// Collects addresses one element at a time, then `finish()` places them:
/// - a node with `addr:housenumber` and `addr:street` (or `addr:place`) where it is; a closed
///   way, at its area's centroid; a multipolygon, at the centroid of its largest outer ring;
/// - a named highway's connected ways of one name, as one street, at its node nearest their mean;
/// - areas: `place` nodes, and named place or administrative boundary polygons;
/// - postcodes, at the mean of their houses.
///
/// A house's city is its `addr:city`, or else the smallest city polygon around it, or else the
/// nearest city node within `cityNodeReach`; its area, the smallest area polygon around it, or
/// else the nearest area node within `areaNodeReach`.
struct AddressCollector {
    /// `place` values of cities, and the `admin_level` of a city's boundary (a municipality's in most countries).
    static let cityPlaces: Set<String> = ["city", "town", "village", "hamlet"]
    static let cityAdminLevels: Set<String> = ["8"]
    /// `place` values of areas within a city, and the `admin_level`s of their boundaries.
    static let areaPlaces: Set<String> = ["borough", "suburb", "quarter", "neighbourhood"]
    static let areaAdminLevels: Set<String> = ["9", "10", "11"]
    /// How far the nearest city or area node may be from a point it is given to, in metres.
    static let cityNodeReach = 30_000.0
    static let areaNodeReach = 2_000.0
    /// Pieces of a street of one name whose boxes lie closer than this, in degrees (about 200 m), are one street.
    static let streetPieceGap = 0.002
    /// Pieces joined that way make a street of at most this span, in degrees (about 5 km).
    static let streetSpan = 0.05
    /// The most characters of a value read (OpenStreetMap's own limit); a longer one is none.
    static let maxValueCharacters = 255
    /// The most characters of a postcode kept.
    static let maxPostcode = 16
    /// The most `name:xx` tags kept of a street or an area (the first by language code).
    static let maxNames = 32

    private enum Level { case city, area }
    private struct Point { var lat: Double, lon: Double }
    private enum Shape {
        case point(Point)
        case way([Int64])
        case relation(outer: [Int64])
    }
    private struct PendingHouse {
        var osm: String
        var tags: [String: String]
        var shape: Shape
    }
    private struct PlaceNode {
        var osm: String
        var level: Level
        var name: String
        var names: [String: String]
        var point: Point
    }
    private struct PendingPolygon {
        var osm: String
        var level: Level
        var name: String
        var names: [String: String]
        var shape: Shape
        var label: Int64?
    }
    private struct Polygon {
        var level: Level
        var name: String
        var rings: [[Point]]
        var area: Double
        var south: Double, west: Double, north: Double, east: Double
    }
    private struct StreetWay {
        var id: Int64
        var name: String
        var names: [String: String]
        var refs: [Int64]
    }

    private var table = NodeTable()
    private var wayIds: [Int64] = []
    private var wayEnds: [Int] = []
    private var wayRefs: [Int64] = []
    private var houses: [PendingHouse] = []
    private var placeNodes: [PlaceNode] = []
    private var polygons: [PendingPolygon] = []
    private var streetWays: [StreetWay] = []

    mutating func take(_ element: OSMElement) {
        switch element {
        case .node(let id, let lat, let lon, let tags):
            table.append(id: id, lat: lat, lon: lon)
            if Self.isHouse(tags) { houses.append(PendingHouse(osm: "node/\(id)", tags: tags, shape: .point(Point(lat: lat, lon: lon)))) }
            if let name = Self.name(tags), let place = tags["place"] {
                let level: Level? = Self.cityPlaces.contains(place) ? .city : Self.areaPlaces.contains(place) ? .area : nil
                if let level {
                    placeNodes.append(PlaceNode(osm: "node/\(id)", level: level, name: name, names: Self.names(tags), point: Point(lat: lat, lon: lon)))
                }
            }
        case .way(let id, let tags, let refs):
            wayIds.append(id)
            wayRefs += refs
            wayEnds.append(wayRefs.count)
            let closed = refs.count >= 4 && refs.first == refs.last
            if Self.isHouse(tags), closed { houses.append(PendingHouse(osm: "way/\(id)", tags: tags, shape: .way(refs))) }
            if let name = Self.name(tags) {
                if tags["highway"] != nil, refs.count > 1 { streetWays.append(StreetWay(id: id, name: name, names: Self.names(tags), refs: refs)) }
                if closed, let level = Self.polygonLevel(tags) {
                    polygons.append(PendingPolygon(osm: "way/\(id)", level: level, name: name, names: Self.names(tags), shape: .way(refs)))
                }
            }
        case .relation(let id, let tags, let members):
            let outer = members.filter { $0.type == "way" && ($0.role == "outer" || $0.role.isEmpty) }.map(\.ref)
            if Self.isHouse(tags), tags["type"] == "multipolygon" {
                houses.append(PendingHouse(osm: "relation/\(id)", tags: tags, shape: .relation(outer: outer)))
            }
            if let name = Self.name(tags), tags["type"] == "multipolygon" || tags["type"] == "boundary", let level = Self.polygonLevel(tags) {
                let label = members.first { $0.type == "node" && ($0.role == "label" || $0.role == "admin_centre") }?.ref
                polygons.append(
                    PendingPolygon(osm: "relation/\(id)", level: level, name: name, names: Self.names(tags), shape: .relation(outer: outer), label: label))
            }
        }
    }

    /// Places what was collected, areas first, then streets, postcodes and houses; elements
    /// whose shape the data lacks are left out.
    mutating func finish() -> [OSMAddress] {
        table.prepareForLookups()
        sortWays()
        var cityPolygons: [Polygon] = []
        var areaPolygons: [Polygon] = []
        var result: [OSMAddress] = []
        // Areas: place nodes, then the polygons no node of the same name lies near.
        var areaEntries: [(osm: String, level: Level, name: String, names: [String: String], point: Point)] = placeNodes.map {
            ($0.osm, $0.level, $0.name, $0.names, $0.point)
        }
        for pending in polygons {
            let rings = self.rings(pending.shape)
            if let polygon = Self.polygon(pending.level, pending.name, rings) {
                if pending.level == .city { cityPolygons.append(polygon) } else { areaPolygons.append(polygon) }
            }
            let labelPoint = pending.label.flatMap(point(of:))
            let largest = rings.max { Self.signedArea($0).magnitude < Self.signedArea($1).magnitude }
            guard let point = labelPoint ?? largest.map(Self.centroid) ?? meanOfNodes(pending.shape) else { continue }
            let named = placeNodes.contains { $0.name == pending.name && Self.metres($0.point, point) < 5_000 }
            if !named { areaEntries.append((pending.osm, pending.level, pending.name, pending.names, point)) }
        }
        // Smallest first: the first polygon around a point is its smallest.
        cityPolygons.sort { $0.area < $1.area }
        areaPolygons.sort { $0.area < $1.area }
        let cityNodes = placeNodes.filter { $0.level == .city }
        let areaNodes = placeNodes.filter { $0.level == .area }
        func city(at point: Point) -> String? {
            Self.around(point, cityPolygons) ?? Self.nearest(point, cityNodes, within: Self.cityNodeReach)
        }
        func area(at point: Point) -> String? {
            Self.around(point, areaPolygons) ?? Self.nearest(point, areaNodes, within: Self.areaNodeReach)
        }
        for entry in areaEntries {
            result.append(
                OSMAddress(
                    kind: .area, osm: entry.osm, area: entry.name, city: entry.level == .city ? nil : city(at: entry.point), names: entry.names,
                    lat: entry.point.lat, lon: entry.point.lon))
        }
        var postcodes: [String: (lat: Double, lon: Double, count: Int, cities: [String: Int])] = [:]
        for house in houses {
            let point: Point?
            switch house.shape {
            case .point(let at): point = at
            case .way, .relation: point = rings(house.shape).max { Self.signedArea($0).magnitude < Self.signedArea($1).magnitude }.map(Self.centroid)
            }
            guard let point else { continue }
            let street = Self.value(house.tags, "addr:street") ?? Self.value(house.tags, "addr:place")
            let postcode = Self.value(house.tags, "addr:postcode").flatMap(Self.postcode)
            // A city is a name: `addr:city=7` is a mistake, and the city is found instead.
            let houseCity = Self.value(house.tags, "addr:city").flatMap { $0.contains(where: \.isLetter) ? $0 : nil } ?? city(at: point)
            result.append(
                OSMAddress(
                    kind: .house, osm: house.osm, housenumber: Self.value(house.tags, "addr:housenumber"), street: street, postcode: postcode,
                    area: Self.value(house.tags, "addr:suburb") ?? area(at: point), city: houseCity, lat: point.lat, lon: point.lon))
            if let postcode {
                var sum = postcodes[postcode] ?? (0, 0, 0, [:])
                (sum.lat, sum.lon, sum.count) = (sum.lat + point.lat, sum.lon + point.lon, sum.count + 1)
                if let houseCity { sum.cities[houseCity, default: 0] += 1 }
                postcodes[postcode] = sum
            }
        }
        for (code, sum) in postcodes.sorted(by: { $0.key < $1.key }) {
            let city = sum.cities.max { $0.value != $1.value ? $0.value < $1.value : $0.key > $1.key }?.key
            let n = Double(sum.count)
            result.append(OSMAddress(kind: .postcode, postcode: code, city: city, lat: sum.lat / n, lon: sum.lon / n))
        }
        for street in streets() {
            result.append(
                OSMAddress(
                    kind: .street, osm: "way/\(street.id)", street: street.name, area: area(at: street.point), city: city(at: street.point),
                    names: street.names, lat: street.point.lat, lon: street.point.lon))
        }
        // Areas, streets, postcodes, then houses: the catalog numbers them in this order, and a
        // geocoder that reads by id meets a name before the houses that bear it.
        let rank: [OSMAddress.Kind: Int] = [.area: 0, .street: 1, .postcode: 2, .house: 3]
        // A point off the Earth (a ring that crosses itself far from the box it lies in) is none.
        result.removeAll { !(-90...90).contains($0.lat) || !(-180...180).contains($0.lon) }
        return result.enumerated().sorted { (rank[$0.element.kind] ?? 4, $0.offset) < (rank[$1.element.kind] ?? 4, $1.offset) }.map(\.element)
    }

    // MARK: Tags

    /// Whether an element is a house: `addr:housenumber` with `addr:street` or `addr:place`.
    private static func isHouse(_ tags: [String: String]) -> Bool {
        value(tags, "addr:housenumber") != nil && (value(tags, "addr:street") ?? value(tags, "addr:place")) != nil
    }

    /// A tag's value, trimmed; none when empty or longer than OpenStreetMap allows (255 characters).
    private static func value(_ tags: [String: String], _ key: String) -> String? {
        guard let text = tags[key]?.trimmingSpaces, !text.isEmpty, text.count <= maxValueCharacters else { return nil }
        return text
    }

    private static func name(_ tags: [String: String]) -> String? { value(tags, "name") }

    private static func names(_ tags: [String: String]) -> [String: String] {
        var names: [String: String] = [:]
        for (key, value) in tags where key.hasPrefix("name:") {
            let language = key.dropFirst(5)
            let text = value.trimmingSpaces
            if OSMCollector.isLanguageCode(language), !text.isEmpty, text.count <= maxValueCharacters { names[String(language)] = text }
        }
        guard names.count > maxNames else { return names }
        return Dictionary(uniqueKeysWithValues: names.sorted { $0.key < $1.key }.prefix(maxNames).map { ($0.key, $0.value) })
    }

    /// The first of `;`-separated postcodes, when it is short enough to be one.
    private static func postcode(_ text: String) -> String? {
        let first = text.split(separator: ";").first.map { String($0).trimmingSpaces } ?? ""
        return first.isEmpty || first.count > maxPostcode ? nil : first
    }

    private static func polygonLevel(_ tags: [String: String]) -> Level? {
        if let place = tags["place"] {
            if cityPlaces.contains(place) { return .city }
            if areaPlaces.contains(place) { return .area }
        }
        guard tags["boundary"] == "administrative", let level = tags["admin_level"] else { return nil }
        return cityAdminLevels.contains(level) ? .city : areaAdminLevels.contains(level) ? .area : nil
    }

    // MARK: Geometry

    private func point(of node: Int64) -> Point? {
        table.coordinate(of: node).map { Point(lat: Double($0.lat) / 1e7, lon: Double($0.lon) / 1e7) }
    }

    /// Ways are found by binary search: sorted once here when they did not come in id order.
    private mutating func sortWays() {
        guard zip(wayIds, wayIds.dropFirst()).contains(where: { $0 >= $1 }) else { return }
        let order = wayIds.indices.sorted { wayIds[$0] < wayIds[$1] }
        var ids: [Int64] = []
        var ends: [Int] = []
        var refs: [Int64] = []
        for index in order {
            ids.append(wayIds[index])
            refs += wayRefs[(index == 0 ? 0 : wayEnds[index - 1])..<wayEnds[index]]
            ends.append(refs.count)
        }
        (wayIds, wayEnds, wayRefs) = (ids, ends, refs)
    }

    private func refs(ofWay id: Int64) -> ArraySlice<Int64>? {
        var (low, high) = (0, wayIds.count)
        while low < high {
            let mid = (low + high) / 2
            if wayIds[mid] < id { low = mid + 1 } else { high = mid }
        }
        guard low < wayIds.count, wayIds[low] == id else { return nil }
        // A way given twice is not known: which copy is meant cannot be told.
        if low + 1 < wayIds.count, wayIds[low + 1] == id { return nil }
        return wayRefs[(low == 0 ? 0 : wayEnds[low - 1])..<wayEnds[low]]
    }

    /// The closed rings of a shape: a closed way's one ring; a relation's outer ways joined end
    /// to end (rings that do not close are left out). None when a node is missing.
    private func rings(_ shape: Shape) -> [[Point]] {
        let pieces: [[Int64]]
        switch shape {
        case .point: return []
        case .way(let refs): pieces = [refs]
        case .relation(let outer): pieces = outer.compactMap { refs(ofWay: $0).map(Array.init) }
        }
        var rings: [[Point]] = []
        for ring in Self.joined(pieces) {
            let points = ring.compactMap(point(of:))
            if points.count == ring.count, points.count >= 4 { rings.append(points) }
        }
        return rings
    }

    /// Ways joined end to end into closed rings (a way may run either way round).
    private static func joined(_ pieces: [[Int64]]) -> [[Int64]] {
        var byEnd: [Int64: [Int]] = [:]
        for (index, piece) in pieces.enumerated() where piece.count > 1 {
            byEnd[piece[0], default: []].append(index)
            byEnd[piece[piece.count - 1], default: []].append(index)
        }
        var used = [Bool](repeating: false, count: pieces.count)
        var rings: [[Int64]] = []
        for start in pieces.indices where !used[start] && pieces[start].count > 1 {
            used[start] = true
            var ring = pieces[start]
            // Each step uses one more piece, so this ends within pieces.count steps.
            while ring.first != ring.last, let last = ring.last,
                let next = byEnd[last]?.first(where: { !used[$0] })
            {
                used[next] = true
                let piece = pieces[next]
                ring += (piece[0] == last ? piece : piece.reversed()).dropFirst()
            }
            if ring.count >= 4, ring.first == ring.last { rings.append(ring) }
        }
        return rings
    }

    /// The mean of the nodes of a shape's ways that the data has (a boundary an extract cut).
    private func meanOfNodes(_ shape: Shape) -> Point? {
        guard case .relation(let outer) = shape else { return nil }
        var (lat, lon, count) = (0.0, 0.0, 0)
        for way in outer {
            for ref in refs(ofWay: way) ?? [] {
                guard let point = point(of: ref) else { continue }
                (lat, lon, count) = (lat + point.lat, lon + point.lon, count + 1)
            }
        }
        return count == 0 ? nil : Point(lat: lat / Double(count), lon: lon / Double(count))
    }

    private static func polygon(_ level: Level, _ name: String, _ rings: [[Point]]) -> Polygon? {
        guard !rings.isEmpty else { return nil }
        let all = rings.joined()
        return Polygon(
            level: level, name: name, rings: rings, area: rings.reduce(0) { $0 + signedArea($1).magnitude },
            south: all.map(\.lat).min() ?? 0, west: all.map(\.lon).min() ?? 0, north: all.map(\.lat).max() ?? 0, east: all.map(\.lon).max() ?? 0)
    }

    /// The signed shoelace area of a closed ring (its first point repeated last), planar on
    /// longitude and latitude in degrees, taken relative to its first point: products of
    /// whole coordinates would cancel to their rounding error for a building's few metres.
    private static func signedArea(_ ring: [Point]) -> Double {
        guard let origin = ring.first else { return 0 }
        var sum = 0.0
        for (a, b) in zip(ring, ring.dropFirst()) {
            sum += (a.lon - origin.lon) * (b.lat - origin.lat) - (b.lon - origin.lon) * (a.lat - origin.lat)
        }
        return sum / 2
    }

    /// The area centroid of a closed ring, planar on longitude and latitude; the mean of its
    /// points when it has no area, or when the centroid falls outside the ring's box (a ring
    /// that crosses itself, whose lobes' areas cancel: the centroid of nearly nothing).
    private static func centroid(_ ring: [Point]) -> Point {
        let distinct = ring.dropLast()
        let n = Double(max(distinct.count, 1))
        let mean = Point(lat: distinct.reduce(0) { $0 + $1.lat } / n, lon: distinct.reduce(0) { $0 + $1.lon } / n)
        let area = signedArea(ring)
        guard let origin = ring.first, area.magnitude >= 1e-14 else { return mean }
        var (x, y) = (0.0, 0.0)
        for (a, b) in zip(ring, ring.dropFirst()) {
            let (ax, ay, bx, by) = (a.lon - origin.lon, a.lat - origin.lat, b.lon - origin.lon, b.lat - origin.lat)
            let cross = ax * by - bx * ay
            x += (ax + bx) * cross
            y += (ay + by) * cross
        }
        let centroid = Point(lat: origin.lat + y / (6 * area), lon: origin.lon + x / (6 * area))
        let inBox =
            centroid.lat >= (ring.map(\.lat).min() ?? 0) && centroid.lat <= (ring.map(\.lat).max() ?? 0)
            && centroid.lon >= (ring.map(\.lon).min() ?? 0) && centroid.lon <= (ring.map(\.lon).max() ?? 0)
        return inBox ? centroid : mean
    }

    /// The name of the first (smallest) polygon with a ring around `point`.
    private static func around(_ point: Point, _ polygons: [Polygon]) -> String? {
        polygons.first { polygon in
            point.lat >= polygon.south && point.lat <= polygon.north && point.lon >= polygon.west && point.lon <= polygon.east
                && polygon.rings.contains { inside(point, $0) }
        }?.name
    }

    /// Ray casting: whether `point` lies inside a closed ring.
    private static func inside(_ point: Point, _ ring: [Point]) -> Bool {
        var inside = false
        for (a, b) in zip(ring, ring.dropFirst()) where (a.lat > point.lat) != (b.lat > point.lat) {
            let lon = a.lon + (point.lat - a.lat) / (b.lat - a.lat) * (b.lon - a.lon)
            if point.lon < lon { inside.toggle() }
        }
        return inside
    }

    private static func nearest(_ point: Point, _ nodes: [PlaceNode], within reach: Double) -> String? {
        var best: (name: String, metres: Double)?
        for node in nodes {
            let metres = metres(point, node.point)
            if metres <= reach, metres < best?.metres ?? .infinity { best = (node.name, metres) }
        }
        return best?.name
    }

    private static func metres(_ a: Point, _ b: Point) -> Double {
        Coordinate(uncheckedLatitude: a.lat, longitude: a.lon).distance(to: Coordinate(uncheckedLatitude: b.lat, longitude: b.lon))
    }

    // MARK: Streets

    /// Named highways as streets: the ways of one name that share nodes are one street, placed
    /// at its node nearest the mean of its nodes (so the point lies on it).
    private func streets() -> [(id: Int64, name: String, names: [String: String], point: Point)] {
        // Union-find over the ways, joined where two of one name share a node.
        var parent = Array(streetWays.indices)
        func root(_ i: Int) -> Int {
            var i = i
            while parent[i] != i {
                parent[i] = parent[parent[i]]
                i = parent[i]
            }
            return i
        }
        var firstAt: [String: [Int64: Int]] = [:]
        for (index, way) in streetWays.enumerated() {
            for ref in way.refs {
                if let other = firstAt[way.name]?[ref] {
                    let (a, b) = (root(index), root(other))
                    if a != b { parent[a] = b }
                } else {
                    firstAt[way.name, default: [:]][ref] = index
                }
            }
        }
        // Pieces of one name that do not touch but lie close (the two carriageways of an
        // avenue, a street the extract's edge cut) are one street too.
        var boxes: [Int: (name: String, south: Double, west: Double, north: Double, east: Double)] = [:]
        for (index, way) in streetWays.enumerated() {
            for point in way.refs.compactMap(point(of:)) {
                let r = root(index)
                let box = boxes[r] ?? (way.name, point.lat, point.lon, point.lat, point.lon)
                boxes[r] = (box.name, min(box.south, point.lat), min(box.west, point.lon), max(box.north, point.lat), max(box.east, point.lon))
            }
        }
        for pieces in Dictionary(grouping: boxes.keys.sorted(), by: { boxes[$0]?.name ?? "" }).values where pieces.count > 1 {
            for (i, first) in pieces.enumerated() {
                for second in pieces[(i + 1)...] {
                    // The streets the two pieces are part of by now, and their boxes.
                    let (a, b) = (root(first), root(second))
                    guard a != b, let x = boxes[a], let y = boxes[b] else { continue }
                    let gap = max(x.south - y.north, y.south - x.north, x.west - y.east, y.west - x.east)
                    let joined = (x.name, min(x.south, y.south), min(x.west, y.west), max(x.north, y.north), max(x.east, y.east))
                    // Close, and not so long together that villages' streets of one name chain up.
                    guard gap < Self.streetPieceGap, joined.3 - joined.1 <= Self.streetSpan, joined.4 - joined.2 <= Self.streetSpan else { continue }
                    parent[a] = b
                    boxes[b] = joined
                }
            }
        }
        var groups: [Int: [Int]] = [:]
        for index in streetWays.indices { groups[root(index), default: []].append(index) }
        var result: [(id: Int64, name: String, names: [String: String], point: Point)] = []
        for members in groups.values {
            let points = members.flatMap { streetWays[$0].refs.compactMap(point(of:)) }
            guard !points.isEmpty else { continue }
            let n = Double(points.count)
            let mean = Point(lat: points.reduce(0) { $0 + $1.lat } / n, lon: points.reduce(0) { $0 + $1.lon } / n)
            let cosLat = cos(mean.lat * .pi / 180)
            func squared(_ p: Point) -> Double {
                (p.lat - mean.lat) * (p.lat - mean.lat) + (p.lon - mean.lon) * (p.lon - mean.lon) * cosLat * cosLat
            }
            guard let closest = points.min(by: { squared($0) < squared($1) }),
                let first = members.min(by: { streetWays[$0].id < streetWays[$1].id })
            else { continue }
            var names: [String: String] = [:]
            for member in members {
                for (language, name) in streetWays[member].names.sorted(by: { $0.key < $1.key }) where names.count < Self.maxNames && names[language] == nil {
                    names[language] = name
                }
            }
            result.append((streetWays[first].id, streetWays[first].name, names, closest))
        }
        return result.sorted { $0.id < $1.id }
    }
}
