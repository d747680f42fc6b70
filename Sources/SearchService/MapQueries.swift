import Bus
import Contracts
import Foundation
import Geo
import ServiceKit
import Storage

/// Map searches over the R*Tree: candidates from the box, exact checks and ordering in Swift.
struct MapQueries {
    let db: Database
    /// The catalog's category ids, when known.
    var knownCategories: Set<String>? = nil
    /// The copy nearest-first searches without filters read, when the service keeps one.
    var memory: NearbyMemory? = nil
    /// A nearby query's point, page size and cursor, checked (its point and radius are in
    /// range: the params' rules held them, or the span reader did).
    private func checked(_ q: NearbyQuery) throws -> (center: Coordinate, limit: Int, after: SearchCursor?) {
        let center = q.near.coordinate
        let limit = try MapQueries.limit(q.limit)
        try q.filters.validate(knownCategories: knownCategories)
        return (center, limit, try q.cursor.map(SearchCursor.decode))
    }

    /// Whether a hit at `distance` comes after the last page's end.
    private static func accepts(_ id: Int64, _ distance: Double, after: SearchCursor?) -> Bool {
        guard let after else { return true }
        return distance > after.key || (distance == after.key && id > after.id)
    }

    /// The reply body of `search.nearby` from `memory`, when it answers `q` (see
    /// `answersFromMemory`); it reads nothing of the index, so it needs no transaction.
    func nearbyFromMemory(_ q: NearbyQuery) throws -> Data? {
        guard answersFromMemory(q), let memory else { return nil }
        let (center, limit, after) = try checked(q)
        return memory.nearest(
            center, within: q.radiusM, want: limit + 1, accept: { MapQueries.accepts($0, $1, after: after) },
            page: { MapQueries.page($0, limit: limit, after: after) })
    }

    /// The reply body of `search.nearby`, a `SearchPage`: from memory when it answers, else
    /// from the index.
    func nearby(_ q: NearbyQuery) throws -> Data {
        try nearbyFromMemory(q) ?? nearbyFromIndex(q)
    }

    /// The reply body of `search.nearby` from the index: nearest first (the default) written
    /// from the hits' stored JSON (`HitJSON`), the other sorts encoded.
    func nearbyFromIndex(_ q: NearbyQuery) throws -> Data {
        let (center, limit, after) = try checked(q)
        switch q.sort ?? .distance {
        case .distance:
            // Nearest first: rings from the centre (or from the last page's end) until the page fills.
            let found = try nearest(center, within: q.radiusM, want: limit + 1, from: after?.key ?? 0, q.filters) { place in
                MapQueries.accepts(place.id, place.coordinate.distance(to: center), after: after)
            }
            let (page, next) = MapQueries.page(found.map { ($0.distance, $0.id) }, limit: limit, after: after)
            // Names in a language are chosen per query: those hits are encoded, not copied.
            if let lang = q.lang {
                return try JSONCoding.encoder.encode(SearchPage(hits: try hits(ids: page.map(\.id), from: center, lang: lang), nextCursor: next))
            }
            return try hitJSON(page, next: next)
        case .popularity:
            let box: BoundingBox
            box = try BoundingBox.around(center, radiusMeters: q.radiusM)
            let found = try mostPopular(in: box, want: limit + 1, after: after, q.filters) { $0.coordinate.distance(to: center) <= q.radiusM }
            let (page, next) = MapQueries.page(found.map { (-$0.popularity, $0.id) }, limit: limit, after: after)
            return try JSONCoding.encoder.encode(SearchPage(hits: try hits(ids: page.map(\.id), from: center, lang: q.lang), nextCursor: next))
        case .rating:
            let hits = try within(q.radiusM, of: center, q.filters)
            return try JSONCoding.encoder.encode(try localized(MapQueries.page(hits, limit: limit, after: after) { MapQueries.key($0, .rating) }, q.lang))
        }
    }

    /// Whether `memory` answers `q` (when it is filled and the point is not near a pole):
    /// nearest first, without filters.
    func answersFromMemory(_ q: NearbyQuery) -> Bool {
        memory != nil && q.lang == nil && (q.sort ?? .distance) == .distance && !MapQueries.judgesInSQL(q.filters) && q.filters.openNow != true
    }

