import Bus
import Contracts
import Foundation
import Geo
import Storage

/// One search result: the place summary, and its distance when the query had a point.
public struct SearchHit: Codable, Sendable, Equatable {
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

    enum CodingKeys: String, CodingKey {
        case id, name, category, address, lat, lon, popularity, rating
        case priceLevel = "price_level"
        case reviewCount = "review_count"
        case distanceM = "distance_m"
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
public struct NearbyQuery: Decodable, Sendable {
    public var lat: Double
    public var lon: Double
    public var radiusM: Double
    public var filters: PlaceFilters
    public var sort: SortOrder?
    public var limit: Int?
    public var cursor: String?

    enum CodingKeys: String, CodingKey {
        case lat, lon, sort, limit, cursor
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
        filters = try PlaceFilters(from: decoder)
    }
}

/// `search.viewport`: places inside a map box (west > east crosses the 180th meridian).
public struct ViewportQuery: Decodable, Sendable {
    public var south: Double
    public var west: Double
    public var north: Double
    public var east: Double
    public var filters: PlaceFilters
    public var sort: SortOrder?
    public var limit: Int?
    public var cursor: String?

    enum CodingKeys: String, CodingKey {
        case south, west, north, east, sort, limit, cursor
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

/// Map searches over the R*Tree: candidates from the box, exact checks and ordering in Swift.
struct MapQueries {
    let db: Database
    /// The catalog's category ids, when known.
    var knownCategories: Set<String>? = nil
    /// Page sizes of `search.nearby`, `search.viewport` and `search.text`.
    static let pageLimit = PageLimit(default: 20, max: 50)
    static let maxRadius = 50_000.0

    func nearby(_ q: NearbyQuery) throws -> SearchPage {
        let center: Coordinate
        center = try Coordinate(latitude: q.lat, longitude: q.lon)
        guard q.radiusM.isFinite, q.radiusM >= 1, q.radiusM <= MapQueries.maxRadius else {
            throw ServiceError.invalid("radius_m", "must be 1 to 50000 metres")
        }
        let sort = q.sort ?? .distance
        let limit = try MapQueries.limit(q.limit)
        try q.filters.validate(knownCategories: knownCategories)
        let after = try q.cursor.map(SearchCursor.decode)
        switch sort {
        case .distance:
            // Nearest first: rings from the centre (or from the last page's end) until the page fills.
            let found = try nearest(center, within: q.radiusM, want: limit + 1, from: after?.key ?? 0, q.filters) { place in
                guard let after else { return true }
                let d = place.coordinate.distance(to: center)
                return d > after.key || (d == after.key && place.id > after.id)
            }
            let (ids, next) = MapQueries.page(found.map { ($0.distance, $0.id) }, limit: limit, after: after)
            return SearchPage(hits: try hits(ids: ids, from: center), nextCursor: next)
        case .popularity:
            let box: BoundingBox
            box = try BoundingBox.around(center, radiusMeters: q.radiusM)
            let found = try mostPopular(in: box, want: limit + 1, after: after, q.filters) { $0.coordinate.distance(to: center) <= q.radiusM }
            let (ids, next) = MapQueries.page(found.map { (-$0.popularity, $0.id) }, limit: limit, after: after)
            return SearchPage(hits: try hits(ids: ids, from: center), nextCursor: next)
        case .rating:
            let hits = try within(q.radiusM, of: center, q.filters)
            return MapQueries.page(hits, limit: limit, after: after) { MapQueries.key($0, sort) }
        }
    }

    /// Every place within `radius` metres of `center` that passes the filters, with its distance.
    private func within(_ radius: Double, of center: Coordinate, _ filters: PlaceFilters) throws -> [SearchHit] {
        let box: BoundingBox
        box = try BoundingBox.around(center, radiusMeters: radius)
        var hits: [SearchHit] = []
        for part in MapQueries.areas(box) {
            for var hit in try candidates(in: part, filters) {
                let d = Coordinate(uncheckedLatitude: hit.lat, longitude: hit.lon).distance(to: center)
                guard d <= radius else { continue }
                hit.distanceM = d
                hits.append(hit)
            }
        }
        return hits
    }

