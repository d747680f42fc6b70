import ContentImport
import Geo

/// One profile's street network: its segments (two consecutive nodes of a way) and its street
/// edges (a segment in a direction the profile may travel), and the graph a route is searched
/// on, as arcs between search nodes.
///
/// - Walkers turn anywhere: the search nodes are the street nodes, and each arc is a street edge.
/// - Bicycles and cars obey turn restrictions and never turn back along the street they came
///   (no U-turn, not even at a dead end), as Routino's router: the search nodes are the street edges,
///   and each arc is a turn from one onto the next that is allowed, costing the first.
///   Restrictions from a way, through a node, to a way are obeyed exactly (`no_…` forbids its
///   turn, `only_…` every other from that way); those through a way are not read.
struct StreetGraph {
    /// A directed edge along one segment, between street nodes.
    struct Edge {
        var tail: Int32, head: Int32
        /// Milliseconds, and metres.
        var weight: UInt32
        var metres: Float
        var segment: Int32
    }
    /// Two consecutive nodes of a way, which edges go along.
    struct Segment {
        var a: Int32, b: Int32
        var way: Int32
        var metres: Float
    }
    /// An arc of the search graph: it travels street edge `street` whole.
    struct Arc {
        var tail: Int32, head: Int32
        var weight: UInt32
        var metres: Float
        var street: Int32
    }

    let profile: RouteProfile
    /// Whether search nodes are street edges (turns matter) or street nodes.
    let edgeBased: Bool
    let streetNodeCount: Int
    private(set) var edges: [Edge] = []
    private(set) var segments: [Segment] = []
    /// Street edges out of each street node: `outEdges[outStart[v]..<outStart[v + 1]]`.
    private(set) var outStart: [Int32] = []
    private(set) var outEdges: [Int32] = []
    /// Nodes a barrier closes to this profile: reached, never passed.
    private(set) var blocked: [Bool] = []
    private(set) var arcs: [Arc] = []
    /// Turn restrictions of this profile that name a turn of its network.
    private(set) var restrictionsApplied = 0

    /// The most segments that meet at one node, and so its exits (see the loop over ways).
    static let maxSegmentsPerNode: Int32 = 32

    /// Search nodes.
    var nodeCount: Int { edgeBased ? edges.count : streetNodeCount }

    init(streets: OSMStreets, profile: RouteProfile) {
        self.profile = profile
        edgeBased = profile.restrictedTransport != nil
        streetNodeCount = streets.nodes.count
        blocked = streets.nodes.map { !$0.tags.isEmpty && !NodeAccess(tags: $0.tags).allows(profile) }
        // A way cut by the extract's edge comes in parts of one id.
        var segmentsOfWay: [Int64: [Range<Int32>]] = [:]
        var segmentsAt = [Int32](repeating: 0, count: streets.nodes.count)
        for (wayIndex, way) in streets.ways.enumerated() {
            guard let access = WayAccess(tags: way.tags), let speed = profile.metresPerSecond(access.type, maxSpeedKph: access.maxSpeedKph)
            else { continue }
            let (along, against) = access.directions(profile)
            guard along || against else { continue }
            let first = Int32(segments.count)
            for (a, b) in zip(way.nodes, way.nodes.dropFirst()) where a != b {
                // A real node meets a handful of segments; past `maxSegmentsPerNode` a crafted
                // hub (a way looping through one node thousands of times) is cut off there, or its
                // turns and shortcuts would grow with the square of its degree.
                guard segmentsAt[Int(a)] < Self.maxSegmentsPerNode, segmentsAt[Int(b)] < Self.maxSegmentsPerNode else { continue }
                segmentsAt[Int(a)] += 1
                segmentsAt[Int(b)] += 1
                let from = streets.nodes[Int(a)]
                let to = streets.nodes[Int(b)]
                let metres = greatCircleDistance(
                    Coordinate(uncheckedLatitude: from.lat, longitude: from.lon), Coordinate(uncheckedLatitude: to.lat, longitude: to.lon))
                let segment = Int32(segments.count)
                segments.append(Segment(a: a, b: b, way: Int32(wayIndex), metres: Float(metres)))
                // At most 2^30 ms (12 days) a segment: a crafted one across the world stays a number.
                let weight = UInt32(min(Double(1 << 30), max(1, (metres / speed * 1000).rounded())))
                if along { edges.append(Edge(tail: a, head: b, weight: weight, metres: Float(metres), segment: segment)) }
                if against { edges.append(Edge(tail: b, head: a, weight: weight, metres: Float(metres), segment: segment)) }
            }
            segmentsOfWay[way.id, default: []].append(first..<Int32(segments.count))
        }
        (outStart, outEdges) = Self.grouped(edges.map(\.tail), count: streetNodeCount)
        if edgeBased {
            let transport = profile.restrictedTransport ?? ""
            makeTurns(streets.restrictions.filter { $0.transports.contains(transport) }, segmentsOfWay: segmentsOfWay)
        } else {
            // A walker's arcs are the street edges, less those leaving a node closed to walkers.
            arcs = edges.enumerated().filter { !blocked[Int($0.element.tail)] }.map { index, edge in
                Arc(tail: edge.tail, head: edge.head, weight: edge.weight, metres: edge.metres, street: Int32(index))
            }
        }
    }

