import Foundation
import Synchronization

/// Tuning of an `RPCClient`.
public struct RPCClientOptions: Sendable {
    /// The timeout of calls that do not state one.
    public var defaultTimeoutMilliseconds = 2_000
    /// CURVE keys, when the server requires them.
    public var curve: CurveClientKeys?
    /// Requests waiting or in flight before new ones are refused with `unavailable`.
    public var maxPending = 100_000
    /// Deepest nesting of arrays and objects accepted in a reply envelope (the envelope itself
    /// is one level); a deeper or malformed reply fails its request with `internal`.
    public var maxJSONDepth = StrictJSON.defaultMaxDepth
    /// The endpoints are the replicas of one replicated service, in replica order (the first
    /// is replica 1): requests go to its leader, over a connection to each replica, rather
    /// than spread between them.
    public var followsLeader = false

    public init() {}
}

/// A successful reply: the envelope frame and any frames after it.
public struct Reply: Sendable {
    /// The reply envelope (`{"v":1,"id":…,"ok":true,"body":…}`).
    public let envelope: Data
    /// Frames after the envelope (events of `sys.replay`, for instance).
    public let attachments: [Data]
    /// Where the body lies in `envelope`, when reading the reply's head found it.
    let bodyRange: Range<Int>?

    /// The body's JSON text as the server sent it (`{}` when there is none).
    public var bodyJSON: Data {
        guard let range = bodyRange ?? JSONSpan.member("body", in: envelope) else { return Data("{}".utf8) }
        return envelope.subdata(in: range)
    }

    /// Decodes the body as `Body`; a body that does not fit is an `internal` error (the
    /// server broke its own contract).
    public func body<Body: Decodable>(_ type: Body.Type) throws(ServiceError) -> Body {
        do {
            return try JSONCoding.decoder.decode(BodyOf<Body>.self, from: envelope).body
        } catch {
            throw ServiceError(.internal, "reply body did not decode as \(Body.self): \(error)")
        }
    }
}

/// Sends requests to one or more servers with many requests in flight and a deadline on
/// each: spread round-robin over one DEALER socket, or, for the replicas of a replicated
/// service (`RPCClientOptions.followsLeader`), to the one that leads.
///
/// Past its deadline a call fails with `deadline_exceeded`, or `unavailable` when it could
/// never be sent because no server was connected; a reply that arrives later is dropped.
/// Safe to use from any thread: calls are handed to the socket's own thread.
///
/// Following a leader: a request goes to the replica last known to lead. A replica that does
/// not lead refuses it before doing anything (`ServiceError.leader` names the leader), so it
/// is sent again there, or, while no leader is known, to the next replica after a pause, until
/// its deadline. A replica that loses its connection, or has said nothing at all for half a
/// second since a request went to it, is passed over for a while (requests go first to
/// another, which names the leader); the request that found it so fails as it did (it may
/// have been done).
public final class RPCClient: Sendable {
    /// The endpoints this client connects to.
    public let endpoints: [String]
    /// One link spreading over every endpoint, or one per replica when following a leader.
    private let links: [Link]
    /// The link to the replica taken for the leader.
    private let leaderGuess = Atomic<Int>(0)
    /// How long a link that failed a request is passed over (`Link.shunnedUntil`).
    static let shunNanoseconds: UInt64 = 3_000_000_000
    /// How long a replica must have said nothing at all since a request of ours went to it
    /// unanswered before a request that times out there passes it over: a live leader answers
    /// others meanwhile (a late reply counts), and a deadline a caller made short says nothing
    /// about the replica.
    static let silenceBeforeShunNanoseconds: UInt64 = 500_000_000

    /// A completion handler; it runs on a socket thread of the client, so it must be quick.
    public typealias Completion = @Sendable (Result<Reply, ServiceError>) -> Void

    /// Connects to `endpoints` (libzmq keeps reconnecting as servers come and go).
    public init(
        context: ZMQContext, endpoints: [String], options: RPCClientOptions = RPCClientOptions(),
        logger: Logger
    ) throws {
        self.endpoints = endpoints
        var links: [Link] = []
        do {
            if options.followsLeader && endpoints.count > 1 {
                for (index, endpoint) in endpoints.enumerated() {
                    links.append(try Link(context: context, endpoints: [endpoint], options: options, logger: logger, name: "\(logger.component)-client\(index + 1)"))
                }
            } else {
                links = [try Link(context: context, endpoints: endpoints, options: options, logger: logger, name: "\(logger.component)-client")]
            }
        } catch {
            links.forEach { $0.close() }
            throw error
        }
        self.links = links
    }

