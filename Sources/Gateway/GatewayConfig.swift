import Bus
import Foundation
import ServiceCore

/// Everything the gateway needs to start: the common settings, where it listens for
/// clients, and its limits on them.
///
/// The gateway keeps nothing durable and binds no bus endpoint, so the services' flags
/// (`--data-dir`, `--readers`, `--publish`, …) are refused with why; `TOURBUS_DATA_DIR` and the
/// suite file's top-level `data_dir`, `heartbeat_ms` and `outbox_retention`, which a whole
/// suite shares, are ignored. The common settings read through (`config.peers`).
@dynamicMemberLookup
public struct GatewayConfig: Sendable, Equatable {
    /// The settings every process has.
    public var common = CommonConfig(name: "gateway")
    /// `HOST:PORT` the gateway listens on (port 0 picks a free one).
    public var listen = "127.0.0.1:7700"
    /// The gateway's limits on its clients.
    public var limits = GatewayLimits()
    /// Origins (`https://guide.example.org`), besides the gateway's own, whose pages may call
    /// it from a browser: CORS and WebSockets (`--allow-origin`, repeated).
    public var allowedOrigins: [String] = []
    /// Addresses or networks (`10.0.0.0/8`) of proxies whose word on a client's address is taken:
    /// PROXY protocol v2, `X-Forwarded-For` (`--trusted-proxy`, repeated).
    public var trustedProxies: [String] = []
    /// The web app's directory, served at `/` (`--web-dir`); none: the gateway serves no app.
    public var webDirectory: String?
    /// Leaflet's directory, served at `/vendor/leaflet/` with the app (`--leaflet-dir`;
    /// Debian's libjs-leaflet's when it is installed).
    public var leafletDirectory: String? = FileManager.default.fileExists(atPath: "/usr/share/javascript/leaflet/leaflet.js") ? "/usr/share/javascript/leaflet" : nil
    /// The map's background tiles the app shows (`--map-tiles`, `--map-attribution`).
    var tiles = WebFiles.Tiles()

    public init() {}

    public subscript<Value>(dynamicMember field: WritableKeyPath<CommonConfig, Value>) -> Value {
        get { common[keyPath: field] }
        set { common[keyPath: field] = newValue }
    }

    /// The flags only the gateway takes.
    static var ownFlags: Set<String> {
        Set(["listen", "name", "allow-origin", "trusted-proxy", "web-dir", "leaflet-dir", "map-tiles", "map-attribution"] + GatewayLimits.settings.map(\.name))
    }

    /// The flags only the gateway takes, and the services', which it refuses.
    static let options = ProcessOptions(
        kind: "gateway",
        takes: CommonConfig.flags.union(ownFlags),
        refuses: [
            "data-dir": "the gateway keeps nothing on disk",
            "db": "the gateway keeps nothing on disk",
            "readers": "the gateway has no reader threads: a few event loops serve every client connection",
            "publish": "the gateway publishes no events",
            "heartbeat-ms": "the gateway publishes no events",
            "outbox-retention": "the gateway publishes no events",
            "bind": "the gateway binds no request endpoint: clients reach it at --listen",
        ])

    /// Usage text for `--help`.
    public static var usage: String {
        """
        usage: tourbus-gateway [options]
        \(CommonConfig.usageLines)
          --listen HOST:PORT      TCP endpoint for clients (default 127.0.0.1:7700); also TOURBUS_GATEWAY_LISTEN
          --name NAME             this gateway's section of the config file and its CURVE key name
                                  (default gateway; another gateway of the suite is gateway-b, …)
          --allow-origin ORIGIN   a site (https://guide.example.org) whose pages may call the gateway from a browser
                                  besides its own (CORS, WebSocket); repeat for more; also TOURBUS_GATEWAY_ALLOW_ORIGINS
                                  (comma-separated) or allow_origins in the suite file
          --trusted-proxy ADDR    a proxy (an address, or a network as 10.0.0.0/8) whose word on its clients' addresses
                                  is taken (PROXY protocol v2, X-Forwarded-For); repeat for more; also
                                  TOURBUS_GATEWAY_TRUSTED_PROXIES or trusted_proxies in the suite file
          --web-dir DIR           serve the web app in DIR at / (index.html and what it loads); also web_dir in the
                                  suite file
          --leaflet-dir DIR       Leaflet's files, served at /vendor/leaflet/ (default /usr/share/javascript/leaflet,
                                  Debian's libjs-leaflet, when installed)
          --map-tiles URL         the app's background map tiles, {z}/{x}/{y} in the URL
                                  (default https://tile.openstreetmap.org/{z}/{x}/{y}.png)
          --map-attribution TEXT  their attribution (default © OpenStreetMap contributors)
        \(limitsUsage)
        Environment: TOURBUS_PEER_<NAME>, TOURBUS_PEER_<NAME>_PUB; the limits as TOURBUS_GATEWAY_<NAME>
                     (upper case, _ for -), or services.gateway.<name> (_ for -) in the suite file.
        The gateway keeps nothing on disk and binds no bus endpoint: the services' options (--data-dir, --db,
        --readers, --publish, --heartbeat-ms, --outbox-retention, --bind) are refused; TOURBUS_DATA_DIR is ignored.
        """
    }

