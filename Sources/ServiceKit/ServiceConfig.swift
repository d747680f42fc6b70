import Bus
import Foundation

/// A configuration mistake, reported before anything starts.
public struct ConfigError: Error, Sendable, CustomStringConvertible, Equatable {
    public let message: String
    public init(_ message: String) { self.message = message }
    public var description: String { message }
}

/// Where another service can be reached: its request endpoints and its event endpoints.
public struct PeerEndpoints: Sendable, Equatable, Codable {
    public var rpc: [String]
    public var publish: [String]

    public init(rpc: [String] = [], publish: [String] = []) {
        self.rpc = rpc
        self.publish = publish
    }
}

/// Everything a service needs to start: where to bind, where its database lives, where its peers are.
///
/// Sources, strongest first: command-line flags, environment variables, a JSON file
/// (`--config` or `TOURBUS_CONFIG`), defaults. The same file can describe a whole suite on
/// one host or many; see `Protocols/configuration.md`.
public struct ServiceConfig: Sendable, Equatable {
    /// The service's short name (`catalog`), which picks its section of the file.
    public var service: String
    /// Request (ROUTER) endpoints to bind.
    public var bind: [String] = ["tcp://127.0.0.1:0"]
    /// Event (PUB) endpoints to bind, for services that publish.
    public var publish: [String] = ["tcp://127.0.0.1:0"]
    /// Folder for the service's SQLite file (`<data_dir>/<service>.sqlite`).
    public var dataDirectory = "data"
    /// An explicit database path, overriding `dataDirectory`.
    public var databasePath: String?
    /// Other services by name.
    public var peers: [String: PeerEndpoints] = [:]
    /// Threads running read handlers.
    public var readers = 2
    /// Milliseconds between event heartbeats.
    public var heartbeatMilliseconds = 1_000
    /// Outbox rows kept for `sys.replay`; older ones are trimmed (subscribers further behind use `sys.snapshot`).
    public var outboxRetention = 100_000
    /// Largest request accepted, in bytes.
    public var maxRequestBytes = 1 << 20
    /// Deepest nesting of arrays and objects accepted in a request envelope (the envelope is one level).
    public var maxJSONDepth = StrictJSON.defaultMaxDepth
    /// The range `maxJSONDepth` must lie in: Foundation's parsers, which run after the check, refuse past 512.
    public static let maxJSONDepthRange = 1...512
    /// A file to write the bound endpoints to once ready (JSON), besides the line on stdout.
    public var readyFile: String?
    /// The log level, when set here rather than by `LOG_LEVEL`.
    public var logLevel: Logger.Level?

    // The gateway's TCP side.
    /// `HOST:PORT` the gateway listens on (port 0 picks a free one).
    public var listen = "127.0.0.1:7700"
    /// The gateway's limits on its clients.
    public var gateway = GatewayLimits()

    public init(service: String) { self.service = service }

    /// The SQLite file this service owns.
    public var resolvedDatabasePath: String {
        databasePath ?? (dataDirectory as NSString).appendingPathComponent("\(service).sqlite")
    }

    /// Usage text for `--help`.
    public static func usage(service: String) -> String {
        """
        usage: tourbus-\(service) [options]
          --config FILE           suite configuration (JSON); also TOURBUS_CONFIG
          --bind ENDPOINT         request endpoint to bind (repeatable; default tcp://127.0.0.1:0)
          --publish ENDPOINT      event endpoint to bind (repeatable; default tcp://127.0.0.1:0)
          --data-dir DIR          folder of the SQLite file (default ./data); also TOURBUS_DATA_DIR
          --db FILE               explicit SQLite file
          --peer NAME=EP[,EP]     request endpoints of another service
          --peer-pub NAME=EP[,EP] event endpoints of another service
          --readers N             reader threads (default 2)
          --heartbeat-ms N        event heartbeat interval (default 1000)
          --outbox-retention N    outbox rows kept for replay (default 100000)
          --max-request-bytes N   largest request accepted (default 1048576)
          --max-json-depth N      deepest JSON nesting accepted in a request, 1-512 (default 64);
                                  also TOURBUS_MAX_JSON_DEPTH
          --ready-file FILE       write the bound endpoints here once ready
          --log-level LEVEL       debug, info, warn or error; also LOG_LEVEL
        Gateway only:
          --listen HOST:PORT      TCP endpoint for clients (default 127.0.0.1:7700)
        \(gatewayUsage)
        Environment: TOURBUS_\(service.uppercased())_BIND, TOURBUS_\(service.uppercased())_PUBLISH (comma-separated),
                     TOURBUS_PEER_<NAME>, TOURBUS_PEER_<NAME>_PUB; the gateway's limits as TOURBUS_GATEWAY_<NAME>
                     (upper case, _ for -), or services.gateway.<name> (_ for -) in the suite file.
        """
    }

