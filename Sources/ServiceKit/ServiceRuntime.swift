import Bus
import Contracts
import Foundation
import Replication
import ServiceCore
import Storage
import Synchronization

#if canImport(Glibc)
    import Glibc
#endif

/// Runs a `ServiceDefinition`: migrates its database, serves its handlers plus the `sys.*`
/// requests, relays its outbox, and stops gracefully.
///
/// Its pieces start in this order and stop in the reverse one (`Lifecycle`): the clients to
/// its peers, the outbox relay, the event subscribers, the request server. So a stop first
/// stops taking requests and finishes those in flight, then stops applying events, then
/// publishes what is committed, and closes the peer clients last.
public final class ServiceRuntime<State: ServiceState>: Service {
    /// What was bound.
    public let endpoints: BoundEndpoints
    /// The request server (for its stats).
    public let server: RPCServer<State>
    private let lifecycle: Lifecycle
    private let logger: Logger
    /// The ZAP handler, when the bus is secured.
    private let authenticator: ZAPAuthenticator?
    /// Whether this is a replica of a replicated service (its Raft port admits its replicas' key).
    private let replicated: Bool

    /// Starts the service; throws when the database cannot be opened or migrated, or a bind
    /// fails (after stopping what had started).
    public init(definition: ServiceDefinition<State>, config: ServiceConfig, context: ZMQContext, logger: Logger? = nil) throws {
        let logger = logger ?? Logger(component: definition.name, level: config.logLevel)
        self.logger = logger
        let path = config.resolvedDatabasePath
        let folder = (path as NSString).deletingLastPathComponent
        if !folder.isEmpty { try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true) }

        // The runtime's own tables first, so a service's migration may reset its cursors.
        var migrations: [Migration] = []
        if definition.publishes { migrations += OutboxSchema.migrations }
        if !definition.subscriptions.isEmpty { migrations += CursorSchema.migrations }
        migrations += definition.migrations

