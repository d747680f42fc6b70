import Foundation
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// Phones hold connections open for pushes: an idle connection must cost the gateway little.
@Suite struct HeldConnectionsTests {
    /// A field of /proc/PID/status (`VmRSS` in KiB, `Threads`).
    static func status(_ pid: Int32, _ field: String) -> Int {
        let status = (try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8)) ?? ""
        let line = status.split(separator: "\n").first { $0.hasPrefix(field + ":") } ?? ""
        return Int(line.split(whereSeparator: { $0 == " " || $0 == "\t" }).dropFirst().first ?? "") ?? 0
    }

    /// How many of `connections`, in order, read a PONG (up to the first that does not, so a
    /// failure costs one read timeout, not one for each).
    static func pongs(_ connections: [GatewayConnection]) -> Int {
        var count = 0
        for connection in connections {
            guard connection.line() == "+PONG" else { break }
            count += 1
        }
        return count
    }

    @Test func idleConnectionsShareAFewThreadsAndLittleMemory() throws {
        let suite = try SuiteFixture()
        let pid = suite.gateway.process.processIdentifier
        // Whatever starts with the first client (the loops' buffers, the backends' first use) is there before counting.
        #expect(try GatewayConnection(port: suite.port).line(sending: "PING\r\n") == "+PONG")
        let threads = HeldConnectionsTests.status(pid, "Threads"), resident = HeldConnectionsTests.status(pid, "VmRSS")
        #expect(threads > 0 && resident > 0)
        // 600 connections from 6 addresses (within the 128 each may hold), each served once and then idle.
        var held: [GatewayConnection] = []
        for address in 2...7 {
            for _ in 0..<100 {
                let connection = try GatewayConnection(port: suite.port, from: "127.0.0.\(address)")
                connection.send("PING\r\n")
                held.append(connection)
            }
        }
        #expect(HeldConnectionsTests.pongs(held) == held.count)
        let moreThreads = HeldConnectionsTests.status(pid, "Threads") - threads
        let moreKiB = HeldConnectionsTests.status(pid, "VmRSS") - resident
        // A thread per connection was 600 more threads and about 55 KiB each (debug build); the goal is 10 KiB.
        #expect(moreThreads < 8, "\(moreThreads) more threads for \(held.count) connections")
        #expect(moreKiB < held.count * 10, "\(moreKiB) KiB more for \(held.count) connections")
        // Every one of them is still served, all at once.
        for connection in held { connection.send("PING\r\n") }
        #expect(HeldConnectionsTests.pongs(held) == held.count)
    }
}

extension GatewayConnection {
    /// Sends `text` and reads one line back.
    func line(sending text: String) -> String? {
        send(text)
        return line()
    }
}
