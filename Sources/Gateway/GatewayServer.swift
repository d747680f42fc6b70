import Bus
import Contracts
import Foundation
import ServiceCore
import Synchronization

#if canImport(Glibc)
    import Glibc
#endif

/// The gateway: one TCP endpoint for clients (JSON-RPC lines or RESP), in front of the services.
///
/// One thread accepts and hands each connection to one of a few event-loop threads
/// (`EventLoop`, epoll), each of which drives the `ClientSession`s of many connections.
/// Backends are reached through one RPC client per service, in a window
/// shared fairly between clients. The accounts service's events about sessions and roles
/// drop the token validations they concern at once.
///
/// Its pieces start in this order and stop in the reverse one (`Lifecycle`): the backend
/// clients, the client connections, the accounts events, the deadline sweeper, the acceptor.
/// So a stop first stops accepting, then lets every connection close (up to 5 s), and closes
/// the backend clients last.
public final class GatewayServer: Service {
    /// `host:port` really bound.
    public let endpoint: String
    /// The port really bound.
    public let port: UInt16
    /// What was bound, for the ready line.
    public let endpoints: BoundEndpoints
    private let stopping = StopFlag()
    private let connections = ConnectionCount()
    private let lifecycle: Lifecycle
    private let logger: Logger

    /// Listens on `config.listen` and connects to `config.peers`.
    public init(config: GatewayConfig, context: ZMQContext, logger: Logger, healthCheckMilliseconds: Int = 1_000) throws {
        self.logger = logger
        MemoryRelease.mapLargeBuffers()
        // libdispatch opens the descriptors of its timers the first time one is set, and stops
        // the process when it cannot: set one now, while descriptors are free, so that a later
        // `asyncAfter` (a sign-in's retry) cannot come when the clients have taken them all.
        DispatchQueue.global().asyncAfter(deadline: .now()) {}
        let limits = config.limits
        let (host, requestedPort) = try GatewayServer.split(config.listen)
        let listener = try TCPSocket.listen(host: host, port: requestedPort)
        listener.setNonBlocking()
        port = listener.localPort()
        endpoint = host.contains(":") ? "[\(host)]:\(port)" : "\(host):\(port)"
        let lifecycle = Lifecycle(logger: logger)
        self.lifecycle = lifecycle
        let stopping = self.stopping
        let connections = self.connections
        var metricsEndpoint: String?
        do {
            let backends = try lifecycle.start("backend clients", stop: { $0.close() }) {
                try Backends(
                    context: context, peers: config.peers, curve: config.common.curve(for:), window: limits.backendWindow, logger: logger,
                    checkIntervalMilliseconds: healthCheckMilliseconds)
            }
            let addresses = ClientAddresses(limits: limits)
            // Every loop sees the flag, answers what is in flight and closes its connections;
            // what is still open after 5 s is closed as it is.
            let loops = try lifecycle.start(
                "client connections",
                stop: { (loops: EventLoops) in
                    stopping.set()
                    for _ in 0..<100 where connections.value > 0 { usleep(50_000) }
                    loops.abandon()
                }
            ) {
                try EventLoops(count: EventLoops.defaultCount, addresses: addresses, connections: connections, logger: logger, stopping: stopping)
            }
            let authenticator = Authenticator(backends: backends, addresses: addresses, limits: limits)
            let pushes = PushRegistry(gatewayId: PushRegistry.newGatewayId())
            _ = try lifecycle.start("pushes", stop: { $0?.stop() }) { () throws(ZMQError) -> PushReceiver? in
                let endpoints = config.peers.keys.sorted().flatMap { name in (config.peers[name]?.publish ?? []).map { ($0, config.common.curve(for: name)) } }
                if endpoints.isEmpty { logger.warn("no event endpoints of any service: no pushes will reach clients", [:]) }
                return endpoints.isEmpty ? nil : try PushReceiver(context: context, endpoints: endpoints, registry: pushes, logger: logger.named("gateway-pushes"))
            }
            let accounts = try lifecycle.start("accounts events", stop: { $0?.stop() }) {
                try GatewayServer.followAccounts(
                    config.peers[Authenticator.accounts], curve: config.common.curve(for: Authenticator.accounts),
                    authenticator.tokens, pushes, context: context, logger: logger)
            }
            let dispatcher = Dispatcher(
                backends: backends, authenticator: authenticator, limits: limits, connections: connections,
                pushes: pushes)
            let web = try config.webDirectory.map { try WebFiles(app: $0, leaflet: config.leafletDirectory, tiles: config.tiles) }
            let framing = FramingLimits(
                maxRequestBytes: config.maxRequestBytes, maxDepth: config.maxJSONDepth,
                maxBatch: limits.maxBatch, maxReplyBytes: limits.maxReplyBytes, allowedOrigins: Set(config.allowedOrigins), web: web)
            // Requests waiting for a turn hear of their deadline on time, even when nothing finishes.
            let queues = backends.fairQueues + [authenticator.passwordChecks]
            _ = try lifecycle.start(
                "deadline sweeper",
                stop: {
                    stopping.set()
                    $0.join()
                }
            ) {
                WorkerThread(name: "gateway-sweep") {
                    while !stopping.isSet {
                        usleep(50_000)
                        queues.forEach { $0.expireOverdue() }
                        MemoryRelease.releaseIfDue(now: monotonicNanos())
                    }
                }
            }
            let accept = AcceptLoop(
                listener: listener, dispatcher: dispatcher, framing: framing, proxies: ProxyTrust(config.trustedProxies), addresses: addresses,
                pushes: pushes, loops: loops, logger: logger, stopping: stopping, connections: connections,
                memory: OutputMemory(limits: limits))
            _ = try lifecycle.start(
                "acceptor",
                stop: {
                    stopping.set()
                    $0.join()
                }
            ) {
                WorkerThread(name: "gateway-accept") { accept.run() }
            }
            metricsEndpoint = try config.metricsListen.map { listen in
                try lifecycle.start("metrics", stop: { $0.stop() }) {
                    try MetricsServer(
                        listen: listen, logger: logger,
                        render: GatewayServer.metrics(
                            name: config.common.name, dispatcher: dispatcher, connections: connections,
                            pushes: pushes, accounts: accounts))
                }.endpoint
            }
        } catch {
            lifecycle.stop()
            throw error
        }
        endpoints = BoundEndpoints(service: config.common.name, listen: endpoint, metrics: metricsEndpoint)
        logger.info("listening", ["endpoint": endpoint, "backends": config.peers.keys.sorted().joined(separator: ",")])
    }

