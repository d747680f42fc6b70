import Bus
import Foundation

/// A cursor store in memory, for a subscriber that keeps nothing durable (a cache of what a
/// publisher's events say): the cursor lives as long as the process, and `apply` and `reset`
/// act on the caller's memory. At start there is no cursor, so the subscriber replays the
/// publisher's history, or rebuilds from its snapshot when the outbox was trimmed.
///
/// Made on the subscriber's thread (in `EventSubscriber`'s `store` closure) and used only
/// there. Memory cannot roll back: when `apply` throws something other than a `ServiceError`
/// half-way through a batch, the events before it stay applied and the cursor stays where it
/// was, so they come again (appliers are idempotent). A snapshot is staged in memory and the
/// copy changes only at the swap, as with SQLite.
public final class MemoryCursorStore: EventCursorStore {
    private let source: String
    private let logger: Logger
    private let types: Set<String>?
    private let applyEvent: (ReceivedEvent) throws -> Void
    private let resetAll: () throws -> Void
    private var cursor: EventCursor?
    private var staged: [ReceivedEvent] = []

    /// `apply` acts on one event (only those of `types`, when given); `reset` forgets
    /// everything learned from the source, before a snapshot is swapped in.
    public init(source: String, logger: Logger, types: Set<String>? = nil,
                apply: @escaping (ReceivedEvent) throws -> Void, reset: @escaping () throws -> Void) {
        self.source = source
        self.logger = logger
        self.types = types
        applyEvent = apply
        resetAll = reset
    }

    private func wants(_ event: ReceivedEvent) -> Bool { types?.contains(event.header.type) ?? true }

    /// How many events a snapshot has staged so far.
    public var stagedCount: Int { staged.count }

    public func loadCursor() throws -> EventCursor? { cursor }

    public func apply(_ events: [ReceivedEvent], advancingTo cursor: EventCursor) throws -> Int {
        var skipped = 0
        for event in events where wants(event) {
            do {
                try applyEvent(event)
            } catch let error as ServiceError {
                skipped += 1
                logger.error("skipped an event that cannot apply", ["source": source, "seq": event.header.seq,
                                                                     "type": event.header.type, "error": error])
            }
        }
        self.cursor = cursor
        return skipped
    }

    public var hasBulkLoad: Bool { false }
    public func startBulk() throws {}
    public func finishBulk() throws {}

    public func discardSnapshot() throws { staged = [] }

    public func stageSnapshot(_ events: [ReceivedEvent]) throws { staged += events.filter(wants) }

    public func swapSnapshot(cursor: EventCursor) throws -> Int {
        try resetAll()
        for event in staged { try applyEvent(event) }
        let count = staged.count
        staged = []
        self.cursor = cursor
        return count
    }
}
