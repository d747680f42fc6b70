import Bus
import Contracts
import Foundation
import Geo
import Storage

/// SQL and filter building: the columns read, the filters as SQL, the R*Tree bounds, and reading a place.
extension MapQueries {
    /// Keeps the rows (of `hitColumns` with `p.opening_hours, p.timezone`) that are open now, when asked.
    static func openFilter(_ filters: PlaceFilters, _ rows: [Row], at now: Date = Date()) throws -> [Row] {
        guard filters.openNow == true, let first = rows.first else { return rows }
        let hours = try first.columns.column("opening_hours")
        let zone = try first.columns.column("timezone")
        return try rows.filter { row in
            try OpeningHours.isOpen(hoursJSON: row.decode(hours, as: String.self), timezone: row.decode(zone, as: String?.self), at: now)
        }
    }

    /// A place read to decide whether it is a candidate, before any of it is copied: a row of
    /// `Probe.columns`, valid only inside the call it is lent to.
    struct Probe {
        /// What a probe reads; opening hours only when asked, so `places_by_strip` covers the rest.
        static func columns(_ filters: PlaceFilters) -> String {
            "p.id, p.lat, p.lon, p.popularity, r.average, p.name_words, p.other_words" + (filters.openNow == true ? ", p.opening_hours, p.timezone" : "")
        }

        /// The columns of `Probe.columns`, found by name once per execution of a probe's statement.
        struct Columns {
            let id, lat, lon, popularity, average, nameWords, otherWords: Column
            /// Found only when the probe reads opening hours.
            let openingHours, timezone: Column?

            init(_ statement: Statement, openNow: Bool) throws(RowError) {
                id = try statement.column("id")
                lat = try statement.column("lat")
                lon = try statement.column("lon")
                popularity = try statement.column("popularity")
                average = try statement.column("average")
                nameWords = try statement.column("name_words")
                otherWords = try statement.column("other_words")
                openingHours = openNow ? try statement.column("opening_hours") : nil
                timezone = openNow ? try statement.column("timezone") : nil
            }
        }

        let statement: Statement
        let columns: Columns
        let id: Int64
        let coordinate: Coordinate
        let popularity: Double
        let rating: Double?

        /// Reads the statement's current row, checking every column's type (the words are lent later, unchecked).
        init(statement: Statement, columns: Columns) throws(RowError) {
            self.statement = statement
            self.columns = columns
            id = try statement.int64(columns.id)
            coordinate = Coordinate(uncheckedLatitude: try statement.double(columns.lat), longitude: try statement.double(columns.lon))
            popularity = try statement.double(columns.popularity)
            rating = try statement.optionalDouble(columns.average)
            try statement.requireText(columns.nameWords)
            try statement.requireText(columns.otherWords)
        }

        /// The folded words of the name, and of the category, address and description.
        func withWords<Result>(_ body: (_ name: UnsafeBufferPointer<UInt8>, _ other: UnsafeBufferPointer<UInt8>) -> Result) -> Result {
            statement.withUTF8(columns.nameWords.index) { name in statement.withUTF8(columns.otherWords.index) { other in body(name, other) } }
        }

        /// Whether the place is open now by its hours in its own time zone.
        func isOpenNow() throws(RowError) -> Bool {
            guard let hours = columns.openingHours, let zone = columns.timezone else {
                throw RowError(column: "opening_hours", problem: .missing(available: statement.columnNames), sql: statement.sql)
            }
            return OpeningHours.isOpen(
                hoursJSON: try statement.decode(hours, as: String.self),
                timezone: try statement.decode(zone, as: String?.self), at: Date())
        }
    }

