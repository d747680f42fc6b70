import Bus
import Contracts
import Foundation

/// Who is asking, resolved once from a request's `auth` (which only the gateway, or an
/// operator on the bus, sets: ids in bodies never say who asks).
public struct Caller: Sendable, Equatable {
    /// The user's id: a positive integer.
    public let id: Int64
    public let role: Role
    /// The client connection the request came on, as the gateway names it (`auth.origin`),
    /// so that a push the request causes can leave that connection out.
    public let origin: String?

    public init(id: Int64, role: Role, origin: String? = nil) {
        self.id = id
        self.role = role
        self.origin = origin
    }

    public var isAdmin: Bool { role == .admin }

    /// The caller of a request that needs one: `unauthenticated` without `auth`, or with a
    /// user id that is not a positive decimal integer or a role that is not `user` or `admin`.
    public static func of(_ context: RequestContext) throws(ServiceError) -> Caller {
        guard let auth = context.auth else { throw ServiceError(.unauthenticated, "\(context.type) needs a signed-in user") }
        return try resolve(auth)
    }

    /// The caller when the request has one, else nil (a method anyone may call); a malformed
    /// `auth` is `unauthenticated` all the same.
    public static func optional(_ context: RequestContext) throws(ServiceError) -> Caller? {
        try context.auth.map { auth throws(ServiceError) in try resolve(auth) }
    }

    private static func resolve(_ auth: Auth) throws(ServiceError) -> Caller {
        guard auth.userId.utf8.count <= 20, let id = Int64(auth.userId), id > 0, String(id) == auth.userId else {
            throw ServiceError(.unauthenticated, "auth.user_id must be a positive decimal id")
        }
        guard let role = Role(rawValue: auth.role) else {
            throw ServiceError(.unauthenticated, "auth.role must be user or admin")
        }
        return Caller(id: id, role: role, origin: auth.origin)
    }
}

/// A service state that checks a caller further before a handler gets it: that the account
/// still exists, say, or was not erased a moment ago (a request signed in before a deletion
/// that arrives after it).
public protocol AdmitsCallers {
    /// The caller as handlers should see it, or an error (`unauthenticated`) that refuses the request.
    func admit(_ caller: Caller) throws -> Caller
}

/// Handlers bound to method declarations: the table answers a method under its declared name,
/// `help` and `sys.methods` show its declared summary, and a write runs on the writer thread.
extension HandlerTable {
    /// Binds a typed method's handler: it takes the method's `Params` and answers its `Result`,
    /// as the compiler checks. A client method's params are held to their declared shape first
    /// (`SchemaCheck`); an internal method's stay tolerant of members they do not know, as
    /// events are. `runsOn: .read` puts a write on a reader thread, for one that first waits
    /// on something slow (a password hash, another service) and then writes in its own short
    /// transaction. A handler bound without a `Caller` is a method anyone may call (it reads
    /// `Caller.optional` if it cares who asks), or one of the catalog's admin writes, which
    /// trust the bus (operators write without a session; the gateway lets only admins through).
    public mutating func on<Params, Result>(
        _ method: Method<Params, Result>, runsOn: HandlerKind? = nil,
        _ handler: @escaping @Sendable (Params, RequestContext, State) throws -> Result
    ) {
        let shape = method.offeredToClients ? HandlerTable.shape(of: Params.self) : nil
        onRaw(method.name, runsOn ?? method.handlerKind, description: method.summary) { context, state in
            let result = try handler(try context.params(Params.self, shape: shape), context, state)
            return Response(body: try JSONCoding.encoder.encode(result))
        }
    }

    /// Binds a typed handler of a method that needs a signed-in caller, resolved from the
    /// request's `auth` before the params are read (`Caller.of`, then the state's
    /// `AdmitsCallers`); an admin method's caller must be an admin (`permission_denied`).
    public mutating func on<Params, Result>(
        _ method: Method<Params, Result>, runsOn: HandlerKind? = nil,
        _ handler: @escaping @Sendable (Params, Caller, RequestContext, State) throws -> Result
    ) {
        let admin = HandlerTable.requiresCaller(method.declaration)
        let shape = HandlerTable.shape(of: Params.self)
        // Who asks first: a stranger learns nothing of a method's params.
        onRaw(method.name, runsOn ?? method.handlerKind, description: method.summary) { context, state in
            let caller = try Caller.checked(context, admin: admin, state: state)
            let result = try handler(try context.params(Params.self, shape: shape), caller, context, state)
            return Response(body: try JSONCoding.encoder.encode(result))
        }
    }

    /// The declared shape of `type`. A shape that cannot be read is a mistake in the code,
    /// found when the service's table is built (every service's is, by its tests).
    static func shape<Params: DeclaredShape>(of type: Params.Type) -> Schema {
        do {
            return try SchemaProbe.shape(of: type)
        } catch {
            preconditionFailure("the params shape of \(type) cannot be read: \(error)")
        }
    }

    /// Binds a handler that reads its own body and builds its own `Response`.
    public mutating func onRaw(_ method: some DeclaresMethod, runsOn: HandlerKind? = nil, _ handler: @escaping RawHandler) {
        let method = method.declaration
        onRaw(method.name, runsOn ?? method.handlerKind, description: method.summary, handler)
    }

