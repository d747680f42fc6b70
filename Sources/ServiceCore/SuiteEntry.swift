import Bus

/// How other processes reach one process of the suite, as the suite file says: the request
/// endpoints its peers send to and the CURVE public key they pin. `tourbus probe --config`
/// reads it; a service reads the same for each of its peers (`CommonConfig`).
public struct SuiteEntry: Sendable, Equatable {
    /// The process's name: its section under `services`.
    public let name: String
    /// Its request endpoints: `connect`, else `bind` with `*` read as 127.0.0.1.
    public let endpoints: [String]
    /// The Z85 public key its clients pin (the first `curve.keys.NAME` lists); nil on a plain bus.
    public let serverKey: String?

    /// The member `name` of the suite file at `path`. Refused: a file that does not load
    /// (as for any process), a name with no section, a secured file that lists no key for it.
    public init(name: String, configFile path: String) throws(ConfigError) {
        let file = try SuiteFile(path: path)
        guard let section = file.services[name] else {
            throw file.error("has no section services.\(name)")
        }
        self.name = name
        endpoints = section.peerRequestEndpoints
        if let listed = file.curveKeys {
            guard let first = listed[name]?.first else { throw file.error("curve.keys lists no key for \(name)") }
            serverKey = first
        } else {
            serverKey = nil
        }
    }
}

extension SuiteFile.Section {
    /// Where a peer sends requests: `connect`, or else `bind` read from this host.
    var peerRequestEndpoints: [String] { connect ?? Self.local(bind ?? []) }
    /// Where a peer subscribes to events: `subscribe`, or else `publish` read from this host.
    var peerEventEndpoints: [String] { subscribe ?? Self.local(publish ?? []) }

    /// `endpoints` with all-interfaces hosts (`*`, `0.0.0.0`) read as 127.0.0.1: right only
    /// when both ends run on one host.
    static func local(_ endpoints: [String]) -> [String] {
        endpoints.map {
            $0.replacingOccurrences(of: "://*:", with: "://127.0.0.1:").replacingOccurrences(of: "://0.0.0.0:", with: "://127.0.0.1:")
        }
    }
}
