import Bus
import Contracts
import Foundation
import ServiceCore
import Synchronization

/// The answer to one gateway command, before either framing formats it.
enum Outcome: Sendable {
    /// A JSON result, as bytes.
    case result(Data)
    /// Bytes that are not JSON (a map tile): a raw bulk string in RESP, a base64 string in JSON-RPC.
    case bytes(Data)
    /// The answer to `ping` (`+PONG` in RESP, `"pong"` in JSON-RPC).
    case pong
    /// An error from the closed set.
    case failure(ServiceError)
    /// What `subscribe` or `unsubscribe` changed: each framing answers it its own way.
    case subscription(SubscriptionChange)
}

/// The answer to `subscribe`, `unsubscribe`, `psubscribe` or `punsubscribe` (`kind`): the
/// topics or patterns it named (all it dropped, for an unsubscribe that named none) with the
/// connection's count of topics and patterns after each, as Redis confirms them one by one,
/// and every topic the connection now hears by name.
struct SubscriptionChange: Sendable, Equatable {
    var kind: String
    var topics: [String]
    var counts: [Int]
    var all: [String]
    /// Topics and patterns the connection hears after it.
    var total: Int

    /// JSON-RPC's result: `{"topics":[...]}`, every topic heard now, sorted.
    var json: Data {
        var out: [UInt8] = Array(#"{"topics":["#.utf8)
        for (i, topic) in all.enumerated() {
            if i > 0 { out.append(UInt8(ascii: ",")) }
            JSONText.append(topic, to: &out)
        }
        out += Array("]}".utf8)
        return Data(out)
    }
}

/// A command as either framing hands it over: a method, its params object and an optional deadline.
struct Call: Sendable {
    var method: String
    var params: Data
    var deadlineMilliseconds: Int?
    /// The token sent with this one request outside its params (HTTP's `Authorization`),
    /// taken instead of the connection's.
    var token: String?
}

/// One command model for both framings: a method and a params object, answered by an `Outcome`.
///
/// Built-ins (`ping`, `help`, `gateway.status`, `auth.resume`) are answered here; any other
/// method goes to the service `AccessPolicy` names, if the caller may call it, in the
/// client's fair turn. Who the caller is comes from a token (the connection's, or one in the
/// params for one request), checked by the `Authenticator` and passed on in the envelope's `auth`.
final class Dispatcher: Sendable {
    let backends: Backends
    let policy: AccessPolicy
    let authenticator: Authenticator
    let limits: GatewayLimits
    let connections: ConnectionCount
    /// Who hears pushes here: it names this gateway in the origins of requests, and hears of sign-outs.
    let pushes: PushRegistry
    /// Requests, errors and latencies by method, for the metrics port.
    let stats = ServerStats()

    init(
        backends: Backends, authenticator: Authenticator, policy: AccessPolicy = .standard, limits: GatewayLimits, connections: ConnectionCount,
        pushes: PushRegistry = PushRegistry(gatewayId: PushRegistry.newGatewayId())
    ) {
        self.backends = backends
        self.authenticator = authenticator
        self.policy = policy
        self.limits = limits
        self.connections = connections
        self.pushes = pushes
    }

    /// Answered at once, whoever is signed in and whatever waits for a sign-in.
    static let immediate: Set<String> = [Methods.Gateway.ping.name, Methods.Gateway.help.name, Methods.Gateway.discover.name, Methods.Gateway.status.name]

    /// Answers a command: at once (returns the outcome) or later (returns nil and calls
    /// `completion` exactly once, on this thread or another). `token` is the connection's,
    /// when it signed in. Each answer is counted in `stats`, under `metricsLabel(for:)`.
    func dispatch(
        _ call: Call, client: ClientKey, token connectionToken: String? = nil,
        completion: @escaping @Sendable (Outcome, SessionChange?) -> Void
    ) -> Outcome? {
        let started = monotonicNanos()
        let stats = self.stats
        let label = metricsLabel(for: call.method)
        @Sendable func count(_ outcome: Outcome) {
            let error: ErrorCode? = if case .failure(let failure) = outcome { failure.code } else { nil }
            stats.record(type: label, nanoseconds: monotonicNanos() - started, error: error)
        }
        let now = route(call, client: client, token: connectionToken) { outcome, change in
            count(outcome)
            completion(outcome, change)
        }
        if let now { count(now) }
        return now
    }