    func viewport(_ q: ViewportQuery) throws -> SearchPage {
        for (value, field, range) in [(q.south, "south", -90.0...90.0), (q.north, "north", -90.0...90.0),
                                      (q.west, "west", -180.0...180.0), (q.east, "east", -180.0...180.0)] {
            guard value.isFinite, range.contains(value) else { throw ServiceError.invalid(field, "must be a number in [\(Int(range.lowerBound)), \(Int(range.upperBound))]") }
        }
        guard q.south <= q.north else { throw ServiceError.invalid("south", "must not be north of north") }
        let box: BoundingBox
        box = try BoundingBox(south: q.south, west: q.west, north: q.north, east: q.east)
        guard box.widthDegrees <= 180 else { throw ServiceError.invalid("east", "the box may be at most 180 degrees wide") }
        let sort = q.sort ?? .popularity
        guard sort != .distance else { throw ServiceError.invalid("sort", "a viewport has no point to measure distance from; use rating or popularity") }
        let limit = try MapQueries.limit(q.limit)
        try q.filters.validate(knownCategories: knownCategories)
        let after = try q.cursor.map(SearchCursor.decode)
        var hits: [SearchHit] = []
        if sort == .popularity {
            // The most popular first, read band by band of popularity: a dense box holds thousands.
            hits = try self.hits(ids: mostPopular(in: box, want: limit + 1, after: after, q.filters) { box.contains($0.coordinate) }.map(\.id))
        } else {
            for part in MapQueries.areas(box) {
                if q.filters.openNow == true {
                    // Opening hours are judged in Swift, so SQL cannot cut the page.
                    hits += try candidates(in: part, q.filters).filter { box.contains(Coordinate(uncheckedLatitude: $0.lat, longitude: $0.lon)) }
                } else {
                    hits += try firstPage(in: part, q.filters, after: after, limit: limit)
                }
            }
        }
        return MapQueries.page(hits, limit: limit, after: after) { MapQueries.key($0, sort) }
    }

    /// The first `limit + 1` places of a box part by rating after the cursor, ordered by SQLite,
    /// so only they become hits. The box is checked exactly here.
    private func firstPage(in part: BoundingBox, _ filters: PlaceFilters, after: SearchCursor?, limit: Int) throws -> [SearchHit] {
        let key = "COALESCE(r.average, -1)"
        var sql = """
            SELECT \(MapQueries.hitColumns)
            FROM places_geo g JOIN places p ON p.id = g.id LEFT JOIN ratings r ON r.place_id = p.id
            WHERE g.min_lat >= ? AND g.max_lat <= ? AND g.min_lon >= ? AND g.max_lon <= ?
              AND p.lat >= ? AND p.lat <= ? AND p.lon BETWEEN ? AND ?
            """
        var args = MapQueries.bounds(part) + [part.south, part.north, part.west, part.east]
        MapQueries.appendFilters(filters, to: &sql, &args)
        if let after {
            // Keys are negated values (higher first); the cursor holds the key exactly.
            sql += " AND (\(key) < ? OR (\(key) = ? AND p.id > ?))"
            args += [-after.key, -after.key, after.id]
        }
        sql += " ORDER BY \(key) DESC, p.id LIMIT \(limit + 1)"
        return try db.query(sql, args).map(MapQueries.hit)
    }

    static func limit(_ requested: Int?) throws(ServiceError) -> Int { try pageLimit.validated(requested) }

    /// Places whose indexed point lies in `box` (which does not cross the antimeridian) and pass the filters.
    private func candidates(in box: BoundingBox, _ filters: PlaceFilters) throws -> [SearchHit] {
        var sql = """
            SELECT \(MapQueries.hitColumns), p.opening_hours, p.timezone
            FROM places_geo g JOIN places p ON p.id = g.id LEFT JOIN ratings r ON r.place_id = p.id
            WHERE g.min_lat >= ? AND g.max_lat <= ? AND g.min_lon >= ? AND g.max_lon <= ?
            """
        var args = MapQueries.bounds(box)
        MapQueries.appendFilters(filters, to: &sql, &args)
        return try MapQueries.openFilter(filters, db.query(sql, args)).map(MapQueries.hit)
    }