    /// Fails whatever is still pending with `unavailable` and closes the sockets.
    public func close() { links.forEach { $0.close() } }

    /// How many servers are connected right now (inproc endpoints count as connected).
    public var connectedServers: Int { links.reduce(0) { $0 + $1.connectedServers } }

    /// How many replicas it follows a leader between (0 when it spreads requests).
    public var replicaCount: Int { links.count > 1 ? links.count : 0 }

    /// Takes replica `replica` (1 and up) for the leader from now on, as someone who asked
    /// them all at `asOf` (`monotonicNanos`) found (the gateway's health check), and no longer
    /// passes it over unless it failed this client since; ignored unless following a leader.
    public func noteLeader(_ replica: Int, asOf: UInt64) {
        guard links.count > 1, links.indices.contains(replica - 1) else { return }
        let link = links[replica - 1]
        let shunned = link.shunnedUntil.load(ordering: .relaxed)
        if shunned > 0 && shunned &- Self.shunNanoseconds < asOf { link.shunnedUntil.store(0, ordering: .relaxed) }
        leaderGuess.store(replica - 1, ordering: .relaxed)
    }

    // MARK: Calling

    /// Sends a request whose body is already JSON; `completion` gets the reply or the error.
    /// `client` names the client it is made for (`RequestHeader.client`), when there is one.
    /// `replica` (1 and up, when following a leader) sends it to that replica alone, whether it
    /// leads or not.
    public func send(
        type: String, body: Data, auth: Auth? = nil, client: String? = nil, timeoutMilliseconds: Int? = nil, replica: Int? = nil,
        completion: @escaping Completion
    ) {
        if links.count == 1 {
            links[0].send(type: type, body: body, auth: auth, client: client, timeoutMilliseconds: timeoutMilliseconds, completion: completion)
        } else if let replica, links.indices.contains(replica - 1) {
            links[replica - 1].send(type: type, body: body, auth: auth, client: client, timeoutMilliseconds: timeoutMilliseconds, completion: completion)
        } else {
            let timeout = max(1, timeoutMilliseconds ?? links[0].options.defaultTimeoutMilliseconds)
            let routed = Routed(
                type: type, body: body, auth: auth, client: client, deadline: monotonicNanos() + UInt64(timeout) * 1_000_000, completion: completion)
            sendToLeader(routed, to: pickLink(), hops: 0)
        }
    }

    /// A request on its way to the leader.
    private struct Routed: Sendable {
        var type: String
        var body: Data
        var auth: Auth?
        var client: String?
        var deadline: UInt64
        var completion: Completion
    }

    /// The replica taken for the leader, or the next one that is usable when it is not.
    private func pickLink() -> Int {
        let guess = leaderGuess.load(ordering: .relaxed)
        for step in 0..<links.count where usable((guess + step) % links.count) { return (guess + step) % links.count }
        return guess
    }

    /// The first usable link after `index` (round the ring), or the one right after it when none is.
    private func nextUsable(after index: Int) -> Int {
        for step in 1...links.count where usable((index + step) % links.count) { return (index + step) % links.count }
        return (index + 1) % links.count
    }

    /// Whether a replica named the leader may be sent to: connected, and not silent since it
    /// was passed over (its followers name it for a heartbeat or so after it went silent).
    private func believable(_ index: Int) -> Bool {
        usable(index) || (links[index].connectedServers > 0 && links[index].silence < Self.silenceBeforeShunNanoseconds)
    }

    /// Whether a link is connected and not passed over for a recent failure.
    private func usable(_ index: Int) -> Bool {
        links[index].connectedServers > 0 && links[index].shunnedUntil.load(ordering: .relaxed) <= monotonicNanos()
    }

