import Bus
import Foundation
import Testing
import TestSupport
#if canImport(Glibc)
import Glibc
#endif

/// `tourbus probe` against a real catalog process, plain and on a secured bus, against
/// nothing listening, and with bad flags: exit 0 answered, 1 not (within the timeout, why on
/// stderr), 2 bad usage.
@Suite struct ProbeTests {
    /// The result of one `tourbus probe` run and how long it took.
    struct Probe {
        let status: Int32?
        let errors: String
        let output: String
        let milliseconds: Int
    }

    func probe(_ arguments: [String], environment: [String: String?] = ["TOURBUS_CURVE_KEY": nil]) throws -> Probe {
        let started = Date()
        let run = try BoundedRun(try ChildProcess.executable("tourbus").path, ["probe"] + arguments, environment: environment, timeout: 30)
        var status: Int32?
        if case .status(let code)? = run.exit { status = code }
        return Probe(status: status, errors: run.errors, output: run.output, milliseconds: Int(Date().timeIntervalSince(started) * 1000))
    }

    /// `tcp://127.0.0.1:PORT` → `tcp://*:PORT`, as a suite file binds.
    func allInterfaces(_ endpoint: String) -> String { endpoint.replacingOccurrences(of: "://127.0.0.1:", with: "://*:") }

    func write(_ object: [String: Any], to path: String) throws {
        try JSONSerialization.data(withJSONObject: object).write(to: URL(fileURLWithPath: path))
    }

    @Test func aPlainServiceAnswers() throws {
        let scratch = TemporaryFolder("probe")
        let catalog = try ChildProcess("tourbus-catalog", folder: scratch.path)
        let direct = try probe(["--service", catalog.rpc, "--timeout-ms", "5000"])
        #expect(direct.status == 0 && direct.output.contains("\(catalog.rpc) answered sys.ping"), "\(direct)")
        // A key file in the environment does not stop a plain probe (nothing to pin), as it does not stop `call`.
        let ambient = try probe(["--service", catalog.rpc, "--timeout-ms", "5000"], environment: ["TOURBUS_CURVE_KEY": scratch.path + "/none.key"])
        #expect(ambient.status == 0, "\(ambient)")

        // From the suite file: its bind, with `*` read as 127.0.0.1 …
        try write(["services": ["catalog": ["bind": [allInterfaces(catalog.rpc)]]]], to: scratch.file("bind.json"))
        let bound = try probe(["--config", scratch.file("bind.json"), "--name", "catalog"])
        #expect(bound.status == 0 && bound.output.contains(catalog.rpc), "\(bound)")
        // … and its connect before its bind.
        try write(["services": ["catalog": ["bind": ["tcp://*:1"], "connect": [catalog.rpc]]]], to: scratch.file("connect.json"))
        let connected = try probe(["--config", scratch.file("connect.json"), "--name", "catalog"])
        #expect(connected.status == 0 && connected.output.contains(catalog.rpc), "\(connected)")
        // --service wins over the file.
        let overridden = try probe(["--config", scratch.file("connect.json"), "--name", "catalog", "--service", "tcp://127.0.0.1:1", "--timeout-ms", "300"])
        #expect(overridden.status == 1 && overridden.errors.contains("tcp://127.0.0.1:1 did not answer"), "\(overridden)")
    }

    @Test func aSecuredServiceAnswersOnlyAListedKey() throws {
        let scratch = TemporaryFolder("probe-curve")
        var listed: [String: [String]] = [:]
        for name in ["catalog", "operator", "stranger"] {
            let pair = try CurveKeyPair.generate()
            try pair.write(keyFile: scratch.file("\(name).key"), name: name)
            if name != "stranger" { listed[name] = [try CurveKeyPair.z85(pair.publicKey)] }
        }
        try write(["curve": ["keys": listed]], to: scratch.file("suite.json"))
        let catalog = try ChildProcess("tourbus-catalog", folder: scratch.path,
                                       arguments: ["--config", scratch.file("suite.json"), "--curve-key", scratch.file("catalog.key")])
        // The probe's own copy of the suite file says where the catalog is (it bound port 0).
        let probeFile = scratch.file("probe.json")
        try write(["curve": ["keys": listed], "services": ["catalog": ["connect": [catalog.rpc]]]], to: probeFile)

        let signed = try probe(["--config", probeFile, "--name", "catalog", "--curve-key", scratch.file("operator.key"), "--timeout-ms", "5000"])
        #expect(signed.status == 0, "\(signed)")
        // The service's own key (as inside its container), from TOURBUS_CURVE_KEY.
        let own = try probe(["--config", probeFile, "--name", "catalog", "--timeout-ms", "5000"],
                            environment: ["TOURBUS_CURVE_KEY": scratch.file("catalog.key")])
        #expect(own.status == 0, "\(own)")
        // The key pinned by flags instead of the file.
        let flags = try probe(["--service", catalog.rpc, "--server-key", try #require(listed["catalog"]?.first),
                               "--curve-key", scratch.file("operator.key"), "--timeout-ms", "5000"])
        #expect(flags.status == 0, "\(flags)")

        // A key the suite does not list, and a plain client, are refused: no answer, by the timeout.
        let stranger = try probe(["--config", probeFile, "--name", "catalog", "--curve-key", scratch.file("stranger.key"), "--timeout-ms", "700"])
        #expect(stranger.status == 1 && stranger.errors.contains("did not answer sys.ping") && stranger.milliseconds < 700 + 3_000, "\(stranger)")
        let plain = try probe(["--service", catalog.rpc, "--timeout-ms", "700"])
        #expect(plain.status == 1 && plain.milliseconds < 700 + 3_000, "\(plain)")
        // A secured suite needs a key file to sign with.
        let unsigned = try probe(["--config", probeFile, "--name", "catalog"])
        #expect(unsigned.status == 2 && unsigned.errors.contains("--curve-key FILE or TOURBUS_CURVE_KEY"), "\(unsigned)")
    }