        let lifecycle = Lifecycle(logger: logger)
        self.lifecycle = lifecycle
        replicated = config.replica != nil
        do {
            // With CURVE keys, the ZAP handler admits listed clients before any server socket
            // binds, a replica's Raft port among them (it admits only its replicas' key).
            authenticator = try config.bus.map { keys in
                try lifecycle.start("CURVE authenticator", stop: { $0.stop() }) {
                    try ZAPAuthenticator(
                        context: context, allowed: keys.allowed, domains: ServiceRuntime.zapDomains(keys, replicated: config.replica != nil),
                        logger: logger)
                }
            }
        } catch {
            lifecycle.stop()
            throw error
        }
        let database: DatabaseFile
        // A replica's: whether it leads (only then it writes, publishes and runs its background
        // work), and its part in the cluster for sys.stats.
        let leading: (@Sendable () -> Bool)?
        let leaderTerm: (@Sendable () -> UInt64?)?
        let replication: @Sendable () -> ServiceStats.Replication?
        // A replica's door: what it answers when it does not lead.
        var admit: (@Sendable (String) -> ServiceError?)?
        var transfer: (@Sendable (Int) throws -> Int)?
        do {
            if let replica = config.replica {
                let servers = config.raft.enumerated().map { RaftServer(id: UInt64($0.offset + 1), address: $0.element) }
                // On a secured bus, Raft's links go through CURVE too.
                let tunnel = try config.bus.map { keys in
                    try lifecycle.start("Raft tunnel", stop: { $0.stop() }) {
                        try RaftTunnel(
                            context: context, listen: config.raftBind ?? config.raft[replica - 1],
                            peers: Dictionary(uniqueKeysWithValues: servers.filter { $0.id != UInt64(replica) }.map { ($0.id, $0.address) }),
                            keys: keys.pair, logger: logger)
                    }
                }
                let replicated = try lifecycle.start("replication", stop: { $0.stop() }) {
                    try ReplicatedDatabase(
                        name: (path as NSString).lastPathComponent, id: UInt64(replica), servers: servers,
                        bind: tunnel == nil ? config.raftBind : nil, tunnel: tunnel,
                        directory: (path as NSString).deletingPathExtension + ".raft", logger: logger)
                }
                database = DatabaseFile(path: replicated.name, shared: replicated.file)
                leading = { replicated.node.isReadyLeader }
                leaderTerm = {
                    let status = replicated.node.status
                    return status.isReadyLeader ? status.term : nil
                }
                replication = {
                    let status = replicated.node.status
                    return ServiceStats.Replication(
                        replica: replica, role: status.role.rawValue, ready: status.isReadyLeader, term: status.term,
                        leader: status.leaderID == 0 ? nil : Int(status.leaderID), leaderAddress: status.leaderAddress,
                        commitIndex: status.commitIndex, appliedIndex: status.appliedIndex)
                }
                transfer = { to throws(ServiceError) in
                    do throws(ReplicationError) { return Int(try replicated.node.transfer(to: UInt64(to))) } catch {
                        throw error.isBadTarget
                            ? ServiceError.invalid("to", "no handover: replica \(to) is not another replica")
                            : ServiceError(.unavailable, "no handover: \(error.message)")
                    }
                }
                admit = ReplicaDoor.admit(service: definition.name, replica: replica, leads: { replicated.node.isReadyLeader }) {
                    replicated.node.status
                }
                try ServiceRuntime.migrate(replicated, database, migrations, logger: logger)
            } else {
                // Migrate once, before any worker opens its own connection.
                database = DatabaseFile(path: path)
                leading = nil
                leaderTerm = nil
                replication = { nil }
                let applied = try database.open().migrate(migrations)
                if !applied.isEmpty {
                    logger.info("migrated", ["database": path, "applied": applied.map { "\($0.domain)/\($0.version)" }.joined(separator: ",")])
                }
            }
        } catch {
            lifecycle.stop()
            throw error
        }
        do {
            let peers = try lifecycle.start("peer clients", stop: { $0.closeAll() }) {
                try PeerClients(context: context, config: config.common, logger: logger)
            }
            let relay =
                definition.publishes
                ? try lifecycle.start("outbox relay", stop: { $0.stop() }) {
                    try OutboxRelay(
                        context: context, bind: config.publish, curveSecretKey: config.bus?.pair.secretKey, database: database,
                        heartbeatMilliseconds: config.heartbeatMilliseconds, retention: config.outboxRetention, leading: leading, logger: logger)
                }
                : nil

            // Started after the relay and before the request server, so it stops after every
            // handler that hands it events is done, and appends what is left before the relay's
            // last send.
            if let deferred = definition.deferredEvents {
                _ = try lifecycle.start("deferred events", stop: { $0.stop() }) {
                    try DeferredEventWriter(deferred, database: database, tuning: definition.tuning, relayWakeup: relay?.wakeup, logger: logger)
                }
            }

            var subscribers: [EventSubscriber] = []
            for (source, applier) in definition.subscriptions.sorted(by: { $0.key < $1.key }) {
                guard let peer = config.peers[source], !peer.publish.isEmpty, !peer.rpc.isEmpty else {
                    logger.warn("not subscribed: no request and event endpoints configured", ["source": source])
                    continue
                }
                for stream in try PeerStream.streams(of: source, peer, perReplica: definition.perReplica.contains(source)) {
                    var options = SubscriptionOptions(source: stream.key, publishEndpoints: stream.publish, rpcEndpoints: stream.rpc, database: database)
                    options.topic = source
                    options.tuning = definition.tuning
                    options.relayWakeup = relay?.wakeup
                    options.curve = config.common.curve(for: source)
                    options.rpcFollowsLeader = peer.followsLeader
                    options.leadership = leaderTerm
                    subscribers.append(
                        try lifecycle.start("subscriber to \(stream.key)", stop: { $0.stop() }) {
                            try EventSubscriber(context: context, options: options, applier: applier, logger: logger)
                        })
                }
            }
            let following = subscribers

            var table = definition.handlers
            // Read handlers may emit too: one that first waits on something slow (a password hash,
            // another service) writes in its own short transaction on its reader thread.
            table.wrap(.read) { context, state, inner in
                defer { state.worker.flushEmitted() }
                let mark = state.worker.pushMark
                do {
                    return try inner(context, state)
                } catch {
                    state.worker.dropPushes(after: mark)
                    throw error
                }
            }
            // Group commit: the writes queued together run in one transaction, each in its own
            // savepoint (one that throws undoes only itself); the server answers them after the
            // commit, and the relay is woken after it.
            table.wrap(.write) { context, state, inner in
                let mark = state.worker.pushMark
                do {
                    return try state.worker.db.transaction { try inner(context, state) }
                } catch {
                    state.worker.dropPushes(after: mark)
                    throw error
                }
            }
            table.writeBatch = { state, body in
                defer { state.worker.flushEmitted() }
                do {
                    try state.worker.db.transaction(.immediate, body)
                } catch {
                    state.worker.dropPushes(after: 0)
                    throw error
                }
            }
            let stats = ServerStats()
            ServiceRuntime.addSystemHandlers(
                to: &table, definition: definition, stats: stats, authenticator: self.authenticator, replication: replication,
                transfer: transfer
            ) { following.map(\.status) }

            var options = RPCServerOptions()
            options.readers = config.readers
            options.maxRequestBytes = config.maxRequestBytes
            options.maxJSONDepth = config.maxJSONDepth
            options.curveSecretKey = config.bus?.pair.secretKey
            options.admit = admit
            let wakeup = relay?.wakeup
            let outlet = relay?.pushes
            let makeState = definition.makeState
            let tuning = definition.tuning
            server = try lifecycle.start("request server", stop: { $0.stop() }) {
                try RPCServer(context: context, bind: config.bind, table: table, options: options, stats: stats, logger: logger) { _ in
                    let db = try database.open()
                    try db.tune(tuning)
                    return try makeState(ServiceWorker(db: db, config: config, logger: logger, peers: peers, relayWakeup: wakeup, pushes: outlet))
                }
            }
            let authenticator = self.authenticator
            let metrics = try config.metricsListen.map { listen in
                try lifecycle.start("metrics", stop: { $0.stop() }) {
                    try MetricsServer(
                        listen: listen, logger: logger,
                        render: ServiceRuntime.metrics(
                            service: definition.name, stats: stats, relay: relay,
                            subscribers: following, authenticator: authenticator, replication: replication))
                }
            }
            endpoints = BoundEndpoints(service: definition.name, rpc: server.endpoints, publish: relay?.endpoints ?? [], metrics: metrics?.endpoint)
            for work in definition.background {
                _ = try lifecycle.start("background \(work.name)", stop: { $0.stop() }) {
                    try BackgroundRunner(work, database: database, tuning: tuning, peers: peers, leading: leading, logger: logger)
                }
            }
            if !definition.periodic.isEmpty {
                let own = server.endpoints
                _ = try lifecycle.start("periodic requests", stop: { $0.stop() }) {
                    try PeriodicRequests(
                        context: context, endpoints: own, curve: config.bus?.clientOfSelf, requests: definition.periodic, leading: leading, logger: logger)
                }
            }
        } catch {
            lifecycle.stop()
            throw error
        }
    }

    /// The ZAP domains besides the bus's: a replica's Raft port admits the keys the suite
    /// lists under the service's own name, which its replicas share, and no other.
    static func zapDomains(_ keys: BusKeys, replicated: Bool) -> [String: [[UInt8]]] {
        replicated ? [RaftTunnel.zapDomain: keys.own] : [:]
    }

    /// A replica's migration: the leader migrates (its commits replicate the schema); a
    /// follower waits until what it has applied holds every migration. Either waits at most
    /// a minute for a leader.
    private static func migrate(_ replicated: ReplicatedDatabase, _ database: DatabaseFile, _ migrations: [Migration], logger: Logger) throws {
        let db = try database.open()
        let deadline = monotonicNanos() + 60_000_000_000
        while monotonicNanos() < deadline {
            let status = replicated.node.status
            if status.isReadyLeader {
                let applied = try db.migrate(migrations)
                if !applied.isEmpty {
                    logger.info("migrated, as the leader", ["applied": applied.map { "\($0.domain)/\($0.version)" }.joined(separator: ",")])
                }
                return
            }
            if status.role == .follower, status.leaderID != 0, status.appliedIndex >= status.commitIndex, try db.hasApplied(migrations) { return }
            usleep(20_000)
        }
        throw ReplicationError("no leader with the schema within a minute: \(replicated.node.status)")
    }

    /// Admits the keys `config` lists from now on (a rotation: see Protocols/configuration.md).
    public func reload(_ config: CommonConfig) {
        guard let authenticator else {
            if config.bus != nil { logger.warn("SIGHUP: CURVE keys are listed now, but the bus was started plain; restart to secure it", [:]) }
            return
        }
        guard let keys = config.bus else {
            logger.warn("SIGHUP: the configuration lists no CURVE keys any more; still admitting the keys listed before (restart to run plain)", [:])
            return
        }
        authenticator.allow(keys.allowed, domains: ServiceRuntime.zapDomains(keys, replicated: replicated))
        logger.info("SIGHUP: CURVE keys reloaded", ["keys": keys.allowed.count])
    }

    /// Stops the periodic requests, stops taking requests, finishes those in flight, stops
    /// applying events, publishes what is committed, closes everything. Later calls do nothing.
    public func stop() {
        guard lifecycle.stop() else { return }
        logger.info("service stopped", [:])
    }

    /// What the metrics port serves: the request server's counters, the outbox head, each
    /// subscriber's cursor and lag, the CURVE decisions (see Protocols/configuration.md#metrics).
    static func metrics(
        service: String, stats: ServerStats, relay: OutboxRelay?, subscribers: [EventSubscriber],
        authenticator: ZAPAuthenticator?, replication: @escaping @Sendable () -> ServiceStats.Replication?
    ) -> @Sendable () -> String {
        {
            var text = MetricsText()
            text.requests(service: service, stats.methodMetrics(), inFlight: stats.inFlight)
            if let replica = replication() {
                let labels: KeyValuePairs = ["service": service, "replica": "\(replica.replica)"]
                text.family("tourbus_replication_leader", "gauge", "Whether this replica leads and takes writes.")
                text.sample("tourbus_replication_leader", labels, replica.ready ? "1" : "0")
                text.family("tourbus_replication_term", "gauge", "The Raft term this replica is in.")
                text.sample("tourbus_replication_term", labels, "\(replica.term)")
                text.family("tourbus_replication_commit_index", "gauge", "The last Raft entry this replica knows a majority holds.")
                text.sample("tourbus_replication_commit_index", labels, "\(replica.commitIndex)")
                text.family("tourbus_replication_applied_index", "gauge", "The last Raft entry applied to this replica's database.")
                text.sample("tourbus_replication_applied_index", labels, "\(replica.appliedIndex)")
            }
            if let relay {
                text.family("tourbus_outbox_head", "gauge", "Seq of the last event the service published.")
                text.sample("tourbus_outbox_head", ["service": service], "\(relay.head)")
            }
            text.subscribers(service: service, subscribers.map(\.status))
            if let decisions = authenticator?.decisions { text.curve(service: service, admitted: decisions.admitted, refused: decisions.refused) }
            return text.text
        }
    }

    // MARK: sys.*

    private static func addSystemHandlers(
        to table: inout HandlerTable<State>, definition: ServiceDefinition<State>, stats: ServerStats,
        authenticator: ZAPAuthenticator?, replication: @escaping @Sendable () -> ServiceStats.Replication?,
        transfer: (@Sendable (Int) throws -> Int)?, subscriptions: @escaping @Sendable () -> [SubscriberStatus]
    ) {
        let name = definition.name
        table.on(Methods.System.ping) { (_: Empty, _, _) -> PingReply in
            PingReply(service: name, time: Logger.timestamp())
        }
        // The service's own request types: sys.* belong to the runtime and are not offered to clients.
        let methods = MethodList(methods: (definition.handlers.descriptions.map { MethodList.Method(type: $0.type, description: $0.description) }))
        table.on(Methods.System.methods) { (_: Empty, _, _) -> MethodList in methods }
        let publishes = definition.publishes
        table.on(Methods.System.stats) { (_: Empty, _, state) -> ServiceStats in
            var outbox: ServiceStats.Outbox?
            if publishes {
                let box = Outbox(database: state.worker.db)
                outbox = ServiceStats.Outbox(epoch: try box.epoch(), head: try box.head(), first: try box.firstAvailable())
            }
            let following = subscriptions()
            let curve = authenticator.map { ServiceStats.Curve(admitted: $0.decisions.admitted, refused: $0.decisions.refused) }
            return ServiceStats(
                service: name, server: stats.snapshot(), outbox: outbox, subscriptions: following.isEmpty ? nil : following, curve: curve,
                replication: replication())
        }
        table.on(Methods.System.transfer) { (request: TransferRequest, _, _) -> TransferReply in
            guard let transfer else { throw ServiceError(.unavailable, "\(name) is not replicated") }
            if let to = request.to, to < 1 { throw ServiceError.invalid("to", "a replica number is 1 or more") }
            return TransferReply(leader: try transfer(request.to ?? 0))
        }
        let backups = BackupGate()
        table.on(Methods.System.backup) { (request: BackupRequest, _, state) -> BackupReply in
            try backups.run(service: name) {
                let started = monotonicNanos()
                let bytes = try DatabaseBackup.write(from: state.worker.db, to: request.to)
                var epoch: String?
                var head: Int64?
                if publishes {
                    // The copy's own outbox says which events its state includes.
                    let copy = Outbox(database: try Database(path: request.to, readOnly: true))
                    epoch = try copy.epoch()
                    head = try copy.head()
                }
                return BackupReply(
                    service: name, file: request.to, bytes: bytes, epoch: epoch, head: head,
                    milliseconds: Int((monotonicNanos() - started) / 1_000_000))
            }
        }
        guard publishes else { return }
        table.onRaw(Methods.System.replay) { context, state in
            let request = try context.body(ReplayRequest.self)
            let limit = SystemRequests.batch.clamped(request.limit)
            guard request.after >= 0 else { throw ServiceError.invalid("after", "must be 0 or more") }
            let db = state.worker.db
            return try db.transaction(.deferred) {
                let outbox = Outbox(database: db)
                let head = try outbox.head()
                let first = try outbox.firstAvailable()
                let epoch = try outbox.epoch()
                let trimmed = request.after < head && (first ?? Int64.max) > request.after + 1
                let rows = trimmed ? [] : try outbox.read(after: request.after, limit: limit)
                let frames = rows.map { EnvelopeCoding.event(seq: $0.seq, type: $0.type, ts: $0.ts, epoch: epoch, body: $0.body) }
                let reply = ReplayReply(epoch: epoch, head: head, first: first, trimmed: trimmed, count: frames.count)
                return Response(body: try JSONCoding.encoder.encode(reply), attachments: frames)
            }
        }
        guard let snapshot = definition.snapshot else { return }
        table.onRaw(Methods.System.snapshot) { context, state in
            let request = try context.body(SnapshotRequest.self)
            let limit = SystemRequests.batch.clamped(request.limit)
            let db = state.worker.db
            // One read transaction: the head and the page are of the same moment.
            return try db.transaction(.deferred) {
                let outbox = Outbox(database: db)
                let head = try outbox.head()
                let epoch = try outbox.epoch()
                let page = try snapshot(state, request.after, limit)
                let ts = Logger.timestamp()
                let frames = page.events.map { EnvelopeCoding.event(seq: head, type: $0.type, ts: ts, epoch: epoch, body: $0.body) }
                let reply = SnapshotReply(epoch: epoch, seq: head, next: page.next, count: frames.count)
                return Response(body: try JSONCoding.encoder.encode(reply), attachments: frames)
            }
        }
    }

    // MARK: Process entry

    /// Runs the service as a process (see `ServiceProcess.run`).
    public static func main(_ definition: ServiceDefinition<State>, arguments: [String] = Array(CommandLine.arguments.dropFirst())) -> Never {
        ServiceProcess.run(name: definition.name, arguments: arguments) { (config: ServiceConfig, context, logger) in
            try ServiceRuntime(definition: definition, config: config, context: context, logger: logger)
        }
    }
}

