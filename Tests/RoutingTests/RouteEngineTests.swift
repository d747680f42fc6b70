import ContentImport
import Foundation
import Geo
import Testing

@testable import Routing

/// A small network written as OSM XML: a 3 × 3 grid of streets 100 m apart (about 0.0009° of
/// latitude, 0.0018° of longitude at 60° N), with what each test adds.
enum Grid {
    static let lat0 = 60.0
    static let lon0 = 25.0
    static let dLat = 0.0009
    static let dLon = 0.0018

    /// Node id of row r, column c (1-based ids).
    static func node(_ r: Int, _ c: Int) -> Int { r * 3 + c + 1 }
    static func point(_ r: Int, _ c: Int) -> Coordinate {
        Coordinate(uncheckedLatitude: lat0 + Double(r) * dLat, longitude: lon0 + Double(c) * dLon)
    }

    /// Ways by id: their nodes and tags.
    static func osm(ways: [(id: Int, nodes: [Int], tags: [String: String])], extraNodes: String = "", relations: String = "") -> OSMStreets {
        var xml = "<osm version=\"0.6\">\n"
        for r in 0..<3 {
            for c in 0..<3 {
                let p = point(r, c)
                xml += "<node id=\"\(node(r, c))\" lat=\"\(p.latitude)\" lon=\"\(p.longitude)\"/>\n"
            }
        }
        xml += extraNodes
        for way in ways {
            xml += "<way id=\"\(way.id)\">"
            for n in way.nodes { xml += "<nd ref=\"\(n)\"/>" }
            for (k, v) in way.tags.sorted(by: { $0.key < $1.key }) { xml += "<tag k=\"\(k)\" v=\"\(v)\"/>" }
            xml += "</way>\n"
        }
        xml += relations + "</osm>\n"
        return try! OSMStreets(bytes: Array(xml.utf8))
    }

    /// Every row and column a residential street, each its own way (rows 101…, columns 201…).
    static func streets(_ overrides: [Int: [String: String]] = [:]) -> [(id: Int, nodes: [Int], tags: [String: String])] {
        var ways: [(id: Int, nodes: [Int], tags: [String: String])] = []
        for r in 0..<3 { ways.append((101 + r, (0..<3).map { node(r, $0) }, ["highway": "residential", "name": "Row \(r)"])) }
        for c in 0..<3 { ways.append((201 + c, (0..<3).map { node($0, c) }, ["highway": "residential", "name": "Column \(c)"])) }
        return ways.map { way in (way.id, way.nodes, way.tags.merging(overrides[way.id] ?? [:]) { $1 }) }
    }
}

@Suite struct RouteEngineTests {
    @Test func aRouteFollowsTheStreetsAtTheProfilesSpeed() throws {
        let engine = RouteEngine(streets: Grid.osm(ways: Grid.streets()), profile: .motorcar)
        let route = try engine.route(from: Grid.point(0, 0), to: Grid.point(2, 2))
        // Two blocks north and two east: 4 × 100 m, at 48 km/h on residential streets.
        let expected = 2 * Grid.point(0, 0).distance(to: Grid.point(1, 0)) + 2 * Grid.point(0, 0).distance(to: Grid.point(0, 1))
        #expect(abs(route.metres - expected) < 0.5)
        #expect(abs(route.seconds - expected / (48 / 3.6)) < 0.05)
        #expect(route.points.first == Grid.point(0, 0))
        #expect(route.points.last == Grid.point(2, 2))
        #expect(route.points.count == 5)
        #expect(route.stretches.allSatisfy { $0.name?.hasPrefix("Row") == true || $0.name?.hasPrefix("Column") == true })
        #expect(abs(route.stretches.map(\.metres).reduce(0, +) - route.metres) < 0.01)
        // Along one street, one stretch.
        let along = try engine.route(from: Grid.point(1, 0), to: Grid.point(1, 2))
        #expect(along.stretches.map(\.name) == ["Row 1"])
        #expect(along.stretches.map { [$0.firstPoint, $0.lastPoint] } == [[0, 2]])
    }

    @Test func aCarDrivingAgainstAOneWayStreetGoesTheLongWayRound() throws {
        // Row 0 one way westwards: east along it is forbidden to cars, not to walkers.
        let streets = Grid.osm(ways: Grid.streets([101: ["oneway": "-1"]]))
        let car = RouteEngine(streets: streets, profile: .motorcar)
        let walker = RouteEngine(streets: streets, profile: .foot)
        let block = Grid.point(0, 0).distance(to: Grid.point(0, 1))
        let north = Grid.point(0, 0).distance(to: Grid.point(1, 0))
        let driven = try car.route(from: Grid.point(0, 0), to: Grid.point(0, 2))
        #expect(abs(driven.metres - (2 * block + 2 * north)) < 0.5, "up, along row 1, and back down")
        let walked = try walker.route(from: Grid.point(0, 0), to: Grid.point(0, 2))
        #expect(abs(walked.metres - 2 * block) < 0.5)
        // Westwards the car takes the one-way street.
        let back = try car.route(from: Grid.point(0, 2), to: Grid.point(0, 0))
        #expect(abs(back.metres - 2 * block) < 0.5)
    }

