import Bus
import Foundation
import Storage

/// Work a service does off the request path (a tour map's tiles), on a thread of its own with
/// a connection of its own: it runs `step` when woken (`BackgroundSignal.wake`) or every
/// `idleMilliseconds`, until the service stops. A step keeps its transactions short, since
/// the writer thread waits for them (the busy timeout), and writes only what it derives,
/// never events: changes that followers must hear still go through the writer.
public struct BackgroundWork: Sendable {
    public var name: String
    public var signal: BackgroundSignal
    public var idleMilliseconds: Int
    /// One round of work, with the service's clients of its peers and its logger; true when
    /// there may be more to do at once.
    public var step: @Sendable (Database, BackgroundSignal, BackgroundContext) throws -> Bool

    public init(
        name: String, signal: BackgroundSignal, idleMilliseconds: Int = 1_000,
        step: @escaping @Sendable (Database, BackgroundSignal) throws -> Bool
    ) {
        self.init(name: name, signal: signal, idleMilliseconds: idleMilliseconds) { db, signal, _ in try step(db, signal) }
    }

    /// Work that asks other services (search fetching the catalog's street networks).
    public init(
        name: String, signal: BackgroundSignal, idleMilliseconds: Int = 1_000,
        step: @escaping @Sendable (Database, BackgroundSignal, BackgroundContext) throws -> Bool
    ) {
        self.name = name
        self.signal = signal
        self.idleMilliseconds = idleMilliseconds
        self.step = step
    }
}

/// What a step that talks to other services has: their clients, and the service's logger.
public struct BackgroundContext: Sendable {
    public let peers: PeerClients
    public let logger: Logger
}

/// Wakes a `BackgroundWork` and tells it to stop; handlers keep one to say there is work.
public final class BackgroundSignal: Sendable {
    private let semaphore = DispatchSemaphore(value: 0)
    private let stopping = StopFlag()

    public init() {}

    /// There is work: the thread runs its step now rather than at its next idle wake.
    public func wake() { semaphore.signal() }

    /// Whether the service is stopping: a long step checks it between pieces of work.
    public var isStopping: Bool { stopping.isSet }

    func stop() {
        stopping.set()
        semaphore.signal()
    }

    /// Waits for a wake, at most `milliseconds`.
    func wait(milliseconds: Int) { _ = semaphore.wait(timeout: .now() + .milliseconds(milliseconds)) }
}

/// The thread that runs one `BackgroundWork`; a failed step is logged and tried again at the next
/// wake. A replica that does not lead (`leading` false) runs no step: its writes would be refused.
final class BackgroundRunner: Sendable {
    private let thread: WorkerThread
    private let signal: BackgroundSignal

    init(
        _ work: BackgroundWork, database: DatabaseFile, tuning: DatabaseTuning, peers: PeerClients, leading: (@Sendable () -> Bool)? = nil,
        logger: Logger
    ) throws {
        let db = try database.open()
        try db.tune(tuning)
        signal = work.signal
        let connection = UncheckedConnection(db)
        thread = WorkerThread(name: "\(logger.component)-\(work.name)") {
            let db = connection.db
            while !work.signal.isStopping {
                var more = false
                if leading?() == false {
                    work.signal.wait(milliseconds: work.idleMilliseconds)
                    continue
                }
                do {
                    more = try work.step(db, work.signal, BackgroundContext(peers: peers, logger: logger))
                } catch {
                    logger.warn("background work failed", ["work": work.name, "error": error])
                }
                if !more { work.signal.wait(milliseconds: work.idleMilliseconds) }
            }
        }
    }

    func stop() {
        signal.stop()
        thread.join()
    }
}

/// A connection handed to the one thread that will use it (made on the starting thread so an
/// open that fails fails the start).
private struct UncheckedConnection: @unchecked Sendable {
    let db: Database
    init(_ db: Database) { self.db = db }
}
