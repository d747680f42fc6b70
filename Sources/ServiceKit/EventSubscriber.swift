import Bus
import Contracts
import Foundation
import ServiceCore
import Storage
import Synchronization

/// Where a subscriber is and what it has done, for tests and `sys.stats`.
public struct SubscriberStatus: Sendable, Equatable, Codable {
    public var source: String
    public var epoch: String?
    public var seq: Int64 = 0
    public var applied = 0
    public var replays = 0
    public var snapshots = 0
    public var skipped = 0
    /// Whether a bulk load is under way (its last step, such as building an index, still to come).
    public var bulk = false
    public var lastError: String?

    enum CodingKeys: String, CodingKey {
        case source, epoch, seq, applied, replays, snapshots, skipped, bulk
        case lastError = "last_error"
    }
}

/// The subscriber side of the reliable event stream from one publishing service.
public struct SubscriptionOptions: Sendable {
    /// The publisher's name (`catalog`), the key of the stored cursor.
    public var source: String
    /// The publisher's event (PUB) endpoints.
    public var publishEndpoints: [String]
    /// The publisher's request endpoints, for `sys.replay` and `sys.snapshot`.
    public var rpcEndpoints: [String]
    /// The subscriber's own SQLite file, where the cursor lives beside the effects.
    public var databasePath: String
    /// Memory settings of the subscriber's SQLite connection.
    public var tuning = DatabaseTuning()
    /// Events asked for per `sys.replay` call.
    public var replayBatch = 10_000
    /// A backlog of at least this many events is applied as a bulk load (`EventApplier.startBulk`).
    public var bulkThreshold: Int64 = 20_000
    /// Items asked for per `sys.snapshot` page.
    public var snapshotBatch = 1_000
    /// Wait before retrying a failed catch-up.
    public var retryMilliseconds = 300
    /// Timeout of each catch-up request.
    public var requestTimeoutMilliseconds = 5_000
    /// The subscribing service's outbox relay, woken when an applier emitted (so those events
    /// leave at once, not at the next heartbeat).
    public var relayWakeup: Wakeup?
    /// Test hook: live events for which this returns true are discarded, as a lossy network would.
    public var dropLiveEvent: (@Sendable (Int64) -> Bool)?

    public init(source: String, publishEndpoints: [String], rpcEndpoints: [String], databasePath: String) {
        self.source = source
        self.publishEndpoints = publishEndpoints
        self.rpcEndpoints = rpcEndpoints
        self.databasePath = databasePath
    }
}

/// What an applier works with: the subscriber's database, inside the transaction that also
/// stores the cursor, and the same emit handle handlers have, for events of its own that the
/// effect causes (they commit with it, and the relay sends them at once).
public final class EventScope {
    /// The subscribing service's database, in the applying transaction.
    public let db: Database
    /// Whether an event was emitted since the subscriber last looked.
    var emitted = false

    public init(db: Database) { self.db = db }

    /// Appends an event of this service's own to its outbox, in the applying transaction.
    public func emit<Body: Encodable>(_ type: String, _ body: Body) throws {
        _ = try Outbox(database: db).append(type: type, body: try JSONCoding.encoder.encode(body))
        emitted = true
    }
}

/// How a subscribing service applies another service's events to its own database.
public struct EventApplier: Sendable {
    /// Applies one event; runs inside a transaction that also stores the cursor. Must be
    /// idempotent: the same event may come twice.
    public var apply: @Sendable (ReceivedEvent, EventScope) throws -> Void
    /// Forgets everything learned from this source, before a rebuild from `sys.snapshot`.
    public var reset: @Sendable (Database) throws -> Void
    /// Runs before many events are applied at once (a long backlog, a snapshot): a chance to
    /// drop an index that is cheaper to build again than to keep up row by row.
    public var startBulk: (@Sendable (Database) throws -> Void)?
    /// Runs after them, and also when the subscriber starts, to finish a bulk load a crash
    /// interrupted; must do nothing when there is nothing to finish.
    public var finishBulk: (@Sendable (Database) throws -> Void)?

