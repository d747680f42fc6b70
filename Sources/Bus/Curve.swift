import CZeroMQ
import Foundation
import KeyFiles
import Synchronization

#if canImport(Glibc)
    import Glibc
#endif

/// A CURVE key pair (32 raw bytes each), as libzmq generates them.
public struct CurveKeyPair: Sendable, Equatable {
    public let publicKey: [UInt8]
    public let secretKey: [UInt8]

    /// A new random key pair (needs libzmq built with libsodium, as Debian's is).
    public static func generate() throws(ZMQError) -> CurveKeyPair {
        var publicText = [CChar](repeating: 0, count: 41)
        var secretText = [CChar](repeating: 0, count: 41)
        guard zmq_curve_keypair(&publicText, &secretText) == 0 else { throw ZMQError("zmq_curve_keypair") }
        return CurveKeyPair(publicKey: try z85Decode(publicText), secretKey: try z85Decode(secretText))
    }

    /// The pair whose secret half is `secretKey`: the public half is derived from it.
    public init(secretKey: [UInt8]) throws(ZMQError) {
        guard secretKey.count == 32 else { throw ZMQError("zmq_curve_public", errno: EINVAL) }
        var publicText = [CChar](repeating: 0, count: 41)
        let secretText = Array(try Self.z85(secretKey).utf8CString)
        guard zmq_curve_public(&publicText, secretText) == 0 else { throw ZMQError("zmq_curve_public") }
        self.init(publicKey: try Self.z85Decode(publicText), secretKey: secretKey)
    }

    private init(publicKey: [UInt8], secretKey: [UInt8]) {
        self.publicKey = publicKey
        self.secretKey = secretKey
    }

