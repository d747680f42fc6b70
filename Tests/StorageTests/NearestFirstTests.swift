import Foundation
import Geo
import Storage
import TestSupport
import Testing

/// `nearest_first` over real R*Trees: points come nearest first (within the slack their
/// rounded boxes allow), every point within the range comes, and none outside it is read.
@Suite struct NearestFirstTests {

    /// 3,000 points: around Sydney, across the 180th meridian, near a pole, and a pile on one spot.
    static func points() -> [Coordinate] {
        var rng = SplitMix64(seed: 3)
        var points: [Coordinate] = []
        for index in 0..<3_000 {
            switch index % 6 {
            case 0: points.append(Coordinate(uncheckedLatitude: Double.random(in: -0.2...0.2, using: &rng), longitude: Bool.random(using: &rng) ? Double.random(in: 179.8...180, using: &rng) : Double.random(in: -180 ... -179.8, using: &rng)))
            case 1: points.append(Coordinate(uncheckedLatitude: Double.random(in: 89.5...90, using: &rng), longitude: Double.random(in: -180...180, using: &rng)))
            case 2: points.append(Coordinate(uncheckedLatitude: -33.8688, longitude: 151.2093))
            default: points.append(Coordinate(uncheckedLatitude: -33.86 + Double.random(in: -0.5...0.5, using: &rng), longitude: 151.21 + Double.random(in: -0.5...0.5, using: &rng)))
            }
        }
        return points
    }

    @Test(arguments: [false, true])
    func pointsComeNearestFirstAndOnlyWithinTheRange(integers: Bool) throws {
        let db = try Database(path: ":memory:")
        let scale = integers ? 1e7 : 1
        try db.execute(integers ? "CREATE VIRTUAL TABLE geo USING rtree_i32(id, min_lat, max_lat, min_lon, max_lon)"
                                : "CREATE VIRTUAL TABLE geo USING rtree(id, min_lat, max_lat, min_lon, max_lon)")
        let points = Self.points()
        try db.transaction {
            for (index, point) in points.enumerated() {
                let lat = integers ? Double(Int64((point.latitude * scale).rounded())) : point.latitude
                let lon = integers ? Double(Int64((point.longitude * scale).rounded())) : point.longitude
                try db.run("INSERT INTO geo VALUES (?, ?, ?, ?, ?)", Int64(index), lat, lat, lon, lon)
            }
        }
        let centers = [Coordinate(uncheckedLatitude: -33.87, longitude: 151.2), Coordinate(uncheckedLatitude: 0, longitude: 180),
                       Coordinate(uncheckedLatitude: 0.1, longitude: -179.9), Coordinate(uncheckedLatitude: 89.9, longitude: 10)]
        for center in centers {
            for (from, to) in [(0.0, 2_000.0), (0, 60_000), (5_000, 40_000), (20_000, 20_050)] {
                var read: [Int64] = []
                var last = 0.0
                try db.forEachStep("SELECT id FROM geo WHERE id MATCH nearest_first(?, ?, ?, ?, ?)", [center.latitude, center.longitude, scale, from, to]) { row in
                    let id = row.int64(0)
                    let distance = points[Int(id)].distance(to: center)
                    #expect(distance >= last - NearestFirst.slack, "\(center): \(distance) m after \(last) m")
                    last = max(last, distance)
                    read.append(id)
                }
                // Every point in the range came; none far outside it was read.
                let want = Set(points.indices.filter { (from...to).contains(points[$0].distance(to: center)) }.map(Int64.init))
                #expect(want.isSubset(of: Set(read)), "\(center) \(from)-\(to): \(want.subtracting(read).count) missed")
                #expect(read.allSatisfy { (from - 10...to + 10).contains(points[Int($0)].distance(to: center)) })
                #expect(Set(read).count == read.count)
            }
        }
    }

    @Test func badArgumentsAreAnErrorNotACrash() throws {
        let db = try Database(path: ":memory:")
        try db.execute("CREATE VIRTUAL TABLE geo USING rtree(id, min_lat, max_lat, min_lon, max_lon)")
        try db.run("INSERT INTO geo VALUES (1, 0, 0, 0, 0)")
        for args in ["0, 0, 1, 0", "95, 0, 1, 0, 10", "0, 0, 0, 0, 10"] {
            #expect(throws: SQLiteError.self) { try db.forEachStep("SELECT id FROM geo WHERE id MATCH nearest_first(\(args))") { _ in } }
        }
    }
}
