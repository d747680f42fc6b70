import Bus
import Contracts
import Foundation
import ServiceCore
import Storage

/// One handler thread's view of its service: its own database connection and the outbox.
///
/// Made on the thread that uses it and never shared; a service wraps it in its own `State`.
public final class ServiceWorker {
    /// This thread's connection to the service's SQLite file.
    public let db: Database
    /// The service's configuration.
    public let config: ServiceConfig
    /// The service's logger.
    public let logger: Logger
    /// Peers' request clients, shared by all threads.
    public let peers: PeerClients
    private let relayWakeup: Wakeup?
    private let outlet: PushOutlet?
    private var emitted = false
    /// Pushes of the work not yet committed.
    private var pending: [Push] = []
    /// Background work to wake once the work has committed.
    private var wakes: [BackgroundSignal] = []

    init(db: Database, config: ServiceConfig, logger: Logger, peers: PeerClients, relayWakeup: Wakeup?, pushes: PushOutlet?) {
        self.db = db
        self.config = config
        self.logger = logger
        self.peers = peers
        self.relayWakeup = relayWakeup
        outlet = pushes
    }

    /// Sends `push` to its user's subscribed connections, through every gateway, once the
    /// handler's work has committed (a write's transaction; at once after a read handler). A
    /// write that throws, or a batch that fails to commit, sends none of its pushes. Delivery
    /// is at most once; a service that does not publish sends nothing.
    public func push(_ push: Push) {
        pending.append(push)
    }

    /// Pushes recorded so far, to drop those of a write that is undone (`dropPushes(after:)`).
    var pushMark: Int { pending.count }

    /// Forgets the pushes recorded after `mark` (their work was undone).
    func dropPushes(after mark: Int) {
        if pending.count > mark { pending.removeSubrange(mark...) }
    }

    /// Appends an event to the outbox. Call it inside the `db.transaction` that makes the
    /// change, so the change and its event commit (or vanish) together.
    public func emit<Body: Encodable>(_ type: String, _ body: Body) throws {
        try emit(type, json: try JSONCoding.encoder.encode(body))
    }

    /// Appends an event whose body is already JSON (as `JSONCoding.encoder` makes it), in the
    /// transaction that makes the change, like `emit(_:_:)`.
    public func emit(_ type: String, json body: Data) throws {
        _ = try Outbox(database: db).append(type: type, body: body)
        emitted = true
    }

    /// Appends one event of `type` per row of `table`, its JSON body `body` (an expression over
    /// the row), in the order of `orderedBy`, with one statement, in the transaction that makes
    /// the change, like `emit(_:json:)`.
    public func emit(_ type: String, bodies body: String, from table: String, orderedBy order: String) throws {
        if try Outbox(database: db).append(type: type, bodies: body, from: table, orderedBy: order) > 0 { emitted = true }
    }

    /// Wakes `signal`'s background work once the handler's work has committed (a write's
    /// transaction, which may hold several handlers' work): woken sooner, it would look for
    /// the work before it is there, and sleep until its next idle wake.
    public func wakeAfterCommit(_ signal: BackgroundSignal) {
        wakes.append(signal)
    }

    /// Wakes the relay if this thread emitted since the last call, hands it the pushes
    /// recorded, and wakes the background work asked for (after their transaction committed).
    func flushEmitted() {
        for signal in wakes { signal.wake() }
        wakes.removeAll()
        if !pending.isEmpty {
            outlet?.send(pending)
            pending.removeAll()
        }
        guard emitted else { return }
        emitted = false
        relayWakeup?.signal()
    }
}

/// What every service's per-thread state offers the runtime.
public protocol ServiceState: AnyObject, SendableMetatype {
    /// The worker the state was made from.
    var worker: ServiceWorker { get }
}

/// A page of `sys.snapshot`: events that rebuild the state from nothing, and where to go on.
public struct SnapshotPage: Sendable {
    /// Each item as an event (type and JSON body), as if it had just been written.
    public var events: [(type: String, body: Data)]
    /// The opaque key to continue after, nil on the last page.
    public var next: String?

    public init(events: [(type: String, body: Data)], next: String?) {
        self.events = events
        self.next = next
    }
}

