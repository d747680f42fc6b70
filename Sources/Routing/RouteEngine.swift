import ContentImport
import Foundation
import Geo
import Synchronization

/// Why a route could not be found.
public enum RoutingError: Error, Sendable, Equatable, CustomStringConvertible {
    /// An end is farther than `RouteEngine.maxSnapMetres` from any street the profile travels.
    case offNetwork(end: End, nearestMetres: Double?)
    /// Both ends are on the network, but on pieces of it no path joins (an island, a private
    /// road cut off, a one-way street out of reach).
    case noRoute
    public enum End: String, Sendable { case from, to }

    public var description: String {
        switch self {
        case .offNetwork(let end, let nearest):
            "the \(end == .from ? "start" : "destination") is off the street network"
                + (nearest.map { " (the nearest street is \(Int($0.rounded())) m away)" } ?? "")
        case .noRoute: "no route: the two ends lie on pieces of the street network that no path joins"
        }
    }
}

/// A route: its length and time along the streets, its points (from the snapped start to the
/// snapped end), and the stretches of street it follows.
public struct Route: Sendable, Equatable {
    public var metres: Double
    public var seconds: Double
    public var points: [Coordinate]
    public var stretches: [Stretch]
    public var from: Snap
    public var to: Snap

    /// Consecutive segments of one way: the way's `name` (or `ref`), and from which of the
    /// route's points to which.
    public struct Stretch: Sendable, Equatable {
        public var name: String?
        public var type: StreetType
        public var metres: Double
        public var seconds: Double
        public var firstPoint: Int
        public var lastPoint: Int
    }
}

/// One cell of a matrix: the shortest time from a source to a destination, and its length.
public struct MatrixCell: Sendable, Equatable {
    public var seconds: Double
    public var metres: Double
}

/// One profile's routes over a street network: built once (contraction hierarchies), then
/// queried from any number of threads.
public final class RouteEngine: Sendable {
    /// How far a point may be from the nearest street and still be routed from it.
    public static let maxSnapMetres = 500.0

    public let profile: RouteProfile
    let graph: StreetGraph
    let contracted: ContractedGraph
    let coordinates: [Coordinate]
    let index: SnapIndex
    /// Each way's name (or ref) and street type.
    let wayNames: [String?]
    let wayTypes: [StreetType]
    /// The street edges along each segment (both directions), into each street node, and the
    /// arcs out of each search node.
    let segmentStart: [Int32], segmentEdges: [Int32]
    let inStart: [Int32], inEdges: [Int32]
    let arcStart: [Int32], arcsOut: [Int32]
    private let workspaces = Mutex<[Workspace]>([])

    public init(streets: OSMStreets, profile: RouteProfile) {
        self.profile = profile
        graph = StreetGraph(streets: streets, profile: profile)
        contracted = ContractedGraph(nodeCount: graph.nodeCount, arcs: graph.arcs)
        coordinates = streets.nodes.map { Coordinate(uncheckedLatitude: $0.lat, longitude: $0.lon) }
        index = SnapIndex(segments: graph.segments, coordinates: coordinates)
        wayNames = streets.ways.map { way in (way.tags["name"] ?? way.tags["ref"]).flatMap { $0.isEmpty ? nil : $0 } }
        wayTypes = streets.ways.map { WayAccess(tags: $0.tags)?.type ?? .path }
        (segmentStart, segmentEdges) = StreetGraph.grouped(graph.edges.map(\.segment), count: graph.segments.count)
        (inStart, inEdges) = StreetGraph.grouped(graph.edges.map(\.head), count: graph.streetNodeCount)
        (arcStart, arcsOut) = StreetGraph.grouped(graph.arcs.map(\.tail), count: graph.nodeCount)
    }

    /// Counts for benchmarks and logs.
    public var nodeCount: Int { graph.nodeCount }
    public var edgeCount: Int { graph.arcs.count }
    public var shortcutCount: Int { contracted.shortcutCount }
    public var restrictionsApplied: Int { graph.restrictionsApplied }

    /// The street nodes this profile's segments join, each once, in index order.
    public var streetNodes: [Coordinate] {
        var seen = [Bool](repeating: false, count: coordinates.count)
        for segment in graph.segments { (seen[Int(segment.a)], seen[Int(segment.b)]) = (true, true) }
        return seen.indices.filter { seen[$0] }.map { coordinates[$0] }
    }

