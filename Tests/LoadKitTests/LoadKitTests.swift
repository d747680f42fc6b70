import Foundation
@testable import LoadKit
import Synchronization
import Testing
#if canImport(Glibc)
import Glibc
#endif

@Suite struct LogHistogramTests {
    @Test func percentilesAreWithinTwoPercentOfTheExactOnes() {
        var histogram = LogHistogram()
        var samples: [UInt64] = []
        var state: UInt64 = 42
        for _ in 0..<100_000 {
            state = state &* 6364136223846793005 &+ 1442695040888963407
            // Log-uniform from 1 µs to 10 s.
            let value = UInt64(1_000 * pow(10, Double(state >> 11) / Double(1 << 53) * 7))
            samples.append(value)
            histogram.record(value)
        }
        samples.sort()
        for p in [0.5, 0.9, 0.99, 0.999] {
            let exact = Double(samples[Int((p * Double(samples.count)).rounded(.up)) - 1])
            let estimate = Double(histogram.percentile(p))
            #expect(estimate >= exact && estimate <= exact * 1.021, "p\(p): \(estimate) against \(exact)")
        }
        #expect(histogram.max == samples.last)
        #expect(histogram.percentile(1) == samples.last)
        #expect(LogHistogram().percentile(0.99) == 0)
        var merged = LogHistogram()
        merged.merge(histogram)
        merged.merge(histogram)
        #expect(merged.count == 200_000 && merged.percentile(0.5) == histogram.percentile(0.5))
    }
}

/// A JSON-RPC line server on loopback that answers each line `{"id":N}` with a result, all
/// connections through one lock; `stall` holds that lock once for a while, as a paused
/// process would, and `silent` ids are never answered.
final class StallingServer: @unchecked Sendable {
    let port: UInt16
    private let listener: Int32
    let gate = NSLock()
    let stallAt: Int
    let stallMicroseconds: UInt32
    let silentFrom: Int
    /// Answer every line with RESP's `+PONG` instead, as redis-server answers `PING`.
    var resp = false
    private let stalled = Atomic<Bool>(false)

    init(stallAt: Int, stallMilliseconds: UInt32, silentFrom: Int = .max) throws {
        self.stallAt = stallAt
        self.stallMicroseconds = stallMilliseconds * 1_000
        self.silentFrom = silentFrom
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let ok = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, length) == 0 && getsockname(fd, $0, &length) == 0 }
        }
        guard ok, listen(fd, 64) == 0 else { throw OpenLoop.Failure(description: "no listener") }
        listener = fd
        port = UInt16(bigEndian: address.sin_port)
        Thread { [self] in
            while true {
                let fd = accept(listener, nil, nil)
                if fd < 0 { return }
                Thread { self.serve(fd) }.start()
            }
        }.start()
    }

    func serve(_ fd: Int32) {
        var buffer = [UInt8](), chunk = [UInt8](repeating: 0, count: 65_536)
        while true {
            let n = read(fd, &chunk, chunk.count)
            if n <= 0 { break }
            buffer.append(contentsOf: chunk[0..<n])
            var start = 0
            while let newline = buffer[start...].firstIndex(of: 0x0A) {
                let id = OpenLoop.id(in: buffer[start..<newline]) ?? -1
                start = newline + 1
                gate.lock()
                if id >= stallAt && !stalled.exchange(true, ordering: .relaxed) { usleep(stallMicroseconds) }
                gate.unlock()
                if id >= silentFrom { continue }
                let reply = resp ? Array("+PONG\r\n".utf8) : Array(#"{"jsonrpc":"2.0","id":\#(id),"result":{}}"#.utf8) + [0x0A]
                _ = OpenLoop.writeAll(fd, reply)
            }
            buffer.removeFirst(start)
        }
        close(fd)
    }

    deinit {
        shutdown(listener, Int32(SHUT_RDWR))
        close(listener)
    }
}

