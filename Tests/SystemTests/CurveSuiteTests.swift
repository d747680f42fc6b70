import Bus
import Foundation
import Testing
import TestSupport
#if canImport(Glibc)
import Glibc
#endif

/// The whole suite on a secured bus (`SuiteFixture(secured: true)`, every process with its
/// CURVE key and the suite file's `curve.keys`): it works through the gateway, and a process
/// with a key nobody listed is refused by every service, on request and event sockets alike.
@Suite(.serialized) struct CurveSuiteTests {
    @Test func everyLinkIsSecuredAndAStrangerIsRefusedEverywhere() throws {
        let suite = try SuiteFixture(everything: true, secured: true)

        // The suite works: the gateway reaches every service, and events flow from the catalog
        // to search (its PUB and its replay) over CURVE.
        let c = try suite.adminConnection()
        let created = c.reply(#"{"jsonrpc":"2.0","id":1,"method":"catalog.create","params":{"name":"Curvy Lighthouse","category":"attraction","lat":-33.8,"lon":151.3}}"#)
        #expect(created.succeeded)
        var found = false
        for i in 0..<100 where !found {
            found = c.call(#"{"jsonrpc":"2.0","id":\#(i + 2),"method":"search.text","params":{"q":"curvy"}}"#)?.contains("Curvy Lighthouse") == true
            if !found { usleep(100_000) }
        }
        #expect(found)
        #expect(c.reply(#"{"jsonrpc":"2.0","id":200,"method":"favorites.add","params":{"place_id":1}}"#).succeeded)
        #expect(c.reply(#"{"jsonrpc":"2.0","id":201,"method":"annotations.form","params":{}}"#).succeeded)

        let context = try ZMQContext()
        let logger = Logger(component: "test", level: .error)
        let stranger = try CurveKeyPair.generate()
        let strangerKey = try CurveKeyPair.z85(stranger.publicKey)
        let services: [(name: String, process: ChildProcess)] = [("catalog", suite.catalog), ("social", suite.social),
                                                                  ("search", try #require(suite.search)), ("favorites", try #require(suite.favorites)),
                                                                  ("notify", try #require(suite.notify))]
        for (name, process) in services {
            let serverKey = try #require(suite.keys[name]).publicKey
            func answers(_ curve: CurveClientKeys?) throws -> Bool {
                var options = RPCClientOptions()
                options.curve = curve
                let client = try RPCClient(context: context, endpoints: [process.rpc], options: options, logger: logger)
                defer { client.close() }
                return (try? client.request(type: "sys.ping", body: Data("{}".utf8), timeoutMilliseconds: curve == suite.operatorKeys(for: name) ? 5_000 : 700)) != nil
            }
            #expect(try answers(suite.operatorKeys(for: name)), "\(name) answers a listed key")
            #expect(try !answers(CurveClientKeys(stranger, serverKey: serverKey)), "\(name) refuses an unlisted key")
            #expect(try !answers(nil), "\(name) refuses a plain client")
        }

        // Event sockets: with heartbeats every 100 ms, a listed subscriber hears one at once;
        // the stranger hears nothing in a second.
        for (name, process) in services where name != "search" {
            let endpoint = try #require((process.endpoints["publish"] as? [String])?.first)
            func heard(_ curve: CurveClientKeys, within milliseconds: UInt64) throws -> Bool {
                let socket = try Socket(context, .sub)
                try socket.setCurveClient(curve)
                try socket.subscribe("sys.")
                try socket.setReceiveTimeout(milliseconds: 50)
                try socket.connect(endpoint)
                let deadline = monotonicNanos() + milliseconds * 1_000_000
                while monotonicNanos() < deadline { if try socket.receive() != nil { return true } }
                return false
            }
            #expect(try heard(try #require(suite.operatorKeys(for: name)), within: 5_000), "\(name) publishes to a listed key")
            #expect(try !heard(CurveClientKeys(stranger, serverKey: try #require(suite.keys[name]).publicKey), within: 1_000),
                    "\(name) publishes nothing to an unlisted key")
        }

        // A rotation: list the stranger's key in the suite file, SIGHUP the catalog, and it is admitted there (and only there).
        let file = suite.folder + "/suite.json"
        var listed = try #require(try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: file))) as? [String: [String: [String: [String]]]])
        listed["curve"]?["keys"]?["operator"]?.append(strangerKey)
        try JSONSerialization.data(withJSONObject: listed).write(to: URL(fileURLWithPath: file))
        kill(suite.catalog.pid, SIGHUP)
        var admitted = false
        for _ in 0..<50 where !admitted {
            var options = RPCClientOptions()
            options.curve = CurveClientKeys(stranger, serverKey: try #require(suite.keys["catalog"]).publicKey)
            let client = try RPCClient(context: context, endpoints: [suite.catalog.rpc], options: options, logger: logger)
            admitted = (try? client.request(type: "sys.ping", body: Data("{}".utf8), timeoutMilliseconds: 500)) != nil
            client.close()
        }
        #expect(admitted, "the catalog admits a key listed after a SIGHUP")
        var elsewhere = RPCClientOptions()
        elsewhere.curve = CurveClientKeys(stranger, serverKey: try #require(suite.keys["social"]).publicKey)
        let social = try RPCClient(context: context, endpoints: [suite.social.rpc], options: elsewhere, logger: logger)
        #expect((try? social.request(type: "sys.ping", body: Data("{}".utf8), timeoutMilliseconds: 700)) == nil, "social, not reloaded, still refuses it")
        social.close()
        #expect(suite.catalog.log.contains("CURVE keys reloaded"))

        // `tourbus call --service` signs with a key file and pins the service's key.
        let catalogKey = try CurveKeyPair.z85(try #require(suite.keys["catalog"]).publicKey)
        let signed = try BoundedRun(try ChildProcess.executable("tourbus").path,
                                    ["call", "--service", suite.catalog.rpc, "--curve-key", suite.folder + "/operator.key", "--server-key", catalogKey,
                                     "--timeout-ms", "5000", "sys.ping"], timeout: 30)
        #expect(signed.exit == .status(0) && signed.output.contains("pong"), "\(signed.digest)")
        let unsigned = try BoundedRun(try ChildProcess.executable("tourbus").path,
                                      ["call", "--service", suite.catalog.rpc, "--timeout-ms", "700", "sys.ping"], timeout: 30)
        #expect(unsigned.exit == .status(1), "\(unsigned.digest)")

        // Each refusal is counted in sys.stats and logged with the stranger's address and public key.
        var options = RPCClientOptions()
        options.curve = suite.operatorKeys(for: "catalog")
        let operatorClient = try RPCClient(context: context, endpoints: [suite.catalog.rpc], options: options, logger: logger)
        defer { operatorClient.close() }
        let stats = try JSONSerialization.jsonObject(with: operatorClient.request(type: "sys.stats", body: Data("{}".utf8), timeoutMilliseconds: 5_000).bodyJSON) as? [String: Any]
        let curve = try #require(stats?["curve"] as? [String: Int])
        #expect((curve["refused"] ?? 0) >= 2)
        #expect((curve["admitted"] ?? 0) >= 3)
        for (name, process) in services {
            #expect(process.log.components(separatedBy: "\n").contains { $0.contains("client key not allowed") && $0.contains(strangerKey) && $0.contains("address=127.0.0.1") },
                    "\(name) logs the refusal")
        }
    }
}