    /// Runs the gateway as a process (see `ServiceProcess.run`).
    public static func main(arguments: [String] = Array(CommandLine.arguments.dropFirst())) -> Never {
        ServiceProcess.run(name: "gateway", arguments: arguments) { (config: GatewayConfig, context, logger) in
            try GatewayServer(config: config, context: context, logger: logger)
        }
    }

    /// What the metrics port serves: requests, errors and latencies by method as the gateway
    /// routes them, connections open, pushes delivered and dropped, and how far it follows the
    /// accounts service's events (see Protocols/configuration.md#metrics).
    private static func metrics(
        name: String, dispatcher: Dispatcher, connections: ConnectionCount, pushes: PushRegistry,
        accounts: EventSubscriber?
    ) -> @Sendable () -> String {
        {
            var text = MetricsText()
            text.requests(service: name, dispatcher.stats.methodMetrics(), inFlight: nil)
            text.family("tourbus_gateway_connections", "gauge", "Client connections open.")
            text.sample("tourbus_gateway_connections", ["service": name], "\(connections.value)")
            let deliveries = pushes.deliveries
            text.family("tourbus_gateway_pushes_delivered_total", "counter", "Pushes handed to a subscribed client connection.")
            text.sample("tourbus_gateway_pushes_delivered_total", ["service": name], "\(deliveries.delivered)")
            text.family("tourbus_gateway_pushes_dropped_total", "counter", "Pushes dropped because a connection's backlog was full.")
            text.sample("tourbus_gateway_pushes_dropped_total", ["service": name], "\(deliveries.dropped)")
            text.subscribers(service: name, accounts.map { [$0.status] } ?? [])
            let replicas = dispatcher.backends.status().flatMap { backend in (backend.replicas ?? []).map { (backend.service, $0) } }
            let families: [(String, String, (ReplicaHealth) -> String?)] = [
                ("tourbus_gateway_replica_up", "Whether a replica of a replicated backend answered the last check.", { $0.up ? "1" : "0" }),
                ("tourbus_gateway_replica_leader", "Whether a replica of a replicated backend leads and takes writes.", { $0.ready == true ? "1" : "0" }),
                ("tourbus_gateway_replica_lag", "Commits a replica has still to apply, by the last check.", { $0.lag.map { "\($0)" } }),
            ]
            for (family, help, value) in families where !replicas.isEmpty {
                text.family(family, "gauge", help)
                for (backend, replica) in replicas {
                    guard let value = value(replica) else { continue }
                    text.sample(family, [("service", name), ("backend", backend), ("replica", "\(replica.replica)")], value)
                }
            }
            return text.text
        }
    }

