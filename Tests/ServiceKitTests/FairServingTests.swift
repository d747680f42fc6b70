import Bus
import Foundation
import ServiceKit
import Synchronization
import TestSupport
import Testing

/// A server's readers and writer share their time fairly between the clients the envelope
/// names: the order in which queued requests run, seen from the handlers.
@Suite struct FairServingTests {

    /// A one-reader server whose `test.hold` keeps the reader (or the writer) until released, `test.slow`
    /// sleeps 3 ms, and every handler notes `context.client` as it starts.
    final class Bench: Sendable {
        let context: ZMQContext
        let server: RPCServer<Int>
        let client: RPCClient
        let release = DispatchSemaphore(value: 0)
        let held = DispatchSemaphore(value: 0)
        let started = Locked<[String]>([])
        let failures = Locked(0)

        init(writes: Bool = false) throws {
            context = try ZMQContext()
            var table = HandlerTable<Int>()
            let release = self.release
            let held = self.held
            let started = self.started
            let kind: HandlerKind = writes ? .write : .read
            table.on("test.hold", kind) { (_: Empty, _, _) -> Bool in
                held.signal()
                return release.wait(timeout: .now() + 10) == .success
            }
            table.on("test.slow", kind) { (_: Empty, context, _) -> Empty in
                started.withLock { $0.append(context.client ?? "-") }
                usleep(3_000)
                return Empty()
            }
            table.on("test.quick", kind) { (_: Empty, context, _) -> Empty in
                started.withLock { $0.append(context.client ?? "-") }
                return Empty()
            }
            var options = RPCServerOptions()
            options.readers = 1
            server = try RPCServer(context: context, bind: ["tcp://127.0.0.1:0"], table: table, options: options, logger: logger) { _ in 0 }
            client = try RPCClient(context: context, endpoints: server.endpoints, logger: logger)
        }

        /// Sends `type` for `client` without waiting; the group is left when it is answered.
        func send(_ type: String, client: String?, _ group: DispatchGroup) {
            group.enter()
            let failures = self.failures
            self.client.send(type: type, body: Data("{}".utf8), client: client, timeoutMilliseconds: 20_000) { result in
                if case .failure = result { failures.withLock { $0 += 1 } }
                group.leave()
            }
        }

        /// Runs a few of each kind, so the server knows what each costs.
        func warmUp() throws {
            for _ in 0..<16 {
                _ = try client.request(type: "test.slow", body: Data("{}".utf8), client: "warm", timeoutMilliseconds: 5_000)
                _ = try client.request(type: "test.quick", body: Data("{}".utf8), client: "warm", timeoutMilliseconds: 5_000)
            }
            started.withLock { $0.removeAll() }
        }

        /// Holds the reader, lets `queue` send its requests, waits until all are queued,
        /// releases the reader and waits for every answer: the clients in the order they ran.
        func order(expecting count: Int, _ queue: (DispatchGroup) -> Void) throws -> [String] {
            let group = DispatchGroup()
            send("test.hold", client: "holder", group)
            #expect(held.wait(timeout: .now() + 5) == .success)
            queue(group)
            // Bounded: every request is accepted (in flight) before the reader is let go.
            for _ in 0..<500 where server.stats.inFlight < count + 1 { usleep(10_000) }
            #expect(server.stats.inFlight == count + 1)
            release.signal()
            #expect(group.wait(timeout: .now() + 30) == .success)
            #expect(failures.withLock { $0 } == 0)
            return started.withLock { $0 }
        }
    }

    /// One client floods; another's single request runs next, not after the flood.
    @Test(arguments: [false, true]) func aFloodWaitsBehindItself(writes: Bool) throws {
        let bench = try Bench(writes: writes)
        try bench.warmUp()
        let order = try bench.order(expecting: 41) { group in
            for _ in 0..<40 { bench.send("test.quick", client: "198.51.100.1", group) }
            bench.send("test.quick", client: "198.51.100.2", group)
        }
        #expect(order.count == 41)
        // First in first out would run it last; shared fairly it runs second.
        #expect(order.firstIndex(of: "198.51.100.2").map { $0 <= 1 } == true, "\(order)")
    }

