import Bus
import Geo
import Storage

// Every error type of the shared rooms that a handler may let through, with its place in the
// closed set of error codes. The request server (`RPCServer`) maps a `ServiceErrorConvertible`
// error to its `serviceError`, so handlers throw these as they come, without converting.

extension SQLiteError: ServiceErrorConvertible {
    /// Busy and locked databases are `unavailable` (try again); constraint violations are
    /// `conflict`; anything else is `internal`.
    public var serviceError: ServiceError {
        switch code {
        case .busy, .locked: ServiceError(.unavailable, "database busy, try again")
        case .constraint: ServiceError(.conflict, "constraint violated: \(message)")
        default: ServiceError(.internal, "storage error")
        }
    }
}

extension GeoError: ServiceErrorConvertible {
    /// Always `invalid_argument`, naming the coordinate field at fault.
    public var serviceError: ServiceError { ServiceError.invalid(field, description) }
}
