import Bus
import Foundation
import ServiceCore
import Storage

/// A service's subscription to one publishing service: the event stream, and the SQLite file
/// where the copy and the cursor live. The stream's settings (`EventStreamOptions`) read as
/// this struct's own (`options.snapshotBatch`).
@dynamicMemberLookup
public struct SubscriptionOptions: Sendable {
    /// Where the publisher is and how to ask it for what was missed.
    public var stream: EventStreamOptions
    /// The subscriber's own SQLite file, where the cursor lives beside the effects.
    public var databasePath: String
    /// Memory settings of the subscriber's SQLite connection.
    public var tuning = DatabaseTuning()
    /// The subscribing service's outbox relay, woken when an applier emitted (so those events
    /// leave at once, not at the next heartbeat).
    public var relayWakeup: Wakeup?

    public init(source: String, publishEndpoints: [String], rpcEndpoints: [String], databasePath: String) {
        stream = EventStreamOptions(source: source, publishEndpoints: publishEndpoints, rpcEndpoints: rpcEndpoints)
        self.databasePath = databasePath
    }

    public subscript<Value>(dynamicMember path: WritableKeyPath<EventStreamOptions, Value>) -> Value {
        get { stream[keyPath: path] }
        set { stream[keyPath: path] = newValue }
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
    /// The event types `apply` acts on; nil: any. Events of other types are not passed to
    /// `apply` (they still move the cursor), and a snapshot's items of other types are not
    /// even staged: a copy that wants only deletions stages nothing of a million upserts.
    public var types: Set<String>?
    /// Runs before many events are applied at once (a long backlog, a snapshot): a chance to
    /// drop an index that is cheaper to build again than to keep up row by row.
    public var startBulk: (@Sendable (Database) throws -> Void)?
    /// Runs after them, and also when the subscriber starts, to finish a bulk load a crash
    /// interrupted; must do nothing when there is nothing to finish.
    public var finishBulk: (@Sendable (Database) throws -> Void)?
    /// Runs after each transaction in which `apply` or `reset` ran, on the subscriber's thread:
    /// `true` once it has committed, `false` when it was rolled back. A service that keeps a
    /// copy of what it applied outside its database (in memory) makes the copy follow commits,
    /// and only commits, with it.
    public var settled: (@Sendable (_ committed: Bool) -> Void)?

    public init(
        apply: @escaping @Sendable (ReceivedEvent, EventScope) throws -> Void,
        reset: @escaping @Sendable (Database) throws -> Void,
        types: Set<String>? = nil,
        startBulk: (@Sendable (Database) throws -> Void)? = nil,
        finishBulk: (@Sendable (Database) throws -> Void)? = nil,
        settled: (@Sendable (_ committed: Bool) -> Void)? = nil
    ) {
        self.apply = apply
        self.reset = reset
        self.types = types
        self.startBulk = startBulk
        self.finishBulk = finishBulk
        self.settled = settled
    }

    /// Whether `apply` acts on events of `type`.
    public func wants(_ type: String) -> Bool { types?.contains(type) ?? true }
}

/// What one feature of a service does with another service's events: a handler for each
/// event type it follows, what it forgets before a rebuild from the source's snapshot, and
/// what it finishes after a bulk load. The features that follow one source are composed into
/// that source's `EventApplier` (`init(features:)`), so no feature's code holds another's.
public struct EventHandlers: Sendable {
    public typealias Handler = @Sendable (ReceivedEvent, EventScope) throws -> Void

    public let handlers: [String: Handler]
    public let reset: @Sendable (Database) throws -> Void
    public let finishBulk: (@Sendable (Database) throws -> Void)?

    public init(
        _ handlers: [String: Handler], reset: @escaping @Sendable (Database) throws -> Void = { _ in },
        finishBulk: (@Sendable (Database) throws -> Void)? = nil
    ) {
        self.handlers = handlers
        self.reset = reset
        self.finishBulk = finishBulk
    }
}

extension EventApplier {
    /// The features that follow one source, composed: an event goes to each feature that
    /// handles its type, in the order the features are given (all in the one transaction); a
    /// reset resets each, and a bulk load's end finishes each; the types are those any handles.
    public init(features: [EventHandlers]) {
        var byType: [String: [EventHandlers.Handler]] = [:]
        for feature in features {
            for (type, handler) in feature.handlers { byType[type, default: []].append(handler) }
        }
        let table = byType
        let resets: [@Sendable (Database) throws -> Void] = features.map(\.reset)
        let finishes: [@Sendable (Database) throws -> Void] = features.compactMap(\.finishBulk)
        let apply: @Sendable (ReceivedEvent, EventScope) throws -> Void = { event, scope in
            for handler in table[event.header.type] ?? [] { try handler(event, scope) }
        }
        let reset: @Sendable (Database) throws -> Void = { db in
            for reset in resets { try reset(db) }
        }
        let finish: @Sendable (Database) throws -> Void = { db in
            for finish in finishes { try finish(db) }
        }
        self.init(apply: apply, reset: reset, types: Set(table.keys), finishBulk: finishes.isEmpty ? nil : finish)
    }
}

/// A service's cursor store: the copy and the cursor in the service's own SQLite file, changed
/// by an `EventApplier` in transactions that also store the cursor. A snapshot's pages are
/// staged in `event_staging` (`CursorSchema` version 2), each in a short transaction, and
/// swapped in by one transaction that reads nothing from the network.
public final class SQLiteCursorStore: SnapshotCursorStore {
    /// The subscriber's own connection (used on the subscriber's thread only).
    public let db: Database
    private let source: String
    private let applier: EventApplier
    private let logger: Logger
    private let relayWakeup: Wakeup?

