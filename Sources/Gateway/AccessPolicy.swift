import Bus
import Contracts

/// The methods the gateway routes to a service, the service that answers each and who may
/// call it, derived from the methods' declarations (`Methods`): a method that is internal, the
/// runtime's (`sys.*`) or not declared is not offered.
public struct AccessPolicy: Sendable {
    private let routes: [String: MethodDeclaration]

    /// A policy routing `methods`, each to its owner; internal and undeclared ones stay on the bus.
    public init(_ methods: [MethodDeclaration]) {
        routes = Dictionary(
            methods.filter { $0.offeredToClients && $0.owner != .gateway }.map { ($0.name, $0) },
            uniquingKeysWith: { first, _ in first })
    }

    /// The declaration of a method the gateway routes to a service, or nil.
    public func rule(for method: String) -> MethodDeclaration? { routes[method] }

    /// The methods routed to `service`, sorted by name.
    public func methods(of service: String) -> [MethodDeclaration] {
        routes.values.filter { $0.service == service }.sorted { $0.name < $1.name }
    }

    /// Tourbus's services, as Contracts declares their methods.
    public static let standard = AccessPolicy(Methods.all)
}

extension MethodDeclaration {
    /// The name of the backend that answers it, as the gateway's configuration names services.
    public var service: String { owner.rawValue }
}