    /// Keeps the rows (with opening_hours and timezone in columns 10 and 11) that are open now, when asked.
    static func openFilter(_ filters: PlaceFilters, _ rows: [Row], at now: Date = Date()) -> [Row] {
        guard filters.openNow == true else { return rows }
        return rows.filter { OpeningHours.isOpen(hoursJSON: $0.string(10), timezone: $0.string(11), at: now) }
    }

    /// A place read to decide whether it is a candidate, before any of it is copied: a row of
    /// `Probe.columns`, valid only inside the call it is lent to.
    struct Probe {
        /// What a probe reads; opening hours only when asked, so `places_by_strip` covers the rest.
        static func columns(_ filters: PlaceFilters) -> String {
            "p.id, p.lat, p.lon, p.popularity, r.average, p.name_words, p.other_words" + (filters.openNow == true ? ", p.opening_hours, p.timezone" : "")
        }
        let statement: Statement

        var id: Int64 { statement.int64(0) }
        var coordinate: Coordinate { Coordinate(uncheckedLatitude: statement.double(1), longitude: statement.double(2)) }
        var popularity: Double { statement.double(3) }
        var rating: Double? { statement.value(4).realValue }
        /// The folded words of the name, and of the category, address and description.
        func withWords<Result>(_ body: (_ name: UnsafeBufferPointer<UInt8>, _ other: UnsafeBufferPointer<UInt8>) -> Result) -> Result {
            statement.withUTF8(5) { name in statement.withUTF8(6) { other in body(name, other) } }
        }
        /// Whether the place is open now by its hours in its own time zone.
        var isOpenNow: Bool {
            OpeningHours.isOpen(hoursJSON: statement.value(7).textValue, timezone: statement.value(8).textValue, at: Date())
        }
    }

    /// Calls `accept` with each place of `places p` (joined with `ratings r`) meeting
    /// `conditions` and the filters; open now is judged here when asked.
    private func probe(from: String, where conditions: String, _ conditionArgs: [SQLBindable?], _ filters: PlaceFilters,
                       _ accept: (Probe) -> Void) throws {
        var sql = "SELECT \(Probe.columns(filters)) FROM \(from) LEFT JOIN ratings r ON r.place_id = p.id WHERE \(conditions)"
        var args = conditionArgs
        MapQueries.appendFilters(filters, to: &sql, &args)
        try db.forEachStep(sql, args) { statement in
            let probe = Probe(statement: statement)
            if filters.openNow == true, !probe.isOpenNow { return }
            accept(probe)
        }
    }

    /// Ids as a JSON array, for `json_each(?)`.
    static func jsonArray(_ ids: [Int64]) -> String { "[" + ids.map(String.init).joined(separator: ",") + "]" }

    /// Probes the places with these ids.
    func probe(ids: [Int64], _ filters: PlaceFilters, _ accept: (Probe) -> Void) throws {
        guard !ids.isEmpty else { return }
        try probe(from: "places p", where: "p.id IN (SELECT value FROM json_each(?))",
                  [MapQueries.jsonArray(ids)], filters, accept)
    }

    /// The hits of these places, in this order, with their distances from `center` when given.
    func hits(ids: [Int64], from center: Coordinate? = nil) throws -> [SearchHit] {
        guard !ids.isEmpty else { return [] }
        let rows = try db.query("""
            SELECT \(MapQueries.hitColumns)
            FROM places p LEFT JOIN ratings r ON r.place_id = p.id
            WHERE p.id IN (SELECT value FROM json_each(?))
            """, MapQueries.jsonArray(ids))
        var byId: [Int64: SearchHit] = [:]
        for row in rows {
            var hit = MapQueries.hit(row)
            hit.distanceM = center.map { Coordinate(uncheckedLatitude: hit.lat, longitude: hit.lon).distance(to: $0) }
            byId[hit.id] = hit
        }
        return ids.compactMap { byId[$0] }
    }

