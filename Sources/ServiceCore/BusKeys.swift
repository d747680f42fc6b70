import Bus
import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// This process's CURVE identity on the bus and whom it trusts: its own key pair (from its
/// key file) and the public keys the suite file lists under `curve.keys`, by process name.
///
/// With keys, every link is CURVE: a service's request and event sockets are CURVE servers
/// that admit only listed keys (`ZAPAuthenticator`), and every client pins the key its peer
/// lists first. Without them (no `curve` in the file, no key file), links are plain TCP, for
/// one trusted host. See Protocols/configuration.md, *CURVE*.
public struct BusKeys: Sendable, Equatable {
    /// The key file this process's pair came from.
    public let keyFile: String
    /// This process's own pair.
    public let pair: CurveKeyPair
    /// Every key the suite lists, old and new: the client keys a server admits.
    public let allowed: [[UInt8]]
    /// Each process's key as a server: the first it lists.
    let serverKeys: [String: [UInt8]]
    /// The keys listed under this process's own name: its replicas' (a replicated service's
    /// Raft port admits only these).
    public let own: [[UInt8]]

    /// The keys a client of `peer` connects with, or nil when `peer` lists none (it is then
    /// not a suite member; loading refused that for every configured peer).
    public func client(of peer: String) -> CurveClientKeys? {
        serverKeys[peer].map { CurveClientKeys(pair, serverKey: $0) }
    }

    /// The keys of a client of this process itself (a service's periodic requests).
    public var clientOfSelf: CurveClientKeys { CurveClientKeys(pair, serverKey: pair.publicKey) }

    /// The keys of process `name`: its key file and the suite's `curve.keys`, both or neither.
    /// A service (`serves`) must hold the key its name lists first, which its clients pin;
    /// any process's key must be listed under its name; every peer must list a key.
    static func load(
        name: String, keyFile: String?, listed: [String: [String]]?, filePath: String?,
        peers: [String], serves: Bool
    ) throws(ConfigError) -> BusKeys? {
        guard let listed else {
            if let keyFile {
                throw ConfigError("a CURVE key file (\(keyFile)) needs the suite file's curve.keys: the public keys to admit and each peer's")
            }
            return nil
        }
        let origin = "config file \(filePath ?? "?")"
        guard let keyFile else {
            throw ConfigError("\(origin) sets curve.keys, so \(name) needs its key file: --curve-key FILE, TOURBUS_CURVE_KEY or services.\(name).curve_key")
        }
        var keysOf: [String: [[UInt8]]] = [:]
        for (process, keys) in listed.sorted(by: { $0.key < $1.key }) {
            guard !keys.isEmpty else { throw ConfigError("\(origin): curve.keys.\(process) lists no key") }
            for text in keys {
                guard let key = try? CurveKeyPair.key(z85: text) else {
                    throw ConfigError("\(origin): curve.keys.\(process): '\(text.prefix(60))' is not a 40-character Z85 public key")
                }
                keysOf[process, default: []].append(key)
            }
        }
        let serverKeys = keysOf.compactMapValues(\.first)
        let allowed = keysOf.sorted { $0.key < $1.key }.flatMap(\.value)
        let pair: CurveKeyPair
        do { pair = try CurveKeyPair(keyFile: keyFile) } catch { throw ConfigError(error.message) }
        let own = (try? CurveKeyPair.z85(pair.publicKey)) ?? "?"
        guard let mine = listed[name], mine.contains(own) else {
            throw ConfigError("\(origin): curve.keys.\(name) does not list \(name)'s public key \(own) (from \(keyFile))")
        }
        if serves && mine.first != own {
            throw ConfigError("\(origin): curve.keys.\(name) must list \(name)'s own key \(own) first: its clients connect with the first key")
        }
        for peer in peers.sorted() where serverKeys[peer] == nil {
            throw ConfigError("\(origin): curve.keys lists no key for peer \(peer)")
        }
        return BusKeys(keyFile: keyFile, pair: pair, allowed: allowed, serverKeys: serverKeys, own: keysOf[name] ?? [])
    }
}
