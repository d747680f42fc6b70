import Bus
import Foundation
import Testing
import TestSupport
#if canImport(Glibc)
import Glibc
#endif

@Suite(.serialized) struct GatewayTests {
    @Test func jsonRPCThroughTheGateway() throws {
        let suite = try SuiteFixture()
        let c = try suite.adminConnection()
        #expect(c.reply(#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#).result(String.self) == "pong")
        let created = json(c.call(#"{"jsonrpc":"2.0","id":"c","method":"catalog.create","params":{"name":"Opera House","category":"attraction","lat":-33.8568,"lon":151.2153}}"#))
        #expect(created["id"] as? String == "c")
        #expect((created["result"] as? [String: Any])?["id"] as? Int == 1)
        let got = c.reply(#"{"jsonrpc":"2.0","id":2,"method":"catalog.get","params":{"id":1}}"#)
        #expect(got.field("name", String.self) == "Opera House")

        let missing = json(c.call(#"{"jsonrpc":"2.0","id":3,"method":"catalog.get","params":{"id":99}}"#))
        let error = missing["error"] as? [String: Any]
        #expect(error?["code"] as? Int == -32001)
        #expect((error?["data"] as? [String: Any])?["code"] as? String == "not_found")
        #expect((error?["data"] as? [String: Any])?["field"] as? String == "id")

        // A notification gets no reply: the next line answers the next request.
        c.send(#"{"jsonrpc":"2.0","method":"ping"}"# + "\n")
        #expect(json(c.call(#"{"jsonrpc":"2.0","id":4,"method":"ping"}"#))["id"] as? Int == 4)

        // A batch: answers in element order, none for the notification.
        c.send(#"[{"jsonrpc":"2.0","id":"a","method":"ping"},{"jsonrpc":"2.0","method":"ping"},{"jsonrpc":"2.0","id":"b","method":"catalog.get","params":{"id":1}}]"# + "\n")
        let batch = try JSONSerialization.jsonObject(with: Data((c.line() ?? "").utf8)) as? [[String: Any]]
        #expect(batch?.map { $0["id"] as? String } == ["a", "b"])
        // The batch keeps element order although the ping finishes before the forwarded get.
        c.send(#"[{"jsonrpc":"2.0","id":"x","method":"catalog.get","params":{"id":1}},{"jsonrpc":"2.0","id":"y","method":"ping"}]"# + "\n")
        let ordered = try JSONSerialization.jsonObject(with: Data((c.line() ?? "").utf8)) as? [[String: Any]]
        #expect(ordered?.map { $0["id"] as? String } == ["x", "y"])
        // A notification whose params are wrong is not answered either.
        c.send(#"{"jsonrpc":"2.0","method":"catalog.get","params":[1]}"# + "\n")
        #expect(json(c.call(#"{"jsonrpc":"2.0","id":6,"method":"ping"}"#))["id"] as? Int == 6)

        let status = json(c.call(#"{"jsonrpc":"2.0","id":5,"method":"gateway.status"}"#))
        let backends = (status["result"] as? [String: Any])?["backends"] as? [[String: Any]]
        #expect(backends?.first?["service"] as? String == "catalog" && backends?.first?["up"] as? Bool == true)
    }

    @Test func respThroughOurOwnClientWithPipelining() throws {
        let suite = try SuiteFixture()
        let c = try GatewayConnection(port: suite.port)
        // Inline and array forms, many commands in one packet: replies come back in request order,
        // and those after AUTH wait for it, so they run signed in.
        var packet: [UInt8] = Array("PING\r\n".utf8) + GatewayConnection.resp(["AUTH", SuiteFixture.admin.username, SuiteFixture.admin.password])
        packet += GatewayConnection.resp(["catalog.create", "name", "Bondi Beach", "category", "beach", "lat", "-33.8915", "lon", "151.2767"])
        for _ in 0..<50 { packet += GatewayConnection.resp(["catalog.categories"]) }
        packet += Array("catalog.get id 999\r\n".utf8)
        packet += Array("nosuch.method\r\n".utf8)
        packet += GatewayConnection.resp(["catalog.create", #"{"name":"Icebergs","category":"restaurant","lat":-33.895,"lon":151.274}"#])
        c.send(packet)
        #expect(c.respReply() == "+PONG")
        #expect(c.respReply() == "+OK")
        #expect(json(String(c.respReply()?.dropFirst() ?? ""))["name"] as? String == "Bondi Beach")
        for _ in 0..<50 { #expect(c.respReply()?.hasPrefix(#"${"categories":"#) == true) }
        #expect(c.respReply() == "-NOT_FOUND id: no place with id 999")
        #expect(c.respReply() == "-NOT_FOUND method: unknown method 'nosuch.method'; try help")
        #expect(json(String(c.respReply()?.dropFirst() ?? ""))["id"] as? Int == 2)

        // A protocol error waits for the replies owed before it, then the connection closes.
        let broken = try GatewayConnection(port: suite.port)
        broken.send(GatewayConnection.resp(["catalog.get", "id", "1"]) + Array("*1\r\n+oops\r\n".utf8))
        #expect(broken.respReply()?.hasPrefix(#"${"category":"beach""#) == true)
        #expect(broken.respReply()?.hasPrefix("-ERR Protocol error") == true)
        #expect(broken.isClosedByPeer())
    }

    @Test func respThroughRedisCLI() throws {
        let suite = try SuiteFixture()
        func redisCLI(_ args: [String]) throws -> String {
            let run = try BoundedRun("/usr/bin/env", ["redis-cli", "-h", "127.0.0.1", "-p", String(suite.port), "--user", SuiteFixture.admin.username,
                                                      "--pass", SuiteFixture.admin.password, "--no-auth-warning"] + args, timeout: 30)
            #expect(run.succeeded, "redis-cli is needed (./deploy/local/test installs redis-tools); it \(run.ending): \(run.digest)")
            return (run.output + run.errors).trimmingCharacters(in: .whitespacesAndNewlines)
        }
        #expect(try redisCLI(["ping"]) == "PONG")
        let created = json(try redisCLI(["catalog.create", "name", "Harbour Bridge", "category", "attraction", "lat", "-33.8523", "lon", "151.2108"]))
        #expect(created["id"] as? Int == 1 && created["lat"] as? Double == -33.8523)
        #expect(json(try redisCLI(["catalog.get", "id", "1"]))["name"] as? String == "Harbour Bridge")
        #expect(try redisCLI(["catalog.get", "id", "seven"]) == "INVALID_ARGUMENT id: expected an integer")
        #expect(try redisCLI(["catalog.get", #"{"id":1}"#]).contains("Harbour Bridge"))
    }

    @Test func badInputLeavesTheGatewayUp() throws {
        let suite = try SuiteFixture()
        let c = try GatewayConnection(port: suite.port)
        #expect(errorCode(c.call("{not json")) == -32700)
        #expect(errorCode(c.call(#"{"jsonrpc":"2.0","id":1,"method":"catalog.nope"}"#)) == -32601)
        #expect(errorCode(c.call(#"{"jsonrpc":"2.0","id":1,"method":"catalog.get","params":{"id":"x"}}"#)) == -32602)
        #expect(errorCode(c.call(#"{"jsonrpc":"2.0","id":1,"method":"catalog.get","params":[1]}"#)) == -32602)
        #expect(errorCode(c.call(#"{"id":1,"method":"ping"}"#)) == -32600)
        let thousand = "[" + (0..<1_000).map { #"{"jsonrpc":"2.0","id":\#($0),"method":"ping"}"# }.joined(separator: ",") + "]"
        let tooMany = json(c.call(thousand))
        #expect((tooMany["error"] as? [String: Any])?["data"] as? [String: String] == ["code": "too_large"])
        // A 2 MiB line: too_large, and the connection goes on.
        let huge = json(c.call(#"{"jsonrpc":"2.0","id":1,"method":"ping","params":{"x":""# + String(repeating: "y", count: 2 << 20) + #""}}"#))
        #expect((huge["error"] as? [String: Any])?["data"] as? [String: String] == ["code": "too_large"])
        #expect(c.reply(#"{"jsonrpc":"2.0","id":7,"method":"ping"}"#).result(String.self) == "pong")

        // Random binary: RESP framing, a protocol error, the connection closes; the gateway lives.
        let binary = try GatewayConnection(port: suite.port)
        binary.send([UInt8(ascii: "*")] + (0..<4096).map { _ in UInt8.random(in: 0...255) })
        _ = binary.respReply()
        #expect(binary.isClosedByPeer())

        // A RESP array that lies about its length: the bulk is longer than declared.
        let liar = try GatewayConnection(port: suite.port)
        liar.send(Array("*2\r\n$4\r\nPING\r\n$2\r\nhello\r\n".utf8))
        #expect(liar.respReply()?.hasPrefix("-ERR Protocol error") == true)
        #expect(liar.isClosedByPeer())

        // 500 connections opened and dropped mid-request.
        for i in 0..<500 {
            let dropped = try GatewayConnection(port: suite.port)
            dropped.send(i % 2 == 0 ? #"{"jsonrpc":"2.0","id":1,"method":"catalog.list","params":{"lim"# : "*3\r\n$12\r\ncatalog.list\r\n$5\r\nlimit")
        }
        // Their closes reach the gateway a moment later: until then they count against the address's 128.
        var served = false
        for _ in 0..<40 where !served {
            served = try GatewayConnection(port: suite.port).reply(#"{"jsonrpc":"2.0","id":1,"method":"catalog.categories"}"#).succeeded
            if !served { usleep(50_000) }
        }
        #expect(served)
        #expect(suite.gateway.process.isRunning)
    }

    @Test func aClientThatDoesNotReadIsDisconnectedWithoutSlowingOthers() throws {
        let suite = try SuiteFixture()
        try suite.createHeavyPlaces(100)
        // Each answer is about half a megabyte; this client asks for hundreds and reads none.
        let hog = try GatewayConnection(port: suite.port, timeoutMilliseconds: 10_000)
        let request = GatewayConnection.resp(["catalog.list", "limit", "100"])
        for _ in 0..<8 { hog.send(Array([[UInt8]](repeating: request, count: 100).joined())) }
        // Answered within its own read timeout (2 s) while the hog's replies pile up.
        let other = try GatewayConnection(port: suite.port, timeoutMilliseconds: 2_000)
        #expect(other.reply(#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#).result(String.self) == "pong")
        // Without reading a byte, wait (bounded) for the gateway to give up on it.
        var disconnected = false
        for _ in 0..<200 where !disconnected {
            disconnected = suite.gateway.log.contains("does not read its replies")
            if !disconnected { usleep(50_000) }
        }
        #expect(disconnected)
        #expect(hog.isClosedByPeer())
    }

    /// Replies a client does not read cannot hide in the kernel: its send buffer is bounded, so
    /// 3 MB asked for and not read reach the gateway's output bound and the client is dropped
    /// as a slow reader (left to autotuning, the kernel took them all and the connection stayed).
    @Test func aClientThatDoesNotReadCannotParkItsRepliesInTheKernel() throws {
        let suite = try SuiteFixture()
        try suite.createHeavyPlaces(100)
        let hog = try GatewayConnection(port: suite.port, timeoutMilliseconds: 10_000, receiveBuffer: 4_096)
        // Six answers of about half a megabyte each, none read.
        hog.send(Array([[UInt8]](repeating: GatewayConnection.resp(["catalog.list", "limit", "100"]), count: 6).joined()))
        var disconnected = false
        for _ in 0..<300 where !disconnected {
            disconnected = suite.gateway.log.contains("does not read its replies")
            if !disconnected { usleep(50_000) }
        }
        #expect(disconnected, "a client that reads nothing of 3 MB of replies is still connected after 15 s")
    }

    /// The gateway keeps nothing on disk and publishes nothing: the services' flags are
    /// refused with why, and the usage it prints is its own.
    @Test(arguments: [("--data-dir", "the gateway keeps nothing on disk"), ("--readers", "the gateway has no reader threads"),
                      ("--publish", "the gateway publishes no events")])
    func theGatewayRefusesServiceFlags(flag: String, reason: String) throws {
        let run = try BoundedRun(try ChildProcess.executable("tourbus-gateway").path, ["--listen", "127.0.0.1:0", flag, "x"], timeout: 30)
        #expect(run.exit == .status(2), "\(run.ending)")
        #expect(run.errors.contains("tourbus-gateway: \(flag) is not a gateway option (\(reason)"), "\(run.errors)")
        #expect(run.errors.contains("usage: tourbus-gateway") && !run.errors.contains("--data-dir DIR"))
    }

    @Test func replicasShareTheLoad() throws {
        let scratch = TemporaryFolder("replicas")
        defer { withExtendedLifetime(scratch) {} }  // the folder lives to the end of the scope
        let folder = scratch.path
        // Two catalogs with different contents stand in for replicas, so each answer shows where it came from.
        let one = try ChildProcess("tourbus-catalog", folder: folder + "/one")
        let two = try ChildProcess("tourbus-catalog", folder: folder + "/two")
        let direct = try RPCClient(context: try ZMQContext(), endpoints: [one.rpc], logger: Logger(component: "test", level: .error))
        _ = try direct.request(type: "catalog.create", body: Data(#"{"name":"Only in one","category":"cafe","lat":-33.87,"lon":151.2}"#.utf8))
        direct.close()
        let gateway = try ChildProcess("tourbus-gateway", folder: folder, arguments: ["--listen", "127.0.0.1:0", "--peer", "catalog=\(one.rpc),\(two.rpc)"])
        let port = UInt16((gateway.endpoints["listen"] as? String)?.split(separator: ":").last ?? "") ?? 0
        let c = try GatewayConnection(port: port)
        var seen = Set<Int>()
        for i in 0..<40 where seen.count < 2 {
            let reply = json(c.call(#"{"jsonrpc":"2.0","id":\#(i),"method":"catalog.categories"}"#))
            let cafes = ((reply["result"] as? [String: Any])?["categories"] as? [[String: Any]])?.first { $0["id"] as? String == "cafe" }
            if let count = cafes?["count"] as? Int { seen.insert(count) }
            usleep(20_000)
        }
        #expect(seen == [0, 1])
    }

    @Test func silentClientsAreClosedAfterTheIdleTimeout() throws {
        let suite = try SuiteFixture(gatewayArguments: ["--idle-timeout-ms", "500"])
        // Closed by the gateway within the connection's own read timeout (3 s, the idle limit 0.5 s).
        let silent = try GatewayConnection(port: suite.port, timeoutMilliseconds: 3_000)
        #expect(silent.isClosedByPeer())
    }

    @Test func connectionsOverTheLimitGetAnError() throws {
        let suite = try SuiteFixture(gatewayArguments: ["--max-connections", "2"])
        // The fixture's own probes may still be closing: wait (bounded) until this one is the only connection.
        let a = try GatewayConnection(port: suite.port)
        var open = -1
        for i in 0..<100 where open != 1 {
            let status = json(a.call(#"{"jsonrpc":"2.0","id":\#(i),"method":"gateway.status"}"#))
            open = ((status["result"] as? [String: Any])?["connections"] as? [String: Any])?["open"] as? Int ?? -1
            if open != 1 { usleep(20_000) }
        }
        #expect(open == 1)
        let b = try GatewayConnection(port: suite.port)
        #expect(b.reply(#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#).succeeded)
        let third = try GatewayConnection(port: suite.port)
        third.send("PING\r\n")
        #expect(third.respReply() == "-UNAVAILABLE too many connections (limit 2)")
    }

    @Test func backendStoppedThenRestarted() throws {
        let suite = try SuiteFixture(gatewayArguments: ["--deadline-ms", "1000"])
        // The gateway's 1 s deadline answers each call before the connection's 3 s read timeout.
        let c = try GatewayConnection(port: suite.port, timeoutMilliseconds: 3_000)
        #expect(c.reply(#"{"jsonrpc":"2.0","id":1,"method":"catalog.categories"}"#).succeeded)
        suite.stopCatalog()
        for i in 0..<3 {
            let reply = c.reply(#"{"jsonrpc":"2.0","id":\#(i),"method":"catalog.categories"}"#)
            #expect(reply.errorCode == "unavailable" || reply.errorCode == "deadline_exceeded", "\(reply)")
        }
        try suite.startCatalog()
        var recovered = false
        for i in 0..<50 where !recovered {
            recovered = c.reply(#"{"jsonrpc":"2.0","id":\#(i),"method":"catalog.categories"}"#).succeeded
            if !recovered { usleep(100_000) }
        }
        #expect(recovered)
    }
}
