import Foundation
import Testing
import Geo
import TestSupport

@Suite struct BoundingBoxTests {
    @Test func validatesEdges() {
        let cases: [(Double, Double, Double, Double)] = [
            (10, 0, 5, 1), (-90.5, 0, 0, 1), (0, 0, 90.5, 1), (0, -181, 1, 0), (0, 0, 1, .nan), (.infinity, 0, 1, 1),
        ]
        for (south, west, north, east) in cases {
            let error = #expect(throws: GeoError.self) {
                try BoundingBox(south: south, west: west, north: north, east: east)
            }
            #expect(error?.field == "bbox")
        }
    }

    @Test(arguments: [0.0, -1, .nan, .infinity, -.infinity])
    func aroundRejectsInvalidRadius(radius: Double) throws {
        let center = try point(0, 0)
        let error = #expect(throws: GeoError.self) { try BoundingBox.around(center, radiusMeters: radius) }
        #expect(error?.field == "radius_m")
    }

    @Test func decodingValidatesAndNamesTheField() throws {
        let good = #"{"south":1,"west":2,"north":3,"east":4}"#
        let box = try JSONDecoder().decode(BoundingBox.self, from: Data(good.utf8))
        #expect(box == (try BoundingBox(south: 1, west: 2, north: 3, east: 4)))
        let bad = #"{"south":1,"west":200,"north":3,"east":4}"#
        let error = #expect(throws: DecodingError.self) {
            try JSONDecoder().decode(BoundingBox.self, from: Data(bad.utf8))
        }
        guard case .dataCorrupted(let context) = error else {
            Issue.record("expected dataCorrupted, got \(String(describing: error))")
            return
        }
        #expect(context.codingPath.last?.stringValue == "west")
    }

    @Test func antimeridianBoxAroundTheDateLine() throws {
        let box = try BoundingBox.around(try point(0, 179.99), radiusMeters: 10_000)
        #expect(box.west > box.east)
        #expect(box.crossesAntimeridian)
        #expect(box.contains(try point(0, -179.99)))
        #expect(box.contains(try point(0, 179.95)))
        #expect(box.contains(try point(0, 180)))
        #expect(box.contains(try point(0, -180)))
        #expect(!box.contains(try point(0, 0)))
        #expect(!box.contains(try point(0, -179.5)))
        #expect(abs(box.widthDegrees - 2 * 10_000 / Earth.meanRadiusMeters * 180 / .pi) < 1e-9)

        let parts = box.parts
        let westOfDateLine = try point(0, 179.95), eastOfDateLine = try point(0, -179.99)
        #expect(parts.count == 2)
        #expect(parts.allSatisfy { !$0.crossesAntimeridian && $0.west <= $0.east })
        #expect(parts.contains { $0.contains(westOfDateLine) })
        #expect(parts.contains { $0.contains(eastOfDateLine) })
        #expect(abs(parts.map(\.widthDegrees).reduce(0, +) - box.widthDegrees) < 1e-9)
    }

    @Test func nonCrossingBoxHasOnePart() throws {
        let box = try BoundingBox(south: -1, west: -180, north: 1, east: 180)
        #expect(box.parts == [box])
        #expect(box.widthDegrees == 360)
        #expect(box.contains(try point(0, 180)))
    }

    @Test func circleReachingAPoleSpansAllLongitudes() throws {
        let box = try BoundingBox.around(try point(89.99, 45), radiusMeters: 5_000)
        #expect(box.north == 90 && box.west == -180 && box.east == 180)
        #expect(box.contains(try point(89.999, -135)))
        let southern = try BoundingBox.around(try point(-90, 0), radiusMeters: 1)
        #expect(southern.south == -90 && southern.widthDegrees == 360)
    }

    /// For many random circles, every point inside is in the box and the box is not oversized.
    @Test func aroundContainsEveryPointWithinTheRadius() throws {
        var random = SplitMix64(seed: 0x5EED_6E0)
        let specialLatitudes = [89.9, -89.9, 89.99, -89.99, 0, 45]
        let specialLongitudes = [179.99, -179.99, 180, -180]
        var checkedPoints = 0

        for caseIndex in 0..<3_000 {
            let latitude = caseIndex % 3 == 0
                ? specialLatitudes[Int.random(in: 0..<specialLatitudes.count, using: &random)]
                : asin(Double.random(in: -1...1, using: &random)) * 180 / .pi
            let longitude = caseIndex % 4 == 0
                ? specialLongitudes[Int.random(in: 0..<specialLongitudes.count, using: &random)]
                : Double.random(in: -180...180, using: &random)
            let maxRadius = caseIndex % 10 == 0 ? 2_000_000.0 : 50_000
            let radius = exp(Double.random(in: 0...log(maxRadius), using: &random))
            let center = try point(latitude, longitude)
            let box = try BoundingBox.around(center, radiusMeters: radius)

            for sample in 0..<20 {
                let bearing = Double.random(in: 0..<360, using: &random)
                let fraction = sample < 10 ? 1 : Double.random(in: 0...1, using: &random)
                let inside = center.destination(bearingDegrees: bearing, distanceMeters: radius * 0.999999 * fraction)
                #expect(box.contains(inside), "center \(center) radius \(radius) point \(inside) box \(box)")
                checkedPoints += 1

                let outside = center.destination(
                    bearingDegrees: bearing, distanceMeters: radius * Double.random(in: 1.01...3, using: &random))
                if outside.latitude > box.north || outside.latitude < box.south {
                    #expect(!box.contains(outside))
                }
            }

            let radiusDegrees = radius / Earth.meanRadiusMeters * 180 / .pi
            let reachesPole = 90 - abs(latitude) <= radiusDegrees
            if reachesPole {
                #expect(box.widthDegrees == 360 && (box.north == 90 || box.south == -90))
            } else {
                // Tight in latitude: due north/south just beyond the radius is outside.
                #expect(!box.contains(center.destination(bearingDegrees: 0, distanceMeters: radius * 1.01)))
                #expect(!box.contains(center.destination(bearingDegrees: 180, distanceMeters: radius * 1.01)))
                let naiveWidth = 2 * radiusDegrees / cos(latitude * .pi / 180)
                #expect(box.widthDegrees <= 2 * naiveWidth + 1e-9, "center \(center) radius \(radius) box \(box)")
            }
        }
        #expect(checkedPoints == 60_000)
    }

    /// A box that reaches one side of the 180th meridian also reads the other side's line
    /// (a point on it is stored at -180 or 180); one that reaches neither, or both, does not.
    @Test func indexAreasReadTheMeridianOnBothSides() throws {
        let east = try BoundingBox(south: -1, west: 170, north: 1, east: 180)
        #expect(east.indexAreas.count == 2 && east.indexAreas.last.map { $0.west == -180 && $0.east == -180 } == true)
        let plain = try BoundingBox(south: -1, west: 10, north: 1, east: 20)
        #expect(plain.indexAreas.count == 1)
        let across = try BoundingBox(south: -1, west: 170, north: 1, east: -170)
        #expect(across.indexAreas.count == 2)
    }
}