    static let inBox = "g.min_lat >= ? AND g.max_lat <= ? AND g.min_lon >= ? AND g.max_lon <= ?"

    /// The boxes to read for `box`: its parts (two across the 180th meridian), plus the
    /// meridian itself on the other side when only one side of it is in: -180 and 180 are
    /// one line, but a place is stored at one of them.
    static func areas(_ box: BoundingBox) -> [BoundingBox] {
        var areas = box.parts
        let touchesWest = areas.contains { $0.west == -180 }, touchesEast = areas.contains { $0.east == 180 }
        let meridian: Double? = touchesWest && !touchesEast ? 180 : touchesEast && !touchesWest ? -180 : nil
        if let meridian, let line = try? BoundingBox(south: box.south, west: meridian, north: box.north, east: meridian) { areas.append(line) }
        return areas
    }

    /// The band of `places_by_strip` a latitude falls in (as the index computes it).
    static func strip(_ latitude: Double) -> Int64 { Int64((latitude + 90) * 1000) }
    /// Boxes taller than this many strips are read through the R*Tree instead.
    static let maxStrips: Int64 = 400
    static let fromTree = "places_geo g JOIN places p ON p.id = g.id"

    /// The `want` places nearest `center` within `reach` metres that pass the filters and
    /// that `accept` takes, nearest first (ties by id), with their distances. Reads outward in
    /// widening rings until enough are found: everything within the ring is read, so the
    /// nearest are exact. Each ring is sized from how many the last one found, so little more
    /// is read than the answer needs; a ring read by latitude bands reads the inner ones
    /// again (cheaply, skipped), one read through the R*Tree leaves out what the R*Tree read.
    func nearest(_ center: Coordinate, within reach: Double, want: Int, from start: Double = 0, _ filters: PlaceFilters,
                 accept: (Probe) -> Bool) throws -> [(id: Int64, distance: Double)] {
        var found: [(id: Int64, distance: Double)] = []
        var seen = Set<Int64>()
        var read: [BoundingBox] = []
        func consider(_ place: Probe) {
            guard seen.insert(place.id).inserted else { return }
            let distance = place.coordinate.distance(to: center)
            if distance <= reach, accept(place) { found.append((place.id, distance)) }
        }
        // While a bulk load rebuilds the strips, the R*Tree serves every ring.
        let strips = try db.scalarInt("SELECT 1 FROM sqlite_master WHERE type = 'index' AND name = 'places_by_strip'") != nil
        // A dense city centre holds tens of places within 100 m.
        var ring = min(reach, max(100, start * 1.25))
        while true {
            let box: BoundingBox
            box = try BoundingBox.around(center, radiusMeters: ring)
            let areas = MapQueries.areas(box)
            // Exact bounds, widened by 1e-7 degree (1 cm) so rounding never leaves out a point.
            let widened = areas.map { (south: $0.south - 1e-7, north: $0.north + 1e-7, west: $0.west - 1e-7, east: $0.east + 1e-7) }
            if strips, widened.allSatisfy({ MapQueries.strip($0.north) - MapQueries.strip($0.south) < MapQueries.maxStrips }) {
                // Band by band, in longitude order; what an earlier ring read comes again, cheaply, and is skipped.
                for area in widened {
                    for strip in MapQueries.strip(area.south)...MapQueries.strip(area.north) {
                        try probe(from: "places p INDEXED BY places_by_strip",
                                  where: "p.strip = ? AND p.lon BETWEEN ? AND ? AND p.lat BETWEEN ? AND ?",
                                  [strip, area.west, area.east, area.south, area.north], filters, consider)
                    }
                }
                read = []
            } else {
                // A tall box: the R*Tree, leaving out what earlier rings read through it.
                for area in areas {
                    var conditions = MapQueries.inBox
                    var args = MapQueries.bounds(area)
                    for done in read {
                        conditions += " AND NOT (\(MapQueries.inBox))"
                        args += MapQueries.bounds(done)
                    }
                    try probe(from: MapQueries.fromTree, where: conditions, args, filters, consider)
                }
                read = areas
            }
            let inside = found.lazy.filter { $0.distance <= ring }.count
            if ring >= reach || inside >= want {
                return Array(found.filter { $0.distance <= ring }
                    .sorted { $0.distance != $1.distance ? $0.distance < $1.distance : $0.id < $1.id }
                    .prefix(want))
            }
            // Found grows with the area: aim a little past the radius that should hold `want`.
            let aim = inside == 0 ? ring * 4 : ring * (Double(want) / Double(inside)).squareRoot() * 1.15
            ring = min(reach, min(ring * 4, max(ring * 1.25, aim)))
        }
    }

