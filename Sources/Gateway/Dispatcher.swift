import Bus
import Foundation
import ServiceKit
import Synchronization

/// The answer to one gateway command, before either framing formats it.
enum Outcome: Sendable {
    /// A JSON result, as bytes.
    case result(Data)
    /// The answer to `ping` (`+PONG` in RESP, `"pong"` in JSON-RPC).
    case pong
    /// An error from the closed set.
    case failure(ServiceError)
}

/// How an answer changes the signed-in user of the connection that asked: a login, resume
/// or logout, or a refusal of the connection's own token, which signs it out.
enum SessionChange: Sendable, Equatable {
    case signedIn(token: String)
    case signedOut(token: String)
}

/// One command model for both framings: a method and a params object, answered by an `Outcome`.
///
/// Built-ins (`ping`, `help`, `gateway.status`, `auth.resume`) are answered here; any other
/// method goes to the service `AccessPolicy` names, if the caller may call it. Who the
/// caller is comes from a token (the connection's, or one in the params for one request),
/// checked with the social service (`auth.validate`) and passed on in the envelope's `auth`.
final class Dispatcher: Sendable {
    let backends: Backends
    let policy: AccessPolicy
    let tokens: TokenCache
    let defaultDeadlineMilliseconds: Int
    let connections: ConnectionCount
    let maxConnections: Int

    init(backends: Backends, policy: AccessPolicy = .standard, defaultDeadlineMilliseconds: Int, connections: ConnectionCount, maxConnections: Int) {
        self.backends = backends
        self.policy = policy
        self.tokens = TokenCache()
        self.defaultDeadlineMilliseconds = defaultDeadlineMilliseconds
        self.connections = connections
        self.maxConnections = maxConnections
    }

    /// The gateway's own methods and what they do.
    static let builtIns: [(method: String, description: String)] = [
        ("ping", "liveness of the gateway itself"),
        ("help", "every method with a one-line description"),
        ("gateway.status", "each backend: up or down, latency, last error; open client connections"),
        ("auth.resume", "sign this connection in with a token from auth.login (RESP: AUTH <token>)"),
    ]

    /// The service that checks tokens.
    static let accounts = "social"
    /// Requests answered `unavailable` that are tried again until their deadline: they hash
    /// a password, and the social service refuses them, having changed nothing, while busy.
    static let retriedWhenBusy: Set<String> = ["auth.login", "auth.register"]
    static let busyRetryMilliseconds = 20