/// A service: its name, schema, handlers and, if it publishes, how to snapshot its state.
///
/// This is all a new service writes besides its domain code; `ServiceRuntime` does the rest.
public struct ServiceDefinition<State: ServiceState>: Sendable {
    public var name: String
    public var migrations: [Migration]
    public var handlers: HandlerTable<State>
    /// Makes the per-thread state from a worker.
    public var makeState: @Sendable (ServiceWorker) throws -> State
    /// Whether the service publishes events (then it answers `sys.replay` and `sys.snapshot`).
    public var publishes: Bool
    /// Produces one snapshot page after an opaque key (nil: from the start), at most `limit` items.
    public var snapshot: (@Sendable (State, _ after: String?, _ limit: Int) throws -> SnapshotPage)?
    /// Other services' events this service keeps a copy of, by source name (a configured peer).
    public var subscriptions: [String: EventApplier]
    /// Sources of `subscriptions` whose replicas each publish a stream of their own (search's
    /// replicas each record the searches they answered): the peer's i-th request endpoint and
    /// i-th event endpoint are one replica, followed by a subscriber of its own whose cursor is
    /// keyed `NAME-i` (`NAME` when there is one). See `PeerStream`.
    public var perReplica: Set<String> = []
    /// Events that request handlers hand over to be appended to the outbox in groups, off the
    /// request path (`DeferredEvents`); nil when the service has none.
    public var deferredEvents: DeferredEvents?
    /// Memory settings of each of the service's SQLite connections.
    public var tuning: DatabaseTuning
    /// Requests the service sends itself, each at start and then every interval (housekeeping
    /// such as purging what expired), through its own request endpoint like any client's, so
    /// they run on the thread and in the transactions their kind says.
    public var periodic: [PeriodicRequest] = []
    /// Work on threads of the service's own, off the request path (`BackgroundWork`), each
    /// started after the request server and stopped before it.
    public var background: [BackgroundWork] = []

    public init(
        name: String, migrations: [Migration], handlers: HandlerTable<State>, publishes: Bool = false,
        snapshot: (@Sendable (State, String?, Int) throws -> SnapshotPage)? = nil,
        subscriptions: [String: EventApplier] = [:], tuning: DatabaseTuning = DatabaseTuning(),
        makeState: @escaping @Sendable (ServiceWorker) throws -> State
    ) {
        self.subscriptions = subscriptions
        self.tuning = tuning
        self.name = name
        self.migrations = migrations
        self.handlers = handlers
        self.makeState = makeState
        self.publishes = publishes
        self.snapshot = snapshot
    }
}

/// A request a service sends itself at start, then `intervalMilliseconds` after each one is
/// answered, with an empty body; `busyIntervalMilliseconds` after one answered `PeriodicWork`
/// with `more` (work left that it did a slice of).
public struct PeriodicRequest: Sendable {
    public var method: MethodDeclaration
    public var intervalMilliseconds: Int
    public var busyIntervalMilliseconds: Int?

    public init(_ method: some DeclaresMethod, intervalMilliseconds: Int, busyIntervalMilliseconds: Int? = nil) {
        self.method = method.declaration
        self.intervalMilliseconds = intervalMilliseconds
        self.busyIntervalMilliseconds = busyIntervalMilliseconds
    }
}

/// Request clients to other services, made once per process from the configured peers.
public final class PeerClients: Sendable {
    private let clients: [String: RPCClient]

    init(context: ZMQContext, config: CommonConfig, logger: Logger) throws {
        var clients: [String: RPCClient] = [:]
        for (name, peer) in config.peers where !peer.rpc.isEmpty {
            clients[name] = try RPCClient(
                context: context, endpoints: peer.rpc, options: peer.clientOptions(curve: config.curve(for: name)),
                logger: logger.named("\(logger.component)->\(name)"))
        }
        self.clients = clients
    }

    /// The client of peer `name`, or `unavailable` when it is not configured.
    public func client(_ name: String) throws(ServiceError) -> RPCClient {
        guard let client = clients[name] else { throw ServiceError(.unavailable, "no endpoint configured for \(name)") }
        return client
    }

    func closeAll() { clients.values.forEach { $0.close() } }
}
