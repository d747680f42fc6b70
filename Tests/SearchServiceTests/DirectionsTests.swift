import Bus
import Contracts
import Foundation
import Geo
@testable import SearchService
import ContentImport
import Routing
import Synchronization
import Testing
import TestSupport

/// Directions and trip order: the exact order against brute force, the heuristic against the
/// exact one on random trips, and the requests over a search service's real sockets.
@Suite struct TripOrderTests {
    /// Random points in the Sydney box, as distances on the sphere (index 0 is the start).
    static func trip(_ count: Int, _ rng: inout SplitMix64) -> [[Double]] {
        let points = (0...count).map { _ in
            Coordinate(uncheckedLatitude: Double.random(in: -33.95 ... -33.80, using: &rng), longitude: Double.random(in: 151.10...151.30, using: &rng))
        }
        return points.map { a in points.map { a.distance(to: $0) } }
    }

    /// Every order, the shortest by brute force.
    static func bruteForce(_ d: [[Double]], roundTrip: Bool) -> Double {
        var best = Double.infinity
        func permute(_ rest: [Int], _ order: [Int]) {
            if rest.isEmpty { best = min(best, TripOrder.length(order, roundTrip: roundTrip) { d[$0][$1] }); return }
            for (i, node) in rest.enumerated() {
                var left = rest
                left.remove(at: i)
                permute(left, order + [node])
            }
        }
        permute(Array(1..<d.count), [])
        return best
    }

    @Test func theExactOrderIsTheShortestBruteForceFinds() {
        var rng = SplitMix64(seed: 16)
        for count in 1...8 {
            for roundTrip in [false, true] {
                let d = Self.trip(count, &rng)
                let order = TripOrder.order(visits: count, roundTrip: roundTrip, exact: true) { d[$0][$1] }
                #expect(Set(order) == Set(1...count) && order.count == count)
                let length = TripOrder.length(order, roundTrip: roundTrip) { d[$0][$1] }
                #expect(abs(length - Self.bruteForce(d, roundTrip: roundTrip)) < 1e-6, "\(count) places, round trip \(roundTrip)")
            }
        }
    }

    @Test func theHeuristicIsWithinFivePercentOnAverageAndFifteenAtWorst() {
        var rng = SplitMix64(seed: 2027)
        var ratios: [Double] = []
        for count in 13...15 {
            for i in 0..<8 {
                let roundTrip = i % 2 == 0
                let d = Self.trip(count, &rng)
                let exact = TripOrder.length(TripOrder.order(visits: count, roundTrip: roundTrip, exact: true) { d[$0][$1] }, roundTrip: roundTrip) { d[$0][$1] }
                let heuristic = TripOrder.order(visits: count, roundTrip: roundTrip, exact: false) { d[$0][$1] }
                #expect(Set(heuristic) == Set(1...count))
                ratios.append(TripOrder.length(heuristic, roundTrip: roundTrip) { d[$0][$1] } / exact)
            }
        }
        let mean = ratios.reduce(0, +) / Double(ratios.count)
        #expect(mean <= 1.05 && ratios.allSatisfy { $0 >= 1 - 1e-9 && $0 <= 1.15 }, "mean \(mean), worst \(ratios.max() ?? 0)")
    }
}

