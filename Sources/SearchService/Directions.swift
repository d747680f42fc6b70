import Bus
import Contracts
import Foundation
import Geo
import Storage

// Directions without a road router: the great-circle distance and bearing, a time estimated
// from documented average speeds, and deep links that hand the turn-by-turn route to a map app;
// and the order of a trip's visits that makes it shortest. A real router (OSRM, Valhalla) can
// later answer behind the same requests: it would be another `Router`.

/// What answers the distance and time between two points. `GreatCircleRouter` is the only one
/// here; a router over HTTP would answer real routes behind the same requests.
protocol Router: Sendable {
    /// The distance in metres and the estimated seconds from `from` to `to` going by `mode`.
    func leg(from: Coordinate, to: Coordinate, mode: TravelMode) -> (metres: Double, seconds: Double)
}

/// Straight lines on the sphere: the great-circle distance, lengthened by `detour` (streets are
/// rarely straight: 1.3 is a common city average), at the mode's average speed.
struct GreatCircleRouter: Router {
    static let detour = 1.3

    func leg(from: Coordinate, to: Coordinate, mode: TravelMode) -> (metres: Double, seconds: Double) {
        let metres = from.distance(to: to)
        return (metres, metres * Self.detour / mode.metresPerSecond)
    }
}

/// Deep links that open turn-by-turn directions in map apps, for the modes each supports.
enum DirectionLinks {
    static func links(from: Coordinate, to: Coordinate, mode: TravelMode) -> [String: String] {
        let origin = "\(from.latitude),\(from.longitude)"
        let destination = "\(to.latitude),\(to.longitude)"
        var links = ["google": "https://www.google.com/maps/dir/?api=1&origin=\(origin)&destination=\(destination)&travelmode=\(mode.rawValue)"]
        // Apple Maps' dirflg: d driving, w walking, r transit; no flag for cycling.
        let apple: [TravelMode: String] = [.driving: "d", .walking: "w", .transit: "r"]
        if let flag = apple[mode] { links["apple"] = "https://maps.apple.com/?saddr=\(origin)&daddr=\(destination)&dirflg=\(flag)" }
        // openstreetmap.org's routers: car, bicycle and foot; no transit.
        let osm: [TravelMode: String] = [.driving: "fossgis_osrm_car", .bicycling: "fossgis_osrm_bike", .walking: "fossgis_osrm_foot"]
        if let engine = osm[mode] {
            links["osm"] = "https://www.openstreetmap.org/directions?engine=\(engine)&route=\(from.latitude)%2C\(from.longitude)%3B\(to.latitude)%2C\(to.longitude)"
        }
        return links
    }
}

/// The order of a trip's visits that makes it shortest: exact by dynamic programming (Held and
/// Karp) up to `exactUpTo` visits, beyond that nearest neighbour improved by 2-opt and or-opt.
enum TripOrder {
    static let exactUpTo = 12
    static let maxVisits = 25

    /// The visiting order (indexes into the visits) from the start, over `distance(i, j)` where
    /// index 0 is the start and 1… are the visits; back to the start when `roundTrip`.
    static func order(visits count: Int, roundTrip: Bool, exact: Bool, _ distance: (Int, Int) -> Double) -> [Int] {
        guard count > 1 else { return count == 1 ? [1] : [] }
        return exact ? heldKarp(count, roundTrip, distance) : improved(count, roundTrip, distance)
    }

    /// The length of a route through the visits in `order` (1-based nodes), from node 0.
    static func length(_ order: [Int], roundTrip: Bool, _ distance: (Int, Int) -> Double) -> Double {
        var total = 0.0
        var previous = 0
        for node in order {
            total += distance(previous, node)
            previous = node
        }
        return total + (roundTrip ? distance(previous, 0) : 0)
    }

    /// The shortest order: over subsets S of visits and a last visit j, the shortest route from
    /// the start through S ending at j. 2^n · n² steps (12 visits: 600,000).
    static func heldKarp(_ n: Int, _ roundTrip: Bool, _ distance: (Int, Int) -> Double) -> [Int] {
        let full = (1 << n) - 1
        var best = [Double](repeating: .infinity, count: (1 << n) * n)
        var parent = [Int](repeating: -1, count: (1 << n) * n)
        for j in 0..<n { best[(1 << j) * n + j] = distance(0, j + 1) }
        for set in 1...full {
            for j in 0..<n where set & (1 << j) != 0 {
                let here = best[set * n + j]
                guard here < .infinity else { continue }
                for k in 0..<n where set & (1 << k) == 0 {
                    let next = (set | (1 << k)) * n + k
                    let length = here + distance(j + 1, k + 1)
                    if length < best[next] {
                        best[next] = length
                        parent[next] = j
                    }
                }
            }
        }
        var last = 0
        var shortest = Double.infinity
        for j in 0..<n {
            let length = best[full * n + j] + (roundTrip ? distance(j + 1, 0) : 0)
            if length < shortest { (shortest, last) = (length, j) }
        }
        var order: [Int] = []
        var set = full
        var j = last
        while j >= 0 {
            order.append(j + 1)
            let previous = parent[set * n + j]
            set &= ~(1 << j)
            j = previous
        }
        return order.reversed()
    }

