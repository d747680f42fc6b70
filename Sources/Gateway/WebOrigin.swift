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

    /// Whether a page of `origin` may call the gateway reached as `host`: an allowed origin's,
    /// or the gateway's own when `host` is an address or `localhost`. A page whose origin is a
    /// name is allowed only by name: a name can be pointed at the gateway by anyone who owns it
    /// (DNS rebinding), and its page would then be "the gateway's own".
    static func allowed(_ origin: String, host: String?, allowed: Set<String>) -> Bool {
        let origin = origin.lowercased()
        if allowed.contains(origin) { return true }
        guard let host = host?.lowercased(), !host.isEmpty, bindsNoName(host) else { return false }
        return origin == "http://" + host || origin == "https://" + host
    }

    /// Whether `host` (a `Host` header's value) is an IP address or localhost, with or without a port.
    static func bindsNoName(_ host: String) -> Bool {
        var name = host[...]
        if name.hasPrefix("["), let close = name.firstIndex(of: "]") {
            name = name[name.index(after: name.startIndex)..<close]
            return Network.bytes(of: String(name)) != nil
        }
        if let colon = name.lastIndex(of: ":") { name = name[..<colon] }
        return name == "localhost" || Network.bytes(of: String(name)) != nil
    }
}
