import Bus
import Contracts
import Foundation
import Synchronization

/// The subscriber side of the reliable event stream from one publishing service: where the
/// publisher is and how the subscriber asks it for what it missed (no storage settings, which
/// belong to the store; see ServiceKit's `SubscriptionOptions` for a service's SQLite subscriber).
public struct EventStreamOptions: Sendable {
    /// The key of the stored cursor: the publisher's name (`catalog`), or one replica's
    /// (`search-2`) when each replica of a publisher is its own stream.
    public var source: String
    /// The publisher's name, whose events (`catalog.` topics) the subscriber hears: `source`
    /// unless one replica of several is followed.
    public var topic: String
    /// The publisher's event (PUB) endpoints.
    public var publishEndpoints: [String]
    /// The publisher's request endpoints, for `sys.replay` and `sys.snapshot`.
    public var rpcEndpoints: [String]
    /// The request endpoints are a replicated publisher's replicas: ask its leader.
    public var rpcFollowsLeader = false
    /// A replica of a replicated subscriber: the term it leads in, nil while it does not lead.
    /// It applies nothing while it does not lead (its writes would be refused), dropping what
    /// it hears, and at each new term reads its cursor afresh (another leader, or itself in an
    /// earlier term with a commit that was said lost but went through, may have moved it),
    /// then catches up. A batch is applied only in the term whose cursor it starts from.
    public var leadership: (@Sendable () -> UInt64?)?
    /// Events asked for per `sys.replay` call.
    public var replayBatch = 10_000
    /// A backlog of at least this many events is applied as a bulk load (`EventCursorStore.startBulk`).
    public var bulkThreshold: Int64 = 20_000
    /// Items asked for per `sys.snapshot` page.
    public var snapshotBatch = 1_000
    /// Wait before retrying a failed catch-up.
    public var retryMilliseconds = 300
    /// Timeout of each catch-up request.
    public var requestTimeoutMilliseconds = 5_000
    /// CURVE keys of a client of the publisher, when the bus is secured (both its sockets use them).
    public var curve: CurveClientKeys?
    /// Test hook: live events for which this returns true are discarded, as a lossy network would.
    public var dropLiveEvent: (@Sendable (Int64) -> Bool)?

    public init(source: String, publishEndpoints: [String], rpcEndpoints: [String]) {
        self.source = source
        topic = source
        self.publishEndpoints = publishEndpoints
        self.rpcEndpoints = rpcEndpoints
    }
}

/// A position in a source's outbox: the outbox's epoch and the last seq consumed.
public struct EventCursor: Sendable, Equatable {
    /// The source outbox's epoch; a different epoch means the source's history started over.
    public let epoch: String
    /// The last seq consumed.
    public let seq: Int64

    /// Describes a position.
    public init(epoch: String, seq: Int64) {
        self.epoch = epoch
        self.seq = seq
    }
}

/// Where a subscriber keeps one source's cursor and what the source's events taught it. A store
/// is one of two kinds, which differ only where the publisher's history no longer reaches the
/// cursor: a copy of the publisher's state, rebuilt from `sys.snapshot`
/// (`SnapshotCursorStore`: a service's SQLite file), or a cache with nothing to rebuild, which
/// forgets instead (`CacheCursorStore`: memory, for a process that keeps nothing durable).
///
/// The subscriber makes its store on its own thread and uses it only there (a SQLite
/// connection belongs to one thread), so a store need not be Sendable. Whatever changes what
/// the store keeps stores the cursor with it, atomically: the two are never out of step, so
/// no event is applied twice or skipped.
public protocol EventCursorStore: AnyObject {
    /// The stored cursor, nil when nothing was applied yet.
    func loadCursor() throws -> EventCursor?
    /// Applies `events` (the ones after the stored cursor, in order) and stores `cursor`,
    /// atomically; returns how many were skipped as events that can never apply (each
    /// reported by the store). Any other error undoes the whole batch and is thrown.
    func apply(_ events: [ReceivedEvent], advancingTo cursor: EventCursor) throws -> Int
}

