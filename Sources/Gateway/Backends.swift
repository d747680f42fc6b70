import Bus
import Contracts
import Foundation
import ServiceCore
import Synchronization

/// The services behind the gateway: one RPC client each (spreading over its replicas, or
/// following their leader for a replicated one), a window of requests in flight to each
/// shared fairly between clients, a health check every second, and the methods each one offers.
final class Backends: Sendable {
    private let clients: [String: RPCClient]
    private let queues: [String: FairQueue]
    private let state: State
    private let stopping = StopFlag()
    private let checker: WorkerThread?

    /// Health, written by the checker and read by connections.
    final class State: Sendable {
        let health: Mutex<[String: BackendHealth]>
        init(_ health: [String: BackendHealth]) { self.health = Mutex(health) }
    }

    /// Connects to every peer with request endpoints, `window` requests in flight to each of
    /// its endpoints, with `curve`'s keys for each when the bus is secured;
    /// `checkIntervalMilliseconds` nil disables checks.
    init(
        context: ZMQContext, peers: [String: PeerEndpoints], curve: (String) -> CurveClientKeys? = { _ in nil }, window: Int, logger: Logger,
        checkIntervalMilliseconds: Int? = 1_000
    ) throws {
        var clients: [String: RPCClient] = [:]
        var health: [String: BackendHealth] = [:]
        for (name, peer) in peers where !peer.rpc.isEmpty {
            clients[name] = try RPCClient(
                context: context, endpoints: peer.rpc, options: peer.clientOptions(curve: curve(name)), logger: logger.named("gateway->\(name)"))
            health[name] = BackendHealth(service: name, endpoints: peer.rpc, up: false)
        }
        self.clients = clients
        // A window per endpoint. A replicated backend's requests all go to its leader, and its
        // writes hold their places through a commit round too (a majority stores each), which
        // a window of one server's size leaves the leader idle for: at 16 in flight, replicated
        // creates ran at 0.49 of one server's, at 48 at 0.72 (BENCHMARKS.md).
        queues = clients.mapValues { FairQueue(window: window * $0.endpoints.count) }
        let all = clients
        let state = State(health)
        self.state = state
        guard let interval = checkIntervalMilliseconds else {
            checker = nil
            return
        }
        let stopping = self.stopping
        checker = WorkerThread(name: "gateway-health") {
            while !stopping.isSet {
                Backends.checkAll(all, state, logger: logger)
                for _ in 0..<max(1, interval / 50) where !stopping.isSet { usleep(50_000) }
            }
        }
    }

    /// Stops the health checks and closes every client.
    func close() {
        stopping.set()
        checker?.join()
        clients.values.forEach { $0.close() }
    }

    /// The client of a service, or nil when no such service is configured.
    func client(for service: String) -> RPCClient? { clients[service] }

    /// Every fair queue in front of a service.
    var fairQueues: [FairQueue] { Array(queues.values) }

    /// Whether a service is configured.
    func has(_ service: String) -> Bool { clients[service] != nil }

    /// Sends a request to a service in `client`'s fair turn (at once when not `inTurn`: the
    /// caller queued it already), within `deadline`, naming the client's address in the
    /// envelope so the service shares its threads fairly too; a failure that says the service
    /// is down shows in `gateway.status`.
    func send(
        _ service: String, type: String, body: Data, auth: Auth?, client: ClientKey, inTurn: Bool = true, deadline: Deadline,
        ownDeadline: Bool = false, completion: @escaping @Sendable (Result<Reply, ServiceError>) -> Void
    ) {
        guard let rpc = clients[service], let queue = queues[service] else {
            completion(.failure(ServiceError(.unavailable, "no \(service) service is configured")))
            return
        }
        let state = self.state
        let run: @Sendable (@escaping @Sendable () -> Void) -> Void = { done in
            rpc.send(type: type, body: body, auth: auth, client: client.address, timeoutMilliseconds: deadline.remainingMilliseconds) { result in
                done()
                // A deadline the client shortened says nothing about the backend when it passes.
                if case .failure(let error) = result, !(ownDeadline && error.code == .deadlineExceeded) {
                    Backends.note(service, error, state)
                }
                completion(result)
            }
        }
        guard inTurn else {
            run {}
            return
        }
        queue.submit(
            client,
            FairQueue.Job(
                deadline: deadline.end, run: run,
                expire: {
                    completion(.failure(ServiceError(.deadlineExceeded, "\(service) had no turn for this request within the deadline")))
                }, kind: type))
    }

