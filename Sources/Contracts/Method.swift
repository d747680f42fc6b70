import Bus

// Every method of Tourbus, declared once by its owner: its name, who answers it, who may call
// it, whether it changes anything, its one-line summary, whether a retry is safe, and the
// types of its params and result. The services bind their handlers to these declarations (the
// compiler checks a handler takes the params and answers the result), and the gateway derives
// its routing, access rules and `help` from them; nowhere else is a method's name written.

/// Who may call a method.
public enum Access: String, Sendable, Codable, CaseIterable {
    /// Anyone, signed in or not (a signed-in caller is still passed on to the service).
    case anyone
    /// A signed-in user (or admin).
    case user
    /// A signed-in admin.
    case admin
    /// Only the services and operators on the bus: the gateway never offers it.
    case `internal`
}

/// Whether a method changes state. A service runs a write on its one writer thread unless
/// it binds the handler to a reader (one that first waits on something slow).
public enum MethodKind: String, Sendable, Codable {
    case read, write
}

/// Who answers a method: one of the services, every service's runtime (`sys.*`), or the
/// gateway itself (its built-ins).
public enum MethodOwner: String, Sendable, Codable, CaseIterable, Comparable {
    case catalog, favorites, notify, search, social
    /// Every service answers it (the runtime's `sys.*`).
    case runtime
    /// The gateway answers it itself.
    case gateway

    /// The services a gateway routes to, by the names their endpoints are configured under.
    public static let services: [MethodOwner] = [.catalog, .favorites, .notify, .search, .social]

    public static func < (a: MethodOwner, b: MethodOwner) -> Bool { a.rawValue < b.rawValue }
}

/// One method, as its owner declares it.
public struct MethodDeclaration: Sendable, Hashable, CustomStringConvertible {
    /// The name clients and services call it by (`search.nearby`).
    public let name: String
    public let owner: MethodOwner
    public let access: Access
    public let kind: MethodKind
    /// One line: what it does and its main parameters (`help` shows it).
    public let summary: String
    /// Whether sending it again after a lost reply does no harm: reads, and writes whose
    /// repeat changes nothing (Protocols/ says which).
    public let retrySafe: Bool
    /// Whether a `token` param is the method's own (a share link's), passed on as it came,
    /// rather than a session token standing for this one request (the gateway's rule).
    public let ownsTokenParam: Bool
    /// The type its params decode as, and so their shape.
    public let params: any DeclaredShape.Type
    /// The type its result decodes as.
    public let result: any Decodable.Type
    /// The errors its own work can answer, as declared.
    public let declaredErrors: [MethodError]
    /// How stale its answer may be, in milliseconds, when its service is replicated: a
    /// follower answers it from its own copy while it has heard from its leader within this
    /// long (`Int.max`: the answer is about the process itself, `sys.ping`). Nil: only the
    /// leader answers it, as it does every write.
    public let staleMilliseconds: Int?

    /// Made by `Method`, which holds the types.
    init(
        _ name: String, _ owner: MethodOwner, _ access: Access, _ kind: MethodKind, _ summary: String,
        retrySafe: Bool?, ownsTokenParam: Bool, staleMilliseconds: Int?, params: any DeclaredShape.Type, result: any Decodable.Type,
        errors: [MethodError]
    ) {
        self.staleMilliseconds = kind == .read ? staleMilliseconds : nil
        self.name = name
        self.owner = owner
        self.access = access
        self.kind = kind
        self.summary = summary
        self.retrySafe = retrySafe ?? (kind == .read)
        self.ownsTokenParam = ownsTokenParam
        self.params = params
        self.result = result
        declaredErrors = errors
    }

    public var description: String { name }

    /// Whether a client may call it through the gateway (it is neither internal nor the runtime's).
    public var offeredToClients: Bool { access != .internal && owner != .runtime }

    /// Declarations are one per name.
    public static func == (a: MethodDeclaration, b: MethodDeclaration) -> Bool { a.name == b.name }
    public func hash(into hasher: inout Hasher) { hasher.combine(name) }
}

/// An error a method can answer: its code, the param it names (a dotted path, `near.lat`;
/// nil when it names none) and when.
public struct MethodError: Sendable, Hashable {
    public let code: ErrorCode
    public let field: String?
    /// When it is answered, in a few words.
    public let when: String

    public init(_ code: ErrorCode, _ field: String?, _ when: String) {
        self.code = code
        self.field = field
        self.when = when
    }

    public static func notFound(_ field: String?, _ when: String) -> MethodError { MethodError(.notFound, field, when) }
    public static func alreadyExists(_ field: String?, _ when: String) -> MethodError { MethodError(.alreadyExists, field, when) }
    public static func conflict(_ field: String?, _ when: String) -> MethodError { MethodError(.conflict, field, when) }
    public static func invalid(_ field: String?, _ when: String) -> MethodError { MethodError(.invalidArgument, field, when) }
    public static func permissionDenied(_ field: String?, _ when: String) -> MethodError { MethodError(.permissionDenied, field, when) }
    public static func unauthenticated(_ field: String?, _ when: String) -> MethodError { MethodError(.unauthenticated, field, when) }
    public static func tooLarge(_ field: String?, _ when: String) -> MethodError { MethodError(.tooLarge, field, when) }
    public static func rateLimited(_ field: String?, _ when: String) -> MethodError { MethodError(.rateLimited, field, when) }
    public static func unavailable(_ field: String?, _ when: String) -> MethodError { MethodError(.unavailable, field, when) }

