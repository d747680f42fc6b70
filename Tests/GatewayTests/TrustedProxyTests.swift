import Bus
import Foundation
@testable import Gateway
import ServiceCore
import TestSupport
import Testing

/// The client's address behind a trusted proxy: PROXY protocol v2 and `X-Forwarded-For`,
/// taken only from a trusted peer.
@Suite struct TrustedProxyTests {
    static let proxies = ProxyTrust(["10.0.0.0/8", "127.0.0.1"])

    static func proxyHeader(_ command: UInt8 = 1, family: UInt8 = 0x11, addresses: [UInt8], tlvs: [UInt8] = []) -> [UInt8] {
        let length = addresses.count + tlvs.count
        return ProxyProtocol.signature + [0x20 | command, family, UInt8(length >> 8), UInt8(length & 0xFF)] + addresses + tlvs
    }

    /// A v2 header naming 198.51.100.7:5000 → 10.0.0.1:7700.
    static let ipv4Header = proxyHeader(addresses: [198, 51, 100, 7, 10, 0, 0, 1, 0x13, 0x88, 0x1E, 0x14], tlvs: [0x04, 0x00, 0x01, 0x00])

    @Test func theHeaderIsReadStrictly() {
        #expect(ProxyProtocol.header(TrustedProxyTests.ipv4Header[...]) == .proxied(source: Network.bytes(of: "198.51.100.7")!, length: 32))
        #expect(ProxyProtocol.header(TrustedProxyTests.ipv4Header.prefix(20)) == .incomplete)
        #expect(ProxyProtocol.header(ProxyProtocol.signature.prefix(5)) == .incomplete)
        #expect(ProxyProtocol.header(Array(#"{"jsonrpc":"2.0"}"#.utf8)[...]) == .absent)
        #expect(ProxyProtocol.header(Array("\r\n\r\nPING\r\n".utf8)[...]) == .absent)
        let six = Network.bytes(of: "2001:db8::1")!
        #expect(ProxyProtocol.header(TrustedProxyTests.proxyHeader(family: 0x21, addresses: six + six + [0, 1, 0, 2])[...]) == .proxied(source: six, length: 52))
        #expect(ProxyProtocol.header(TrustedProxyTests.proxyHeader(0, family: 0, addresses: [])[...]) == .local(length: 16))
        if case .invalid = ProxyProtocol.header((ProxyProtocol.signature + [0x11, 0x11, 0, 12] + Array(repeating: 0, count: 12))[...]) {} else { Issue.record("version 1 in a v2 header") }
        if case .invalid = ProxyProtocol.header(TrustedProxyTests.proxyHeader(addresses: [1, 2, 3])[...]) {} else { Issue.record("short addresses") }
        if case .invalid = ProxyProtocol.header((ProxyProtocol.signature + [0x21, 0x11, 0xFF, 0xFF])[...]) {} else { Issue.record("a 64 KiB header") }
        if case .invalid = ProxyProtocol.header(TrustedProxyTests.proxyHeader(5, addresses: [])[...]) {} else { Issue.record("command 5") }
    }

    @Test func theForwardedClientIsTheRightmostUntrustedAddress() {
        let trust = TrustedProxyTests.proxies
        #expect(trust.client(forwardedFor: "203.0.113.9") == "203.0.113.9")
        // A client may send its own header: the proxy appends the address it heard from, which wins.
        #expect(trust.client(forwardedFor: "1.1.1.1, 203.0.113.9") == "203.0.113.9")
        #expect(trust.client(forwardedFor: "198.51.100.1, 203.0.113.9, 10.1.2.3") == "203.0.113.9")
        #expect(trust.client(forwardedFor: "10.9.9.9, 10.1.2.3") == "10.9.9.9")
        #expect(trust.client(forwardedFor: "2001:db8:1:2:3:4:5:6") == "2001:db8:1:2::/64")
        #expect(trust.client(forwardedFor: "::ffff:198.51.100.4") == "198.51.100.4")
        #expect(trust.client(forwardedFor: "") == nil)
        #expect(trust.client(forwardedFor: "unknown") == nil)
        #expect(trust.client(forwardedFor: "203.0.113.9, not-an-address") == nil)
        #expect(trust.trusts(Network.bytes(of: "127.0.0.1")!) && !trust.trusts(Network.bytes(of: "127.0.0.2")!))
    }

