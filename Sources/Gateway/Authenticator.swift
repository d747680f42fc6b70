import Bus
import Contracts
import Foundation
import ServiceCore
import Synchronization

/// How an answer changes the signed-in user of the connection that asked: a login, resume
/// or logout, or a refusal of the connection's own token, which signs it out.
enum SessionChange: Sendable, Equatable {
    case signedIn(token: String)
    case signedOut(token: String)
    /// `subscribe`'s check: the token signs in this user.
    case subscribed(userId: Int64, token: String)
}

/// Signing in at the gateway: who a token is, and the requests that start or end a session.
///
/// It owns the cache of tokens the accounts service vouched for, the special cases of
/// `auth.login`, `auth.register`, `auth.resume` and `auth.logout`, and the fair use of
/// password checks: per client address, logins and sign-ups are limited in rate before any
/// hashing, and the checks that pass wait in one fair queue (a few at a time per accounts
/// endpoint, round-robin between addresses), tried again while the service says it is busy.
final class Authenticator: Sendable {
    /// The service that checks passwords and tokens.
    static let accounts = "social"
    /// Deleting the signed-in caller's account (`{password}`): a password method that needs a caller.
    static let deleteAccount = Methods.Auth.delete.name
    /// Methods that start or end the connection's session: requests after them wait for their answer.
    static let sessionMethods: Set<String> = [Methods.Auth.login.name, Methods.Auth.resume.name, Methods.Auth.logout.name, deleteAccount]
    /// Methods that hash a password.
    static let passwordMethods: Set<String> = [Methods.Auth.login.name, Methods.Auth.register.name, deleteAccount]
    static let busyRetryMilliseconds = 20

    let tokens: TokenCache
    private let backends: Backends
    private let addresses: ClientAddresses
    /// The fair queue of password checks.
    let passwordChecks: FairQueue

    init(backends: Backends, addresses: ClientAddresses, limits: GatewayLimits, clock: @escaping @Sendable () -> UInt64 = monotonicNanos) {
        self.backends = backends
        self.addresses = addresses
        tokens = TokenCache(clock: clock)
        let endpoints = backends.client(for: Authenticator.accounts)?.endpoints.count ?? 1
        passwordChecks = FairQueue(window: limits.passwordCheckWindow * max(1, endpoints))
    }

    /// Who a token is: from the cache when it was checked moments ago, else asked of the
    /// accounts service within `timeoutMilliseconds`, through the client's fair share of it.
    func validate(_ token: String, client: ClientKey, timeoutMilliseconds: Int, then: @escaping @Sendable (Result<TokenOwner, ServiceError>) -> Void) {
        guard SessionToken.isWellFormed(token) else {
            then(.failure(ServiceError(.unauthenticated, "invalid or expired token", field: "token")))
            return
        }
        if let known = tokens.owner(of: token) {
            then(.success(known))
            return
        }
        let tokens = self.tokens
        let deadline = Deadline(milliseconds: timeoutMilliseconds)
        backends.send(
            Authenticator.accounts, type: Methods.Auth.validate.name, body: Authenticator.json(TokenBody(token: token)), auth: nil,
            client: client, deadline: deadline
        ) { result in
            switch result {
            case .success(let reply):
                guard let owner = try? JSONCoding.decoder.decode(TokenOwner.self, from: reply.bodyJSON) else {
                    then(.failure(ServiceError(.internal, "auth.validate answered something unexpected")))
                    return
                }
                tokens.remember(token, owner)
                then(.success(owner))
            case .failure(let error):
                then(.failure(error))
            }
        }
    }

    /// `auth.resume`: signs the connection in with a token from `auth.login`.
    func resume(params: Data, client: ClientKey, deadline: Deadline, completion: @escaping @Sendable (Outcome, SessionChange?) -> Void) -> Outcome? {
        guard let token = JSONSpan.member("token", in: params).flatMap({ JSONSpan.string(at: $0, in: params) }), !token.isEmpty else {
            return .failure(ServiceError.invalid("token", "needs the token auth.login gave"))
        }
        validate(token, client: client, timeoutMilliseconds: deadline.remainingMilliseconds) { result in
            switch result {
            case .success(let user): completion(.result(Authenticator.json(user)), .signedIn(token: token))
            case .failure(let error): completion(.failure(error), nil)
            }
        }
        return nil
    }