/// One event stream a subscriber follows from a configured peer: the key of its cursor and
/// the endpoints of the one publisher (or replica) that writes it.
struct PeerStream: Equatable {
    var key: String
    var rpc: [String]
    var publish: [String]

    /// The streams of peer `source`: one, keyed by its name, unless `perReplica`; then one per
    /// replica, the i-th request endpoint with the i-th event endpoint (from 1: `search-1`,
    /// `search-2`, as `tourbus up` names replicas), or one keyed by the name when there is one
    /// of each. Different counts are a configuration mistake: which replica would answer
    /// `sys.replay` for which stream?
    static func streams(of source: String, _ peer: PeerEndpoints, perReplica: Bool) throws(ConfigError) -> [PeerStream] {
        guard perReplica, peer.rpc.count > 1 || peer.publish.count > 1 else {
            return [PeerStream(key: source, rpc: peer.rpc, publish: peer.publish)]
        }
        guard peer.rpc.count == peer.publish.count else {
            throw ConfigError(
                """
                \(source) is followed one replica at a time, so its i-th event endpoint must be its i-th replica's: \
                \(peer.rpc.count) request and \(peer.publish.count) event endpoints are configured
                """)
        }
        return zip(peer.rpc, peer.publish).enumerated().map { i, pair in
            PeerStream(key: "\(source)-\(i + 1)", rpc: [pair.0], publish: [pair.1])
        }
    }
}