    private func sendToLeader(_ request: Routed, to index: Int, hops: Int) {
        let now = monotonicNanos()
        guard request.deadline > now + 500_000 else {
            request.completion(.failure(ServiceError(.unavailable, "no leader among \(endpoints.joined(separator: ", ")) took the request within its deadline")))
            return
        }
        let remaining = Int((request.deadline - now) / 1_000_000)
        // Weak: the client may be dropped while a request is out; its links then end it.
        links[index].send(type: request.type, body: request.body, auth: request.auth, client: request.client, timeoutMilliseconds: remaining) {
            [weak self] result in
            guard case .failure(let error) = result, let self else { return request.completion(result) }
            guard let leader = error.leader else {
                // It may have been done: no second try. A replica that lost its connection, or
                // has said nothing at all for a while though requests went to it, is passed
                // over for a while: requests go first to another, which names the leader if it
                // hears from one (a deadline passed among others' replies is a live replica's).
                if error.message.hasPrefix(Link.connectionLost)
                    || (error.message == Link.noReply && links[index].silence >= Self.silenceBeforeShunNanoseconds)
                {
                    links[index].shunnedUntil.store(monotonicNanos() + Self.shunNanoseconds, ordering: .relaxed)
                    _ = leaderGuess.compareExchange(expected: index, desired: (index + 1) % links.count, ordering: .relaxed)
                }
                return request.completion(.failure(error))
            }
            // Refused by a replica that does not lead: nothing was done, so it goes again, at
            // once to a leader named elsewhere, after a pause while none is known (or after
            // a few hops, so stale hints cannot bounce it around). A replica names only a
            // leader it heard from lately, so the name is believed even of one passed over, if
            // connected and heard from since it went silent (a late reply, a health check).
            // A leader naming itself has not yet caught up with its term: it is asked again.
            let hinted = links.indices.contains(leader - 1) && (leader - 1 == index || believable(leader - 1))
            let next = hinted ? leader - 1 : nextUsable(after: index)
            let named = hinted && next != index
            if named { leaderGuess.store(next, ordering: .relaxed) }
            if named && hops < links.count {
                sendToLeader(request, to: next, hops: hops + 1)
            } else {
                DispatchQueue.global().asyncAfter(deadline: .now() + .milliseconds(50)) {
                    self.sendToLeader(request, to: next, hops: hops + 1)
                }
            }
        }
    }

    /// Sends a request and waits for its reply (blocking the calling thread, never past the timeout).
    public func request(
        type: String, body: Data, auth: Auth? = nil, client: String? = nil, timeoutMilliseconds: Int? = nil
    ) throws(ServiceError) -> Reply {
        try start(type: type, body: body, auth: auth, client: client, timeoutMilliseconds: timeoutMilliseconds).wait()
    }

    /// Sends a request now and lets the caller wait for its reply later, doing other work meanwhile.
    public func start(type: String, body: Data, auth: Auth? = nil, client: String? = nil, timeoutMilliseconds: Int? = nil) -> PendingReply {
        let pending = PendingReply()
        send(type: type, body: body, auth: auth, client: client, timeoutMilliseconds: timeoutMilliseconds) { result in
            pending.result.withLock { $0 = result }
            pending.done.signal()
        }
        return pending
    }

    /// A request sent with `start`, whose reply comes within its timeout.
    public final class PendingReply: Sendable {
        fileprivate let result = Mutex<Result<Reply, ServiceError>?>(nil)
        fileprivate let done = DispatchSemaphore(value: 0)

        /// Blocks until the reply (or the failure) is in; call once.
        public func wait() throws(ServiceError) -> Reply {
            done.wait()
            return try (result.withLock { $0 } ?? .failure(ServiceError(.internal, "no result"))).get()
        }
    }

    /// Encodes `body`, sends it as `type` and decodes the reply body as `Result`.
    public func call<Body: Encodable, Result: Decodable>(
        _ type: String, _ body: Body, as resultType: Result.Type = Result.self, auth: Auth? = nil, client: String? = nil,
        timeoutMilliseconds: Int? = nil
    ) throws(ServiceError) -> Result {
        let encoded: Data
        do { encoded = try JSONCoding.encoder.encode(body) } catch {
            throw ServiceError(.invalidArgument, "request body did not encode: \(error)")
        }
        return try request(type: type, body: encoded, auth: auth, client: client, timeoutMilliseconds: timeoutMilliseconds).body(resultType)
    }

}