    /// The `want` most popular places after `after` in `box` (the whole world when nil) that
    /// pass the filters and that `accept` takes, most popular first (ties by id). Finds the
    /// highest popularity there, then reads bands of popularity downward, each twice as deep
    /// as the last, until enough are found: every place above a band's floor is read, so the
    /// order is exact, and a dense box is not read whole for one page.
    func mostPopular(in box: BoundingBox?, want: Int, after: SearchCursor?, _ filters: PlaceFilters,
                     accept: (Probe) -> Bool) throws -> [(id: Int64, popularity: Double)] {
        let areas: [(String, [SQLBindable?])] = box.map { MapQueries.areas($0).map { (MapQueries.inBox + " AND ", MapQueries.bounds($0)) } } ?? [("", [])]
        // Popularities in the R*Tree's hundredths. The cursor's band comes again; the cursor cuts it below.
        let ceiling = after.map { SearchIndex.scaledPopularity(-$0.key) } ?? 2_000_000_000
        func anyAtLeast(_ floor: Int64) throws -> Bool {
            try areas.contains { area, args in
                try db.scalarInt("SELECT 1 FROM places_geo g WHERE \(area)g.max_pop >= ? AND g.min_pop <= ? LIMIT 1",
                                 args + [floor, ceiling]) != nil
            }
        }
        // The highest popularity at or under the ceiling, by halving.
        guard try anyAtLeast(0) else { return [] }
        var low: Int64 = 0, high = ceiling
        while low < high {
            let middle = (low + high + 1) / 2
            if try anyAtLeast(middle) { low = middle } else { high = middle - 1 }
        }
        var found: [(id: Int64, popularity: Double)] = []
        var top = low, depth = max(1, low / 64)
        while true {
            let floor = max(0, top - depth + 1)
            for (area, args) in areas {
                var conditions = area + "g.min_pop >= ? AND g.max_pop <= ?"
                var conditionArgs = args + [floor, top]
                if let after {
                    conditions += " AND (p.popularity < ? OR (p.popularity = ? AND p.id > ?))"
                    conditionArgs += [-after.key, -after.key, after.id]
                }
                try probe(from: MapQueries.fromTree, where: conditions, conditionArgs, filters) { place in
                    if accept(place) { found.append((place.id, place.popularity)) }
                }
            }
            if found.count >= want || floor == 0 { break }
            top = floor - 1
            depth *= 2
        }
        return Array(found.sorted { $0.popularity != $1.popularity ? $0.popularity > $1.popularity : $0.id < $1.id }.prefix(want))
    }

    /// The R*Tree's integer bounds of a box, rounded outward.
    static func bounds(_ box: BoundingBox) -> [SQLBindable?] {
        [Int64((box.south * SearchIndex.scale).rounded(.down)), Int64((box.north * SearchIndex.scale).rounded(.up)),
         Int64((box.west * SearchIndex.scale).rounded(.down)), Int64((box.east * SearchIndex.scale).rounded(.up))]
    }