    /// The nearest point of a street this profile travels, within `maxSnapMetres`.
    public func snap(_ point: Coordinate) -> Snap? {
        var best: (segment: Int32, fraction: Double, squared: Double)?
        let limit = Self.maxSnapMetres * Self.maxSnapMetres
        // On a plane around the point, in metres: x east, y north (over 500 m, the error is
        // under a millimetre).
        let xScale = SnapIndex.metresPerDegree * cos(point.latitude * .pi / 180)
        let yScale = SnapIndex.metresPerDegree
        index.forEachSegment(near: point, within: Self.maxSnapMetres, keepGoing: { $0 * $0 <= min(limit, best?.squared ?? limit) }) { segment in
            guard segmentStart[Int(segment)] < segmentStart[Int(segment) + 1] else { return }
            let s = graph.segments[Int(segment)]
            let a = coordinates[Int(s.a)]
            let b = coordinates[Int(s.b)]
            let ax = (a.longitude - point.longitude) * xScale
            let ay = (a.latitude - point.latitude) * yScale
            let dx = (b.longitude - a.longitude) * xScale
            let dy = (b.latitude - a.latitude) * yScale
            let lengthSquared = dx * dx + dy * dy
            var t = lengthSquared > 0 ? min(1, max(0, -(ax * dx + ay * dy) / lengthSquared)) : 0
            // Within a centimetre of a node is on it (a node's own position comes out a rounding away).
            let length = lengthSquared.squareRoot()
            if t * length < 0.01 { t = 0 } else if (1 - t) * length < 0.01 { t = 1 }
            let x = ax + t * dx
            let y = ay + t * dy
            let squared = x * x + y * y
            if squared <= limit, best.map({ squared < $0.squared || (squared == $0.squared && segment < $0.segment) }) ?? true {
                best = (segment, t, squared)
            }
        }
        guard let best else { return nil }
        let s = graph.segments[Int(best.segment)]
        let a = coordinates[Int(s.a)]
        let b = coordinates[Int(s.b)]
        let on = Coordinate(
            uncheckedLatitude: a.latitude + (b.latitude - a.latitude) * best.fraction, longitude: a.longitude + (b.longitude - a.longitude) * best.fraction)
        return Snap(segment: best.segment, fraction: best.fraction, point: on, metres: best.squared.squareRoot())
    }

    /// The quickest route between two points.
    public func route(from: Coordinate, to: Coordinate) throws(RoutingError) -> Route {
        guard let start = snap(from) else { throw .offNetwork(end: .from, nearestMetres: nil) }
        guard let end = snap(to) else { throw .offNetwork(end: .to, nearestMetres: nil) }
        return try route(from: start, to: end)
    }

    /// The quickest route between two snapped points.
    public func route(from start: Snap, to end: Snap) throws(RoutingError) -> Route {
        let sources = departures(start)
        let targets = arrivals(end)
        let direct = directAlongSegment(start, end)
        let found = withWorkspace { $0.search(contracted, sources: sources, targets: targets) }
        if let direct, direct.weight <= (found?.weight ?? .max) {
            return makeRoute(start, end, direct: direct)
        }
        guard let found else { throw .noRoute }
        var arcs: [Int32] = []
        for edge in found.edges { contracted.unpack(edge, into: &arcs) }
        return makeRoute(start, end, streets: arcs.map { graph.arcs[Int($0)].street }, first: found.source, last: found.target)
    }