    /// Answers a command: at once (returns the outcome) or later (returns nil and calls
    /// `completion` exactly once, on this thread or another). `token` is the connection's,
    /// when it signed in.
    func dispatch(method: String, params: Data, deadlineMilliseconds: Int?, token connectionToken: String? = nil,
                  completion: @escaping @Sendable (Outcome, SessionChange?) -> Void) -> Outcome? {
        if let requested = deadlineMilliseconds, requested <= 0 {
            return .failure(ServiceError.invalid("deadline_ms", "must be a positive number of milliseconds"))
        }
        // One deadline for everything the request takes: checking its token, then the service.
        let deadline = Deadline(milliseconds: min(deadlineMilliseconds ?? defaultDeadlineMilliseconds, defaultDeadlineMilliseconds))
        switch method {
        case "ping": return .pong
        case "help": return encoded(help())
        case "gateway.status": return encoded(Status(backends: backends.status(), connections: .init(open: connections.value, limit: maxConnections)))
        case "auth.resume":
            guard let token = JSONSpan.member("token", in: params).flatMap({ JSONSpan.string(at: $0, in: params) }), !token.isEmpty else {
                return .failure(ServiceError.invalid("token", "needs the token auth.login gave"))
            }
            validate(token, timeoutMilliseconds: deadline.remainingMilliseconds) { result in
                switch result {
                case .success(let user): completion(.result(Dispatcher.json(user)), .signedIn(token: token))
                case .failure(let error): completion(.failure(error), nil)
                }
            }
            return nil
        default: break
        }
        guard let rule = policy.rule(for: method), let client = backends.client(for: rule.service) else {
            return .failure(Dispatcher.unknownMethod(method))
        }
        // A deadline the client shortened says nothing about the backend when it passes.
        let ownDeadline = deadlineMilliseconds.map { $0 < defaultDeadlineMilliseconds } ?? false
        // A token in the params stands for this one request.
        var params = params
        var token = connectionToken
        if let range = JSONSpan.member("token", in: params) {
            guard let given = JSONSpan.string(at: range, in: params) else { return .failure(ServiceError.invalid("token", "must be a string")) }
            token = given
            params = Dispatcher.removingToken(from: params)
        }
        let request = Forwarded(method: method, service: rule.service, client: client, params: params, token: token,
                                deadline: deadline, ownDeadline: ownDeadline)
        // Signing up and in need no one; everything else carries who asks, when someone does.
        guard method != "auth.login" && method != "auth.register", let token else {
            if rule.access != .anyone {
                return .failure(ServiceError(.unauthenticated, "sign in first: auth.login, auth.resume, AUTH <token>, or a token param"))
            }
            forward(request, auth: nil, completion)
            return nil
        }
        let ownToken = token == connectionToken
        // A method that needs no caller keeps half its time for the service, in case the
        // accounts service does not answer and the request goes on without a caller.
        let optional = rule.access == .anyone && rule.service != Dispatcher.accounts
        let checkBudget = optional ? max(1, deadline.remainingMilliseconds / 2) : deadline.remainingMilliseconds
        validate(token, timeoutMilliseconds: checkBudget) { [self] result in
            switch result {
            case .failure(let error) where error.code == .unauthenticated && method == "auth.logout":
                // A session that already ended: logging out again does nothing.
                completion(.result(Data("{}".utf8)), .signedOut(token: token))
            case .failure(let error) where error.code == .unauthenticated && ownToken:
                // The connection's session ended elsewhere: it is signed out.
                completion(.failure(error), .signedOut(token: token))
            case .failure(let error) where (error.code == .unavailable || error.code == .deadlineExceeded) && optional:
                // Reading places or searching needs no one: it does not wait for the accounts service.
                forward(request, auth: nil, completion)
            case .failure(let error):
                completion(.failure(error), nil)
            case .success(let user):
                if rule.access == .admin && user.role != "admin" {
                    completion(.failure(ServiceError(.permissionDenied, "\(method) needs an admin")), nil)
                } else {
                    forward(request, auth: Auth(userId: String(user.userId), role: user.role), completion)
                }
            }
        }
        return nil
    }

    /// When a request's time is up, counted from its arrival.
    struct Deadline: Sendable {
        let end: UInt64

        init(milliseconds: Int) { end = monotonicNanos() + UInt64(milliseconds) * 1_000_000 }

        /// What is left, at least 1 ms.
        var remainingMilliseconds: Int {
            let now = monotonicNanos()
            return end > now ? max(1, Int((end - now) / 1_000_000)) : 1
        }
    }

    /// A request on its way to a service.
    struct Forwarded: Sendable {
        var method: String
        var service: String
        var client: RPCClient
        var params: Data
        var token: String?
        var deadline: Deadline
        var ownDeadline: Bool
    }

