import Foundation

/// A latitude/longitude rectangle in degrees, as used for map viewports and range queries.
///
/// `west > east` means the box crosses the 180th meridian (antimeridian).
/// JSON keys are `south`, `west`, `north`, `east`; decoding validates ranges.
public struct BoundingBox: Sendable, Hashable, Codable {
    /// Southern edge latitude in degrees, in [-90, 90].
    public let south: Double
    /// Western edge longitude in degrees, in [-180, 180].
    public let west: Double
    /// Northern edge latitude in degrees, in [south, 90].
    public let north: Double
    /// Eastern edge longitude in degrees, in [-180, 180].
    public let east: Double

    /// Creates a box, rejecting non-finite or out-of-range edges and `south > north`.
    public init(south: Double, west: Double, north: Double, east: Double) throws(GeoError) {
        guard isValidLatitude(south), isValidLatitude(north) else {
            throw .invalidBoundingBox(reason: "south and north must be finite numbers in [-90, 90]")
        }
        guard isValidLongitude(west), isValidLongitude(east) else {
            throw .invalidBoundingBox(reason: "west and east must be finite numbers in [-180, 180]")
        }
        guard south <= north else {
            throw .invalidBoundingBox(reason: "south (\(south)) must not be greater than north (\(north))")
        }
        self.init(uncheckedSouth: south, west: west, north: north, east: east)
    }

    /// Creates a box without validation; only for values computed to be in range.
    init(uncheckedSouth south: Double, west: Double, north: Double, east: Double) {
        self.south = south
        self.west = west
        self.north = north
        self.east = east
    }

    private enum CodingKeys: String, CodingKey {
        case south, west, north, east
    }

    /// Decodes and validates a box, throwing `DecodingError.dataCorrupted` at the offending key.
    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        func edge(_ key: CodingKeys, isValid: (Double) -> Bool) throws -> Double {
            let value = try container.decode(Double.self, forKey: key)
            guard isValid(value) else {
                throw DecodingError.dataCorruptedError(
                    forKey: key, in: container, debugDescription: "\(key.stringValue) is out of range: \(value)")
            }
            return value
        }
        let south = try edge(.south, isValid: isValidLatitude)
        let west = try edge(.west, isValid: isValidLongitude)
        let north = try edge(.north, isValid: isValidLatitude)
        let east = try edge(.east, isValid: isValidLongitude)
        guard south <= north else {
            throw DecodingError.dataCorruptedError(
                forKey: .north, in: container, debugDescription: "north (\(north)) is below south (\(south))")
        }
        self.init(uncheckedSouth: south, west: west, north: north, east: east)
    }

    /// Whether the box wraps across the 180th meridian (`west > east`).
    public var crossesAntimeridian: Bool { west > east }

    /// East-west extent in degrees, in [0, 360], measured eastwards from `west` to `east`.
    public var widthDegrees: Double {
        crossesAntimeridian ? 360 - west + east : east - west
    }

    /// The box as one or two boxes that do not cross the antimeridian.
    ///
    /// Each part can be queried with plain `BETWEEN west AND east` range conditions.
    public var parts: [BoundingBox] {
        guard crossesAntimeridian else { return [self] }
        return [
            BoundingBox(uncheckedSouth: south, west: west, north: north, east: 180),
            BoundingBox(uncheckedSouth: south, west: -180, north: north, east: east),
        ]
    }

    /// The boxes to read in an index of points for this box: its `parts`, plus the 180th
    /// meridian on the other side when only one side of it is in (-180 and 180 are one line,
    /// but a point on it is stored at one of them).
    public var indexAreas: [BoundingBox] {
        var areas = parts
        let touchesWest = areas.contains { $0.west == -180 }
        let touchesEast = areas.contains { $0.east == 180 }
        let meridian: Double? = touchesWest && !touchesEast ? 180 : touchesEast && !touchesWest ? -180 : nil
        if let meridian { areas.append(BoundingBox(uncheckedSouth: south, west: meridian, north: north, east: meridian)) }
        return areas
    }

    /// Whether `coordinate` lies inside or on the edge of the box.
    ///
    /// Longitudes -180 and 180 are treated as the same meridian.
    public func contains(_ coordinate: Coordinate) -> Bool {
        guard (south...north).contains(coordinate.latitude) else { return false }
        let longitude = coordinate.longitude
        return containsLongitude(longitude) || (abs(longitude) == 180 && containsLongitude(-longitude))
    }

    private func containsLongitude(_ longitude: Double) -> Bool {
        crossesAntimeridian ? (longitude >= west || longitude <= east) : (west...east).contains(longitude)
    }

    /// The smallest box containing every point within `radiusMeters` of `center`.
    ///
    /// If the circle reaches a pole the box spans all longitudes and extends to that pole;
    /// if it crosses the antimeridian the result has `west > east`.
    /// Throws `GeoError.invalidRadius` unless the radius is finite and greater than zero.
    public static func around(_ center: Coordinate, radiusMeters: Double) throws(GeoError) -> BoundingBox {
        guard radiusMeters.isFinite, radiusMeters > 0 else { throw .invalidRadius(radiusMeters) }
        let angularRadius = radiusMeters / Earth.meanRadiusMeters
        let south = center.latitude - degrees(angularRadius)
        let north = center.latitude + degrees(angularRadius)
        guard south > -90, north < 90 else {
            return BoundingBox(uncheckedSouth: max(-90, south), west: -180, north: min(90, north), east: 180)
        }
        // Longitude extent of a small circle: sin(deltaLon) = sin(r) / cos(lat), exact on a sphere.
        let ratio = sin(angularRadius) / cos(radians(center.latitude))
        let deltaLongitude = degrees(asin(min(1, ratio)))
        return BoundingBox(
            uncheckedSouth: south,
            west: normalizedLongitude(center.longitude - deltaLongitude),
            north: north,
            east: normalizedLongitude(center.longitude + deltaLongitude))
    }
}