    /// `auth.login`, `auth.register` or `auth.delete`: within the address's rate, then in its
    /// fair turn for a password check, tried again while the accounts service is busy hashing
    /// others. `auth.delete` goes with its `caller` (a token validated moments ago) in the
    /// envelope's `auth`; once it succeeds the caller's tokens are forgotten and the
    /// connection that sent the token is signed out.
    func checkPassword(
        _ method: String, params: Data, caller: (token: String, owner: TokenOwner)? = nil, client: ClientKey, deadline: Deadline,
        completion: @escaping @Sendable (Outcome, SessionChange?) -> Void
    ) -> Outcome? {
        let kind: ClientAddresses.SignIn = method == Methods.Auth.register.name ? .registration : .login
        if let wait = addresses.signInPermit(client.address, kind) {
            // Each refusal also costs the address a little of its request rate, so a flood of
            // refused sign-ins is read more slowly instead of keeping a core busy refusing.
            addresses.chargeRefusal(client.address)
            let what = method == Authenticator.deleteAccount ? "password checks" : kind == .login ? "logins" : "sign-ups"
            return .failure(ServiceError(.rateLimited, "too many \(what) from your address; try again in \(wait) s"))
        }
        let tokens = self.tokens
        let backends = self.backends
        let auth = caller.map { Auth(userId: String($0.owner.userId), role: $0.owner.role) }
        let job = FairQueue.Job(
            deadline: deadline.end,
            run: { done in
                @Sendable func attempt() {
                    backends.send(
                        Authenticator.accounts, type: method, body: params, auth: auth, client: client, inTurn: false, deadline: deadline
                    ) { result in
                        switch result {
                        case .failure(let error) where error.code == .unavailable && deadline.remainingMilliseconds > 2 * Authenticator.busyRetryMilliseconds:
                            // The accounts service hashes a few passwords at a time and refuses more
                            // at once, having changed nothing: try again within the deadline.
                            DispatchQueue.global().asyncAfter(deadline: .now() + .milliseconds(Authenticator.busyRetryMilliseconds)) { attempt() }
                        case .failure(let error):
                            done()
                            completion(.failure(error), nil)
                        case .success(let reply) where method == Methods.Auth.login.name:
                            done()
                            guard let signedIn = try? JSONCoding.decoder.decode(LoginReply.self, from: reply.bodyJSON) else {
                                completion(.failure(ServiceError(.internal, "auth.login answered without a token")), nil)
                                return
                            }
                            // The reply says who the token is: the requests that follow need not ask,
                            // and so leave in the order they came.
                            tokens.remember(signedIn.token, signedIn.owner)
                            completion(.result(reply.bodyJSON), .signedIn(token: signedIn.token))
                        case .success(let reply) where method == Authenticator.deleteAccount:
                            done()
                            // The account is gone: none of its tokens signs anyone in here any more.
                            if let caller {
                                tokens.forget(userId: caller.owner.userId)
                                tokens.revoke(caller.token)
                            }
                            completion(.result(reply.bodyJSON), caller.map { .signedOut(token: $0.token) })
                        case .success(let reply):
                            done()
                            completion(.result(reply.bodyJSON), nil)
                        }
                    }
                }
                attempt()
            },
            expire: {
                completion(.failure(ServiceError(.deadlineExceeded, "no turn to check a password within the deadline")), nil)
            },
            // Sign-ups wait while logins do: a flood of new accounts cannot keep people out of theirs.
            kind: method, priority: kind == .registration ? 1 : 0)
        passwordChecks.submit(client, job)
        return nil
    }