    /// The method label a call is counted under: its method when it is declared and the
    /// gateway offers it (a built-in or a service's), else `unknown`, so clients cannot make new series.
    func metricsLabel(for method: String) -> String? {
        if Dispatcher.builtInNames.contains(method) || policy.rule(for: method) != nil { return method }
        return nil
    }

    private static let builtInNames = Set(Methods.owned(by: .gateway).map(\.name))
    private static let builtInsOwningToken = Set(Methods.owned(by: .gateway).filter(\.ownsTokenParam).map(\.name))
    /// The params shapes of the built-ins.
    static let builtInShapes: [String: Schema] = Dictionary(
        uniqueKeysWithValues: Methods.owned(by: .gateway)
            .map { method in
                do {
                    return (method.name, try SchemaProbe.shape(of: method.params))
                } catch {
                    preconditionFailure("\(method.name)'s params shape cannot be read: \(error)")
                }
            })

    private func route(
        _ call: Call, client: ClientKey, token connectionToken: String?,
        completion: @escaping @Sendable (Outcome, SessionChange?) -> Void
    ) -> Outcome? {
        let method = call.method
        if let requested = call.deadlineMilliseconds, requested <= 0 {
            return .failure(ServiceError.invalid("deadline_ms", "must be a positive number of milliseconds"))
        }
        // One deadline for everything the request takes: checking its token, then the service.
        let ceiling = limits.deadlineMilliseconds
        let deadline = Deadline(milliseconds: min(call.deadlineMilliseconds ?? ceiling, ceiling))
        // The built-ins hold their params to their declared shapes, as the services do (RESP's
        // PING [message] is answered by its framing).
        if let shape = Dispatcher.builtInShapes[method] {
            do {
                // A session `token` may come with any call (the document's rule); only
                // `auth.resume` takes one of its own.
                let params = Dispatcher.builtInsOwningToken.contains(method) ? call.params : Dispatcher.removingToken(from: call.params)
                try SchemaCheck.check(params, against: shape)
            } catch {
                return .failure(error)
            }
        }
        switch method {
        case Methods.Gateway.ping.name: return .pong
        case Methods.Gateway.help.name: return encoded(help())
        case Methods.Gateway.discover.name: return .result(OpenRPC.document)
        case Methods.Gateway.status.name: return encoded(GatewayStatus(backends: backends.status(), connections: .init(open: connections.value, limit: limits.maxConnections)))
        case Methods.Auth.resume.name: return authenticator.resume(params: call.params, client: client, deadline: deadline, completion: completion)
        case Methods.Gateway.subscribe.name: return subscriber(connectionToken, client: client, deadline: deadline, completion: completion)
        default: break
        }
        guard let rule = policy.rule(for: method), backends.has(rule.service) else {
            return .failure(Dispatcher.unknownMethod(method))
        }
        if method == Authenticator.deleteAccount {
            return deleteAccount(call.params, connectionToken: connectionToken, client: client, deadline: deadline, completion: completion)
        }
        if Authenticator.passwordMethods.contains(method) {
            return authenticator.checkPassword(method, params: call.params, client: client, deadline: deadline, completion: completion)
        }
        // A deadline the client shortened says nothing about the backend when it passes.
        let ownDeadline = call.deadlineMilliseconds.map { $0 < ceiling } ?? false
        let (token, params): (String?, Data)
        do {
            (token, params) =
                rule.ownsTokenParam
                ? (connectionToken, call.params)
                : try Dispatcher.requestToken(call.params, connectionToken: connectionToken)
        } catch {
            return .failure(error)
        }
        if method == Methods.Auth.logout.name {
            // The gateway ends the session itself, and logout takes no params of the client's.
            do {
                try SchemaCheck.check(params, against: .object(ObjectSchema([])))
            } catch {
                return .failure(error)
            }
        }
        let request = Forwarded(method: method, service: rule.service, params: params, client: client, deadline: deadline, ownDeadline: ownDeadline)
        guard let token else {
            if rule.access != .anyone {
                return .failure(ServiceError(.unauthenticated, "sign in first: auth.login, auth.resume, AUTH <token>, or a token param"))
            }
            forward(request, auth: nil, completion)
            return nil
        }
        let ownToken = token == connectionToken
        // A method that needs no caller keeps half its time for the service, in case the
        // accounts service does not answer and the request goes on without a caller.
        let optional = rule.access == .anyone && rule.service != Authenticator.accounts
        let checkBudget = optional ? max(1, deadline.remainingMilliseconds / 2) : deadline.remainingMilliseconds
        authenticator.validate(token, client: client, timeoutMilliseconds: checkBudget) { [self] result in
            switch result {
            case .failure(let error) where error.code == .unauthenticated && method == Methods.Auth.logout.name:
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
                } else if method == Methods.Auth.logout.name {
                    // The user's connections that hear pushes check their tokens: this one may be theirs.
                    let pushes = self.pushes
                    authenticator.logout(token: token, owner: user, client: client, deadline: deadline) { outcome, change in
                        completion(outcome, change)
                        if change != nil { pushes.recheck(user: user.userId) }
                    }
                } else {
                    forward(
                        request,
                        auth: Auth(
                            userId: String(user.userId), role: user.role,
                            origin: PushRegistry.origin(pushes.gatewayId, client.connection)), completion)
                }
            }
        }
        return nil
    }

