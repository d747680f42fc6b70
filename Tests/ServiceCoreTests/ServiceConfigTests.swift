import Bus
import Foundation
import Gateway
import ServiceCore
import Testing
import TestSupport

@Suite struct ServiceConfigTests {
    func writeFile(_ json: String) throws -> String {
        let path = NSTemporaryDirectory() + "tourbus-config-\(UUID().uuidString).json"
        try Data(json.utf8).write(to: URL(fileURLWithPath: path))
        return path
    }

    /// The two-host example of configuration.md, as each host's services read it.
    @Test func theDocumentedTwoHostSuiteReadsAsItSays() throws {
        let text = try String(contentsOf: protocolsFolder().appendingPathComponent("configuration.md"), encoding: .utf8)
        let example = try #require(text.components(separatedBy: "### Example: a suite on two hosts").last?
            .components(separatedBy: "```json\n").dropFirst().first?.components(separatedBy: "```").first)
        let file = try writeFile(example)
        defer { try? FileManager.default.removeItem(atPath: file) }
        let search = try ServiceConfig.load(service: "search", arguments: ["--config", file], environment: [:])
        #expect(search.bind == ["tcp://*:7102"] && search.dataDirectory == "/var/lib/tourbus")
        #expect(search.peers["catalog"] == PeerEndpoints(rpc: ["tcp://10.0.0.1:7101"], publish: ["tcp://10.0.0.1:7111"]))
        #expect(search.peers["social"] == PeerEndpoints(rpc: ["tcp://10.0.0.1:7104"], publish: ["tcp://10.0.0.1:7114"]))
        let gateway = try GatewayConfig.load(arguments: ["--config", file], environment: [:])
        #expect(Set(gateway.peers.keys) == ["catalog", "search", "favorites", "social", "notify"])
        #expect(gateway.peers["favorites"]?.rpc == ["tcp://10.0.0.2:7103"])
        // The gateway hears notify's pushes on its event endpoint.
        #expect(gateway.peers["notify"] == PeerEndpoints(rpc: ["tcp://10.0.0.2:7105"], publish: ["tcp://10.0.0.2:7115"]))
    }

    @Test func defaultsBindLoopbackOnAnyPort() throws {
        let config = try ServiceConfig.load(service: "catalog", arguments: [], environment: [:])
        #expect(config.bind == ["tcp://127.0.0.1:0"] && config.publish == ["tcp://127.0.0.1:0"])
        #expect(config.resolvedDatabasePath == "data/catalog.sqlite")
        #expect(config.peers.isEmpty && config.readers == 2)
    }

    @Test func fileThenEnvironmentThenFlags() throws {
        let file = try writeFile("""
            {"data_dir": "/srv/tourbus", "heartbeat_ms": 250,
             "services": {
               "catalog": {"bind": ["tcp://*:7101"], "publish": ["tcp://*:7102"], "readers": 4},
               "search":  {"bind": ["tcp://0.0.0.0:7201"]},
               "social":  {"bind": ["tcp://*:7301"], "publish": ["tcp://*:7302"],
                           "connect": ["tcp://10.0.0.2:7301"], "subscribe": ["tcp://10.0.0.2:7302"]}
             }}
            """)
        defer { try? FileManager.default.removeItem(atPath: file) }

        let fromFile = try ServiceConfig.load(service: "catalog", arguments: ["--config", file], environment: [:])
        #expect(fromFile.bind == ["tcp://*:7101"] && fromFile.publish == ["tcp://*:7102"] && fromFile.readers == 4)
        #expect(fromFile.dataDirectory == "/srv/tourbus" && fromFile.heartbeatMilliseconds == 250)
        #expect(fromFile.peers["search"] == PeerEndpoints(rpc: ["tcp://127.0.0.1:7201"], publish: []))
        #expect(fromFile.peers["social"] == PeerEndpoints(rpc: ["tcp://10.0.0.2:7301"], publish: ["tcp://10.0.0.2:7302"]))
        #expect(fromFile.peers["catalog"] == nil)

        let environment = ["TOURBUS_CONFIG": file, "TOURBUS_CATALOG_BIND": "tcp://127.0.0.1:9001, tcp://127.0.0.1:9002",
                           "TOURBUS_DATA_DIR": "/tmp/env", "TOURBUS_PEER_SEARCH": "tcp://h:1", "TOURBUS_PEER_SEARCH_PUB": "tcp://h:2"]
        let fromEnvironment = try ServiceConfig.load(service: "catalog", arguments: [], environment: environment)
        #expect(fromEnvironment.bind == ["tcp://127.0.0.1:9001", "tcp://127.0.0.1:9002"])
        #expect(fromEnvironment.dataDirectory == "/tmp/env")
        #expect(fromEnvironment.peers["search"] == PeerEndpoints(rpc: ["tcp://h:1"], publish: ["tcp://h:2"]))

        let fromFlags = try ServiceConfig.load(service: "catalog", arguments: [
            "--bind", "tcp://127.0.0.1:0", "--data-dir=/tmp/flags", "--peer", "search=tcp://f:1,tcp://f:2",
            "--db", "/tmp/x.sqlite", "--readers", "3", "--log-level", "warn",
        ], environment: environment)
        #expect(fromFlags.bind == ["tcp://127.0.0.1:0"] && fromFlags.dataDirectory == "/tmp/flags" && fromFlags.readers == 3)
        #expect(fromFlags.peers["search"]?.rpc == ["tcp://f:1", "tcp://f:2"] && fromFlags.peers["search"]?.publish == ["tcp://h:2"])
        #expect(fromFlags.resolvedDatabasePath == "/tmp/x.sqlite" && fromFlags.logLevel == .warn)
    }

    @Test(arguments: [
        (["--frobnicate", "1"], "unknown option --frobnicate"),
        (["--bind"], "--bind needs a value"),
        (["stray"], "unexpected argument 'stray'"),
        (["--readers", "0"], "--readers takes a positive integer, got '0'"),
        (["--peer", "nameless"], "--peer takes NAME=ENDPOINT[,ENDPOINT], got 'nameless'"),
        (["--log-level", "chatty"], "unknown log level 'chatty'"),
        (["--config", "/nonexistent/tourbus.json"], "config file /nonexistent/tourbus.json"),
    ])
    func mistakesAreReportedClearly(arguments: [String], message: String) {
        do {
            _ = try ServiceConfig.load(service: "catalog", arguments: arguments, environment: [:])
            Issue.record("accepted \(arguments)")
        } catch {
            #expect(error.message.hasPrefix(message), "\(error)")
        }
    }

    @Test func fileNumbersMustBePositive() throws {
        for json in [#"{"heartbeat_ms": 0}"#, #"{"outbox_retention": -5}"#, #"{"services": {"catalog": {"readers": 0}}}"#] {
            let file = try writeFile(json)
            defer { try? FileManager.default.removeItem(atPath: file) }
            #expect(throws: ConfigError.self, "\(json)") { try ServiceConfig.load(service: "catalog", arguments: ["--config", file], environment: [:]) }
        }
        let file = try writeFile(#"{"max_request_bytes": 4096}"#)
        defer { try? FileManager.default.removeItem(atPath: file) }
        #expect(try ServiceConfig.load(service: "catalog", arguments: ["--config", file], environment: [:]).maxRequestBytes == 4096)
        #expect(try ServiceConfig.load(service: "catalog", arguments: ["--max-request-bytes", "9"], environment: [:]).maxRequestBytes == 9)
    }

    @Test func jsonDepthFromFileEnvironmentAndFlag() throws {
        #expect(try ServiceConfig.load(service: "catalog", arguments: [], environment: [:]).maxJSONDepth == 64)
        let file = try writeFile(#"{"max_json_depth": 100}"#)
        defer { try? FileManager.default.removeItem(atPath: file) }
        #expect(try ServiceConfig.load(service: "catalog", arguments: ["--config", file], environment: [:]).maxJSONDepth == 100)
        let environment = ["TOURBUS_CONFIG": file, "TOURBUS_MAX_JSON_DEPTH": "200"]
        #expect(try ServiceConfig.load(service: "catalog", arguments: [], environment: environment).maxJSONDepth == 200)
        #expect(try ServiceConfig.load(service: "catalog", arguments: ["--max-json-depth", "512"], environment: environment).maxJSONDepth == 512)
        #expect(try ServiceConfig.load(service: "catalog", arguments: ["--max-json-depth=1"], environment: [:]).maxJSONDepth == 1)
    }

    @Test(arguments: [
        (["--max-json-depth", "0"], [:], "--max-json-depth takes an integer from 1 to 512, got '0'"),
        (["--max-json-depth", "513"], [:], "--max-json-depth takes an integer from 1 to 512, got '513'"),
        (["--max-json-depth", "deep"], [:], "--max-json-depth takes an integer from 1 to 512, got 'deep'"),
        ([], ["TOURBUS_MAX_JSON_DEPTH": "-1"], "TOURBUS_MAX_JSON_DEPTH takes an integer from 1 to 512, got '-1'"),
    ] as [([String], [String: String], String)])
    func jsonDepthOutOfRangeIsRefused(arguments: [String], environment: [String: String], message: String) {
        #expect(throws: ConfigError(message)) { try ServiceConfig.load(service: "catalog", arguments: arguments, environment: environment) }
    }

    @Test func fileJSONDepthOutOfRangeAndLaxFilesAreRefused() throws {
        for (json, message) in [(#"{"max_json_depth": 0}"#, "max_json_depth must be an integer from 1 to 512, got 0"),
                                (#"{"max_json_depth": 1000}"#, "max_json_depth must be an integer from 1 to 512, got 1000"),
                                (#"{"data_dir": "/srv",}"#, "trailing comma at byte 20"),
                                (String(repeating: "[", count: 100) + String(repeating: "]", count: 100), "nesting deeper than 64 levels at byte 65")] {
            let file = try writeFile(json)
            defer { try? FileManager.default.removeItem(atPath: file) }
            #expect(throws: ConfigError("config file \(file): \(message)")) {
                try ServiceConfig.load(service: "catalog", arguments: ["--config", file], environment: [:])
            }
        }
    }

    @Test func gatewaySectionAndFlags() throws {
        let file = try writeFile(#"{"services": {"gateway": {"listen": "0.0.0.0:7700", "max_connections": 64, "idle_timeout_ms": 900, "deadline_ms": 750}, "catalog": {"bind": ["tcp://*:7101"]}}}"#)
        defer { try? FileManager.default.removeItem(atPath: file) }
        let config = try GatewayConfig.load(arguments: ["--config", file], environment: [:])
        #expect(config.listen == "0.0.0.0:7700" && config.limits.maxConnections == 64 && config.limits.idleTimeoutMilliseconds == 900 && config.limits.deadlineMilliseconds == 750)
        #expect(config.peers["catalog"]?.rpc == ["tcp://127.0.0.1:7101"])
        let flagged = try GatewayConfig.load(arguments: ["--config", file, "--listen", "127.0.0.1:0", "--deadline-ms", "100"],
                                             environment: ["TOURBUS_GATEWAY_LISTEN": "127.0.0.1:1"])
        #expect(flagged.listen == "127.0.0.1:0" && flagged.limits.deadlineMilliseconds == 100)
        #expect(try GatewayConfig.load(arguments: [], environment: ["TOURBUS_GATEWAY_LISTEN": "127.0.0.1:1"]).listen == "127.0.0.1:1")
    }

    @Test func everyGatewayLimitComesFromFlagsEnvironmentAndFile() throws {
        for (i, setting) in GatewayLimits.settings.enumerated() {
            let value = 1_000 + i
            let file = try writeFile(#"{"services": {"gateway": {"\#(setting.fileKey)": \#(value)}}}"#)
            defer { try? FileManager.default.removeItem(atPath: file) }
            let fromFile = try? GatewayConfig.load(arguments: ["--config", file], environment: [:])
            let fromEnvironment = try? GatewayConfig.load(arguments: [], environment: [setting.environmentKey: "\(value)"])
            let fromFlag = try? GatewayConfig.load(arguments: ["--\(setting.name)", "\(value)"], environment: [:])
            // max-batch above max-in-flight (128 by default) is refused as a mistake.
            if setting.name == "max-batch" {
                #expect(fromFile == nil && fromEnvironment == nil && fromFlag == nil)
                continue
            }
            for config in [fromFile, fromEnvironment, fromFlag] {
                #expect(config?.limits[keyPath: setting.field] == value, "\(setting.name)")
            }
        }
        #expect(throws: ConfigError.self) { try GatewayConfig.load(arguments: ["--backend-window", "0"], environment: [:]) }
        // A limit in the file that is not an integer is a mistake named, not a default kept.
        let quoted = try writeFile(#"{"services": {"gateway": {"max_batch": "5"}}}"#)
        defer { try? FileManager.default.removeItem(atPath: quoted) }
        #expect(throws: ConfigError("config file \(quoted): services.gateway.max_batch must be a positive integer")) {
            try GatewayConfig.load(arguments: ["--config", quoted], environment: [:])
        }
    }

    @Test func malformedFileNamesTheField() throws {
        let file = try writeFile(#"{"services": {"catalog": {"bind": "tcp://*:1"}}}"#)
        defer { try? FileManager.default.removeItem(atPath: file) }
        do {
            _ = try ServiceConfig.load(service: "catalog", arguments: ["--config", file], environment: [:])
            Issue.record("accepted a string where a list belongs")
        } catch {
            #expect(error.message.contains("services.catalog.bind"), "\(error)")
        }
    }
}

@Suite struct LoggerTests {
    @Test func logfmtLinesWithLevelsAndQuoting() {
        let lines = Locked<[String]>([])
        let logger = Logger(component: "unit", level: .info) { line in lines.withLock { $0.append(line) } }
        logger.debug("hidden")
        logger.info("hello world", ["key": "a b", "n": 3, "quote": "say \"hi\"\n"])
        logger.error("plain")
        #expect(lines.value.count == 2)
        let first = lines.value[0]
        #expect(first.hasPrefix("ts=") && first.hasSuffix("\n"))
        #expect(first.contains(#"level=info component=unit msg="hello world" key="a b" n=3 quote="say \"hi\"\n""#))
        #expect(lines.value[1].contains("level=error component=unit msg=plain"))
        #expect(Logger.timestamp(Date(timeIntervalSince1970: 1_700_000_000.123)) == "2023-11-14T22:13:20.123Z")
    }
}

/// Each kind of process takes its own flags and refuses the other kind's, saying why; what a
/// whole suite shares (the file, the environment) it reads without choking on the rest.
@Suite struct ProcessKindTests {
    @Test(arguments: [
        ("--data-dir", "the gateway keeps nothing on disk"),
        ("--db", "the gateway keeps nothing on disk"),
        ("--readers", "the gateway has no reader threads: a few event loops serve every client connection"),
        ("--publish", "the gateway publishes no events"),
        ("--heartbeat-ms", "the gateway publishes no events"),
        ("--outbox-retention", "the gateway publishes no events"),
        ("--bind", "the gateway binds no request endpoint: clients reach it at --listen"),
    ])
    func theGatewayRefusesServiceFlags(flag: String, reason: String) {
        let message = "\(flag) is not a gateway option (\(reason))"
        #expect(throws: ConfigError(message)) { try GatewayConfig.load(arguments: ["--listen", "127.0.0.1:0", flag, "1"], environment: [:]) }
        #expect(throws: ConfigError(message)) { try GatewayConfig.load(arguments: ["\(flag)=1"], environment: [:]) }
        // Refused for what it is, even without a value.
        #expect(throws: ConfigError(message)) { try GatewayConfig.load(arguments: [flag], environment: [:]) }
    }

    @Test func servicesRefuseGatewayFlags() {
        #expect(throws: ConfigError("--listen is not a service option (only the gateway listens for clients)")) {
            try ServiceConfig.load(service: "catalog", arguments: ["--listen", "127.0.0.1:0"], environment: [:])
        }
        // The gateway's limits are its own (Gateway), which a service does not know of.
        for setting in GatewayLimits.settings {
            #expect(throws: ConfigError("unknown option --\(setting.name)")) {
                try ServiceConfig.load(service: "search", arguments: ["--\(setting.name)", "5"], environment: [:])
            }
        }
    }

    /// A section listing Raft addresses is a replicated service: its peers follow its leader,
    /// as they do with `--peer-replicated`; a replica needs `--replica` and a number it has.
    @Test func aReplicatedSectionIsFollowedToItsLeader() throws {
        let file = NSTemporaryDirectory() + "tourbus-config-\(UUID().uuidString).json"
        try Data(#"""
            {"services": {"catalog": {"bind": ["tcp://*:7101", "tcp://*:7201"], "connect": ["tcp://10.0.0.1:7101", "tcp://10.0.0.2:7101"],
                                      "raft": ["10.0.0.1:7190", "10.0.0.2:7190"], "raft_bind": ["127.0.0.1:7191", "127.0.0.1:7192"]},
                          "social": {"bind": ["tcp://*:7104"]}}}
            """#.utf8).write(to: URL(fileURLWithPath: file))
        defer { try? FileManager.default.removeItem(atPath: file) }
        let social = try ServiceConfig.load(service: "social", arguments: ["--config", file], environment: [:])
        #expect(social.peers["catalog"] == PeerEndpoints(rpc: ["tcp://10.0.0.1:7101", "tcp://10.0.0.2:7101"], followsLeader: true))
        #expect(social.peers["catalog"]?.clientOptions(curve: nil).followsLeader == true)
        let gateway = try GatewayConfig.load(arguments: ["--config", file], environment: [:])
        #expect(gateway.peers["catalog"]?.followsLeader == true && gateway.peers["social"]?.followsLeader == false)
        let flagged = try GatewayConfig.load(
            arguments: ["--peer", "catalog=tcp://h:1,tcp://h:2", "--peer-replicated", "catalog"], environment: [:])
        #expect(flagged.peers["catalog"] == PeerEndpoints(rpc: ["tcp://h:1", "tcp://h:2"], followsLeader: true))
        #expect(throws: ConfigError("--peer-replicated catalgo: no request endpoints are configured for catalgo (--peer catalgo=EP,EP,EP, or its section)")) {
            try GatewayConfig.load(arguments: ["--peer", "catalog=tcp://h:1,tcp://h:2", "--peer-replicated", "catalgo"], environment: [:])
        }
        #expect(throws: ConfigError("Raft address 'h:7190': without CURVE keys, Raft takes IPv4 addresses only (host names need a secured bus)")) {
            try ServiceConfig.load(service: "catalog", arguments: ["--raft", "h:7190", "--replica", "1"], environment: [:])
        }
        #expect(throws: ConfigError("Raft address '10.0.0.1' is not HOST:PORT")) {
            try ServiceConfig.load(service: "catalog", arguments: ["--raft", "10.0.0.1", "--replica", "1"], environment: [:])
        }
        #expect(throws: ConfigError("a Raft bind address needs the replicas' Raft addresses (--raft, or services.catalog.raft)")) {
            try ServiceConfig.load(service: "catalog", arguments: ["--raft-bind", "127.0.0.1:7191"], environment: [:])
        }
        let replica = try ServiceConfig.load(service: "catalog", arguments: ["--config", file, "--replica", "2"], environment: [:])
        #expect(replica.raft == ["10.0.0.1:7190", "10.0.0.2:7190"] && replica.replica == 2 && replica.raftBind == "127.0.0.1:7192")
        // One bind endpoint per replica: replica 2 binds the second.
        #expect(replica.bind == ["tcp://*:7201"])
        #expect(throws: ConfigError("--replica 3: there are 2 Raft addresses")) {
            try ServiceConfig.load(service: "catalog", arguments: ["--config", file, "--replica", "3"], environment: [:])
        }
    }

    @Test func bothKindsTakeTheCommonFlags() throws {
        let common = ["--peer", "catalog=tcp://h:1", "--peer-pub", "catalog=tcp://h:2", "--max-request-bytes", "4096",
                      "--max-json-depth", "32", "--ready-file", "/tmp/ready.json", "--log-level", "warn"]
        let service = try ServiceConfig.load(service: "search", arguments: common, environment: [:])
        let gateway = try GatewayConfig.load(arguments: common, environment: [:])
        #expect(service.common == gateway.common.renamed("search"))
        #expect(gateway.peers["catalog"] == PeerEndpoints(rpc: ["tcp://h:1"], publish: ["tcp://h:2"]))
        #expect(gateway.maxRequestBytes == 4096 && gateway.maxJSONDepth == 32 && gateway.readyFile == "/tmp/ready.json" && gateway.logLevel == .warn)
    }

    /// A suite file and environment every process shares: the gateway ignores the data
    /// directory and the publishers' settings, and still refuses their flags.
    @Test func theGatewayReadsTheSharedSuiteFileAndIgnoresTheDataDirectory() throws {
        let path = NSTemporaryDirectory() + "tourbus-config-\(UUID().uuidString).json"
        try Data(#"""
            {"data_dir": "/var/lib/tourbus", "heartbeat_ms": 250, "outbox_retention": 10, "max_request_bytes": 9000,
             "services": {"catalog": {"bind": ["tcp://*:7101"], "publish": ["tcp://*:7111"], "readers": 4},
                          "gateway": {"listen": "0.0.0.0:7700", "max_connections": 64}}}
            """#.utf8).write(to: URL(fileURLWithPath: path))
        defer { try? FileManager.default.removeItem(atPath: path) }
        let environment = ["TOURBUS_CONFIG": path, "TOURBUS_DATA_DIR": "/srv/tourbus"]
        let gateway = try GatewayConfig.load(arguments: [], environment: environment)
        #expect(gateway.listen == "0.0.0.0:7700" && gateway.limits.maxConnections == 64 && gateway.maxRequestBytes == 9000)
        #expect(gateway.peers["catalog"] == PeerEndpoints(rpc: ["tcp://127.0.0.1:7101"], publish: ["tcp://127.0.0.1:7111"]))
        let catalog = try ServiceConfig.load(service: "catalog", arguments: [], environment: environment)
        #expect(catalog.dataDirectory == "/srv/tourbus" && catalog.heartbeatMilliseconds == 250 && catalog.readers == 4)
        #expect(catalog.maxRequestBytes == 9000 && catalog.peers["gateway"] == PeerEndpoints())
        #expect(throws: ConfigError("--data-dir is not a gateway option (the gateway keeps nothing on disk)")) {
            try GatewayConfig.load(arguments: ["--data-dir", "/srv"], environment: environment)
        }
    }

    @Test func usageListsOnlyTheKindsOwnFlags() {
        let gateway = GatewayConfig.usage
        #expect(gateway.contains("usage: tourbus-gateway") && gateway.contains("--listen HOST:PORT") && gateway.contains("--max-connections N"))
        #expect(!gateway.contains("--data-dir DIR") && !gateway.contains("--readers N") && !gateway.contains("--publish ENDPOINT"))
        let catalog = ServiceConfig.usage(service: "catalog")
        #expect(catalog.contains("usage: tourbus-catalog") && catalog.contains("--data-dir DIR") && catalog.contains("--config FILE"))
        #expect(!catalog.contains("--listen HOST:PORT") && !catalog.contains("--max-connections N"))
    }
}

private extension CommonConfig {
    func renamed(_ name: String) -> CommonConfig {
        var copy = self
        copy.name = name
        return copy
    }
}
