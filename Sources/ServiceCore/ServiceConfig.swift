import Bus
import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// Everything a service needs to start: the common settings, where to bind, where its
/// database lives, how many readers it runs and how it publishes.
///
/// Read by `load(service:arguments:environment:)` from flags, environment and file (see
/// `CommonConfig`). The common settings read through (`config.peers`).
@dynamicMemberLookup
public struct ServiceConfig: Sendable, Equatable {
    /// The settings every process has.
    public var common: CommonConfig
    /// The service's short name (`catalog`), which picks its section of the file.
    public var service: String { common.name }
    /// Request (ROUTER) endpoints to bind.
    public var bind: [String] = ["tcp://127.0.0.1:0"]
    /// Event (PUB) endpoints to bind, for services that publish.
    public var publish: [String] = ["tcp://127.0.0.1:0"]
    /// Folder for the service's SQLite file (`<data_dir>/<service>.sqlite`).
    public var dataDirectory = "data"
    /// An explicit database path, overriding `dataDirectory`.
    public var databasePath: String?
    /// Threads running read handlers.
    public var readers = 2
    /// Milliseconds between event heartbeats.
    public var heartbeatMilliseconds = 1_000
    /// Outbox rows kept for `sys.replay`; older ones are trimmed (subscribers further behind use `sys.snapshot`).
    public var outboxRetention = 100_000
    /// A replicated service's Raft addresses (host:port), one per replica; empty for a service
    /// that owns a plain SQLite file.
    public var raft: [String] = []
    /// Which of `raft` this process is (1 and up).
    public var replica: Int?
    /// Where this replica's Raft port listens, when not at its own `raft` address (which its
    /// peers dial, perhaps through a proxy or a tunnel); nil: at that address.
    public var raftBind: String?

    public init(service: String) { common = CommonConfig(name: service) }

    public subscript<Value>(dynamicMember field: WritableKeyPath<CommonConfig, Value>) -> Value {
        get { common[keyPath: field] }
        set { common[keyPath: field] = newValue }
    }

    /// The SQLite file this service owns.
    public var resolvedDatabasePath: String {
        databasePath ?? (dataDirectory as NSString).appendingPathComponent("\(service).sqlite")
    }

    /// The flags only services take, and the gateway's, which a service refuses.
    static let options = ProcessOptions(
        kind: "service",
        takes: CommonConfig.flags.union([
            "bind", "publish", "data-dir", "db", "readers", "heartbeat-ms", "outbox-retention", "raft", "replica", "raft-bind",
        ]),
        refuses: ["listen": "only the gateway listens for clients", "name": "only a gateway picks its section of the file by name"])

    /// Usage text for `--help`.
    public static func usage(service: String) -> String {
        """
        usage: tourbus-\(service) [options]
        \(CommonConfig.usageLines)
          --bind ENDPOINT         request endpoint to bind (repeatable; default tcp://127.0.0.1:0)
          --publish ENDPOINT      event endpoint to bind (repeatable; default tcp://127.0.0.1:0)
          --data-dir DIR          folder of the SQLite file (default ./data); also TOURBUS_DATA_DIR
          --db FILE               explicit SQLite file
          --readers N             reader threads (default 2)
          --heartbeat-ms N        event heartbeat interval (default 1000)
          --outbox-retention N    outbox rows kept for replay (default 100000)
          --raft HOST:PORT        a replica's Raft address (repeatable, in replica order): the
                                  database is replicated to a majority before each commit shows
          --replica N             which of the --raft addresses this process is (1 and up)
          --raft-bind HOST:PORT   where this replica's Raft port listens, when not at its own
                                  --raft address (peers dial that, through a proxy say)
        Environment: TOURBUS_\(service.uppercased())_BIND, TOURBUS_\(service.uppercased())_PUBLISH (comma-separated),
                     TOURBUS_PEER_<NAME>, TOURBUS_PEER_<NAME>_PUB.
        The gateway's options (--listen and its limits) are refused: see tourbus-gateway --help.
        """
    }

