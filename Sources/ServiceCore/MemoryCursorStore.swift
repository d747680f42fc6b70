import Bus
import Foundation

/// A cursor store in memory, for a subscriber that keeps nothing durable (a cache of what a
/// publisher's events say, such as the gateway's token validations): the cursor lives as long
/// as the process, and `apply` and `forgetAll` act on the caller's memory. At start there is no
/// cursor, so the subscriber forgets all and follows from the publisher's head; it does the same
/// wherever the publisher's history no longer reaches the cursor (`CacheCursorStore`).
///
/// Made on the subscriber's thread (in `EventSubscriber`'s `cache` closure) and used only
/// there. Memory cannot roll back: when `apply` throws something other than a `ServiceError`
/// half-way through a batch, the events before it stay applied and the cursor stays where it
/// was, so they come again (appliers are idempotent).
public final class MemoryCursorStore: CacheCursorStore {
    private let source: String
    private let logger: Logger
    private let types: Set<String>?
    private let applyEvent: (ReceivedEvent) throws -> Void
    private let forgetEverything: () throws -> Void
    private var cursor: EventCursor?

    /// `apply` acts on one event (only those of `types`, when given; a `ServiceError` skips
    /// the event, logged); `forgetAll` forgets everything learned from the source.
    public init(
        source: String, logger: Logger, types: Set<String>? = nil,
        apply: @escaping (ReceivedEvent) throws -> Void, forgetAll: @escaping () throws -> Void
    ) {
        self.source = source
        self.logger = logger
        self.types = types
        applyEvent = apply
        forgetEverything = forgetAll
    }

    public func loadCursor() throws -> EventCursor? { cursor }

    public func apply(_ events: [ReceivedEvent], advancingTo cursor: EventCursor) throws -> Int {
        var skipped = 0
        for event in events where types?.contains(event.header.type) ?? true {
            do {
                try applyEvent(event)
            } catch let error as ServiceError {
                skipped += 1
                logger.error(
                    "skipped an event that cannot apply",
                    [
                        "source": source, "seq": event.header.seq,
                        "type": event.header.type, "error": error,
                    ])
            }
        }
        self.cursor = cursor
        return skipped
    }

    public func forgetAll(advancingTo cursor: EventCursor) throws {
        try forgetEverything()
        self.cursor = cursor
    }
}