    /// Indexes 0..<keys.count grouped by key, as a start array and the indexes in key order.
    static func grouped(_ keys: [Int32], count: Int) -> (start: [Int32], members: [Int32]) {
        var start = [Int32](repeating: 0, count: count + 1)
        for key in keys { start[Int(key) + 1] += 1 }
        for index in 0..<count { start[index + 1] += start[index] }
        var fill = start
        var members = [Int32](repeating: 0, count: keys.count)
        for (index, key) in keys.enumerated() {
            members[Int(fill[Int(key)])] = Int32(index)
            fill[Int(key)] += 1
        }
        return (start, members)
    }

    /// The street edges leaving a street node.
    func edges(from node: Int32) -> ArraySlice<Int32> { outEdges[Int(outStart[Int(node)])..<Int(outStart[Int(node) + 1])] }

    /// The turns allowed from each street edge onto the next (see the type's note).
    private mutating func makeTurns(_ restrictions: [OSMTurnRestriction], segmentsOfWay: [Int64: [Range<Int32>]]) {
        // Rules by (segment into the via node, via node).
        var rules: [Int64: [(kind: OSMTurnRestriction.Kind, to: [Range<Int32>])]] = [:]
        func key(_ segment: Int32, _ via: Int32) -> Int64 { Int64(segment) << 32 | Int64(via) }
        for restriction in restrictions {
            // A way to this profile cannot take: `only_` onto it forbids every turn, `no_` none.
            guard let from = segmentsOfWay[restriction.from] else { continue }
            let to = segmentsOfWay[restriction.to] ?? []
            let via = restriction.via
            let entering = from.joined().filter { segments[Int($0)].a == via || segments[Int($0)].b == via }
            guard !entering.isEmpty else { continue }
            for segment in entering { rules[key(segment, via), default: []].append((restriction.kind, to)) }
            restrictionsApplied += 1
        }
        for (index, edge) in edges.enumerated() {
            let via = edge.head
            guard !blocked[Int(via)] else { continue }
            let bound = rules[key(edge.segment, via)] ?? []
            for next in edges(from: via) {
                let turn = edges[Int(next)]
                // Never back along the same segment.
                if turn.segment == edge.segment { continue }
                guard bound.allSatisfy({ rule in rule.to.contains { $0.contains(turn.segment) } == (rule.kind == .only) }) else { continue }
                arcs.append(Arc(tail: Int32(index), head: next, weight: edge.weight, metres: edge.metres, street: Int32(index)))
            }
        }
    }
}