    /// Client connections open now.
    public var openConnections: Int { connections.value }

    /// Follows the accounts service's events: a session that ended, a role that changed or an
    /// account that was deleted drops that user's cached tokens at once, and their connections
    /// that hear pushes check their tokens again (a deleted user's are refused and closed).
    /// Other types (`social.redacted`, ratings) are passed over. Nothing is kept: the cursor
    /// lives in memory (`MemoryCursorStore`). Lost events are replayed from it; at start, and when the
    /// accounts service's history no longer reaches it, every cached token is dropped and the
    /// follower goes on from the head.
    private static func followAccounts(
        _ peer: PeerEndpoints?, curve: CurveClientKeys?, _ tokens: TokenCache, _ pushes: PushRegistry,
        context: ZMQContext, logger: Logger
    ) throws -> EventSubscriber? {
        guard let peer, !peer.publish.isEmpty else {
            logger.warn("no event endpoint for the accounts service: cached tokens live out their 2 s", ["service": Authenticator.accounts])
            return nil
        }
        var options = EventStreamOptions(source: Authenticator.accounts, publishEndpoints: peer.publish, rpcEndpoints: peer.rpc)
        options.curve = curve
        let logger = logger.named("gateway<-\(Authenticator.accounts)")
        return try EventSubscriber(context: context, options: options, logger: logger) {
            MemoryCursorStore(
                source: Authenticator.accounts, logger: logger,
                types: [SocialEvents.sessionEnded, SocialEvents.roleChanged, SocialEvents.userDeleted],
                apply: { event in
                    let userId =
                        switch event.header.type {
                        case SocialEvents.sessionEnded: try event.body(SessionEnded.self).userId
                        case SocialEvents.roleChanged: try event.body(RoleChange.self).userId
                        default: try event.body(UserDeleted.self).userId
                        }
                    tokens.forget(userId: userId)
                    pushes.recheck(user: userId)
                },
                forgetAll: {
                    tokens.forgetAll()
                    pushes.recheck(user: nil)
                })
        }
    }

    /// Stops accepting, closes every connection (waiting up to 5 s) and the backend clients.
    /// Later calls do nothing.
    public func stop() {
        guard lifecycle.stop() else { return }
        logger.info("gateway stopped", [:])
    }

    static func split(_ listen: String) throws(ConfigError) -> (String, UInt16) {
        guard let colon = listen.lastIndex(of: ":"), let port = UInt16(listen[listen.index(after: colon)...]) else {
            throw ConfigError("--listen takes HOST:PORT, got '\(listen)'")
        }
        var host = String(listen[..<colon])
        if host.hasPrefix("[") && host.hasSuffix("]") { host = String(host.dropFirst().dropLast()) }
        return (host, port)
    }
}

/// How many client connections are open, shared by the acceptor and the event loops.
final class ConnectionCount: Sendable {
    private let count = Atomic<Int>(0)
    /// Adds `n` (negative to remove) and returns the new count.
    func add(_ n: Int) -> Int { count.add(n, ordering: .relaxed).newValue }
    var value: Int { count.load(ordering: .relaxed) }
}

/// The accepting thread's work: admit connections within the limits (in all, and per client
/// address), refuse the rest with an error.
///
/// Unchecked because it carries the listening socket to the acceptor thread, which alone uses it.
struct AcceptLoop: @unchecked Sendable {
    let listener: TCPSocket
    let dispatcher: Dispatcher
    let framing: FramingLimits
    /// Peers whose word on their clients' addresses is taken.
    let proxies: ProxyTrust
    let addresses: ClientAddresses
    let pushes: PushRegistry
    let loops: EventLoops
    let logger: Logger
    let stopping: StopFlag
    let connections: ConnectionCount
    /// Refusals being written (each waits up to 100 ms for the client's first byte, off this thread).
    let refusing = ConnectionCount()
    /// The pushes waiting for every connection, and the replies they hold, each against one bound.
    let memory: OutputMemory
    static let maxRefusing = 64

