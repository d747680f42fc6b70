import Bus
import Foundation
import Synchronization
import Testing
import TestSupport
#if canImport(Glibc)
import Glibc
#endif

/// The attacks of a hostile outside test, all at once from several addresses, against the
/// real executables at the production password cost; a victim on another address must
/// keep working throughout. Loopback only, bounded in time (about 8 s of attack).
@Suite(.serialized) struct StressTests {
    static let attackSeconds = 8.0

    /// Sends without blocking: a client that floods does not wait for the gateway to read.
    static func flood(_ connection: GatewayConnection, _ bytes: [UInt8]) {
        _ = bytes.withUnsafeBufferPointer { send(connection.fd, $0.baseAddress!, bytes.count, Int32(MSG_NOSIGNAL | MSG_DONTWAIT)) }
    }

    @Test func aVictimKeepsWorkingWhileOthersAttack() throws {
        let suite = try SuiteFixture(passwordCost: "interactive")
        let pids = [suite.catalog.process.processIdentifier, suite.social.process.processIdentifier, suite.gateway.process.processIdentifier]
        let admin = try suite.adminConnection()
        let created = admin.reply(#"{"jsonrpc":"2.0","id":1,"method":"catalog.create","params":{"name":"Opera","category":"attraction","lat":-33.85,"lon":151.21}}"#)
        let placeId = created.field("id", Int.self) ?? 1
        let victimName = "victim"
        let registration = try GatewayConnection(port: suite.port, from: "127.0.0.9").call(
            #"{"jsonrpc":"2.0","id":1,"method":"auth.register","params":{"username":"\#(victimName)","email":"v@example.org","name":"V","password":"Victim-Pass-1"}}"#)
        #expect(RPCReply(registration).succeeded)
        // The victim has logged in from its address before: the service knows it there.
        let first = try GatewayConnection(port: suite.port, from: "127.0.0.9").call(
            #"{"jsonrpc":"2.0","id":1,"method":"auth.login","params":{"username":"\#(victimName)","password":"Victim-Pass-1"}}"#)
        #expect(RPCReply(first).succeeded)

        let port = suite.port
        let end = Date().addingTimeInterval(StressTests.attackSeconds)
        var attackers: [Thread] = []
        func attack(_ body: @escaping @Sendable () -> Void) {
            let thread = Thread(block: body)
            attackers.append(thread)
            thread.start()
        }
        let done = Atomic<Int>(0)
        // Sign-up and login floods from two addresses, pipelined on 8 and 4 connections. The
        // logins guess the victim's password, which locks its username everywhere but where
        // the victim logs in, and made-up usernames, which cost no hash.
        for (address, count, method) in [("127.0.0.2", 8, "auth.register"), ("127.0.0.3", 4, "auth.login")] {
            attack {
                defer { done.add(1, ordering: .relaxed) }
                let connections = (0..<count).compactMap { _ in try? GatewayConnection(port: port, from: address, timeoutMilliseconds: 100) }
                var n = 0
                while Date() < end {
                    for c in connections {
                        n += 1
                        let params = method == "auth.register"
                            ? #"{"username":"flood\#(n)x\#(address.suffix(1))","email":"f\#(n)@example.org","name":"F","password":"Flood-Pass-1"}"#
                            : #"{"username":"\#(n % 2 == 0 ? victimName : "someone\(n % 50)")","password":"Wrong-Pass-\#(n)"}"#
                        StressTests.flood(c, Array(#"{"jsonrpc":"2.0","id":\#(n),"method":"\#(method)","params":\#(params)}"#.utf8) + [0x0A])
                        var sink = [UInt8](repeating: 0, count: 65_536)
                        _ = recv(c.fd, &sink, sink.count, Int32(MSG_DONTWAIT))
                    }
                    usleep(20_000)
                }
            }
        }
        // Heavy reads: every connection slot of one address, each sending 128 catalog.list
        // notifications every half second, never reading.
        attack {
            defer { done.add(1, ordering: .relaxed) }
            let connections = (0..<200).compactMap { _ in try? GatewayConnection(port: port, from: "127.0.0.4", timeoutMilliseconds: 100) }
            let burst = Array(String(repeating: #"{"jsonrpc":"2.0","method":"catalog.list","params":{"limit":100}}"# + "\n", count: 128).utf8)
            while Date() < end {
                for c in connections { StressTests.flood(c, burst) }
                usleep(500_000)
            }
        }
        // Slot hoarding and slow clients: connections that trickle a byte now and then or send blank lines.
        attack {
            defer { done.add(1, ordering: .relaxed) }
            let connections = (0..<300).compactMap { _ in try? GatewayConnection(port: port, from: "127.0.0.5", timeoutMilliseconds: 100) }
            while Date() < end {
                for (i, c) in connections.enumerated() { StressTests.flood(c, i % 2 == 0 ? [UInt8(ascii: "c")] : [0x0A]) }
                usleep(300_000)
            }
        }
        // Reviews listed over and over by an anonymous client.
        attack {
            defer { done.add(1, ordering: .relaxed) }
            let connections = (0..<12).compactMap { _ in try? GatewayConnection(port: port, from: "127.0.0.6", timeoutMilliseconds: 100) }
            let request = Array(String(repeating: #"{"jsonrpc":"2.0","id":1,"method":"reviews.list","params":{"place_id":\#(placeId),"limit":50}}"# + "\n", count: 64).utf8)
            while Date() < end {
                for c in connections { StressTests.flood(c, request) }
                usleep(100_000)
            }
        }

        // The victim, from its own address: a login on a fresh connection and reads on a
        // signed-in one, over and over; each must succeed within the normal deadline.
        var failures: [String] = []
        var loginFailures: [String] = []
        var logins = 0, reads = 0
        let victim = try GatewayConnection(port: port, from: "127.0.0.9", timeoutMilliseconds: 3_000)
        usleep(300_000)
        while Date() < end {
            let started = Date()
            let login = try GatewayConnection(port: port, from: "127.0.0.9", timeoutMilliseconds: 3_000)
                .call(#"{"jsonrpc":"2.0","id":1,"method":"auth.login","params":{"username":"\#(victimName)","password":"Victim-Pass-1"}}"#)
            let token = (json(login)["result"] as? [String: Any])?["token"] as? String
            if token == nil || Date().timeIntervalSince(started) > 2.1 { loginFailures.append("login: \(login ?? "no answer") after \(Date().timeIntervalSince(started)) s") }
            logins += 1
            for request in [#"{"jsonrpc":"2.0","id":2,"method":"catalog.get","params":{"id":\#(placeId)}}"#,
                            #"{"jsonrpc":"2.0","id":3,"method":"reviews.list","params":{"place_id":\#(placeId)}}"#,
                            #"{"jsonrpc":"2.0","id":4,"method":"profile.get","params":{"token":"\#(token ?? "")"}}"#] {
                let asked = Date()
                let reply = victim.call(request)
                if !RPCReply(reply).succeeded || Date().timeIntervalSince(asked) > 2.1 {
                    failures.append("\(request.prefix(60)): \(reply?.prefix(200) ?? "no answer") after \(Date().timeIntervalSince(asked)) s")
                }
                reads += 1
            }
            usleep(200_000)
        }
        for _ in 0..<100 where done.load(ordering: .relaxed) < attackers.count { usleep(100_000) }
        #expect(failures.isEmpty, "\(failures.count) of \(reads) reads failed: \(failures.prefix(5))")
        #expect(loginFailures.isEmpty, "\(loginFailures.count) of \(logins) logins failed: \(loginFailures.prefix(5))")
        // The victim made progress all along (on 2 shared cores a login takes up to a second here).
        #expect(logins >= 4 && reads >= 12, "\(logins) logins, \(reads) reads")
        // Nothing restarted.
        #expect(suite.catalog.process.isRunning && suite.social.process.isRunning && suite.gateway.process.isRunning)
        #expect([suite.catalog.process.processIdentifier, suite.social.process.processIdentifier, suite.gateway.process.processIdentifier] == pids)
        // The floods were held back, not served in full: sign-ups were limited per address.
        let status = try GatewayConnection(port: port, from: "127.0.0.9").call(#"{"jsonrpc":"2.0","id":9,"method":"auth.register","params":{"username":"late","email":"late@example.org","name":"L","password":"Late-Pass-1"}}"#)
        #expect(RPCReply(status).succeeded, "\(status ?? "")")
    }
}