    /// The token a request goes with and its params to forward: a `token` in the params
    /// stands for this one request (and is taken out of them), else the connection's.
    static func requestToken(_ params: Data, connectionToken: String?) throws(ServiceError) -> (token: String?, params: Data) {
        guard let range = JSONSpan.member("token", in: params) else { return (connectionToken, params) }
        guard let given = JSONSpan.string(at: range, in: params) else { throw ServiceError.invalid("token", "must be a string") }
        return (given, removingToken(from: params))
    }

    /// `auth.delete {password}`: it hashes, so it goes the way of `auth.login` (the address's
    /// rate, the fair queue of password checks), but it needs the signed-in caller: the token
    /// (the connection's, or the params') is validated first and forwarded as the envelope's
    /// `auth`. On success the connection it signed in is signed out, and this gateway's
    /// listening connections of the user check their tokens again (the accounts service's
    /// `social.user.deleted` does the same on every gateway).
    private func deleteAccount(
        _ raw: Data, connectionToken: String?, client: ClientKey, deadline: Deadline,
        completion: @escaping @Sendable (Outcome, SessionChange?) -> Void
    ) -> Outcome? {
        let (token, params): (String?, Data)
        do {
            (token, params) = try Dispatcher.requestToken(raw, connectionToken: connectionToken)
        } catch {
            return .failure(error)
        }
        guard let token else {
            return .failure(ServiceError(.unauthenticated, "sign in first: auth.login, auth.resume, AUTH <token>, or a token param"))
        }
        let ownToken = token == connectionToken
        let authenticator = self.authenticator
        let pushes = self.pushes
        authenticator.validate(token, client: client, timeoutMilliseconds: deadline.remainingMilliseconds) { result in
            switch result {
            case .failure(let error) where error.code == .unauthenticated && ownToken:
                completion(.failure(error), .signedOut(token: token))
            case .failure(let error):
                completion(.failure(error), nil)
            case .success(let owner):
                let refused = authenticator.checkPassword(
                    Authenticator.deleteAccount, params: params, caller: (token, owner), client: client,
                    deadline: deadline
                ) { outcome, change in
                    completion(outcome, change)
                    if change != nil { pushes.recheck(user: owner.userId) }
                }
                if let refused { completion(refused, nil) }
            }
        }
        return nil
    }