    @Test func walkersUseFootwaysAndCarsNever() throws {
        // A footway straight across the grid's diagonal cell, 0,0 to 1,1.
        var ways = Grid.streets()
        ways.append((301, [Grid.node(0, 0), Grid.node(1, 1)], ["highway": "footway"]))
        let streets = Grid.osm(ways: ways)
        let diagonal = Grid.point(0, 0).distance(to: Grid.point(1, 1))
        let walked = try RouteEngine(streets: streets, profile: .foot).route(from: Grid.point(0, 0), to: Grid.point(1, 1))
        #expect(abs(walked.metres - diagonal) < 0.5)
        let driven = try RouteEngine(streets: streets, profile: .motorcar).route(from: Grid.point(0, 0), to: Grid.point(1, 1))
        #expect(driven.metres > diagonal * 1.3)
        // Cycling is not allowed on a plain footway either (Routino's default).
        let cycled = try RouteEngine(streets: streets, profile: .bicycle).route(from: Grid.point(0, 0), to: Grid.point(1, 1))
        #expect(cycled.metres > diagonal * 1.3)
    }

    @Test func aTurnRestrictionIsObeyed() throws {
        // No left turn from column 0 going north (way 201) into row 1 going west... the grid's
        // left edge: use column 1 northwards turning left (west) into row 1 at node (1,1).
        let relation = """
            <relation id="900"><member type="way" ref="202" role="from"/><member type="node" ref="\(Grid.node(1, 1))" role="via"/>\
            <member type="way" ref="102" role="to"/><tag k="type" v="restriction"/><tag k="restriction" v="no_left_turn"/></relation>

            """
        // Column 1 is split at the middle so the restriction's from way ends at the via node.
        var ways = Grid.streets().filter { $0.id != 202 }
        ways.append((202, [Grid.node(0, 1), Grid.node(1, 1)], ["highway": "residential", "name": "Column 1"]))
        ways.append((212, [Grid.node(1, 1), Grid.node(2, 1)], ["highway": "residential", "name": "Column 1"]))
        let streets = Grid.osm(ways: ways, relations: relation)
        #expect(streets.restrictions.count == 1)
        let car = RouteEngine(streets: streets, profile: .motorcar)
        #expect(car.restrictionsApplied == 1)
        let walker = RouteEngine(streets: streets, profile: .foot)
        // From the middle of column 1's south block to node (1,0): the direct turn is forbidden.
        let start = Coordinate(uncheckedLatitude: Grid.lat0 + Grid.dLat / 2, longitude: Grid.lon0 + Grid.dLon)
        let walked = try walker.route(from: start, to: Grid.point(1, 0))
        let driven = try car.route(from: start, to: Grid.point(1, 0))
        #expect(abs(walked.metres - (Grid.point(0, 0).distance(to: Grid.point(0, 1)) + Grid.point(0, 0).distance(to: Grid.point(1, 0)) / 2)) < 1)
        #expect(driven.metres > walked.metres + 50, "the car goes round: \(driven.metres) m against \(walked.metres) m")
        // Straight on through the same node is still allowed.
        let straight = try car.route(from: start, to: Grid.point(2, 1))
        #expect(abs(straight.metres - 1.5 * Grid.point(0, 0).distance(to: Grid.point(1, 0))) < 1)
    }

    @Test func pointsOffTheNetworkOrOnAnotherPieceAreNamed() throws {
        // An island: a street 5 km away that joins nothing.
        let island = """
            <node id="50" lat="60.05" lon="25.0"/><node id="51" lat="60.0509" lon="25.0"/>

            """
        var ways = Grid.streets()
        ways.append((401, [50, 51], ["highway": "residential"]))
        let engine = RouteEngine(streets: Grid.osm(ways: ways, extraNodes: island), profile: .motorcar)
        let far = Coordinate(uncheckedLatitude: 61, longitude: 25)
        #expect(throws: RoutingError.offNetwork(end: .from, nearestMetres: nil)) { try engine.route(from: far, to: Grid.point(0, 0)) }
        #expect(throws: RoutingError.offNetwork(end: .to, nearestMetres: nil)) { try engine.route(from: Grid.point(0, 0), to: far) }
        #expect(throws: RoutingError.noRoute) {
            try engine.route(from: Grid.point(0, 0), to: Coordinate(uncheckedLatitude: 60.0504, longitude: 25))
        }
        // The same point twice is a route of nothing.
        let none = try engine.route(from: Grid.point(1, 1), to: Grid.point(1, 1))
        #expect(none.metres == 0 && none.seconds == 0)
    }

    @Test func aMatrixAgreesWithSingleRoutes() throws {
        let engine = RouteEngine(streets: Grid.osm(ways: Grid.streets([102: ["oneway": "yes"], 202: ["oneway": "-1"]])), profile: .motorcar)
        let points = (0..<3).flatMap { r in (0..<3).map { c in Grid.point(r, c) } } + [Coordinate(uncheckedLatitude: 61, longitude: 25)]
        let matrix = engine.matrix(sources: points, destinations: points)
        for (i, from) in points.enumerated() {
            for (j, to) in points.enumerated() {
                let single = try? engine.route(from: from, to: to)
                #expect(matrix[i][j].map { ($0.seconds * 1000).rounded() } == single.map { ($0.seconds * 1000).rounded() }, "\(i) → \(j)")
                if let cell = matrix[i][j], let single { #expect(abs(cell.metres - single.metres) < 0.5) }
            }
        }
    }

    @Test func theEncodedPolylineIsGooglesFormat() throws {
        // Google's own example.
        let points = [
            Coordinate(uncheckedLatitude: 38.5, longitude: -120.2), Coordinate(uncheckedLatitude: 40.7, longitude: -120.95),
            Coordinate(uncheckedLatitude: 43.252, longitude: -126.453),
        ]
        #expect(Polyline.encode(points) == "_p~iF~ps|U_ulLnnqC_mqNvxq`@")
        #expect(Polyline.decode("_p~iF~ps|U_ulLnnqC_mqNvxq`@") == points)
        #expect(Polyline.decode("_p~iF") == nil, "a latitude without its longitude")
        #expect(Polyline.decode("_p~iF~ps|U_") == nil, "a number cut short")
        #expect(Polyline.decode("ab c") == nil)
    }
}