    /// Health of every backend, sorted by name.
    func status() -> [BackendHealth] { state.health.withLock { h in h.values.sorted { $0.service < $1.service } } }

    /// Records a failure seen while forwarding, so `gateway.status` shows it before the next check.
    private static func note(_ service: String, _ error: ServiceError, _ state: State) {
        guard error.code == .unavailable || error.code == .deadlineExceeded else { return }
        state.health.withLock { h in h[service]?.lastError = error.description }
    }

    /// One health round: `sys.ping` every backend, or `sys.stats` every replica of a
    /// replicated one (in parallel, 1 s each).
    private static func checkAll(_ clients: [String: RPCClient], _ state: State, logger: Logger) {
        let group = DispatchGroup()
        for (name, client) in clients {
            if client.replicaCount > 0 {
                checkReplicas(name, client, state, group: group, logger: logger)
                continue
            }
            group.enter()
            let started = monotonicNanos()
            client.send(type: Methods.System.ping.name, body: Data("{}".utf8), timeoutMilliseconds: 1_000) { result in
                record(name, result.map { _ in Double(monotonicNanos() - started) / 1e6 }, state, logger: logger)
                group.leave()
            }
        }
        group.wait()
    }

    /// Whether a backend answered (and how fast), in its health and the log when it changes.
    private static func record(_ name: String, _ result: Result<Double, ServiceError>, _ state: State, logger: Logger) {
        let now = Logger.timestamp()
        state.health.withLock { h in
            switch result {
            case .success(let latency):
                if h[name]?.up == false { logger.info("backend up", ["service": name]) }
                h[name]?.up = true
                h[name]?.latencyMs = latency
            case .failure(let error):
                if h[name]?.up == true { logger.warn("backend down", ["service": name, "error": error]) }
                h[name]?.up = false
                h[name]?.latencyMs = nil
                h[name]?.lastError = error.description
            }
            h[name]?.lastChecked = now
        }
    }

    /// What `sys.stats` tells of a replica.
    private struct ReplicaStats: Decodable {
        var replication: ServiceStats.Replication?
    }

    /// Asks each replica of a replicated service its part (`sys.stats`): the service is up when
    /// one of them leads and takes writes, and each replica's lag is measured against the
    /// highest commit index any of them reported.
    private static func checkReplicas(_ name: String, _ client: RPCClient, _ state: State, group: DispatchGroup, logger: Logger) {
        group.enter()
        let asked = monotonicNanos()
        let answers = Mutex<[Int: Result<(ServiceStats.Replication?, Double), ServiceError>]>([:])
        let each = DispatchGroup()
        for replica in 1...client.replicaCount {
            each.enter()
            let started = monotonicNanos()
            client.send(type: Methods.System.stats.name, body: Data("{}".utf8), timeoutMilliseconds: 1_000, replica: replica) { result in
                let answer = result.flatMap { reply in
                    Result { () throws(ServiceError) in (try reply.body(ReplicaStats.self).replication, Double(monotonicNanos() - started) / 1e6) }
                }
                answers.withLock { $0[replica] = answer }
                each.leave()
            }
        }
        each.notify(queue: .global()) {
            let all = answers.withLock { $0 }
            let commit = all.values.compactMap { try? $0.get().0?.commitIndex }.max() ?? 0
            var replicas: [ReplicaHealth] = []
            var leader: (replica: Int, term: UInt64, latency: Double)?
            for replica in 1...client.replicaCount {
                var health = ReplicaHealth(replica: replica, endpoint: client.endpoints[replica - 1], up: false)
                switch all[replica] {
                case .success((let stats, let latency))?:
                    health.up = true
                    health.role = stats?.role
                    health.ready = stats?.ready
                    health.term = stats?.term
                    health.appliedIndex = stats?.appliedIndex
                    health.lag = stats.map { commit > $0.appliedIndex ? commit - $0.appliedIndex : 0 }
                    // Of two that say they lead (a deposed one has yet to hear), the later term's.
                    if let stats, stats.ready, stats.term >= leader?.term ?? 0 { leader = (replica, stats.term, latency) }
                case .failure(let error)?:
                    health.lastError = error.description
                case nil:
                    health.lastError = "no answer"
                }
                replicas.append(health)
            }
            if let leader { client.noteLeader(leader.replica, asOf: asked) }
            record(name, leader.map { .success($0.latency) } ?? .failure(ServiceError(.unavailable, "no replica of \(name) leads")), state, logger: logger)
            state.health.withLock { $0[name]?.replicas = replicas }
            group.leave()
        }
    }
}