    /// Who the connection's own token signs in, for `subscribe`: pushes are addressed to
    /// users, so a connection hears them only once signed in (a token in the params does not
    /// count: it stands for one request). The session adds the topics when the answer comes.
    private func subscriber(
        _ token: String?, client: ClientKey, deadline: Deadline,
        completion: @escaping @Sendable (Outcome, SessionChange?) -> Void
    ) -> Outcome? {
        guard let token else {
            return .failure(ServiceError(.unauthenticated, "sign in first to hear pushes: auth.login, auth.resume or AUTH"))
        }
        authenticator.validate(token, client: client, timeoutMilliseconds: deadline.remainingMilliseconds) { result in
            switch result {
            case .success(let owner): completion(.result(Data("{}".utf8)), .subscribed(userId: owner.userId, token: token))
            case .failure(let error) where error.code == .unauthenticated: completion(.failure(error), .signedOut(token: token))
            case .failure(let error): completion(.failure(error), nil)
            }
        }
        return nil
    }

    /// A request on its way to a service.
    struct Forwarded: Sendable {
        var method: String
        var service: String
        var params: Data
        var client: ClientKey
        var deadline: Deadline
        var ownDeadline: Bool
    }

    /// Sends a request on to its service, in the client's fair turn, and turns the reply into an outcome.
    private func forward(_ request: Forwarded, auth: Auth?, _ completion: @escaping @Sendable (Outcome, SessionChange?) -> Void) {
        let method = request.method
        backends.send(
            request.service, type: method, body: request.params, auth: auth, client: request.client,
            deadline: request.deadline, ownDeadline: request.ownDeadline
        ) { result in
            switch result {
            case .success(let reply) where reply.attachments.count == 1:
                // A reply that carries one attachment frame answers with its bytes (a tile).
                completion(.bytes(reply.attachments[0]), nil)
            case .success(let reply):
                completion(.result(reply.bodyJSON), nil)
            case .failure(let error) where error.code == .notFound && error.field == "type":
                // The backend does not know the type: to the client it is an unknown method.
                completion(.failure(Dispatcher.unknownMethod(method)), nil)
            case .failure(let error):
                completion(.failure(error), nil)
            }
        }
    }

    /// The params without their `token` member, every other member's bytes unchanged.
    static func removingToken(from params: Data) -> Data {
        guard let members = JSONSpan.members(of: params) else { return params }
        var out = Data("{".utf8)
        for (key, value) in members where key != "token" {
            if out.count > 1 { out.append(UInt8(ascii: ",")) }
            out.append(Authenticator.json(key))
            out.append(UInt8(ascii: ":"))
            out.append(params[value])
        }
        out.append(UInt8(ascii: "}"))
        return out
    }

    static func unknownMethod(_ method: String) -> ServiceError {
        ServiceError(.notFound, "unknown method '\(Echo.clip(method))'; try help", field: "method")
    }

    /// The built-ins, then the methods of each configured service in service-name order.
    private func help() -> GatewayHelp {
        let services = backends.status()
        var entries = Methods.owned(by: .gateway).map { GatewayHelp.Entry(method: $0.name, description: $0.summary) }
        for service in services.map(\.service).sorted() {
            entries += policy.methods(of: service).map { GatewayHelp.Entry(method: $0.name, description: $0.summary) }
        }
        return GatewayHelp(methods: entries, unavailable: services.filter { !$0.up }.map(\.service))
    }

    private func encoded<T: Encodable>(_ value: T) -> Outcome {
        do {
            return .result(try JSONCoding.encoder.encode(value))
        } catch {
            return .failure(ServiceError(.internal, "could not encode the answer"))
        }
    }
}