    /// How long accepting pauses when the process is out of files (or memory): the listener
    /// stays readable meanwhile, so trying again at once would spin.
    static let exhaustedPauseMicroseconds: UInt32 = 100_000

    func run() {
        var fds = [pollfd(fd: listener.descriptor, events: Int16(POLLIN), revents: 0)]
        var nextConnection: UInt64 = 0
        let limits = dispatcher.limits
        let memory = self.memory
        var exhausted = false
        while !stopping.isSet {
            guard poll(&fds, 1, 200) > 0 else { continue }
            while !stopping.isSet {
                let accepted: (socket: TCPSocket, address: String, peer: [UInt8])?
                do {
                    accepted = try listener.accept()
                } catch {
                    // EMFILE, ENFILE, ENOBUFS, ENOMEM: the connection waits in the listen backlog until
                    // a connection closes; say so once, not on every try.
                    if !exhausted { logger.error("cannot accept connections; trying again every 100 ms", ["error": error]) }
                    exhausted = true
                    usleep(AcceptLoop.exhaustedPauseMicroseconds)
                    break
                }
                guard let (socket, address, peer) = accepted else {
                    // The backlog is empty: files are to spare again (a file freed now and then does not say so).
                    if exhausted {
                        exhausted = false
                        logger.info("accepting connections again", [:])
                    }
                    break
                }
                let open = connections.add(1)
                if open > limits.maxConnections {
                    _ = connections.add(-1)
                    refuse(socket, "too many connections (limit \(limits.maxConnections))")
                    continue
                }
                let trusted = proxies.trusts(peer)
                guard addresses.open(address, total: open, exempt: trusted) else {
                    _ = connections.add(-1)
                    refuse(
                        socket,
                        addresses.isNearlyFull(open)
                            ? "the gateway is nearly full: at most \(addresses.nearlyFullShare) connections from your address now"
                            : "too many connections from your address (limit \(limits.maxConnectionsPerAddress))")
                    continue
                }
                nextConnection += 1
                let client = ClientKey(address: address, connection: nextConnection)
                let inbox = loops.next().inbox
                let dispatcher = self.dispatcher
                let addresses = self.addresses
                let pushes = self.pushes
                let connections = self.connections
                let wake: @Sendable () -> Void = { inbox.post(.resume(key: client.connection)) }
                let share = ClientSession.AddressShare(
                    take: { addresses.takeInFlight($0, $1, key: client.connection, wake: wake) },
                    give: { addresses.giveInFlight($0, $1) },
                    stopWaiting: { addresses.stopWaiting($0, key: client.connection) })
                let session = ClientSession(
                    limits: limits, framing: framing, now: monotonicNanos(), address: address, proxy: trusted ? proxies : nil,
                    dispatch: { call, address, token, completion in
                        dispatcher.dispatch(call, client: ClientKey(address: address, connection: client.connection), token: token, completion: completion)
                    },
                    deliver: { inbox.post(.outcome(key: client.connection, slot: $0, outcome: $1, change: $2)) },
                    charge: { addresses.charge($0, requests: $1) },
                    rekey: { addresses.move(from: $0, to: $1, total: connections.value, exempt: $2) },
                    addressShare: share,
                    listen: { pushes.set(user: $0, connection: client.connection, inbox: inbox, interests: $1) }, memory: memory)
                inbox.post(.arrival(Arrival(socket: socket, session: session, address: address, key: client.connection)))
            }
        }
    }

    /// Says why the connection is refused, in the client's framing if it speaks within 100 ms,
    /// off the accepting thread; under a flood of refusals the rest are just closed.
    private func refuse(_ socket: TCPSocket, _ reason: String) {
        logger.warn("refused a connection", ["reason": reason])
        guard refusing.add(1) <= AcceptLoop.maxRefusing else {
            _ = refusing.add(-1)
            return
        }
        let refusal = Refusal(socket: socket, reason: reason, refusing: refusing)
        DispatchQueue.global().async { refusal.send() }
    }
}

/// An error written to a refused connection before it closes. Unchecked: the socket moves to one other thread.
struct Refusal: @unchecked Sendable {
    let socket: TCPSocket
    let reason: String
    let refusing: ConnectionCount

