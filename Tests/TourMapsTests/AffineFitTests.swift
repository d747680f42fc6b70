import Foundation
import Geo
import Testing
import TestSupport
import TourMaps

/// A known map: pixel → degrees given directly as lon = c + a·x + b·y, lat = f + d·x + e·y, so
/// the fit must find exactly this, built from a scale, rotation and shear in metres.
struct KnownMap: CustomStringConvertible {
    let name: String
    let degrees: Affine2D

    /// `metersPerPixel` across, rotated `rotationDegrees` anticlockwise (north-up is 0), with
    /// x sheared by `shear`·y, the top-left corner at `topLeft`; y grows southwards as on a map.
    init(_ name: String, topLeft: Coordinate, metersPerPixel: Double, rotationDegrees: Double, shear: Double, stretchY: Double = 1) {
        self.name = name
        let theta = rotationDegrees * .pi / 180
        // Pixel (x, y) → metres (east, north) before rotation: (s·(x + shear·y), −s·stretchY·y).
        let s = metersPerPixel
        let (p, q, r, t) = (s, s * shear, 0.0, -s * stretchY)
        // Rotate anticlockwise by theta.
        let (a, b) = (cos(theta) * p - sin(theta) * r, cos(theta) * q - sin(theta) * t)
        let (d, e) = (sin(theta) * p + cos(theta) * r, sin(theta) * q + cos(theta) * t)
        let metersPerDegreeNorth = Earth.meanRadiusMeters * .pi / 180
        let metersPerDegreeEast = metersPerDegreeNorth * cos(topLeft.latitude * .pi / 180)
        degrees = Affine2D(
            a: a / metersPerDegreeEast, b: b / metersPerDegreeEast, c: topLeft.longitude,
            d: d / metersPerDegreeNorth, e: e / metersPerDegreeNorth, f: topLeft.latitude)
    }

    func coordinate(_ x: Double, _ y: Double) -> Coordinate {
        let (lon, lat) = degrees.apply(x, y)
        return Coordinate(uncheckedLatitude: lat, longitude: lon)
    }

    func point(_ x: Double, _ y: Double) -> ControlPoint { ControlPoint(x: x, y: y, coordinate: coordinate(x, y)) }

    var description: String { name }
}

/// A standard normal sample (Box–Muller) from a seeded generator.
func gaussian(_ random: inout SplitMix64) -> Double {
    let u = Double.random(in: Double.ulpOfOne..<1, using: &random), v = Double.random(in: 0..<1, using: &random)
    return (-2 * log(u)).squareRoot() * cos(2 * .pi * v)
}

let sydney = Coordinate(uncheckedLatitude: -33.852, longitude: 151.205)

@Suite struct AffineFitTests {
    static let maps = [
        KnownMap("north-up, 2 m/px", topLeft: sydney, metersPerPixel: 2, rotationDegrees: 0, shear: 0),
        KnownMap("rotated 30°", topLeft: sydney, metersPerPixel: 1.5, rotationDegrees: 30, shear: 0),
        KnownMap("scaled 0.25 m/px, rotated -75°", topLeft: sydney, metersPerPixel: 0.25, rotationDegrees: -75, shear: 0),
        KnownMap("sheared 0.3, stretched", topLeft: sydney, metersPerPixel: 3, rotationDegrees: 10, shear: 0.3, stretchY: 1.4),
        KnownMap("Helsinki, rotated 170°", topLeft: Coordinate(uncheckedLatitude: 60.17, longitude: 24.94), metersPerPixel: 1, rotationDegrees: 170, shear: 0),
    ]

    @Test(arguments: maps)
    func aKnownTransformIsFoundExactly(map: KnownMap) throws {
        let (width, height) = (4000, 3000)
        var random = SplitMix64(seed: 15)
        let points = (0..<6).map { _ in map.point(Double.random(in: 0...4000, using: &random), Double.random(in: 0...3000, using: &random)) }
        let fit = try MapGeoreference.fit(points, width: width, height: height)
        #expect(fit.residualsMeters.count == 6)
        #expect(fit.residualsMeters.allSatisfy { $0 < 0.001 })
        #expect(fit.rmsMeters < 0.001)
        // Anywhere on the map, both ways, measured by great-circle distance (not the fit's frame).
        for _ in 0..<50 {
            let x = Double.random(in: -100...4100, using: &random), y = Double.random(in: -100...3100, using: &random)
            #expect(greatCircleDistance(fit.coordinate(x: x, y: y), map.coordinate(x, y)) < 0.01)
            let back = fit.pixel(of: map.coordinate(x, y))
            #expect(abs(back.x - x) < 1e-4 && abs(back.y - y) < 1e-4)
        }
    }

