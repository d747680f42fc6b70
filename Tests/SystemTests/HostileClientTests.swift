import Bus
import Foundation
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// A raw TCP client of the gateway from a chosen loopback source address (127.0.0.2, …), so
/// one test can be several clients as the gateway counts them.
final class AddressedClient {
    let fd: Int32
    private var buffer: [UInt8] = []

    init(port: UInt16, from source: String, timeoutMilliseconds: Int = 5_000) throws {
        fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        func address(_ host: String, _ port: UInt16) -> sockaddr_in {
            var a = sockaddr_in()
            a.sin_family = sa_family_t(AF_INET)
            a.sin_addr.s_addr = inet_addr(host)
            a.sin_port = port.bigEndian
            return a
        }
        var local = address(source, 0)
        var remote = address("127.0.0.1", port)
        let size = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafePointer(to: &local) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, size) == 0 } }
        let connected = bound && withUnsafePointer(to: &remote) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, size) == 0 } }
        guard connected else {
            close(fd)
            throw ServiceError(.unavailable, "cannot connect from \(source) to 127.0.0.1:\(port)")
        }
        var timeout = timeval(tv_sec: timeoutMilliseconds / 1000, tv_usec: (timeoutMilliseconds % 1000) * 1000)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
    }

    deinit { close(fd) }

    func send(_ text: String) { send(Array(text.utf8)) }

    func send(_ bytes: [UInt8]) {
        var offset = 0
        while offset < bytes.count {
            let n = bytes.withUnsafeBufferPointer { Glibc.send(fd, $0.baseAddress! + offset, bytes.count - offset, Int32(MSG_NOSIGNAL)) }
            if n <= 0 { return }
            offset += n
        }
    }

    /// The next line (without CR LF), or nil when the connection closed or timed out.
    func line() -> String? {
        while true {
            if let newline = buffer.firstIndex(of: 0x0A) {
                let line = buffer[..<newline]
                buffer.removeFirst(newline + 1)
                return String(decoding: line.last == 0x0D ? line.dropLast() : line, as: UTF8.self)
            }
            var chunk = [UInt8](repeating: 0, count: 65_536)
            let n = recv(fd, &chunk, chunk.count, 0)
            if n <= 0 { return nil }
            buffer += chunk[0..<n]
        }
    }

    /// Whether the gateway closed the connection (reads until end of stream, within the timeout).
    func isClosedByPeer() -> Bool {
        var chunk = [UInt8](repeating: 0, count: 65_536)
        for _ in 0..<1_000 {
            let n = recv(fd, &chunk, chunk.count, 0)
            if n == 0 { return true }
            if n < 0 { return false }
        }
        return false
    }

    func call(_ json: String) -> String? {
        send(json + "\n")
        return line()
    }
}

@Suite(.serialized) struct HostileClientTests {
    static func nested(_ depth: Int) -> String { String(repeating: "[", count: depth) + String(repeating: "]", count: depth) }