    /// Opens the subscriber's connection to `options.databasePath`, whose schema includes
    /// `CursorSchema.migrations`.
    public init(options: SubscriptionOptions, applier: EventApplier, logger: Logger) throws {
        db = try Database(path: options.databasePath)
        try db.tune(options.tuning)
        source = options.source
        self.applier = applier
        self.logger = logger
        relayWakeup = options.relayWakeup
    }

    private var cursors: CursorStore { CursorStore(database: db) }

    public func loadCursor() throws -> EventCursor? {
        try cursors.get(source: source)
    }

    public func apply(_ events: [ReceivedEvent], advancingTo cursor: EventCursor) throws -> Int {
        var skipped = 0
        let scope = EventScope(db: db)
        defer { if scope.emitted { relayWakeup?.signal() } }
        try applying {
            for event in events where applier.wants(event.header.type) {
                if try !applyOrSkip(event, scope) { skipped += 1 }
            }
            try cursors.set(source: source, cursor)
        }
        return skipped
    }

    /// Runs `body` in a transaction, then tells the applier whether it committed.
    private func applying(_ body: () throws -> Void) throws {
        do {
            try db.transaction(.immediate, body)
        } catch {
            applier.settled?(false)
            throw error
        }
        applier.settled?(true)
    }

    /// Applies one event; false when it can never apply (its applier throws a `ServiceError`:
    /// a body that does not decode, say), which is logged and skipped rather than blocking
    /// the stream. Any other error (storage) is thrown, and undoes the batch.
    private func applyOrSkip(_ event: ReceivedEvent, _ scope: EventScope) throws -> Bool {
        do {
            try applier.apply(event, scope)
            return true
        } catch let error as ServiceError {
            logger.error(
                "skipped an event that cannot apply",
                [
                    "source": source, "seq": event.header.seq,
                    "type": event.header.type, "error": error,
                ])
            return false
        }
    }

    public var hasBulkLoad: Bool { applier.startBulk != nil }

    public func startBulk() throws {
        guard let start = applier.startBulk else { return }
        try db.transaction { try start(db) }
    }

    public func finishBulk() throws {
        guard let finish = applier.finishBulk else { return }
        try db.transaction { try finish(db) }
    }

    public func discardSnapshot() throws {
        try cursors.clearStaging(source: source)
    }

    public func stageSnapshot(_ events: [ReceivedEvent]) throws {
        let wanted = events.filter { applier.wants($0.header.type) }
        guard !wanted.isEmpty else { return }
        try db.transaction { try cursors.stage(source: source, wanted.map(\.envelope)) }
    }

    public func swapSnapshot(cursor: EventCursor) throws -> Int {
        var count = 0
        let scope = EventScope(db: db)
        defer { if scope.emitted { relayWakeup?.signal() } }
        try applying {
            try applier.startBulk?(db)
            try applier.reset(db)
            try cursors.forEachStaged(source: source) { envelope in
                // Checked when staged: only the header is read again. An item that can never
                // apply is skipped, as a live event would be, so it cannot wedge every rebuild.
                if try applyOrSkip(try ReceivedEvent(checkedEnvelope: envelope), scope) { count += 1 }
            }
            try cursors.set(source: source, cursor)
            try cursors.clearStaging(source: source)
        }
        return count
    }
}

extension EventSubscriber {
    /// Starts a service's subscriber: the thread, its SUB socket and RPC client, and its own
    /// connection to the service's database (`SQLiteCursorStore`).
    public convenience init(context: ZMQContext, options: SubscriptionOptions, applier: EventApplier, logger: Logger) throws {
        try self.init(context: context, options: options.stream, logger: logger) {
            try SQLiteCursorStore(options: options, applier: applier, logger: logger)
        }
    }
}
