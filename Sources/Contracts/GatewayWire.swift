import Bus
import Foundation

// The params and results of the gateway's built-ins (Protocols/gateway.md).

/// `help`'s result: every method the gateway offers now, and the services that are down.
public struct GatewayHelp: Codable, Sendable {
    /// One method and its summary.
    public struct Entry: Codable, Sendable {
        public var method: String
        public var description: String

        public init(method: String, description: String) {
            self.method = method
            self.description = description
        }
    }

    public var methods: [Entry]
    /// Services that are configured but down now.
    public var unavailable: [String]

    public init(methods: [Entry], unavailable: [String]) {
        self.methods = methods
        self.unavailable = unavailable
    }
}

/// `gateway.status`'s result: each backend's health, and the client connections.
public struct GatewayStatus: Codable, Sendable {
    /// Open client connections, and at most how many.
    public struct Connections: Codable, Sendable {
        public var open: Int
        public var limit: Int

        public init(open: Int, limit: Int) {
            self.open = open
            self.limit = limit
        }
    }

    public var backends: [BackendHealth]
    public var connections: Connections

    public init(backends: [BackendHealth], connections: Connections) {
        self.backends = backends
        self.connections = connections
    }
}

/// `subscribe {topics?}` and `unsubscribe {topics?}`: topics by name (none: a subscribe
/// rechecks the connection's token; an unsubscribe drops every topic).
public struct TopicsRequest: Codable, Sendable, DeclaredShape {
    public var topics: [String]?

    public init(topics: [String]? = nil) {
        self.topics = topics
    }
}

/// The result of `subscribe` and `unsubscribe` over JSON-RPC: every topic the connection hears
/// now, sorted.
public struct TopicsHeard: Codable, Sendable {
    public var topics: [String]

    public init(topics: [String]) {
        self.topics = topics
    }
}

/// What the gateway knows of one backend service: reachable or not, how fast, what failed last.
public struct BackendHealth: Codable, Sendable, Equatable {
    public var service: String
    public var endpoints: [String]
    public var up: Bool
    /// Round trip of the last successful `sys.ping`, in milliseconds.
    public var latencyMs: Double?
    public var lastError: String?
    public var lastChecked: String?
    /// A replicated service's replicas, in replica order: each one's role and lag. Absent for
    /// a service that is not replicated.
    public var replicas: [ReplicaHealth]?

    enum CodingKeys: String, CodingKey {
        case service, endpoints, up, replicas
        case latencyMs = "latency_ms"
        case lastError = "last_error"
        case lastChecked = "last_checked"
    }

    public init(service: String, endpoints: [String], up: Bool, latencyMs: Double? = nil, lastError: String? = nil, lastChecked: String? = nil) {
        self.service = service
        self.endpoints = endpoints
        self.up = up
        self.latencyMs = latencyMs
        self.lastError = lastError
        self.lastChecked = lastChecked
    }
}

/// One replica of a replicated service, as the gateway's last check found it (`sys.stats`).
public struct ReplicaHealth: Codable, Sendable, Equatable {
    /// Its number (1 and up) and request endpoint.
    public var replica: Int
    public var endpoint: String
    public var up: Bool
    /// `leader`, `follower`, `candidate` or `unavailable`, when it answered.
    public var role: String?
    /// Whether it leads and takes writes.
    public var ready: Bool?
    public var term: UInt64?
    public var appliedIndex: UInt64?
    /// Commits it has still to apply: the highest commit index any replica reported, less
    /// what it applied.
    public var lag: UInt64?
    public var lastError: String?

    public init(replica: Int, endpoint: String, up: Bool) {
        self.replica = replica
        self.endpoint = endpoint
        self.up = up
    }

    enum CodingKeys: String, CodingKey {
        case replica, endpoint, up, role, ready, term, lag
        case appliedIndex = "applied_index"
        case lastError = "last_error"
    }
}
