/// A way of a street network read from OpenStreetMap data: a `highway=*` or `route=ferry` way,
/// with the tags routing reads (`OSMStreets.keptKeys`) and its nodes in order.
public struct OSMStreetWay: Sendable, Equatable {
    public var id: Int64
    public var tags: [String: String]
    /// Indexes into `OSMStreets.nodes`, in the way's order.
    public var nodes: [Int32]

    public init(id: Int64, tags: [String: String], nodes: [Int32]) {
        self.id = id
        self.tags = tags
        self.nodes = nodes
    }
}

/// A node of a street network: its OpenStreetMap id, its position, and its access tags when it
/// has a `barrier` or an access tag (a bollard, a gate with `motor_vehicle=no`).
public struct OSMStreetNode: Sendable, Equatable {
    public var id: Int64
    public var lat: Double
    public var lon: Double
    public var tags: [String: String]

    public init(id: Int64, lat: Double, lon: Double, tags: [String: String] = [:]) {
        self.id = id
        self.lat = lat
        self.lon = lon
        self.tags = tags
    }
}

/// A turn restriction (`type=restriction`): from a way, through a node, to a way. Restrictions
/// through a way (`via` a way) are counted and left out.
public struct OSMTurnRestriction: Sendable, Equatable {
    public enum Kind: String, Sendable, Equatable {
        /// `no_left_turn`, `no_u_turn`, `no_straight_on`, …: this turn is forbidden.
        case no
        /// `only_right_turn`, `only_straight_on`, …: this turn is the only one allowed.
        case only
    }
    public var id: Int64
    public var kind: Kind
    /// The way ids, and the index of the via node in `OSMStreets.nodes`.
    public var from: Int64, via: Int32, to: Int64
    /// The transports it applies to: `restriction:motorcar=…` names one; plain `restriction`
    /// applies to every vehicle, less those `except=…` names (`bicycle;psv`).
    public var transports: Set<String>

    public init(id: Int64, kind: Kind, from: Int64, via: Int32, to: Int64, transports: Set<String>) {
        self.id = id
        self.kind = kind
        self.from = from
        self.via = via
        self.to = to
        self.transports = transports
    }
}

/// What a read of a street network counted besides what it kept.
public struct OSMStreetCounts: Sendable, Equatable {
    /// Street ways cut where a node they list is not in the data (an extract's edge cuts
    /// ways that go on beyond it): each part of two nodes or more is kept, as a way of the same id.
    public var waysMissingNodes = 0
    /// Turn restrictions left out: through a way, or naming a way or node the data lacks.
    public var restrictionsLeftOut = 0
    /// Elements left out because they break a bound or lack a valid id or coordinate.
    public var invalidElements = 0

    public init() {}
}

/// The street network of an OpenStreetMap XML document: every `highway=*` and `route=ferry`
/// way with its nodes, the access tags of nodes on them, and the turn restrictions between them.
/// What any way allows is left to routing's profiles.
public struct OSMStreets: Sendable, Equatable {
    public var nodes: [OSMStreetNode]
    public var ways: [OSMStreetWay]
    public var restrictions: [OSMTurnRestriction]
    public var counts: OSMStreetCounts

    /// The way tags routing reads; others are not kept.
    public static let keptKeys: Set<String> = [
        "highway", "route", "area", "name", "ref", "junction", "oneway", "oneway:bicycle", "maxspeed", "access", "access:foot",
        "access:bicycle", "access:motorcar", "foot", "bicycle", "motorcar", "vehicle", "motor_vehicle", "goods", "hgv", "psv",
        "motorroad", "designation", "footway", "sidewalk", "cycleway",
    ]
    /// The node tags routing reads: a node is kept with tags when it has one of them.
    public static let keptNodeKeys: Set<String> = ["barrier", "access", "foot", "bicycle", "motorcar", "vehicle", "motor_vehicle"]
    /// The most members of a turn restriction read; one with more is left out.
    static let maxMembers = 64

    public init(nodes: [OSMStreetNode], ways: [OSMStreetWay], restrictions: [OSMTurnRestriction], counts: OSMStreetCounts = OSMStreetCounts()) {
        self.nodes = nodes
        self.ways = ways
        self.restrictions = restrictions
        self.counts = counts
    }

