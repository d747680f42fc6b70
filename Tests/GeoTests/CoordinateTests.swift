import Foundation
import Testing
import Geo

/// Builds a coordinate from literals known to be valid, failing the test otherwise.
func point(_ latitude: Double, _ longitude: Double) throws -> Coordinate {
    try Coordinate(latitude: latitude, longitude: longitude)
}

@Suite struct DistanceTests {
    @Test func sydneyOperaHouseToHarbourBridgeIsAbout650Meters() throws {
        let opera = try point(-33.8568, 151.2153), bridge = try point(-33.8523, 151.2108)
        let distance = greatCircleDistance(opera, bridge)
        #expect(distance > 600 && distance < 700)
        // Independent check: the equirectangular approximation is exact to ~1e-6 at this scale.
        let meanLatitude = (opera.latitude + bridge.latitude) / 2 * .pi / 180
        let northMeters = (bridge.latitude - opera.latitude) * .pi / 180 * Earth.meanRadiusMeters
        let eastMeters = (bridge.longitude - opera.longitude) * .pi / 180 * cos(meanLatitude) * Earth.meanRadiusMeters
        let flatDistance = (northMeters * northMeters + eastMeters * eastMeters).squareRoot()
        #expect(abs(distance - flatDistance) / flatDistance < 0.001)
        #expect(abs(distance - 650) / 650 < 0.01)
    }

    @Test func londonToParisIsAbout343Point5Kilometers() throws {
        let london = try point(51.5074, -0.1278), paris = try point(48.8566, 2.3522)
        #expect(abs(london.distance(to: paris) - 343_500) / 343_500 < 0.005)
    }

    @Test(arguments: [(0.0, 0.0, 0.0, 180.0), (10, 20, -10, -160), (90, 0, -90, 0), (-45.5, 179.5, 45.5, -0.5)])
    func antipodalPointsAreHalfACircumferenceApart(lat1: Double, lon1: Double, lat2: Double, lon2: Double) throws {
        let distance = greatCircleDistance(try point(lat1, lon1), try point(lat2, lon2))
        #expect(!distance.isNaN)
        #expect(abs(distance - .pi * Earth.meanRadiusMeters) < 1)
    }

    @Test func samePointIsZeroAndDistanceIsSymmetric() throws {
        let a = try point(12.34, -56.78), b = try point(-40.1, 100.2)
        #expect(greatCircleDistance(a, a) == 0)
        #expect(abs(a.distance(to: b) - b.distance(to: a)) < 1e-6)
    }

    @Test func destinationTravelsTheRequestedDistanceAndBearing() throws {
        let start = try point(48.8566, 2.3522)
        let end = start.destination(bearingDegrees: 60, distanceMeters: 250_000)
        #expect(abs(start.distance(to: end) - 250_000) < 0.01)
        #expect(abs(start.initialBearing(to: end) - 60) < 1e-6)
    }

    @Test func destinationNormalisesLongitudeAcrossTheAntimeridian() throws {
        let end = try point(0, 179.9).destination(bearingDegrees: 90, distanceMeters: 50_000)
        #expect(end.longitude < -179 && end.longitude >= -180)
        #expect(abs(end.latitude) < 1e-9)
    }
}

@Suite struct BearingTests {
    @Test(arguments: [(1.0, 0.0, 0.0), (0, 1, 90), (-1, 0, 180), (0, -1, 270)])
    func cardinalDirectionsFromTheOrigin(latitude: Double, longitude: Double, expected: Double) throws {
        let bearing = try point(0, 0).initialBearing(to: try point(latitude, longitude))
        #expect(abs(bearing - expected) < 1e-9)
    }

    @Test func dueNorthAwayFromTheEquatorIsZero() throws {
        #expect(try point(40, 10).initialBearing(to: try point(50, 10)) == 0)
    }

    @Test func londonToParisHeadsSouthEast() throws {
        let bearing = try point(51.5074, -0.1278).initialBearing(to: try point(48.8566, 2.3522))
        #expect(abs(bearing - 148.1) < 0.5)
    }

    @Test func bearingIsAlwaysInZeroToThreeSixty() throws {
        let bearing = try point(0, 0).initialBearing(to: try point(-1e-12, -1e-9))
        #expect(bearing >= 0 && bearing < 360)
    }
}

@Suite struct CoordinateValidationTests {
    @Test(arguments: [Double.nan, .infinity, -.infinity, 90.0001, -90.0001])
    func invalidLatitudeIsRejected(latitude: Double) {
        let error = #expect(throws: GeoError.self) { try Coordinate(latitude: latitude, longitude: 0) }
        #expect(error?.field == "lat")
    }

    @Test(arguments: [Double.nan, .infinity, -.infinity, 180.0001, -180.0001])
    func invalidLongitudeIsRejected(longitude: Double) {
        let error = #expect(throws: GeoError.self) { try Coordinate(latitude: 0, longitude: longitude) }
        #expect(error?.field == "lon")
    }

    @Test func boundaryValuesAreAccepted() throws {
        for (latitude, longitude) in [(90.0, 180.0), (-90, -180), (0, 0)] {
            let coordinate = try point(latitude, longitude)
            #expect(coordinate.latitude == latitude && coordinate.longitude == longitude)
        }
    }

    @Test func errorsDescribeTheirField() {
        #expect(GeoError.invalidLatitude(91).description.hasPrefix("lat "))
        #expect(GeoError.invalidRadius(0).field == "radius_m")
        #expect(GeoError.invalidBoundingBox(reason: "x").field == "bbox")
    }
}

@Suite struct CoordinateCodingTests {
    @Test func encodesWithLatAndLonKeys() throws {
        let data = try JSONEncoder().encode(try point(1.5, -2.25))
        let object = try JSONSerialization.jsonObject(with: data) as? [String: Double]
        #expect(object == ["lat": 1.5, "lon": -2.25])
        #expect(try JSONDecoder().decode(Coordinate.self, from: data) == (try point(1.5, -2.25)))
    }

    @Test(arguments: [(#"{"lat":91,"lon":0}"#, "lat"), (#"{"lat":0,"lon":-180.5}"#, "lon")])
    func decodingOutOfRangeValuesNamesTheField(json: String, field: String) {
        let error = #expect(throws: DecodingError.self) {
            try JSONDecoder().decode(Coordinate.self, from: Data(json.utf8))
        }
        guard case .dataCorrupted(let context) = error else {
            Issue.record("expected dataCorrupted, got \(String(describing: error))")
            return
        }
        #expect(context.codingPath.last?.stringValue == field)
    }
}
