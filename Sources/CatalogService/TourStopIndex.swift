import Bus
import Foundation
import Geo
import ServiceKit
import Storage

/// `tours.list near`: the tours with a stop within a radius of a point, by the distance to
/// their nearest stop, read nearest first from the R*Tree of tour stops (`tour_stops_geo`,
/// kept by triggers; `NearestPage`). A tour found past a later page's cursor is checked
/// against its own stops (at most 500). A page reads at most `budget` stops.
struct ToursNear {
    /// Stops one page reads, at most (`tours.list near`'s bound, tours.md).
    static let readBudget = 5_000

    let center: Coordinate
    let radius: Double
    let after: TourDistanceCursor?
    let limit: Int
    let budget: Int
    /// The tours an import is writing, which no page shows (their stops count as read).
    var hidden: ClosedRange<Int64>? = nil

    /// The page's tours, nearest first (ties by id), and the cursor of the next page when there may be one.
    func page(_ db: Database) throws -> (tours: [(distance: Double, id: Int64)], next: TourDistanceCursor?) {
        let walk = NearestPage(
            center: center, radius: radius, after: after.map { ($0.distance, $0.id) }, limit: limit, budget: budget, slack: NearestFirst.slack)
        let (center, hidden) = (self.center, self.hidden)
        let (items, next) = try walk.page(
            points: { take in
                try db.stepWhile(
                    "SELECT tour_id, lat, lon FROM tour_stops_geo WHERE id MATCH nearest_first(?, ?, 1, ?, ?)",
                    [center.latitude, center.longitude, walk.range.from, walk.range.to]
                ) { row in try take(row.int64(0), Coordinate(uncheckedLatitude: row.double(1), longitude: row.double(2))) }
            },
            servedBefore: { tour, distance in
                var read = 0
                var nearer = false
                try db.stepWhile("SELECT p.lat, p.lon FROM tour_stops s JOIN places p ON p.id = s.place_id WHERE s.tour_id = ?", [tour]) { row in
                    read += 1
                    nearer = Coordinate(uncheckedLatitude: row.double(0), longitude: row.double(1)).distance(to: center) < distance
                    return !nearer
                }
                return (nearer, read)
            }, hidden: hidden.map { range in { range.contains($0) } })
        return (items, next.map { TourDistanceCursor(distance: $0.distance, id: $0.id) })
    }
}