    /// Builds the configuration of `service` from flags, environment and file.
    public static func load(service: String, arguments: [String], environment: [String: String]) throws(ConfigError) -> ServiceConfig {
        let sources = try ConfigSources(arguments: arguments, environment: environment, options: options)
        var config = ServiceConfig(service: service)
        config.common = try CommonConfig(name: service, sources: sources, serves: true)
        let flags = sources.flags
        let upper = service.uppercased()

        // One per replica, in replica order: this one's is taken once its number is known (as
        // are its request and event endpoints, when the file lists one of each per replica).
        var raftBinds: [String]?
        var perReplica: (bind: [String]?, publish: [String]?) = (nil, nil)
        if let file = sources.file {
            if let value = file.dataDir { config.dataDirectory = value }
            if let value = try file.positive(file.heartbeatMs, "heartbeat_ms") { config.heartbeatMilliseconds = value }
            if let value = try file.positive(file.outboxRetention, "outbox_retention") { config.outboxRetention = value }
            if let section = file.services[service] {
                if let value = section.bind { config.bind = value }
                if let value = section.publish { config.publish = value }
                if let value = try file.positive(section.readers, "services.\(service).readers") { config.readers = value }
                if let value = section.db { config.databasePath = value }
                if let value = section.raft { config.raft = value }
                raftBinds = section.raftBind
                perReplica = (section.bind, section.publish)
            }
        }

        if let value = environment["TOURBUS_DATA_DIR"] { config.dataDirectory = value }
        if let value = environment["TOURBUS_\(upper)_BIND"] {
            config.bind = split(value)
            perReplica.bind = nil
        }
        if let value = environment["TOURBUS_\(upper)_PUBLISH"] {
            config.publish = split(value)
            perReplica.publish = nil
        }

        if !flags.all("bind").isEmpty {
            config.bind = flags.all("bind").flatMap(split)
            perReplica.bind = nil
        }
        if !flags.all("publish").isEmpty {
            config.publish = flags.all("publish").flatMap(split)
            perReplica.publish = nil
        }
        if let value = flags.last("data-dir") { config.dataDirectory = value }
        if let value = flags.last("db") { config.databasePath = value }
        if let value = flags.last("readers") { config.readers = try positive(value, "--readers") }
        if let value = flags.last("heartbeat-ms") { config.heartbeatMilliseconds = try positive(value, "--heartbeat-ms") }
        if let value = flags.last("outbox-retention") { config.outboxRetention = try positive(value, "--outbox-retention") }
        if !flags.all("raft").isEmpty { config.raft = flags.all("raft").flatMap(split) }
        if let value = flags.last("replica") { config.replica = try positive(value, "--replica") }
        guard !config.bind.isEmpty else { throw ConfigError("no request endpoint to bind") }
        if config.raft.isEmpty {
            guard config.replica == nil else { throw ConfigError("--replica needs the replicas' Raft addresses (--raft, or services.\(service).raft)") }
        } else {
            guard let replica = config.replica else {
                throw ConfigError("\(service) is replicated (\(config.raft.count) Raft addresses): say which replica this is with --replica N")
            }
            guard replica <= config.raft.count else {
                throw ConfigError("--replica \(replica): there are \(config.raft.count) Raft addresses")
            }
            if let binds = raftBinds {
                guard binds.count == config.raft.count else {
                    throw ConfigError("services.\(service).raft_bind lists \(binds.count) address(es): one per replica, as raft does")
                }
                config.raftBind = binds[replica - 1]
            }
            if let value = flags.last("raft-bind") { config.raftBind = value }
            if let binds = perReplica.bind, binds.count == config.raft.count { config.bind = [binds[replica - 1]] }
            if let publish = perReplica.publish, publish.count == config.raft.count { config.publish = [publish[replica - 1]] }
        }
        if config.raft.isEmpty && (flags.last("raft-bind") != nil || raftBinds != nil) {
            throw ConfigError("a Raft bind address needs the replicas' Raft addresses (--raft, or services.\(service).raft)")
        }
        for address in config.raft + [config.raftBind].compactMap({ $0 }) {
            let notHostPort = ConfigError("Raft address '\(address)' is not HOST:PORT")
            let (host, port) = try splitHostPort(address, or: notHostPort)
            guard port > 0 else { throw notHostPort }
            // Without CURVE, libraft dials and listens itself, and takes IPv4 addresses only; on a
            // secured bus its links go through the tunnel, which takes names (and `*` to listen).
            var ipv4 = in_addr()
            guard config.common.bus != nil || inet_pton(AF_INET, host, &ipv4) == 1 else {
                throw ConfigError("Raft address '\(address)': without CURVE keys, Raft takes IPv4 addresses only (host names need a secured bus)")
            }
        }
        return config
    }
}

extension ServiceConfig: ProcessConfig {
    public static func load(process name: String, arguments: [String], environment: [String: String]) throws(ConfigError) -> ServiceConfig {
        try load(service: name, arguments: arguments, environment: environment)
    }

    public static func usage(process name: String) -> String { usage(service: name) }
}
