import Bus
import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// A configuration mistake, reported before anything starts.
public struct ConfigError: Error, Sendable, CustomStringConvertible, Equatable {
    public let message: String
    public init(_ message: String) { self.message = message }
    public var description: String { message }
}

/// `HOST:PORT` split (an IPv6 host in brackets, which are dropped), or `error` when it is not one.
public func splitHostPort(_ text: String, or error: @autoclosure () -> ConfigError) throws(ConfigError) -> (host: String, port: UInt16) {
    guard let colon = text.lastIndex(of: ":"), colon != text.startIndex, let port = UInt16(text[text.index(after: colon)...]) else {
        throw error()
    }
    var host = String(text[..<colon])
    if host.hasPrefix("[") && host.hasSuffix("]") { host = String(host.dropFirst().dropLast()) }
    return (host, port)
}

/// Where another service can be reached: its request endpoints and its event endpoints.
public struct PeerEndpoints: Sendable, Equatable {
    public var rpc: [String]
    public var publish: [String]
    /// The endpoints are the replicas of a replicated service, in replica order (its section
    /// lists `raft`, or `--peer-replicated NAME`): requests go to the one that leads.
    public var followsLeader: Bool

    public init(rpc: [String] = [], publish: [String] = [], followsLeader: Bool = false) {
        self.rpc = rpc
        self.publish = publish
        self.followsLeader = followsLeader
    }

    /// The options of a request client of this peer, with `curve`'s keys.
    public func clientOptions(curve: CurveClientKeys?) -> RPCClientOptions {
        var options = RPCClientOptions()
        options.curve = curve
        options.followsLeader = followsLeader
        return options
    }
}

/// What every Tourbus process reads, a service or the gateway: its peers, the bounds of a
/// request, the ready file and the log level.
///
/// Sources, strongest first: command-line flags, environment variables, a JSON file
/// (`--config` or `TOURBUS_CONFIG`), defaults. The same file can describe a whole suite on
/// one host or many; see `Protocols/configuration.md`. `ServiceConfig` and `GatewayConfig`
/// add what only their kind of process reads.
public struct CommonConfig: Sendable, Equatable {
    /// The process's short name (`catalog`, `gateway`), which picks its section of the file.
    public var name: String
    /// Other services by name.
    public var peers: [String: PeerEndpoints] = [:]
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
    /// CURVE keys, when the suite file lists them: every bus link is then encrypted and
    /// authenticated (see `BusKeys`).
    public var bus: BusKeys?
    /// `HOST:PORT` of the operators' Prometheus metrics port (`GET /metrics`); nil: none.
    public var metricsListen: String?

    public init(name: String) { self.name = name }

    /// The flags every process takes.
    public static let flags: Set<String> = [
        "config", "peer", "peer-pub", "peer-replicated", "max-request-bytes", "max-json-depth", "ready-file", "log-level", "curve-key",
        "metrics-listen",
    ]

    /// Usage lines of the flags every process takes.
    public static let usageLines = """
          --config FILE           suite configuration (JSON); also TOURBUS_CONFIG
          --peer NAME=EP[,EP]     request endpoints of another service
          --peer-pub NAME=EP[,EP] event endpoints of another service
          --peer-replicated NAME  NAME's request endpoints are its replicas, in replica order:
                                  requests go to their leader (the suite file says so by
                                  listing the section's raft addresses)
          --max-request-bytes N   largest request accepted (default 1048576)
          --max-json-depth N      deepest JSON nesting accepted in a request, 1-512 (default 64);
                                  also TOURBUS_MAX_JSON_DEPTH
          --ready-file FILE       write the bound endpoints here once ready
          --log-level LEVEL       debug, info, warn or error; also LOG_LEVEL
          --curve-key FILE        this process's CURVE key file (tourbus keys), when the
                                  config file lists curve.keys; also TOURBUS_CURVE_KEY
          --metrics-listen HOST:PORT  serve Prometheus metrics at GET /metrics there, for operators
                                  (port 0 picks one; off by default); also TOURBUS_METRICS_LISTEN
        """