    static func post(_ forwardedFor: String?) -> String {
        HTTPFramingTests.post(#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#, headers: forwardedFor.map { ["X-Forwarded-For: \($0)"] } ?? [])
    }

    @Test func aForgedHeaderFromAnUntrustedPeerIsIgnored() {
        let harness = SessionHarness(address: "192.0.2.50")
        for forged in ["203.0.113.9", "10.0.0.1", "127.0.0.1"] { _ = harness.send(TrustedProxyTests.post(forged)) }
        #expect(harness.clients.withLock { $0 } == ["192.0.2.50", "192.0.2.50", "192.0.2.50"])
        #expect(harness.moves.withLock { $0 }.isEmpty)
        // Nor does a PROXY header from it name anyone: it is bytes of the stream.
        let proxied = SessionHarness(address: "192.0.2.50")
        _ = proxied.send(TrustedProxyTests.ipv4Header + Array("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}\n".utf8))
        #expect(proxied.moves.withLock { $0 }.isEmpty)
        #expect(proxied.clients.withLock { $0 }.allSatisfy { $0 == "192.0.2.50" })
    }

    @Test func aTrustedProxysForwardedClientIsCountedPerRequest() {
        let charged = Locked<[String]>([])
        let harness = SessionHarness(charge: { address, _ in
            charged.withLock { $0.append(address) }
            return 0
        }, address: "10.0.0.1", proxy: TrustedProxyTests.proxies)
        _ = harness.send(TrustedProxyTests.post("1.1.1.1, 203.0.113.9"))
        harness.advance(milliseconds: 20)
        _ = harness.send(TrustedProxyTests.post("198.51.100.4"))
        harness.advance(milliseconds: 20)
        _ = harness.send(TrustedProxyTests.post(nil))
        #expect(harness.clients.withLock { $0 } == ["203.0.113.9", "198.51.100.4", "10.0.0.1"])
        #expect(harness.moves.withLock { $0.map(\.to) } == ["203.0.113.9", "198.51.100.4", "10.0.0.1"])
        #expect(charged.withLock { $0 } == ["203.0.113.9", "198.51.100.4", "10.0.0.1"], "each request's rate is its client's")
        #expect(harness.session.address == "10.0.0.1")
    }

    @Test func aWebSocketBehindAProxyIsItsClients() throws {
        let harness = SessionHarness(address: "10.0.0.1", proxy: TrustedProxyTests.proxies)
        let upgrade = WebSocketFramingTests.upgrade.replacingOccurrences(of: "Host: t\r\n", with: "Host: t\r\nX-Forwarded-For: 203.0.113.9\r\n")
        #expect(harness.send(upgrade).hasPrefix("HTTP/1.1 101"))
        _ = WebSocketFramingTests.exchange(harness, WebSocketFramingTests.text(#"{"jsonrpc":"2.0","id":1,"method":"catalog.get","params":{}}"#))
        #expect(harness.clients.withLock { $0 } == ["203.0.113.9"])
        #expect(harness.session.address == "203.0.113.9", "the connection is counted under its client until it closes")
    }

    @Test func aClientOverItsShareIsToldSoAndTheConnectionCloses() {
        let harness = SessionHarness(address: "10.0.0.1", proxy: TrustedProxyTests.proxies, refuse: ["203.0.113.9"])
        let all = HTTPFramingTests.responses(harness.send(TrustedProxyTests.post("203.0.113.9")))
        #expect(all.count == 1)
        #expect(RPCErrorCode(all.first?.body) == "unavailable")
        #expect(harness.clients.withLock { $0 }.isEmpty, "no call ran")
        #expect(harness.session.isFinished)
    }

    @Test func aProxyHeaderNamesTheConnectionsClient() {
        let harness = SessionHarness(address: "127.0.0.1", proxy: TrustedProxyTests.proxies)
        // In pieces, as TCP may deliver it.
        let bytes = TrustedProxyTests.ipv4Header + Array("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}\n".utf8)
        var out = ""
        for piece in stride(from: 0, to: bytes.count, by: 7) { out += harness.send(Array(bytes[piece..<min(bytes.count, piece + 7)])) }
        #expect(out == "{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":\"pong\"}\n")
        #expect(harness.session.address == "198.51.100.7")
        #expect(harness.moves.withLock { $0.map(\.to) } == ["198.51.100.7"])

        let local = SessionHarness(address: "127.0.0.1", proxy: TrustedProxyTests.proxies)
        _ = local.send(TrustedProxyTests.proxyHeader(0, family: 0, addresses: []) + Array("PING\r\n".utf8))
        #expect(local.session.address == "127.0.0.1", "LOCAL: the proxy's own connection")

        let broken = SessionHarness(address: "127.0.0.1", proxy: TrustedProxyTests.proxies)
        #expect(broken.send(ProxyProtocol.signature + [0x21, 0x11, 0xFF, 0xFF]).isEmpty)
        #expect(broken.session.isFinished, "a header that is not one closes the connection")

        let refused = SessionHarness(address: "127.0.0.1", proxy: TrustedProxyTests.proxies, refuse: ["198.51.100.7"])
        _ = refused.send(TrustedProxyTests.ipv4Header)
        #expect(refused.session.isFinished, "a client over its share of connections is not served")
    }
}

/// The `error.data.code` of a JSON-RPC response.
func RPCErrorCode(_ text: String?) -> String? {
    guard let text, let object = try? JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any] else { return nil }
    return ((object["error"] as? [String: Any])?["data"] as? [String: Any])?["code"] as? String
}

@Suite struct TrustedProxyCountingTests {
    @Test func pipelinedRequestsOfTwoClientsAreCountedApart() {
        let harness = SessionHarness(address: "10.0.0.1", proxy: TrustedProxyTests.proxies)
        let out = harness.send(TrustedProxyTests.post("203.0.113.1") + TrustedProxyTests.post("203.0.113.2") + TrustedProxyTests.post("203.0.113.2"))
        var all = HTTPFramingTests.responses(out)
        for _ in 0..<10 where all.count < 3 { all += HTTPFramingTests.responses(harness.drain()) }
        #expect(all.count == 3)
        #expect(harness.clients.withLock { $0 } == ["203.0.113.1", "203.0.113.2", "203.0.113.2"])
    }

    @Test func aProxyHeadersClientStaysWhenARequestNamesNone() {
        let harness = SessionHarness(address: "127.0.0.1", proxy: TrustedProxyTests.proxies)
        _ = harness.send(TrustedProxyTests.ipv4Header + Array(TrustedProxyTests.post(nil).utf8))
        #expect(harness.clients.withLock { $0 } == ["198.51.100.7"])
        #expect(harness.session.address == "198.51.100.7")
    }

    @Test func movingBackToTheProxysOwnAddressIsNeverRefused() {
        // The proxy's own address holds its share (as at accept, it is not refused for it).
        let harness = SessionHarness(address: "10.0.0.1", proxy: TrustedProxyTests.proxies, refuse: ["10.0.0.1"])
        _ = harness.send(TrustedProxyTests.post("203.0.113.9"))
        let all = HTTPFramingTests.responses(harness.send(TrustedProxyTests.post(nil)))
        #expect(all.map(\.status) == [200])
        #expect(harness.session.address == "10.0.0.1" && !harness.session.isFinished)
    }

    @Test func aClientOverItsShareGetsNoHandshake() {
        let harness = SessionHarness(address: "10.0.0.1", proxy: TrustedProxyTests.proxies, refuse: ["203.0.113.9"])
        let upgrade = WebSocketFramingTests.upgrade.replacingOccurrences(of: "Host: t\r\n", with: "Host: t\r\nX-Forwarded-For: 203.0.113.9\r\n")
        #expect(!harness.send(upgrade).contains("101"))
        #expect(harness.session.isFinished)
    }
}
