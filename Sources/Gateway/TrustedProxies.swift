import Glibc
import ServiceCore

/// An IP network, or one address (a network of one), as the gateway matches a peer against
/// its trusted proxies: an IPv4 network as its IPv4-mapped IPv6 one.
struct Network: Equatable, Sendable {
    /// The network's address, 16 bytes.
    let address: [UInt8]
    /// Leading bits that must match, 0 to 128.
    let prefix: Int

    /// `10.0.0.0/8`, `192.0.2.7`, `fd00::/8`, `::1`; nil for anything else.
    init?(_ text: String) {
        let parts = text.split(separator: "/", maxSplits: 1, omittingEmptySubsequences: false)
        guard let address = Network.bytes(of: String(parts[0])) else { return nil }
        let widest = parts[0].contains(":") ? 128 : 32
        var prefix = widest
        if parts.count == 2 {
            guard !parts[1].isEmpty, parts[1].allSatisfy(\.isASCII), parts[1].allSatisfy(\.isNumber), let bits = Int(parts[1]), bits <= widest else { return nil }
            prefix = bits
        }
        self.address = address
        self.prefix = prefix + 128 - widest
    }

    /// An address's 16 bytes (an IPv4 one mapped), or nil when `text` is not one.
    static func bytes(of text: String) -> [UInt8]? {
        var six = in6_addr()
        if inet_pton(AF_INET6, text, &six) == 1 { return withUnsafeBytes(of: six) { Array($0) } }
        var four = in_addr()
        guard inet_pton(AF_INET, text, &four) == 1 else { return nil }
        return Array(repeating: 0, count: 10) + [0xFF, 0xFF] + withUnsafeBytes(of: four) { Array($0) }
    }

    /// Whether `address` (16 bytes) is in the network.
    func contains(_ address: [UInt8]) -> Bool {
        guard address.count == 16 else { return false }
        for bit in stride(from: 0, to: prefix, by: 8) {
            let mask: UInt8 = prefix - bit >= 8 ? 0xFF : ~(0xFF >> UInt8(prefix - bit))
            if address[bit / 8] & mask != self.address[bit / 8] & mask { return false }
        }
        return true
    }
}

/// The proxies whose word on their clients' addresses the gateway takes (`--trusted-proxy`):
/// behind one, every client would otherwise have the proxy's address, and the per-address
/// shares (connections, request rate, logins and sign-ups, the fair queues) would see one client.
struct ProxyTrust: Sendable {
    let networks: [Network]

    /// `proxies` as the configuration checked them (addresses and networks).
    init(_ proxies: [String]) { networks = proxies.compactMap(Network.init) }

    /// Whether a peer's address (16 bytes) is a trusted proxy's.
    func trusts(_ peer: [UInt8]) -> Bool { networks.contains { $0.contains(peer) } }

    /// The client an `X-Forwarded-For` list names, as the gateway counts clients: each proxy
    /// appends the address it heard from, so it is the rightmost that is not a trusted proxy's
    /// (the leftmost when all are). Nil when an entry it must read is not an address: the
    /// header says nothing then.
    func client(forwardedFor list: String) -> String? {
        let entries = list.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }
        guard !entries.isEmpty else { return nil }
        var client: [UInt8]?
        for entry in entries.reversed() {
            guard let bytes = Network.bytes(of: entry) else { return nil }
            client = bytes
            if !trusts(bytes) { break }
        }
        return client.map(TCPSocket.clientAddress)
    }
}

/// The PROXY protocol's version 2 header (HAProxy's proxy-protocol.txt, §2.2), which a proxy
/// sends before its client's bytes: who the client is. Read only from a trusted proxy.
enum ProxyProtocol {
    static let signature: [UInt8] = [0x0D, 0x0A, 0x0D, 0x0A, 0x00, 0x0D, 0x0A, 0x51, 0x55, 0x49, 0x54, 0x0A]
    /// The longest header taken (addresses and TLVs): the protocol allows 64 KiB.
    static let maxLength = 4_096

    enum Header: Equatable {
        /// The connection does not start with the signature.
        case absent
        case incomplete
        /// A header of `length` bytes that names no client (LOCAL, or an address family other than TCP/UDP over IP).
        case local(length: Int)
        /// A header of `length` bytes naming the client's address (16 bytes, an IPv4 one mapped).
        case proxied(source: [UInt8], length: Int)
        case invalid(String)
    }

    static func header(_ input: ArraySlice<UInt8>) -> Header {
        guard input.count >= 16 else { return signature.starts(with: input.prefix(signature.count)) ? .incomplete : .absent }
        guard input.starts(with: signature) else { return .absent }
        let at = input.startIndex
        let versionCommand = input[at + 12]
        guard versionCommand >> 4 == 2 else { return .invalid("PROXY protocol version \(versionCommand >> 4); 2 only") }
        let length = Int(input[at + 14]) << 8 | Int(input[at + 15])
        guard length <= maxLength else { return .invalid("a PROXY header of \(length) bytes; at most \(maxLength)") }
        guard input.count >= 16 + length else { return .incomplete }
        switch versionCommand & 0x0F {
        case 0: return .local(length: 16 + length)
        case 1: break
        default: return .invalid("PROXY command \(versionCommand & 0x0F)")
        }
        let family = input[at + 13]
        switch family >> 4 {
        case 1:
            guard length >= 12 else { return .invalid("a PROXY header too short for its IPv4 addresses") }
            return .proxied(source: Array(repeating: 0, count: 10) + [0xFF, 0xFF] + Array(input[(at + 16)..<(at + 20)]), length: 16 + length)
        case 2:
            guard length >= 36 else { return .invalid("a PROXY header too short for its IPv6 addresses") }
            return .proxied(source: Array(input[(at + 16)..<(at + 32)]), length: 16 + length)
        default:
            return .local(length: 16 + length)
        }
    }
}