    @Test(arguments: maps)
    func theWorldFileIsADBECFAtPixelCentres(map: KnownMap) throws {
        let points = [map.point(0, 0), map.point(4000, 0), map.point(0, 3000), map.point(4000, 3000)]
        let fit = try MapGeoreference.fit(points, width: 4000, height: 3000)
        let lines = fit.worldFile.split(separator: "\n", omittingEmptySubsequences: false)
        #expect(lines.count == 7 && lines[6].isEmpty)  // six lines, each ended by a newline
        let values = try lines.prefix(6).map { try #require(Double(String($0))) }
        let t = map.degrees
        // Per pixel of column i and row j, the centre of the top-left pixel at (0.5, 0.5).
        let expected = [t.a, t.d, t.b, t.e, t.c + t.a * 0.5 + t.b * 0.5, t.f + t.d * 0.5 + t.e * 0.5]
        for (value, want) in zip(values, expected) {
            #expect(abs(value - want) <= 1e-9 * max(1, abs(want)), "\(value) vs \(want)")
        }
        // Reading it back: pixel (column 1234, row 567)'s centre.
        let lon = values[0] * 1234 + values[2] * 567 + values[4], lat = values[1] * 1234 + values[3] * 567 + values[5]
        #expect(greatCircleDistance(Coordinate(uncheckedLatitude: lat, longitude: lon), map.coordinate(1234.5, 567.5)) < 0.01)
    }

    @Test func aRealGroundSurveyFitsWithinCentimetres() throws {
        // Places measured on the sphere (destination along bearings), not from an affine map:
        // the flat frame's own error over 2 km must stay far below the 25 m bound.
        let origin = sydney
        var points: [ControlPoint] = []
        for (x, y) in [(0.0, 0.0), (2000, 0), (0, 2000), (2000, 2000), (1000, 1000)] {
            let east = origin.destination(bearingDegrees: 90, distanceMeters: x)
            points.append(ControlPoint(x: x, y: y, coordinate: east.destination(bearingDegrees: 180, distanceMeters: y)))
        }
        let fit = try MapGeoreference.fit(points, width: 2000, height: 2000)
        #expect(fit.rmsMeters < 0.5)
        #expect(fit.residualsMeters.allSatisfy { $0 < 0.5 })
    }

    @Test func seededNoiseGivesTheExpectedResidualsAndAGoodTransform() throws {
        let map = Self.maps[1]
        var random = SplitMix64(seed: 2026)
        let sigma = 5.0  // metres in each of east and north
        var points: [ControlPoint] = []
        for _ in 0..<30 {
            let x = Double.random(in: 0...4000, using: &random), y = Double.random(in: 0...3000, using: &random)
            let truth = map.coordinate(x, y)
            let noisy = truth.destination(bearingDegrees: 0, distanceMeters: sigma * gaussian(&random))
                .destination(bearingDegrees: 90, distanceMeters: sigma * gaussian(&random))
            points.append(ControlPoint(x: x, y: y, coordinate: noisy))
        }
        let fit = try MapGeoreference.fit(points, width: 4000, height: 3000)
        // E[rms²] = 2σ²(n − 3)/n for 2 outputs and 3 parameters each: about 6.7 m here.
        #expect(fit.rmsMeters > 4 && fit.rmsMeters < 10, "rms \(fit.rmsMeters)")
        // Each residual is the distance from the point's place to where the fit puts its pixel.
        for (point, residual) in zip(points, fit.residualsMeters) {
            #expect(abs(greatCircleDistance(point.coordinate, fit.coordinate(x: point.x, y: point.y)) - residual) < 0.01)
        }
        let rms = (fit.residualsMeters.map { $0 * $0 }.reduce(0, +) / 30).squareRoot()
        #expect(abs(rms - fit.rmsMeters) < 1e-9)
        // The fitted map is close to the true one even at the corners.
        for (x, y) in [(0.0, 0.0), (4000, 0), (0, 3000), (4000, 3000)] {
            #expect(greatCircleDistance(fit.coordinate(x: x, y: y), map.coordinate(x, y)) < 8)
        }
        // The bound is a parameter: 5 m refuses the same points, reporting every residual.
        let error = try #require(throws: AffineFitError.self) {
            try MapGeoreference.fit(points, width: 4000, height: 3000, limits: AffineFitLimits(maxRMSMeters: 5))
        }
        guard case .residualTooLarge(let rms2, 5, let residuals) = error else { Issue.record("got \(error)"); return }
        #expect(abs(rms2 - fit.rmsMeters) < 1e-9 && residuals == fit.residualsMeters)
    }

