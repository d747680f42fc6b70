/// Why a geographic value was rejected.
///
/// Each case knows the request field it concerns (`field`), so an API layer can
/// name the offending parameter without string matching.
public enum GeoError: Error, Sendable, Equatable, CustomStringConvertible {
    /// Latitude was not a finite number in [-90, 90].
    case invalidLatitude(Double)
    /// Longitude was not a finite number in [-180, 180].
    case invalidLongitude(Double)
    /// Search radius (metres) was not a finite number greater than zero.
    case invalidRadius(Double)
    /// Bounding box edges were out of range or south was above north.
    case invalidBoundingBox(reason: String)

    /// The request field this error concerns: "lat", "lon", "radius_m" or "bbox".
    public var field: String {
        switch self {
        case .invalidLatitude: "lat"
        case .invalidLongitude: "lon"
        case .invalidRadius: "radius_m"
        case .invalidBoundingBox: "bbox"
        }
    }

    /// A human-readable message naming the field and the rule it broke.
    public var description: String {
        switch self {
        case .invalidLatitude(let value):
            "lat must be a finite number in [-90, 90], got \(value)"
        case .invalidLongitude(let value):
            "lon must be a finite number in [-180, 180], got \(value)"
        case .invalidRadius(let value):
            "radius_m must be a finite number greater than 0, got \(value)"
        case .invalidBoundingBox(let reason):
            "bbox is invalid: \(reason)"
        }
    }
}