    /// Reads the common settings of process `name` from its sources: file, then environment,
    /// then flags. `serves`: the process binds bus sockets (a service), so its CURVE key is
    /// the one its clients pin.
    public init(name: String, sources: ConfigSources, serves: Bool) throws(ConfigError) {
        self.init(name: name)
        let flags = sources.flags
        let environment = sources.environment

        if let file = sources.file {
            if let value = try file.positive(file.maxRequestBytes, "max_request_bytes") { maxRequestBytes = value }
            if let value = file.maxJSONDepth {
                guard Self.maxJSONDepthRange.contains(value) else {
                    throw file.error("max_json_depth must be an integer from \(Self.maxJSONDepthRange.lowerBound) to \(Self.maxJSONDepthRange.upperBound), got \(value)")
                }
                maxJSONDepth = value
            }
            // Every other section is a peer, reached at its connect/subscribe endpoints, or
            // at its bind endpoints with `*` read as 127.0.0.1.
            for (peer, section) in file.services where peer != name {
                peers[peer] = PeerEndpoints(
                    rpc: section.peerRequestEndpoints, publish: section.peerEventEndpoints, followsLeader: !(section.raft ?? []).isEmpty)
            }
        }

        if let value = environment["TOURBUS_MAX_JSON_DEPTH"] { maxJSONDepth = try Self.jsonDepth(value, "TOURBUS_MAX_JSON_DEPTH") }
        for (key, value) in environment where key.hasPrefix("TOURBUS_PEER_") {
            var peer = String(key.dropFirst("TOURBUS_PEER_".count)).lowercased()
            let isPublish = peer.hasSuffix("_pub")
            if isPublish { peer.removeLast(4) }
            var endpoints = peers[peer] ?? PeerEndpoints()
            if isPublish { endpoints.publish = split(value) } else { endpoints.rpc = split(value) }
            peers[peer] = endpoints
        }

        if let value = flags.last("ready-file") { readyFile = value }
        for (flag, isPublish) in [("peer", false), ("peer-pub", true)] {
            for spec in flags.all(flag) {
                guard let eq = spec.firstIndex(of: "="), eq != spec.startIndex else {
                    throw ConfigError("--\(flag) takes NAME=ENDPOINT[,ENDPOINT], got '\(spec)'")
                }
                let peer = String(spec[..<eq]).lowercased()
                var endpoints = peers[peer] ?? PeerEndpoints()
                let list = split(String(spec[spec.index(after: eq)...]))
                if isPublish { endpoints.publish = list } else { endpoints.rpc = list }
                peers[peer] = endpoints
            }
        }
        for peer in flags.all("peer-replicated").flatMap(split).map({ $0.lowercased() }) {
            guard peers[peer]?.rpc.isEmpty == false else {
                throw ConfigError("--peer-replicated \(peer): no request endpoints are configured for \(peer) (--peer \(peer)=EP,EP,EP, or its section)")
            }
            peers[peer]?.followsLeader = true
        }
        if let value = flags.last("max-request-bytes") { maxRequestBytes = try positive(value, "--max-request-bytes") }
        if let value = flags.last("max-json-depth") { maxJSONDepth = try Self.jsonDepth(value, "--max-json-depth") }
        if let value = flags.last("log-level") ?? environment["LOG_LEVEL"] {
            guard let level = Logger.Level(name: value) else { throw ConfigError("unknown log level '\(value)'") }
            logLevel = level
        }
        if let value = flags.last("metrics-listen") ?? environment["TOURBUS_METRICS_LISTEN"] ?? sources.file?.services[name]?.metricsListen {
            _ = try MetricsServer.split(value)
            metricsListen = value
        }
        let keyFile = flags.last("curve-key") ?? environment["TOURBUS_CURVE_KEY"] ?? sources.file?.services[name]?.curveKey
        bus = try BusKeys.load(
            name: name, keyFile: keyFile, listed: sources.file?.curveKeys, filePath: sources.file?.path,
            peers: Array(peers.keys), serves: serves)
    }

    /// The CURVE keys of a client of `peer`, when the bus is secured.
    public func curve(for peer: String) -> CurveClientKeys? { bus?.client(of: peer) }

    private static func jsonDepth(_ value: String, _ source: String) throws(ConfigError) -> Int {
        guard let n = Int(value), maxJSONDepthRange.contains(n) else {
            throw ConfigError("\(source) takes an integer from \(maxJSONDepthRange.lowerBound) to \(maxJSONDepthRange.upperBound), got '\(value)'")
        }
        return n
    }
}

/// What a process's configuration is read from: its flags, its environment and the suite
/// file, if one is named. Each kind of process reads its own settings from it.
public struct ConfigSources {
    public let flags: Flags
    public let environment: [String: String]
    public let file: SuiteFile?

    public init(arguments: [String], environment: [String: String], options: ProcessOptions) throws(ConfigError) {
        flags = try Flags(arguments, options: options)
        self.environment = environment
        if let path = flags.last("config") ?? environment["TOURBUS_CONFIG"] {
            file = try SuiteFile(path: path)
        } else {
            file = nil
        }
    }
}

/// The flags one kind of process takes, and those of the other kind it refuses, each with why.
public struct ProcessOptions: Sendable {
    /// `gateway` or `service`, as the refusal names it.
    let kind: String
    let takes: Set<String>
    /// Flag name to the reason this kind does not take it.
    let refuses: [String: String]