extension RPCClient {
    /// One DEALER socket, its thread and its requests, connected to one or more endpoints.
    final class Link: Sendable {
        /// How the error of a request whose connection dropped begins.
        static let connectionLost = "lost the connection to"
        /// The error of a request that had no reply by its deadline.
        static let noReply = "no reply within the deadline"
        /// Until when (`monotonicNanos`) a leader-following client sends its requests first to
        /// another link: this one lost its connection or went silent, so its host may be gone.
        let shunnedUntil = Atomic<UInt64>(0)
        let options: RPCClientOptions
        private let idPrefix = String(UInt32.random(in: 0...UInt32.max), radix: 36)
        private let counter = Atomic<Int>(0)
        private let channel: Channel
        private let thread: WorkerThread

        struct Outgoing: Sendable {
            /// The request's number: its id is the link's prefix, `-`, and this.
            var number: Int
            var envelope: Data
            var deadline: UInt64
            var completion: Completion
        }

        init(context: ZMQContext, endpoints: [String], options: RPCClientOptions, logger: Logger, name: String) throws {
            self.options = options
            let state = try Channel()
            self.channel = state
            let startup = StartupReport(expected: 1)
            let idPrefix = self.idPrefix
            thread = WorkerThread(name: name) {
                Link.ioLoop(
                    context: context, endpoints: endpoints, options: options, idPrefix: idPrefix, state: state,
                    logger: logger, startup: startup)
            }
            if case .failure(let error) = startup.wait() {
                thread.join()
                throw error
            }
        }

        /// Fails whatever is still pending with `unavailable` and closes the socket. On the
        /// link's own thread (a completion that dropped the last reference) it only asks: the
        /// thread ends once the completion returns.
        func close() {
            channel.closing.store(true, ordering: .sequentiallyConsistent)
            channel.wakeup.signal()
            if !thread.isCurrent { thread.join() }
        }

        deinit { close() }

        var connectedServers: Int { channel.connected.load(ordering: .relaxed) }

        /// How long no server has sent this link anything though a request went out since (0
        /// when every request sent has been answered, or something came since the last went out).
        var silence: UInt64 {
            let since = channel.silentSince.load(ordering: .relaxed)
            return since == 0 ? 0 : monotonicNanos() &- since
        }

        func send(
            type: String, body: Data, auth: Auth?, client: String?, timeoutMilliseconds: Int?,
            completion: @escaping Completion
        ) {
            let timeout = max(1, timeoutMilliseconds ?? options.defaultTimeoutMilliseconds)
            let number = counter.add(1, ordering: .relaxed).newValue
            let id = "\(idPrefix)-\(number)"
            let envelope = EnvelopeCoding.request(id: id, type: type, auth: auth, client: client, deadlineMilliseconds: timeout, body: body)
            let outgoing = Outgoing(
                number: number, envelope: envelope, deadline: monotonicNanos() + UInt64(timeout) * 1_000_000,
                completion: completion)
            let accepted: Bool? = channel.submitted.withLock { queue in
                guard queue.count < options.maxPending, !channel.closing.load(ordering: .relaxed) else { return nil }
                queue.append(outgoing)
                return queue.count == 1
            }
            guard let first = accepted else {
                completion(.failure(ServiceError(.unavailable, "client is closed or has too many requests pending")))
                return
            }
            // The socket thread drains the eventfd before it takes the queue, so one signal per batch is enough.
            if first { channel.wakeup.signal() }
        }

        // MARK: The socket thread

        /// What callers and the socket thread share: submitted requests and a few flags.
        final class Channel: Sendable {
            let submitted = Mutex<[Outgoing]>([])
            let closing = Atomic<Bool>(false)
            let connected = Atomic<Int>(0)
            /// Since when (`monotonicNanos`) no frame came though a request was sent unanswered:
            /// the send of the first such request, or the last frame while others were still
            /// out; 0 when none is out unheard. Not reset when a request expires, so a replica
            /// silent across many short deadlines is found silent all the same.
            let silentSince = Atomic<UInt64>(0)
            let wakeup: Wakeup
            init() throws(SystemError) { wakeup = try Wakeup() }
        }

