import ServiceCore

/// Every limit of the gateway's client side, with its default: the one table that flags,
/// environment variables, the suite file and `Protocols/gateway.md` follow.
///
/// Each limit is a positive integer. Its flag is `--<name>`, its environment variable
/// `TOURBUS_GATEWAY_<NAME>` (upper case, `_` for `-`) and its suite-file key
/// `services.gateway.<name>` (`_` for `-`).
public struct GatewayLimits: Sendable, Equatable {
    /// Client connections open at once.
    public var maxConnections = 1_024
    /// Client connections open at once from one client address.
    public var maxConnectionsPerAddress = 128
    /// A connection that has not sent a request byte for this long after connecting is closed.
    public var firstByteTimeoutMilliseconds = 10_000
    /// A request whose first byte has arrived must be complete within this long.
    public var requestTimeoutMilliseconds = 30_000
    /// A connection with no request and nothing in flight for this long is closed (blank lines do not count).
    public var idleTimeoutMilliseconds = 300_000
    /// Deadline of a request that does not ask for a shorter one.
    public var deadlineMilliseconds = 2_000
    /// Requests of one connection read and not yet answered; past it the gateway stops reading that connection.
    public var maxInFlight = 128
    /// Requests of one client address sent on and not yet answered, across its connections;
    /// past it the gateway stops reading that address's connections.
    public var maxInFlightPerAddress = 512
    /// Elements of one JSON-RPC batch.
    public var maxBatch = 128
    /// Longest reply; a longer one is answered `too_large`.
    public var maxReplyBytes = 4 << 20
    /// Unsent replies past which no more requests are read from a connection; a client that
    /// then takes no byte for 5 s is disconnected.
    public var maxPendingOutputBytes = 1 << 20
    /// Requests per second one client address may send before its connections are read more slowly.
    public var requestsPerSecondPerAddress = 100_000
    /// Requests in flight to each endpoint of a service; the rest wait in a queue shared fairly between clients.
    public var backendWindow = 16
    /// Password checks (`auth.login`, `auth.register`, `AUTH user pass`) in flight to each endpoint of the accounts service.
    public var passwordCheckWindow = 1
    /// `auth.login` and `AUTH user pass` per minute from one client address (also the burst); more get `rate_limited`.
    public var loginsPerMinutePerAddress = 60
    /// `auth.register` per minute from one client address (also the burst); more get `rate_limited`.
    public var registrationsPerMinutePerAddress = 10
    /// Bytes of pushes waiting for their connections across the gateway (each counted by its
    /// body and names once per connection); past it a connection over its fair share sheds.
    public var maxQueuedPushBytes = 64 << 20
    /// Bytes of replies connections hold for their clients and are likely to be owed, across
    /// the gateway; past it a connection over its fair share reads no more calls.
    public var maxUnsentReplyBytes = 128 << 20

    public init() {}

    /// One limit: its name (`max-connections`), what it bounds, and where it lives.
    public struct Setting: Sendable {
        public let name: String
        public let summary: String
        public let field: WritableKeyPath<GatewayLimits, Int> & Sendable

        /// The suite-file key (`max_connections`).
        public var fileKey: String { name.replacingOccurrences(of: "-", with: "_") }
        /// The environment variable (`TOURBUS_GATEWAY_MAX_CONNECTIONS`).
        public var environmentKey: String { "TOURBUS_GATEWAY_" + fileKey.uppercased() }
    }

    /// Every limit, in the order the docs list them.
    public static let settings: [Setting] = [
        Setting(name: "max-connections", summary: "client connections open at once", field: \.maxConnections),
        Setting(name: "max-connections-per-address", summary: "client connections open at once from one address", field: \.maxConnectionsPerAddress),
        Setting(name: "first-byte-timeout-ms", summary: "close a connection that sends no request byte this long after connecting", field: \.firstByteTimeoutMilliseconds),
        Setting(name: "request-timeout-ms", summary: "close a connection whose started request is not complete this long after", field: \.requestTimeoutMilliseconds),
        Setting(name: "idle-timeout-ms", summary: "close a connection with no request and nothing in flight this long", field: \.idleTimeoutMilliseconds),
        Setting(name: "deadline-ms", summary: "default request deadline, and the longest a client may ask for", field: \.deadlineMilliseconds),
        Setting(name: "max-in-flight", summary: "requests of one connection read and not yet answered (then reading pauses)", field: \.maxInFlight),
        Setting(
            name: "max-in-flight-per-address", summary: "requests of one address's connections sent on and not yet answered (then their reading pauses)",
            field: \.maxInFlightPerAddress),
        Setting(name: "max-batch", summary: "elements of one JSON-RPC batch", field: \.maxBatch),
        Setting(name: "max-reply-bytes", summary: "longest reply; longer ones are answered too_large", field: \.maxReplyBytes),
        Setting(
            name: "max-pending-output-bytes", summary: "unsent replies past which reading stops (and a client that takes nothing for 5 s is disconnected)",
            field: \.maxPendingOutputBytes),
        Setting(name: "requests-per-second-per-address", summary: "requests per second one address sends before it is read more slowly", field: \.requestsPerSecondPerAddress),
        Setting(name: "backend-window", summary: "requests in flight to each service endpoint; the rest queue fairly", field: \.backendWindow),
        Setting(name: "password-check-window", summary: "password checks in flight to each accounts endpoint; the rest queue fairly", field: \.passwordCheckWindow),
        Setting(name: "logins-per-minute-per-address", summary: "logins per minute from one address (and burst)", field: \.loginsPerMinutePerAddress),
        Setting(name: "registrations-per-minute-per-address", summary: "sign-ups per minute from one address (and burst)", field: \.registrationsPerMinutePerAddress),
        Setting(
            name: "max-queued-push-bytes", summary: "pushes waiting for slow connections, gateway-wide; past it the connections holding most shed theirs",
            field: \.maxQueuedPushBytes),
        Setting(
            name: "max-unsent-reply-bytes", summary: "replies held and owed to connections, gateway-wide; past it the connections holding most read no more calls",
            field: \.maxUnsentReplyBytes),
    ]

    /// Checks that the limits fit together.
    public func validate() throws(ConfigError) {
        guard maxBatch <= maxInFlight else {
            throw ConfigError("max-batch (\(maxBatch)) cannot exceed max-in-flight (\(maxInFlight))")
        }
    }
}
