import Bus
import Foundation
import Synchronization

/// Where a handler runs: on any reader thread, or on the one writer thread. Writes belong on
/// the writer; a reader handler may write in its own short immediate transaction when it
/// first waits on something slow (a password hash, another service).
public enum HandlerKind: Sendable {
    case read, write
}

/// What a handler answers: the reply body as JSON, plus optional extra frames for bulk
/// replies (`sys.replay` sends one event per frame after the envelope).
public struct Response: Sendable {
    public var body: Data
    public var attachments: [Data]

    public init(body: Data, attachments: [Data] = []) {
        self.body = body
        self.attachments = attachments
    }
}

/// An error type that knows its place in the closed set (SQLite errors, domain errors).
public protocol ServiceErrorConvertible: Error {
    /// The error as it should reach the caller.
    var serviceError: ServiceError { get }
}

/// One request as a handler sees it: who asks, by when, and the raw envelope.
public struct RequestContext: Sendable {
    public let id: String
    public let type: String
    public let auth: Auth?
    /// The client the request comes from (`RequestHeader.client`): a service that asks
    /// another on the request's behalf passes it on.
    public let client: String?
    /// Monotonic nanoseconds (`monotonicNanos()`) after which the caller has given up.
    public let deadline: UInt64
    /// The whole request envelope, for handlers that decode it themselves.
    public let envelope: Data
    /// Where the body lies in `envelope`, when the server read the header by span (which
    /// saw at most one `body`); nil when the decoder read it.
    public let bodyRange: Range<Int>?

    public init(id: String, type: String, auth: Auth?, client: String? = nil, deadline: UInt64, envelope: Data, bodyRange: Range<Int>?) {
        self.id = id
        self.type = type
        self.auth = auth
        self.client = client
        self.deadline = deadline
        self.envelope = envelope
        self.bodyRange = bodyRange
    }

    /// The body's JSON text, when the header was read by span and the body is present: for
    /// handlers that read a plainly shaped body without the decoder, without walking the
    /// envelope again.
    public var scannedBody: Data? { bodyRange.map { envelope.subdata(in: $0) } }

    /// What is left of the caller's budget, at least 1 ms, for calls this handler makes in turn.
    public var remainingMilliseconds: Int {
        let now = monotonicNanos()
        return deadline > now ? max(1, Int((deadline - now) / 1_000_000)) : 1
    }

    /// Decodes the envelope's body as `Body`, answering `invalid_argument` naming the field.
    public func body<Body: Decodable>(_ type: Body.Type) throws(ServiceError) -> Body {
        try JSONCoding.decodeBody(type, fromEnvelope: envelope)
    }
}

/// The request types a server answers, each with its handler and kind.
///
/// Handlers receive the per-thread `State` (a database connection, say), which is made on
/// the thread that uses it and never shared.
public struct HandlerTable<State>: Sendable {
    /// A handler that decodes its own body.
    public typealias RawHandler = @Sendable (RequestContext, State) throws -> Response

    struct Route: Sendable {
        var kind: HandlerKind
        var description: String
        var run: RawHandler
    }

    var routes: [String: Route] = [:]

    /// Group commit: runs the write handlers of one batch, which `body` runs one after another,
    /// as one unit (a service puts `body` in one database transaction, and each handler in a
    /// savepoint of it). The server answers a batch's requests only after this returns; if it
    /// throws, every request of the batch is answered with that error. Without it, each write
    /// runs and is answered on its own.
    public var writeBatch: (@Sendable (State, _ body: () throws -> Void) throws -> Void)?

    public init() {}

    /// The request types registered, sorted.
    public var types: [String] { routes.keys.sorted() }

    /// Whether any handler writes.
    public var hasWriters: Bool { routes.values.contains { $0.kind == .write } }

    /// Each request type with its one-line description, sorted by type.
    public var descriptions: [(type: String, description: String)] { types.map { ($0, routes[$0]?.description ?? "") } }

