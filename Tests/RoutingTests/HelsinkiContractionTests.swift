import ContentImport
import Foundation
import Testing

@testable import Routing

/// Contraction hierarchies on the real Helsinki extract (deploy/local/helsinki-osm makes it):
/// for random pairs of search nodes of every profile (street nodes for walkers, street edges
/// for the others), the contracted search finds exactly the weight of a plain Dijkstra over the
/// graph's arcs, and its path unpacks to arcs that join up and add up to it.
@Suite struct HelsinkiContractionTests {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
    static let osm = root.appendingPathComponent(".build/osm/helsinki.osm")
    static let available = FileManager.default.fileExists(atPath: osm.path)
    static let streets: OSMStreets? = available ? try? OSMStreets(bytes: [UInt8](Data(contentsOf: osm))) : nil

    @Test func fileIsPresentInCI() {
        if ProcessInfo.processInfo.environment["CI"] == "true" {
            #expect(Self.available, "run deploy/local/helsinki-osm (deploy/local/test does) to make \(Self.osm.path)")
        }
    }

    @Test(.enabled(if: available, "deploy/local/helsinki-osm has not made .build/osm/helsinki.osm"), arguments: RouteProfile.allCases)
    func contractedSearchesMatchDijkstra(profile: RouteProfile) throws {
        let streets = try #require(Self.streets)
        #expect(streets.ways.count > 2000 && streets.restrictions.count > 20, "\(streets.ways.count) ways, \(streets.restrictions.count) restrictions")
        let graph = StreetGraph(streets: streets, profile: profile)
        let contracted = ContractedGraph(nodeCount: graph.nodeCount, arcs: graph.arcs)
        let workspace = Workspace(nodeCount: graph.nodeCount)
        var outgoing = [[Int]](repeating: [], count: graph.nodeCount)
        for (index, arc) in graph.arcs.enumerated() { outgoing[Int(arc.tail)].append(index) }
        let used = Array(Set(graph.arcs.flatMap { [$0.tail, $0.head] })).sorted()
        var random = SplitMix(seed: 33)
        var found = 0
        for _ in 0..<300 {
            let from = used[Int(random.next() % UInt64(used.count))]
            let to = used[Int(random.next() % UInt64(used.count))]
            let expected = Self.dijkstra(graph, outgoing, from, to)
            let result = workspace.search(
                contracted, sources: [Seed(node: from, weight: 0, metres: 0, street: -1)], targets: [Seed(node: to, weight: 0, metres: 0, street: -1)])
            #expect(result?.weight == expected, "\(profile) \(from) → \(to)")
            guard let result else { continue }
            found += 1
            var path: [Int32] = []
            for edge in result.edges { contracted.unpack(edge, into: &path) }
            var at = from
            var total: UInt32 = 0
            for index in path {
                let arc = graph.arcs[Int(index)]
                #expect(arc.tail == at)
                at = arc.head
                total += arc.weight
            }
            #expect(at == to && total == result.weight)
        }
        #expect(found > 150, "most random pairs are joined: \(found) of 300")
    }

    /// Dijkstra over the graph's arcs themselves: the reference.
    static func dijkstra(_ graph: StreetGraph, _ outgoing: [[Int]], _ from: Int32, _ to: Int32) -> UInt32? {
        var distance = [UInt32](repeating: .max, count: graph.nodeCount)
        var heap = MinHeap()
        distance[Int(from)] = 0
        heap.push(0, from)
        while let (key, node) = heap.pop() {
            guard UInt32(key) == distance[Int(node)] else { continue }
            if node == to { return UInt32(key) }
            for index in outgoing[Int(node)] {
                let arc = graph.arcs[index]
                let next = UInt32(key) + arc.weight
                if next < distance[Int(arc.head)] {
                    distance[Int(arc.head)] = next
                    heap.push(UInt64(next), arc.head)
                }
            }
        }
        return nil
    }
}

/// A seeded generator, so a failing pair can be found again.
struct SplitMix {
    var state: UInt64
    init(seed: UInt64) { state = seed }
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}

/// The street network's bytes, as the catalog keeps them and search fetches them.
@Suite struct StreetCodingTests {
    @Test(.enabled(if: HelsinkiContractionTests.available, "deploy/local/helsinki-osm has not made .build/osm/helsinki.osm"))
    func theHelsinkiNetworkComesBackAsItWent() throws {
        let streets = try #require(HelsinkiContractionTests.streets)
        let bytes = streets.encoded()
        #expect(try OSMStreets(encoded: bytes) == streets)
        print("Helsinki streets: \(bytes.count) bytes for \(streets.nodes.count) nodes and \(streets.ways.count) ways")
    }

    @Test func damagedBytesAreRefused() throws {
        let streets = Grid.osm(ways: Grid.streets())
        let bytes = streets.encoded()
        #expect(try OSMStreets(encoded: bytes) == streets)
        #expect(throws: OSMStreetsCodingError.notStreets) { try OSMStreets(encoded: Array("nonsense".utf8)) }
        // Every shorter prefix is cut short, and a byte more is refused.
        for length in [10, 11, 20, bytes.count / 2, bytes.count - 1] {
            #expect(throws: OSMStreetsCodingError.self) { try OSMStreets(encoded: Array(bytes.prefix(length))) }
        }
        #expect(throws: OSMStreetsCodingError.self) { try OSMStreets(encoded: bytes + [0]) }
        // A count far beyond the bytes is refused before anything is reserved for it.
        var huge = bytes
        huge.replaceSubrange(10..<14, with: [0xFF, 0xFF, 0xFF, 0x7F])
        #expect(throws: OSMStreetsCodingError.self) { try OSMStreets(encoded: huge) }
    }
}

/// Networks merged as search merges the catalog's sets.
@Suite struct StreetMergeTests {
    @Test func aLaterExtractReplacesItsSegmentsAndLeavesTheRestOfACutWay() throws {
        func node(_ id: Int64) -> OSMStreetNode { OSMStreetNode(id: id, lat: 60 + Double(id) * 0.001, lon: 25) }
        // The region: way 10 through nodes 1…4, and way 11 from 4 to 5.
        let region = OSMStreets(
            nodes: [node(1), node(2), node(3), node(4), node(5)],
            ways: [
                OSMStreetWay(id: 10, tags: ["highway": "primary"], nodes: [0, 1, 2, 3]),
                OSMStreetWay(id: 11, tags: ["highway": "residential"], nodes: [3, 4]),
            ], restrictions: [])
        // A newer centre extract holds only 2…3 of way 10 (its edge cut it), now one way.
        let centre = OSMStreets(
            nodes: [node(3), node(2)], ways: [OSMStreetWay(id: 10, tags: ["highway": "primary", "oneway": "yes"], nodes: [1, 0])], restrictions: [])
        let merged = OSMStreets.merged([region, centre])
        let segments = merged.ways.flatMap { way in
            zip(way.nodes, way.nodes.dropFirst()).map { "\(way.id):\(merged.nodes[Int($0)].id)-\(merged.nodes[Int($1)].id)\(way.tags["oneway"] == "yes" ? ">" : "")" }
        }
        #expect(segments.sorted() == ["10:1-2", "10:2-3>", "10:3-4", "11:4-5"], "\(segments)")
        #expect(Set(merged.nodes.map(\.id)) == [1, 2, 3, 4, 5] && merged.nodes.count == 5)
    }
}