@Suite struct HostileNetworkTests {
    /// A way drawn across the world would cover billions of grid cells: it is kept apart, the
    /// engine is built at once, and it can still be snapped to and routed along.
    @Test func aSegmentAcrossTheWorldIsIndexedApart() throws {
        var ways = Grid.streets()
        ways.append((501, [Grid.node(0, 0), 60], ["highway": "residential", "name": "Long"]))
        let far = #"<node id="60" lat="-60.0" lon="-150.0"/>"#
        let clock = ContinuousClock()
        var engine: RouteEngine?
        let took = clock.measure { engine = RouteEngine(streets: Grid.osm(ways: ways, extraNodes: far), profile: .motorcar) }
        #expect(took < .seconds(5))
        let built = try #require(engine)
        let snap = try #require(built.snap(Coordinate(uncheckedLatitude: -60.0001, longitude: -150)))
        #expect(snap.metres < 20)
        let route = try built.route(from: Coordinate(uncheckedLatitude: -60, longitude: -150), to: Grid.point(1, 1))
        #expect(route.metres > 10_000_000)
        // Walked, the same segment is weeks: its weight is capped, and sums never overflow.
        let walker = RouteEngine(streets: Grid.osm(ways: ways + [(502, [60, Grid.node(2, 2)], ["highway": "residential"])], extraNodes: far), profile: .foot)
        let walked = try walker.route(from: Grid.point(0, 0), to: Grid.point(2, 2))
        #expect(walked.metres < 500, "the grid, not the world round: \(walked.metres)")
        let matrix = walker.matrix(sources: [Coordinate(uncheckedLatitude: -60, longitude: -150)], destinations: [Grid.point(1, 1)])
        #expect(matrix[0][0] != nil)
    }
}

extension HostileNetworkTests {
    /// A node joining 3,000 ways (or one way looping through it 2,000 times) would be millions
    /// of turns and shortcuts: a node keeps its first 32 segments, and every profile builds at once.
    @Test func aNodeOfThousandsOfWaysIsCutOff() throws {
        var nodes = ""
        var ways: [(id: Int, nodes: [Int], tags: [String: String])] = []
        var loop = [Grid.node(1, 1)]
        for i in 0..<3_000 {
            let angle = Double(i) / 3_000 * 2 * .pi
            nodes += "<node id=\"\(1_000 + i)\" lat=\"\(60.01 + 0.001 * sin(angle))\" lon=\"\(25.01 + 0.002 * cos(angle))\"/>"
            ways.append((10_000 + i, [Grid.node(1, 1), 1_000 + i], ["highway": "residential"]))
            if i < 999 { loop += [1_000 + i, Grid.node(1, 1)] }
        }
        ways.append((20_000, loop, ["highway": "footway"]))
        let streets = Grid.osm(ways: Grid.streets() + ways, extraNodes: nodes)
        let clock = ContinuousClock()
        for profile in RouteProfile.allCases {
            var engine: RouteEngine?
            let took = clock.measure { engine = RouteEngine(streets: streets, profile: profile) }
            let graph = try #require(engine).graph
            #expect(took < .seconds(20), "\(profile): \(took)")
            #expect(graph.segments.count < 32 + 12 + 3_000, "\(profile): \(graph.segments.count) segments")
            #expect(graph.arcs.count <= 32 * 32 + 8 * graph.segments.count, "\(profile): \(graph.arcs.count) arcs")
        }
        // The grid's own streets through the hub still route.
        let car = RouteEngine(streets: streets, profile: .motorcar)
        #expect(throws: Never.self) { try car.route(from: Grid.point(0, 0), to: Grid.point(2, 2)) }
    }
}
