import Bus
import Foundation
import ServiceKit
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
        let gateway = try ServiceConfig.load(service: "gateway", arguments: ["--config", file], environment: [:])
        #expect(Set(gateway.peers.keys) == ["catalog", "search", "favorites", "social"])
        #expect(gateway.peers["favorites"]?.rpc == ["tcp://10.0.0.2:7103"])
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
        let config = try ServiceConfig.load(service: "gateway", arguments: ["--config", file], environment: [:])
        #expect(config.listen == "0.0.0.0:7700" && config.gateway.maxConnections == 64 && config.gateway.idleTimeoutMilliseconds == 900 && config.gateway.deadlineMilliseconds == 750)
        #expect(config.peers["catalog"]?.rpc == ["tcp://127.0.0.1:7101"])
        let flagged = try ServiceConfig.load(service: "gateway", arguments: ["--config", file, "--listen", "127.0.0.1:0", "--deadline-ms", "100"],
                                             environment: ["TOURBUS_GATEWAY_LISTEN": "127.0.0.1:1"])
        #expect(flagged.listen == "127.0.0.1:0" && flagged.gateway.deadlineMilliseconds == 100)
        #expect(try ServiceConfig.load(service: "gateway", arguments: [], environment: ["TOURBUS_GATEWAY_LISTEN": "127.0.0.1:1"]).listen == "127.0.0.1:1")
    }

    @Test func everyGatewayLimitComesFromFlagsEnvironmentAndFile() throws {
        for (i, setting) in GatewayLimits.settings.enumerated() {
            let value = 1_000 + i
            let file = try writeFile(#"{"services": {"gateway": {"\#(setting.fileKey)": \#(value)}}}"#)
            defer { try? FileManager.default.removeItem(atPath: file) }
            let fromFile = try? ServiceConfig.load(service: "gateway", arguments: ["--config", file], environment: [:])
            let fromEnvironment = try? ServiceConfig.load(service: "gateway", arguments: [], environment: [setting.environmentKey: "\(value)"])
            let fromFlag = try? ServiceConfig.load(service: "gateway", arguments: ["--\(setting.name)", "\(value)"], environment: [:])
            // max-batch above max-in-flight (128 by default) is refused as a mistake.
            if setting.name == "max-batch" {
                #expect(fromFile == nil && fromEnvironment == nil && fromFlag == nil)
                continue
            }
            for config in [fromFile, fromEnvironment, fromFlag] {
                #expect(config?.gateway[keyPath: setting.field] == value, "\(setting.name)")
            }
        }
        #expect(throws: ConfigError.self) { try ServiceConfig.load(service: "gateway", arguments: ["--backend-window", "0"], environment: [:]) }
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
