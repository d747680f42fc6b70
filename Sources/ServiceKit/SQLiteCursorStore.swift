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
    public var database: DatabaseFile
    /// Memory settings of the subscriber's SQLite connection.
    public var tuning = DatabaseTuning()
    /// The subscribing service's outbox relay, woken when an applier emitted (so those events
    /// leave at once, not at the next heartbeat).
    public var relayWakeup: Wakeup?

    public init(source: String, publishEndpoints: [String], rpcEndpoints: [String], database: DatabaseFile) {
        stream = EventStreamOptions(source: source, publishEndpoints: publishEndpoints, rpcEndpoints: rpcEndpoints)
        self.database = database
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
    /// Whether a snapshot is being merged in (`SnapshotMerge`): rows named keep their place,
    /// and each item is the publisher's state as the rebuild read it, newer than the copy's
    /// even where the copy's says otherwise (a restored publisher went back in time).
    public let merging: Bool

    public init(db: Database) {
        self.db = db
        merging = false
    }

    init(db: Database, merging: Bool) {
        self.db = db
        self.merging = merging
    }

    /// Says that the item being applied is the copy's row under `key`: while a snapshot is
    /// merged in, that row is not removed at the end (`SnapshotMerge`); otherwise nothing.
    public func named(_ key: Int64) throws {
        guard merging else { return }
        try db.run("DELETE FROM temp.snapshot_unnamed WHERE key = ?", key)
    }

    /// Appends an event of this service's own to its outbox, in the applying transaction.
    public func emit<Body: Encodable>(_ type: String, _ body: Body) throws {
        _ = try Outbox(database: db).append(type: type, body: try JSONCoding.encoder.encode(body))
        emitted = true
    }
}

/// How a copy takes a rebuild's snapshot in place, a slice at a time, instead of in one swap
/// that holds the write lock for as long as applying all of it takes: each staged item is
/// applied as a live event is, in slices of about 10 ms with the lock left to other writers
/// between them, and then the rows the snapshot did not name are removed, in slices too.
/// Readers see each row old or new meanwhile, as while live events are applied; not the old
/// copy whole until one instant. Nothing is reset, and `startBulk` is not run (the indexes
/// readers use stay). Only rows the copy held when the rebuild began may be removed: one the
/// service added meanwhile (a place `favorites.add` fetched with `catalog.get`) came after the
/// snapshot's first page, but for the moment before that page, and the events after it say
/// what became of it.
public struct SnapshotMerge: Sendable {
    /// A query of one integer column: the key of every row of the copy, read as a rebuild
    /// begins. `apply` calls `EventScope.named` with the key of each item it applies.
    public var keys: String
    /// Removes the copy's row under `key`, which the snapshot did not name.
    public var remove: @Sendable (_ key: Int64, EventScope) throws -> Void