    /// One line per gateway limit: flag, meaning, default.
    private static var gatewayUsage: String {
        let defaults = GatewayLimits()
        return GatewayLimits.settings.map { "  --\($0.name) N\n      \($0.summary) (default \(defaults[keyPath: $0.field]))" }
            .joined(separator: "\n")
    }

    /// Builds the configuration of `service` from flags, environment and file.
    public static func load(service: String, arguments: [String], environment: [String: String]) throws(ConfigError) -> ServiceConfig {
        var config = ServiceConfig(service: service)
        let flags = try Flags(arguments)
        let upper = service.uppercased()

        if let path = flags.last("config") ?? environment["TOURBUS_CONFIG"] {
            try config.apply(file: path)
        }

        // Environment.
        if let value = environment["TOURBUS_DATA_DIR"] { config.dataDirectory = value }
        if let value = environment["TOURBUS_MAX_JSON_DEPTH"] { config.maxJSONDepth = try jsonDepth(value, "TOURBUS_MAX_JSON_DEPTH") }
        if let value = environment["TOURBUS_\(upper)_BIND"] { config.bind = split(value) }
        if let value = environment["TOURBUS_\(upper)_PUBLISH"] { config.publish = split(value) }
        if let value = environment["TOURBUS_\(upper)_LISTEN"] { config.listen = value }
        for setting in GatewayLimits.settings {
            if let value = environment[setting.environmentKey] { config.gateway[keyPath: setting.field] = try positive(value, setting.environmentKey) }
        }
        for (key, value) in environment where key.hasPrefix("TOURBUS_PEER_") {
            var name = String(key.dropFirst("TOURBUS_PEER_".count)).lowercased()
            let isPublish = name.hasSuffix("_pub")
            if isPublish { name.removeLast(4) }
            var peer = config.peers[name] ?? PeerEndpoints()
            if isPublish { peer.publish = split(value) } else { peer.rpc = split(value) }
            config.peers[name] = peer
        }

        // Flags.
        if !flags.all("bind").isEmpty { config.bind = flags.all("bind").flatMap(split) }
        if !flags.all("publish").isEmpty { config.publish = flags.all("publish").flatMap(split) }
        if let value = flags.last("data-dir") { config.dataDirectory = value }
        if let value = flags.last("db") { config.databasePath = value }
        if let value = flags.last("ready-file") { config.readyFile = value }
        for (flag, isPublish) in [("peer", false), ("peer-pub", true)] {
            for spec in flags.all(flag) {
                guard let eq = spec.firstIndex(of: "="), eq != spec.startIndex else {
                    throw ConfigError("--\(flag) takes NAME=ENDPOINT[,ENDPOINT], got '\(spec)'")
                }
                let name = String(spec[..<eq]).lowercased()
                var peer = config.peers[name] ?? PeerEndpoints()
                let endpoints = split(String(spec[spec.index(after: eq)...]))
                if isPublish { peer.publish = endpoints } else { peer.rpc = endpoints }
                config.peers[name] = peer
            }
        }
        if let value = flags.last("readers") { config.readers = try positive(value, "--readers") }
        if let value = flags.last("heartbeat-ms") { config.heartbeatMilliseconds = try positive(value, "--heartbeat-ms") }
        if let value = flags.last("outbox-retention") { config.outboxRetention = try positive(value, "--outbox-retention") }
        if let value = flags.last("max-request-bytes") { config.maxRequestBytes = try positive(value, "--max-request-bytes") }
        if let value = flags.last("max-json-depth") { config.maxJSONDepth = try jsonDepth(value, "--max-json-depth") }
        if let value = flags.last("listen") { config.listen = value }
        for setting in GatewayLimits.settings {
            if let value = flags.last(setting.name) { config.gateway[keyPath: setting.field] = try positive(value, "--\(setting.name)") }
        }
        try config.gateway.validate()
        if let value = flags.last("log-level") ?? environment["LOG_LEVEL"] {
            guard let level = Logger.Level(name: value) else { throw ConfigError("unknown log level '\(value)'") }
            config.logLevel = level
        }
        guard !config.bind.isEmpty else { throw ConfigError("no request endpoint to bind") }
        return config
    }