    /// Binds a raw handler of a method that needs a signed-in caller (as `on` with a `Caller`).
    public mutating func onRaw(
        _ method: some DeclaresMethod, runsOn: HandlerKind? = nil,
        _ handler: @escaping @Sendable (RequestContext, Caller, State) throws -> Response
    ) {
        let method = method.declaration
        let admin = HandlerTable.requiresCaller(method)
        onRaw(method.name, runsOn ?? method.handlerKind, description: method.summary) { context, state in
            try handler(context, try Caller.checked(context, admin: admin, state: state), state)
        }
    }

    /// Whether `method`'s caller must be an admin; a method anyone may call has no caller to
    /// hand a handler (it reads `Caller.optional` itself).
    private static func requiresCaller(_ method: MethodDeclaration) -> Bool {
        precondition(
            method.access == .user || method.access == .admin,
            "\(method.name) is declared \(method.access.rawValue): its handler cannot require a caller")
        return method.access == .admin
    }
}

extension Caller {
    /// `Caller.of` as `state` admits it when it checks callers (`AdmitsCallers`: its role may
    /// replace the envelope's), then `permission_denied` unless an admin when `admin`.
    static func checked<State>(_ context: RequestContext, admin: Bool, state: State) throws -> Caller {
        var caller = try of(context)
        if let admitting = state as? any AdmitsCallers { caller = try admitting.admit(caller) }
        if admin && !caller.isAdmin { throw ServiceError(.permissionDenied, "\(context.type) needs an admin") }
        return caller
    }
}

extension MethodDeclaration {
    /// The thread a handler of this method runs on unless its binding says otherwise.
    var handlerKind: HandlerKind { kind == .write ? .write : .read }
}

extension RequestContext {
    /// The body's JSON as it came: `{}` when the envelope has none or it is `null`.
    public var bodyJSON: Data { Self.bodies(scannedBody: scannedBody, envelope: envelope)[0] }

    /// Every `body` member of `envelope`, its key read as the decoder reads keys (escapes
    /// resolved); `scannedBody` when the server's header scan found the one body; `{}` for none
    /// or `null`. Never empty.
    public static func bodies(scannedBody: Data?, envelope: Data) -> [Data] {
        let found =
            scannedBody.map { [$0] }
            ?? JSONSpan.members(of: envelope)?.filter { $0.key == "body" }.map { envelope[$0.value] } ?? []
        let bodies = found.map { $0.elementsEqual("null".utf8) ? Data("{}".utf8) : $0 }
        return bodies.isEmpty ? [Data("{}".utf8)] : bodies
    }

    /// The body decoded as `Params`, held first to `shape` when there is one (`SchemaCheck`;
    /// every body, should the envelope repeat it).
    public func params<Params: Decodable>(_ type: Params.Type, shape: Schema?) throws(ServiceError) -> Params {
        try Self.params(type, shape: shape, scannedBody: scannedBody, envelope: envelope)
    }

    /// The body decoded as `Params`, held first to its declared shape: for a handler that
    /// reads its own body (`onRaw`) and has no plainer way to read this one.
    public func checkedParams<Params: DeclaredShape>(_ type: Params.Type) throws(ServiceError) -> Params {
        try Self.checkedParams(type, scannedBody: scannedBody, envelope: envelope)
    }

    /// The body held to its declared shape, then read by `spans` (a reader of plainly shaped
    /// bodies that needs no decoder) when it can, else decoded: what is refused, and how, is
    /// the same either way.
    public func checkedParams<Params: DeclaredShape>(_ type: Params.Type, spans: (Data) -> Params?) throws(ServiceError) -> Params {
        let shape = try Self.shape(of: type)
        let bodies = Self.bodies(scannedBody: scannedBody, envelope: envelope)
        for body in bodies { try SchemaCheck.check(body, against: shape) }
        if let scannedBody, let read = spans(scannedBody) { return read }
        return try JSONCoding.decodeBody(type, fromEnvelope: envelope)
    }

    /// `checkedParams` of a request given as its envelope and scanned body.
    public static func checkedParams<Params: DeclaredShape>(_ type: Params.Type, scannedBody: Data?, envelope: Data) throws(ServiceError) -> Params {
        try params(type, shape: try shape(of: type), scannedBody: scannedBody, envelope: envelope)
    }

    private static func shape<Params: DeclaredShape>(of type: Params.Type) throws(ServiceError) -> Schema {
        do {
            return try SchemaProbe.shape(of: type)
        } catch {
            throw ServiceError(.internal, "the params shape of \(type) cannot be read: \(error)")
        }
    }

    private static func params<Params: Decodable>(_ type: Params.Type, shape: Schema?, scannedBody: Data?, envelope: Data) throws(ServiceError) -> Params {
        if let shape {
            for body in bodies(scannedBody: scannedBody, envelope: envelope) { try SchemaCheck.check(body, against: shape) }
        }
        return try JSONCoding.decodeBody(type, fromEnvelope: envelope)
    }
}
