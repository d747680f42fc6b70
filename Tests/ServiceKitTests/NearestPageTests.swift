import Geo
import ServiceKit
import TestSupport
import Testing

/// `NearestPage` over points held in memory, handed over nearest first with the disorder an
/// index of rounded boxes has: every page, read to the end, is what measuring every point
/// gives, whatever the budget, for things of one point and of many.
@Suite struct NearestPageTests {

    static let slack = 4.0

    /// Things (ids) with their points, near Sydney and across the 180th meridian, and a pile on one spot.
    static func things(pointsEach: ClosedRange<Int>) -> [(id: Int64, point: Coordinate)] {
        var rng = SplitMix64(seed: 7)
        var points: [(id: Int64, point: Coordinate)] = []
        for id in Int64(1)...150 {
            for _ in 0..<Int.random(in: pointsEach, using: &rng) {
                let point = id % 10 == 0
                    ? Coordinate(uncheckedLatitude: Double.random(in: -0.05...0.05, using: &rng),
                                 longitude: Bool.random(using: &rng) ? Double.random(in: 179.97...180, using: &rng) : Double.random(in: -180 ... -179.97, using: &rng))
                    : Coordinate(uncheckedLatitude: -33.86 + Double.random(in: -0.3...0.3, using: &rng), longitude: 151.21 + Double.random(in: -0.3...0.3, using: &rng))
                points.append((id, point))
            }
        }
        for id in Int64(200)...220 { points.append((id, Coordinate(uncheckedLatitude: -33.8688, longitude: 151.2093))) }
        return points
    }

    /// Reads every page; `mostRead` is the most points one page was handed.
    static func walkAll(
        _ points: [(id: Int64, point: Coordinate)], center: Coordinate, radius: Double, limit: Int, budget: Int
    ) throws -> (items: [NearestPage.Cursor], pages: Int, mostRead: Int) {
        // Nearest first by a distance off by up to half the slack either way, as rounded boxes are.
        var rng = SplitMix64(seed: 11)
        let ordered = points.map { (id: $0.id, point: $0.point, key: $0.point.distance(to: center) + Double.random(in: -slack / 2...slack / 2, using: &rng)) }
            .sorted { $0.key < $1.key }
        var items: [NearestPage.Cursor] = []
        var after: NearestPage.Cursor?
        var mostRead = 0
        for page in 1...3_000 {
            var read = 0
            let walk = NearestPage(center: center, radius: radius, after: after, limit: limit, budget: budget, slack: slack)
            let (found, next) = try walk.page(
                points: { take in
                    for entry in ordered where entry.key >= walk.range.from - slack && entry.key <= walk.range.to + slack {
                        read += 1
                        guard try take(entry.id, entry.point) else { break }
                    }
                },
                servedBefore: { id, distance in
                    let own = points.filter { $0.id == id }
                    return (own.contains { $0.point.distance(to: center) < distance }, own.count)
                })
            mostRead = max(mostRead, read)
            #expect(found.count <= limit)
            items += found
            guard let next else { return (items, page, mostRead) }
            #expect(next.distance >= after?.distance ?? 0, "a page went back")
            after = next
        }
        Issue.record("more than 3,000 pages")
        return (items, 3_000, mostRead)
    }

    static func expected(_ points: [(id: Int64, point: Coordinate)], center: Coordinate, radius: Double) -> [NearestPage.Cursor] {
        var nearest: [Int64: Double] = [:]
        for (id, point) in points { nearest[id] = min(nearest[id] ?? .infinity, point.distance(to: center)) }
        return nearest.filter { $0.value <= radius }.map { (distance: $0.value, id: $0.key) }.sorted { ($0.distance, $0.id) < ($1.distance, $1.id) }
    }

    @Test(arguments: [1...1, 1...6])
    func everyPageIsWhatMeasuringEveryPointGives(pointsEach: ClosedRange<Int>) throws {
        let points = Self.things(pointsEach: pointsEach)
        let centers = [
            Coordinate(uncheckedLatitude: -33.8688, longitude: 151.2093), Coordinate(uncheckedLatitude: -34.1, longitude: 150.9),
            Coordinate(uncheckedLatitude: 0, longitude: 179.999), Coordinate(uncheckedLatitude: 0.02, longitude: -179.99),
        ]
        for center in centers {
            for radius in [200.0, 3_000, 30_000, 100_000] {
                let want = Self.expected(points, center: center, radius: radius)
                for limit in [1, 7, 100] {
                    for budget in [1, 25, 100_000] {
                        let (got, _, _) = try Self.walkAll(points, center: center, radius: radius, limit: limit, budget: budget)
                        let note = "\(center) \(radius) m, limit \(limit), budget \(budget)"
                        #expect(got.map(\.id) == want.map(\.id), "\(note)")
                        #expect(zip(got, want).allSatisfy { $0.distance == $1.distance }, "\(note)")
                    }
                }
            }
        }
    }

    /// A page reads at most its budget, and more only to get past its cursor: the pile of 21
    /// on one spot is read whole, once.
    @Test func aPageReadsAtMostItsBudget() throws {
        let points = Self.things(pointsEach: 1...6)
        let center = Coordinate(uncheckedLatitude: -33.8688, longitude: 151.2093)
        let small = try Self.walkAll(points, center: center, radius: 100_000, limit: 100, budget: 25)
        let whole = try Self.walkAll(points, center: center, radius: 100_000, limit: 1_000, budget: 100_000)
        #expect(whole.pages == 1 && whole.mostRead > 300)
        #expect(small.pages > 5)
        #expect(small.mostRead <= 25 + 21 + 6, "a page read \(small.mostRead)")
    }
}