    /// `auth.logout`: ends the session of the token that signed the request in.
    func logout(token: String, owner: TokenOwner, client: ClientKey, deadline: Deadline, completion: @escaping @Sendable (Outcome, SessionChange?) -> Void) {
        let tokens = self.tokens
        backends.send(
            Authenticator.accounts, type: Methods.Auth.logout.name, body: Authenticator.json(TokenBody(token: token)),
            auth: Auth(userId: String(owner.userId), role: owner.role),
            client: client, deadline: deadline
        ) { result in
            switch result {
            case .success(let reply):
                tokens.revoke(token)
                completion(.result(reply.bodyJSON), .signedOut(token: token))
            case .failure(let error):
                completion(.failure(error), nil)
            }
        }
    }

    static func json<T: Encodable>(_ value: T) -> Data { (try? JSONCoding.encoder.encode(value)) ?? Data("{}".utf8) }
}

/// When a request's time is up, counted from its arrival.
struct Deadline: Sendable {
    let end: UInt64

    init(milliseconds: Int) { end = monotonicNanos() + UInt64(max(0, milliseconds)) * 1_000_000 }

    /// What is left, at least 1 ms.
    var remainingMilliseconds: Int {
        let now = monotonicNanos()
        return end > now ? max(1, Int((end - now) / 1_000_000)) : 1
    }
}

/// Tokens the accounts service vouched for moments ago, so a signed-in connection does not
/// ask it again for every request.
///
/// An entry is trusted for `lifetime` (2 s) at most. The accounts service publishes when a
/// session ends or a role changes, and the gateway then forgets that user's tokens at once
/// (`forget(userId:)`); after a gap in those events it forgets every token (`forgetAll`).
/// Logging out through this gateway forgets the token at once, and for `lifetime` refuses to
/// learn it again from a check that was already under way.
final class TokenCache: Sendable {
    static let lifetime: UInt64 = 2_000_000_000
    static let maxEntries = 100_000
    private struct Entries {
        var owners: [String: (owner: TokenOwner, checked: UInt64)] = [:]
        var revoked: [String: UInt64] = [:]
        /// Users whose tokens were forgotten, and when: a check under way then is not learned.
        var forgotten: [Int64: UInt64] = [:]
    }
    private let entries = Mutex(Entries())
    private let clock: @Sendable () -> UInt64

    init(clock: @escaping @Sendable () -> UInt64 = monotonicNanos) { self.clock = clock }

    /// Whether a time read before `then` (possibly before another thread wrote `then`) is
    /// still within `lifetime` of it. Never subtracts past zero.
    private static func within(_ now: UInt64, of then: UInt64) -> Bool { now <= then || now - then < lifetime }

    func owner(of token: String) -> TokenOwner? {
        entries.withLock { e in
            let now = clock()
            guard let entry = e.owners[token], TokenCache.within(now, of: entry.checked) else { return nil }
            return entry.owner
        }
    }

    func remember(_ token: String, _ owner: TokenOwner) {
        entries.withLock { e in
            let now = clock()
            if let revoked = e.revoked[token], TokenCache.within(now, of: revoked) { return }
            if let forgotten = e.forgotten[owner.userId], TokenCache.within(now, of: forgotten) { return }
            if e.owners.count >= TokenCache.maxEntries { e.owners = e.owners.filter { TokenCache.within(now, of: $0.value.checked) } }
            if e.owners.count < TokenCache.maxEntries { e.owners[token] = (owner, now) }
        }
    }

    /// Forgets a token that was logged out.
    func revoke(_ token: String) {
        entries.withLock { e in
            let now = clock()
            e.owners[token] = nil
            if e.revoked.count >= TokenCache.maxEntries { e.revoked = e.revoked.filter { TokenCache.within(now, of: $0.value) } }
            e.revoked[token] = now
        }
    }

    /// Forgets every token of a user (a session ended or the role changed elsewhere).
    func forget(userId: Int64) {
        entries.withLock { e in
            let now = clock()
            e.owners = e.owners.filter { $0.value.owner.userId != userId }
            if e.forgotten.count >= TokenCache.maxEntries { e.forgotten = e.forgotten.filter { TokenCache.within(now, of: $0.value) } }
            e.forgotten[userId] = now
        }
    }

    /// Forgets every token (events about sessions may have been missed).
    func forgetAll() {
        entries.withLock { e in e.owners.removeAll() }
    }
}