    /// The quickest times and their lengths from each source to each destination; nil where a
    /// point is off the network or no path joins the two.
    public func matrix(sources: [Coordinate], destinations: [Coordinate]) -> [[MatrixCell?]] {
        let starts = sources.map(snap)
        let ends = destinations.map(snap)
        return withWorkspace { workspace in
            var buckets: [Int32: [(destination: Int, weight: UInt32, metres: Float)]] = [:]
            for (column, end) in ends.enumerated() {
                guard let end else { continue }
                workspace.upward(contracted, from: arrivals(end), forwards: false) { node, weight, metres in
                    buckets[node, default: []].append((column, weight, metres))
                }
            }
            var rows: [[MatrixCell?]] = []
            for start in starts {
                var best = [(weight: UInt32, metres: Float)?](repeating: nil, count: ends.count)
                if let start {
                    workspace.upward(contracted, from: departures(start), forwards: true) { node, weight, metres in
                        for entry in buckets[node] ?? [] {
                            let total = weight.adding(entry.weight)
                            if total < best[entry.destination]?.weight ?? .max { best[entry.destination] = (total, metres + entry.metres) }
                        }
                    }
                    for (column, end) in ends.enumerated() {
                        guard let end, let direct = directAlongSegment(start, end), direct.weight <= best[column]?.weight ?? .max else { continue }
                        best[column] = (direct.weight, direct.metres)
                    }
                }
                rows.append(best.map { $0.map { MatrixCell(seconds: Double($0.weight) / 1000, metres: Double($0.metres)) } })
            }
            return rows
        }
    }

    // MARK: - Ends on segments

    /// Whether a street edge goes from the segment's first node to its second.
    private func isAlong(_ edge: StreetGraph.Edge) -> Bool {
        edge.tail == graph.segments[Int(edge.segment)].a
    }

    private func slice(_ members: [Int32], _ start: [Int32], _ key: Int32) -> ArraySlice<Int32> {
        members[Int(start[Int(key)])..<Int(start[Int(key) + 1])]
    }

    /// Where a search starts from a snapped point: the point is part way along each street
    /// edge of its segment, or exactly on a node (which any of its edges may leave). Walkers'
    /// searches start at the next street node; others' at each turn the edge allows there.
    func departures(_ snap: Snap) -> [Seed] {
        var seeds: [Seed] = []
        for index in slice(segmentEdges, segmentStart, snap.segment) {
            let edge = graph.edges[Int(index)]
            let rest = isAlong(edge) ? 1 - snap.fraction : snap.fraction
            let weight = UInt32((Double(edge.weight) * rest).rounded())
            if graph.edgeBased {
                for arc in slice(arcsOut, arcStart, index) {
                    seeds.append(Seed(node: graph.arcs[Int(arc)].head, weight: weight, metres: edge.metres * Float(rest), street: index))
                }
            } else {
                seeds.append(Seed(node: edge.head, weight: weight, metres: edge.metres * Float(rest), street: index))
            }
        }
        if let node = exactNode(snap) {
            if graph.edgeBased {
                seeds += graph.edges(from: node).map { Seed(node: $0, weight: 0, metres: 0, street: -1) }
            } else {
                seeds.append(Seed(node: node, weight: 0, metres: 0, street: -1))
            }
        }
        return seeds
    }

    /// Where a search ends at a snapped point: part way along each street edge of its segment,
    /// or exactly at a node, at the end of any edge into it.
    func arrivals(_ snap: Snap) -> [Seed] {
        var seeds: [Seed] = []
        for index in slice(segmentEdges, segmentStart, snap.segment) {
            let edge = graph.edges[Int(index)]
            let part = isAlong(edge) ? snap.fraction : 1 - snap.fraction
            let weight = UInt32((Double(edge.weight) * part).rounded())
            // Along an edge from a node a barrier closes is past the barrier. (Search nodes that
            // are street edges are only entered by turns the barrier already forbids.)
            if !graph.edgeBased, graph.blocked[Int(edge.tail)] { continue }
            seeds.append(Seed(node: graph.edgeBased ? index : edge.tail, weight: weight, metres: edge.metres * Float(part), street: index))
        }
        if let node = exactNode(snap) {
            if graph.edgeBased {
                seeds += slice(inEdges, inStart, node).map { index in
                    let edge = graph.edges[Int(index)]
                    return Seed(node: index, weight: edge.weight, metres: edge.metres, street: index)
                }
            } else {
                seeds.append(Seed(node: node, weight: 0, metres: 0, street: -1))
            }
        }
        return seeds
    }

    /// The street node a snap is exactly on, if it is.
    private func exactNode(_ snap: Snap) -> Int32? {
        let segment = graph.segments[Int(snap.segment)]
        return snap.fraction == 0 ? segment.a : snap.fraction == 1 ? segment.b : nil
    }

