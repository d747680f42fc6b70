/// The labels of one query at a time, kept between queries: a label counts only when its stamp
/// is the query's, so nothing is cleared between them.
final class Workspace: @unchecked Sendable {
    /// Labels of one direction: the best weight and length found to each node, and how
    /// (an edge of the contracted graph, or `-1 - i` for the search's i-th seed).
    struct Labels {
        var stamp: [UInt32]
        var weight: [UInt32]
        var metres: [Float]
        var parent: [Int32]
        var heap = MinHeap()

        init(nodeCount: Int) {
            stamp = Array(repeating: 0, count: nodeCount)
            weight = Array(repeating: 0, count: nodeCount)
            metres = Array(repeating: 0, count: nodeCount)
            parent = Array(repeating: 0, count: nodeCount)
        }

        func has(_ node: Int32, _ current: UInt32) -> Bool { stamp[Int(node)] == current }

        /// Labels `node` when this is the first or a lighter way there.
        mutating func offer(_ node: Int32, weight w: UInt32, metres m: Float, parent p: Int32, _ current: UInt32) {
            let i = Int(node)
            guard stamp[i] != current || w < weight[i] else { return }
            (stamp[i], weight[i], metres[i], parent[i]) = (current, w, m, p)
            heap.push(UInt64(w), node)
        }

        mutating func seed(_ seeds: [Seed], _ current: UInt32) {
            heap.removeAll()
            for (index, seed) in seeds.enumerated() { offer(seed.node, weight: seed.weight, metres: seed.metres, parent: -1 - Int32(index), current) }
        }

        /// The next node settled, skipping entries a lighter label replaced.
        mutating func pop() -> (node: Int32, weight: UInt32)? {
            while let (key, node) = heap.pop() {
                if UInt32(key) == weight[Int(node)] { return (node, UInt32(key)) }
            }
            return nil
        }

        /// Relaxes the upward edges of a settled node.
        mutating func relax(_ graph: ContractedGraph, _ node: Int32, _ w: UInt32, forwards: Bool, _ current: UInt32) {
            let m = metres[Int(node)]
            let (start, list) = forwards ? (graph.upStart, graph.upEdges) : (graph.downStart, graph.downEdges)
            for slot in Int(start[Int(node)])..<Int(start[Int(node) + 1]) {
                let id = list[slot]
                let edge = graph.edges[Int(id)]
                offer(forwards ? edge.head : edge.tail, weight: w.adding(edge.weight), metres: m + edge.metres, parent: id, current)
            }
        }
    }

    private var current: UInt32 = 0
    private var forward: Labels
    private var backward: Labels

    init(nodeCount: Int) {
        forward = Labels(nodeCount: nodeCount)
        backward = Labels(nodeCount: nodeCount)
    }

    private func nextStamp() -> UInt32 {
        if current == .max {
            for index in forward.stamp.indices { (forward.stamp[index], backward.stamp[index]) = (0, 0) }
            current = 0
        }
        current += 1
        return current
    }

    /// The lightest path from any source to any target: both searches go upwards only, and
    /// stop once neither can find anything lighter than the best meeting so far.
    func search(_ graph: ContractedGraph, sources: [Seed], targets: [Seed]) -> (weight: UInt32, edges: [Int32], source: Seed, target: Seed)? {
        let stamp = nextStamp()
        forward.seed(sources, stamp)
        backward.seed(targets, stamp)
        var best = UInt32.max
        var meet: Int32 = -1
        while true {
            let forwardKey = forward.heap.peekKey ?? .max
            let backwardKey = backward.heap.peekKey ?? .max
            guard min(forwardKey, backwardKey) < UInt64(best) else { break }
            let forwards = forwardKey <= backwardKey
            guard let (node, weight) = forwards ? forward.pop() : backward.pop() else { continue }
            let other = forwards ? backward : forward
            if other.has(node, stamp), weight.adding(other.weight[Int(node)]) < best {
                best = weight.adding(other.weight[Int(node)])
                meet = node
            }
            if forwards { forward.relax(graph, node, weight, forwards: true, stamp) } else { backward.relax(graph, node, weight, forwards: false, stamp) }
        }
        guard meet >= 0 else { return nil }
        var edges: [Int32] = []
        var node = meet
        while forward.parent[Int(node)] >= 0 {
            let edge = forward.parent[Int(node)]
            edges.append(edge)
            node = graph.edges[Int(edge)].tail
        }
        let source = sources[Int(-1 - forward.parent[Int(node)])]
        edges.reverse()
        node = meet
        while backward.parent[Int(node)] >= 0 {
            let edge = backward.parent[Int(node)]
            edges.append(edge)
            node = graph.edges[Int(edge)].head
        }
        let target = targets[Int(-1 - backward.parent[Int(node)])]
        return (best, edges, source, target)
    }

    /// Settles every node upwards of the seeds (forwards, or backwards along edges' reverse),
    /// giving each with its weight and length: one half of a many-to-many matrix.
    func upward(_ graph: ContractedGraph, from seeds: [Seed], forwards: Bool, _ visit: (Int32, UInt32, Float) -> Void) {
        let stamp = nextStamp()
        forward.seed(seeds, stamp)
        while let (node, weight) = forward.pop() {
            visit(node, weight, forward.metres[Int(node)])
            forward.relax(graph, node, weight, forwards: forwards, stamp)
        }
    }
}
