import Bus
import Foundation
import Geo
import Storage

/// SQL and filter building: the columns read, the filters as SQL, the R*Tree bounds, and reading a place.
extension MapQueries {
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
    func probe(from: String, where conditions: String, _ conditionArgs: [SQLBindable?], _ filters: PlaceFilters,
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

    static let fromTree = "places_geo g JOIN places p ON p.id = g.id"

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
}