/// Lets one `sys.backup` of a service run at a time: a copy reads the whole file on a reader
/// thread, and two at once would only take two readers and twice the disk.
final class BackupGate: Sendable {
    private let busy = Mutex(false)

    /// Runs `body` unless a backup is under way, else throws `conflict`.
    func run<Result>(service: String, _ body: () throws -> Result) throws -> Result {
        let admitted = busy.withLock { busy -> Bool in
            guard !busy else { return false }
            busy = true
            return true
        }
        guard admitted else { throw ServiceError(.conflict, "a backup of \(service) is under way; one at a time") }
        defer { busy.withLock { $0 = false } }
        return try body()
    }
}

/// The thread that sends a service's `PeriodicRequest`s to its own endpoint: each at start,
/// then an interval after the last was answered (its busy interval when it said it has more to
/// do); a failure is logged and tried again at the next interval. A replica that does not lead
/// (`leading` false) sends none, its writes would be refused, and looks again every 100 ms.
final class PeriodicRequests: Sendable {
    private let stopping = StopFlag()
    private let thread: WorkerThread
    private let client: RPCClient

    init(
        context: ZMQContext, endpoints: [String], curve: CurveClientKeys?, requests: [PeriodicRequest], leading: (@Sendable () -> Bool)?,
        logger: Logger
    ) throws {
        var options = RPCClientOptions()
        options.curve = curve
        let client = try RPCClient(context: context, endpoints: endpoints, options: options, logger: logger.named("\(logger.component)-periodic"))
        self.client = client
        let stopping = self.stopping
        thread = WorkerThread(name: "\(logger.component)-periodic") {
            var due = requests.map { _ in monotonicNanos() }
            while !stopping.isSet {
                guard leading?() != false else {
                    usleep(100_000)
                    continue
                }
                let now = monotonicNanos()
                for (i, request) in requests.enumerated() where due[i] <= now {
                    var interval = request.intervalMilliseconds
                    do {
                        let reply = try client.request(type: request.method.name, body: Data("{}".utf8), timeoutMilliseconds: 30_000)
                        if let busy = request.busyIntervalMilliseconds, (try? reply.body(PeriodicWork.self))?.more == true { interval = busy }
                    } catch {
                        logger.warn("periodic request failed", ["type": request.method.name, "error": error])
                    }
                    // The next one an interval after this one is answered: two runs of a request
                    // are never closer than the interval, however late a busy service ran this one.
                    due[i] = monotonicNanos() + UInt64(max(1, interval)) * 1_000_000
                }
                // Wake at least every 100 ms, so a stop is seen in time.
                let next = due.min() ?? now
                let after = monotonicNanos()
                let wait = next > after ? min(100_000, (next - after + 999) / 1_000) : 0
                if wait > 0 { usleep(UInt32(wait)) }
            }
        }
    }