    public init(keys: String, remove: @escaping @Sendable (_ key: Int64, EventScope) throws -> Void) {
        self.keys = keys
        self.remove = remove
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
    /// Set: a rebuild's snapshot is merged in slices (`SnapshotMerge`) rather than swapped in
    /// one transaction, and `reset` is not run.
    public var merge: SnapshotMerge?

    public init(
        apply: @escaping @Sendable (ReceivedEvent, EventScope) throws -> Void,
        reset: @escaping @Sendable (Database) throws -> Void,
        types: Set<String>? = nil,
        startBulk: (@Sendable (Database) throws -> Void)? = nil,
        finishBulk: (@Sendable (Database) throws -> Void)? = nil,
        settled: (@Sendable (_ committed: Bool) -> Void)? = nil,
        merge: SnapshotMerge? = nil
    ) {
        self.apply = apply
        self.reset = reset
        self.types = types
        self.startBulk = startBulk
        self.finishBulk = finishBulk
        self.settled = settled
        self.merge = merge
    }

    /// An applier that merges a rebuild's snapshot (`merge`), and so has nothing to forget
    /// before one.
    public init(
        apply: @escaping @Sendable (ReceivedEvent, EventScope) throws -> Void,
        merge: SnapshotMerge,
        types: Set<String>? = nil,
        startBulk: (@Sendable (Database) throws -> Void)? = nil,
        finishBulk: (@Sendable (Database) throws -> Void)? = nil,
        settled: (@Sendable (_ committed: Bool) -> Void)? = nil
    ) {
        self.init(apply: apply, reset: { _ in }, types: types, startBulk: startBulk, finishBulk: finishBulk, settled: settled, merge: merge)
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
        db = try options.database.open()
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

    public func beginSnapshot() throws {
        try discardSnapshot()
        guard let merge = applier.merge else { return }
        try db.run("DROP TABLE IF EXISTS temp.snapshot_unnamed")
        try db.run("CREATE TEMP TABLE snapshot_unnamed (key INTEGER PRIMARY KEY)")
        // Deferred: it reads the copy and writes only the temporary table, so it takes no write lock.
        try db.transaction(.deferred) { try db.run("INSERT OR IGNORE INTO temp.snapshot_unnamed (key) " + merge.keys) }
    }

    public func stageSnapshot(_ events: [ReceivedEvent]) throws {
        let wanted = events.filter { applier.wants($0.header.type) }
        guard !wanted.isEmpty else { return }
        try db.transaction { try cursors.stage(source: source, wanted.map(\.envelope)) }
    }

    public func swapSnapshot(cursor: EventCursor, stopping: StopFlag) throws -> Int {
        if let merge = applier.merge { return try mergeSnapshot(merge, cursor: cursor, stopping: stopping) }
        var count = 0
        let scope = EventScope(db: db)
        defer { if scope.emitted { relayWakeup?.signal() } }
        try applying {
            try applier.startBulk?(db)
            try applier.reset(db)
            try cursors.forEachStaged(source: source) { _, envelope in
                // Checked when staged: only the header is read again. An item that can never
                // apply is skipped, as a live event would be, so it cannot wedge every rebuild.
                if try applyOrSkip(try ReceivedEvent(checkedEnvelope: envelope), scope) { count += 1 }
                return true
            }
            try cursors.set(source: source, cursor)
            try cursors.clearStaging(source: source)
        }
        return count
    }

    /// A merge's slices: each applies staged items (or removes rows not named) for about this
    /// long, at most `mergeSliceItems` of them, and the next begins this long after.
    static let mergeSliceNanoseconds: UInt64 = 10_000_000
    static let mergeSliceItems = 2_000
    static let mergeGapMicroseconds: UInt32 = 10_000

    /// `SnapshotMerge`: the keys the copy held as the rebuild began are in a temporary table
    /// (`beginSnapshot`), each staged item applied takes its key out (`EventScope.named`) and
    /// leaves the staging in the slice that applied it, and the keys left are removed. A stop
    /// or a failure half-way leaves a copy of rows old and new and the rest of the staging,
    /// which the next rebuild discards before it starts over.
    private func mergeSnapshot(_ merge: SnapshotMerge, cursor: EventCursor, stopping: StopFlag) throws -> Int {
        defer { try? db.run("DROP TABLE IF EXISTS temp.snapshot_unnamed") }
        let scope = EventScope(db: db, merging: true)
        defer { if scope.emitted { relayWakeup?.signal() } }
        var count = 0
        var after: Int64 = 0
        try inSlices(stopping) { started in
            var applied = 0
            try cursors.forEachStaged(source: source, after: after, limit: Self.mergeSliceItems) { n, envelope in
                guard Self.hasRoom(started, applied) else { return false }
                if try applyOrSkip(try ReceivedEvent(checkedEnvelope: envelope), scope) { count += 1 }
                applied += 1
                after = n
                return true
            }
            try cursors.clearStaging(source: source, through: after)
            return applied > 0
        }
        try inSlices(stopping) { started in
            var removed = 0
            for key in try db.query("SELECT key FROM temp.snapshot_unnamed LIMIT ?", Self.mergeSliceItems).decode("key", as: Int64.self) {
                guard Self.hasRoom(started, removed) else { break }
                try merge.remove(key, scope)
                try db.run("DELETE FROM temp.snapshot_unnamed WHERE key = ?", key)
                removed += 1
            }
            return removed > 0
        }
        try applying {
            try cursors.set(source: source, cursor)
            try cursors.clearStaging(source: source)
        }
        return count
    }

    /// Runs `body` in slices, each in a transaction of its own and followed by a pause that
    /// leaves the write lock to others, until one does nothing (`body` returns false); `body`
    /// is told when its slice began. Throws once `stopping` is raised.
    private func inSlices(_ stopping: StopFlag, _ body: (_ started: UInt64) throws -> Bool) throws {
        while true {
            if stopping.isSet { throw CancellationError() }
            var did = false
            try applying { did = try body(monotonicNanos()) }
            guard did else { return }
            usleep(Self.mergeGapMicroseconds)
        }
    }

    /// Whether a slice that began at `started` and has done `done` items may do another: the
    /// first always, then while its time lasts.
    private static func hasRoom(_ started: UInt64, _ done: Int) -> Bool {
        done == 0 || monotonicNanos() - started < mergeSliceNanoseconds
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
