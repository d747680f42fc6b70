import Bus
import Contracts
import Foundation
import Geo
import ServiceKit
import Storage

/// What `search.popular` shows: events in season first (by ranked popularity among them),
/// then every other place by ranked popularity (`Popularity`'s blend); events out of season,
/// and events with no seasons, are left out; tours are not places and are left out too.
///
/// An event is in season when one of its seasons holds the day that `at` is in the place's
/// `timezone` (which the catalog gives every place with seasons, its `--default-timezone` when
/// the place names none; UTC for a place that somehow has none).
struct PopularQueries {
    let maps: MapQueries
    var db: Database { maps.db }

    /// The page size: 1 to 50, 20 by default.
    /// The radius around `near` when none is given, and the largest.
    static let defaultRadius = 10_000.0
    /// The most events read per request, most popular first, per part of the area (a box across
    /// the 180th meridian has two): an event below them is not shown.
    static let maxEventsRead = 2_000
    /// The most other places read per request.
    static let maxPlacesRead = 20_000

    func popular(_ q: PopularQuery, now: Date = Date()) throws -> PopularPage {
        let limit = try PageLimit.popularHits.validated(q.limit)
        let at: Int64
        if let text = q.at {
            at = try RFC3339.milliseconds(text, field: "at")
            // Bounded after its offset is applied, as the reply writes it: 1970 to 9999 in UTC.
            guard at >= 0 else { throw ServiceError.invalid("at", "must be in 1970 or after") }
            guard at < 253_402_300_800_000 else { throw ServiceError.invalid("at", "must be before the year 10000 (in UTC)") }
        } else {
            at = Int64((now.timeIntervalSince1970 * 1000).rounded(.down))
        }
        guard q.near == nil || q.bbox == nil else { throw ServiceError.invalid("bbox", "give near or bbox, not both") }
        var center: Coordinate?
        var radius = Self.defaultRadius
        var box: BoundingBox?
        if let near = q.near {
            // The point and the radius are in range: the params' rules held them.
            let point = Coordinate(uncheckedLatitude: near.lat, longitude: near.lon)
            if let r = q.radiusM { radius = r }
            center = point
            do { box = try BoundingBox.around(point, radiusMeters: radius) } catch { throw error.serviceError }
        } else if q.radiusM != nil {
            throw ServiceError.invalid("radius_m", "needs near: a point to measure from")
        }
        if let b = q.bbox {
            // Each edge is in range (the params' rules held them).
            let checked = try b.boundingBox(field: "bbox")
            guard checked.widthDegrees <= 180 else { throw ServiceError.invalid("bbox.east", "the box may be at most 180 degrees wide") }
            box = checked
        }
        func inArea(_ coordinate: Coordinate) -> Bool {
            if let center { return coordinate.distance(to: center) <= radius }
            return box?.contains(coordinate) ?? true
        }
        let events = try eventsInSeason(at: at, box: box, want: limit, inArea: inArea)
        let shown = Set(events)
        var others: [Int64] = []
        let want = limit - events.count
        if want > 0 {
            let filters = PlaceFilters(excludeCategories: ["event"])
            let accept: (MapQueries.Probe) -> Bool = { $0.id > 0 && !shown.contains($0.id) && inArea($0.coordinate) }
            let budget = ReadBudget(Self.maxPlacesRead)
            let found =
                if let box {
                    try maps.mostPopular(in: box, want: want, after: nil, budget: budget, filters, accept: accept)
                } else {
                    try maps.mostPopular(want: want, budget: budget, filters, accept: accept)
                }
            others = found.map(\.id)
        }
        let hits = try maps.hits(ids: events + others, from: center).map { PopularHit(hit: $0, inSeason: shown.contains($0.id)) }
        return PopularPage(at: Logger.timestamp(Date(timeIntervalSince1970: Double(at) / 1000)), hits: hits)
    }

    /// The ids of up to `want` events in season at `at` in the area, most popular first (read
    /// down `places_events`, at most `maxEventsRead`).
    private func eventsInSeason(at: Int64, box: BoundingBox?, want: Int, inArea: (Coordinate) -> Bool) throws -> [Int64] {
        let parts: [(String, [SQLBindable?])] =
            box.map { $0.indexAreas.map { (" AND lat BETWEEN ? AND ? AND lon BETWEEN ? AND ?", [$0.south, $0.north, $0.west, $0.east]) } }
            ?? [("", [])]
        var found: [(id: Int64, popularity: Double)] = []
        var zones: [String: TimeZone] = [:]
        let utc = TimeZone(identifier: "UTC") ?? .current
        for (area, args) in parts {
            let rows = try db.query(
                """
                SELECT id, lat, lon, popularity, seasons, timezone FROM places INDEXED BY places_events
                WHERE category = 'event' AND seasons IS NOT NULL\(area) ORDER BY popularity DESC, id LIMIT ?
                """, args + [Self.maxEventsRead])
            for row in rows {
                let coordinate = Coordinate(uncheckedLatitude: try row.decode("lat"), longitude: try row.decode("lon"))
                guard inArea(coordinate), let text = try row.decode("seasons", as: String?.self),
                    let seasons = try? JSONCoding.decoder.decode([Season].self, from: Data(text.utf8))
                else { continue }
                let name = try row.decode("timezone", as: String?.self) ?? "UTC"
                let zone = zones[name] ?? TimeZone(identifier: name) ?? utc
                zones[name] = zone
                if Season.any(seasons, at: at, in: zone) { found.append((try row.decode("id"), try row.decode("popularity"))) }
            }
        }
        found.sort { $0.popularity != $1.popularity ? $0.popularity > $1.popularity : $0.id < $1.id }
        return found.prefix(want).map(\.id)
    }
}
