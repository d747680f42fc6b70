import Bus
import Geo
import Storage

// Every error type of the shared rooms that a handler may let through, with its place in the
// closed set of error codes. The request server (`RPCServer`) maps a `ServiceErrorConvertible`
// error to its `serviceError`, so handlers throw these as they come, without converting.

extension SQLiteError: ServiceErrorConvertible {
    /// Busy and locked databases are `unavailable` (try again), a write a replica did not take
    /// with its reason (the leader it knows of); constraint violations are `conflict`; anything
    /// else is `internal`.
    public var serviceError: ServiceError {
        if isNotReplicated { return ServiceError(.unavailable, message) }
        return switch code {
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

extension BackupError: ServiceErrorConvertible {
    /// A path a backup does not take is `invalid_argument` (field `to`); an existing target
    /// `already_exists`; a database in use `conflict`; a failed file operation `internal`.
    public var serviceError: ServiceError {
        switch self {
        case .badPath(let message): ServiceError(.invalidArgument, message, field: "to")
        case .exists(let message): ServiceError(.alreadyExists, message, field: "to")
        case .inUse(let message): ServiceError(.conflict, message)
        case .notADatabase(let message): ServiceError(.invalidArgument, message)
        case .io(let message): ServiceError(.internal, message)
        }
    }
}
