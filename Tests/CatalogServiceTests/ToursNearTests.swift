import Bus
@testable import CatalogService
import Contracts
import Foundation
import Geo
import Testing

/// `tours.list near` over the R*Tree of tour stops: every page, read to the end, is what
/// measuring every stop of every tour gives, whatever the budget, and stays so as places
/// move, tours change and things are deleted (the index is kept by triggers).
@Suite struct ToursNearTests {
    /// A small linear congruential generator, so the catalog is the same on every run.
    struct Seeded {
        var state: UInt64
        mutating func next(_ range: ClosedRange<Double>) -> Double {
            state = state &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
            return range.lowerBound + Double(state >> 11) / Double(1 << 53) * (range.upperBound - range.lowerBound)
        }
        mutating func index(_ count: Int) -> Int { min(count - 1, Int(next(0...Double(count)))) }
    }

    final class World {
        let catalog: CatalogFixture
        var points: [Int64: Coordinate] = [:]
        var tours: [Int64: [Int64]] = [:]

        init(budget: Int) throws {
            var options = CatalogOptions()
            options.toursNearReadBudget = budget
            catalog = try CatalogFixture(options: options)
        }

        func place(_ lat: Double, _ lon: Double) throws -> Int64 {
            let place = try catalog.create("P", lat: lat, lon: lon)
            points[place.id] = Coordinate(uncheckedLatitude: place.lat, longitude: place.lon)
            return place.id
        }

        func tour(_ stops: [Int64]) throws -> Int64 {
            let made = try catalog.client.call("tours.create", TourInput(name: "T", stops: stops), as: Tour.self)
            tours[made.id] = stops
            return made.id
        }

        /// What measuring every stop gives: tours with a stop within `radius`, nearest first.
        func expected(_ center: Coordinate, _ radius: Double) -> [(id: Int64, distance: Double)] {
            tours.compactMap { id, stops -> (id: Int64, distance: Double)? in
                let nearest = stops.compactMap { points[$0]?.distance(to: center) }.min() ?? .infinity
                return nearest <= radius ? (id, nearest) : nil
            }.sorted { ($0.distance, $0.id) < ($1.distance, $1.id) }
        }