    /// A page of hits written from their stored JSON, each with its distance (the key of a
    /// page nearest first), in this order.
    private func hitJSON(_ page: [(key: Double, id: Int64)], next: String?) throws -> Data {
        var writer = HitPageWriter()
        let sql = "SELECT p.hit_head, p.hit_tail, r.average, r.count FROM places p LEFT JOIN ratings r ON r.place_id = p.id WHERE p.id = ?"
        var columns: (head: Column, tail: Column, average: Column, count: Column)?
        for (distance, id) in page {
            try db.stepWhile(sql, [id]) { statement in
                let c = try columns ?? (statement.column("hit_head"), statement.column("hit_tail"), statement.column("average"), statement.column("count"))
                columns = c
                try statement.requireText(c.head)
                try statement.requireText(c.tail)
                let rating = try statement.optionalDouble(c.average).map { (average: $0, count: try statement.int64(c.count)) }
                statement.withUTF8(c.head.index) { head in
                    statement.withUTF8(c.tail.index) { tail in writer.append(head: head, tail: tail, distance: distance, rating: rating) }
                }
                return false
            }
        }
        return writer.finish(nextCursor: next)
    }

    /// Every place within `radius` metres of `center` that passes the filters, with its distance.
    private func within(_ radius: Double, of center: Coordinate, _ filters: PlaceFilters) throws -> [SearchHit] {
        let box: BoundingBox
        box = try BoundingBox.around(center, radiusMeters: radius)
        var hits: [SearchHit] = []
        for part in box.indexAreas {
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
        let box = try q.bbox.boundingBox(field: "bbox")
        guard box.widthDegrees <= 180 else { throw ServiceError.invalid("bbox.east", "the box may be at most 180 degrees wide") }
        let sort = q.sort ?? .popularity
        guard sort != .distance else { throw ServiceError.invalid("sort", "a viewport has no point to measure distance from; use rating or popularity") }
        let limit = try MapQueries.limit(q.limit)
        try q.filters.validate(knownCategories: knownCategories)
        let after = try q.cursor.map(SearchCursor.decode)
        var hits: [SearchHit] = []
        if sort == .popularity {
            // The most popular first, read band by band of popularity: a dense box holds thousands.
            // Paged by the popularity ranked (the blend), which the hits do not show.
            let found = try mostPopular(in: box, want: limit + 1, after: after, q.filters) { box.contains($0.coordinate) }
            let (page, next) = MapQueries.page(found.map { (-$0.popularity, $0.id) }, limit: limit, after: after)
            return SearchPage(hits: try self.hits(ids: page.map(\.id), lang: q.lang), nextCursor: next)
        } else {
            for part in box.indexAreas {
                if q.filters.openNow == true {
                    // Opening hours are judged in Swift, so SQL cannot cut the page.
                    hits += try candidates(in: part, q.filters).filter { box.contains(Coordinate(uncheckedLatitude: $0.lat, longitude: $0.lon)) }
                } else {
                    hits += try firstPage(in: part, q.filters, after: after, limit: limit)
                }
            }
        }
        return try localized(MapQueries.page(hits, limit: limit, after: after) { MapQueries.key($0, sort) }, q.lang)
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
        return try MapQueries.hits(db.query(sql, args))
    }

    static func limit(_ requested: Int?) throws(ServiceError) -> Int { try PageLimit.searchHits.validated(requested) }

    /// Places whose indexed point lies in `box` (which does not cross the antimeridian) and pass the filters.
    private func candidates(in box: BoundingBox, _ filters: PlaceFilters) throws -> [SearchHit] {
        var sql = """
            SELECT \(MapQueries.hitColumns), p.opening_hours, p.timezone
            FROM places_geo g JOIN places p ON p.id = g.id LEFT JOIN ratings r ON r.place_id = p.id
            WHERE g.min_lat >= ? AND g.max_lat <= ? AND g.min_lon >= ? AND g.max_lon <= ?
            """
        var args = MapQueries.bounds(box)
        MapQueries.appendFilters(filters, to: &sql, &args)
        return try MapQueries.hits(MapQueries.openFilter(filters, db.query(sql, args)))
    }

    /// The hits of these places, in this order, with their distances from `center` when given,
    /// named in `lang` when given.
    func hits(ids: [Int64], from center: Coordinate? = nil, lang: LanguagePreference? = nil) throws -> [SearchHit] {
        try localized(hits(ids: ids, from: center), lang)
    }

    /// The page with its hits named in `lang` (unchanged without one).
    func localized(_ page: SearchPage, _ lang: LanguagePreference?) throws -> SearchPage {
        SearchPage(hits: try localized(page.hits, lang), nextCursor: page.nextCursor)
    }

    /// Each hit's name in `lang` where its `name_i18n` has one along the chain (else its own
    /// name), and `lang` saying which; unchanged without a preference.
    func localized(_ hits: [SearchHit], _ lang: LanguagePreference?) throws -> [SearchHit] {
        guard let lang else { return hits }
        let names = try names(ids: hits.map(\.id))
        return hits.map { hit in
            var hit = hit
            let picked = lang.pick(names[hit.id])
            hit.name = picked?.value ?? hit.name
            hit.lang = TextLanguages(name: picked?.tag)
            return hit
        }
    }

    /// The names by language (`name_i18n`) of these index rows that have some.
    func names(ids: [Int64]) throws -> [Int64: [String: String]] {
        guard !ids.isEmpty else { return [:] }
        var names: [Int64: [String: String]] = [:]
        for row in try db.query(
            "SELECT id, name_i18n FROM places WHERE id IN (SELECT value FROM json_each(?)) AND name_i18n IS NOT NULL",
            MapQueries.jsonArray(ids))
        {
            let text: String = try row.decode("name_i18n")
            names[try row.decode("id")] = try JSONCoding.decoder.decode([String: String].self, from: Data(text.utf8))
        }
        return names
    }

    private func hits(ids: [Int64], from center: Coordinate?) throws -> [SearchHit] {
        guard !ids.isEmpty else { return [] }
        let rows = try db.query(
            """
            SELECT \(MapQueries.hitColumns)
            FROM places p LEFT JOIN ratings r ON r.place_id = p.id
            WHERE p.id IN (SELECT value FROM json_each(?))
            """, MapQueries.jsonArray(ids))
        var byId: [Int64: SearchHit] = [:]
        for var hit in try MapQueries.hits(rows) {
            hit.distanceM = center.map { Coordinate(uncheckedLatitude: hit.lat, longitude: hit.lon).distance(to: $0) }
            byId[hit.id] = hit
        }
        return ids.compactMap { byId[$0] }
    }

    /// The sort key of a hit: smaller comes first. Not for popularity, which a hit shows as the
    /// catalog's and is ranked by the blend (`Popularity`): that sort pages (key, id) pairs read
    /// from the index instead.
    static func key(_ hit: SearchHit, _ sort: SearchSort) -> Double {
        switch sort {
        case .distance: hit.distanceM ?? 0
        case .rating: -(hit.rating ?? -1)
        case .popularity: -hit.popularity
        }
    }

    /// Orders hits by (key, id), skips those up to the cursor, and cuts a page.
    static func page(_ hits: [SearchHit], limit: Int, after: SearchCursor?, key: (SearchHit) -> Double) -> SearchPage {
        let byId = Dictionary(hits.map { ($0.id, $0) }, uniquingKeysWith: { a, _ in a })
        let (page, next) = page(hits.map { (key($0), $0.id) }, limit: limit, after: after)
        return SearchPage(hits: page.compactMap { byId[$0.id] }, nextCursor: next)
    }

    /// Orders (key, id) pairs, skips those up to the cursor, and cuts a page: its pairs, and the next page's cursor.
    static func page(_ items: [(key: Double, id: Int64)], limit: Int, after: SearchCursor?) -> (page: [(key: Double, id: Int64)], next: String?) {
        var keyed = items
        if let after {
            keyed = keyed.filter { $0.key > after.key || ($0.key == after.key && $0.id > after.id) }
        }
        keyed.sort { $0.key != $1.key ? $0.key < $1.key : $0.id < $1.id }
        let page = keyed.prefix(limit)
        let next = keyed.count > limit ? page.last.map { SearchCursor(key: $0.key, id: $0.id).encoded } : nil
        return (Array(page), next)
    }
}