    public init(kind: String, takes: Set<String>, refuses: [String: String]) {
        self.kind = kind
        self.takes = takes
        self.refuses = refuses
    }
}

/// The suite file: `{"data_dir":…, "services":{"catalog":{"bind":[…],"publish":[…],"connect":[…],"subscribe":[…],"readers":N}}}`.
///
/// Every process reads the whole file and takes what it uses: its own section, the other
/// sections as peers, and the top-level keys of its kind. Unknown keys are ignored.
public struct SuiteFile: Sendable {
    public struct Section: Decodable, Sendable {
        var bind: [String]?
        var publish: [String]?
        var connect: [String]?
        var subscribe: [String]?
        var readers: Int?
        var db: String?
        /// A replicated service's Raft addresses (host:port), one per replica, in replica order.
        var raft: [String]?
        /// Where each replica's Raft port listens, when not at its `raft` address, in replica order.
        var raftBind: [String]?
        public var listen: String?
        var curveKey: String?
        var metricsListen: String?
        /// The gateway's: origins whose pages may call it, and proxies whose word on a client's address it takes.
        public var allowOrigins: [String]?
        public var trustedProxies: [String]?
        /// The gateway's web app directory (`--web-dir`).
        public var webDir: String?
        /// Every other member that is an integer, by its key, and the keys of those that are
        /// not: the gateway reads its limits from them.
        public var integers: [String: Int] = [:]
        public var notIntegers: Set<String> = []

        enum CodingKeys: String, CodingKey {
            case bind, publish, connect, subscribe, readers, db, listen, raft
            case curveKey = "curve_key"
            case raftBind = "raft_bind"
            case metricsListen = "metrics_listen"
            case allowOrigins = "allow_origins"
            case trustedProxies = "trusted_proxies"
            case webDir = "web_dir"
        }

        public init(from decoder: any Decoder) throws {
            let c = try decoder.container(keyedBy: CodingKeys.self)
            bind = try c.decodeIfPresent([String].self, forKey: .bind)
            publish = try c.decodeIfPresent([String].self, forKey: .publish)
            connect = try c.decodeIfPresent([String].self, forKey: .connect)
            subscribe = try c.decodeIfPresent([String].self, forKey: .subscribe)
            readers = try c.decodeIfPresent(Int.self, forKey: .readers)
            db = try c.decodeIfPresent(String.self, forKey: .db)
            raft = try c.decodeIfPresent([String].self, forKey: .raft)
            raftBind = try c.decodeIfPresent([String].self, forKey: .raftBind)
            listen = try c.decodeIfPresent(String.self, forKey: .listen)
            curveKey = try c.decodeIfPresent(String.self, forKey: .curveKey)
            metricsListen = try c.decodeIfPresent(String.self, forKey: .metricsListen)
            allowOrigins = try c.decodeIfPresent([String].self, forKey: .allowOrigins)
            trustedProxies = try c.decodeIfPresent([String].self, forKey: .trustedProxies)
            webDir = try c.decodeIfPresent(String.self, forKey: .webDir)
            let all = try decoder.container(keyedBy: AnyKey.self)
            for key in all.allKeys where CodingKeys(stringValue: key.stringValue) == nil {
                if let value = try? all.decode(Int.self, forKey: key) { integers[key.stringValue] = value } else { notIntegers.insert(key.stringValue) }
            }
        }
    }
    private struct AnyKey: CodingKey {
        var stringValue: String
        var intValue: Int? { nil }
        init(_ string: String) { stringValue = string }
        init?(stringValue: String) { self.stringValue = stringValue }
        init?(intValue: Int) { nil }
    }
    private struct Contents: Decodable {
        var dataDir: String?
        var heartbeatMs: Int?
        var outboxRetention: Int?
        var maxRequestBytes: Int?
        var maxJSONDepth: Int?
        var services: [String: Section]?
        var curve: Curve?
        enum CodingKeys: String, CodingKey {
            case dataDir = "data_dir"
            case heartbeatMs = "heartbeat_ms"
            case outboxRetention = "outbox_retention"
            case
                maxRequestBytes = "max_request_bytes"
            case maxJSONDepth = "max_json_depth"
            case services, curve
        }
    }
    /// `"curve": {"keys": {"catalog": ["Z85 public key", …], …}}`.
    private struct Curve: Decodable {
        var keys: [String: [String]]
    }

    let path: String
    private let contents: Contents

    var dataDir: String? { contents.dataDir }
    var heartbeatMs: Int? { contents.heartbeatMs }
    var outboxRetention: Int? { contents.outboxRetention }
    var maxRequestBytes: Int? { contents.maxRequestBytes }
    var maxJSONDepth: Int? { contents.maxJSONDepth }
    public var services: [String: Section] { contents.services ?? [:] }
    var curveKeys: [String: [String]]? { contents.curve?.keys }