    /// Registers a typed handler: the body decodes to `Request`, the result encodes as the reply body.
    /// `description` is the one line `help` shows.
    public mutating func on<Request: Decodable & Sendable, Reply: Encodable & Sendable>(
        _ type: String, _ kind: HandlerKind = .read, description: String = "",
        _ handler: @escaping @Sendable (Request, RequestContext, State) throws -> Reply
    ) {
        routes[type] = Route(kind: kind, description: description) { context, state in
            let request = try context.body(Request.self)
            let reply = try handler(request, context, state)
            return Response(body: try JSONCoding.encoder.encode(reply))
        }
    }

    /// Registers a handler that builds its own `Response`.
    public mutating func onRaw(_ type: String, _ kind: HandlerKind = .read, description: String = "", _ handler: @escaping RawHandler) {
        routes[type] = Route(kind: kind, description: description, run: handler)
    }

    /// Wraps every handler of `kind` (for work that must follow each one, such as waking a relay).
    public mutating func wrap(_ kind: HandlerKind, _ wrapper: @escaping @Sendable (RequestContext, State, RawHandler) throws -> Response) {
        for (type, route) in routes where route.kind == kind {
            let inner = route.run
            routes[type] = Route(kind: kind, description: route.description) { context, state in try wrapper(context, state, inner) }
        }
    }
}

/// Tuning and limits of an `RPCServer`.
public struct RPCServerOptions: Sendable {
    /// Threads running read handlers.
    public var readers = 2
    /// Largest request (all frames) answered normally; larger ones get `too_large`.
    public var maxRequestBytes = 1 << 20
    /// Deepest nesting of arrays and objects accepted in a request envelope (the envelope
    /// itself is one level); deeper ones get `invalid_argument` before anything parses them.
    public var maxJSONDepth = StrictJSON.defaultMaxDepth
    /// Largest reply envelope a handler may produce; a larger one is replaced by `too_large`,
    /// so no client ever receives a huge reply. Attachment frames are not counted: the
    /// requests that use them (`sys.replay`, `sys.snapshot`) bound them by count.
    public var maxReplyBytes = 4 << 20
    /// Requests waiting for a thread before new ones get `unavailable`; one client (a client
    /// address, or a bus peer) may have at most half of them waiting.
    public var maxQueued = 10_000
    /// Most write requests run in one batch (`HandlerTable.writeBatch`): the first request's
    /// reply waits for the whole batch, and reads and replies for the I/O thread meanwhile.
    public var maxWriteBatch = 64
    /// A batch takes no more writes once it has run this long, so a write that comes during a
    /// flood of others waits for about two of these, not for 64 writes twice.
    public var maxWriteBatchMilliseconds = 10
    /// Budget for requests that do not state `deadline_ms`.
    public var defaultDeadlineMilliseconds = 5_000
    /// When set, the ROUTER is a CURVE server with this secret key.
    public var curveSecretKey: [UInt8]?
    /// How long `stop` waits for in-flight requests.
    public var stopGraceMilliseconds = 5_000
    /// Asked of each request of a known type before it is queued: an error refuses it there
    /// (a replica that does not lead refuses what only the leader answers).
    public var admit: (@Sendable (_ type: String) -> ServiceError?)?

    public init() {}
}

/// How far into a request past the size limit its id is looked for, to echo it.
private let tooLargeIdSearchBytes = 4_096

/// Binds a ROUTER socket and answers requests by type, on reader threads and one writer thread.
///
/// The readers and the writer each take requests from a queue shared fairly between clients
/// (`FairJobQueue`): by the client address the gateway names in the envelope, else by the
/// bus peer that sent the request.
///
/// One I/O thread owns the socket; handler threads own their `State`; requests and replies
/// cross between them through queues and an eventfd, never through a shared socket.
public final class RPCServer<State>: Sendable {
    /// The real endpoints bound (port 0 resolved).
    public let endpoints: [String]
    /// Counters and latencies of this server.
    public let stats: ServerStats

    private let shared: ServerThreads.Shared
    private let threads: [WorkerThread]

