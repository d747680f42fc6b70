import Bus
import Contracts
import Foundation
import Geo
@testable import SearchService
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
    private func call(_ f: SearchFixture, _ type: String, _ json: String) throws -> [String: Any] {
        let reply = try #require(f.searchClient).request(type: type, body: Data(json.utf8))
        return try #require(try JSONSerialization.jsonObject(with: reply.bodyJSON) as? [String: Any])
    }

    private func refusal(_ f: SearchFixture, _ type: String, _ json: String) -> ServiceError? {
        do {
            _ = try call(f, type, json)
            return nil
        } catch {
            return error as? ServiceError
        }
    }

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
