import Bus
import Geo

// The shapes every method uses for the same concept (Protocols/README.md, "Conventions"):
// a point, a box, and their limits, declared once.

/// A point on the Earth in degrees (WGS 84): `{lat, lon}`. A request's `near`, a route's
/// ends.
public struct Point: Codable, Sendable, Equatable, DeclaredShape {
    public var lat: Double
    public var lon: Double

    public init(lat: Double, lon: Double) {
        self.lat = lat
        self.lon = lon
    }

    public static let fieldRules: [FieldRule] = [.number("lat", -90...90), .number("lon", -180...180)]

    /// The point as `Geo` reads it (the rules have held it in range).
    public var coordinate: Coordinate { Coordinate(uncheckedLatitude: lat, longitude: lon) }
}

/// A map box in degrees: `{south, west, north, east}`, south not above north; `west` greater
/// than `east` crosses the 180th meridian.
public struct Box: Codable, Sendable, Equatable, DeclaredShape {
    public var south: Double
    public var west: Double
    public var north: Double
    public var east: Double

    public init(south: Double, west: Double, north: Double, east: Double) {
        (self.south, self.west, self.north, self.east) = (south, west, north, east)
    }

    public static let fieldRules: [FieldRule] = [
        .number("south", -90...90), .number("west", -180...180), .number("north", -90...90), .number("east", -180...180),
    ]

    /// The box as `Geo` reads it: `invalid_argument` naming `field.north` when it lies below
    /// the south edge (the rules have held each edge in range).
    public func boundingBox(field: String) throws(ServiceError) -> BoundingBox {
        guard south <= north else { throw .invalid(field + ".north", "must not be below south") }
        do {
            return try BoundingBox(south: south, west: west, north: north, east: east)
        } catch {
            throw .invalid(field, "\(error)")
        }
    }
}
