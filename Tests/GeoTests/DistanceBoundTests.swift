import Geo
import TestSupport
import Testing

/// The bounds an index walk orders and prunes by: never above (or below) the distance to any
/// point of the box.
@Suite struct DistanceBoundTests {

    @Test func theBoundsHoldForEveryPointOfTheBox() {
        var rng = SplitMix64(seed: 15)
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