    /// Eighty addresses each queue costly requests; a victim's cheap one still runs within
    /// the first few, and the costly ones take turns between the addresses.
    @Test func eightyAddressesDoNotCrowdOutAVictim() throws {
        let bench = try Bench()
        try bench.warmUp()
        let attackers = (1...80).map { "203.0.113.\($0)" }
        let order = try bench.order(expecting: 80 * 4 + 1) { group in
            for _ in 0..<4 {
                for address in attackers { bench.send("test.slow", client: address, group) }
            }
            bench.send("test.quick", client: "2001:db8:1:2::/64", group)
        }
        let victim = try #require(order.firstIndex(of: "2001:db8:1:2::/64"))
        #expect(victim <= 2, "the victim ran after \(victim) costly requests")
        // Every address had its first turn before any had its second.
        let attackersOnly = order.filter { $0 != "2001:db8:1:2::/64" }
        #expect(Set(attackersOnly.prefix(80)).count == 80)
    }

    /// Requests with no client named are shared between the bus peers that send them.
    @Test func peersWithoutAClientAreLanesOfTheirOwn() throws {
        let bench = try Bench()
        try bench.warmUp()
        let other = try RPCClient(context: bench.context, endpoints: bench.server.endpoints, logger: logger)
        for _ in 0..<500 where other.connectedServers == 0 { usleep(10_000) }
        let order = try bench.order(expecting: 31) { group in
            for _ in 0..<30 { bench.send("test.quick", client: nil, group) }
            group.enter()
            let failures = bench.failures
            other.send(type: "test.quick", body: Data("{}".utf8), client: "other", timeoutMilliseconds: 20_000) { result in
                if case .failure = result { failures.withLock { $0 += 1 } }
                group.leave()
            }
        }
        #expect(order.firstIndex(of: "other").map { $0 <= 1 } == true, "\(order)")
    }

    /// One client cannot fill the whole queue: past half of it, its requests are refused and
    /// another client's are still taken.
    @Test func oneClientHoldsAtMostHalfTheQueue() throws {
        let context = try ZMQContext()
        let release = DispatchSemaphore(value: 0)
        let held = DispatchSemaphore(value: 0)
        var table = HandlerTable<Int>()
        table.on("test.hold") { (_: Empty, _, _) -> Bool in
            held.signal()
            return release.wait(timeout: .now() + 10) == .success
        }
        table.on("test.quick") { (_: Empty, _, _) -> Empty in Empty() }
        var options = RPCServerOptions()
        options.readers = 1
        options.maxQueued = 20
        let server = try RPCServer(context: context, bind: ["tcp://127.0.0.1:0"], table: table, options: options, logger: logger) { _ in 0 }
        let client = try RPCClient(context: context, endpoints: server.endpoints, logger: logger)
        let hold = client.start(type: "test.hold", body: Data("{}".utf8), client: "a", timeoutMilliseconds: 10_000)
        #expect(held.wait(timeout: .now() + 5) == .success)
        let flood = (0..<12).map { _ in client.start(type: "test.quick", body: Data("{}".utf8), client: "a", timeoutMilliseconds: 10_000) }
        let other = client.start(type: "test.quick", body: Data("{}".utf8), client: "b", timeoutMilliseconds: 10_000)
        for _ in 0..<500 where server.stats.inFlight < 12 { usleep(10_000) }
        release.signal()
        _ = try hold.wait()
        var refused: [ServiceError] = []
        for pending in flood {
            do { _ = try pending.wait() } catch { refused.append(error) }
        }
        #expect(refused.count == 2)
        #expect(refused.allSatisfy { $0.code == .unavailable && $0.message == "server overloaded: 10 requests from one client waiting" })
        _ = try other.wait()
    }
}