    @Test func nothingListeningFailsWithinTheTimeout() throws {
        let scratch = TemporaryFolder("probe-none")
        let pair = try CurveKeyPair.generate()
        try pair.write(keyFile: scratch.file("me.key"), name: "me")
        let serverKey = try CurveKeyPair.z85(try CurveKeyPair.generate().publicKey)
        for extra in [[], ["--curve-key", scratch.file("me.key"), "--server-key", serverKey]] {
            let run = try probe(["--service", "tcp://127.0.0.1:1", "--timeout-ms", "800"] + extra)
            #expect(run.status == 1, "\(run)")
            #expect(run.errors.hasPrefix("tourbus: probe: tcp://127.0.0.1:1 did not answer sys.ping"), "\(run)")
            #expect(run.errors.split(separator: "\n").count == 1, "one line: \(run.errors)")
            #expect(run.milliseconds < 800 + 3_000, "\(run)")
        }
        // The default timeout is 2000 ms.
        let byDefault = try probe(["--service", "tcp://127.0.0.1:1"])
        #expect(byDefault.status == 1 && byDefault.milliseconds >= 1_900 && byDefault.milliseconds < 2_000 + 3_000, "\(byDefault)")
    }

    @Test func badFlagsExit2() throws {
        let scratch = TemporaryFolder("probe-flags")
        try write(["services": ["catalog": ["bind": ["tcp://*:7101"]], "gateway": ["listen": "127.0.0.1:7700"]]], to: scratch.file("suite.json"))
        try write(["curve": ["keys": ["search": [try CurveKeyPair.z85(try CurveKeyPair.generate().publicKey)]]],
                   "services": ["catalog": ["bind": ["tcp://*:7101"]]]], to: scratch.file("secured.json"))
        try CurveKeyPair.generate().write(keyFile: scratch.file("me.key"), name: "me")
        let long = String(repeating: "é", count: 100)  // 200 UTF-8 bytes
        let cases: [(arguments: [String], says: String)] = [
            ([], "say what to probe"),
            (["--frobnicate", "1"], "unknown option '--frobnicate'"),
            (["--\(long)", "1"], "unknown option '--\(String(repeating: "é", count: 31))…'"),
            (["--service"], "--service needs a value"),
            (["--service", "localhost:7101"], "cannot connect to 'localhost:7101'"),
            (["--service", "tcp://127.0.0.1:1", "--timeout-ms", "0"], "--timeout-ms takes an integer from 1 to 60000, got '0'"),
            (["--service", "tcp://127.0.0.1:1", "--timeout-ms", "60001"], "got '60001'"),
            (["--service", "tcp://127.0.0.1:1", "--timeout-ms", "soon"], "got 'soon'"),
            (["--config", scratch.file("suite.json")], "--config needs --name NAME"),
            (["--name", "catalog"], "--name needs --config FILE"),
            (["--config", scratch.file("suite.json"), "--name", "search"], "has no section services.search"),
            (["--config", scratch.file("missing.json"), "--name", "catalog"], "config file \(scratch.file("missing.json"))"),
            (["--config", scratch.file("secured.json"), "--name", "catalog", "--curve-key", scratch.file("me.key")], "curve.keys lists no key for catalog"),
            (["--config", scratch.file("suite.json"), "--name", "gateway"], "services.gateway has no connect or bind endpoint"),
            (["--service", "tcp://127.0.0.1:1", "--server-key", "short"], "--curve-key FILE or TOURBUS_CURVE_KEY"),
            (["--service", "tcp://127.0.0.1:1", "--server-key", "short", "--curve-key", scratch.file("me.key")], "server key 'short' is not a 40-character Z85"),
            (["--service", "tcp://127.0.0.1:1", "--curve-key", scratch.file("me.key")], "a key file needs the service's public key"),
        ]
        for (arguments, says) in cases {
            let run = try probe(arguments)
            #expect(run.status == 2, "\(arguments): \(run)")
            #expect(run.errors.contains(says), "\(arguments): \(run.errors)")
        }
        // A key file others may read is refused, as every process refuses it.
        let serverKey = try CurveKeyPair.z85(try CurveKeyPair.generate().publicKey)
        chmod(scratch.file("me.key"), 0o644)
        let loose = try probe(["--service", "tcp://127.0.0.1:1", "--server-key", serverKey, "--curve-key", scratch.file("me.key")])
        #expect(loose.status == 2 && loose.errors.contains("mode 644"), "\(loose)")
    }
}