    @Test func pointsThatDisagreeBeyondTheDefaultBoundAreRefused() throws {
        let map = Self.maps[0]
        var points = [map.point(0, 0), map.point(4000, 0), map.point(0, 3000), map.point(4000, 3000), map.point(2000, 1500)]
        // The fifth point's place is 100 m north of where the map puts it.
        points[4] = ControlPoint(x: 2000, y: 1500, coordinate: map.coordinate(2000, 1500).destination(bearingDegrees: 0, distanceMeters: 100))
        let error = try #require(throws: AffineFitError.self) { try MapGeoreference.fit(points, width: 4000, height: 3000) }
        guard case .residualTooLarge(let rms, 25, let residuals) = error else { Issue.record("got \(error)"); return }
        // Least squares spreads the 100 m: the odd point keeps the most.
        #expect(rms > 25 && residuals.count == 5 && residuals.firstIndex(of: residuals.max() ?? 0) == 4)
        #expect(error.description.contains("RMS residual"))
        // 20 m off passes the default 25 m bound.
        points[4] = ControlPoint(x: 2000, y: 1500, coordinate: map.coordinate(2000, 1500).destination(bearingDegrees: 0, distanceMeters: 20))
        #expect(try MapGeoreference.fit(points, width: 4000, height: 3000).rmsMeters < 25)
    }