/// A store keeping a copy of the publisher's state, rebuilt from `sys.snapshot` when the
/// publisher's history no longer reaches the cursor. With no cursor, the subscriber replays the
/// whole history the publisher still has.
///
/// A rebuild fetches its pages with nothing held: each page is staged aside (`stageSnapshot`)
/// and the copy is left as it is, so the store's other writers never wait for the publisher
/// and readers see the old copy; once the last page is in, `swapSnapshot` replaces the copy
/// in one local step, or (a store that merges) in local slices.
public protocol SnapshotCursorStore: EventCursorStore {
    /// Whether `startBulk` and `finishBulk` do anything (for `SubscriberStatus.bulk`).
    var hasBulkLoad: Bool { get }
    /// Runs before many events are applied at once (a long backlog).
    func startBulk() throws
    /// Runs after them, after a snapshot's swap, and at start (to finish a bulk load a crash
    /// interrupted); does nothing when there is nothing to finish.
    func finishBulk() throws
    /// Forgets the snapshot staged, if any: a new one starts from nothing.
    func discardSnapshot() throws
    /// Begins a rebuild, before its first page is asked for: forgets the snapshot staged, and
    /// a store that merges notes the rows its copy holds now, the only ones the merge may
    /// remove (a row the service adds meanwhile, from a source's answer, is newer than the
    /// snapshot's first page, but for the moment before that page).
    func beginSnapshot() throws
    /// Stages one page of a snapshot beside the copy, leaving the copy as it is. The store
    /// may leave out events it would ignore.
    func stageSnapshot(_ events: [ReceivedEvent]) throws
    /// Replaces everything learned from the source with the snapshot staged (as a bulk load
    /// when the store has one, `finishBulk` coming after) and stores `cursor`, atomically, or
    /// (a store that merges) in slices that end by storing `cursor`, and stop with an error
    /// once `stopping` is raised; the staging is then empty. Returns how many staged events
    /// were applied.
    func swapSnapshot(cursor: EventCursor, stopping: StopFlag) throws -> Int
}

/// A store that is a cache of what the publisher's events say (memory): it has nothing to
/// rebuild and never asks for `sys.snapshot`. With no cursor (at start), and wherever the
/// publisher's history no longer reaches the cursor (trimmed past it, a new epoch, a head
/// behind it), the subscriber calls `forgetAll` and follows from the publisher's head, without
/// applying the history before it. A gap in live events is still filled by `sys.replay`.
public protocol CacheCursorStore: EventCursorStore {
    /// Forgets everything learned from the source and stores `cursor` (the publisher's head).
    func forgetAll(advancingTo cursor: EventCursor) throws
}

/// A subscriber's store, by kind: what the loop does when the history is lost.
enum OpenedStore {
    case copy(any SnapshotCursorStore)
    case cache(any CacheCursorStore)

    var store: any EventCursorStore {
        switch self {
        case .copy(let store): store
        case .cache(let store): store
        }
    }
}

/// Keeps a local copy fed by a publisher's events, losing none and applying none twice.
///
/// Live events arrive on SUB. The cursor (publisher epoch + last applied seq) is stored with
/// each batch's effects, atomically (`EventCursorStore`). A gap, a heartbeat ahead of the
/// cursor, or a start-up triggers `sys.replay` from the cursor; when the publisher's outbox
/// was trimmed past it, or its epoch changed, a copy is rebuilt from `sys.snapshot`
/// (`SnapshotCursorStore`) and a cache forgets everything and follows from the publisher's
/// head (`CacheCursorStore`), where it also starts.
public final class EventSubscriber: Sendable {
    private let stopping = StopFlag()
    private let state: StatusCell
    private let thread: WorkerThread

    /// Starts the subscriber of a copy rebuilt from snapshots: its thread, with its own store,
    /// SUB socket and RPC client. `makeStore` runs on that thread, which alone uses the store;
    /// when it throws, so does this.
    public convenience init(
        context: ZMQContext, options: EventStreamOptions, logger: Logger,
        store makeStore: @escaping @Sendable () throws -> any SnapshotCursorStore
    ) throws {
        try self.init(context: context, options: options, logger: logger) { .copy(try makeStore()) }
    }

    /// Starts the subscriber of a cache (`CacheCursorStore`), as `init(context:options:logger:store:)`
    /// does a copy's.
    public convenience init(
        context: ZMQContext, options: EventStreamOptions, logger: Logger,
        cache makeStore: @escaping @Sendable () throws -> any CacheCursorStore
    ) throws {
        try self.init(context: context, options: options, logger: logger) { .cache(try makeStore()) }
    }

