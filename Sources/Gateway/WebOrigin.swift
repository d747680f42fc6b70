import Glibc
import ServiceCore

/// Which web pages may call the gateway from a browser: its own (the origin its `Host` names)
/// and the origins it is told to allow. Browsers set `Origin` and `Host` themselves, so a page
/// cannot claim another's; a program can, but it has no user's browser to borrow.
enum WebOrigin {
    /// `origin` as compared: `scheme://host[:port]` in lower case, http or https, nothing after.
    static func normalized(_ origin: String) throws(ConfigError) -> String {
        let lowered = origin.lowercased()
        let scheme = ["http://", "https://"].first { lowered.hasPrefix($0) }
        let authority = scheme.map { lowered.dropFirst($0.count) } ?? ""
        guard scheme != nil, !authority.isEmpty, !authority.contains(where: { "/?#@* \t".contains($0) }) else {
            throw ConfigError("allowed origin '\(origin)' is not scheme://host[:port] with http or https and nothing after (https://guide.example.org)")
        }
        return lowered
    }

    /// Whether a page of `origin` may call the gateway reached as `host`.
    static func allowed(_ origin: String, host: String?, allowed: Set<String>) -> Bool {
        let origin = origin.lowercased()
        if allowed.contains(origin) { return true }
        guard let host = host?.lowercased(), !host.isEmpty else { return false }
        return origin == "http://" + host || origin == "https://" + host
    }
}

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