    func stop() {
        stopping.set()
        thread.join()
        client.close()
    }
}

/// The door of a replica of a replicated service (`RPCServerOptions.admit`).
public enum ReplicaDoor {
    /// How lately a replica must have heard from its leader to name it (five heartbeats).
    public static let namedLeaderNanoseconds: UInt64 = 500_000_000

    /// What a replica answers while it does not lead: reads that declare how stale they may be
    /// (`MethodDeclaration.staleMilliseconds`) while it has heard from its leader within that,
    /// and nothing else: the rest is refused before it is queued, naming the leader
    /// (`ServiceError.notLeader`), so a client sends it there. It names a leader only when it
    /// heard from it within `namedLeaderNanoseconds`, so clients may believe the name: one gone
    /// silent is not named while the others elect its successor. `leads` answers at once
    /// whether it leads and takes writes (nearly always, at the leader); `status` is read only
    /// when it does not.
    public static func admit(
        service: String, replica: Int, leads: @escaping @Sendable () -> Bool, status: @escaping @Sendable () -> RaftStatus
    ) -> @Sendable (String) -> ServiceError? {
        let stale = Dictionary(Methods.all.compactMap { method in method.staleMilliseconds.map { (method.name, $0) } }, uniquingKeysWith: min)
        return { type in
            if leads() { return nil }
            let status = status()
            if status.isReadyLeader { return nil }
            if let bound = stale[type] {
                if bound == .max { return nil }
                if let contact = status.leaderContact, monotonicNanos() &- contact <= UInt64(bound) * 1_000_000 { return nil }
            }
            let heard = status.leaderHeard.map { monotonicNanos() &- $0 <= namedLeaderNanoseconds } ?? false
            let leader = Int(status.leaderID) == replica || heard ? Int(status.leaderID) : 0
            let known =
                leader == replica
                ? "it leads but has not yet applied its predecessors' commits"
                : leader != 0
                    ? "the leader is replica \(leader)"
                    : status.leaderID == 0 ? "no leader is known yet" : "replica \(status.leaderID) led, but has not been heard from lately"
            return ServiceError.notLeader("\(type) is answered by the leader of \(service), and replica \(replica) is not it: \(known)", leader: leader)
        }
    }
}