    /// Reads a whole document of at most `maxBytes` (default 1 GiB).
    public init(bytes: [UInt8], maxBytes: Int = 1 << 30) throws(OSMError) {
        var reader = OSMElementReader()
        var collector = StreetCollector()
        try OSMDocument.walk(bytes, maxBytes: maxBytes) { name, attribute in
            reader.start(name, attribute: attribute)
        } end: { name in
            if let element = reader.end(name) { collector.take(element) }
        }
        self = collector.finish(invalidElements: reader.invalid)
    }
}

/// Collects a street network one element at a time, then `finish()`.
struct StreetCollector {
    private struct Way {
        var id: Int64
        var tags: [String: String]
        var refs: [Int64]
    }
    private struct Relation {
        var id: Int64
        var tags: [String: String]
        var members: [OSMMember]
    }
    private var table = NodeTable()
    private var nodeTags: [Int64: [String: String]] = [:]
    private var ways: [Way] = []
    private var relations: [Relation] = []
    private var counts = OSMStreetCounts()

    /// A whole element: street ways, access tags of nodes and turn restrictions are kept.
    mutating func take(_ element: OSMElement) {
        switch element {
        case .node(let id, let lat, let lon, let tags):
            table.append(id: id, lat: lat, lon: lon)
            let kept = tags.filter { OSMStreets.keptNodeKeys.contains($0.key) }
            if !kept.isEmpty { nodeTags[id] = kept }
        case .way(let id, let tags, let refs):
            guard tags["highway"] != nil || tags["route"] == "ferry", refs.count > 1 else { return }
            ways.append(Way(id: id, tags: tags.filter { OSMStreets.keptKeys.contains($0.key) }, refs: refs))
        case .relation(let id, let tags, let members):
            guard tags["type"] == "restriction" else { return }
            relations.append(Relation(id: id, tags: tags, members: members))
        }
    }

    /// Resolves node references: ways keep their nodes as indexes into the kept nodes, in
    /// first-use order; restrictions name the ways kept and a node of both.
    mutating func finish(invalidElements: Int) -> OSMStreets {
        counts.invalidElements = invalidElements
        table.prepareForLookups()
        var nodes: [OSMStreetNode] = []
        var index: [Int64: Int32] = [:]
        var kept: [OSMStreetWay] = []
        var wayNodes: [Int64: [Int32]] = [:]
        for way in ways {
            var part: [Int32] = []
            var cut = false
            func keepPart() {
                if part.count > 1 {
                    kept.append(OSMStreetWay(id: way.id, tags: way.tags, nodes: part))
                    wayNodes[way.id, default: []] += part
                }
                part = []
            }
            for ref in way.refs {
                if let known = index[ref] {
                    part.append(known)
                } else if let point = table.coordinate(of: ref) {
                    let next = Int32(nodes.count)
                    index[ref] = next
                    nodes.append(OSMStreetNode(id: ref, lat: Double(point.lat) / 1e7, lon: Double(point.lon) / 1e7, tags: nodeTags[ref] ?? [:]))
                    part.append(next)
                } else {
                    cut = true
                    keepPart()
                }
            }
            keepPart()
            if cut { counts.waysMissingNodes += 1 }
        }
        var restrictions: [OSMTurnRestriction] = []
        for relation in relations {
            let read = Self.restrictions(relation.id, relation.tags, relation.members, index: index, wayNodes: wayNodes)
            if read.isEmpty { counts.restrictionsLeftOut += 1 }
            restrictions += read
        }
        return OSMStreets(nodes: nodes, ways: kept, restrictions: restrictions, counts: counts)
    }

    /// The vehicles a plain `restriction` applies to.
    static let vehicles: Set<String> = ["motorcar", "bicycle", "motorcycle", "moped", "goods", "hgv", "psv"]

