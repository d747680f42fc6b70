import Bus
import Contracts
import Foundation
import ServiceCore
import ServiceKit
import TestSupport
import Testing

@testable import Gateway

#if canImport(Glibc)
    import Glibc
#endif

/// `--max-in-flight-per-address`, from the attackers' side: many addresses, each pipelining
/// more calls over several connections than its share, against a stand-in catalog that holds
/// every `catalog.get` until released.
@Suite struct AddressInFlightTests {
    /// A catalog whose `catalog.get` waits for `release`; `held` counts those waiting now.
    final class HeldCatalog: Sendable {
        let server: RPCServer<Void>
        let held = Locked<Int>(0)
        let released = StopFlag()

        init(context: ZMQContext) throws {
            var table = HandlerTable<Void>()
            let held = self.held
            let released = self.released
            table.onRaw(Methods.Catalog.get.name) { _, _ in
                held.withLock { $0 += 1 }
                for _ in 0..<2_000 where !released.isSet { usleep(5_000) }
                return Response(body: Data(#"{"id":1}"#.utf8))
            }
            var options = RPCServerOptions()
            options.readers = 1_300
            server = try RPCServer(
                context: context, bind: ["tcp://127.0.0.1:0"], table: table, options: options, logger: Logger(component: "test", level: .error)
            ) { _ in () }
        }
    }

    static let get = #"{"jsonrpc":"2.0","id":1,"method":"catalog.get","params":{"id":1}}"# + "\n"

    /// Runs `body` with a held catalog and a gateway in front of it letting each address have
    /// 4 calls in flight.
    static func withGateway(trustedProxies: [String] = [], _ body: (HeldCatalog, GatewayServer) throws -> Void) throws {
        let context = try ZMQContext()
        let catalog = try HeldCatalog(context: context)
        defer {
            catalog.released.set()
            catalog.server.stop()
        }
        var config = GatewayConfig()
        config.listen = "127.0.0.1:0"
        config.peers = ["catalog": PeerEndpoints(rpc: catalog.server.endpoints)]
        config.limits.maxInFlightPerAddress = 4
        config.limits.maxBatch = 4
        config.limits.backendWindow = 1_000
        config.limits.deadlineMilliseconds = 15_000
        config.trustedProxies = trustedProxies
        let gateway = try GatewayServer(config: config, context: context, logger: Logger(component: "test", level: .error))
        defer { gateway.stop() }
        try body(catalog, gateway)
    }

    @Test func anAddressSendsOnAtMostItsShareAcrossItsConnectionsAndTheRestWaitsUnrefused() throws {
        try Self.withGateway { catalog, gateway in
            let get = Self.get

            // 80 addresses, 3 connections each, 5 pipelined calls on each: 15 an address, 1,200 in all.
            let addresses = (1...80).map { "127.0.1.\($0)" }
            var attackers: [LineClient] = []
            for address in addresses {
                for _ in 0..<3 {
                    let client = try LineClient(port: gateway.port, from: address)
                    LoopHarness.send(client.fd, String(repeating: get, count: 5))
                    attackers.append(client)
                }
            }
            // Each address has its 4 sent on, and no more: 320 held, not 1,200.
            #expect(within5s { catalog.held.withLock { $0 } >= 320 })
            usleep(300_000)
            #expect(catalog.held.withLock { $0 } == 320)

            // Another address is not held back by theirs.
            let victim = try LineClient(port: gateway.port, from: "127.0.2.1")
            LoopHarness.send(victim.fd, get)
            #expect(within5s { catalog.held.withLock { $0 } == 321 })
            // A full address reads nothing more, even a call the gateway answers itself.
            let late = try LineClient(port: gateway.port, from: addresses[0])
            LoopHarness.send(late.fd, #"{"jsonrpc":"2.0","id":2,"method":"ping"}"# + "\n")

            // Released, every call is answered, none refused.
            catalog.released.set()
            #expect(victim.readLine().contains(#""result":{"id":1}"#))
            #expect(late.readLine().lowercased().contains("pong"))
            var answered = 0
            for client in attackers {
                for _ in 0..<5 where client.readLine().contains(#""result":{"id":1}"#) { answered += 1 }
            }
            #expect(answered == 1_200)
        }
    }

    @Test func callsLeftRunningByAClosedConnectionStillCountForItsAddress() throws {
        try Self.withGateway { catalog, gateway in
            do {
                let first = try LineClient(port: gateway.port, from: "127.0.3.1")
                LoopHarness.send(first.fd, String(repeating: Self.get, count: 4))
                #expect(within5s { catalog.held.withLock { $0 } == 4 })
            }
            // The first connection closed with its 4 calls running: a new one from the address waits.
            let again = try LineClient(port: gateway.port, from: "127.0.3.1")
            LoopHarness.send(again.fd, Self.get)
            usleep(300_000)
            #expect(catalog.held.withLock { $0 } == 4)
            catalog.released.set()
            #expect(again.readLine().contains(#""result":{"id":1}"#))
            #expect(catalog.held.withLock { $0 } == 5)
        }
    }

    @Test func aTrustedProxysConnectionIsNotHeldBackByOneOfItsClients() throws {
        try Self.withGateway(trustedProxies: ["127.0.4.1"]) { catalog, gateway in
            func post(for client: String) -> String {
                let body = #"{"jsonrpc":"2.0","id":1,"method":"catalog.get","params":{"id":1}}"#
                return "POST /rpc HTTP/1.1\r\nHost: tourbus\r\nContent-Type: application/json\r\nX-Forwarded-For: \(client)\r\n"
                    + "Content-Length: \(body.utf8.count)\r\n\r\n\(body)"
            }
            let proxy = try LineClient(port: gateway.port, from: "127.0.4.1")
            // One client fills its share through the proxy's connection; the next request on it,
            // another client's, sent in the same packet, still goes on at once.
            LoopHarness.send(proxy.fd, String(repeating: post(for: "10.0.0.1"), count: 4) + post(for: "10.0.0.2"))
            #expect(within5s { catalog.held.withLock { $0 } == 5 })
            catalog.released.set()
            // Five responses, in order; the last body ends the stream of bytes read (no newline after it).
            var received = ""
            var buffer = [UInt8](repeating: 0, count: 4_096)
            for _ in 0..<100 where received.components(separatedBy: #""result":{"id":1}"#).count < 6 {
                let n = buffer.withUnsafeMutableBytes { recv(proxy.fd, $0.baseAddress, $0.count, 0) }
                guard n > 0 else { break }
                received += String(decoding: buffer[0..<n], as: UTF8.self)
            }
            #expect(received.components(separatedBy: #""result":{"id":1}"#).count == 6, "\(received)")
        }
    }

    @Test func whileConnectionsWaitForRoomTheOthersTakeNoneAndAllWakeAtThreeQuarters() {
        var limits = GatewayLimits()
        limits.maxInFlightPerAddress = 8
        let addresses = ClientAddresses(limits: limits)
        let woken = Locked<[UInt64]>([])
        func take(_ count: Int, _ key: UInt64) -> Int {
            addresses.takeInFlight("10.1.1.1", count, key: key) { woken.withLock { $0.append(key) } }
        }
        #expect(take(8, 1) == 8)
        #expect(take(1, 2) == 0)
        addresses.giveInFlight("10.1.1.1", 1)
        // A place is free, but connection 2 waits for it: connection 3 takes none and waits too.
        #expect(take(1, 3) == 0)
        #expect(woken.withLock { $0 }.isEmpty)
        // At three quarters (6), both wake, and the room is there for them.
        addresses.giveInFlight("10.1.1.1", 1)
        #expect(woken.withLock { $0 }.sorted() == [2, 3])
        #expect(take(2, 2) == 2)
        // Another address was never held back.
        #expect(addresses.takeInFlight("10.1.1.2", 8, key: 4) {} == 8)
    }
}
