import ContentImport
import Foundation
import Geo
import Testing

@testable import Routing

/// Issue 33's checks against independent implementations, on the real Helsinki extract:
/// deploy/local/route-reference.py (run by deploy/local/helsinki-osm) builds each network with
/// its own code and routes 500 junction pairs per mode, walking with networkx, cycling and
/// driving with Routino's own router. Here the engine routes the same pairs.
@Suite struct IndependentRouteChecks {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
    static let reference = root.appendingPathComponent(".build/osm/helsinki-routes.json")
    static let available = FileManager.default.fileExists(atPath: reference.path) && HelsinkiContractionTests.available

    struct Pair: Decodable {
        var from: [Double]
        var to: [Double]
        var metres: Double
        var seconds: Double
    }
    struct Reference: Decodable {
        var walking: [Pair]
        var bicycling: [Pair]
        var driving: [Pair]
    }

    @Test func referenceIsPresentInCI() {
        if ProcessInfo.processInfo.environment["CI"] == "true" {
            #expect(Self.available, "run deploy/local/helsinki-osm (deploy/local/test does) to make \(Self.reference.path)")
        }
    }

    /// What went wrong with a mode's pairs, as lines, and the worst relative difference.
    func compare(_ pairs: [Pair], profile: RouteProfile, by value: (Route) -> Double, reference: (Pair) -> Double, tolerance: Double) throws
        -> (misses: [String], worst: Double)
    {
        let streets = try #require(HelsinkiContractionTests.streets)
        let engine = RouteEngine(streets: streets, profile: profile)
        var misses: [String] = []
        var worst = 0.0
        for pair in pairs {
            let from = Coordinate(uncheckedLatitude: pair.from[0], longitude: pair.from[1])
            let to = Coordinate(uncheckedLatitude: pair.to[0], longitude: pair.to[1])
            do {
                let route = try engine.route(from: from, to: to)
                let expected = reference(pair)
                let difference = expected > 0 ? abs(value(route) - expected) / expected : abs(value(route))
                worst = max(worst, difference)
                if difference > tolerance { misses.append("\(pair.from) → \(pair.to): ours \(value(route)), reference \(expected)") }
            } catch {
                misses.append("\(pair.from) → \(pair.to): \(error)")
            }
        }
        return (misses, worst)
    }

    @Test(.enabled(if: available, "deploy/local/helsinki-osm has not made .build/osm/helsinki-routes.json"))
    func walkingLengthsMatchNetworkxWithinOnePercent() throws {
        let reference = try JSONDecoder().decode(Reference.self, from: Data(contentsOf: Self.reference))
        #expect(reference.walking.count == 500)
        let (misses, worst) = try compare(reference.walking, profile: .foot, by: \.metres, reference: \.metres, tolerance: 0.01)
        print("walking: \(reference.walking.count) pairs, worst length difference \(String(format: "%.4f", worst * 100)) %")
        #expect(misses.isEmpty, "\(misses.count) of \(reference.walking.count): \(misses.prefix(5))")
    }

    @Test(.enabled(if: available, "deploy/local/helsinki-osm has not made .build/osm/helsinki-routes.json"), arguments: [RouteProfile.bicycle, .motorcar])
    func durationsMatchRoutinoWithinFivePercent(profile: RouteProfile) throws {
        let reference = try JSONDecoder().decode(Reference.self, from: Data(contentsOf: Self.reference))
        let pairs = profile == .bicycle ? reference.bicycling : reference.driving
        #expect(pairs.count == 500)
        let (misses, worst) = try compare(pairs, profile: profile, by: \.seconds, reference: \.seconds, tolerance: 0.05)
        print("\(profile): \(pairs.count) pairs, \(misses.count) beyond 5 %, worst duration difference \(String(format: "%.4f", worst * 100)) %")
        #expect(misses.isEmpty, "\(misses.count) of \(pairs.count): \(misses.prefix(5))")
    }
}

/// One-way streets and footways on the real extract: a drive against a one-way street goes the
/// long way round (a walk does not), and no drive takes a footway, while walks do.
@Suite struct HelsinkiOneWayChecks {
    @Test(.enabled(if: HelsinkiContractionTests.available, "deploy/local/helsinki-osm has not made .build/osm/helsinki.osm"))
    func drivesAgainstOneWayStreetsGoRound() throws {
        let streets = try #require(HelsinkiContractionTests.streets)
        let car = RouteEngine(streets: streets, profile: .motorcar)
        let walker = RouteEngine(streets: streets, profile: .foot)
        // Segments cars may take one way only, longer than 20 m, with both ends drivable onwards.
        let oneWay = car.graph.segments.indices.filter { index in
            let edges = car.graph.edges.filter { $0.segment == Int32(index) }
            return edges.count == 1 && car.graph.segments[index].metres > 20
        }
        #expect(oneWay.count > 100, "\(oneWay.count) one-way segments")
        var checked = 0
        var walkedStraight = 0
        for index in oneWay.prefix(200) {
            let segment = car.graph.segments[index]
            let edge = try #require(car.graph.edges.first { $0.segment == Int32(index) })
            // From the edge's head back to its tail: against the one-way street.
            let from = car.coordinates[Int(edge.head)]
            let to = car.coordinates[Int(edge.tail)]
            guard let driven = try? car.route(from: from, to: to) else { continue }
            checked += 1
            #expect(driven.metres > Double(segment.metres) + 1, "way \(streets.ways[Int(segment.way)].id): \(driven.metres) m against \(segment.metres) m")
            if let walked = try? walker.route(from: from, to: to), abs(walked.metres - Double(segment.metres)) < 0.5 { walkedStraight += 1 }
        }
        #expect(checked > 100, "\(checked) one-way segments driven against")
        // Walkers take one-way streets both ways (unless a barrier or a shorter path is there).
        #expect(walkedStraight > checked * 9 / 10, "\(walkedStraight) of \(checked) walked straight back")
    }

    @Test(.enabled(if: IndependentRouteChecks.available, "deploy/local/helsinki-osm has not made .build/osm/helsinki-routes.json"))
    func walksUseFootwaysAndDrivesNever() throws {
        let reference = try JSONDecoder().decode(IndependentRouteChecks.Reference.self, from: Data(contentsOf: IndependentRouteChecks.reference))
        let streets = try #require(HelsinkiContractionTests.streets)
        func footwayMetres(_ profile: RouteProfile, _ pairs: [IndependentRouteChecks.Pair]) -> (footway: Double, total: Double) {
            let engine = RouteEngine(streets: streets, profile: profile)
            var footway = 0.0
            var total = 0.0
            for pair in pairs {
                guard
                    let route = try? engine.route(
                        from: Coordinate(uncheckedLatitude: pair.from[0], longitude: pair.from[1]),
                        to: Coordinate(uncheckedLatitude: pair.to[0], longitude: pair.to[1]))
                else { continue }
                total += route.metres
                footway += route.stretches.filter { [.path, .steps, .cycleway].contains($0.type) }.map(\.metres).reduce(0, +)
            }
            return (footway, total)
        }
        let walks = footwayMetres(.foot, reference.walking)
        let drives = footwayMetres(.motorcar, reference.driving)
        print("footways, paths, steps and cycleways: \(Int(walks.footway)) of \(Int(walks.total)) m walked, \(Int(drives.footway)) of \(Int(drives.total)) m driven")
        #expect(walks.footway > walks.total * 0.1)
        #expect(drives.total > 0 && drives.footway == 0)
    }
}
