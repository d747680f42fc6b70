import Bus
import Foundation
import Storage
import Synchronization

/// Events that request handlers hand over, to be appended to the service's outbox in groups by
/// a thread of its own (`DeferredEventWriter`), so a read that causes an event (search's
/// `search.performed`) never waits for a write transaction. Shared by every thread of the service.
///
/// What it promises: an event handed over is appended unless the process dies first. A stop
/// appends everything handed over (the writer stops after the request server). A crash (`kill
/// -9`, a power loss) loses the events still waiting: those handed over in the last
/// `gatherMilliseconds` and while the last group committed. While `capacity` events wait (the
/// writer cannot commit: a full disk, a long bulk load holding the write lock), one more is
/// refused: `hand` returns false, the refusal is counted (`dropped`) and logged, never silent.
public final class DeferredEvents: Sendable {
    /// The most events waiting at once.
    public let capacity: Int
    /// The most events appended in one transaction.
    public let groupSize: Int
    /// How long the writer lets events gather after the first of a group arrives, so a busy
    /// service commits (and wakes its relay) about this often rather than once per event.
    public let gatherMilliseconds: Int
    /// Whether an event waiting is still to be appended, asked inside the transaction that
    /// would append it (holding the write lock): a change committed before, such as an erased
    /// user's redaction, is seen, and one after it finds the event appended.
    let keep: (@Sendable (_ type: String, _ body: Data) -> Bool)?
    private let state = Mutex(Queue())
    /// Signalled when the queue stops being empty (and on stop).
    let wake = DispatchSemaphore(value: 0)

    struct Queue {
        var events: [(type: String, body: Data)] = []
        var dropped = 0
    }

    public init(
        capacity: Int = 10_000, groupSize: Int = 1_000, gatherMilliseconds: Int = 10,
        keep: (@Sendable (_ type: String, _ body: Data) -> Bool)? = nil
    ) {
        self.capacity = max(1, capacity)
        self.groupSize = max(1, groupSize)
        self.gatherMilliseconds = max(0, gatherMilliseconds)
        self.keep = keep
    }

    /// Hands an event over (its body JSON, as `JSONCoding.encoder` makes it); false, and counted
    /// in `dropped`, when `capacity` are already waiting.
    @discardableResult
    public func hand(_ type: String, json body: Data) -> Bool {
        let (accepted, wasEmpty) = state.withLock { queue -> (Bool, Bool) in
            guard queue.events.count < capacity else {
                queue.dropped += 1
                return (false, false)
            }
            queue.events.append((type, body))
            return (true, queue.events.count == 1)
        }
        if wasEmpty { wake.signal() }
        return accepted
    }

    /// Events refused so far because the queue was full.
    public var dropped: Int { state.withLock { $0.dropped } }
    /// Events waiting now.
    public var waiting: Int { state.withLock { $0.events.count } }

    /// The oldest waiting events, at most `groupSize`, left in the queue until `remove`.
    func peek() -> [(type: String, body: Data)] { state.withLock { Array($0.events.prefix(groupSize)) } }

    /// Forgets the oldest `count` events (appended and committed). Only the writer removes, so
    /// they are the ones it peeked.
    func remove(_ count: Int) { state.withLock { $0.events.removeFirst(min(count, $0.events.count)) } }
}

/// The thread that appends `DeferredEvents` to the outbox, one group per `IMMEDIATE`
/// transaction (the outbox's seqs stay consecutive: SQLite lets one write transaction at a
/// time hold the lock), gathered for `gatherMilliseconds` after the first event of a group,
/// and wakes the relay after each commit. A failed group stays queued and is
/// tried again 100 ms later (logged once per streak). On stop it appends what is left.
final class DeferredEventWriter: Sendable {
    private let events: DeferredEvents
    private let stopping = StopFlag()
    private let thread: WorkerThread

    init(_ events: DeferredEvents, database: DatabaseFile, tuning: DatabaseTuning, relayWakeup: Wakeup?, logger: Logger) throws {
        self.events = events
        let db = try database.open()
        try db.tune(tuning)
        let connection = HandedConnection(db)
        let stopping = self.stopping
        thread = WorkerThread(name: "\(logger.component)-deferred") {
            let db = connection.db
            var failing = false
            var droppedLogged = 0
            /// Appends one group; false when nothing was waiting or the group failed.
            func appendGroup() -> Bool {
                let group = events.peek()
                guard !group.isEmpty else { return false }
                do {
                    try db.transaction(.immediate) {
                        let outbox = Outbox(database: db)
                        for event in group where events.keep?(event.type, event.body) ?? true {
                            try outbox.append(type: event.type, body: event.body)
                        }
                    }
                    events.remove(group.count)
                    relayWakeup?.signal()
                    if failing { logger.info("deferred events appended again", [:]) }
                    failing = false
                    return true
                } catch {
                    if !failing { logger.warn("could not append deferred events; will retry", ["waiting": events.waiting, "error": error]) }
                    failing = true
                    return false
                }
            }
            while !stopping.isSet {
                if events.waiting == 0 {
                    _ = events.wake.wait(timeout: .now() + .milliseconds(1_000))
                } else {
                    // Let the events of the next few milliseconds join this group.
                    if events.waiting < events.groupSize && events.gatherMilliseconds > 0 && !failing {
                        usleep(UInt32(events.gatherMilliseconds) * 1_000)
                    }
                    while !stopping.isSet && appendGroup() {}
                    if failing { _ = events.wake.wait(timeout: .now() + .milliseconds(100)) }
                }
                let dropped = events.dropped
                if dropped > droppedLogged {
                    logger.error("deferred events refused: the queue was full", ["refused": dropped - droppedLogged, "total": dropped])
                    droppedLogged = dropped
                }
            }
            // The request server has stopped: nothing more is handed over. A few tries, then say what is lost.
            for _ in 0..<20 where events.waiting > 0 {
                if !appendGroup() && events.waiting > 0 { usleep(100_000) }
            }
            if events.waiting > 0 { logger.error("deferred events lost at stop: they could not be appended", ["lost": events.waiting]) }
        }
    }

    func stop() {
        stopping.set()
        events.wake.signal()
        thread.join()
    }
}

/// A connection handed to the one thread that will use it (opened on the starting thread, so
/// an open that fails fails the start).
private struct HandedConnection: @unchecked Sendable {
    let db: Database
    init(_ db: Database) { self.db = db }
}