    /// Starts the worker threads (each making its `State`), binds `endpoints` and begins serving.
    /// Throws if a bind or a `makeState` fails; nothing is left running then.
    public init(
        context: ZMQContext, bind endpoints: [String], table: HandlerTable<State>,
        options: RPCServerOptions = RPCServerOptions(), stats: ServerStats = ServerStats(), logger: Logger,
        makeState: @escaping @Sendable (HandlerKind) throws -> State
    ) throws {
        let shared = try ServerThreads.Shared(routes: table.types.count, maxPerClient: options.maxQueued / 2)
        self.shared = shared
        self.stats = stats

        // Routes by number, so that what crosses between threads has no `State` in its type:
        // generic types made at run time cost the runtime a metadata lookup on every request.
        let types = table.types
        let routeNumbers = Dictionary(uniqueKeysWithValues: types.enumerated().map { ($0.element, $0.offset) })
        let kinds = types.map { table.routes[$0]!.kind }
        let runs = types.map { table.routes[$0]!.run }
        var roles: [HandlerKind] = Array(repeating: .read, count: max(1, options.readers))
        if table.hasWriters { roles.append(.write) }
        let startup = StartupReport(expected: roles.count + 1)
        var threads: [WorkerThread] = []
        for (index, role) in roles.enumerated() {
            let queue = role == .write ? shared.writeQueue : shared.readQueue
            let maxReplyBytes = options.maxReplyBytes
            // Reads are answered one by one; writes in batches when the table groups them.
            let writeBatch = role == .write ? table.writeBatch : nil
            let limit = (count: max(1, options.maxWriteBatch), nanoseconds: UInt64(max(0, options.maxWriteBatchMilliseconds)) * 1_000_000)
            threads.append(
                WorkerThread(name: "\(logger.component)-\(role == .write ? "writer" : "reader\(index)")") {
                    let state: State
                    do {
                        state = try makeState(role)
                        startup.succeeded(nil)
                    } catch {
                        startup.failed(error)
                        return
                    }
                    ServerThreads.serve(
                        queue: queue, handlers: runs.map { run in { context in try run(context, state) } },
                        batching: writeBatch.map { batch in (run: { body in try batch(state, body) }, limit: limit) },
                        shared: shared, stats: stats, logger: logger, maxReplyBytes: maxReplyBytes)
                })
        }
        threads.append(
            WorkerThread(name: "\(logger.component)-rpc") {
                ServerThreads.ioLoop(
                    context: context, endpoints: endpoints, routes: routeNumbers, kinds: kinds, options: options,
                    shared: shared, stats: stats, logger: logger, startup: startup)
            })
        self.threads = threads
        switch startup.wait() {
        case .success(let bound):
            self.endpoints = bound
        case .failure(let error):
            shared.stopping.store(true, ordering: .sequentiallyConsistent)
            shared.workersStop.store(true, ordering: .sequentiallyConsistent)
            shared.wakeup.signal()
            threads.forEach { $0.join() }
            throw error
        }
    }

    /// Stops taking requests, finishes those in flight (up to the grace period), then closes
    /// the socket and joins every thread. Safe to call more than once.
    public func stop() {
        shared.stopping.store(true, ordering: .sequentiallyConsistent)
        shared.wakeup.signal()
        threads.forEach { $0.join() }
    }

    deinit { stop() }
}

/// A request on its way from the I/O thread to a handler thread. Nothing here depends on a
/// server's `State`: a generic type made at run time would cost a metadata lookup per request.
struct ServerJob: Sendable {
    var prefix: [Data]
    var context: RequestContext
    /// The route's number in the server's table.
    var route: Int
    var received: UInt64
    /// The fair queue's lane: the client, else the peer.
    var lane: String
    /// The nanoseconds the lane was charged when the job started.
    var charged: UInt64 = 0
}

/// The threads of an `RPCServer`, apart from its `State`.
enum ServerThreads {
    /// What the I/O thread and the handler threads share.
    final class Shared: Sendable {
        let readQueue: FairJobQueue
        let writeQueue: FairJobQueue
        let replies = Mutex<[[Data]]>([])
        let wakeup: Wakeup
        let stopping = Atomic<Bool>(false)
        let workersStop = Atomic<Bool>(false)
        init(routes: Int, maxPerClient: Int) throws(SystemError) {
            readQueue = FairJobQueue(routes: routes, maxPerClient: maxPerClient)
            writeQueue = FairJobQueue(routes: routes, maxPerClient: maxPerClient)
            wakeup = try Wakeup()
        }
    }