    public init(apply: @escaping @Sendable (ReceivedEvent, EventScope) throws -> Void,
                reset: @escaping @Sendable (Database) throws -> Void,
                startBulk: (@Sendable (Database) throws -> Void)? = nil,
                finishBulk: (@Sendable (Database) throws -> Void)? = nil) {
        self.apply = apply
        self.reset = reset
        self.startBulk = startBulk
        self.finishBulk = finishBulk
    }
}

/// Keeps a local copy fed by a publisher's events, losing none and applying none twice.
///
/// Live events arrive on SUB. The cursor (publisher epoch + last applied seq) is stored in
/// the same transaction as each batch's effects. A gap, a heartbeat ahead of the cursor,
/// or a start-up triggers `sys.replay` from the cursor; when the publisher's outbox was
/// trimmed past it, or its epoch changed, the copy is rebuilt from `sys.snapshot`.
public final class EventSubscriber: Sendable {
    private let stopping = StopFlag()
    private let state: StatusCell
    private let thread: WorkerThread

    /// Starts the subscriber thread (its own database connection, SUB socket and RPC client).
    public init(context: ZMQContext, options: SubscriptionOptions, applier: EventApplier, logger: Logger) throws {
        let state = StatusCell(SubscriberStatus(source: options.source))
        self.state = state
        let startup = StartupReport()
        let loop = SubscriberLoop(context: context, options: options, applier: applier, logger: logger,
                                  stopping: stopping, status: state)
        thread = WorkerThread(name: "\(logger.component)-sub-\(options.source)") { loop.run(startup: startup) }
        if case .failure(let error) = startup.wait() {
            thread.join()
            throw error
        }
    }

    /// What the subscriber has done so far.
    public var status: SubscriberStatus { state.value }

    /// Waits until the cursor reaches `seq` (or `timeout` seconds pass); true if it did.
    public func waitFor(seq: Int64, timeout: TimeInterval) -> Bool {
        let limit = Date().addingTimeInterval(timeout)
        while Date() < limit {
            if status.seq >= seq { return true }
            usleep(5_000)
        }
        return status.seq >= seq
    }

    /// Stops the thread and closes its sockets.
    public func stop() {
        stopping.set()
        thread.join()
    }

    deinit { stop() }
}

/// The status the subscriber thread writes and readers copy.
final class StatusCell: Sendable {
    private let state: Mutex<SubscriberStatus>
    init(_ initial: SubscriberStatus) { state = Mutex(initial) }
    var value: SubscriberStatus { state.withLock { $0 } }
    func update(_ change: (inout SubscriberStatus) -> Void) { state.withLock { change(&$0) } }
}

/// The subscriber thread's work; every socket and connection here belongs to that thread.
struct SubscriberLoop: Sendable {
    let context: ZMQContext
    let options: SubscriptionOptions
    let applier: EventApplier
    let logger: Logger
    let stopping: StopFlag
    let status: StatusCell

    /// Thrown when the publisher's history no longer matches the cursor, so a snapshot is needed.
    struct NeedsSnapshot: Error {}