    /// The Z85 text form of a 32-byte key (40 characters), as key files and configs carry it.
    public static func z85(_ key: [UInt8]) throws(ZMQError) -> String {
        guard key.count == 32 else { throw ZMQError("zmq_z85_encode", errno: EINVAL) }
        var text = [CChar](repeating: 0, count: 41)
        guard key.withUnsafeBufferPointer({ zmq_z85_encode(&text, $0.baseAddress, 32) }) != nil else {
            throw ZMQError("zmq_z85_encode")
        }
        return String(decoding: text.prefix(40).map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    /// Decodes a 40-character Z85 key into 32 bytes.
    public static func key(z85 text: String) throws(ZMQError) -> [UInt8] {
        guard text.utf8.count == 40 else { throw ZMQError("zmq_z85_decode", errno: EINVAL) }
        return try z85Decode(Array(text.utf8CString))
    }

    private static func z85Decode(_ text: [CChar]) throws(ZMQError) -> [UInt8] {
        var key = [UInt8](repeating: 0, count: 32)
        guard zmq_z85_decode(&key, text) != nil else { throw ZMQError("zmq_z85_decode", errno: EINVAL) }
        return key
    }
}

/// A key file that cannot be used, and why.
public struct CurveKeyFileError: Error, Sendable, CustomStringConvertible {
    public let message: String
    public var description: String { message }
}

/// Key files: what `tourbus keys` writes and every process reads, two lines of Z85
/// (`public: …`, `secret: …`) and `#` comments, readable by their owner only.
extension CurveKeyPair {
    /// Reads a key file, refusing one that others than its owner may read or write.
    public init(keyFile path: String) throws(CurveKeyFileError) {
        func failure(_ why: String) -> CurveKeyFileError { CurveKeyFileError(message: "CURVE key file \(path): \(why)") }
        let publicText: String?
        let secretText: String?
        do {
            (publicText, secretText) = try SecretKeyFile.read(path, lines: "'public: KEY' and 'secret: KEY' lines")
        } catch {
            throw failure(error.why)
        }
        guard let secretText, let secret = try? Self.key(z85: secretText), let pair = try? CurveKeyPair(secretKey: secret) else {
            throw failure("no 'secret:' line with a 40-character Z85 key")
        }
        if let publicText, (try? Self.key(z85: publicText)) != pair.publicKey {
            throw failure("its public key is not the one its secret key gives")
        }
        self = pair
    }

    /// Writes this pair as a new key file of `name`, mode 0600; an existing file is never overwritten.
    public func write(keyFile path: String, name: String) throws(CurveKeyFileError) {
        guard let publicText = try? Self.z85(publicKey), let secretText = try? Self.z85(secretKey) else {
            throw CurveKeyFileError(message: "CURVE key file \(path): a key is not 32 bytes")
        }
        do {
            try SecretKeyFile.create(
                path, comment: "Tourbus CURVE key of \(name) (tourbus keys). The secret line is a secret: keep this file mode 0600.",
                publicText: publicText, secretText: secretText)
        } catch {
            throw CurveKeyFileError(message: "CURVE key file \(path): \(error.why)")
        }
    }
}

/// Keys that make a client's link to a CURVE server encrypted and authenticated (32 raw bytes each).
public struct CurveClientKeys: Sendable, Equatable {
    public var publicKey: [UInt8]
    public var secretKey: [UInt8]
    public var serverKey: [UInt8]

    public init(publicKey: [UInt8], secretKey: [UInt8], serverKey: [UInt8]) {
        self.publicKey = publicKey
        self.secretKey = secretKey
        self.serverKey = serverKey
    }

    /// A client of the server with `serverKey`, signing with `pair`.
    public init(_ pair: CurveKeyPair, serverKey: [UInt8]) {
        self.init(publicKey: pair.publicKey, secretKey: pair.secretKey, serverKey: serverKey)
    }
}

/// The ZAP handler (ZeroMQ RFC 27) of one context: every CURVE server socket of the context
/// asks it whether a connecting client's public key may in, and it admits only the keys it
/// was given.
///
/// Without a handler libzmq admits every client key, so a CURVE server would encrypt for
/// anyone; our server sockets also set `ZMQ_ZAP_ENFORCE_DOMAIN`, so if this handler is not
/// running they refuse every client rather than admit them all. Start it before binding a
/// CURVE server on the context, keep it until the context's sockets are closed.
public final class ZAPAuthenticator: Sendable {
    /// The ZAP domain of the bus's sockets, whose clients are the keys `allowed` lists.
    public static let busDomain = "tourbus"
    /// The endpoint libzmq sends ZAP requests to, one per context.
    static let endpoint = "inproc://zeromq.zap.01"
    /// At most this many refusals are logged a second; the rest are counted, and the next line says how many.
    static let refusalsLoggedPerSecond = 10

    private struct Counts {
        var admitted = 0
        var refused = 0
        var unlogged = 0
        var logSecond: UInt64 = 0
        var loggedThisSecond = 0
    }
    /// What the handler's thread and its owner share.
    private final class Shared: Sendable {
        let counts = Mutex(Counts())
        /// Admitted keys by ZAP domain.
        let allowed: Mutex<[String: Set<Data>]>
        init(_ allowed: [String: Set<Data>]) { self.allowed = Mutex(allowed) }
    }

    /// The keys admitted by ZAP domain: `keys` to the bus's, and each of `domains` its own.
    private static func admitted(_ keys: [[UInt8]], _ domains: [String: [[UInt8]]]) -> [String: Set<Data>] {
        domains.merging([busDomain: keys]) { _, bus in bus }.mapValues { Set($0.map { Data($0) }) }
    }

    private let shared: Shared
    private let stopping = StopFlag()
    private let thread: WorkerThread

    /// Binds the handler on `context` and starts answering; `allowed` are 32-byte public keys
    /// admitted to the bus's sockets, `domains` those admitted to sockets of other ZAP domains
    /// (a replicated service's Raft port admits only its own replicas' key).
    public init(context: ZMQContext, allowed: [[UInt8]], domains: [String: [[UInt8]]] = [:], logger: Logger) throws {
        let shared = Shared(Self.admitted(allowed, domains))
        self.shared = shared
        let startup = StartupReport()
        let stopping = self.stopping
        thread = WorkerThread(name: "\(logger.component)-zap") {
            let socket: Socket
            do {
                socket = try Socket(context, .rep)
                try socket.bind(Self.endpoint)
                try socket.setReceiveTimeout(milliseconds: 100)
            } catch {
                startup.failed(error)
                return
            }
            startup.succeeded(nil)
            while !stopping.isSet {
                let frames: [Data]
                do throws(ZMQError) {
                    guard let received = try socket.receive() else { continue }
                    frames = received
                } catch {
                    if error.isTerminated { return }
                    logger.error("ZAP handler cannot receive; CURVE clients are refused until restart", ["error": error])
                    return
                }
                let request = Request(frames: frames)
                let admit =
                    request.mechanism == "CURVE" && request.credentials.count == 32
                    && shared.allowed.withLock { $0[request.domain]?.contains(request.credentials) == true }
                Self.note(admit: admit, request: request, shared: shared, logger: logger)
                let reply: [Data] = [
                    Data("1.0".utf8), request.id, Data((admit ? "200" : "400").utf8),
                    Data((admit ? "OK" : "key not allowed").utf8), Data(), Data(),
                ]
                do throws(ZMQError) { try socket.send(reply) } catch {
                    if error.isTerminated { return }
                    logger.warn("ZAP reply not sent", ["error": error])
                }
            }
        }
        if case .failure(let error) = startup.wait() {
            stopping.set()
            thread.join()
            throw error
        }
    }

    deinit { stop() }

    /// Stops answering (the handler's socket closes; CURVE clients connecting later are refused).
    public func stop() {
        stopping.set()
        thread.join()
    }

    /// Admits these keys from now on, in place of those given before (connections already
    /// admitted stay), to the bus and to each of `domains`. A rotation lists a client's old and
    /// new key here at once.
    public func allow(_ keys: [[UInt8]], domains: [String: [[UInt8]]] = [:]) {
        let sets = Self.admitted(keys, domains)
        shared.allowed.withLock { $0 = sets }
    }

    /// Handshakes admitted and refused so far.
    public var decisions: (admitted: Int, refused: Int) { shared.counts.withLock { ($0.admitted, $0.refused) } }

    /// One ZAP request's frames: version, request id, domain, address, routing id, mechanism, credentials.
    private struct Request {
        var id = Data()
        var domain = ""
        var address = ""
        var mechanism = ""
        var credentials = Data()
        init(frames: [Data]) {
            if frames.count > 1 { id = frames[1] }
            if frames.count > 2 { domain = String(decoding: frames[2].prefix(64), as: UTF8.self) }
            if frames.count > 3 { address = String(decoding: frames[3].prefix(64), as: UTF8.self) }
            if frames.count > 5 { mechanism = String(decoding: frames[5].prefix(16), as: UTF8.self) }
            if frames.count > 6 { credentials = frames[6] }
        }
    }

    private static func note(admit: Bool, request: Request, shared: Shared, logger: Logger) {
        let second = monotonicNanos() / 1_000_000_000
        let unlogged: Int? = shared.counts.withLock { c -> Int? in
            if admit {
                c.admitted += 1
                return nil
            }
            c.refused += 1
            if c.logSecond != second {
                c.logSecond = second
                c.loggedThisSecond = 0
            }
            guard c.loggedThisSecond < refusalsLoggedPerSecond else {
                c.unlogged += 1
                return nil
            }
            c.loggedThisSecond += 1
            defer { c.unlogged = 0 }
            return c.unlogged
        }
        guard let unlogged else { return }
        let key = request.credentials.count == 32 ? ((try? CurveKeyPair.z85(Array(request.credentials))) ?? "?") : "-"
        logger.warn(
            "bus connection refused: client key not allowed",
            ["address": request.address, "mechanism": request.mechanism, "client_key": key, "not_logged_before": unlogged])
    }
}