    @Test func deepNestingNeverTakesTheGatewayDown() throws {
        let suite = try SuiteFixture()
        let pid = suite.gateway.process.processIdentifier
        let json = try GatewayConnection(port: suite.port, timeoutMilliseconds: 10_000)
        let resp = try GatewayConnection(port: suite.port, timeoutMilliseconds: 10_000)
        let depths = Array(1...1_000) + (10...16).map { 1 << $0 } + [100_000]
        var answered = 0
        for depth in depths {
            let value = HostileClientTests.nested(depth)
            guard let reply = json.call(#"{"jsonrpc":"2.0","id":1,"method":"ping","params":{"x":"# + value + "}}") else { break }
            #expect(reply.contains(depth <= 62 ? #""result":"pong""# : #""code":-32700"#), "depth \(depth)")
            resp.send(GatewayConnection.resp(["catalog.get", "id", "1", "x", value]))
            guard let answer = resp.respReply() else { break }
            #expect(depth <= 62 ? !answer.contains("nesting") : answer.hasPrefix("-INVALID_ARGUMENT x: nesting deeper than 62"), "depth \(depth): \(answer.prefix(120))")
            answered += 1
        }
        #expect(answered == depths.count)
        #expect(suite.gateway.process.isRunning && suite.gateway.process.processIdentifier == pid)
        #expect(json.call(#"{"jsonrpc":"2.0","id":2,"method":"ping"}"#)?.contains("pong") == true)
    }

    @Test func eachAddressHasItsShareOfConnections() throws {
        let suite = try SuiteFixture(gatewayArguments: ["--max-connections-per-address", "4"])
        var held: [AddressedClient] = []
        for _ in 0..<4 { held.append(try AddressedClient(port: suite.port, from: "127.0.0.2")) }
        for client in held { #expect(client.call(#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#)?.contains("pong") == true) }
        let fifth = try AddressedClient(port: suite.port, from: "127.0.0.2")
        let refusal = fifth.call(#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#) ?? ""
        #expect(refusal.contains("too many connections from your address (limit 4)"), "\(refusal)")
        // Another address is not affected; a closed connection gives its place back.
        #expect(try AddressedClient(port: suite.port, from: "127.0.0.3").call(#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#)?.contains("pong") == true)
        held.removeLast()
        var again: String?
        for _ in 0..<50 {
            again = try AddressedClient(port: suite.port, from: "127.0.0.2").call(#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#)
            if again?.contains("pong") == true { break }
            usleep(20_000)
        }
        #expect(again?.contains("pong") == true)
    }

    @Test func loginsAreLimitedPerAddressBeforeAnyHashing() throws {
        let suite = try SuiteFixture(gatewayArguments: ["--logins-per-minute-per-address", "3", "--registrations-per-minute-per-address", "2"])
        let flood = try AddressedClient(port: suite.port, from: "127.0.0.2")
        let wrong = #"{"jsonrpc":"2.0","id":1,"method":"auth.login","params":{"username":"admin","password":"Wrong-Pass-1"}}"#
        for _ in 0..<3 { #expect(errorCode(flood.call(wrong)) == -32004) }
        let limited = flood.call(wrong) ?? ""
        #expect(errorCode(limited) == -32006 && limited.contains("too many logins from your address"), "\(limited)")
        for i in 0..<2 {
            #expect(json(flood.call(#"{"jsonrpc":"2.0","id":1,"method":"auth.register","params":{"username":"user\#(i)","email":"user\#(i)@example.org","name":"U","password":"Pass-word-1"}}"#))["result"] != nil)
        }
        #expect(errorCode(flood.call(#"{"jsonrpc":"2.0","id":1,"method":"auth.register","params":{"username":"user9","email":"user9@example.org","name":"U","password":"Pass-word-1"}}"#)) == -32006)
        // The victim's address signs in as usual.
        let victim = try AddressedClient(port: suite.port, from: "127.0.0.3")
        #expect(json(victim.call(#"{"jsonrpc":"2.0","id":1,"method":"auth.login","params":{"username":"admin","password":"Admin-Pass-1"}}"#))["result"] != nil)
    }

    @Test func slowAndSilentClientsAreClosed() throws {
        let suite = try SuiteFixture(gatewayArguments: ["--first-byte-timeout-ms", "500", "--request-timeout-ms", "800", "--idle-timeout-ms", "1500"])
        // Only spaces: no request byte ever comes.
        let silent = try AddressedClient(port: suite.port, from: "127.0.0.2")
        silent.send("   ")
        // A request trickled a byte at a time.
        let trickle = try AddressedClient(port: suite.port, from: "127.0.0.3")
        // Blank lines every 300 ms after one request.
        let blank = try AddressedClient(port: suite.port, from: "127.0.0.4")
        #expect(blank.call(#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#)?.contains("pong") == true)
        let started = Date()
        for byte in "catalog.get id 1".utf8 {
            trickle.send([byte])
            blank.send("\n")
            usleep(300_000)
            if Date().timeIntervalSince(started) > 2.4 { break }
        }
        #expect(silent.isClosedByPeer())
        #expect(trickle.isClosedByPeer())
        #expect(blank.isClosedByPeer())
        #expect(Date().timeIntervalSince(started) < 4)
    }

    @Test func aDemotedAdminLosesWritesAtOnce() throws {
        let suite = try SuiteFixture()
        let admin = try suite.adminConnection()
        let registered = json(admin.call(#"{"jsonrpc":"2.0","id":1,"method":"auth.register","params":{"username":"bob","email":"bob@example.org","name":"Bob","password":"Bob-Pass-1"}}"#))
        let bobId = (registered["result"] as? [String: Any])?["id"] as? Int ?? 0
        #expect(json(admin.call(#"{"jsonrpc":"2.0","id":2,"method":"admin.set_role","params":{"user_id":\#(bobId),"role":"admin"}}"#))["result"] != nil)
        let bob = try GatewayConnection(port: suite.port)
        #expect(json(bob.call(#"{"jsonrpc":"2.0","id":1,"method":"auth.login","params":{"username":"bob","password":"Bob-Pass-1"}}"#))["result"] != nil)
        let create = #"{"jsonrpc":"2.0","id":2,"method":"catalog.create","params":{"name":"Bob's","category":"cafe","lat":-33.87,"lon":151.2}}"#
        #expect(json(bob.call(create))["result"] != nil)
        // Bob's token is in the gateway's cache now; demoting him must end his writes well
        // before the cache's 2 s are up.
        let demoted = Date()
        #expect(json(admin.call(#"{"jsonrpc":"2.0","id":3,"method":"admin.set_role","params":{"user_id":\#(bobId),"role":"user"}}"#))["result"] != nil)
        var refused = false
        for _ in 0..<10 where !refused {
            refused = errorCode(bob.call(create)) == -32005
            if !refused { usleep(50_000) }
        }
        #expect(refused && Date().timeIntervalSince(demoted) < 1, "\(Date().timeIntervalSince(demoted)) s")
    }
}