    /// Adds the filters' conditions to a query over `places p` joined with `ratings r`.
    static func appendFilters(_ filters: PlaceFilters, to sql: inout String, _ args: inout [SQLBindable?]) {
        if let categories = filters.categories, !categories.isEmpty {
            sql += " AND p.category IN (\(Array(repeating: "?", count: categories.count).joined(separator: ",")))"
            args += categories.map { $0 as SQLBindable? }
        }
        if let excluded = filters.excludeCategories, !excluded.isEmpty {
            sql += " AND p.category NOT IN (\(Array(repeating: "?", count: excluded.count).joined(separator: ",")))"
            args += excluded.map { $0 as SQLBindable? }
        }
        if let levels = filters.priceLevels, !levels.isEmpty {
            sql += " AND p.price_level IN (\(Array(repeating: "?", count: levels.count).joined(separator: ",")))"
            args += levels.map { $0 as SQLBindable? }
        }
        if let rating = filters.minRating {
            sql += " AND r.average >= ?"
            args.append(rating)
        }
    }

    /// What every search reads of a place (`places p` joined with `ratings r`), in the order `hit` expects.
    static let hitColumns = "p.id, p.name, p.category, p.address, p.lat, p.lon, p.price_level, p.popularity, r.average, r.count"

    /// A hit from the columns of `hitColumns`.
    static func hit(_ row: Row) -> SearchHit {
        SearchHit(id: row.int(0) ?? 0, name: row.string(1) ?? "", category: row.string(2) ?? "", address: row.string(3),
                  lat: row.double(4) ?? 0, lon: row.double(5) ?? 0, priceLevel: row.int(6).map { Int($0) },
                  popularity: row.double(7) ?? 0, rating: row.double(8), reviewCount: row.int(9).map { Int($0) }, distanceM: nil)
    }

    /// The sort key of a hit: smaller comes first.
    static func key(_ hit: SearchHit, _ sort: SortOrder) -> Double {
        switch sort {
        case .distance: hit.distanceM ?? 0
        case .rating: -(hit.rating ?? -1)
        case .popularity: -hit.popularity
        }
    }

    /// Orders hits by (key, id), skips those up to the cursor, and cuts a page.
    static func page(_ hits: [SearchHit], limit: Int, after: SearchCursor?, key: (SearchHit) -> Double) -> SearchPage {
        let byId = Dictionary(hits.map { ($0.id, $0) }, uniquingKeysWith: { a, _ in a })
        let (ids, next) = page(hits.map { (key($0), $0.id) }, limit: limit, after: after)
        return SearchPage(hits: ids.compactMap { byId[$0] }, nextCursor: next)
    }

    /// Orders (key, id) pairs, skips those up to the cursor, and cuts a page: its ids, and the next page's cursor.
    static func page(_ items: [(key: Double, id: Int64)], limit: Int, after: SearchCursor?) -> (ids: [Int64], next: String?) {
        var keyed = items
        if let after {
            keyed = keyed.filter { $0.key > after.key || ($0.key == after.key && $0.id > after.id) }
        }
        keyed.sort { $0.key != $1.key ? $0.key < $1.key : $0.id < $1.id }
        let page = keyed.prefix(limit)
        let next = keyed.count > limit ? page.last.map { SearchCursor(key: $0.key, id: $0.id).encoded } : nil
        return (page.map(\.id), next)
    }
}

/// Where a page ended: the sort key and id of its last hit, exact to the bit.
struct SearchCursor: Equatable {
    var key: Double
    var id: Int64

    var encoded: String { OpaqueCursor.encode("s1:\(String(key.bitPattern, radix: 16)):\(id)") }

    static func decode(_ cursor: String) throws(ServiceError) -> SearchCursor {
        let parts = try OpaqueCursor.decode(cursor, maxLength: 100).split(separator: ":")
        guard parts.count == 3, parts[0] == "s1", let bits = UInt64(parts[1], radix: 16), let id = Int64(parts[2]) else {
            throw .invalid("cursor", "not a cursor from this service")
        }
        let key = Double(bitPattern: bits)
        guard key.isFinite else { throw .invalid("cursor", "not a cursor from this service") }
        return SearchCursor(key: key, id: id)
    }
}