    /// The JSON file: `{"data_dir":…, "services":{"catalog":{"bind":[…],"publish":[…],"connect":[…],"subscribe":[…],"readers":N}}}`.
    ///
    /// This service takes its own section; every other section becomes a peer, reached at its
    /// `connect`/`subscribe` endpoints (or its bind endpoints with `*` read as 127.0.0.1).
    mutating func apply(file path: String) throws(ConfigError) {
        struct Section: Decodable {
            var bind: [String]?
            var publish: [String]?
            var connect: [String]?
            var subscribe: [String]?
            var readers: Int?
            var db: String?
            var listen: String?
            /// The gateway's limits, by their file keys.
            var limits: [String: Int] = [:]

            enum CodingKeys: String, CodingKey {
                case bind, publish, connect, subscribe, readers, db, listen
            }

            init(from decoder: any Decoder) throws {
                let c = try decoder.container(keyedBy: CodingKeys.self)
                bind = try c.decodeIfPresent([String].self, forKey: .bind)
                publish = try c.decodeIfPresent([String].self, forKey: .publish)
                connect = try c.decodeIfPresent([String].self, forKey: .connect)
                subscribe = try c.decodeIfPresent([String].self, forKey: .subscribe)
                readers = try c.decodeIfPresent(Int.self, forKey: .readers)
                db = try c.decodeIfPresent(String.self, forKey: .db)
                listen = try c.decodeIfPresent(String.self, forKey: .listen)
                let all = try decoder.container(keyedBy: AnyKey.self)
                for setting in GatewayLimits.settings {
                    if let value = try all.decodeIfPresent(Int.self, forKey: AnyKey(setting.fileKey)) { limits[setting.fileKey] = value }
                }
            }
        }
        struct AnyKey: CodingKey {
            var stringValue: String
            var intValue: Int? { nil }
            init(_ string: String) { stringValue = string }
            init?(stringValue: String) { self.stringValue = stringValue }
            init?(intValue: Int) { nil }
        }
        struct File: Decodable {
            var dataDir: String?
            var heartbeatMs: Int?
            var outboxRetention: Int?
            var maxRequestBytes: Int?
            var maxJSONDepth: Int?
            var services: [String: Section]?
            enum CodingKeys: String, CodingKey {
                case dataDir = "data_dir", heartbeatMs = "heartbeat_ms", outboxRetention = "outbox_retention",
                     maxRequestBytes = "max_request_bytes", maxJSONDepth = "max_json_depth", services
            }
        }
        let file: File
        do {
            let data = try Data(contentsOf: URL(fileURLWithPath: path))
            try StrictJSON.check(data)
            file = try JSONCoding.decoder.decode(File.self, from: data)
        } catch let error as JSONSyntaxError {
            throw ConfigError("config file \(path): \(error.message)")
        } catch let error as DecodingError {
            throw ConfigError("config file \(path): \(ServiceError.decoding(error, dropping: []).description)")
        } catch {
            throw ConfigError("config file \(path): \(error.localizedDescription)")
        }
        if let value = file.dataDir { dataDirectory = value }
        func checked(_ value: Int?, _ key: String) throws(ConfigError) -> Int? {
            guard let value else { return nil }
            guard value > 0 else { throw ConfigError("config file \(path): \(key) must be a positive integer, got \(value)") }
            return value
        }
        if let value = try checked(file.heartbeatMs, "heartbeat_ms") { heartbeatMilliseconds = value }
        if let value = try checked(file.outboxRetention, "outbox_retention") { outboxRetention = value }
        if let value = try checked(file.maxRequestBytes, "max_request_bytes") { maxRequestBytes = value }
        if let value = file.maxJSONDepth {
            guard Self.maxJSONDepthRange.contains(value) else {
                throw ConfigError("config file \(path): max_json_depth must be an integer from \(Self.maxJSONDepthRange.lowerBound) to \(Self.maxJSONDepthRange.upperBound), got \(value)")
            }
            maxJSONDepth = value
        }
        for (name, section) in file.services ?? [:] {
            if name == service {
                if let value = section.bind { bind = value }
                if let value = section.publish { publish = value }
                if let value = try checked(section.readers, "services.\(name).readers") { readers = value }
                if let value = section.db { databasePath = value }
                if let value = section.listen { listen = value }
                for setting in GatewayLimits.settings {
                    if let value = try checked(section.limits[setting.fileKey], "services.\(name).\(setting.fileKey)") { gateway[keyPath: setting.field] = value }
                }
            } else {
                let local = { (eps: [String]) in eps.map { $0.replacingOccurrences(of: "://*:", with: "://127.0.0.1:").replacingOccurrences(of: "://0.0.0.0:", with: "://127.0.0.1:") } }
                peers[name] = PeerEndpoints(rpc: section.connect ?? local(section.bind ?? []),
                                            publish: section.subscribe ?? local(section.publish ?? []))
            }
        }
    }

