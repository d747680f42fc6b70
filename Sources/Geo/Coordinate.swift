import Foundation

/// Constants describing the Earth as a sphere.
public enum Earth {
    /// IUGG mean Earth radius (R1) in metres, used by every distance calculation here.
    public static let meanRadiusMeters = 6_371_008.8
}

/// A validated point on the Earth's surface, in degrees (WGS 84 treated as a sphere).
///
/// Encodes to and decodes from JSON as `{"lat": …, "lon": …}`; decoding validates ranges.
public struct Coordinate: Sendable, Hashable, Codable {
    /// Degrees north of the equator, in [-90, 90].
    public let latitude: Double
    /// Degrees east of Greenwich, in [-180, 180].
    public let longitude: Double

    /// Creates a coordinate, rejecting non-finite or out-of-range values.
    public init(latitude: Double, longitude: Double) throws(GeoError) {
        guard isValidLatitude(latitude) else { throw .invalidLatitude(latitude) }
        guard isValidLongitude(longitude) else { throw .invalidLongitude(longitude) }
        self.init(uncheckedLatitude: latitude, longitude: longitude)
    }

    /// Creates a coordinate without validation: only for values computed to be in range or
    /// read back from storage that validated them (checking again on a hot path is waste).
    public init(uncheckedLatitude latitude: Double, longitude: Double) {
        self.latitude = latitude
        self.longitude = longitude
    }

    private enum CodingKeys: String, CodingKey {
        case latitude = "lat"
        case longitude = "lon"
    }

    /// Decodes `{"lat": …, "lon": …}`, throwing `DecodingError.dataCorrupted` at the offending key.
    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        let latitude = try container.decode(Double.self, forKey: .latitude)
        let longitude = try container.decode(Double.self, forKey: .longitude)
        do {
            try self.init(latitude: latitude, longitude: longitude)
        } catch {
            let key: CodingKeys = if case .invalidLatitude = error { .latitude } else { .longitude }
            throw DecodingError.dataCorruptedError(
                forKey: key, in: container, debugDescription: error.description)
        }
    }

    /// Great-circle distance to `other` in metres.
    public func distance(to other: Coordinate) -> Double {
        greatCircleDistance(self, other)
    }

    /// Initial compass bearing (forward azimuth) towards `other`, in degrees [0, 360).
    ///
    /// 0 is north, 90 east. The bearing from a point to itself is 0.
    public func initialBearing(to other: Coordinate) -> Double {
        let lat1 = radians(latitude)
        let lat2 = radians(other.latitude)
        let deltaLon = radians(other.longitude - longitude)
        let y = sin(deltaLon) * cos(lat2)
        let x = cos(lat1) * sin(lat2) - sin(lat1) * cos(lat2) * cos(deltaLon)
        var bearing = degrees(atan2(y, x)).truncatingRemainder(dividingBy: 360)
        if bearing < 0 { bearing += 360 }
        return bearing < 360 ? bearing : 0
    }

    /// The point reached by travelling `distanceMeters` along a great circle starting at `bearingDegrees`.
    ///
    /// Longitude is normalised into [-180, 180]. Uses a vector form that stays accurate
    /// for short distances near the poles. Non-finite arguments return `self` unchanged.
    public func destination(bearingDegrees: Double, distanceMeters: Double) -> Coordinate {
        guard bearingDegrees.isFinite, distanceMeters.isFinite else { return self }
        let angularDistance = distanceMeters / Earth.meanRadiusMeters
        let bearing = radians(bearingDegrees)
        let lat = radians(latitude)
        // Unit vector of the destination in a frame rotated so the start lies on longitude 0.
        let x = cos(angularDistance) * cos(lat) - sin(angularDistance) * cos(bearing) * sin(lat)
        let y = sin(angularDistance) * sin(bearing)
        let z = cos(angularDistance) * sin(lat) + sin(angularDistance) * cos(bearing) * cos(lat)
        let newLatitude = min(90, max(-90, degrees(atan2(z, (x * x + y * y).squareRoot()))))
        let newLongitude = normalizedLongitude(longitude + degrees(atan2(y, x)))
        return Coordinate(uncheckedLatitude: newLatitude, longitude: newLongitude)
    }
}

/// Great-circle (haversine) distance between two coordinates, in metres.
///
/// The asin argument is clamped to [0, 1] so rounding cannot produce NaN for antipodal points.
public func greatCircleDistance(_ a: Coordinate, _ b: Coordinate) -> Double {
    let lat1 = radians(a.latitude)
    let lat2 = radians(b.latitude)
    let halfDeltaLat = radians(b.latitude - a.latitude) / 2
    let halfDeltaLon = radians(b.longitude - a.longitude) / 2
    let h =
        sin(halfDeltaLat) * sin(halfDeltaLat)
        + cos(lat1) * cos(lat2) * sin(halfDeltaLon) * sin(halfDeltaLon)
    return 2 * Earth.meanRadiusMeters * asin(min(1, max(0, h).squareRoot()))
}

func isValidLatitude(_ value: Double) -> Bool { value.isFinite && (-90...90).contains(value) }

func isValidLongitude(_ value: Double) -> Bool { value.isFinite && (-180...180).contains(value) }

func radians(_ degrees: Double) -> Double { degrees * .pi / 180 }

func degrees(_ radians: Double) -> Double { radians * 180 / .pi }

/// Wraps a finite longitude into [-180, 180], leaving in-range values untouched.
func normalizedLongitude(_ longitude: Double) -> Double {
    if (-180...180).contains(longitude) { return longitude }
    var wrapped = (longitude + 180).truncatingRemainder(dividingBy: 360)
    if wrapped < 0 { wrapped += 360 }
    return wrapped - 180
}

extension Coordinate {
    /// A lower bound of the distance in metres from this point to every point of a box (in
    /// degrees, not crossing the 180th meridian): the distance to its nearest point, less a
    /// millimetre for rounding. Within the box's longitudes that point is on this point's
    /// meridian; elsewhere on one of the box's two meridians, at a corner or where the
    /// distance along the meridian is least (`atan2(sin φ, cos φ cos Δλ)`, when that latitude
    /// is on the box's side).
    public func distanceLowerBound(south: Double, north: Double, west: Double, east: Double) -> Double {
        if longitude >= west, longitude <= east {
            let nearest = Coordinate(uncheckedLatitude: min(max(latitude, south), north), longitude: longitude)
            return max(0, nearest.distance(to: self) - 0.001)
        }
        let radians = Double.pi / 180
        let phi = latitude * radians
        var nearest = Double.infinity
        for meridian in [west, east] {
            let least = atan2(sin(phi), cos(phi) * cos((meridian - longitude) * radians)) / radians
            for latitude in least >= south && least <= north ? [south, north, least] : [south, north] {
                nearest = min(nearest, Coordinate(uncheckedLatitude: latitude, longitude: meridian).distance(to: self))
            }
        }
        return max(0, nearest - 0.001)
    }

    /// An upper bound of the distance in metres from this point to every point of the same
    /// box: the lower bound plus a path across the box (along a meridian, then a parallel),
    /// which no two of its points are further apart than.
    public func distanceUpperBound(south: Double, north: Double, west: Double, east: Double) -> Double {
        let across = ((north - south) + min(360, east - west)) * Double.pi / 180 * Earth.meanRadiusMeters
        return distanceLowerBound(south: south, north: north, west: west, east: east) + across + 0.002
    }
}
