import ContentImport
import Geo

/// One profile's street network as a directed graph, before contraction: its nodes are the
/// street nodes (indexes into `OSMStreets.nodes`), then one copy of a node for each way into it
/// that a turn restriction binds; its edges are the segments between consecutive nodes of a way,
/// one per direction the profile may travel.
///
/// A turn restriction from way F through node v to way T becomes a copy of v that only the
/// edge from F reaches, with v's edges out less the forbidden turn (`no_…`) or only the allowed
/// one (`only_…`). Shortest paths then obey it exactly, and the graph stays one of nodes.
struct StreetGraph {
    /// A directed edge along one segment.
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

    let profile: RouteProfile
    /// The street node each graph node stands for (itself, or the node a copy copies).
    var original: [Int32]
    var edges: [Edge]
    var segments: [Segment]
    /// Turn restrictions applied, and those of this profile left out (their ways do not meet
    /// on an edge this profile travels).
    var restrictionsApplied = 0

    var nodeCount: Int { original.count }

    init(streets: OSMStreets, profile: RouteProfile) {
        self.profile = profile
        original = (0..<Int32(streets.nodes.count)).map { $0 }
        edges = []
        segments = []
        let blocked = streets.nodes.map { !$0.tags.isEmpty && !NodeAccess(tags: $0.tags).allows(profile) }
        var segmentsOfWay: [Int64: Range<Int32>] = [:]
        for (wayIndex, way) in streets.ways.enumerated() {
            guard let access = WayAccess(tags: way.tags), let speed = profile.metresPerSecond(access.type, maxSpeedKph: access.maxSpeedKph)
            else { continue }
            let (along, against) = access.directions(profile)
            guard along || against else { continue }
            let first = Int32(segments.count)
            for (a, b) in zip(way.nodes, way.nodes.dropFirst()) where a != b {
                let from = streets.nodes[Int(a)]
                let to = streets.nodes[Int(b)]
                let metres = greatCircleDistance(
                    Coordinate(uncheckedLatitude: from.lat, longitude: from.lon), Coordinate(uncheckedLatitude: to.lat, longitude: to.lon))
                let segment = Int32(segments.count)
                segments.append(Segment(a: a, b: b, way: Int32(wayIndex), metres: Float(metres)))
                let weight = UInt32(max(1, (metres / speed * 1000).rounded()))
                if along, !blocked[Int(a)] { edges.append(Edge(tail: a, head: b, weight: weight, metres: Float(metres), segment: segment)) }
                if against, !blocked[Int(b)] { edges.append(Edge(tail: b, head: a, weight: weight, metres: Float(metres), segment: segment)) }
            }
            segmentsOfWay[way.id] = first..<Int32(segments.count)
        }
        if let transport = profile.restrictedTransport {
            applyRestrictions(streets.restrictions.filter { $0.transports.contains(transport) }, segmentsOfWay: segmentsOfWay)
        }
    }

    /// Splits each restricted via node per way into it (see the type's note).
    private mutating func applyRestrictions(_ restrictions: [OSMTurnRestriction], segmentsOfWay: [Int64: Range<Int32>]) {
        // Restrictions grouped by via node, then by the segment they come from.
        var byVia: [Int32: [Int32: [(kind: OSMTurnRestriction.Kind, to: Range<Int32>)]]] = [:]
        for restriction in restrictions {
            guard let from = segmentsOfWay[restriction.from], let to = segmentsOfWay[restriction.to] else { continue }
            let via = restriction.via
            // The segments of the from way that end at the via node.
            let entering = from.filter { segments[Int($0)].a == via || segments[Int($0)].b == via }
            guard !entering.isEmpty else { continue }
            for segment in entering { byVia[via, default: [:]][segment, default: []].append((restriction.kind, to)) }
            restrictionsApplied += 1
        }
        guard !byVia.isEmpty else { return }
        var incoming: [Int32: [Int]] = [:]
        var outgoing: [Int32: [Int]] = [:]
        for (index, edge) in edges.enumerated() where byVia[edge.head] != nil { incoming[edge.head, default: []].append(index) }
        for (index, edge) in edges.enumerated() where byVia[edge.tail] != nil { outgoing[edge.tail, default: []].append(index) }
        for (via, fromSegments) in byVia.sorted(by: { $0.key < $1.key }) {
            for (segment, rules) in fromSegments.sorted(by: { $0.key < $1.key }) {
                // The way out is allowed unless a `no_` rule names it, or an `only_` rule names another.
                func allowed(_ edge: Edge) -> Bool {
                    rules.allSatisfy { rule in rule.to.contains(edge.segment) == (rule.kind == .only) }
                }
                let copy = Int32(original.count)
                original.append(original[Int(via)])
                for index in incoming[via] ?? [] where edges[index].segment == segment { edges[index].head = copy }
                for index in outgoing[via] ?? [] where allowed(edges[index]) {
                    var edge = edges[index]
                    edge.tail = copy
                    edges.append(edge)
                    // A copied edge into another restricted via node is redirected like the others.
                    if byVia[edge.head] != nil { incoming[edge.head, default: []].append(edges.count - 1) }
                }
            }
        }
    }
}