    /// Calls `visit` with each place of `places p` (joined with `ratings r`) meeting
    /// `conditions` and the filters, in `order` when given, until `visit` returns false or
    /// `limit` rows are read; open now is judged here when asked. Returns how many rows were
    /// read (a place that is not open now is one).
    @discardableResult
    func probe(
        from: String, where conditions: String, _ conditionArgs: [SQLBindable?], _ filters: PlaceFilters,
        order: String? = nil, limit: Int? = nil, _ visit: (Probe) -> Bool
    ) throws -> Int {
        var sql = "SELECT \(Probe.columns(filters)) FROM \(from) LEFT JOIN ratings r ON r.place_id = p.id WHERE \(conditions)"
        var args = conditionArgs
        MapQueries.appendFilters(filters, to: &sql, &args)
        if let order { sql += " ORDER BY \(order)" }
        if let limit {
            // Bound, so that one prepared statement serves every limit.
            sql += " LIMIT ?"
            args.append(limit)
        }
        let openNow = filters.openNow == true
        var columns: Probe.Columns?
        var read = 0
        try db.stepWhile(sql, args) { statement in
            read += 1
            let found = try columns ?? Probe.Columns(statement, openNow: openNow)
            columns = found
            let probe = try Probe(statement: statement, columns: found)
            if openNow, try !probe.isOpenNow() { return true }
            return visit(probe)
        }
        return read
    }

    /// Ids as a JSON array, for `json_each(?)`.
    static func jsonArray(_ ids: [Int64]) -> String { "[" + ids.map(String.init).joined(separator: ",") + "]" }

    /// Probes the places with these ids; returns how many were read.
    @discardableResult
    func probe(ids: [Int64], _ filters: PlaceFilters, _ visit: (Probe) -> Void) throws -> Int {
        guard !ids.isEmpty else { return 0 }
        return try probe(from: "places p", where: "p.id IN (SELECT value FROM json_each(?))", [MapQueries.jsonArray(ids)], filters) { place in
            visit(place)
            return true
        }
    }

    static let inBox = "g.min_lat >= ? AND g.max_lat <= ? AND g.min_lon >= ? AND g.max_lon <= ?"

    static let fromTree = "places_geo g JOIN places p ON p.id = g.id"

    /// The R*Tree's integer bounds of a box, rounded outward.
    static func bounds(_ box: BoundingBox) -> [SQLBindable?] {
        [
            Int64((box.south * SearchIndex.scale).rounded(.down)), Int64((box.north * SearchIndex.scale).rounded(.up)),
            Int64((box.west * SearchIndex.scale).rounded(.down)), Int64((box.east * SearchIndex.scale).rounded(.up)),
        ]
    }

    /// Adds the filters' conditions to a query over `places p` joined with `ratings r`.
    /// Whether `appendFilters` adds anything: SQL then turns places away before a probe sees them.
    static func judgesInSQL(_ filters: PlaceFilters) -> Bool {
        filters.categories?.isEmpty == false || filters.excludeCategories?.isEmpty == false || filters.priceLevels?.isEmpty == false
            || filters.minRating != nil
    }

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

    /// What every search reads of a place (`places p` joined with `ratings r`), as `HitColumns` finds them.
    /// A hit shows the catalog's popularity, as its stored JSON (`HitJSON`) does, not the blend it is ranked by.
    static let hitColumns = "p.id, p.name, p.category, p.address, p.lat, p.lon, p.price_level, p.catalog_popularity AS popularity, r.average, r.count"

    /// The columns of `hitColumns`, found by name once per result.
    struct HitColumns {
        let id, name, category, address, lat, lon, priceLevel, popularity, average, count: Column

        init(_ columns: ResultColumns) throws(RowError) {
            id = try columns.column("id")
            name = try columns.column("name")
            category = try columns.column("category")
            address = try columns.column("address")
            lat = try columns.column("lat")
            lon = try columns.column("lon")
            priceLevel = try columns.column("price_level")
            popularity = try columns.column("popularity")
            average = try columns.column("average")
            count = try columns.column("count")
        }
    }

    /// A hit from a row of `hitColumns`; the rating and its count are NULL for a place without reviews.
    static func hit(_ row: Row, _ c: HitColumns) throws(RowError) -> SearchHit {
        try SearchHit(
            id: row.decode(c.id), name: row.decode(c.name), category: row.decode(c.category), address: row.decode(c.address),
            lat: row.decode(c.lat), lon: row.decode(c.lon), priceLevel: row.decode(c.priceLevel),
            popularity: row.decode(c.popularity), rating: row.decode(c.average), reviewCount: row.decode(c.count), distanceM: nil)
    }

    /// The hits of rows of `hitColumns`, in their order.
    static func hits(_ rows: [Row]) throws(RowError) -> [SearchHit] {
        guard let first = rows.first else { return [] }
        let columns = try HitColumns(first.columns)
        return try rows.map { row throws(RowError) in try hit(row, columns) }
    }
}
