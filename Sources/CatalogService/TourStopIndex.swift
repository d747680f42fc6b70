import Bus
import Foundation
import Geo
import Storage

/// `tours.list near`: the tours with a stop within a radius of a point, by the distance to
/// their nearest stop, read from the R*Tree of tour stops (`tour_stops_geo`, kept by triggers).
///
/// The stops are read in rings outward from the point, each box twice as wide as the last
/// (the first 1 km, or just past the page's start), and each ring reads only what the last
/// one did not. Once a ring is read, every stop within its radius has been read, so the
/// tours whose nearest stop is within it are final; reading stops once more than `limit`
/// are, or at the radius. A later page starts past its cursor's distance and skips the
/// stops of a box inside that distance: the tours they belong to were served before, and a
/// tour found further out is checked against all its stops before it is answered.
///
/// At most `budget` index rows (and stops checked) are read by a page beyond its first ring:
/// when the next ring would pass it, the page ends with the tours found within the rings
/// read, and its cursor goes on from there. So a page costs what its rings hold, however
/// many stops the catalog has, and every page gets further than the last.
struct ToursNear {
    /// Index rows one page may read past its first ring (`tours.list near`'s bound, tours.md).
    static let readBudget = 20_000
    /// The first ring's radius from the point, in metres.
    static let firstRing = 1_000.0

    let center: Coordinate
    let radius: Double
    let after: TourDistanceCursor?
    let limit: Int
    let budget: Int

    /// The page's tours, nearest first (ties by id), and the cursor of the next page when there may be one.
    func page(_ db: Database) throws -> (tours: [(distance: Double, id: Int64)], next: TourDistanceCursor?) {
        let start = after?.distance ?? 0
        // A box inside the circle of the cursor's distance (its corners are at about 0.85 of
        // it): every stop in it is nearer than the cursor, so its tour was served already.
        var inner: BoundingBox? = start > 0 ? try BoundingBox.around(center, radiusMeters: start * 0.6) : nil
        let skipping = inner != nil
        var nearest: [Int64: Double] = [:]
        // Tours found further out than the skipped box, checked against all their stops.
        var served = Set<Int64>()
        var unserved = Set<Int64>()
        var read = 0
        // Every stop within this distance has been read (or was skipped, its tour served).
        var covered = 0.0
        var ring = min(radius, max(Self.firstRing, start * 1.125))
        while true {
            let outer = try BoundingBox.around(center, radiusMeters: ring)
            // The first ring is read whole, so every page gets further than the last; past it, a
            // ring that would pass the budget is left unread from where it would.
            let firstRing = covered == 0
            var complete = true
            for area in Self.areas(outer, without: inner) where complete {
                try db.stepWhile(
                    "SELECT tour_id, lat, lon FROM tour_stops_geo WHERE max_lat >= ? AND min_lat <= ? AND max_lon >= ? AND min_lon <= ? LIMIT ?",
                    [area.south, area.north, area.west, area.east, firstRing ? Int64(-1) : Int64(budget - read + 1)]
                ) { row in
                    guard firstRing || read < budget else {
                        complete = false
                        return false
                    }
                    read += 1
                    let distance = Coordinate(uncheckedLatitude: row.double(1), longitude: row.double(2)).distance(to: center)
                    if distance <= radius {
                        let tour = row.int64(0)
                        nearest[tour] = min(nearest[tour] ?? .infinity, distance)
                    }
                    return true
                }
            }
            if complete { covered = ring }
            // The tours final within what is read whole and not served before, nearest first.
            let final = nearest.filter { $0.value <= covered }.map { (distance: $0.value, id: $0.key) }
                .sorted { ($0.distance, $0.id) < ($1.distance, $1.id) }
            var page: [(distance: Double, id: Int64)] = []
            for entry in final where !served.contains(entry.id) {
                if let after, (entry.distance, entry.id) <= (after.distance, after.id) { continue }
                // Its stops in the skipped box were not read: one there means it was served.
                if skipping, !unserved.contains(entry.id) {
                    guard try !hasStopNearer(than: entry.distance, tour: entry.id, db, read: &read) else {
                        served.insert(entry.id)
                        continue
                    }
                    unserved.insert(entry.id)
                }
                page.append(entry)
                if page.count > limit { break }
            }
            if page.count > limit {
                let kept = Array(page.prefix(limit))
                return (kept, kept.last.map { TourDistanceCursor(distance: $0.distance, id: $0.id) })
            }
            if complete && ring >= radius { return (page, nil) }
            if !complete || read >= budget {
                // Out of budget: the next page goes on from the last ring read whole (every tour
                // nearer than it is in this page or an earlier one).
                return (page, TourDistanceCursor(distance: covered, id: Int64.max))
            }
            inner = outer
            ring = min(radius, ring * 2)
        }
    }

    /// Whether the tour has a stop nearer the point than `distance` (reading its stops, at most 500).
    private func hasStopNearer(than distance: Double, tour: Int64, _ db: Database, read: inout Int) throws -> Bool {
        var nearer = false
        try db.stepWhile("SELECT p.lat, p.lon FROM tour_stops s JOIN places p ON p.id = s.place_id WHERE s.tour_id = ?", [tour]) { row in
            read += 1
            nearer = Coordinate(uncheckedLatitude: row.double(0), longitude: row.double(1)).distance(to: center) < distance
            return !nearer
        }
        return nearer
    }

    /// The parts of `outer` to read that are not in `inner`: four strips around it, or all of
    /// `outer` (as the index holds it) when either box crosses the 180th meridian or spans
    /// every longitude, where the strips are not worth their arithmetic.
    static func areas(_ outer: BoundingBox, without inner: BoundingBox?) -> [BoundingBox] {
        guard let inner, !outer.crossesAntimeridian, !inner.crossesAntimeridian, outer.widthDegrees < 360,
            inner.south >= outer.south, inner.north <= outer.north, inner.west >= outer.west, inner.east <= outer.east
        else { return outer.indexAreas }
        var strips: [BoundingBox] = []
        func add(_ south: Double, _ west: Double, _ north: Double, _ east: Double) {
            guard south <= north, west <= east, let strip = try? BoundingBox(south: south, west: west, north: north, east: east) else { return }
            strips.append(strip)
        }
        add(outer.south, outer.west, inner.south, outer.east)
        add(inner.north, outer.west, outer.north, outer.east)
        add(inner.south, outer.west, inner.north, inner.west)
        add(inner.south, inner.east, inner.north, outer.east)
        return strips
    }
}