        private static func ioLoop(
            context: ZMQContext, endpoints: [String], options: RPCClientOptions, idPrefix: String,
            state: Channel, logger: Logger, startup: StartupReport
        ) {
            let socket: Socket
            let monitor: Socket
            do {
                socket = try Socket(context, .dealer)
                try socket.setImmediate(true)
                try socket.setReconnectInterval(milliseconds: 100, maximum: 1_000)
                try socket.watchForDeadLinks()
                try socket.setSendHighWaterMark(100_000)
                try socket.setReceiveHighWaterMark(100_000)
                if let curve = options.curve {
                    try socket.setCurveClient(publicKey: curve.publicKey, secretKey: curve.secretKey, serverKey: curve.serverKey)
                }
                let monitorEndpoint = "inproc://rpc-client-monitor-\(UUID().uuidString)"
                try socket.startMonitor(monitorEndpoint, events: MonitorEvent.connectionEvents)
                monitor = try Socket(context, .pair)
                try monitor.connect(monitorEndpoint)
                for endpoint in endpoints { try socket.connect(endpoint) }
            } catch {
                startup.failed(error)
                return
            }
            // Stop the monitor while its reader is still open (see `stopMonitor`).
            defer {
                socket.stopMonitor()
                withExtendedLifetime(monitor) {}
            }
            startup.succeeded(nil)

            // Only this thread touches these.
            // By request number: a reply's id is this client's prefix and the number.
            var pending: [Int: Outgoing] = [:]
            var unsent: [Int] = []
            var deadlines = MinHeap<RequestDeadline>()
            var live = Set<String>()
            let inproc = endpoints.filter { $0.hasPrefix("inproc://") }.count
            state.connected.store(inproc, ordering: .relaxed)
            var poller = Poller([.socket(socket), .socket(monitor), .descriptor(state.wakeup.descriptor)])

            func finish(_ id: Int, _ result: Result<Reply, ServiceError>) {
                guard let request = pending.removeValue(forKey: id) else { return }
                request.completion(result)
            }

            /// The number in a reply's id, when the id is one of this client's.
            let idHead = idPrefix + "-"
            func number(_ id: String) -> Int? {
                guard id.hasPrefix(idHead) else { return nil }
                let digits = id.utf8.dropFirst(idHead.utf8.count)
                // Written as the client writes numbers (from 1, no leading zero): `P-01` is not request 1.
                guard let lead = digits.first, lead >= UInt8(ascii: "1"), lead <= UInt8(ascii: "9"),
                    digits.allSatisfy({ $0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9") })
                else { return nil }
                return Int(Substring(digits))
            }

            func flushUnsent() {
                var sentCount = 0
                var outstanding = pending.count > unsent.count
                for id in unsent {
                    guard let request = pending[id] else {
                        sentCount += 1
                        continue
                    }
                    let sent: Bool
                    do { sent = try socket.send(request.envelope, dontWait: true) } catch {
                        finish(id, .failure(ServiceError(.unavailable, "send failed: \(error)")))
                        sentCount += 1
                        continue
                    }
                    if !sent { break }
                    sentCount += 1
                    // A silence goes on across requests that expired unanswered, for a while: one
                    // whose reply was lost must not count against the next slow request.
                    let since = state.silentSince.load(ordering: .relaxed)
                    let now = monotonicNanos()
                    if since == 0 || (!outstanding && now &- since > RPCClient.shunNanoseconds) { state.silentSince.store(now, ordering: .relaxed) }
                    outstanding = true
                }
                unsent.removeFirst(sentCount)
            }

            func receiveReplies() {
                // Anything heard ends a silence; requests still out start one from now.
                var heard = false
                defer { if heard { state.silentSince.store(pending.count > unsent.count ? monotonicNanos() : 0, ordering: .relaxed) } }
                for _ in 0..<1024 {
                    let frames: [Data]
                    do {
                        guard let received = try socket.receive(dontWait: true) else { return }
                        frames = received
                    } catch {
                        logger.error("receive failed", ["error": error])
                        return
                    }
                    heard = true
                    guard let envelope = frames.first else {
                        logger.warn("dropped a reply with no frames", [:])
                        continue
                    }
                    // Strict and shallow before Foundation sees it (checked in the walk that reads
                    // the head): a broken peer fails its request, never the process.
                    let read: ReplyHeader?
                    do throws(JSONSyntaxError) {
                        read = try ReplyHeader.read(envelope, maxDepth: options.maxJSONDepth)
                    } catch {
                        logger.warn("malformed reply", ["bytes": envelope.count, "error": error.message])
                        // The span reader does not recurse; an id it finds before the fault names the request.
                        if let id = JSONSpan.plainString("id", in: envelope).flatMap(number) {
                            finish(id, .failure(ServiceError(.internal, "malformed reply: \(error.message)")))
                        }
                        continue
                    }
                    guard let header = read, let id = header.id.flatMap(number) else {
                        logger.warn("dropped a malformed reply", ["bytes": envelope.count])
                        continue
                    }
                    if header.ok {
                        finish(id, .success(Reply(envelope: envelope, attachments: Array(frames.dropFirst()), bodyRange: header.bodyRange)))
                    } else {
                        finish(id, .failure(header.error ?? ServiceError(.internal, "error reply without an error")))
                    }
                    // An id we no longer know is a late reply: its caller has had its answer.
                }
            }

            func readMonitor() {
                while let frames = try? monitor.receive(dontWait: true) {
                    let event = MonitorEvent(frames: frames)
                    logger.debug("connection event", ["event": event.map { "\($0)" } ?? "malformed"])
                    switch event {
                    case .handshakeSucceeded(let endpoint)?:
                        live.insert(endpoint)
                    case .disconnected(let endpoint)?:
                        live.remove(endpoint)
                        if live.isEmpty && inproc == 0 {
                            // Whatever was sent is lost with the connection: say so now, not at the deadline.
                            let waiting = Set(unsent)
                            let lost = pending.keys.filter { !waiting.contains($0) }
                            for id in lost { finish(id, .failure(ServiceError(.unavailable, "\(Link.connectionLost) \(endpoint)"))) }
                            state.silentSince.store(0, ordering: .relaxed)
                        }
                    default:
                        break
                    }
                    state.connected.store(live.count + inproc, ordering: .relaxed)
                }
            }

            func expire(now: UInt64) {
                while let due = deadlines.first, due.at <= now {
                    _ = deadlines.pop()
                    let id = due.number
                    guard pending[id] != nil else { continue }
                    if let index = unsent.firstIndex(of: id) {
                        unsent.remove(at: index)
                        finish(id, .failure(ServiceError(.unavailable, "no connection to \(endpoints.joined(separator: ", "))")))
                    } else {
                        finish(id, .failure(ServiceError(.deadlineExceeded, Link.noReply)))
                    }
                }
            }

            while !state.closing.load(ordering: .sequentiallyConsistent) {
                let now = monotonicNanos()
                var timeout = unsent.isEmpty ? 200 : 5
                if let next = deadlines.first?.at {
                    timeout = min(timeout, next > now ? Int((next - now + 999_999) / 1_000_000) : 0)
                }
                let ready: [Bool]
                do { ready = try poller.poll(timeoutMilliseconds: timeout) } catch {
                    logger.error("poll failed", ["error": error])
                    break
                }
                if ready[1] { readMonitor() }
                if ready[2] {
                    state.wakeup.drain()
                    let incoming = state.submitted.withLock { queue in
                        defer { queue.removeAll(keepingCapacity: true) }
                        return queue
                    }
                    for request in incoming {
                        pending[request.number] = request
                        unsent.append(request.number)
                        deadlines.push(RequestDeadline(at: request.deadline, number: request.number))
                    }
                }
                if !unsent.isEmpty { flushUnsent() }
                if ready[0] { receiveReplies() }
                expire(now: monotonicNanos())
            }
            let leftovers = state.submitted.withLock { queue in
                defer { queue.removeAll() }
                return queue
            }
            for request in leftovers { pending[request.number] = request }
            for id in Array(pending.keys) { finish(id, .failure(ServiceError(.unavailable, "client closed"))) }
        }
    }
}

/// A request's deadline, in the client's heap of them (earliest first).
struct RequestDeadline: Comparable {
    var at: UInt64
    var number: Int

    static func < (a: RequestDeadline, b: RequestDeadline) -> Bool { a.at < b.at }
}