    func run(startup: StartupReport) {
        let db: Database
        let socket: Socket
        let client: RPCClient
        var cursor: EventCursor?
        do {
            db = try Database(path: options.databasePath)
            try db.tune(options.tuning)
            cursor = try CursorStore(database: db).get(source: options.source)
            socket = try Socket(context, .sub)
            try socket.setReceiveHighWaterMark(100_000)
            try socket.setReconnectInterval(milliseconds: 100, maximum: 1_000)
            try socket.subscribe("")
            for endpoint in options.publishEndpoints { try socket.connect(endpoint) }
            client = try RPCClient(context: context, endpoints: options.rpcEndpoints, logger: logger)
        } catch {
            startup.failed(error)
            return
        }
        defer { client.close() }
        startup.succeeded(nil)
        // A bulk load a crash interrupted is finished first (a failure is logged; catching up retries it).
        finishBulk(db)
        status.update { $0.epoch = cursor?.epoch; $0.seq = cursor?.seq ?? 0 }

        var needSync = true
        var retryAt: UInt64 = 0
        var poller = Poller([.socket(socket)])
        while !stopping.isSet {
            if needSync && monotonicNanos() >= retryAt {
                do {
                    try catchUp(db: db, client: client, cursor: &cursor)
                    needSync = false
                } catch {
                    logger.warn("catch-up failed; will retry", ["source": options.source, "error": error])
                    status.update { $0.lastError = "\(error)" }
                    retryAt = monotonicNanos() + UInt64(options.retryMilliseconds) * 1_000_000
                }
            }
            guard let ready = try? poller.poll(timeoutMilliseconds: needSync ? min(50, options.retryMilliseconds) : 100), ready[0] else { continue }
            var batch: [ReceivedEvent] = []
            for _ in 0..<1_000 {
                guard let frames = try? socket.receive(dontWait: true) else { break }
                guard frames.count == 2, let event = try? ReceivedEvent(envelope: frames[1]) else {
                    logger.warn("dropped a malformed event", ["source": options.source])
                    continue
                }
                batch.append(event)
            }
            if !needSync { needSync = !applyLive(batch, db: db, cursor: &cursor) }
        }
    }

    /// Applies the consecutive live events of a batch; false when a gap, a new epoch or a heartbeat ahead shows events were missed.
    private func applyLive(_ batch: [ReceivedEvent], db: Database, cursor: inout EventCursor?) -> Bool {
        guard let current = cursor else { return false }
        var next = current.seq + 1
        var consecutive: [ReceivedEvent] = []
        var inStep = true
        for event in batch {
            let header = event.header
            if header.epoch != current.epoch { inStep = false; break }
            if header.type == "sys.heartbeat" {
                if header.seq >= next { inStep = false; break }
                continue
            }
            if let drop = options.dropLiveEvent, drop(header.seq) { continue }
            if header.seq < next { continue }  // already applied
            if header.seq > next { inStep = false; break }
            consecutive.append(event)
            next += 1
        }
        do {
            try apply(consecutive, db: db, cursor: &cursor)
        } catch {
            logger.warn("applying live events failed; will catch up", ["source": options.source, "error": error])
            return false
        }
        return inStep
    }

    /// Applies events and moves the cursor in one transaction. An event whose body does not
    /// decode is skipped with an error line (it can never apply); storage errors roll back.
    private func apply(_ events: [ReceivedEvent], db: Database, cursor: inout EventCursor?) throws {
        guard let last = events.last, let current = cursor else { return }
        var skipped = 0
        let scope = EventScope(db: db)
        defer { if scope.emitted { options.relayWakeup?.signal() } }
        try db.transaction {
            for event in events {
                do {
                    try applier.apply(event, scope)
                } catch let error as ServiceError {
                    skipped += 1
                    logger.error("skipped an event that cannot apply", ["source": options.source, "seq": event.header.seq,
                                                                         "type": event.header.type, "error": error])
                }
            }
            try CursorStore(database: db).set(source: options.source, EventCursor(epoch: current.epoch, seq: last.header.seq))
        }
        cursor = EventCursor(epoch: current.epoch, seq: last.header.seq)
        status.update { s in
            s.seq = last.header.seq
            s.applied += events.count - skipped
            s.skipped += skipped
        }
    }