    /// A relation's restrictions: one for a plain `restriction` (every vehicle less those
    /// `except` names), or one per value of its `restriction:<transport>` keys (`restriction:hgv
    /// =no_left_turn` and `restriction:bicycle=only_straight_on` are two); none when it is not
    /// one we read.
    private static func restrictions(
        _ id: Int64, _ tags: [String: String], _ members: [OSMMember], index: [Int64: Int32], wayNodes: [Int64: [Int32]]
    ) -> [OSMTurnRestriction] {
        guard members.count <= OSMStreets.maxMembers else { return [] }
        var rules: [String: Set<String>] = [:]
        if let plain = tags["restriction"] {
            let except = Set((tags["except"] ?? "").split(separator: ";").map { String($0).trimmingSpaces })
            rules[plain] = vehicles.subtracting(except)
        } else {
            for (key, value) in tags where key.hasPrefix("restriction:") {
                rules[value, default: []].insert(String(key.dropFirst("restriction:".count)))
            }
        }
        let kinds = rules.keys.sorted().compactMap { value -> (OSMTurnRestriction.Kind, Set<String>)? in
            let kind: OSMTurnRestriction.Kind? = value.hasPrefix("no_") ? .no : value.hasPrefix("only_") ? .only : nil
            return kind.map { ($0, rules[value] ?? []) }
        }
        guard !kinds.isEmpty else { return [] }
        let from = members.filter { $0.role == "from" && $0.type == "way" }
        let to = members.filter { $0.role == "to" && $0.type == "way" }
        let via = members.filter { $0.role == "via" }
        guard from.count == 1, to.count == 1, via.count == 1, via[0].type == "node", let viaIndex = index[via[0].ref],
            let fromNodes = wayNodes[from[0].ref], let toNodes = wayNodes[to[0].ref], fromNodes.contains(viaIndex), toNodes.contains(viaIndex)
        else { return [] }
        return kinds.map { kind, transports in
            OSMTurnRestriction(id: id, kind: kind, from: from[0].ref, via: viaIndex, to: to[0].ref, transports: transports)
        }
    }
}

extension OSMStreets {
    /// Several networks as one, a later one winning segment by segment: a segment (two
    /// consecutive nodes of a way, by their ids) a later network has is that network's, so a
    /// newer extract of a city centre replaces the centre's streets while the roads its edge
    /// cut keep their parts outside it; nodes of one id are one node, at the later network's
    /// position; a restriction of an id a later network has is that network's.
    public static func merged(_ networks: [OSMStreets]) -> OSMStreets {
        guard networks.count > 1 else { return networks.first ?? OSMStreets(nodes: [], ways: [], restrictions: []) }
        struct SegmentKey: Hashable {
            var way: Int64, a: Int64, b: Int64
            init(_ way: Int64, _ x: Int64, _ y: Int64) { (self.way, a, b) = (way, min(x, y), max(x, y)) }
        }
        var nodes: [OSMStreetNode] = []
        var index: [Int64: Int32] = [:]
        var ways: [OSMStreetWay] = []
        var restrictions: [OSMTurnRestriction] = []
        var takenSegments = Set<SegmentKey>()
        var takenRestrictions = Set<Int64>()
        var counts = OSMStreetCounts()
        for network in networks.reversed() {
            var local = [Int32](repeating: -1, count: network.nodes.count)
            func node(_ at: Int32) -> Int32 {
                if local[Int(at)] >= 0 { return local[Int(at)] }
                let streetNode = network.nodes[Int(at)]
                let merged: Int32
                if let known = index[streetNode.id] {
                    merged = known
                } else {
                    merged = Int32(nodes.count)
                    index[streetNode.id] = merged
                    nodes.append(streetNode)
                }
                local[Int(at)] = merged
                return merged
            }
            var added = Set<SegmentKey>()
            for way in network.ways {
                // The runs of this way's segments no later network has, each kept as a part.
                var part: [Int32] = []
                func keepPart() {
                    if part.count > 1 { ways.append(OSMStreetWay(id: way.id, tags: way.tags, nodes: part.map(node))) }
                    part = []
                }
                for (a, b) in zip(way.nodes, way.nodes.dropFirst()) {
                    let key = SegmentKey(way.id, network.nodes[Int(a)].id, network.nodes[Int(b)].id)
                    if takenSegments.contains(key) {
                        keepPart()
                        continue
                    }
                    added.insert(key)
                    if part.isEmpty { part = [a] }
                    part.append(b)
                }
                keepPart()
            }
            takenSegments.formUnion(added)
            for restriction in network.restrictions where !takenRestrictions.contains(restriction.id) {
                var kept = restriction
                kept.via = node(restriction.via)
                restrictions.append(kept)
            }
            takenRestrictions.formUnion(network.restrictions.map(\.id))
            counts.waysMissingNodes += network.counts.waysMissingNodes
            counts.restrictionsLeftOut += network.counts.restrictionsLeftOut
            counts.invalidElements += network.counts.invalidElements
        }
        return OSMStreets(nodes: nodes, ways: ways, restrictions: restrictions, counts: counts)
    }
}