    func send() {
        defer { _ = refusing.add(-1) }
        var fds = [pollfd(fd: socket.descriptor, events: Int16(POLLIN), revents: 0)]
        var first = [UInt8](repeating: 0, count: 4_096)
        var count = 0
        if poll(&fds, 1, 100) > 0 { count = (try? socket.read(into: &first)) ?? 0 }
        let received = first[0..<max(0, count)]
        let start = received.firstIndex { ![0x20, 0x0A, 0x0D, 0x09].contains($0) } ?? received.endIndex
        let error = ServiceError(.unavailable, reason)
        let message: [UInt8] =
            switch ClientSession.framing(of: received[start...], atEnd: true) {
            case .jsonRPC: JSONRPC.error(id: Data("null".utf8), error) + [0x0A]
            case .http: HTTPResponse.error(503, error).bytes(close: true, head: false, headers: [])
            case .resp, nil: RESP.error(error)
            }
        _ = try? socket.write(message, from: 0)
        // Half-close and read what else came, so the close does not reset the connection
        // and lose the error line on its way.
        shutdown(socket.descriptor, Int32(SHUT_WR))
        for _ in 0..<10 where poll(&fds, 1, 10) > 0 {
            guard let n = try? socket.read(into: &first), n > 0 else { break }
        }
    }
}

/// The gateway's event loops, each on a thread of its own; new connections go to them in turn.
final class EventLoops: Sendable {
    private let loops: [EventLoop]
    private let threads: [WorkerThread]
    private let turn = Atomic<Int>(0)
    private let abandoned = StopFlag()
    /// Loops a gateway runs: one per core, at least 2 and at most 8, whatever the connections.
    static let defaultCount = min(8, max(2, ProcessInfo.processInfo.activeProcessorCount))

    init(count: Int, addresses: ClientAddresses, connections: ConnectionCount, logger: Logger, stopping: StopFlag) throws(SystemError) {
        var loops: [EventLoop] = []
        for _ in 0..<max(1, count) {
            loops.append(try EventLoop(addresses: addresses, connections: connections, logger: logger, stopping: stopping, abandon: abandoned))
        }
        self.loops = loops
        threads = loops.enumerated().map { index, loop in WorkerThread(name: "gateway-loop-\(index)") { loop.run() } }
    }

    /// The loop the next connection goes to.
    func next() -> EventLoop { loops[turn.add(1, ordering: .relaxed).oldValue % loops.count] }

    /// Closes the connections still open and waits for the loops' threads to end.
    func abandon() {
        abandoned.set()
        threads.forEach { $0.join() }
    }
}

/// Gives memory that closed connections freed back to the system, a second after a
/// connection closes (one release for all that close in that second): the loops' malloc
/// arenas otherwise keep it, and a burst of clients that did not read would leave the
/// process large long after they left.
enum MemoryRelease {
    /// When the next release is due (monotonic nanoseconds), 0 when none is.
    private static let due = Atomic<UInt64>(0)

    /// Asks for a release a second from now (one for all the closes of that second).
    static func soon() {
        _ = due.compareExchange(expected: 0, desired: monotonicNanos() + 1_000_000_000, ordering: .relaxed)
    }

    /// Releases when one is due; the gateway's sweeper calls it every 50 ms. Not a libdispatch
    /// timer: the first one opens descriptors, and a connection may close when there are none.
    static func releaseIfDue(now: UInt64) {
        let at = due.load(ordering: .relaxed)
        guard at != 0, now >= at, due.compareExchange(expected: at, desired: 0, ordering: .relaxed).exchanged else { return }
        _ = trim?(0)
    }

    /// Has every allocation of 256 KiB or more (connection buffers past their first bytes)
    /// mapped on its own, so it goes back to the system the moment it is freed. glibc would
    /// otherwise raise that threshold after the first large free and serve later large
    /// buffers from arenas it keeps, fragmented.
    static func mapLargeBuffers() {
        guard let symbol = dlsym(nil, "mallopt") else { return }
        let mallopt = unsafeBitCast(symbol, to: (@convention(c) (Int32, Int32) -> Int32).self)
        let mmapThreshold: Int32 = -3  // M_MMAP_THRESHOLD
        _ = mallopt(mmapThreshold, 256 << 10)
    }

    /// glibc's `malloc_trim`, which no Swift module exports (it lives in malloc.h).
    private static let trim: (@convention(c) (Int) -> Int32)? = {
        guard let symbol = dlsym(nil, "malloc_trim") else { return nil }
        return unsafeBitCast(symbol, to: (@convention(c) (Int) -> Int32).self)
    }()
}
