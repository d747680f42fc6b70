import Geo
import Testing

/// The bounds an index walk orders and prunes by: never above (or below) the distance to any
/// point of the box.
@Suite struct DistanceBoundTests {
    struct Seeded: RandomNumberGenerator {
        var state: UInt64
        mutating func next() -> UInt64 {
            state = state &+ 0x9E37_79B9_7F4A_7C15
            var z = state
            z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
            z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
            return z ^ (z >> 31)
        }
    }

    @Test func theBoundsHoldForEveryPointOfTheBox() {
        var rng = Seeded(state: 15)
        for round in 0..<20_000 {
            let center = Coordinate(uncheckedLatitude: Double.random(in: -90...90, using: &rng), longitude: Double.random(in: -180...180, using: &rng))
            // Large boxes, and small ones as an index's nodes and points are.
            let size = round % 2 == 0 ? 40.0 : 0.01
            let south = Double.random(in: -90...(90 - size), using: &rng), west = Double.random(in: -180...(180 - size), using: &rng)
            let north = min(90, south + Double.random(in: 0...size, using: &rng)), east = min(180, west + Double.random(in: 0...(size * 3), using: &rng))
            let lower = center.distanceLowerBound(south: south, north: north, west: west, east: east)
            let upper = center.distanceUpperBound(south: south, north: north, west: west, east: east)
            for _ in 0..<4 {
                let point = Coordinate(uncheckedLatitude: Double.random(in: south...north, using: &rng), longitude: Double.random(in: west...east, using: &rng))
                let distance = point.distance(to: center)
                #expect(lower <= distance && distance <= upper, "\(center) to \(point) in \(south) \(north) \(west) \(east)")
            }
        }
    }
}