    /// Replays from the cursor until caught up with the head; rebuilds from a snapshot when replay cannot serve.
    private func catchUp(db: Database, client: RPCClient, cursor: inout EventCursor?) throws {
        func ask(after: Int64) throws -> RPCClient.PendingReply {
            client.start(type: "sys.replay", body: try JSONCoding.encoder.encode(ReplayRequest(after: after, limit: options.replayBatch)),
                         timeoutMilliseconds: options.requestTimeoutMilliseconds)
        }
        // The next batch is asked for before this one is applied, so the publisher reads while we write.
        var next: (after: Int64, reply: RPCClient.PendingReply)?
        // A bulk load lasts until caught up: a failed batch leaves it under way, and the retry goes on with it.
        var bulk = status.value.bulk
        while !stopping.isSet {
            let after = cursor?.seq ?? 0
            let pending = try next.flatMap { $0.after == after ? $0.reply : nil } ?? ask(after: after)
            next = nil
            let reply = try pending.wait()
            let info = try reply.body(ReplayReply.self)
            status.update { $0.replays += 1 }
            if let current = cursor, current.epoch != info.epoch || info.head < current.seq {
                logger.info("publisher history changed; rebuilding from snapshot", ["source": options.source])
                try rebuild(db: db, client: client, cursor: &cursor)
                continue
            }
            if info.trimmed {
                logger.info("outbox trimmed past the cursor; rebuilding from snapshot", ["source": options.source, "cursor": after])
                try rebuild(db: db, client: client, cursor: &cursor)
                continue
            }
            if cursor == nil { cursor = EventCursor(epoch: info.epoch, seq: 0) }
            if !bulk, info.head - after >= options.bulkThreshold, let start = applier.startBulk {
                logger.info("catching up in bulk", ["source": options.source, "events": info.head - after])
                try db.transaction { try start(db) }
                bulk = true
                status.update { $0.bulk = true }
            }
            let events = try reply.attachments.map { data throws(ServiceError) in try ReceivedEvent(envelope: data) }
            guard events.allSatisfy({ $0.header.epoch == info.epoch }) else { throw ServiceError(.internal, "replay mixed epochs") }
            let more = !events.isEmpty && (events.last?.header.seq ?? 0) < info.head
            if more, let last = events.last?.header.seq { next = (last, try ask(after: last)) }
            try apply(events.filter { $0.header.seq > after }, db: db, cursor: &cursor)
            if !more {
                if bulk { finishBulk(db) }
                return
            }
        }
    }

    /// Finishes a bulk load; a failure is logged, and the next catch-up tries again.
    private func finishBulk(_ db: Database) {
        guard let finish = applier.finishBulk else { return }
        do {
            try db.transaction { try finish(db) }
            status.update { $0.bulk = false }
        } catch {
            logger.error("could not finish a bulk load", ["source": options.source, "error": error])
        }
    }

    /// Forgets this source's effects and reloads them from `sys.snapshot`, all in one transaction.
    private func rebuild(db: Database, client: RPCClient, cursor: inout EventCursor?) throws {
        var result: EventCursor?
        var count = 0
        let scope = EventScope(db: db)
        defer {
            finishBulk(db)
            if scope.emitted { options.relayWakeup?.signal() }
        }
        status.update { $0.bulk = applier.startBulk != nil }
        try db.transaction {
            try applier.startBulk?(db)
            try applier.reset(db)
            var after: String?
            repeat {
                let reply = try client.request(type: "sys.snapshot", body: try JSONCoding.encoder.encode(SnapshotRequest(after: after, limit: options.snapshotBatch)),
                                               timeoutMilliseconds: options.requestTimeoutMilliseconds)
                let page = try reply.body(SnapshotReply.self)
                if let first = result, first.epoch != page.epoch { throw NeedsSnapshot() }
                if result == nil { result = EventCursor(epoch: page.epoch, seq: page.seq) }
                for data in reply.attachments {
                    try applier.apply(try ReceivedEvent(envelope: data), scope)
                    count += 1
                }
                after = page.next
                // Stopping half-way rolls back: a partial snapshot must never look complete.
                if stopping.isSet { throw CancellationError() }
            } while after != nil
            guard let result else { return }
            try CursorStore(database: db).set(source: options.source, result)
        }
        cursor = result
        status.update { s in
            s.snapshots += 1
            s.epoch = result?.epoch
            s.seq = result?.seq ?? s.seq
            s.applied += count
        }
    }
}
