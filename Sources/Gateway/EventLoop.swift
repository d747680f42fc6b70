import Bus
import CEpoll
import Contracts
import Foundation
import ServiceCore
import Synchronization

#if canImport(Glibc)
    import Glibc
#endif

/// One epoll instance, closed in deinit; used by one event loop's thread.
final class Epoll {
    let descriptor: Int32

    init() throws(SystemError) {
        let fd = epoll_create1(Int32(EPOLL_CLOEXEC))
        guard fd >= 0 else { throw SystemError(operation: "epoll_create1", errno: errno) }
        descriptor = fd
    }

    deinit { close(descriptor) }

    /// Watches `fd` for `events` (level-triggered), reported under `key`.
    func add(_ fd: Int32, events: UInt32, key: UInt64) throws(SystemError) {
        try control(EPOLL_CTL_ADD, fd, events, key)
    }

    /// Changes what `fd` is watched for.
    func modify(_ fd: Int32, events: UInt32, key: UInt64) throws(SystemError) {
        try control(EPOLL_CTL_MOD, fd, events, key)
    }

    /// Stops watching `fd` (before it is closed).
    func remove(_ fd: Int32) {
        var event = epoll_event()
        _ = epoll_ctl(descriptor, EPOLL_CTL_DEL, fd, &event)
    }

    private func control(_ operation: Int32, _ fd: Int32, _ events: UInt32, _ key: UInt64) throws(SystemError) {
        var event = epoll_event(events: events, data: epoll_data_t(u64: key))
        guard epoll_ctl(descriptor, operation, fd, &event) == 0 else { throw SystemError(operation: "epoll_ctl", errno: errno) }
    }

    /// Waits up to `milliseconds` for events into `events`: how many came (0 on a signal).
    func wait(into events: inout [epoll_event], milliseconds: Int32) -> Int {
        let count = events.withUnsafeMutableBufferPointer { epoll_wait(descriptor, $0.baseAddress, Int32($0.count), milliseconds) }
        return max(0, Int(count))
    }

    static let input = EPOLLIN.rawValue
    static let output = EPOLLOUT.rawValue
    /// The client's end of stream arrived (even behind input not read yet).
    static let readHangUp = EPOLLRDHUP.rawValue
    static let hangUp = EPOLLHUP.rawValue
    static let error = EPOLLERR.rawValue
}

/// A connection accepted for a loop: its socket, the session that runs it, and the key its
/// outcomes are posted under. Unchecked: it moves from the acceptor to the loop's thread once.
struct Arrival: @unchecked Sendable {
    let socket: TCPSocket
    let session: ClientSession
    let address: String
    let key: UInt64
}

/// What other threads hand to a loop's thread: call outcomes and pushes for its connections and
/// new connections, in one queue behind one eventfd for the whole loop.
final class LoopInbox: Sendable {
    enum Message: Sendable {
        case outcome(key: UInt64, slot: Int, outcome: Outcome, change: SessionChange?)
        case arrival(Arrival)
        case push(key: UInt64, Push, PushBacklog)
        case recheck(key: UInt64)
        /// The connection's client address has room for calls again.
        case resume(key: UInt64)
    }

    let wakeup: Wakeup
    private let queue = Mutex<[Message]>([])

    init() throws(SystemError) { wakeup = try Wakeup() }

    func post(_ message: Message) {
        let first = queue.withLock { q in
            q.append(message)
            return q.count == 1
        }
        // The loop drains the eventfd before it takes the queue, so one signal per batch is enough.
        if first { wakeup.signal() }
    }

    func take() -> [Message] {
        wakeup.drain()
        return queue.withLock { q in
            defer { q.removeAll(keepingCapacity: q.capacity <= 1_024) }
            return q
        }
    }
}

/// A connection's deadline, as the loop's heap of deadlines orders them: earliest first.
struct TimerEntry: Comparable {
    let at: UInt64
    let key: UInt64

    static func < (a: TimerEntry, b: TimerEntry) -> Bool { a.at < b.at }
}