    /// What any method may answer, whatever it is: the gateway's and the bus's limits and
    /// troubles (too many requests, too large, a service down or out of time).
    public static let anyMethod: [MethodError] = [
        MethodError(.rateLimited, nil, "the client sends more than its share"),
        MethodError(.tooLarge, nil, "the request or its reply is over the size limit"),
        MethodError(.unavailable, nil, "the service is down, overloaded or busy"),
        MethodError(.deadlineExceeded, nil, "the answer did not come within the deadline"),
    ]
}

extension MethodDeclaration {
    /// Every error the method can answer: those its params' checks imply (`invalid_argument`
    /// naming a param, when it takes any), its access implies (`unauthenticated`, and
    /// `permission_denied` for an admin's), then the ones its own work can, as declared.
    /// `MethodError.anyMethod` come on top for every method.
    public var errors: [MethodError] {
        var implied: [MethodError] = []
        if let shape = try? SchemaProbe.shape(of: params), case .object(let object) = shape, !object.members.isEmpty {
            implied.append(.invalid(nil, "a param is unknown, missing, of the wrong type or out of its range, or the request is malformed: the error's field names it"))
        } else {
            implied.append(.invalid(nil, "the request is malformed (params, deadline_ms): the error's field names it"))
        }
        if access == .user || access == .admin {
            implied.append(.unauthenticated(nil, "the caller is not signed in, its session ended, or the token given is unknown or expired"))
        } else if !ownsTokenParam && owner != .gateway {
            // The gateway's own built-ins take a session token and do not check it.
            implied.append(.unauthenticated("token", "the token given is unknown or expired"))
        }
        if access == .admin { implied.append(.permissionDenied(nil, "the caller is not an admin")) }
        return implied + declaredErrors
    }
}

/// Anything that declares a method: a declaration, or a typed `Method`.
public protocol DeclaresMethod: Sendable {
    var declaration: MethodDeclaration { get }
}

extension DeclaresMethod {
    /// The name clients and services call it by.
    public var name: String { declaration.name }
}

extension MethodDeclaration: DeclaresMethod {
    public var declaration: MethodDeclaration { self }
}

/// A method with the types of its params and result: a handler bound to it takes `Params` and
/// answers `Result`, as the compiler checks; the params' declared shape (`DeclaredShape`) is
/// what the service holds a request to, and what the method's schema says.
@dynamicMemberLookup
public struct Method<Params: DeclaredShape, Result: Codable & Sendable>: DeclaresMethod {
    public let declaration: MethodDeclaration

    /// `errors` are those the method's own work can answer (not found, a conflict, a limit of
    /// the service's); those every method can are implied (see `MethodDeclaration.errors`).
    public init(
        _ name: String, _ owner: MethodOwner, _ access: Access, _ kind: MethodKind, _ summary: String,
        errors: [MethodError] = [], retrySafe: Bool? = nil, ownsTokenParam: Bool = false, staleMilliseconds: Int? = nil
    ) {
        declaration = MethodDeclaration(
            name, owner, access, kind, summary, retrySafe: retrySafe, ownsTokenParam: ownsTokenParam, staleMilliseconds: staleMilliseconds,
            params: Params.self, result: Result.self, errors: errors)
    }

    public subscript<Value>(dynamicMember path: KeyPath<MethodDeclaration, Value>) -> Value { declaration[keyPath: path] }
}

/// The namespaces of method declarations, one per leading word of the names, each extended
/// by the file of the method's owner (`Methods.Search.recent` is favorites').
public enum Methods {
    public enum Gateway {}
    public enum System {}
    public enum Catalog {}
    public enum Strings {}
    public enum Tours {}
    public enum Library {}
    public enum Search {}
    public enum Directions {}
    public enum Auth {}
    public enum Admin {}
    public enum Profile {}
    public enum Reviews {}
    public enum Social {}
    public enum Share {}
    public enum Groups {}
    public enum Chat {}
    public enum Devices {}
    public enum Annotations {}
    public enum Notify {}
    public enum Favorites {}
    public enum Pins {}

    /// Every method, in the order the owners' lists give.
    public static let all: [MethodDeclaration] = (gatewayOwned + runtimeOwned + catalogOwned + favoritesOwned + notifyOwned + searchOwned + socialOwned)
        .map(\.declaration)

    /// Each method by its name.
    public static let byName: [String: MethodDeclaration] = Dictionary(all.map { ($0.name, $0) }, uniquingKeysWith: { first, _ in first })

    /// The methods `owner` answers.
    public static func owned(by owner: MethodOwner) -> [MethodDeclaration] { all.filter { $0.owner == owner } }

    /// The methods a gateway offers clients: its built-ins and the services' methods that are
    /// not internal.
    public static var offered: [MethodDeclaration] { all.filter(\.offeredToClients) }
}

/// The reply of a service's periodic request that does its work in slices: `more` when some
/// is left, so the next comes sooner (`PeriodicRequest.busyIntervalMilliseconds`).
public struct PeriodicWork: Codable, Sendable, Equatable {
    public var more: Bool

    public init(more: Bool) { self.more = more }
}