    @Test func fewerThanThreeOrTooManyPointsAreRefused() throws {
        let map = Self.maps[0]
        #expect(throws: AffineFitError.pointCount(2, minimum: 3, maximum: 100)) {
            try MapGeoreference.fit([map.point(0, 0), map.point(10, 10)], width: 100, height: 100)
        }
        #expect(throws: AffineFitError.pointCount(0, minimum: 3, maximum: 100)) { try MapGeoreference.fit([], width: 100, height: 100) }
        let many = (0..<101).map { map.point(Double($0), Double(($0 * 37) % 100)) }
        #expect(throws: AffineFitError.pointCount(101, minimum: 3, maximum: 100)) { try MapGeoreference.fit(many, width: 100, height: 100) }
        #expect(try MapGeoreference.fit(Array(many.prefix(100)), width: 100, height: 100).rmsMeters < 0.001)
    }

    @Test func collinearAndNearlyCollinearPixelsAreRefused() throws {
        let map = Self.maps[0]
        let onALine = [map.point(0, 0), map.point(1000, 1000), map.point(2000, 2000)]
        let error = try #require(throws: AffineFitError.self) { try MapGeoreference.fit(onALine, width: 3000, height: 3000) }
        guard case .nearlyCollinear("pixel", let condition, 100) = error else { Issue.record("got \(error)"); return }
        #expect(condition == .infinity)
        #expect(error.description.contains("on one line"))
        // One pixel off a 3000-pixel line: a sliver, refused; 100 pixels off: accepted.
        let sliver = [map.point(0, 0), map.point(3000, 0), map.point(1500, 1)]
        #expect(throws: AffineFitError.self) { try MapGeoreference.fit(sliver, width: 3000, height: 3000) }
        let triangle = [map.point(0, 0), map.point(3000, 0), map.point(1500, 100)]
        #expect(try MapGeoreference.fit(triangle, width: 3000, height: 3000).rmsMeters < 0.001)
        // The same point three times is as degenerate as it gets.
        #expect(throws: AffineFitError.self) {
            try MapGeoreference.fit([map.point(5, 5), map.point(5, 5), map.point(5, 5)], width: 10, height: 10)
        }
    }

    @Test func collinearPlacesAreRefusedEvenWhenThePixelsAreSpread() throws {
        let map = Self.maps[0]
        // A good triangle of pixels, but the three places on one street.
        let places = [map.coordinate(0, 0), map.coordinate(500, 500), map.coordinate(1000, 1000)]
        let points = zip([(0.0, 0.0), (1000.0, 0.0), (0.0, 1000.0)], places).map { ControlPoint(x: $0.0, y: $0.1, coordinate: $1) }
        let error = try #require(throws: AffineFitError.self) { try MapGeoreference.fit(points, width: 1000, height: 1000) }
        guard case .nearlyCollinear("geographic", _, _) = error else { Issue.record("got \(error)"); return }
    }

    @Test func pointsOutsideTheImageAreRefusedWithTheirIndex() throws {
        let map = Self.maps[0]
        let good = [map.point(0, 0), map.point(100, 0), map.point(0, 80), map.point(100, 80)]
        #expect(try MapGeoreference.fit(good, width: 100, height: 80).rmsMeters < 0.001)  // edges are inside
        for (bad, index) in [((100.5, 10.0), 1), ((10.0, -0.5), 2), ((Double.nan, 1.0), 3), ((1.0, Double.infinity), 0)] {
            var points = good
            points[index] = ControlPoint(x: bad.0, y: bad.1, coordinate: good[index].coordinate)
            let error = try #require(throws: AffineFitError.self) { try MapGeoreference.fit(points, width: 100, height: 80) }
            guard case .pointOutsideImage(index, _, _, 100, 80) = error else { Issue.record("got \(error)"); continue }
        }
        #expect(throws: AffineFitError.invalidImageSize(width: 0, height: 80)) { try MapGeoreference.fit(good, width: 0, height: 80) }
    }

    @Test func aMapAcrossTheAntimeridianFits() throws {
        let map = KnownMap("Fiji", topLeft: Coordinate(uncheckedLatitude: -16.8, longitude: 179.99), metersPerPixel: 2, rotationDegrees: 15, shear: 0)
        // Longitudes past 180 wrap to -180…: the fit must take the short way round.
        let points = [(0.0, 0.0), (2000.0, 0.0), (0.0, 2000.0), (2000.0, 2000.0)].map { x, y in
            let raw = map.coordinate(x, y)
            let longitude = raw.longitude > 180 ? raw.longitude - 360 : raw.longitude
            return ControlPoint(x: x, y: y, coordinate: Coordinate(uncheckedLatitude: raw.latitude, longitude: longitude))
        }
        #expect(points.contains { $0.coordinate.longitude < 0 } && points.contains { $0.coordinate.longitude > 0 })
        let fit = try MapGeoreference.fit(points, width: 2000, height: 2000)
        #expect(fit.rmsMeters < 0.001)
        let corner = fit.coordinate(x: 2000, y: 2000)
        #expect((-180...180).contains(corner.longitude))
        #expect(greatCircleDistance(corner, points[3].coordinate) < 0.01)
    }

    @Test func pointsBeyond85DegreesAreRefused() throws {
        let points = [(0.0, 0.0), (10.0, 0.0), (0.0, 10.0)].enumerated().map { index, pixel in
            ControlPoint(x: pixel.0, y: pixel.1, coordinate: Coordinate(uncheckedLatitude: index == 2 ? 85.5 : 84.9, longitude: Double(index) * 0.01))
        }
        #expect(throws: AffineFitError.tooCloseToPole(index: 2, latitude: 85.5)) { try MapGeoreference.fit(points, width: 10, height: 10) }
    }

    @Test(arguments: maps)
    func aCompassBearingTurnsWithTheMap(map: KnownMap) throws {
        let points = [map.point(0, 0), map.point(4000, 0), map.point(0, 3000), map.point(4000, 3000)]
        let fit = try MapGeoreference.fit(points, width: 4000, height: 3000)
        let start = map.coordinate(2000, 1500)
        for bearing in stride(from: 0.0, to: 360, by: 22.5) {
            // Walk 50 m along the bearing and see where that goes on the image.
            let (from, to) = (fit.pixel(of: start), fit.pixel(of: start.destination(bearingDegrees: bearing, distanceMeters: 50)))
            var expected = atan2(to.x - from.x, -(to.y - from.y)) * 180 / .pi
            if expected < 0 { expected += 360 }
            let angle = fit.imageAngle(ofBearing: bearing)
            #expect((0..<360).contains(angle))
            let difference = abs(angle - expected).truncatingRemainder(dividingBy: 360)
            #expect(min(difference, 360 - difference) < 0.05, "bearing \(bearing): \(angle) vs \(expected)")
        }
    }

    @Test func onANorthUpMapTheAngleIsTheBearingAndRotationAddsToIt() throws {
        for (map, turn) in [(Self.maps[0], 0.0), (Self.maps[1], 30), (Self.maps[4], 170)] {
            let fit = try MapGeoreference.fit([map.point(0, 0), map.point(4000, 0), map.point(0, 3000)], width: 4000, height: 3000)
            #expect(abs(fit.imageAngle(ofBearing: 0) - turn) < 1e-6)
            #expect(abs(fit.imageAngle(ofBearing: 90) - (90 + turn).truncatingRemainder(dividingBy: 360)) < 1e-6)
        }
    }

    @Test func controlPointsAreJSONWithXYLatLon() throws {
        let point = try JSONDecoder().decode(ControlPoint.self, from: Data(#"{"x":12.5,"y":3,"lat":-33.85,"lon":151.2}"#.utf8))
        #expect(point == ControlPoint(x: 12.5, y: 3, coordinate: Coordinate(uncheckedLatitude: -33.85, longitude: 151.2)))
        #expect(throws: DecodingError.self) {
            try JSONDecoder().decode(ControlPoint.self, from: Data(#"{"x":1,"y":3,"lat":-95,"lon":151.2}"#.utf8))
        }
        let again = try JSONDecoder().decode(ControlPoint.self, from: try JSONEncoder().encode(point))
        #expect(again == point)
    }
}