/// One event-loop thread's share of the client connections: one epoll set, one inbox for
/// outcomes posted to any of them, one read buffer, one heap of deadlines.
///
/// Each wake-up does bounded work per connection (one read of at most the buffer, one
/// write), so a connection with a burst or a slow client waits its turn and does not starve
/// the others; epoll reports a connection that is still ready again on the next wake-up.
///
/// Unchecked Sendable: only `inbox` is used from other threads; everything else belongs to
/// the thread that runs `run()`.
final class EventLoop: @unchecked Sendable {
    /// One connection the loop owns.
    private final class Connection {
        let socket: TCPSocket
        let session: ClientSession
        let key: UInt64
        /// What epoll watches the socket for now.
        var interest: UInt32
        /// The deadline in the heap that is current (later entries for this key are stale).
        var scheduled: UInt64?
        /// Marked for `service` at the end of this wake-up.
        var touched = false

        init(_ arrival: Arrival, interest: UInt32) {
            socket = arrival.socket
            session = arrival.session
            key = arrival.key
            self.interest = interest
        }
    }

    /// Where other threads post outcomes and new connections.
    let inbox: LoopInbox
    private let epoll: Epoll
    private let addresses: ClientAddresses
    private let connectionCount: ConnectionCount
    private let logger: Logger
    private let stopping: StopFlag
    private let abandon: StopFlag
    private var connections: [UInt64: Connection] = [:]
    /// The earliest of the connections' deadlines first. A connection's earlier deadline makes
    /// its later entry stale; stale entries are skipped when they come up, so nothing is
    /// searched or removed in the middle.
    private var timers = MinHeap<TimerEntry>()
    private var touched: [Connection] = []
    /// The loop's one read buffer: bytes go from it into the session that reads them.
    private var scratch = [UInt8](repeating: 0, count: 32 << 10)
    /// The inbox's key in epoll (connection keys start at 1).
    private static let inboxKey: UInt64 = 0
    /// The longest wait, so a stop is seen in time even with no event.
    static let maxWaitMilliseconds: Int32 = 200

    /// `stopping`: answer what is in flight and close; `abandon`: close what is left now.
    init(addresses: ClientAddresses, connections: ConnectionCount, logger: Logger, stopping: StopFlag, abandon: StopFlag) throws(SystemError) {
        inbox = try LoopInbox()
        epoll = try Epoll()
        self.addresses = addresses
        connectionCount = connections
        self.logger = logger
        self.stopping = stopping
        self.abandon = abandon
        try epoll.add(inbox.wakeup.descriptor, events: Epoll.input, key: EventLoop.inboxKey)
    }

    /// Serves connections until the gateway stops and they have closed (or are abandoned).
    func run() {
        var events = [epoll_event](repeating: epoll_event(), count: 256)
        var stopped = false
        while true {
            if stopping.isSet && !stopped {
                stopped = true
                for connection in connections.values {
                    connection.session.stop()
                    touch(connection)
                }
                serviceTouched(now: monotonicNanos())
            }
            if abandon.isSet || (stopped && connections.isEmpty) { break }
            var wait = EventLoop.maxWaitMilliseconds
            if let next = timers.first {
                let now = monotonicNanos()
                wait = next.at <= now ? 0 : Int32(min(UInt64(wait), (next.at - now) / 1_000_000 + 1))
            }
            let count = epoll.wait(into: &events, milliseconds: wait)
            let now = monotonicNanos()
            for index in 0..<count {
                let key = events[index].data.u64
                if key == EventLoop.inboxKey {
                    takeInbox(now: now)
                } else if let connection = connections[key] {
                    handle(connection, events[index].events, now: now)
                }
            }
            runTimers(now: now)
            serviceTouched(now: now)
        }
        for key in Array(connections.keys) { finish(key) }
        // Connections handed over as the loop ended: closed (their sockets with them), and counted out.
        for case .arrival(let arrival) in inbox.take() { closed(arrival.address) }
    }

    private func touch(_ connection: Connection) {
        guard !connection.touched else { return }
        connection.touched = true
        touched.append(connection)
    }

    private func takeInbox(now: UInt64) {
        for message in inbox.take() {
            switch message {
            case .outcome(let key, let slot, let outcome, let change):
                // A connection that closed meanwhile has no one to tell.
                guard let connection = connections[key] else { continue }
                connection.session.complete(slot, outcome, change, now: now)
                touch(connection)
            case .arrival(let arrival):
                adopt(arrival, now: now)
            case .push(let key, let push, let backlog):
                backlog.release()
                guard let connection = connections[key] else { continue }
                connection.session.push(push)
                touch(connection)
            case .recheck(let key):
                connections[key]?.session.recheck()
            case .resume(let key):
                guard let connection = connections[key] else { continue }
                connection.session.resume(now: now)
                touch(connection)
            }
        }
    }