@Suite struct OpenLoopTests {
    @Test func aStallShowsInEveryRequestDueDuringItNotOnlyTheOneThatWaited() throws {
        // 2,000 requests a second for a second; the server stops for 300 ms at request 600:
        // the ~600 requests due during the stall wait 300 ms down to 0 from their due times.
        let server = try StallingServer(stallAt: 600, stallMilliseconds: 300)
        var plan = OpenLoop.Plan(gateway: "127.0.0.1:\(server.port)", rate: 2_000, seconds: 1, requests: [("ping", "{}")])
        plan.connections = 4
        let outcome = try OpenLoop.run(plan)
        #expect(outcome.sent == 2_000 && outcome.answered == 2_000)
        #expect(outcome.latency.percentile(0.5) < 50_000_000, "p50 \(outcome.latency.percentile(0.5))")
        // A closed-loop client would have seen one slow request of 2,000 (p99 small).
        #expect(outcome.latency.percentile(0.9) >= 100_000_000, "p90 \(outcome.latency.percentile(0.9))")
        #expect(outcome.latency.max >= 250_000_000 && outcome.latency.max < 1_000_000_000)
        #expect(outcome.errors.isEmpty)
    }

    @Test func respRepliesAreMatchedInOrderPerConnection() throws {
        let server = try StallingServer(stallAt: .max, stallMilliseconds: 0)
        server.resp = true
        var plan = OpenLoop.Plan(gateway: "127.0.0.1:\(server.port)", rate: 2_000, seconds: 0.5, requests: [("PING", "")])
        plan.resp = true
        plan.connections = 3
        let outcome = try OpenLoop.run(plan)
        #expect(outcome.sent == 1_000 && outcome.answered == 1_000 && outcome.errors.isEmpty)
        #expect(outcome.latency.percentile(0.5) < 20_000_000)
    }

    @Test func httpResponsesAreFramedByTheirLength() {
        let responses = Array("HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 8\r\n\r\n{\"id\":7}HTTP/1.1 204 No Content\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 9\r\n\r\n{\"id\":".utf8)
        guard let (first, next) = OpenLoop.httpBody(responses, from: 0) else {
            Issue.record("the first response is whole")
            return
        }
        #expect(OpenLoop.id(in: first) == 7)
        guard let (second, after) = OpenLoop.httpBody(responses, from: next) else {
            Issue.record("the second response is whole")
            return
        }
        #expect(second.isEmpty)
        #expect(OpenLoop.httpBody(responses, from: after) == nil, "the third has part of its body")
    }

    @Test func unansweredRequestsCountAsLateAsTheRunLasted() throws {
        let server = try StallingServer(stallAt: .max, stallMilliseconds: 0, silentFrom: 190)
        var plan = OpenLoop.Plan(gateway: "127.0.0.1:\(server.port)", rate: 1_000, seconds: 0.2, requests: [("ping", "{}")])
        plan.connections = 2
        plan.drainSeconds = 0.5
        let outcome = try OpenLoop.run(plan)
        #expect(outcome.sent == 200 && outcome.answered == 190)
        #expect(outcome.latency.count == 200)
        #expect(outcome.latency.max >= 500_000_000, "max \(outcome.latency.max)")
    }

    @Test func errorRepliesAreCountedByCode() {
        let line = Array(#"{"jsonrpc":"2.0","id":17,"error":{"code":-32001,"message":"no place","data":{"code":"not_found","field":"id"}}}"#.utf8)
        #expect(OpenLoop.id(in: line[...]) == 17)
        #expect(OpenLoop.errorCode(in: line[...]) == "not_found")
        let result = Array(#"{"jsonrpc":"2.0","id":3,"result":{"id":99,"error":null}}"#.utf8)
        #expect(OpenLoop.id(in: result[...]) == 3)
        #expect(OpenLoop.errorCode(in: result[...]) == nil)
    }
}
