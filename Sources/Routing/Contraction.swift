/// A street graph after contraction hierarchies (Geisberger et al., 2008): nodes are
/// contracted one by one, least important first, and a shortcut replaces each shortest path
/// through a contracted node that nothing else is as short as. A query then searches only
/// upwards, to more important nodes, from both ends: a few hundred nodes, not the whole graph.
struct ContractedGraph {
    /// An arc of the street graph (index < `arcCount`, the arc of the same index), or a
    /// shortcut over two edges, `first` into the node it skips and `second` out of it.
    struct Edge {
        var tail: Int32, head: Int32
        var weight: UInt32
        var metres: Float
        var first: Int32 = -1, second: Int32 = -1
    }

    let nodeCount: Int
    let edges: [Edge]
    let arcCount: Int
    /// Edges out of a node to more important ones, for searches forwards: `upEdges[upStart[v]..<upStart[v + 1]]`.
    let upStart: [Int32], upEdges: [Int32]
    /// Edges into a node from more important ones, for searches backwards.
    let downStart: [Int32], downEdges: [Int32]
    let shortcutCount: Int

    /// Contracts a graph's arcs. Witness searches (is there a path as short as the one through the
    /// node?) settle at most `witnessLimit` nodes: past it a shortcut is added anyway, which
    /// costs space, never correctness.
    init(nodeCount: Int, arcs: [StreetGraph.Arc], witnessLimit: Int = 100) {
        var contraction = Contraction(nodeCount: nodeCount, arcs: arcs, witnessLimit: witnessLimit)
        contraction.run()
        self.nodeCount = nodeCount
        edges = contraction.edges
        arcCount = arcs.count
        shortcutCount = edges.count - arcCount
        (upStart, upEdges) = Self.compressed(contraction.up, nodeCount: nodeCount)
        (downStart, downEdges) = Self.compressed(contraction.down, nodeCount: nodeCount)
    }

    private static func compressed(_ lists: [[Int32]], nodeCount: Int) -> ([Int32], [Int32]) {
        var start = [Int32](repeating: 0, count: nodeCount + 1)
        var flat: [Int32] = []
        flat.reserveCapacity(lists.reduce(0) { $0 + $1.count })
        for node in 0..<nodeCount {
            flat.append(contentsOf: lists[node])
            start[node + 1] = Int32(flat.count)
        }
        return (start, flat)
    }

    /// The arcs a (possibly shortcut) edge stands for, in order.
    func unpack(_ edge: Int32, into path: inout [Int32]) {
        var stack: [Int32] = [edge]
        while let top = stack.popLast() {
            let e = edges[Int(top)]
            if e.first < 0 {
                path.append(top)
            } else {
                stack.append(e.second)
                stack.append(e.first)
            }
        }
    }
}

/// The work of contracting: the graph of the nodes left, as lists of neighbours, and a queue of
/// nodes by priority, updated lazily.
private struct Contraction {
    struct Neighbour {
        var node: Int32
        var weight: UInt32
        var metres: Float
        var edge: Int32
    }

    let witnessLimit: Int
    var edges: [ContractedGraph.Edge]
    var outs: [[Neighbour]]
    var ins: [[Neighbour]]
    var contracted: [Bool]
    var deletedNeighbours: [Int32]
    var up: [[Int32]]
    var down: [[Int32]]
    // The witness search's reusable state.
    var distance: [UInt32]
    var touched: [Int32] = []
    var heap = MinHeap()

    init(nodeCount n: Int, arcs: [StreetGraph.Arc], witnessLimit: Int) {
        self.witnessLimit = witnessLimit
        edges = arcs.map { ContractedGraph.Edge(tail: $0.tail, head: $0.head, weight: $0.weight, metres: $0.metres) }
        outs = Array(repeating: [], count: n)
        ins = Array(repeating: [], count: n)
        contracted = Array(repeating: false, count: n)
        deletedNeighbours = Array(repeating: 0, count: n)
        up = Array(repeating: [], count: n)
        down = Array(repeating: [], count: n)
        distance = Array(repeating: .max, count: n)
        for (index, edge) in edges.enumerated() where edge.tail != edge.head {
            link(edge.tail, edge.head, weight: edge.weight, metres: edge.metres, edge: Int32(index))
        }
    }

    /// Keeps the shorter of parallel edges: adds tail → head, or replaces a longer one.
    mutating func link(_ tail: Int32, _ head: Int32, weight: UInt32, metres: Float, edge: Int32) {
        let entry = Neighbour(node: head, weight: weight, metres: metres, edge: edge)
        if let index = outs[Int(tail)].firstIndex(where: { $0.node == head }) {
            guard weight < outs[Int(tail)][index].weight else { return }
            outs[Int(tail)][index] = entry
            let back = ins[Int(head)].firstIndex { $0.node == tail }!
            ins[Int(head)][back] = Neighbour(node: tail, weight: weight, metres: metres, edge: edge)
        } else {
            outs[Int(tail)].append(entry)
            ins[Int(head)].append(Neighbour(node: tail, weight: weight, metres: metres, edge: edge))
        }
    }

    mutating func run() {
        let n = outs.count
        var current = [UInt32](repeating: 0, count: n)
        var queue = MinHeap()
        for node in 0..<n {
            current[node] = Self.biased(priority(Int32(node)))
            queue.push(UInt64(current[node]), Int32(node))
        }
        while let (key, node) = queue.pop() {
            guard !contracted[Int(node)], UInt32(key) == current[Int(node)] else { continue }
            // Lazy update: contract it only if it is still the least important.
            let now = Self.biased(priority(node))
            if now != current[Int(node)] {
                current[Int(node)] = now
                if let next = queue.peekKey, UInt64(now) > next {
                    queue.push(UInt64(now), node)
                    continue
                }
            }
            let neighbours = Set(outs[Int(node)].map(\.node) + ins[Int(node)].map(\.node))
            contract(node)
            for neighbour in neighbours {
                deletedNeighbours[Int(neighbour)] += 1
                let updated = Self.biased(priority(neighbour))
                if updated != current[Int(neighbour)] {
                    current[Int(neighbour)] = updated
                    queue.push(UInt64(updated), neighbour)
                }
            }
        }
    }