    private init(
        context: ZMQContext, options: EventStreamOptions, logger: Logger,
        open: @escaping @Sendable () throws -> OpenedStore
    ) throws {
        let state = StatusCell(SubscriberStatus(source: options.source))
        self.state = state
        let startup = StartupReport()
        let loop = SubscriberLoop(
            context: context, options: options, open: open, logger: logger,
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
    /// The term the in-memory cursor was read in (`EventStreamOptions.leadership`); the
    /// subscriber thread's alone.
    final class TermCell: @unchecked Sendable {
        var value: UInt64?
    }
    /// Thrown by a batch about to be applied in another term than its cursor's.
    struct LeadershipChanged: Error, CustomStringConvertible {
        var description: String { "this replica's leadership changed; the cursor is read again" }
    }
    let termOfCursor = TermCell()
    let context: ZMQContext
    let options: EventStreamOptions
    let open: @Sendable () throws -> OpenedStore
    let logger: Logger
    let stopping: StopFlag
    let status: StatusCell

    /// Thrown when the publisher's epoch changes between the pages of one snapshot: the
    /// pages are of two histories, and the rebuild starts over.
    struct NeedsSnapshot: Error, CustomStringConvertible {
        var description: String { "the publisher's history changed during a snapshot; starting over" }
    }

    func run(startup: StartupReport) {
        let opened: OpenedStore
        let socket: Socket
        let client: RPCClient
        var cursor: EventCursor?
        do {
            opened = try open()
            cursor = try opened.store.loadCursor()
            socket = try Socket(context, .sub)
            try socket.setReceiveHighWaterMark(100_000)
            try socket.setReconnectInterval(milliseconds: 100, maximum: 1_000)
            // A link that died silently is noticed in seconds and dialled again (`watchForDeadLinks`).
            try socket.watchForDeadLinks()
            // Its source's events and the heartbeat, not the pushes beside them (`push.`).
            try socket.subscribe(options.topic + ".")
            try socket.subscribe("sys.")
            if let curve = options.curve { try socket.setCurveClient(curve) }
            for endpoint in options.publishEndpoints { try socket.connect(endpoint) }
            var clientOptions = RPCClientOptions()
            clientOptions.curve = options.curve
            clientOptions.followsLeader = options.rpcFollowsLeader
            client = try RPCClient(context: context, endpoints: options.rpcEndpoints, options: clientOptions, logger: logger)
        } catch {
            startup.failed(error)
            return
        }
        defer { client.close() }
        startup.succeeded(nil)
        if case .copy(let copy) = opened {
            // A bulk load a crash interrupted is finished first (a failure is logged; catching up retries it).
            finishBulk(copy)
            // So is a snapshot's staging a crash left: it is never resumed (a rebuild starts over),
            // and it may be large. A failure is logged; the next rebuild discards it anyway.
            do {
                try copy.discardSnapshot()
            } catch {
                logger.warn("could not discard a staged snapshot", ["source": options.source, "error": error])
            }
        }
        status.update {
            $0.epoch = cursor?.epoch
            $0.seq = cursor?.seq ?? 0
        }

        var needSync = true
        var retryAt: UInt64 = 0
        // The failure of the catch-up attempts since the last success, logged once per streak
        // (a publisher that is down fails every `retryMilliseconds`).
        var failing: String?
        var poller = Poller([.socket(socket)])
        while !stopping.isSet {
            if let leadership = options.leadership {
                guard let term = leadership() else {
                    termOfCursor.value = nil
                    for _ in 0..<10_000 { guard (try? socket.receive(dontWait: true)) != nil else { break } }
                    _ = try? poller.poll(timeoutMilliseconds: 50)
                    continue
                }
                if term != termOfCursor.value {
                    do { cursor = try opened.store.loadCursor() } catch {
                        logger.warn("could not read the cursor again", ["source": options.source, "error": error])
                        _ = try? poller.poll(timeoutMilliseconds: 50)
                        continue
                    }
                    termOfCursor.value = term
                    needSync = true
                }
            }
            if needSync && monotonicNanos() >= retryAt {
                do {
                    try catchUp(opened, client: client, cursor: &cursor)
                    needSync = false
                    if failing != nil { logger.info("caught up again", ["source": options.source]) }
                    failing = nil
                } catch {
                    let text = "\(error)"
                    if failing != text {
                        logger.warn("catch-up failed; will retry", ["source": options.source, "error": error])
                    } else {
                        logger.debug("catch-up failed again", ["source": options.source, "error": error])
                    }
                    failing = text
                    status.update { $0.lastError = text }
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
            // A publisher sends in seq order, its heartbeat carrying its head: the last heard is the newest.
            if let last = batch.last { status.update { $0.head = last.header.seq } }
            if !needSync { needSync = !applyLive(batch, store: opened.store, cursor: &cursor) }
        }
    }

    /// Applies the consecutive live events of a batch; false when a gap, a new epoch, or a
    /// heartbeat ahead of the cursor or behind it shows the copy may be out of step.
    private func applyLive(_ batch: [ReceivedEvent], store: any EventCursorStore, cursor: inout EventCursor?) -> Bool {
        guard let current = cursor else { return false }
        var next = current.seq + 1
        var consecutive: [ReceivedEvent] = []
        var inStep = true
        for event in batch {
            let header = event.header
            if header.epoch != current.epoch {
                inStep = false
                break
            }
            if header.type == SystemEvents.heartbeat {
                // Ahead of the cursor: events were missed. Behind it in the same epoch: the
                // publisher's history went back (a power loss, a copy restored without a new
                // epoch), or the heartbeat is older than a replay that moved the cursor; the
                // catch-up asks the publisher which, and rebuilds only in the first case.
                if header.seq >= next || header.seq < current.seq {
                    inStep = false
                    break
                }
                continue
            }
            if let drop = options.dropLiveEvent, drop(header.seq) { continue }
            if header.seq < next { continue }  // already applied
            if header.seq > next {
                inStep = false
                break
            }
            consecutive.append(event)
            next += 1
        }
        do {
            try apply(consecutive, store: store, cursor: &cursor)
        } catch {
            logger.warn("applying live events failed; will catch up", ["source": options.source, "error": error])
            return false
        }
        return inStep
    }

    /// Applies events and moves the cursor in one step of the store. An event whose body does
    /// not decode is skipped (it can never apply); storage errors undo the batch.
    private func apply(_ events: [ReceivedEvent], store: any EventCursorStore, cursor: inout EventCursor?) throws {
        guard let last = events.last, let current = cursor else { return }
        if let leadership = options.leadership, leadership() != termOfCursor.value { throw LeadershipChanged() }
        let next = EventCursor(epoch: current.epoch, seq: last.header.seq)
        let skipped = try store.apply(events, advancingTo: next)
        cursor = next
        status.update { s in
            s.seq = last.header.seq
            s.applied += events.count - skipped
            s.skipped += skipped
        }
    }

    /// Replays from the cursor until caught up with the head. When replay cannot serve, a copy
    /// is rebuilt from a snapshot and a cache forgets all and goes on from the head.
    private func catchUp(_ opened: OpenedStore, client: RPCClient, cursor: inout EventCursor?) throws {
        func ask(after: Int64, limit: Int) throws -> RPCClient.PendingReply {
            client.start(
                type: Methods.System.replay.name, body: try JSONCoding.encoder.encode(ReplayRequest(after: after, limit: limit)),
                timeoutMilliseconds: options.requestTimeoutMilliseconds)
        }
        // The next batch is asked for before this one is applied, so the publisher reads while we write.
        var next: (after: Int64, reply: RPCClient.PendingReply)?
        // A bulk load lasts until caught up: a failed batch leaves it under way, and the retry goes on with it.
        var bulk = status.value.bulk
        while !stopping.isSet {
            let after = cursor?.seq ?? 0
            // A cache with no cursor wants no history: one event's reply says where the head is.
            let limit = if case .cache = opened, cursor == nil { 1 } else { options.replayBatch }
            let pending = try next.flatMap { $0.after == after ? $0.reply : nil } ?? ask(after: after, limit: limit)
            next = nil
            let reply = try pending.wait()
            let info = try reply.body(ReplayReply.self)
            status.update {
                $0.replays += 1
                $0.head = info.head
            }
            let lost: String? =
                if let current = cursor, current.epoch != info.epoch || info.head < current.seq {
                    "publisher history changed"
                } else if info.trimmed {
                    "outbox trimmed past the cursor"
                } else {
                    nil
                }
            if case .cache(let cache) = opened, cursor == nil || lost != nil {
                let head = EventCursor(epoch: info.epoch, seq: info.head)
                logger.info(
                    "\(lost ?? "starting"); forgetting all, following from the head",
                    ["source": options.source, "cursor": after, "head": info.head])
                try cache.forgetAll(advancingTo: head)
                cursor = head
                status.update { s in
                    s.epoch = head.epoch
                    s.seq = head.seq
                }
                return
            }
            if let lost, case .copy(let copy) = opened {
                logger.info("\(lost); rebuilding from snapshot", ["source": options.source, "cursor": after])
                try rebuild(copy, client: client, cursor: &cursor)
                continue
            }
            if cursor == nil {
                cursor = EventCursor(epoch: info.epoch, seq: 0)
                status.update { $0.epoch = info.epoch }
            }
            if !bulk, info.head - after >= options.bulkThreshold, case .copy(let copy) = opened, copy.hasBulkLoad {
                logger.info("catching up in bulk", ["source": options.source, "events": info.head - after])
                try copy.startBulk()
                bulk = true
                status.update { $0.bulk = true }
            }
            let events = try reply.attachments.map { data throws(ServiceError) in try ReceivedEvent(envelope: data) }
            guard events.allSatisfy({ $0.header.epoch == info.epoch }) else { throw ServiceError(.internal, "replay mixed epochs") }
            let more = !events.isEmpty && (events.last?.header.seq ?? 0) < info.head
            if more, let last = events.last?.header.seq { next = (last, try ask(after: last, limit: options.replayBatch)) }
            try apply(events.filter { $0.header.seq > after }, store: opened.store, cursor: &cursor)
            if !more {
                if bulk, case .copy(let copy) = opened { finishBulk(copy) }
                return
            }
        }
    }

    /// Finishes a bulk load; a failure is logged, and the next catch-up tries again.
    private func finishBulk(_ store: any SnapshotCursorStore) {
        do {
            try store.finishBulk()
            status.update { $0.bulk = false }
        } catch {
            logger.error("could not finish a bulk load", ["source": options.source, "error": error])
        }
    }

    /// Forgets this source's effects and reloads them from `sys.snapshot`.
    ///
    /// No transaction is open across a round trip: each page is staged aside in a short
    /// step of its own, so the service's own writers never wait for the publisher, and its
    /// readers see the old copy until the last page is in and the store swaps the staged
    /// snapshot in (at once, or merging it in slices). A failure or a stop half-way through
    /// the fetching discards the staging: a partial snapshot never becomes the copy, and the
    /// next attempt starts over.
    private func rebuild(_ store: any SnapshotCursorStore, client: RPCClient, cursor: inout EventCursor?) throws {
        var result: EventCursor?
        var count = 0
        try store.beginSnapshot()
        do {
            var after: String?
            repeat {
                let reply = try client.request(
                    type: Methods.System.snapshot.name, body: try JSONCoding.encoder.encode(SnapshotRequest(after: after, limit: options.snapshotBatch)),
                    timeoutMilliseconds: options.requestTimeoutMilliseconds)
                let page = try reply.body(SnapshotReply.self)
                // Pages of another epoch are of another history: start over.
                if let first = result, first.epoch != page.epoch { throw NeedsSnapshot() }
                if result == nil { result = EventCursor(epoch: page.epoch, seq: page.seq) }
                let events = try reply.attachments.map { data throws(ServiceError) in try ReceivedEvent(envelope: data) }
                try store.stageSnapshot(events)
                count += events.count
                after = page.next
                if stopping.isSet { throw CancellationError() }
            } while after != nil
        } catch {
            do {
                try store.discardSnapshot()
            } catch let discarding {
                logger.warn("could not discard a staged snapshot", ["source": options.source, "error": discarding])
            }
            throw error
        }
        guard let result else { return }
        status.update { $0.bulk = store.hasBulkLoad }
        defer { finishBulk(store) }
        _ = try store.swapSnapshot(cursor: result, stopping: stopping)
        cursor = result
        status.update { s in
            s.snapshots += 1
            s.epoch = result.epoch
            s.seq = result.seq
            s.applied += count
        }
    }
}