    private func adopt(_ arrival: Arrival, now: UInt64) {
        if stopping.isSet { arrival.session.stop() }
        let connection = Connection(arrival, interest: interest(arrival.session, now: now))
        do {
            try epoll.add(arrival.socket.descriptor, events: connection.interest, key: arrival.key)
        } catch {
            logger.error("could not serve a connection", ["error": error])
            closed(arrival.address)
            return
        }
        connections[arrival.key] = connection
        touch(connection)
    }

    /// What epoll should watch a session's socket for.
    private func interest(_ session: ClientSession, now: UInt64) -> UInt32 {
        (session.wantsInput(now: now) ? Epoll.input : 0)
            | (session.pendingOutput > 0 ? Epoll.output : 0)
            | (session.endKnown ? 0 : Epoll.readHangUp)
    }

    private func handle(_ connection: Connection, _ events: UInt32, now: UInt64) {
        let session = connection.session
        session.tick(now: now)
        if events & Epoll.readHangUp != 0 { session.endArrived(now: now) }
        let reading = connection.interest & Epoll.input != 0
        if reading && events & (Epoll.input | Epoll.hangUp | Epoll.error) != 0 {
            do {
                if let count = try connection.socket.read(into: &scratch) {
                    if count == 0 {
                        session.receiveEnd(now: now)
                    } else {
                        session.receive(scratch[0..<count], now: now)
                    }
                }
            } catch {
                finish(connection)
                return
            }
        } else if events & (Epoll.hangUp | Epoll.error) != 0 && session.pendingOutput == 0 {
            // Reset, or shut both ways: nothing more comes and nothing written can arrive
            // (epoll would report it on every wake-up until the socket closes).
            finish(connection)
            return
        }
        touch(connection)
    }

    private func runTimers(now: UInt64) {
        while let next = timers.first, next.at <= now {
            _ = timers.pop()
            guard let connection = connections[next.key], connection.scheduled == next.at else { continue }
            connection.scheduled = nil
            connection.session.tick(now: now)
            touch(connection)
        }
    }

    private func serviceTouched(now: UInt64) {
        let batch = touched
        touched.removeAll(keepingCapacity: true)
        for connection in batch {
            connection.touched = false
            service(connection, now: now)
        }
    }

    /// Ends the session when it is past a limit of time, else writes what it has (once), ends
    /// it when it is over, and otherwise watches its socket and its next deadline.
    private func service(_ connection: Connection, now: UInt64) {
        let session = connection.session
        // It may have closed after it was touched in this wake-up.
        guard connections[connection.key] === connection else { return }
        // Limits of time first: a client that has not read for its grace is not let off by the
        // few bytes its kernel takes now and then.
        if let ending = session.expired(now: now) {
            if ending == .slowReader || ending == .unreadPushes {
                logger.warn("disconnecting a client that does not read", ["reason": ending.rawValue, "pending_bytes": session.pendingOutput])
            } else {
                logger.debug("closing a connection", ["reason": ending.rawValue])
            }
            finish(connection)
            return
        }
        if session.pendingOutput > 0 {
            guard let sent = try? connection.socket.write(session.output, from: session.outputSent) else {
                finish(connection)
                return
            }
            session.wrote(sent, now: now)
        }
        if session.isFinished {
            finish(connection)
            return
        }
        let wanted = interest(session, now: now)
        if wanted != connection.interest {
            do {
                try epoll.modify(connection.socket.descriptor, events: wanted, key: connection.key)
            } catch {
                finish(connection)
                return
            }
            connection.interest = wanted
        }
        // Never a deadline already past: the heap is run once per wake-up.
        if let deadline = session.nextDeadline().map({ max($0, now + 1) }), connection.scheduled.map({ deadline < $0 }) ?? true {
            connection.scheduled = deadline
            timers.push(TimerEntry(at: deadline, key: connection.key))
        }
    }

    private func finish(_ connection: Connection) { finish(connection.key) }

    private func finish(_ key: UInt64) {
        guard let connection = connections.removeValue(forKey: key) else { return }
        connection.session.closed()
        epoll.remove(connection.socket.descriptor)
        // Counted, by now, under the client a trusted proxy named, if it named one.
        closed(connection.session.address)
    }

    private func closed(_ address: String) {
        addresses.close(address)
        _ = connectionCount.add(-1)
        MemoryRelease.soon()
    }
}
