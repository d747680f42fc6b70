import Bus
import Foundation
import ServiceKit
import Synchronization
import TestSupport
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// CURVE on the bus: servers admit only the client keys their `ZAPAuthenticator` lists, on
/// request and event sockets alike, and refuse everyone when no handler runs.
@Suite struct CurveTests {
    let serverKeys = try! CurveKeyPair.generate()
    let member = try! CurveKeyPair.generate()
    let stranger = try! CurveKeyPair.generate()

    func curveServer(_ context: ZMQContext) throws -> RPCServer<String> {
        var options = RPCServerOptions()
        options.curveSecretKey = serverKeys.secretKey
        return try makeServer(context, options: options)
    }

    func client(_ context: ZMQContext, _ server: RPCServer<String>, _ pair: CurveKeyPair?, serverKey: [UInt8]? = nil) throws -> RPCClient {
        var options = RPCClientOptions()
        options.curve = pair.map { CurveClientKeys($0, serverKey: serverKey ?? serverKeys.publicKey) }
        return try RPCClient(context: context, endpoints: server.endpoints, options: options, logger: logger)
    }

    /// Whether `client` gets an answer within `milliseconds`.
    func answers(_ client: RPCClient, milliseconds: Int = 700) -> Bool {
        (try? client.call("test.sum", Sum(a: 1, b: 2), as: Int.self, timeoutMilliseconds: milliseconds)) == 3
    }

    @Test func onlyListedClientKeysAreAnswered() throws {
        #expect(ZMQContext.has("curve"))
        let context = try ZMQContext()
        let log = Locked<[String]>([])
        let zap = try ZAPAuthenticator(context: context, allowed: [member.publicKey],
                                       logger: Logger(component: "zap-test", level: .info) { line in log.withLock { $0.append(line) } })
        let server = try curveServer(context)
        #expect(answers(try client(context, server, member), milliseconds: 5_000))
        // A client with a key of its own that nobody listed: libzmq alone would admit it.
        #expect(!answers(try client(context, server, stranger)))
        // A plain client, and one that expects another server key, do not even get that far.
        #expect(!answers(try client(context, server, nil)))
        #expect(!answers(try client(context, server, member, serverKey: stranger.publicKey)))
        #expect(zap.decisions.admitted >= 1)
        #expect(zap.decisions.refused >= 1)
        // The refusal is logged with the peer's address and public key, never a secret.
        let lines = log.withLock { $0 }.filter { $0.contains("client key not allowed") }
        let strangerKey = try CurveKeyPair.z85(stranger.publicKey)
        #expect(lines.contains { $0.contains("address=127.0.0.1") && $0.contains(strangerKey) })
        let secrets = try [stranger, member, serverKeys].map { try CurveKeyPair.z85($0.secretKey) }
        #expect(!lines.contains { line in secrets.contains { line.contains($0) } })
    }

    @Test func withoutAHandlerEveryClientIsRefused() throws {
        // libzmq without a ZAP handler admits any client key; our servers enforce the domain instead.
        let context = try ZMQContext()
        let server = try curveServer(context)
        #expect(!answers(try client(context, server, member)))
        #expect(!answers(try client(context, server, stranger)))
    }

    @Test func aRotatedClientKeyIsAdmittedBesideTheOldOne() throws {
        let context = try ZMQContext()
        let next = try CurveKeyPair.generate()
        let zap = try ZAPAuthenticator(context: context, allowed: [member.publicKey, next.publicKey], logger: logger)
        let server = try curveServer(context)
        #expect(answers(try client(context, server, member), milliseconds: 5_000))
        #expect(answers(try client(context, server, next), milliseconds: 5_000))
        #expect(zap.decisions.refused == 0)
    }