    /// Both ends on one segment, the way between them travelled the right way: the stretch between.
    private func directAlongSegment(_ start: Snap, _ end: Snap) -> (weight: UInt32, metres: Float, edge: Int32)? {
        guard start.segment == end.segment else { return nil }
        for index in slice(segmentEdges, segmentStart, start.segment) {
            let edge = graph.edges[Int(index)]
            let along = isAlong(edge)
            guard along ? start.fraction <= end.fraction : start.fraction >= end.fraction else { continue }
            let part = abs(end.fraction - start.fraction)
            return (UInt32((Double(edge.weight) * part).rounded()), edge.metres * Float(part), index)
        }
        return nil
    }

    // MARK: - The route's shape

    private func makeRoute(_ start: Snap, _ end: Snap, direct: (weight: UInt32, metres: Float, edge: Int32)) -> Route {
        let way = graph.segments[Int(graph.edges[Int(direct.edge)].segment)].way
        let stretch = Route.Stretch(
            name: wayNames[Int(way)], type: wayTypes[Int(way)], metres: Double(direct.metres), seconds: Double(direct.weight) / 1000, firstPoint: 0,
            lastPoint: 1)
        return Route(
            metres: Double(direct.metres), seconds: Double(direct.weight) / 1000, points: [start.point, end.point], stretches: [stretch], from: start,
            to: end)
    }

    /// A route of the search's path: the start's piece of street, the street edges of its arcs,
    /// and the end's piece.
    private func makeRoute(_ start: Snap, _ end: Snap, streets: [Int32], first: Seed, last: Seed) -> Route {
        var points = [start.point]
        var stretches: [Route.Stretch] = []
        var stretchWays: [Int32] = []
        var metres = 0.0
        var seconds = 0.0
        func add(way: Int32, metres part: Double, seconds time: Double, to point: Coordinate) {
            let before = points.count - 1
            // An end exactly on a node adds nothing.
            guard point != points[before] || part > 0 else { return }
            if point != points[before] { points.append(point) }
            metres += part
            seconds += time
            // A stretch goes on along ways of one name (an unnamed one along one way).
            if let lastWay = stretchWays.last, wayNames[Int(lastWay)] == wayNames[Int(way)], wayNames[Int(way)] != nil || lastWay == way {
                stretches[stretches.count - 1].metres += part
                stretches[stretches.count - 1].seconds += time
                stretches[stretches.count - 1].lastPoint = points.count - 1
            } else {
                stretches.append(
                    Route.Stretch(
                        name: wayNames[Int(way)], type: wayTypes[Int(way)], metres: part, seconds: time, firstPoint: before, lastPoint: points.count - 1))
                stretchWays.append(way)
            }
        }
        /// A street edge, whole or the part of it a seed says, to `point`.
        func add(edge index: Int32, metres part: Float, milliseconds: UInt32, to point: Coordinate) {
            let edge = graph.edges[Int(index)]
            add(way: graph.segments[Int(edge.segment)].way, metres: Double(part), seconds: Double(milliseconds) / 1000, to: point)
        }
        if first.street >= 0 {
            let head = graph.edges[Int(first.street)].head
            add(edge: first.street, metres: first.metres, milliseconds: first.weight, to: coordinates[Int(head)])
        }
        for index in streets {
            let edge = graph.edges[Int(index)]
            add(edge: index, metres: edge.metres, milliseconds: edge.weight, to: coordinates[Int(edge.head)])
        }
        if last.street >= 0 {
            add(edge: last.street, metres: last.metres, milliseconds: last.weight, to: end.point)
        }
        return Route(metres: metres, seconds: seconds, points: points, stretches: stretches, from: start, to: end)
    }

    private func withWorkspace<T>(_ body: (Workspace) -> T) -> T {
        let workspace = workspaces.withLock { $0.popLast() } ?? Workspace(nodeCount: contracted.nodeCount)
        defer { workspaces.withLock { $0.append(workspace) } }
        return body(workspace)
    }
}

/// A search node a search starts (or ends) at, with its cost, and the piece of street edge
/// (`street`, -1 for none) that cost is for.
struct Seed {
    var node: Int32
    var weight: UInt32
    var metres: Float
    var street: Int32
}
