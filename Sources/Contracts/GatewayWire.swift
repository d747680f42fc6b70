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

    enum CodingKeys: String, CodingKey {
        case service, endpoints, up
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