    /// One line per gateway limit: flag, meaning, default.
    private static var limitsUsage: String {
        let defaults = GatewayLimits()
        return GatewayLimits.settings.map { "  --\($0.name) N\n      \($0.summary) (default \(defaults[keyPath: $0.field]))" }
            .joined(separator: "\n")
    }

    /// Builds the gateway's configuration from flags, environment and file; `name` picks its
    /// section of the file and its `TOURBUS_<NAME>_LISTEN`.
    public static func load(name defaultName: String = "gateway", arguments: [String], environment: [String: String]) throws(ConfigError) -> GatewayConfig {
        let sources = try ConfigSources(arguments: arguments, environment: environment, options: options)
        let name = sources.flags.last("name") ?? defaultName
        if name != defaultName {
            guard sources.file?.services[name] != nil else {
                throw ConfigError("--name \(name): the config file has no services.\(name) section (a gateway named otherwise needs one, with its listen)")
            }
        }
        var config = GatewayConfig()
        config.common = try CommonConfig(name: name, sources: sources, serves: false)
        let flags = sources.flags

        if let file = sources.file, let section = file.services[name] {
            if let value = section.listen { config.listen = value }
            if let value = section.allowOrigins { config.allowedOrigins = value }
            if let value = section.trustedProxies { config.trustedProxies = value }
            if let value = section.webDir { config.webDirectory = value }
            for setting in GatewayLimits.settings {
                guard !section.notIntegers.contains(setting.fileKey) else {
                    throw file.error("services.\(name).\(setting.fileKey) must be a positive integer")
                }
                if let value = try file.positive(section.integers[setting.fileKey], "services.\(name).\(setting.fileKey)") {
                    config.limits[keyPath: setting.field] = value
                }
            }
        }

        if let value = environment["TOURBUS_\(name.uppercased())_LISTEN"] { config.listen = value }
        func list(_ text: String) -> [String] { text.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty } }
        if let value = environment["TOURBUS_\(name.uppercased())_ALLOW_ORIGINS"] { config.allowedOrigins = list(value) }
        if let value = environment["TOURBUS_\(name.uppercased())_TRUSTED_PROXIES"] { config.trustedProxies = list(value) }
        for setting in GatewayLimits.settings {
            if let value = environment[setting.environmentKey] { config.limits[keyPath: setting.field] = try positive(value, setting.environmentKey) }
        }

        if let value = flags.last("listen") { config.listen = value }
        if !flags.all("allow-origin").isEmpty { config.allowedOrigins = flags.all("allow-origin") }
        if !flags.all("trusted-proxy").isEmpty { config.trustedProxies = flags.all("trusted-proxy") }
        if let value = flags.last("web-dir") { config.webDirectory = value }
        if let value = flags.last("leaflet-dir") { config.leafletDirectory = value }
        if let value = flags.last("map-tiles") {
            guard WebFiles.origin(of: value) != nil, value.contains("{z}"), value.contains("{x}"), value.contains("{y}") else {
                throw ConfigError("--map-tiles \(value): a URL with {z}, {x} and {y} (https://tile.openstreetmap.org/{z}/{x}/{y}.png)")
            }
            config.tiles.url = value
        }
        if let value = flags.last("map-attribution") { config.tiles.attribution = value }
        config.allowedOrigins = try config.allowedOrigins.map { origin throws(ConfigError) in try WebOrigin.normalized(origin) }
        for proxy in config.trustedProxies where Network(proxy) == nil {
            throw ConfigError("trusted proxy '\(proxy)' is not an IPv4 or IPv6 address or network (10.0.0.0/8)")
        }
        for setting in GatewayLimits.settings {
            if let value = flags.last(setting.name) { config.limits[keyPath: setting.field] = try positive(value, "--\(setting.name)") }
        }
        try config.limits.validate()
        return config
    }
}

extension GatewayConfig: ProcessConfig {
    public static func load(process name: String, arguments: [String], environment: [String: String]) throws(ConfigError) -> GatewayConfig {
        try load(name: name, arguments: arguments, environment: environment)
    }

    public static func usage(process name: String) -> String { usage }
}
