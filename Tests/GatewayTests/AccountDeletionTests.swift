import Bus
import Contracts
import Foundation
@testable import Gateway
import ServiceCore
import ServiceKit
import SocialService
import TestSupport
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// A stand-in accounts service for `auth.delete` at the gateway: every well-formed token is
/// user 7's; `auth.delete` records the `auth`, client address and body it came with and waits
/// for `release`.
final class FakeAccounts: Sendable {
    let server: RPCServer<Void>
    /// The `auth.user_id`, the envelope's `client` and the body's keys (sorted, comma-separated)
    /// of each `auth.delete` received.
    let deletes = Locked<[(user: String?, client: String?, body: String)]>([])
    /// The envelope's `client` of each `auth.validate` received.
    let validations = Locked<[String?]>([])
    private let gate = DispatchSemaphore(value: 0)

    init(context: ZMQContext) throws {
        var table = HandlerTable<Void>()
        let deletes = self.deletes, gate = self.gate, validations = self.validations
        table.on(Methods.Auth.validate.name) { (request: TokenBody, context, _) -> TokenOwner in
            validations.withLock { $0.append(context.client) }
            return TokenOwner(userId: 7, role: "user", expiresAt: "2026-12-31T00:00:00.000Z")
        }
        table.onRaw(Authenticator.deleteAccount) { context, _ in
            let keys = try context.body([String: String].self).keys.sorted().joined(separator: ",")
            deletes.withLock { $0.append((context.auth?.userId, context.client, keys)) }
            _ = gate.wait(timeout: .now() + 5)
            return Response(body: Data(#"{"user_id":7}"#.utf8))
        }
        server = try RPCServer(context: context, bind: ["tcp://127.0.0.1:0"], table: table, logger: Logger(component: "test", level: .error)) { _ in () }
    }

    /// Lets one `auth.delete` answer.
    func release() { gate.signal() }
}

/// Polls `condition` every 10 ms for at most 5 s.
func within5s(_ condition: () -> Bool) -> Bool {
    for _ in 0..<500 {
        if condition() { return true }
        usleep(10_000)
    }
    return condition()
}

/// A blocking JSON-RPC line client of a gateway, with a 5 s receive timeout.
final class LineClient {
    let fd: Int32

    /// Connected from `source`, a loopback address (each is a client address of its own).
    init(port: UInt16, from source: String = "127.0.0.1") throws {
        fd = try LoopbackSocket.connect(port: port, from: source)
    }

    deinit { close(fd) }

    /// Sends `method` with `params` and returns the reply line, or "" when none came.
    func call(_ method: String, _ params: String = "{}") -> String {
        LoopHarness.send(fd, #"{"jsonrpc":"2.0","id":1,"method":"\#(method)","params":\#(params)}"# + "\n")
        return readLine()
    }

    /// The next line that arrives within the receive timeout, or "".
    func readLine() -> String {
        var line: [UInt8] = []
        var byte: UInt8 = 0
        while line.count < 1 << 20, recv(fd, &byte, 1, 0) == 1 {
            if byte == UInt8(ascii: "\n") { return String(decoding: line, as: UTF8.self) }
            line.append(byte)
        }
        return ""
    }
}

@Suite struct AccountDeletionAtTheGatewayTests {
    static let token = SessionToken.text(randomBytes: [UInt8](repeating: 1, count: SessionToken.randomByteCount))
    static let client = ClientKey(address: "10.0.0.1", connection: 1)

    /// A dispatcher in front of `accounts`, and what its calls answered.
    final class Harness {
        let context: ZMQContext
        let accounts: FakeAccounts
        let backends: Backends
        let authenticator: Authenticator
        let dispatcher: Dispatcher
        let answers = Locked<[(outcome: Outcome, change: SessionChange?)]>([])

        init(limits: GatewayLimits = GatewayLimits()) throws {
            context = try ZMQContext()
            accounts = try FakeAccounts(context: context)
            backends = try Backends(context: context, peers: ["social": PeerEndpoints(rpc: accounts.server.endpoints)], window: 16,
                                    logger: Logger(component: "test", level: .error), checkIntervalMilliseconds: nil)
            let addresses = ClientAddresses(limits: limits)
            authenticator = Authenticator(backends: backends, addresses: addresses, limits: limits)
            dispatcher = Dispatcher(backends: backends, authenticator: authenticator, limits: limits, connections: ConnectionCount())
        }

        deinit {
            for _ in 0..<4 { accounts.release() }
            backends.close()
            accounts.server.stop()
        }

        /// Dispatches `auth.delete` with `params`; the outcome when it came at once.
        func delete(_ params: String, token: String?) -> Outcome? {
            let answers = self.answers
            return dispatcher.dispatch(Call(method: Authenticator.deleteAccount, params: Data(params.utf8)), client: AccountDeletionAtTheGatewayTests.client,
                                       token: token) { outcome, change in answers.withLock { $0.append((outcome, change)) } }
        }
    }

    static func code(_ outcome: Outcome?) -> String? {
        if case .failure(let error)? = outcome { return error.code.rawValue }
        return nil
    }

    @Test func deletingNeedsASignedInCaller() throws {
        let h = try Harness()
        #expect(Self.code(h.delete(#"{"password":"Pw-12345"}"#, token: nil)) == "unauthenticated")
        #expect(Self.code(h.delete(#"{"password":"Pw-12345","token":5}"#, token: nil)) == "invalid_argument")
        // A token of another shape is refused before anything is asked.
        _ = h.delete(#"{"password":"Pw-12345","token":"forged"}"#, token: nil)
        #expect(within5s { h.answers.withLock { $0.count == 1 } })
        #expect(Self.code(h.answers.withLock { $0[0].outcome }) == "unauthenticated")
        usleep(50_000)
        #expect(h.accounts.deletes.withLock { $0.isEmpty })
    }

    @Test func deletingGoesWithTheCallerThroughThePasswordQueueAndSignsOut() throws {
        var limits = GatewayLimits()
        limits.loginsPerMinutePerAddress = 2
        let h = try Harness(limits: limits)
        // The connection's token; then one in the params, for that request only.
        #expect(h.delete(#"{"password":"Pw-12345"}"#, token: Self.token) == nil)
        #expect(within5s { h.accounts.deletes.withLock { $0.count == 1 } })
        #expect(h.delete(#"{"token":"\#(Self.token)","password":"Pw-12345"}"#, token: nil) == nil)
        // One password check at a time: the second waits its turn in the queue.
        #expect(within5s { h.authenticator.passwordChecks.waiting == 1 })
        #expect(h.authenticator.passwordChecks.running == 1)
        #expect(h.accounts.deletes.withLock { $0.count == 1 })
        let first = h.accounts.deletes.withLock { $0[0] }
        #expect(first.user == "7")
        #expect(first.body == "password")
        // The service hears whose the request is, for its own fair shares.
        #expect(first.client == "10.0.0.1")
        #expect(h.accounts.validations.withLock { $0 } == ["10.0.0.1"])
        h.accounts.release()
        #expect(within5s { h.answers.withLock { $0.count == 1 } })
        // It signed the connection out and forgot the user's tokens.
        #expect(h.answers.withLock { $0[0].change } == .signedOut(token: Self.token))
        #expect(h.authenticator.tokens.owner(of: Self.token) == nil)
        #expect(within5s { h.accounts.deletes.withLock { $0.count == 2 } })
        // The params' token went as the caller, not in the body.
        #expect(h.accounts.deletes.withLock { $0[1].user == "7" && $0[1].body == "password" })
        h.accounts.release()
        #expect(within5s { h.answers.withLock { $0.count == 2 } })
        // The address's rate of password checks, shared with logins, is spent.
        _ = h.delete(#"{"password":"Pw-12345"}"#, token: Self.token)
        #expect(within5s { h.answers.withLock { $0.count == 3 } })
        let third = h.answers.withLock { $0[2].outcome }
        #expect(Self.code(third) == "rate_limited")
        #expect(h.accounts.deletes.withLock { $0.count == 2 })
    }

    @Test func theDeletionEventEndsTheUsersSessionsOnAnotherGateway() throws {
        let folder = TemporaryFolder("gateway-delete")
        let context = try ZMQContext()
        var config = ServiceConfig(service: "social")
        config.dataDirectory = folder.path
        config.heartbeatMilliseconds = 50
        var options = SocialOptions()
        options.passwordCost = .minimum
        let social = try ServiceRuntime(definition: SocialService.definition(options: options), config: config, context: context,
                                        logger: Logger(component: "test", level: .error))
        defer { social.stop() }
        func gateway() throws -> GatewayServer {
            var config = GatewayConfig()
            config.listen = "127.0.0.1:0"
            config.peers = ["social": PeerEndpoints(rpc: social.endpoints.rpc, publish: social.endpoints.publish)]
            return try GatewayServer(config: config, context: context, logger: Logger(component: "test", level: .error))
        }
        let one = try gateway(), two = try gateway()
        defer { one.stop(); two.stop() }

        let a = try LineClient(port: one.port), b = try LineClient(port: two.port), c = try LineClient(port: two.port)
        #expect(a.call("auth.register", #"{"username":"ann","email":"ann@example.com","name":"Ann","password":"Ann-Pass-1"}"#).contains(#""result""#))
        let login = a.call("auth.login", #"{"username":"ann","password":"Ann-Pass-1"}"#)
        let token = (try? JSONDecoder().decode(LoginEnvelope.self, from: Data(login.utf8)))?.result.token ?? ""
        #expect(SessionToken.isWellFormed(token), "\(login)")
        // The same session on the other gateway: one connection hears pushes, the other just signed in.
        #expect(b.call("auth.resume", #"{"token":"\#(token)"}"#).contains(#""user_id""#))
        #expect(b.call("subscribe", #"{"topics":["notify.alert"]}"#).contains(#""topics":["notify.alert"]"#))
        #expect(c.call("auth.resume", #"{"token":"\#(token)"}"#).contains(#""user_id""#))

        // A wrong password deletes nothing and signs no one out.
        #expect(a.call("auth.delete", #"{"password":"Wrong-Pass-1"}"#).contains(#""permission_denied""#))
        #expect(a.call("profile.get").contains(#""username":"ann""#))
        #expect(a.call("auth.delete", #"{"password":"Ann-Pass-1"}"#).contains(#""result""#))
        // This connection is signed out; the other gateway closes the listener within the token cache's 2 s.
        #expect(a.call("subscribe", #"{"topics":["notify.alert"]}"#).contains("sign in first"))
        #expect(LoopHarness.closedByPeer([b.fd], within: 1.5) == 1)
        #expect(c.call("subscribe", #"{"topics":["notify.alert"]}"#).contains(#""unauthenticated""#))
    }
}

/// The JSON-RPC reply of `auth.login`, as far as the test reads it.
struct LoginEnvelope: Decodable {
    struct Result: Decodable { var token: String }
    var result: Result
}
