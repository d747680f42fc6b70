import Bus
import Synchronization

/// Who a request comes from: the client's address and its connection there.
struct ClientKey: Hashable, Sendable {
    var address: String
    var connection: UInt64
}

/// A window of requests in flight to one backend, shared fairly between clients.
///
/// At most `window` jobs run at once; the rest wait in one queue per client address and,
/// inside it, per connection. A free place goes to the address that has been served least
/// (start-time fair queueing: each address counts the jobs it started, and one that starts
/// waiting begins at the count of the last address served), and inside it round-robin to the
/// next connection. So a client that sends a flood waits behind its own requests, and one
/// that asks now and then goes next. A job whose deadline passed while it waited is expired
/// without running.
final class FairQueue: Sendable {
    /// One request waiting for a place: `run` starts it and must call `done` exactly once
    /// when it no longer needs the place; `expire` answers it when its time ran out.
    struct Job: Sendable {
        var deadline: UInt64
        var run: @Sendable (_ done: @escaping @Sendable () -> Void) -> Void
        var expire: @Sendable () -> Void
    }

    private struct Lane {
        var connections: [UInt64: Deque<Job>] = [:]
        var order = Deque<UInt64>()
        /// Jobs the address started, counted from the virtual time it began waiting at.
        var served: UInt64
    }

    private struct State {
        var running = 0
        var waiting = 0
        var lanes: [String: Lane] = [:]
        /// The count of the address served last.
        var virtualTime: UInt64 = 0
    }

    let window: Int
    private let state = Mutex(State())

    init(window: Int) { self.window = max(1, window) }

    /// Jobs waiting for a place.
    var waiting: Int { state.withLock { $0.waiting } }
    /// Jobs running.
    var running: Int { state.withLock { $0.running } }

    /// Runs `job` now if there is a place, else queues it behind the client's own earlier jobs.
    func submit(_ client: ClientKey, _ job: Job) {
        let start: Bool = state.withLock { s in
            if s.running < window && s.waiting == 0 {
                s.running += 1
                return true
            }
            if s.lanes[client.address] == nil {
                s.lanes[client.address] = Lane(served: s.virtualTime)
            }
            if s.lanes[client.address]?.connections[client.connection] == nil {
                s.lanes[client.address]?.connections[client.connection] = Deque()
                s.lanes[client.address]?.order.append(client.connection)
            }
            s.lanes[client.address]?.connections[client.connection]?.append(job)
            s.waiting += 1
            return false
        }
        if start { launch(job) }
    }

    /// Answers waiting jobs whose deadline has passed, so a client hears within its deadline
    /// even while no running job finishes (a hung backend). The gateway calls it every 50 ms.
    /// It looks at the oldest job of each connection only (a connection's deadlines mostly
    /// come in order; any other expired job is answered when its turn comes), so a sweep
    /// costs what the connections waiting cost, not what their jobs do.
    func expireOverdue(now: UInt64 = monotonicNanos()) {
        let expired: [Job] = state.withLock { s in
            guard s.waiting > 0 else { return [] }
            var expired: [Job] = []
            for (address, var lane) in s.lanes {
                var changed = false
                for (connection, var jobs) in lane.connections {
                    guard let first = jobs.first, first.deadline <= now else { continue }
                    while let job = jobs.first, job.deadline <= now {
                        expired.append(job)
                        _ = jobs.popFirst()
                    }
                    lane.connections[connection] = jobs.isEmpty ? nil : jobs
                    changed = true
                }
                guard changed else { continue }
                if lane.connections.isEmpty {
                    s.lanes[address] = nil
                } else {
                    lane.order = lane.order.filter { lane.connections[$0] != nil }
                    s.lanes[address] = lane
                }
            }
            s.waiting -= expired.count
            return expired
        }
        expired.forEach { $0.expire() }
    }

    /// Runs `job`, then the jobs that take its place while they finish before `run` returns
    /// (a loop, not a recursion, however many do).
    private func launch(_ job: Job) {
        var next: Job? = job
        while let current = next {
            let race = Race()
            current.run { [self] in
                if race.claim(1) { return }
                if let following = finished() { launch(following) }
            }
            next = race.claim(2) ? nil : finished()
        }
    }

    /// A running job gave its place back: the next job to run, if any; those whose time is up are expired.
    private func finished() -> Job? {
        var expired: [Job] = []
        let next: Job? = state.withLock { s in
            s.running -= 1
            let now = monotonicNanos()
            while let job = FairQueue.takeNext(&s) {
                if job.deadline <= now {
                    expired.append(job)
                    continue
                }
                s.running += 1
                return job
            }
            return nil
        }
        expired.forEach { $0.expire() }
        return next
    }

    /// The next job: from the address served least, its next connection's oldest.
    private static func takeNext(_ s: inout State) -> Job? {
        while let address = s.lanes.min(by: { $0.value.served < $1.value.served || ($0.value.served == $1.value.served && $0.key < $1.key) })?.key,
            var lane = s.lanes[address]
        {
            var job: Job?
            while job == nil, let connection = lane.order.popFirst() {
                job = lane.connections[connection]?.popFirst()
                if lane.connections[connection]?.isEmpty == false {
                    lane.order.append(connection)
                } else {
                    lane.connections[connection] = nil
                }
            }
            s.virtualTime = lane.served
            lane.served += 1
            s.lanes[address] = lane.order.isEmpty ? nil : lane
            if let job {
                s.waiting -= 1
                return job
            }
        }
        return nil
    }
}

/// Which came first, `done` inside `run` (1) or `run` returning (2): the first to claim wins.
private final class Race: Sendable {
    private let state = Atomic<Int>(0)
    func claim(_ value: Int) -> Bool { state.compareExchange(expected: 0, desired: value, ordering: .acquiringAndReleasing).exchanged }
}

/// A first-in first-out queue with O(1) removal at the front.
struct Deque<Element> {
    private var items: [Element] = []
    private var head = 0

    init() {}

    var isEmpty: Bool { head == items.count }
    var first: Element? { head < items.count ? items[head] : nil }
    var count: Int { items.count - head }

    mutating func append(_ element: Element) { items.append(element) }

    /// The elements that satisfy `keep`, in order.
    func filter(_ keep: (Element) -> Bool) -> Deque {
        var out = Deque()
        for element in items[head...] where keep(element) { out.append(element) }
        return out
    }

    mutating func popFirst() -> Element? {
        guard head < items.count else { return nil }
        let element = items[head]
        head += 1
        if head == items.count {
            items.removeAll(keepingCapacity: items.count < 1_024)
            head = 0
        } else if head >= 1_024 && head * 2 >= items.count {
            items.removeFirst(head)
            head = 0
        }
        return element
    }
}

extension Deque: Sendable where Element: Sendable {}