    /// Sends a request on to its service and turns the reply into an outcome.
    private func forward(_ request: Forwarded, auth: Auth?, _ completion: @escaping @Sendable (Outcome, SessionChange?) -> Void) {
        let backends = self.backends, tokens = self.tokens, method = request.method
        // Logging out ends the token that signed the request in.
        let body = method == "auth.logout" ? Dispatcher.json(["token": request.token ?? ""]) : request.params
        request.client.send(type: method, body: body, auth: auth, timeoutMilliseconds: request.deadline.remainingMilliseconds) { result in
            switch result {
            case .success(let reply):
                switch method {
                case "auth.login":
                    guard let signedIn = try? JSONCoding.decoder.decode(LoginReply.self, from: reply.bodyJSON) else {
                        completion(.failure(ServiceError(.internal, "auth.login answered without a token")), nil)
                        return
                    }
                    // The reply says who the token is: the requests that follow need not ask, and
                    // so leave in the order they came.
                    tokens.remember(signedIn.token, TokenOwner(userId: signedIn.user.id, role: signedIn.user.role, expiresAt: signedIn.expiresAt))
                    completion(.result(reply.bodyJSON), .signedIn(token: signedIn.token))
                case "auth.logout":
                    if let token = request.token { tokens.revoke(token) }
                    completion(.result(reply.bodyJSON), .signedOut(token: request.token ?? ""))
                default:
                    completion(.result(reply.bodyJSON), nil)
                }
            case .failure(let error) where error.code == .unavailable && Dispatcher.retriedWhenBusy.contains(method)
                    && request.deadline.remainingMilliseconds > 2 * Dispatcher.busyRetryMilliseconds:
                // The social service hashes a few passwords at a time and refuses more at once;
                // a login or sign-up that nothing changed yet is tried again, within its deadline.
                DispatchQueue.global().asyncAfter(deadline: .now() + .milliseconds(Dispatcher.busyRetryMilliseconds)) {
                    self.forward(request, auth: auth, completion)
                }
            case .failure(let error):
                if !(request.ownDeadline && error.code == .deadlineExceeded) { backends.noteFailure(request.service, error) }
                // The backend does not know the type: to the client it is an unknown method.
                if error.code == .notFound && error.field == "type" {
                    completion(.failure(Dispatcher.unknownMethod(method)), nil)
                } else {
                    completion(.failure(error), nil)
                }
            }
        }
    }

    /// What `auth.login` answers, as far as the gateway reads it.
    struct LoginReply: Decodable {
        struct User: Decodable {
            var id: Int64
            var role: String
        }
        var token: String
        var expiresAt: String?
        var user: User

        enum CodingKeys: String, CodingKey {
            case token, user
            case expiresAt = "expires_at"
        }
    }

    /// Who a token signs in, as `auth.validate` answers (and `auth.resume` replies).
    struct TokenOwner: Codable, Sendable, Equatable {
        var userId: Int64
        var role: String
        var expiresAt: String?

        enum CodingKeys: String, CodingKey {
            case userId = "user_id"
            case role
            case expiresAt = "expires_at"
        }
    }

    /// Checks a token: from the cache when it was checked moments ago, else with the social
    /// service within the time given; `then` runs on this thread or another.
    private func validate(_ token: String, timeoutMilliseconds: Int, then: @escaping @Sendable (Result<TokenOwner, ServiceError>) -> Void) {
        guard Dispatcher.looksLikeToken(token) else {
            then(.failure(ServiceError(.unauthenticated, "invalid or expired token", field: "token")))
            return
        }
        if let known = tokens.owner(of: token) {
            then(.success(known))
            return
        }
        guard let accounts = backends.client(for: Dispatcher.accounts) else {
            then(.failure(ServiceError(.unavailable, "no \(Dispatcher.accounts) service is configured to check tokens")))
            return
        }
        let tokens = self.tokens, backends = self.backends
        accounts.send(type: "auth.validate", body: Dispatcher.json(["token": token]), timeoutMilliseconds: timeoutMilliseconds) { result in
            switch result {
            case .success(let reply):
                guard let owner = try? JSONCoding.decoder.decode(TokenOwner.self, from: reply.bodyJSON) else {
                    then(.failure(ServiceError(.internal, "auth.validate answered something unexpected")))
                    return
                }
                tokens.remember(token, owner)
                then(.success(owner))
            case .failure(let error):
                backends.noteFailure(Dispatcher.accounts, error)
                then(.failure(error))
            }
        }
    }

    /// Whether a string has the shape of a token `auth.login` gives (`tb1_` and 43 base64url
    /// characters): anything else is refused without asking the social service.
    static func looksLikeToken(_ token: String) -> Bool {
        let body = token.utf8.dropFirst(4)
        return token.hasPrefix("tb1_") && body.count == 43
            && body.allSatisfy { (0x41...0x5A).contains($0) || (0x61...0x7A).contains($0) || (0x30...0x39).contains($0) || $0 == 0x2D || $0 == 0x5F }
    }

