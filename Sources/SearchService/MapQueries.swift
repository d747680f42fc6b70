import Bus
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
    static let maxLimit = 50, defaultLimit = 20
    static let maxRadius = 50_000.0

    func nearby(_ q: NearbyQuery) throws -> SearchPage {
        let center: Coordinate
        do { center = try Coordinate(latitude: q.lat, longitude: q.lon) } catch { throw error.serviceError }
        guard q.radiusM.isFinite, q.radiusM >= 1, q.radiusM <= MapQueries.maxRadius else {
            throw ServiceError.invalid("radius_m", "must be 1 to 50000 metres")
        }
        let sort = q.sort ?? .distance
        let limit = try MapQueries.limit(q.limit)
        try q.filters.validate(knownCategories: knownCategories)
        let after = try q.cursor.map(SearchCursor.decode)
        guard sort == .distance else {
            let hits = try within(q.radiusM, of: center, q.filters)
            return MapQueries.page(hits, limit: limit, after: after) { MapQueries.key($0, sort) }
        }
        // Nearest first needs only the ring that holds the next page: start small and widen
        // fourfold until the page fills or the radius is reached. Every place within r of
        // the centre is in the box of r, so a full page inside r is the right page.
        let start = after?.key ?? 0
        // Start near the size a dense city centre needs (tens of metres): an empty ring costs one
        // cheap R*Tree probe, an overfull one costs sorting thousands of places.
        var reach = min(q.radiusM, max(25, start * 1.25 + 25))
        while true {
            let hits = try within(reach, of: center, q.filters)
            let page = MapQueries.page(hits, limit: limit, after: after) { $0.distanceM ?? 0 }
            if reach >= q.radiusM { return page }
            if page.hits.count == limit {
                // More may lie beyond the ring: the cursor still holds, the next page widens again.
                var full = page
                full.nextCursor = page.hits.last.map { SearchCursor(key: $0.distanceM ?? 0, id: $0.id).encoded }
                return full
            }
            reach = min(q.radiusM, reach * 4)
        }
    }

    /// Every place within `radius` metres of `center` that passes the filters, with its distance.
    private func within(_ radius: Double, of center: Coordinate, _ filters: PlaceFilters) throws -> [SearchHit] {
        let box: BoundingBox
        do { box = try BoundingBox.around(center, radiusMeters: radius) } catch { throw error.serviceError }
        var hits: [SearchHit] = []
        for part in box.parts {
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
        do { box = try BoundingBox(south: q.south, west: q.west, north: q.north, east: q.east) } catch { throw error.serviceError }
        guard box.widthDegrees <= 180 else { throw ServiceError.invalid("east", "the box may be at most 180 degrees wide") }
        let sort = q.sort ?? .popularity
        guard sort != .distance else { throw ServiceError.invalid("sort", "a viewport has no point to measure distance from; use rating or popularity") }
        let limit = try MapQueries.limit(q.limit)
        try q.filters.validate(knownCategories: knownCategories)
        let after = try q.cursor.map(SearchCursor.decode)
        var hits: [SearchHit] = []
        for part in box.parts {
            if q.filters.openNow == true {
                // Opening hours are judged in Swift, so SQL cannot cut the page.
                hits += try candidates(in: part, q.filters).filter { box.contains(Coordinate(uncheckedLatitude: $0.lat, longitude: $0.lon)) }
            } else {
                hits += try firstPage(in: part, q.filters, sort: sort, after: after, limit: limit)
            }
        }
        return MapQueries.page(hits, limit: limit, after: after) { MapQueries.key($0, sort) }
    }

    /// The first `limit + 1` places of a box part after the cursor, ordered by SQLite, so only
    /// they become hits (a dense box holds thousands). The box is checked exactly here.
    private func firstPage(in part: BoundingBox, _ filters: PlaceFilters, sort: SortOrder, after: SearchCursor?, limit: Int) throws -> [SearchHit] {
        let key = sort == .rating ? "COALESCE(r.average, -1)" : "p.popularity"
        var sql = """
            SELECT \(MapQueries.hitColumns)
            FROM places_geo g JOIN places p ON p.id = g.id LEFT JOIN ratings r ON r.place_id = p.id
            WHERE g.min_lat >= ? AND g.max_lat <= ? AND g.min_lon >= ? AND g.max_lon <= ?
              AND p.lat >= ? AND p.lat <= ? AND (p.lon BETWEEN ? AND ? OR p.lon = ? OR p.lon = ?)
            """
        // -180 and 180 are one meridian: a part reaching either takes points on the other.
        var args = MapQueries.bounds(part) + [part.south, part.north, part.west, part.east,
                                              part.east == 180 ? -180.0 : part.west, part.west == -180 ? 180.0 : part.east]
        MapQueries.appendFilters(filters, to: &sql, &args)
        if let after {
            // Keys are negated values (higher first); the cursor holds the key exactly.
            sql += " AND (\(key) < ? OR (\(key) = ? AND p.id > ?))"
            args += [-after.key, -after.key, after.id]
        }
        sql += " ORDER BY \(key) DESC, p.id LIMIT \(limit + 1)"
        return try db.query(sql, args).map(MapQueries.hit)
    }

    static func limit(_ requested: Int?) throws(ServiceError) -> Int {
        let limit = requested ?? defaultLimit
        guard (1...maxLimit).contains(limit) else { throw .invalid("limit", "must be 1 to \(maxLimit)") }
        return limit
    }

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

    /// Ids of the places whose point lies in `box` (which does not cross the antimeridian).
    func ids(in box: BoundingBox) throws -> [Int64] {
        try db.query("SELECT id FROM places_geo WHERE min_lat >= ? AND max_lat <= ? AND min_lon >= ? AND max_lon <= ?",
                     MapQueries.bounds(box)).compactMap { $0.int(0) }
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
        var keyed = hits.map { (key: key($0), hit: $0) }
        if let after {
            keyed = keyed.filter { $0.key > after.key || ($0.key == after.key && $0.hit.id > after.id) }
        }
        keyed.sort { $0.key != $1.key ? $0.key < $1.key : $0.hit.id < $1.hit.id }
        let page = keyed.prefix(limit)
        let next = keyed.count > limit ? page.last.map { SearchCursor(key: $0.key, id: $0.hit.id).encoded } : nil
        return SearchPage(hits: page.map(\.hit), nextCursor: next)
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