        /// Every page of `tours.list near`, read to the end (at most 400 pages).
        func listed(_ center: Coordinate, _ radius: Double, limit: Int) throws -> (tours: [(id: Int64, distance: Double)], pages: Int) {
            var found: [(id: Int64, distance: Double)] = []
            var cursor: String?
            for page in 1...400 {
                let cursorJSON = cursor.map { #","cursor":"\#($0)""# } ?? ""
                let reply = try catalog.raw(
                    "tours.list", #"{"near":{"lat":\#(center.latitude),"lon":\#(center.longitude)},"radius_m":\#(radius),"limit":\#(limit)\#(cursorJSON)}"#)
                let items = reply["tours"] as? [[String: Any]] ?? []
                #expect(items.count <= limit)
                found += items.map { (Int64($0["id"] as? Int ?? 0), $0["distance_m"] as? Double ?? -1) }
                cursor = reply["next_cursor"] as? String
                if cursor == nil { return (found, page) }
            }
            Issue.record("more than 400 pages")
            return (found, 400)
        }

        func check(_ center: Coordinate, _ radius: Double, limit: Int, _ note: String) throws {
            let want = expected(center, radius)
            let (got, _) = try listed(center, radius, limit: limit)
            #expect(got.map(\.id) == want.map(\.id), "\(note): \(got.count) listed, \(want.count) expected")
            for (g, w) in zip(got, want) where abs(g.distance - w.distance) > 1e-6 {
                Issue.record("\(note): tour \(g.id) at \(g.distance) m, expected \(w.distance) m")
                break
            }
        }
    }

    /// A catalog of tours around Sydney and across the 180th meridian, some sharing stops,
    /// some with many; `budget` index rows a page.
    static func world(budget: Int) throws -> (World, [Coordinate]) {
        let world = try World(budget: budget)
        var random = Seeded(state: 42)
        var sydney: [Int64] = []
        for _ in 0..<90 { sydney.append(try world.place(-33.86 + random.next(-0.25...0.25), 151.21 + random.next(-0.3...0.3))) }
        // A few places on one spot, as a square's attractions are.
        for _ in 0..<6 { sydney.append(try world.place(-33.8688, 151.2093)) }
        var meridian: [Int64] = []
        for _ in 0..<16 { meridian.append(try world.place(random.next(-0.05...0.05), random.next(-1...1) < 0 ? random.next(179.96...180) : random.next(-180 ... -179.96))) }
        for _ in 0..<36 {
            let count = 1 + random.index(8)
            _ = try world.tour(Array(Set((0..<count).map { _ in sydney[random.index(sydney.count)] })))
        }
        _ = try world.tour(Array(sydney.prefix(60)))
        for _ in 0..<6 { _ = try world.tour(Array(Set((0..<3).map { _ in meridian[random.index(meridian.count)] }))) }
        let centers = [
            Coordinate(uncheckedLatitude: -33.8688, longitude: 151.2093), Coordinate(uncheckedLatitude: -33.95, longitude: 151.0),
            Coordinate(uncheckedLatitude: 0, longitude: 179.999), Coordinate(uncheckedLatitude: 0.01, longitude: -179.99),
        ]
        return (world, centers)
    }

    @Test(arguments: [20_000, 40, 1])
    func everyPageIsWhatMeasuringEveryStopGives(budget: Int) throws {
        let (world, centers) = try Self.world(budget: budget)
        for center in centers {
            for radius in [300.0, 2_500, 20_000, 100_000] {
                for limit in [1, 3, 50] {
                    try world.check(center, radius, limit: limit, "budget \(budget), \(center), \(radius) m, limit \(limit)")
                }
            }
        }
    }

    @Test func theIndexFollowsMovesChangesAndDeletions() throws {
        let (world, centers) = try Self.world(budget: 30)
        let catalog = world.catalog
        let ids = world.points.keys.sorted()
        // A place moves across the city; another goes; a tour changes its stops; one goes.
        let moved = ids[3]
        _ = try catalog.raw("catalog.update", #"{"id":\#(moved),"lat":-33.8688,"lon":151.2094}"#)
        world.points[moved] = Coordinate(uncheckedLatitude: -33.8688, longitude: 151.2094)
        let deleted = ids[5]
        _ = try catalog.client.call("catalog.delete", PlaceID(id: deleted), as: PlaceDeleted.self)
        world.points[deleted] = nil
        for (tour, stops) in world.tours {
            world.tours[tour] = stops.filter { $0 != deleted }
        }
        world.tours = world.tours.filter { !$0.value.isEmpty }
        let changed = try #require(world.tours.keys.sorted().first)
        _ = try catalog.raw("tours.update", #"{"id":\#(changed),"stops":[\#(ids[7]),\#(ids[70])]}"#)
        world.tours[changed] = [ids[7], ids[70]]
        let gone = try #require(world.tours.keys.sorted().last)
        _ = try catalog.raw("tours.delete", #"{"id":\#(gone)}"#)
        world.tours[gone] = nil
        for center in centers {
            for radius in [2_500.0, 100_000] {
                try world.check(center, radius, limit: 4, "after changes, \(center), \(radius) m")
            }
        }
    }

    /// A page reads at most its budget of index rows: with a budget of
    /// one row, pages end early, each gets further than the last, and nothing is skipped.
    @Test func aSmallBudgetEndsPagesEarlierNotWrong() throws {
        let (world, centers) = try Self.world(budget: 1)
        let (tours, pages) = try world.listed(centers[1], 100_000, limit: 50)
        let everything = world.expected(centers[1], 100_000)
        #expect(tours.map(\.id) == everything.map(\.id))
        // With the default budget one page holds them all.
        #expect(pages > 1 && everything.count <= 50)
    }

    /// A tour cursor's text is held to what the encoder writes: hex in lower case without
    /// leading zeros, the id as written, and a distance that is finite and not below zero.
    @Test func tourCursorsAreCanonicalInside() throws {
        let good = TourDistanceCursor(distance: 1_234.5, id: 7)
        #expect(try TourDistanceCursor.decode(good.encoded).id == 7)
        let hex = String((1_234.5).bitPattern, radix: 16)
        for text in ["d\(hex.uppercased()):7", "d0\(hex):7", "d\(hex):+7", "d\(hex):07", "d\(String((-1.0).bitPattern, radix: 16)):7"] {
            #expect(throws: ServiceError.self) { try TourDistanceCursor.decode(OpaqueCursor.encode(text)) }
        }
    }
}