    /// The params without their `token` member, every other member's bytes unchanged.
    static func removingToken(from params: Data) -> Data {
        guard let members = JSONSpan.members(of: params) else { return params }
        var out = Data("{".utf8)
        for (key, value) in members where key != "token" {
            if out.count > 1 { out.append(UInt8(ascii: ",")) }
            out.append(json(key))
            out.append(UInt8(ascii: ":"))
            out.append(params[value])
        }
        out.append(UInt8(ascii: "}"))
        return out
    }

    static func json<T: Encodable>(_ value: T) -> Data { (try? JSONCoding.encoder.encode(value)) ?? Data("{}".utf8) }

    static func unknownMethod(_ method: String) -> ServiceError {
        ServiceError(.notFound, "unknown method '\(method)'; try help", field: "method")
    }

    struct Status: Encodable {
        struct Connections: Encodable {
            var open: Int
            var limit: Int
        }
        var backends: [BackendHealth]
        var connections: Connections
    }

    struct Help: Encodable {
        struct Entry: Encodable {
            var method: String
            var description: String
        }
        var methods: [Entry]
        /// Services that are configured but whose methods are not known yet (down since start).
        var unavailable: [String]
    }

    private func help() -> Help {
        let known = backends.knownMethods()
        var entries = Dispatcher.builtIns.map { Help.Entry(method: $0.method, description: $0.description) }
        for service in known.keys.sorted() {
            // Only what the gateway offers: the policy routes it to this service.
            entries += (known[service]?.methods ?? []).filter { policy.rule(for: $0.type)?.service == service }
                .map { Help.Entry(method: $0.type, description: $0.description) }
        }
        let missing = backends.status().map(\.service).filter { known[$0] == nil }
        return Help(methods: entries, unavailable: missing)
    }

    private func encoded<T: Encodable>(_ value: T) -> Outcome {
        do {
            return .result(try JSONCoding.encoder.encode(value))
        } catch {
            return .failure(ServiceError(.internal, "could not encode the answer"))
        }
    }
}

/// Tokens the social service vouched for moments ago, so a signed-in connection does not ask
/// it again for every request.
///
/// An entry is trusted for `lifetime` (2 s): a token logged out through another gateway, or
/// expired, keeps working here for at most that long. Logging out through this gateway
/// forgets the token at once, and for `lifetime` refuses to learn it again from a check that
/// was already under way.
final class TokenCache: Sendable {
    static let lifetime: UInt64 = 2_000_000_000
    static let maxEntries = 100_000
    private struct Entries {
        var owners: [String: (owner: Dispatcher.TokenOwner, checked: UInt64)] = [:]
        var revoked: [String: UInt64] = [:]
    }
    private let entries = Mutex(Entries())

    func owner(of token: String) -> Dispatcher.TokenOwner? {
        let now = monotonicNanos()
        return entries.withLock { e in
            guard let entry = e.owners[token], now - entry.checked < TokenCache.lifetime else { return nil }
            return entry.owner
        }
    }

    func remember(_ token: String, _ owner: Dispatcher.TokenOwner) {
        let now = monotonicNanos()
        entries.withLock { e in
            if let revoked = e.revoked[token], now - revoked < TokenCache.lifetime { return }
            if e.owners.count >= TokenCache.maxEntries { e.owners = e.owners.filter { now - $0.value.checked < TokenCache.lifetime } }
            if e.owners.count < TokenCache.maxEntries { e.owners[token] = (owner, now) }
        }
    }

    /// Forgets a token that was logged out.
    func revoke(_ token: String) {
        let now = monotonicNanos()
        entries.withLock { e in
            e.owners[token] = nil
            if e.revoked.count >= TokenCache.maxEntries { e.revoked = e.revoked.filter { now - $0.value < TokenCache.lifetime } }
            e.revoked[token] = now
        }
    }
}
