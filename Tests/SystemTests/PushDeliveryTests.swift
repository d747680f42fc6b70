import Bus
import Contracts
import Foundation
import Testing
import TestSupport

/// Pushes through the real gateways: a service (here the test, on a PUB socket the gateways
/// are told of with `--peer-pub`) sends one to a user, and each gateway hands it to that
/// user's subscribed connections.
@Suite(.serialized) struct PushDeliveryTests {
    /// A bound PUB socket standing for a service that pushes. Unchecked: a test uses it from
    /// one thread at a time.
    final class Pusher: @unchecked Sendable {
        let context: ZMQContext
        let socket: Socket
        let endpoint: String
        private var sent = 0

        init() throws {
            context = try ZMQContext()
            socket = try Socket(context, .pub)
            endpoint = try socket.bind("tcp://127.0.0.1:*")
        }

        /// Sends a push to `user`; returns its id.
        @discardableResult
        func push(to user: Int64, topic: String = "notify.alert", body: String = #"{"n":1}"#, coalesce: String? = nil) throws -> String {
            sent += 1
            let id = "t\(sent)"
            _ = try socket.send(Push(topic: topic, id: id, userId: user, coalesce: coalesce, body: Data(body.utf8)).frames)
            return id
        }
    }

    /// Registers `name` through the gateway and signs `connection` in as them (JSON-RPC); their user id and token.
    @discardableResult
    static func signIn(_ name: String, on connection: GatewayConnection) -> (id: Int64, token: String) {
        _ = connection.rpc("auth.register", #"{"username":"\#(name)","email":"\#(name)@example.org","name":"\#(name)","password":"Pass-\#(name)-1"}"#)
        let login = connection.rpc("auth.login", #"{"username":"\#(name)","password":"Pass-\#(name)-1"}"#)
        let result = json(login.line)["result"] as? [String: Any]
        return ((result?["user"] as? [String: Any])?["id"] as? Int64 ?? 0, result?["token"] as? String ?? "")
    }

    /// Sends pushes to `user` every 50 ms until `ready` says they arrive (a new subscriber
    /// misses what was sent before its gateway connected), at most 5 s.
    static func pushUntil(_ pusher: Pusher, to user: Int64, _ ready: () -> Bool) throws -> Bool {
        for _ in 0..<100 {
            try pusher.push(to: user)
            if ready() { return true }
        }
        return false
    }

    @Test func aPushReachesEveryConnectionOfItsUserOnBothGatewaysAndNoOneElse() throws {
        let pusher = try Pusher()
        let suite = try SuiteFixture(gatewayArguments: ["--peer-pub", "notify=\(pusher.endpoint)"])
        let other = try ChildProcess("tourbus-gateway", folder: suite.folder, arguments: ["--listen", "127.0.0.1:0"] + suite.gatewayArguments)
        let otherPort = UInt16((other.endpoints["listen"] as? String ?? "").split(separator: ":").last ?? "") ?? 0

        let alice = try GatewayConnection(port: suite.port, timeoutMilliseconds: 50)
        let aliceId = PushDeliveryTests.signIn("alice", on: alice).id
        #expect(alice.rpc("subscribe", #"{"topics":["notify.alert"]}"#).line == #"{"jsonrpc":"2.0","id":1,"result":{"topics":["notify.alert"]}}"#)
        // Her other device, on the other gateway, speaks RESP.
        let phone = try GatewayConnection(port: otherPort, timeoutMilliseconds: 50)
        phone.send(GatewayConnection.resp(["AUTH", "alice", "Pass-alice-1"]))
        #expect(phone.respReply() == "+OK")
        phone.send(GatewayConnection.resp(["SUBSCRIBE", "notify.alert"]))
        #expect([phone.line(), phone.respReply(), phone.respReply(), phone.respReply()] == ["*3", "$subscribe", "$notify.alert", ":1"])
        // Bob subscribed to the same topic hears none of hers.
        let bob = try GatewayConnection(port: suite.port, timeoutMilliseconds: 50)
        let bobId = PushDeliveryTests.signIn("bob", on: bob).id
        #expect(bob.rpc("subscribe", #"{"topics":["notify.alert"]}"#).succeeded)
        #expect(aliceId > 0 && bobId > 0 && aliceId != bobId)

        var heard = (alice: [String](), phone: [String]())
        let arrived = try PushDeliveryTests.pushUntil(pusher, to: aliceId) {
            while let line = alice.line() { heard.alice.append(line) }
            while let line = phone.line() { heard.phone.append(line) }
            return !heard.alice.isEmpty && heard.phone.count >= 7
        }
        #expect(arrived, "alice heard \(heard.alice.count) lines, her phone \(heard.phone.count)")
        #expect(heard.alice.allSatisfy { $0.hasPrefix(#"{"jsonrpc":"2.0","method":"push","params":{"topic":"notify.alert","id":"t"#) && $0.hasSuffix(#","body":{"n":1}}}"#) })
        #expect(Array(heard.phone.prefix(5)) == ["*3", "$7", "message", "$12", "notify.alert"])
        #expect(heard.phone.count >= 7 && heard.phone[5].hasPrefix("$") && heard.phone[6].hasPrefix(#"{"topic":"notify.alert","id":"t"#), "\(heard.phone)")
        #expect(bob.line() == nil)
        // Each connection still answers requests between pushes.
        #expect(alice.rpc("ping").line == #"{"jsonrpc":"2.0","id":1,"result":"pong"}"#)
        _ = other
    }

    @Test func redisCLISubscribeHearsPushes() throws {
        let pusher = try Pusher()
        let suite = try SuiteFixture(gatewayArguments: ["--peer-pub", "notify=\(pusher.endpoint)"])
        // The admin is user 1. redis-cli runs until it is killed after 3 s; meanwhile the test
        // pushes every 50 ms (the first ones go out before redis-cli has subscribed).
        let publishing = Thread {
            let end = Date().addingTimeInterval(2.5)
            while Date() < end {
                _ = try? pusher.push(to: 1, body: #"{"near":"Opera House"}"#)
                usleep(50_000)
            }
        }
        publishing.start()
        let run = try BoundedRun("/usr/bin/env", ["redis-cli", "-h", "127.0.0.1", "-p", String(suite.port), "--user", SuiteFixture.admin.username,
                                                  "--pass", SuiteFixture.admin.password, "--no-auth-warning", "SUBSCRIBE", "notify.alert"], timeout: 3)
        let lines = run.output.split(separator: "\n").map(String.init)
        #expect(Array(lines.prefix(3)) == ["subscribe", "notify.alert", "1"], "redis-cli (./deploy/local/test installs redis-tools) said: \(run.digest)")
        #expect(lines.count >= 6 && lines[3] == "message" && lines[4] == "notify.alert", "\(lines.prefix(8))")
        #expect(lines.count >= 6 && json(lines[5])["body"] as? [String: String] == ["near": "Opera House"], "\(lines.prefix(8))")
    }

    @Test func aSubscriberWhoseSessionEndsElsewhereIsClosedAndHearsNothingMore() throws {
        let pusher = try Pusher()
        let suite = try SuiteFixture(gatewayArguments: ["--peer-pub", "notify=\(pusher.endpoint)"])
        // Her session ends on another connection: the listener is closed.
        try PushDeliveryTests.listenerClosesAfterALogoutElsewhere("carol", port: suite.port, pusher: pusher)
    }

    /// `name` listens on one connection of the gateway at `port` and hears a push; another
    /// connection resumes the same session and logs out; the listener must be closed (within about 10 s).
    static func listenerClosesAfterALogoutElsewhere(_ name: String, port: UInt16, pusher: Pusher) throws {
        let listener = try GatewayConnection(port: port, timeoutMilliseconds: 50)
        let (user, token) = PushDeliveryTests.signIn(name, on: listener)
        #expect(listener.rpc("subscribe", #"{"topics":["notify.alert"]}"#).succeeded)
        #expect(try PushDeliveryTests.pushUntil(pusher, to: user) { listener.line() != nil })
        let other = try GatewayConnection(port: port)
        #expect(other.rpc("auth.resume", #"{"token":"\#(token)"}"#).succeeded)
        #expect(other.rpc("auth.logout").succeeded)
        var closed = false
        for _ in 0..<100 where !closed {
            while listener.line() != nil {}
            closed = listener.isClosedByPeer()
        }
        #expect(closed)
    }

    @Test func withoutTheAccountsEventsALogoutThroughTheSameGatewayStillClosesTheListener() throws {
        let pusher = try Pusher()
        let suite = try SuiteFixture()
        // A gateway that does not follow the social service's events.
        let quiet = try ChildProcess("tourbus-gateway", folder: suite.folder, arguments: [
            "--listen", "127.0.0.1:0", "--peer", "catalog=\(suite.catalogEndpoint)", "--peer", "social=\(suite.social.rpc)",
            "--peer-pub", "notify=\(pusher.endpoint)"])
        let port = UInt16((quiet.endpoints["listen"] as? String ?? "").split(separator: ":").last ?? "") ?? 0
        try PushDeliveryTests.listenerClosesAfterALogoutElsewhere("dave", port: port, pusher: pusher)
    }

    @Test func aClientThatNeverReadsIsDisconnectedAndOthersKeepTheirAnswersAndPushes() throws {
        let pusher = try Pusher()
        let suite = try SuiteFixture(gatewayArguments: ["--peer-pub", "notify=\(pusher.endpoint)"])
        // A small receive buffer, so the kernel holds little of what the gateway writes to it.
        let sink = try GatewayConnection(port: suite.port, from: "127.0.0.2", timeoutMilliseconds: 2_000, receiveBuffer: 4_096)
        let sinkId = PushDeliveryTests.signIn("sink", on: sink).id
        #expect(sink.rpc("subscribe", #"{"topics":["notify.alert"]}"#).succeeded)
        let reader = try GatewayConnection(port: suite.port, from: "127.0.0.3", timeoutMilliseconds: 50)
        let readerId = PushDeliveryTests.signIn("reader", on: reader).id
        #expect(reader.rpc("subscribe", #"{"topics":["notify.alert"]}"#).succeeded)
        #expect(try PushDeliveryTests.pushUntil(pusher, to: readerId) { reader.line() != nil })
        while reader.line() != nil {}

        // 10,000 pushes of about 2 KB for the sink, which reads nothing; one for the reader every
        // 500, each awaited (at most 10 s) before the next 500: the load keeps the gateway's pace
        // however busy the machine, since the PUB socket drops what passes its high-water mark
        // (1,000 messages) and a burst must never reach it.
        let padding = #"{"pad":"\#(String(repeating: "x", count: 2_000))"}"#
        var forReader = 0, pushes = 0
        for n in 1...10_000 {
            try pusher.push(to: sinkId, body: padding)
            if n % 100 == 0 { usleep(2_000) }
            guard n % 500 == 0 else { continue }
            try pusher.push(to: readerId)
            forReader += 1
            for _ in 0..<200 where pushes < forReader {
                while let line = reader.line() { if line.contains(#""method":"push""#) { pushes += 1 } }
            }
        }
        #expect(pushes == forReader)
        #expect(reader.rpc("ping").line == #"{"jsonrpc":"2.0","id":1,"result":"pong"}"#)
        // The sink was cut off: what it finally reads ends in the close, far short of 10,000 pushes.
        var lines = 0
        while sink.line() != nil { lines += 1 }
        #expect(sink.isClosedByPeer())
        #expect(lines < 5_000, "\(lines)")
    }
}
