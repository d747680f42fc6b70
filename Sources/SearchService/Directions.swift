import Bus
import Contracts
import Foundation
import Geo
import Routing
import Storage

// Directions: routes along the street network of the catalog's OSM imports (StreetRoutes.swift,
// the Routing module), with their polyline and steps; where there is no network, or an end is
// off it, or for transit, the great-circle distance and a time from an average speed, which
// says it is an estimate and why. Deep links hand the turn-by-turn route to a map app. And the
// order of a trip's visits that makes it quickest.

/// The straight line on the sphere: the great-circle distance, lengthened by `detour` (streets
/// are rarely straight: 1.3 is a common city average), at the mode's average speed.
enum StraightLine {
    static let detour = 1.3

    static func leg(from: Coordinate, to: Coordinate, mode: TravelMode) -> (metres: Double, seconds: Double) {
        let metres = from.distance(to: to)
        return (metres, metres * detour / mode.metresPerSecond)
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

/// The directions requests, over the index's places and the street network's routes.
struct DirectionQueries {
    let db: Database
    let routes: StreetRoutes
    /// The texts of a route's steps, in the language asked (RouteTexts.swift).
    var texts = RouteTexts.Texts.english

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

    /// Why a mode has no routes here.
    private static func unrouted(_ mode: TravelMode) -> String {
        mode == .transit
            ? "transit is estimated from an average speed: no timetables are known"
            : "no street network is loaded (import an OpenStreetMap extract of the area): estimated from the straight line"
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
        let bearing = from.initialBearing(to: to)
        let links = DirectionLinks.links(from: from, to: to, mode: mode)
        func estimate(_ reason: String) -> Directions {
            let leg = StraightLine.leg(from: from, to: to, mode: mode)
            return Directions(
                to: end, mode: mode, status: .estimate, distanceM: leg.metres, bearingDeg: bearing, durationS: leg.seconds, reason: reason, links: links)
        }
        guard let engine = routes.engine(mode) else { return estimate(Self.unrouted(mode)) }
        do {
            let route = try engine.route(from: from, to: to)
            var answer = Directions(
                to: end, mode: mode, status: .routed, distanceM: RouteSteps.tenth(route.metres), bearingDeg: bearing,
                durationS: RouteSteps.tenth(route.seconds), links: links)
            answer.polyline = Polyline.encode(route.points)
            answer.snappedFrom = Point(lat: route.from.point.latitude, lon: route.from.point.longitude)
            answer.snappedTo = Point(lat: route.to.point.latitude, lon: route.to.point.longitude)
            answer.steps = RouteSteps.steps(route, texts: texts)
            answer.lang = texts.lang
            return answer
        } catch .offNetwork(let which, _) {
            let side = which == .from ? "the start" : "the destination"
            return estimate(
                "\(side) is more than \(Int(RouteEngine.maxSnapMetres)) m from any street \(mode.rawValue) can use: estimated from the straight line")
        } catch {
            return Directions(
                to: end, mode: mode, status: .noRoute, distanceM: nil, bearingDeg: bearing, durationS: nil, reason: error.description, links: links)
        }
    }

    func matrix(_ query: MatrixQuery) throws -> TravelMatrix {
        for (field, points) in [("sources", query.sources), ("destinations", query.destinations)] {
            guard (1...MatrixQuery.maxPoints).contains(points.count) else {
                throw ServiceError.invalid(field, "must hold 1 to \(MatrixQuery.maxPoints) points, not \(points.count)")
            }
        }
        let sources = try query.sources.enumerated().map { i, point in try Self.coordinate(point, field: "sources[\(i)]") }
        let destinations = try query.destinations.enumerated().map { i, point in try Self.coordinate(point, field: "destinations[\(i)]") }
        let mode = query.mode ?? .walking
        guard let engine = routes.engine(mode) else {
            let legs = sources.map { a in destinations.map { b in StraightLine.leg(from: a, to: b, mode: mode) } }
            return TravelMatrix(
                mode: mode, status: .estimate, reason: Self.unrouted(mode), durationsS: legs.map { $0.map(\.seconds) },
                distancesM: legs.map { $0.map(\.metres) })
        }
        let cells = engine.matrix(sources: sources, destinations: destinations)
        let missing = cells.joined().contains { $0 == nil }
        return TravelMatrix(
            mode: mode, status: .routed,
            reason: missing ? "null: no route joins the two, or an end is more than \(Int(RouteEngine.maxSnapMetres)) m from any street" : nil,
            durationsS: cells.map { $0.map { $0.map { RouteSteps.tenth($0.seconds) } } },
            distancesM: cells.map { $0.map { $0.map { RouteSteps.tenth($0.metres) } } })
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
        // Routed times when every leg has a route; else every leg an estimate, and why.
        var legs = points.map { a in points.map { b in StraightLine.leg(from: a, to: b, mode: mode) } }
        var reason: String? = Self.unrouted(mode)
        if let engine = routes.engine(mode) {
            let cells = engine.matrix(sources: points, destinations: points)
            if cells.joined().allSatisfy({ $0 != nil }) {
                legs = cells.map { $0.map { ($0?.metres ?? 0, $0?.seconds ?? 0) } }
                reason = nil
            } else {
                reason = "a stop has no route to or from another, or is off the street network: estimated from straight lines"
            }
        }
        let exact = places.count <= TripOrder.exactUpTo
        let roundTrip = query.roundTrip ?? false
        let order = TripOrder.order(visits: places.count, roundTrip: roundTrip, exact: exact) { legs[$0][$1].seconds }
        var tripLegs: [TripLeg] = []
        var at = 0
        for node in order + (roundTrip ? [0] : []) {
            let leg = legs[at][node]
            let end = node == 0 ? RouteEnd(lat: start.latitude, lon: start.longitude) : places[node - 1]
            tripLegs.append(TripLeg(to: end, distanceM: leg.metres, durationS: leg.seconds))
            at = node
        }
        var plan = TripPlan(
            order: order.map { places[$0 - 1].id ?? 0 }, legs: tripLegs, totalDistanceM: tripLegs.reduce(0) { $0 + $1.distanceM },
            totalDurationS: tripLegs.reduce(0) { $0 + $1.durationS }, exact: exact)
        plan.estimate = reason != nil
        plan.reason = reason
        return plan
    }
}

/// A route's steps: depart along its first street, a turn onto each next one, arrive.
enum RouteSteps {
    /// Steps of one route, at most (the arrival last): a reply stays far below 4 MiB however
    /// long the route; the polyline has all of it.
    static let maxSteps = 2_000

    static func steps(_ route: Route, texts: RouteTexts.Texts) -> [RouteStep] {
        guard let first = route.stretches.first, let last = route.points.last else { return [] }
        var steps: [RouteStep] = []
        let startPoint = route.points[first.firstPoint]
        let heading = compass(startPoint.initialBearing(to: route.points[min(first.lastPoint, first.firstPoint + 1)]))
        steps.append(
            RouteStep(
                maneuver: "depart", modifier: nil, street: first.name, lat: startPoint.latitude, lon: startPoint.longitude, distanceM: tenth(first.metres),
                durationS: tenth(first.seconds),
                instruction: texts.text(first.name == nil ? "route.depart" : "route.depart_on", street: first.name, direction: heading)))
        for stretch in route.stretches.dropFirst() {
            let at = route.points[stretch.firstPoint]
            let before = route.points[max(0, stretch.firstPoint - 1)].initialBearing(to: at)
            let after = at.initialBearing(to: route.points[min(route.points.count - 1, stretch.firstPoint + 1)])
            let modifier = turn(after - before)
            // Straight on along the same street (or along unnamed ways) is the step before, longer.
            if modifier == "straight", let previous = steps.last, previous.street == stretch.name {
                steps[steps.count - 1].distanceM = tenth(previous.distanceM + stretch.metres)
                steps[steps.count - 1].durationS = tenth(previous.durationS + stretch.seconds)
                continue
            }
            let key =
                modifier == "straight"
                ? (stretch.name == nil ? "route.continue" : "route.continue_onto")
                : (stretch.name == nil ? "route.turn." : "route.turn_onto.") + modifier.replacingOccurrences(of: " ", with: "_")
            let instruction = texts.text(key, street: stretch.name)
            steps.append(
                RouteStep(
                    maneuver: modifier == "straight" ? "continue" : "turn", modifier: modifier, street: stretch.name, lat: at.latitude,
                    lon: at.longitude, distanceM: tenth(stretch.metres), durationS: tenth(stretch.seconds), instruction: instruction))
        }
        steps.append(
            RouteStep(
                maneuver: "arrive", modifier: nil, street: route.stretches.last?.name, lat: last.latitude, lon: last.longitude, distanceM: 0,
                durationS: 0, instruction: texts.text("route.arrive")))
        return steps.count <= maxSteps ? steps : Array(steps.prefix(maxSteps - 1)) + steps.suffix(1)
    }

    /// Metres and seconds of a route as the reply gives them: to the tenth (the engine sums
    /// single-precision lengths, whose last digits mean nothing).
    static func tenth(_ value: Double) -> Double { (value * 10).rounded() / 10 }

    /// A change of bearing in degrees as a turn: right is positive.
    static func turn(_ degrees: Double) -> String {
        var angle = degrees.truncatingRemainder(dividingBy: 360)
        if angle > 180 { angle -= 360 }
        if angle <= -180 { angle += 360 }
        let side = angle > 0 ? "right" : "left"
        switch abs(angle) {
        case ..<20: return "straight"
        case ..<60: return "slight \(side)"
        case ..<120: return side
        case ..<170: return "sharp \(side)"
        default: return "uturn"
        }
    }

    static func compass(_ bearing: Double) -> String {
        let names = ["north", "northeast", "east", "southeast", "south", "southwest", "west", "northwest"]
        return names[Int((bearing / 45).rounded()) % 8]
    }
}