    /// Priorities are small signed numbers; the queue's keys are unsigned.
    static func biased(_ priority: Int32) -> UInt32 { UInt32(bitPattern: priority &+ Int32(1 << 30)) }

    /// Edge difference (shortcuts it would add less edges it removes) plus neighbours already
    /// contracted, which spreads contraction evenly over the graph.
    mutating func priority(_ node: Int32) -> Int32 {
        var shortcuts = 0
        forEachShortcut(node) { _, _, _, _ in shortcuts += 1 }
        let removed = outs[Int(node)].count + ins[Int(node)].count
        return Int32(2 * shortcuts - removed) + deletedNeighbours[Int(node)]
    }

    /// The shortcuts contracting `node` needs: for each way in and way out, unless a witness
    /// path avoiding `node` is as short.
    mutating func forEachShortcut(_ node: Int32, _ body: (Neighbour, Neighbour, UInt32, Float) -> Void) {
        let outsOfNode = outs[Int(node)]
        let insOfNode = ins[Int(node)]
        guard !outsOfNode.isEmpty, !insOfNode.isEmpty else { return }
        let longestOut = outsOfNode.map(\.weight).max()!
        for into in insOfNode {
            witnessSearch(from: into.node, avoiding: node, limit: into.weight.adding(longestOut))
            for out in outsOfNode where out.node != into.node {
                let through = into.weight.adding(out.weight)
                if distance[Int(out.node)] > through { body(into, out, through, into.metres + out.metres) }
            }
            clearWitness()
        }
    }

    mutating func contract(_ node: Int32) {
        var shortcuts: [(Neighbour, Neighbour, UInt32, Float)] = []
        forEachShortcut(node) { shortcuts.append(($0, $1, $2, $3)) }
        up[Int(node)] = outs[Int(node)].map(\.edge)
        down[Int(node)] = ins[Int(node)].map(\.edge)
        for out in outs[Int(node)] { ins[Int(out.node)].removeAll { $0.node == node } }
        for into in ins[Int(node)] { outs[Int(into.node)].removeAll { $0.node == node } }
        outs[Int(node)] = []
        ins[Int(node)] = []
        contracted[Int(node)] = true
        for (into, out, weight, metres) in shortcuts {
            let edge = Int32(edges.count)
            edges.append(ContractedGraph.Edge(tail: into.node, head: out.node, weight: weight, metres: metres, first: into.edge, second: out.edge))
            link(into.node, out.node, weight: weight, metres: metres, edge: edge)
        }
    }

    /// Dijkstra from `source` over the nodes left, not through `avoiding`, up to `limit` or
    /// `witnessLimit` settled nodes; leaves distances in `distance` until `clearWitness()`.
    mutating func witnessSearch(from source: Int32, avoiding: Int32, limit: UInt32) {
        distance[Int(source)] = 0
        touched.append(source)
        heap.removeAll()
        heap.push(0, source)
        var settled = 0
        while let (key, node) = heap.pop() {
            let d = UInt32(key)
            guard d == distance[Int(node)] else { continue }
            if d > limit || settled >= witnessLimit { break }
            settled += 1
            for out in outs[Int(node)] where out.node != avoiding {
                let next = d.adding(out.weight)
                if next < distance[Int(out.node)] {
                    if distance[Int(out.node)] == .max { touched.append(out.node) }
                    distance[Int(out.node)] = next
                    heap.push(UInt64(next), out.node)
                }
            }
        }
    }

    mutating func clearWitness() {
        for node in touched { distance[Int(node)] = .max }
        touched.removeAll(keepingCapacity: true)
    }
}

/// A binary min-heap of (key, node), duplicates allowed (searches skip stale entries).
struct MinHeap {
    private var keys: [UInt64] = []
    private var nodes: [Int32] = []

    var peekKey: UInt64? { keys.first }

    mutating func removeAll() {
        keys.removeAll(keepingCapacity: true)
        nodes.removeAll(keepingCapacity: true)
    }

    mutating func push(_ key: UInt64, _ node: Int32) {
        keys.append(key)
        nodes.append(node)
        var child = keys.count - 1
        while child > 0 {
            let parent = (child - 1) / 2
            guard keys[parent] > keys[child] else { break }
            keys.swapAt(parent, child)
            nodes.swapAt(parent, child)
            child = parent
        }
    }

    mutating func pop() -> (UInt64, Int32)? {
        guard let top = keys.first else { return nil }
        let node = nodes[0]
        let lastKey = keys.removeLast()
        let lastNode = nodes.removeLast()
        if !keys.isEmpty {
            keys[0] = lastKey
            nodes[0] = lastNode
            var parent = 0
            while true {
                let left = 2 * parent + 1
                guard left < keys.count else { break }
                let right = left + 1
                let child = right < keys.count && keys[right] < keys[left] ? right : left
                guard keys[child] < keys[parent] else { break }
                keys.swapAt(parent, child)
                nodes.swapAt(parent, child)
                parent = child
            }
        }
        return (top, node)
    }
}

extension UInt32 {
    /// The sum, or `.max` where it would overflow: the weights of a crafted network (segments
    /// thousands of kilometres long) stay comparable and never trap.
    func adding(_ other: UInt32) -> UInt32 {
        let (sum, overflow) = addingReportingOverflow(other)
        return overflow ? .max : sum
    }
}