    /// A job's answer, kept until its batch commits.
    struct Answer {
        var frames: [Data]
        var type: String
        var received: UInt64
        var failure: ErrorCode?
    }

    /// A handler thread's loop: `handlers` by route number, with the thread's state bound in;
    /// `batching` runs a batch of writes as one unit.
    static func serve(
        queue: FairJobQueue, handlers: [(RequestContext) throws -> Response],
        batching: (run: (() throws -> Void) throws -> Void, limit: (count: Int, nanoseconds: UInt64))?,
        shared: Shared, stats: ServerStats, logger: Logger, maxReplyBytes: Int
    ) {
        while true {
            guard let job = queue.pop(timeout: .milliseconds(50)) else {
                if shared.workersStop.load(ordering: .sequentiallyConsistent) { return }
                continue
            }
            var answers: [Answer] = []
            if let batching {
                // The first job and those queued behind it (taken as the batch runs, up to the
                // limits) commit together; nothing is answered before the batch's end.
                var jobs = [job]
                let started = monotonicNanos()
                do {
                    try batching.run {
                        var next: ServerJob? = job
                        while let current = next {
                            answers.append(run(current, handlers[current.route], queue: queue, logger: logger, maxReplyBytes: maxReplyBytes))
                            let open = jobs.count < batching.limit.count && monotonicNanos() - started < batching.limit.nanoseconds
                            next = open ? queue.tryPop() : nil
                            if let next { jobs.append(next) }
                        }
                    }
                } catch {
                    let serviceError = asServiceError(error, logger: logger, type: "a batch of writes")
                    answers = jobs.map { job in
                        Answer(
                            frames: job.prefix + [EnvelopeCoding.failure(id: job.context.id, error: serviceError)],
                            type: job.context.type, received: job.received, failure: serviceError.code)
                    }
                }
            } else {
                answers = [run(job, handlers[job.route], queue: queue, logger: logger, maxReplyBytes: maxReplyBytes)]
            }
            let now = monotonicNanos()
            for answer in answers { stats.record(type: answer.type, nanoseconds: now - answer.received, error: answer.failure) }
            let first = shared.replies.withLock { replies in
                for answer in answers { replies.append(answer.frames) }
                return replies.count == answers.count
            }
            // The I/O thread drains the eventfd before it takes the replies, so one signal per batch is enough.
            if first { shared.wakeup.signal() }
        }
    }

    private static func run(
        _ job: ServerJob, _ handler: (RequestContext) throws -> Response, queue: FairJobQueue, logger: Logger, maxReplyBytes: Int
    ) -> Answer {
        let context = job.context
        let started = monotonicNanos()
        defer { queue.finished(job, nanoseconds: monotonicNanos() - started) }
        var reply: Data
        var attachments: [Data] = []
        var failure: ErrorCode?
        if monotonicNanos() > context.deadline {
            failure = .deadlineExceeded
            reply = EnvelopeCoding.failure(id: context.id, error: ServiceError(.deadlineExceeded, "the request waited past its deadline"))
        } else {
            do {
                let response = try handler(context)
                reply = EnvelopeCoding.success(id: context.id, body: response.body)
                attachments = response.attachments
                if reply.count > maxReplyBytes {
                    logger.warn("reply too large", ["type": context.type, "bytes": reply.count, "limit": maxReplyBytes])
                    failure = .tooLarge
                    reply = EnvelopeCoding.failure(
                        id: context.id,
                        error: ServiceError(
                            .tooLarge, "reply of \(reply.count) bytes exceeds the limit of \(maxReplyBytes); ask for a smaller page"))
                    attachments = []
                }
            } catch {
                let serviceError = asServiceError(error, logger: logger, type: context.type)
                failure = serviceError.code
                reply = EnvelopeCoding.failure(id: context.id, error: serviceError)
            }
        }
        return Answer(frames: job.prefix + [reply] + attachments, type: context.type, received: job.received, failure: failure)
    }