    @Test func allowReplacesTheListForNewConnections() throws {
        let context = try ZMQContext()
        let next = try CurveKeyPair.generate()
        let zap = try ZAPAuthenticator(context: context, allowed: [member.publicKey], logger: logger)
        let server = try curveServer(context)
        let admitted = try client(context, server, member)
        #expect(answers(admitted, milliseconds: 5_000))
        #expect(!answers(try client(context, server, next)))
        zap.allow([next.publicKey])
        #expect(answers(try client(context, server, next), milliseconds: 5_000))
        #expect(!answers(try client(context, server, member)))
        // A connection admitted before keeps working.
        #expect(answers(admitted, milliseconds: 5_000))
    }

    @Test func aSubscriberWithAnUnlistedKeyHearsNothing() throws {
        let context = try ZMQContext()
        let zap = try ZAPAuthenticator(context: context, allowed: [member.publicKey], logger: logger)
        let publisher = try Socket(context, .pub)
        try publisher.setCurveServer(secretKey: serverKeys.secretKey)
        let endpoint = try publisher.bind("tcp://127.0.0.1:0")
        func subscriber(_ pair: CurveKeyPair) throws -> Socket {
            let socket = try Socket(context, .sub)
            try socket.setCurveClient(CurveClientKeys(pair, serverKey: serverKeys.publicKey))
            try socket.subscribe("")
            try socket.setReceiveTimeout(milliseconds: 20)
            try socket.connect(endpoint)
            return socket
        }
        let listed = try subscriber(member), unlisted = try subscriber(stranger)
        var heard = (listed: 0, unlisted: 0)
        // Publish for up to 3 s; the listed subscriber hears within it, the other never.
        let deadline = monotonicNanos() + 3_000_000_000
        while monotonicNanos() < deadline && heard.listed < 20 {
            try publisher.send(Data("tick".utf8))
            if try listed.receive() != nil { heard.listed += 1 }
            if try unlisted.receive() != nil { heard.unlisted += 1 }
        }
        for _ in 0..<10 where try unlisted.receive() != nil { heard.unlisted += 1 }
        #expect(heard.listed == 20)
        #expect(heard.unlisted == 0)
        #expect(zap.decisions.refused >= 1)
    }

    @Test func keyFilesRoundTripAndMustBePrivate() throws {
        let folder = TemporaryFolder("keys")
        let path = folder.path + "/catalog.key"
        let pair = try CurveKeyPair.generate()
        try pair.write(keyFile: path, name: "catalog")
        #expect(try CurveKeyPair(keyFile: path) == pair)
        var info = stat()
        #expect(stat(path, &info) == 0 && info.st_mode & 0o777 == 0o600)
        // Never over an existing file.
        #expect(throws: CurveKeyFileError.self) { try CurveKeyPair.generate().write(keyFile: path, name: "catalog") }
        #expect(try CurveKeyPair(keyFile: path) == pair)

        chmod(path, 0o644)
        let loose = #expect(throws: CurveKeyFileError.self) { _ = try CurveKeyPair(keyFile: path) }
        #expect(loose?.message.contains("mode 644") == true)
        #expect(loose?.message.contains("chmod 600") == true)
        chmod(path, 0o400)
        #expect(try CurveKeyPair(keyFile: path) == pair)

        // A public line that does not match the secret one, garbage, and a missing file.
        let other = try CurveKeyPair.generate()
        let mixed = folder.path + "/mixed.key"
        _ = FileManager.default.createFile(atPath: mixed, contents: Data("public: \(try CurveKeyPair.z85(other.publicKey))\nsecret: \(try CurveKeyPair.z85(pair.secretKey))\n".utf8),
                                           attributes: [.posixPermissions: 0o600])
        #expect(throws: CurveKeyFileError.self) { _ = try CurveKeyPair(keyFile: mixed) }
        let garbage = folder.path + "/garbage.key"
        _ = FileManager.default.createFile(atPath: garbage, contents: Data(repeating: 0x41, count: 10_000), attributes: [.posixPermissions: 0o600])
        #expect(throws: CurveKeyFileError.self) { _ = try CurveKeyPair(keyFile: garbage) }
        #expect(throws: CurveKeyFileError.self) { _ = try CurveKeyPair(keyFile: folder.path + "/missing.key") }
    }
}