@Suite(.serialized) struct DirectionsServiceTests {
    @Test func directionsGiveDistanceBearingAnEstimateAndTheLinksEachModeHas() throws {
        let f = try SearchFixture()
        let seq = try f.place(1, name: "Sydney Opera House", lat: -33.8568, lon: 151.2153)
        #expect(try f.caughtUp("catalog", to: seq))
        let from = Coordinate(uncheckedLatitude: -33.8688, longitude: 151.2093), opera = Coordinate(uncheckedLatitude: -33.8568, longitude: 151.2153)
        let walking = try call(f, "directions.get", #"{"from":{"lat":-33.8688,"lon":151.2093},"to":1,"mode":"walking"}"#)
        let metres = from.distance(to: opera)
        #expect(abs((walking["distance_m"] as? Double ?? 0) - metres) < 0.01)
        #expect(abs((walking["bearing_deg"] as? Double ?? 0) - from.initialBearing(to: opera)) < 1e-6)
        #expect(abs((walking["duration_s"] as? Double ?? 0) - metres * 1.3 / (4.8 / 3.6)) < 0.01 && walking["estimate"] as? Bool == true)
        #expect((walking["to"] as? [String: Any])?["name"] as? String == "Sydney Opera House")
        let links = try #require(walking["links"] as? [String: String])
        #expect(Set(links.keys) == ["google", "apple", "osm"] && links["osm"]?.contains("fossgis_osrm_foot") == true)
        #expect(links["google"]?.contains("travelmode=walking") == true && links["apple"]?.contains("dirflg=w") == true)
        // OpenStreetMap has no transit, Apple Maps no cycling flag: their links are left out.
        let transit = try call(f, "directions.get", #"{"from":{"lat":-33.8688,"lon":151.2093},"to":{"lat":-33.85,"lon":151.21},"mode":"transit"}"#)
        #expect(Set((transit["links"] as? [String: String] ?? [:]).keys) == ["google", "apple"])
        let bicycling = try call(f, "directions.get", #"{"from":{"lat":-33.8688,"lon":151.2093},"to":1,"mode":"bicycling"}"#)
        #expect(Set((bicycling["links"] as? [String: String] ?? [:]).keys) == ["google", "osm"])

        #expect(refusal(f, "directions.get", #"{"from":{"lat":-33.8688,"lon":151.2093},"to":99}"#)?.code == .notFound)
        // An unknown mode is named, cut to 40 bytes, with the modes there are.
        let flying = refusal(f, "directions.get", #"{"from":{"lat":-33.8688,"lon":151.2093},"to":1,"mode":"flying\#(String(repeating: "x", count: 100_000))"}"#)
        #expect(flying?.code == .invalidArgument && flying?.field == "mode" && (flying?.message.utf8.count ?? .max) < 120, "\(String(describing: flying).prefix(200))")
        #expect(flying?.message.hasSuffix("use walking, bicycling, driving or transit") == true)
        #expect(refusal(f, "directions.get", #"{"from":{"lat":91,"lon":151.2093},"to":1}"#)?.field == "from.lat")
    }

    @Test func aPlanOrdersTheVisitsShortestAndRefusesTooMany() throws {
        let f = try SearchFixture()
        // Four places along a line north of the start, given out of order.
        var seq: Int64 = 0
        for (i, lat) in [-33.80, -33.86, -33.82, -33.84].enumerated() { seq = try f.place(i + 1, name: "Stop \(i + 1)", lat: lat, lon: 151.2) }
        #expect(try f.caughtUp("catalog", to: seq))
        let plan = try call(f, "directions.plan", #"{"start":{"lat":-33.88,"lon":151.2},"place_ids":[1,2,3,4],"mode":"walking"}"#)
        #expect(plan["order"] as? [Int] == [2, 4, 3, 1] && plan["exact"] as? Bool == true, "\(plan)")
        #expect((plan["legs"] as? [Any])?.count == 4)
        let round = try call(f, "directions.plan", #"{"start":{"lat":-33.88,"lon":151.2},"place_ids":[1,2,3,4],"round_trip":true}"#)
        #expect((round["legs"] as? [[String: Any]])?.count == 5 && (round["total_distance_m"] as? Double ?? 0) > (plan["total_distance_m"] as? Double ?? 0))
        let many = (1...26).map(String.init).joined(separator: ",")
        #expect(refusal(f, "directions.plan", #"{"start":{"lat":-33.88,"lon":151.2},"place_ids":[\#(many)]}"#)?.field == "place_ids")
        #expect(refusal(f, "directions.plan", #"{"start":{"lat":-33.88,"lon":151.2},"place_ids":[1,1]}"#)?.field == "place_ids")
        #expect(refusal(f, "directions.plan", #"{"start":{"lat":-33.88,"lon":151.2},"place_ids":[1,77]}"#)?.field == "place_ids[1]")
    }
}

/// Routed directions over a search service's real sockets: a street network the (fake) catalog
/// keeps is fetched, built, and answers routes; where it cannot, the answer says why.
@Suite(.serialized) struct RoutedDirectionsTests {
    /// A 3 × 3 grid of residential streets 100 m apart north of (60, 25), its bottom row one way
    /// westwards, a footway across the first cell, and an island street 5 km away.
    static let network: String = {
        let dLat = 0.0009, dLon = 0.0018
        var xml = "<osm version=\"0.6\">"
        for r in 0..<3 { for c in 0..<3 { xml += "<node id=\"\(r * 3 + c + 1)\" lat=\"\(60 + Double(r) * dLat)\" lon=\"\(25 + Double(c) * dLon)\"/>" } }
        xml += #"<node id="50" lat="60.05" lon="25.0"/><node id="51" lat="60.0509" lon="25.0"/>"#
        for r in 0..<3 {
            let oneWay = r == 0 ? #"<tag k="oneway" v="-1"/>"# : ""
            xml += "<way id=\"\(101 + r)\"><nd ref=\"\(r * 3 + 1)\"/><nd ref=\"\(r * 3 + 2)\"/><nd ref=\"\(r * 3 + 3)\"/><tag k=\"highway\" v=\"residential\"/><tag k=\"name\" v=\"Row \(r)\"/>\(oneWay)</way>"
        }
        for c in 0..<3 {
            xml += "<way id=\"\(201 + c)\"><nd ref=\"\(c + 1)\"/><nd ref=\"\(c + 4)\"/><nd ref=\"\(c + 7)\"/><tag k=\"highway\" v=\"residential\"/><tag k=\"name\" v=\"Column \(c)\"/></way>"
        }
        xml += #"<way id="301"><nd ref="1"/><nd ref="5"/><tag k="highway" v="footway"/></way>"#
        xml += #"<way id="401"><nd ref="50"/><nd ref="51"/><tag k="highway" v="residential"/></way></osm>"#
        return xml
    }()

    /// Gives the fake catalog the network and waits (at most 20 s) until search routes on it.
    private func routed(_ f: SearchFixture) throws -> Bool {
        let bytes = try OSMStreets(bytes: Array(Self.network.utf8)).encoded()
        _ = try f.catalogClient.call("fake.streets", FakeStreets(id: 1, data: Data(bytes).base64EncodedString()), as: Int64.self)
        for _ in 0..<400 {
            let answer = try call(f, "directions.get", #"{"from":{"lat":60.0,"lon":25.0},"to":{"lat":60.0018,"lon":25.0036},"mode":"driving"}"#)
            if answer["status"] as? String == "routed" { return true }
            usleep(50_000)
        }
        return false
    }

    @Test func routesFollowTheStreetsAndSayWhenTheyCannot() throws {
        let f = try SearchFixture()
        // No network yet: an estimate, which says why.
        let before = try call(f, "directions.get", #"{"from":{"lat":60.0,"lon":25.0},"to":{"lat":60.0018,"lon":25.0036},"mode":"driving"}"#)
        #expect(before["status"] as? String == "estimate" && before["estimate"] as? Bool == true)
        #expect((before["reason"] as? String)?.contains("no street network is loaded") == true)
        #expect(try routed(f), "search never routed on the catalog's network")

        let block = Coordinate(uncheckedLatitude: 60, longitude: 25).distance(to: Coordinate(uncheckedLatitude: 60, longitude: 25.0018))
        let north = Coordinate(uncheckedLatitude: 60, longitude: 25).distance(to: Coordinate(uncheckedLatitude: 60.0009, longitude: 25))
        // East along the bottom row is against its one-way street: the car goes round, the walker not.
        let driven = try call(f, "directions.get", #"{"from":{"lat":60.0,"lon":25.0},"to":{"lat":60.0,"lon":25.0036},"mode":"driving"}"#)
        #expect(driven["status"] as? String == "routed" && driven["estimate"] as? Bool == false)
        #expect(abs((driven["distance_m"] as? Double ?? 0) - (2 * block + 2 * north)) < 1, "\(driven)")
        #expect(abs((driven["duration_s"] as? Double ?? 0) - (2 * block + 2 * north) / (48 / 3.6)) < 0.1)
        let polyline = try #require(driven["polyline"] as? String)
        let points = try #require(Polyline.decode(polyline))
        #expect(points.count == 5 && abs(points[0].latitude - 60) < 1e-5 && abs(points[4].longitude - 25.0036) < 1e-5, "\(points)")
        let steps = try #require(driven["steps"] as? [[String: Any]])
        #expect(steps.first?["maneuver"] as? String == "depart" && steps.last?["maneuver"] as? String == "arrive", "\(steps)")
        #expect(steps.map { $0["instruction"] as? String ?? "" }.contains("Turn right onto Row 1"), "\(steps.map { $0["instruction"] ?? "" })")
        let walked = try call(f, "directions.get", #"{"from":{"lat":60.0,"lon":25.0},"to":{"lat":60.0,"lon":25.0036},"mode":"walking"}"#)
        #expect(abs((walked["distance_m"] as? Double ?? 0) - 2 * block) < 1)
        // The footway is the walker's, never the car's.
        let diagonal = try call(f, "directions.get", #"{"from":{"lat":60.0,"lon":25.0},"to":{"lat":60.0009,"lon":25.0018},"mode":"walking"}"#)
        #expect((diagonal["steps"] as? [[String: Any]])?.first?["street"] == nil && (diagonal["distance_m"] as? Double ?? 0) < block + north - 50)

        // The island: both ends on the network, no path joins them.
        let island = try call(f, "directions.get", #"{"from":{"lat":60.0,"lon":25.0},"to":{"lat":60.0504,"lon":25.0},"mode":"driving"}"#)
        #expect(island["status"] as? String == "no_route" && island["distance_m"] == nil && (island["reason"] as? String)?.contains("no route") == true)
        // Off the network: the straight line, and why.
        let far = try call(f, "directions.get", #"{"from":{"lat":60.0,"lon":25.0},"to":{"lat":60.2,"lon":25.0},"mode":"driving"}"#)
        #expect(far["status"] as? String == "estimate" && (far["reason"] as? String)?.contains("the destination is more than 500 m") == true)
        // Transit stays an estimate, and says so.
        let transit = try call(f, "directions.get", #"{"from":{"lat":60.0,"lon":25.0},"to":{"lat":60.0018,"lon":25.0036},"mode":"transit"}"#)
        #expect(transit["status"] as? String == "estimate" && (transit["reason"] as? String)?.contains("transit") == true)
        // The same point twice is a route of nothing.
        let same = try call(f, "directions.get", #"{"from":{"lat":60.0009,"lon":25.0018},"to":{"lat":60.0009,"lon":25.0018},"mode":"driving"}"#)
        #expect(same["status"] as? String == "routed" && same["distance_m"] as? Double == 0)
    }

    @Test func aMatrixAgreesWithRoutesAndIsBounded() throws {
        let f = try SearchFixture()
        #expect(try routed(f))
        let grid = (0..<3).flatMap { r in (0..<3).map { c in #"{"lat":\#(60 + Double(r) * 0.0009),"lon":\#(25 + Double(c) * 0.0018)}"# } }
        let points = grid + [#"{"lat":60.0504,"lon":25.0}"#]
        let matrix = try call(f, "directions.matrix", #"{"sources":[\#(points.joined(separator: ","))],"destinations":[\#(points.joined(separator: ","))],"mode":"driving"}"#)
        #expect(matrix["status"] as? String == "routed" && (matrix["reason"] as? String)?.contains("null") == true)
        let durations = try #require(matrix["durations_s"] as? [[Any]])
        #expect(durations.count == 10 && durations.allSatisfy { $0.count == 10 })
        for i in [0, 2, 4, 9] {
            for j in [0, 2, 4, 8, 9] {
                let single = try call(f, "directions.get", #"{"from":\#(points[i]),"to":\#(points[j]),"mode":"driving"}"#)
                let cell = durations[i][j] as? Double
                if single["status"] as? String == "routed" {
                    #expect(abs((cell ?? -1) - (single["duration_s"] as? Double ?? 0)) < 0.01, "\(i) → \(j)")
                } else {
                    #expect(cell == nil, "\(i) → \(j): \(single)")
                }
            }
        }
        let many = Array(repeating: #"{"lat":60.0,"lon":25.0}"#, count: 26).joined(separator: ",")
        #expect(throws: ServiceError.self) {
            _ = try call(f, "directions.matrix", #"{"sources":[\#(many)],"destinations":[{"lat":60.0,"lon":25.0}]}"#)
        }
        let destinations = refusal(f, "directions.matrix", #"{"sources":[{"lat":60.0,"lon":25.0}],"destinations":[\#(many)]}"#)
        #expect(destinations?.field == "destinations" && destinations?.message.contains("1 to 25") == true, "\(String(describing: destinations))")
        // A routed plan orders by routed times.
        for (id, lat, lon) in [(1, 60.0018, 25.0036), (2, 60.0, 25.0036), (3, 60.0018, 25.0)] {
            try f.place(id, name: "Stop \(id)", lat: lat, lon: lon)
        }
        var plan: [String: Any] = [:]
        for _ in 0..<100 {
            plan = (try? call(f, "directions.plan", #"{"start":{"lat":60.0,"lon":25.0},"place_ids":[1,2,3],"mode":"driving"}"#)) ?? [:]
            if !plan.isEmpty { break }
            usleep(50_000)
        }
        #expect(plan["estimate"] as? Bool == false && plan["reason"] == nil && (plan["order"] as? [Int])?.count == 3, "\(plan)")
    }
}

/// A search request's reply as JSON, over the fixture's client.
func call(_ f: SearchFixture, _ type: String, _ json: String) throws -> [String: Any] {
    let reply = try #require(f.searchClient).request(type: type, body: Data(json.utf8))
    return try #require(try JSONSerialization.jsonObject(with: reply.bodyJSON) as? [String: Any])
}

/// The error a search request is refused with, nil when it is answered.
func refusal(_ f: SearchFixture, _ type: String, _ json: String) -> ServiceError? {
    do {
        _ = try call(f, type, json)
        return nil
    } catch {
        return error as? ServiceError
    }
}

/// A route of more turns than a reply keeps steps for: the first 1,999 and the arrival.
@Test func aRouteOfThousandsOfTurnsKeepsItsFirstStepsAndItsArrival() throws {
    // A staircase of 2,400 blocks 100 m long, east then north in turn, each a street of its own name.
    var nodes: [OSMStreetNode] = []
    var ways: [OSMStreetWay] = []
    var (lat, lon) = (60.0, 25.0)
    for i in 0...2_400 {
        nodes.append(OSMStreetNode(id: Int64(i + 1), lat: lat, lon: lon))
        if i > 0 { ways.append(OSMStreetWay(id: Int64(i), tags: ["highway": "residential", "name": "Step \(i)"], nodes: [Int32(i - 1), Int32(i)])) }
        if i % 2 == 0 { lon += 0.0018 } else { lat += 0.0009 }
    }
    let engine = RouteEngine(streets: OSMStreets(nodes: nodes, ways: ways, restrictions: []), profile: .foot)
    let last = try #require(nodes.last)
    let route = try engine.route(from: Coordinate(uncheckedLatitude: 60, longitude: 25), to: Coordinate(uncheckedLatitude: last.lat, longitude: last.lon))
    let steps = RouteSteps.steps(route, texts: .english)
    #expect(route.stretches.count == 2_400)
    #expect(steps.count == RouteSteps.maxSteps && steps.first?.maneuver == "depart" && steps.last?.maneuver == "arrive")
    #expect(steps[1].instruction == "Turn left onto Step 2" && steps[2].instruction == "Turn right onto Step 3", "\(steps.prefix(3).map(\.instruction))")
}

/// A catalog that does not answer is asked once, not once per language: a client sending a new
/// `lang` each time cannot make every request wait (issue 33's attack).
@Test func aSilentCatalogIsAskedOnceForAllLanguages() throws {
    let texts = RouteTexts()
    let asked = Mutex(0)
    for tag in ["de", "ru", "fi", "sv", "fr", "it", "es", "pt", "nl", "pl"] {
        let got = texts.texts(try LanguagePreference(tag)) {
            asked.withLock { $0 += 1 }
            throw ServiceError(.unavailable, "no catalog")
        }
        #expect(got.lang == "en" && got.text("route.arrive") == "Arrive at your destination")
    }
    #expect(asked.withLock { $0 } == 1)
}

/// A long `lang` is sent as a list the catalog takes, and a list the catalog refuses quiets no
/// other language (the review of issue 33: one request could silence every language for 5 s).
@Test func aRefusedLanguageListQuietsNoOther() throws {
    let long = try LanguagePreference((0..<16).map { "a\(String(UnicodeScalar(UInt8(97 + $0))))-BB-CC" }.joined(separator: ","))
    let asked = RouteTexts.asked(long)
    #expect(asked.split(separator: ",").count <= LanguagePreference.maxEntries && asked.utf8.count <= LanguagePreference.maxBytes)
    #expect((try? LanguagePreference(asked)) != nil, "the catalog would refuse \(asked)")
    let texts = RouteTexts()
    let calls = Mutex(0)
    for tag in ["de", "ru"] {
        _ = texts.texts(try LanguagePreference(tag)) {
            calls.withLock { $0 += 1 }
            throw ServiceError.invalid("lang", "refused")
        }
    }
    #expect(calls.withLock { $0 } == 2)
}