    /// Nearest neighbour from the start, then 2-opt (reverse a stretch) and or-opt (move a run
    /// of 1 to 3 visits) while either shortens the route, at most 100 rounds.
    static func improved(_ n: Int, _ roundTrip: Bool, _ distance: (Int, Int) -> Double) -> [Int] {
        var left = Set(1...n)
        var order: [Int] = []
        var at = 0
        while let next = left.min(by: { distance(at, $0) < distance(at, $1) || (distance(at, $0) == distance(at, $1) && $0 < $1) }) {
            order.append(next)
            left.remove(next)
            at = next
        }
        var shortest = length(order, roundTrip: roundTrip, distance)
        for _ in 0..<100 {
            var better = false
            for i in 0..<order.count - 1 {
                for j in (i + 1)..<order.count {
                    var candidate = order
                    candidate[i...j].reverse()
                    let length = length(candidate, roundTrip: roundTrip, distance)
                    if length < shortest - 1e-9 { (order, shortest, better) = (candidate, length, true) }
                }
            }
            for run in 1...3 where run < order.count {
                for i in 0...(order.count - run) {
                    let moved = Array(order[i..<(i + run)])
                    var rest = order
                    rest.removeSubrange(i..<(i + run))
                    for k in 0...rest.count where k != i {
                        var candidate = rest
                        candidate.insert(contentsOf: moved, at: k)
                        let length = length(candidate, roundTrip: roundTrip, distance)
                        if length < shortest - 1e-9 { (order, shortest, better) = (candidate, length, true) }
                    }
                }
            }
            if !better { break }
        }
        return order
    }
}

/// The directions requests, over the index's places.
struct DirectionQueries {
    let db: Database
    let router: Router

    /// A place of the index by id (a place's own, not a tour's), or `not_found` naming `field`.
    private func place(_ id: Int64, field: String) throws -> RouteEnd {
        guard id > 0, let row = try db.queryOne("SELECT id, name, lat, lon FROM places WHERE id = ?", id) else {
            throw ServiceError(.notFound, "no place with id \(id)", field: field)
        }
        return RouteEnd(id: try row.decode("id"), name: try row.decode("name"), lat: try row.decode("lat"), lon: try row.decode("lon"))
    }

    private static func coordinate(_ point: Point, field: String) throws(ServiceError) -> Coordinate {
        do {
            return try Coordinate(latitude: point.lat, longitude: point.lon)
        } catch {
            throw .invalid(field, "\(error)")
        }
    }

    func directions(_ query: DirectionsQuery) throws -> Directions {
        let from = try Self.coordinate(query.from, field: "from")
        let mode = query.mode ?? .walking
        let end: RouteEnd
        switch query.to {
        case .place(let id): end = try place(id, field: "to")
        case .point(let point):
            let to = try Self.coordinate(point, field: "to")
            end = RouteEnd(lat: to.latitude, lon: to.longitude)
        }
        let to = Coordinate(uncheckedLatitude: end.lat, longitude: end.lon)
        let leg = router.leg(from: from, to: to, mode: mode)
        return Directions(
            to: end, mode: mode, distanceM: leg.metres, bearingDeg: from.initialBearing(to: to), durationS: leg.seconds,
            links: DirectionLinks.links(from: from, to: to, mode: mode))
    }

    func plan(_ query: TripQuery) throws -> TripPlan {
        let start = try Self.coordinate(query.start, field: "start")
        guard (1...TripOrder.maxVisits).contains(query.placeIds.count) else {
            throw ServiceError.invalid("place_ids", "must hold 1 to \(TripOrder.maxVisits) place ids")
        }
        guard Set(query.placeIds).count == query.placeIds.count else { throw ServiceError.invalid("place_ids", "must not name a place twice") }
        let mode = query.mode ?? .walking
        let places = try query.placeIds.enumerated().map { i, id in try place(id, field: "place_ids[\(i)]") }
        let points = [start] + places.map { Coordinate(uncheckedLatitude: $0.lat, longitude: $0.lon) }
        let metres = points.map { a in points.map { b in router.leg(from: a, to: b, mode: mode).metres } }
        let exact = places.count <= TripOrder.exactUpTo
        let roundTrip = query.roundTrip ?? false
        let order = TripOrder.order(visits: places.count, roundTrip: roundTrip, exact: exact) { metres[$0][$1] }
        var legs: [TripLeg] = []
        var at = 0
        for node in order + (roundTrip ? [0] : []) {
            let leg = router.leg(from: points[at], to: points[node], mode: mode)
            let end = node == 0 ? RouteEnd(lat: start.latitude, lon: start.longitude) : places[node - 1]
            legs.append(TripLeg(to: end, distanceM: leg.metres, durationS: leg.seconds))
            at = node
        }
        return TripPlan(
            order: order.map { places[$0 - 1].id ?? 0 }, legs: legs, totalDistanceM: legs.reduce(0) { $0 + $1.distanceM },
            totalDurationS: legs.reduce(0) { $0 + $1.durationS }, exact: exact)
    }
}