    private static func asServiceError(_ error: Error, logger: Logger, type: String) -> ServiceError {
        switch error {
        case let e as ServiceError: return e
        case let e as ServiceErrorConvertible: return e.serviceError
        case let e as DecodingError: return ServiceError.decoding(e)
        default:
            logger.error("handler failed", ["type": type, "error": error])
            return ServiceError(.internal, "internal error while handling \(type)")
        }
    }

    static func ioLoop(
        context: ZMQContext, endpoints: [String], routes: [String: Int], kinds: [HandlerKind],
        options: RPCServerOptions, shared: Shared, stats: ServerStats, logger: Logger, startup: StartupReport
    ) {
        let socket: Socket
        var bound: [String] = []
        do {
            socket = try Socket(context, .router)
            // Past maxRequestBytes we still read the message to answer too_large; far past it
            // libzmq drops the connection instead of buffering it.
            try socket.setMaxMessageSize(Int64(max(64 << 20, options.maxRequestBytes * 2)))
            try socket.setReceiveHighWaterMark(100_000)
            try socket.setSendHighWaterMark(100_000)
            try socket.setRouterMandatory(true)
            try socket.setHandshakeInterval(milliseconds: Socket.serverHandshakeMilliseconds)
            if let key = options.curveSecretKey { try socket.setCurveServer(secretKey: key) }
            for endpoint in endpoints { bound.append(try socket.bind(endpoint)) }
        } catch {
            startup.failed(error)
            return
        }
        startup.succeeded(bound)
        logger.info("listening", ["endpoints": bound.joined(separator: ",")])

        var inFlight = 0
        var stopDeadline: UInt64?
        var poller = Poller([.socket(socket), .descriptor(shared.wakeup.descriptor)])
        var idlePoller = Poller([.descriptor(shared.wakeup.descriptor)])

        func reply(_ frames: [Data]) {
            do {
                if try !socket.send(frames, dontWait: true) {
                    logger.warn("reply dropped: peer not reading", [:])
                }
            } catch {
                // EHOSTUNREACH: the client went away before its reply was ready.
                logger.debug("reply dropped", ["error": error])
            }
        }

        func handle(_ frames: [Data]) {
            // A DEALER sends [identity, envelope…]; a REQ adds an empty delimiter after the identity.
            let delimited = frames.count >= 3 && frames[1].isEmpty
            let prefix = Array(frames.prefix(delimited ? 2 : 1))
            let payload = frames.dropFirst(prefix.count)
            guard let envelope = payload.first else {
                logger.warn("dropped a message with no envelope frame", ["frames": frames.count])
                return
            }
            /// `type`: the request's, once it is one this server answers.
            func refuse(_ id: String?, _ error: ServiceError, type: String? = nil) {
                stats.record(type: type, nanoseconds: 0, error: error.code, sample: false)
                reply(prefix + [EnvelopeCoding.failure(id: id, error: error)])
            }
            let size = payload.reduce(0) { $0 + $1.count }
            // Too large before anything is read: a request past the limit costs the socket
            // thread no walk of it. Its id is echoed when the first bytes hold it plainly.
            guard size <= options.maxRequestBytes else {
                logger.warn("request too large", ["bytes": size])
                let id = JSONSpan.plainString("id", in: envelope.prefix(tooLargeIdSearchBytes))
                refuse(id, ServiceError(.tooLarge, "request of \(size) bytes exceeds the limit of \(options.maxRequestBytes)"))
                return
            }
            func refuseMalformed(_ detail: String) {
                logger.warn("malformed envelope", ["bytes": size, "error": detail])
                refuse(nil, ServiceError(.invalidArgument, "malformed envelope: \(detail)"))
            }
            // Strict and shallow before Foundation sees it (its parsers recurse and forgive),
            // checked in the walk that reads the header.
            let scanned: RequestHeader?
            do throws(JSONSyntaxError) {
                scanned = try RequestHeader.scan(envelope, maxDepth: options.maxJSONDepth)
            } catch {
                refuseMalformed(error.message)
                return
            }
            let header: RequestHeader
            do {
                // By span when plainly shaped (nearly always), else by the decoder and its errors.
                header = try scanned ?? JSONCoding.decoder.decode(RequestHeader.self, from: envelope)
            } catch let error as DecodingError {
                // A number no Swift type holds (`"v":1e999`) is named as the body's decoder names it.
                if case .dataCorrupted(let context) = error, context.codingPath.isEmpty {
                    refuseMalformed(JSONCoding.unrepresentableNumber(in: envelope).description)
                } else {
                    refuseMalformed(ServiceError.decoding(error, dropping: []).description)
                }
                return
            } catch {
                refuseMalformed("not JSON")
                return
            }
            guard header.v == envelopeVersion else {
                refuse(header.id, ServiceError(.invalidArgument, "unsupported envelope version \(header.v); this server speaks \(envelopeVersion)", field: "v"))
                return
            }
            guard let route = routes[header.type] else {
                refuse(header.id, ServiceError(.notFound, "unknown request type '\(header.type)'", field: "type"))
                return
            }
            let budget = header.deadlineMs ?? options.defaultDeadlineMilliseconds
            guard budget > 0 else {
                refuse(header.id, ServiceError(.deadlineExceeded, "deadline_ms must be positive", field: "deadline_ms"), type: header.type)
                return
            }
            if let refusal = options.admit?(header.type) {
                refuse(header.id, refusal, type: header.type)
                return
            }
            let queue = kinds[route] == .write ? shared.writeQueue : shared.readQueue
            guard queue.count < options.maxQueued else {
                refuse(header.id, ServiceError(.unavailable, "server overloaded: \(options.maxQueued) requests waiting"), type: header.type)
                return
            }
            let now = monotonicNanos()
            let context = RequestContext(
                id: header.id, type: header.type, auth: header.auth, client: header.client,
                deadline: now + UInt64(min(budget, 3_600_000)) * 1_000_000, envelope: envelope,
                bodyRange: header.bodyRange)
            let lane = header.client.map { "c " + $0 } ?? "p " + prefix[0].base64EncodedString()
            guard queue.push(ServerJob(prefix: prefix, context: context, route: route, received: now, lane: lane)) else {
                refuse(
                    header.id, ServiceError(.unavailable, "server overloaded: \(queue.maxPerClient) requests from one client waiting"),
                    type: header.type)
                return
            }
            inFlight += 1
            stats.setInFlight(inFlight)
        }

        while true {
            let stopping = shared.stopping.load(ordering: .sequentiallyConsistent)
            if stopping && stopDeadline == nil {
                stopDeadline = monotonicNanos() + UInt64(options.stopGraceMilliseconds) * 1_000_000
                logger.info("stopping", ["in_flight": inFlight])
            }
            if let limit = stopDeadline, inFlight == 0 || monotonicNanos() > limit { break }
            let ready: [Bool]
            do {
                ready = stopping ? [false] + (try idlePoller.poll(timeoutMilliseconds: 50)) : try poller.poll(timeoutMilliseconds: 200)
            } catch {
                logger.error("poll failed", ["error": error])
                break
            }
            if ready[0] {
                // Read a bounded batch so replies are never starved by a flood of requests.
                for _ in 0..<256 {
                    do {
                        guard let frames = try socket.receive(dontWait: true) else { break }
                        handle(frames)
                    } catch {
                        logger.error("receive failed", ["error": error])
                        break
                    }
                }
            }
            if ready[1] {
                shared.wakeup.drain()
                let batch = shared.replies.withLock { replies in
                    defer { replies.removeAll(keepingCapacity: true) }
                    return replies
                }
                for frames in batch { reply(frames) }
                inFlight -= batch.count
                stats.setInFlight(inFlight)
            }
        }
        shared.workersStop.store(true, ordering: .sequentiallyConsistent)
        logger.info("stopped", [:])
    }
}