    /// The largest suite file read: a suite of many services and keys is a few KiB.
    static let maxBytes = 1 << 20

    init(path: String) throws(ConfigError) {
        self.path = path
        var info = stat()
        guard stat(path, &info) == 0 else { throw ConfigError("config file \(path): \(String(cString: strerror(errno)))") }
        guard info.st_mode & S_IFMT == S_IFREG else { throw ConfigError("config file \(path): not a regular file") }
        guard info.st_size <= SuiteFile.maxBytes else { throw ConfigError("config file \(path): larger than \(SuiteFile.maxBytes) bytes") }
        do {
            let data = try Data(contentsOf: URL(fileURLWithPath: path))
            guard data.count <= SuiteFile.maxBytes else { throw ConfigError("config file \(path): larger than \(SuiteFile.maxBytes) bytes") }
            try StrictJSON.check(data)
            try SuiteFile.refuseDuplicateNames(data, path: path)
            contents = try JSONCoding.decoder.decode(Contents.self, from: data)
        } catch let error as ConfigError {
            throw error
        } catch let error as JSONSyntaxError {
            throw ConfigError("config file \(path): \(error.message)")
        } catch let error as DecodingError {
            throw ConfigError("config file \(path): \(ServiceError.decoding(error, dropping: []).description)")
        } catch {
            throw ConfigError("config file \(path): \(error.localizedDescription)")
        }
    }

    /// Refuses a name given twice at the top of the file, in `services` or in `curve.keys`:
    /// JSON allows it and a decoder keeps one of them, so one of the two would be ignored
    /// unseen (a stranger's key listed under `operator` before the real one, say).
    static func refuseDuplicateNames(_ data: Data, path: String) throws(ConfigError) {
        func check(_ json: Data, _ place: String) throws(ConfigError) -> [(key: String, value: Range<Int>)] {
            guard let members = JSONSpan.members(of: json) else { return [] }
            var seen = Set<String>()
            for member in members where !seen.insert(member.key).inserted {
                throw ConfigError("config file \(path): \(place)\(member.key) is given twice")
            }
            return members
        }
        let top = try check(data, "")
        for (key, range) in top where key == "services" || key == "curve" {
            let inner = try check(data.subdata(in: range), key + ".")
            if key == "curve", let keys = inner.first(where: { $0.key == "keys" }) {
                _ = try check(data.subdata(in: range).subdata(in: keys.value), "curve.keys.")
            }
        }
    }

    /// A mistake in the file, naming it.
    public func error(_ message: String) -> ConfigError { ConfigError("config file \(path): \(message)") }

    /// `value` if it is positive; an error naming `key` if it is not.
    public func positive(_ value: Int?, _ key: String) throws(ConfigError) -> Int? {
        guard let value else { return nil }
        guard value > 0 else { throw error("\(key) must be a positive integer, got \(value)") }
        return value
    }
}

/// `--name value` and `--name=value` flags, repeatable; a flag of the other kind of process
/// is refused with why, anything else unknown is an error.
public struct Flags: Sendable {
    private var values: [(String, String)] = []

    init(_ arguments: [String], options: ProcessOptions) throws(ConfigError) {
        var i = 0
        while i < arguments.count {
            let arg = arguments[i]
            guard arg.hasPrefix("--") else { throw ConfigError("unexpected argument '\(arg)'") }
            var name = String(arg.dropFirst(2))
            var value: String?
            if let eq = name.firstIndex(of: "=") {
                value = String(name[name.index(after: eq)...])
                name = String(name[..<eq])
            }
            if let reason = options.refuses[name] { throw ConfigError("--\(name) is not a \(options.kind) option (\(reason))") }
            guard options.takes.contains(name) else { throw ConfigError("unknown option --\(name)") }
            if value == nil {
                guard i + 1 < arguments.count else { throw ConfigError("--\(name) needs a value") }
                i += 1
                value = arguments[i]
            }
            values.append((name, value ?? ""))
            i += 1
        }
    }

    public func all(_ name: String) -> [String] { values.filter { $0.0 == name }.map(\.1) }
    public func last(_ name: String) -> String? { all(name).last }
}

/// A comma-separated list, spaces trimmed, empty items dropped.
func split(_ value: String) -> [String] {
    value.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty }
}

/// `value` as a positive integer, or an error naming `flag`.
public func positive(_ value: String, _ flag: String) throws(ConfigError) -> Int {
    guard let n = Int(value), n > 0 else { throw ConfigError("\(flag) takes a positive integer, got '\(value)'") }
    return n
}