    private static func split(_ value: String) -> [String] {
        value.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty }
    }

    private static func positive(_ value: String, _ flag: String) throws(ConfigError) -> Int {
        guard let n = Int(value), n > 0 else { throw ConfigError("\(flag) takes a positive integer, got '\(value)'") }
        return n
    }

    private static func jsonDepth(_ value: String, _ source: String) throws(ConfigError) -> Int {
        guard let n = Int(value), maxJSONDepthRange.contains(n) else {
            throw ConfigError("\(source) takes an integer from \(maxJSONDepthRange.lowerBound) to \(maxJSONDepthRange.upperBound), got '\(value)'")
        }
        return n
    }
}

/// `--name value` and `--name=value` flags, repeatable; anything else is an error.
struct Flags {
    static let known: Set<String> = Set(["config", "bind", "publish", "data-dir", "db", "peer", "peer-pub", "readers",
                                         "heartbeat-ms", "outbox-retention", "max-request-bytes", "max-json-depth", "ready-file",
                                         "log-level", "listen"] + GatewayLimits.settings.map(\.name))
    private var values: [(String, String)] = []

    init(_ arguments: [String]) throws(ConfigError) {
        var i = 0
        while i < arguments.count {
            let arg = arguments[i]
            guard arg.hasPrefix("--") else { throw ConfigError("unexpected argument '\(arg)'") }
            var name = String(arg.dropFirst(2))
            var value: String
            if let eq = name.firstIndex(of: "=") {
                value = String(name[name.index(after: eq)...])
                name = String(name[..<eq])
            } else {
                guard i + 1 < arguments.count else { throw ConfigError("--\(name) needs a value") }
                i += 1
                value = arguments[i]
            }
            guard Flags.known.contains(name) else { throw ConfigError("unknown option --\(name)") }
            values.append((name, value))
            i += 1
        }
    }

    func all(_ name: String) -> [String] { values.filter { $0.0 == name }.map(\.1) }
    func last(_ name: String) -> String? { all(name).last }
}
