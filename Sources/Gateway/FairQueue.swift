import Bus
import Foundation
import Synchronization

/// Who a request comes from: the client's address and its connection there.
struct ClientKey: Hashable, Sendable {
    var address: String
    var connection: UInt64
}

/// A window of requests in flight to one backend, shared fairly between clients.
///
/// At most `window` jobs run at once; the rest wait in one queue per client address and,
/// inside it, per connection. A free place goes to the address whose use would be least
/// once its next job ran: its use so far plus what a job of that kind (a method) typically
/// holds a place for; inside it, round-robin to the next connection. An address's use is
/// the time its jobs held a place (each charged its kind's typical time when it starts,
/// corrected when it ends), decayed by half every minute, and kept while it lasts, not only
/// while the address has jobs waiting. So a client that floods, or sends one costly request
/// after another, or does so from many addresses, waits behind its own use, and a cheap
/// request of one that asks now and then goes next: a victim among 200 busy addresses is
/// served before all of them, not after a turn of each, and before their costly requests
/// even when they are new. Jobs of a lower `priority` class wait while any of a higher one
/// does (sign-ups behind logins). A job whose deadline passed while it waited is expired
/// without running.
final class FairQueue: Sendable {
    /// One request waiting for a place: `run` starts it and must call `done` exactly once
    /// when it no longer needs the place; `expire` answers it when its time ran out.
    struct Job: Sendable {
        var deadline: UInt64
        var run: @Sendable (_ done: @escaping @Sendable () -> Void) -> Void
        var expire: @Sendable () -> Void
        /// What kind of work it is (its method), whose typical time it is charged.
        var kind = ""
        /// 0 first; a job of class 1 runs only while none of class 0 waits.
        var priority = 0
    }

    private struct Lane {
        var address: String
        var priority: Int
        var connections: [UInt64: Deque<Job>] = [:]
        var order = Deque<UInt64>()
        /// When the lane began waiting, among lanes: the older goes first of two that used as much.
        var arrival: UInt64

        /// The job it would give next.
        var next: Job? { order.first.flatMap { connections[$0]?.first } }
    }

    private struct State {
        var running = 0
        var waiting = 0
        var lanes: [String: Lane] = [:]
        var arrivals: UInt64 = 0
        /// Each address's use (nanoseconds a place was held), decayed, scaled to `reference`:
        /// a use at time t counts 2^((t - reference) / halfLife) times its nanoseconds, so
        /// uses at different times compare without decaying each one.
        var usage: [String: Double] = [:]
        /// The use of the address whose job started last, before that job: an address that
        /// starts waiting is counted as having used at least this much, so one quiet until a
        /// flood begins gains no turn over those already waiting, only its cheaper requests do.
        var virtual: Double = 0
        var reference: UInt64
        /// What a job of each kind typically holds a place for (a moving average), charged when it starts.
        var typical: [String: Double] = [:]
    }

    /// What a job of a kind not seen yet is assumed to hold a place for.
    static let firstEstimate: Double = 1_000_000

    /// An address's use halves every minute.
    static let halfLifeNanoseconds = 60e9

    let window: Int
    private let state: Mutex<State>
    private let clock: @Sendable () -> UInt64

    init(window: Int, clock: @escaping @Sendable () -> UInt64 = monotonicNanos) {
        self.window = max(1, window)
        self.clock = clock
        state = Mutex(State(reference: clock()))
    }

    /// Jobs waiting for a place.
    var waiting: Int { state.withLock { $0.waiting } }
    /// Jobs running.
    var running: Int { state.withLock { $0.running } }

    /// Runs `job` now if there is a place, else queues it behind the client's own earlier jobs.
    func submit(_ client: ClientKey, _ job: Job) {
        let now = clock()
        let lane = "\(job.priority) \(client.address)"
        let start: Double? = state.withLock { s in
            if s.running < window && s.waiting == 0 {
                s.running += 1
                s.virtual = max(s.virtual, s.usage[client.address] ?? 0)
                return FairQueue.charge(&s, client.address, kind: job.kind, now: now)
            }
            if s.lanes[lane] == nil {
                s.arrivals += 1
                s.lanes[lane] = Lane(address: client.address, priority: job.priority, arrival: s.arrivals)
                s.usage[client.address] = max(s.usage[client.address] ?? 0, s.virtual)
            }
            if s.lanes[lane]?.connections[client.connection] == nil {
                s.lanes[lane]?.connections[client.connection] = Deque()
                s.lanes[lane]?.order.append(client.connection)
            }
            s.lanes[lane]?.connections[client.connection]?.append(job)
            s.waiting += 1
            return nil
        }
        if let charged = start { launch(job, address: client.address, charged: charged) }
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
            for (key, var lane) in s.lanes {
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
                    s.lanes[key] = nil
                } else {
                    lane.order = lane.order.filter { lane.connections[$0] != nil }
                    s.lanes[key] = lane
                }
            }
            s.waiting -= expired.count
            return expired
        }
        expired.forEach { $0.expire() }
    }

    /// Runs `job`, then the jobs that take its place while they finish before `run` returns
    /// (a loop, not a recursion, however many do).
    private func launch(_ job: Job, address: String, charged: Double) {
        var next: (job: Job, address: String, charged: Double)? = (job, address, charged)
        while let current = next {
            let race = Race()
            let started = clock()
            current.job.run { [self] in
                if race.claim(1) { return }
                if let following = finished(current.address, kind: current.job.kind, charged: current.charged, started: started) {
                    launch(following.job, address: following.address, charged: following.charged)
                }
            }
            next = race.claim(2) ? nil : finished(current.address, kind: current.job.kind, charged: current.charged, started: started)
        }
    }

    /// A running job of `address` gave its place back: its use is corrected to what it held,
    /// and the next job to run is taken, if any; those whose time is up are expired.
    private func finished(_ address: String, kind: String, charged: Double, started: UInt64) -> (job: Job, address: String, charged: Double)? {
        var expired: [Job] = []
        let now = clock()
        let next: (job: Job, address: String, charged: Double)? = state.withLock { s in
            s.running -= 1
            let held = Double(now > started ? now - started : 0)
            // The first of a kind is its estimate; later ones move it an eighth of the way.
            s.typical[kind] = s.typical[kind].map { $0 + (held - $0) / 8 } ?? held
            FairQueue.use(&s, address, held - charged, now: now)
            while let (job, address) = FairQueue.takeNext(&s, now: now) {
                if job.deadline <= now {
                    expired.append(job)
                    continue
                }
                s.running += 1
                return (job, address, FairQueue.charge(&s, address, kind: job.kind, now: now))
            }
            return nil
        }
        expired.forEach { $0.expire() }
        return next
    }

    /// Charges `address` the typical time of a job of `kind` starting now; answers the charge.
    private static func charge(_ s: inout State, _ address: String, kind: String, now: UInt64) -> Double {
        let typical = s.typical[kind] ?? firstEstimate
        use(&s, address, typical, now: now)
        return typical
    }

    /// Adds `nanoseconds` (less, when negative, never below nothing) to `address`'s use at `now`.
    private static func use(_ s: inout State, _ address: String, _ nanoseconds: Double, now: UInt64) {
        if now > s.reference, Double(now - s.reference) > 4 * halfLifeNanoseconds { rebase(&s, now: now) }
        let scale = exp2(Double(Int64(bitPattern: now &- s.reference)) / halfLifeNanoseconds)
        s.usage[address] = max(0, (s.usage[address] ?? 0) + nanoseconds * scale)
    }

    /// Moves the reference time to `now`, decaying every use by as much, and forgets the uses
    /// decayed below a microsecond of addresses with nothing waiting.
    private static func rebase(_ s: inout State, now: UInt64) {
        let factor = exp2(-Double(now - s.reference) / halfLifeNanoseconds)
        s.reference = now
        s.virtual *= factor
        var kept: [String: Double] = [:]
        let waiting = Set(s.lanes.values.map(\.address))
        for (address, use) in s.usage where use * factor >= 1_000 || waiting.contains(address) { kept[address] = use * factor }
        s.usage = kept
    }

    /// The next job and its address: from the lane of the highest priority whose address's use
    /// would be least once its next job ran (of two alike, the one waiting longer), its next
    /// connection's oldest.
    private static func takeNext(_ s: inout State, now: UInt64) -> (Job, String)? {
        // A time used now counts this much beside the uses kept (scaled to `reference`).
        let scale = exp2(Double(Int64(bitPattern: now &- s.reference)) / halfLifeNanoseconds)
        func finish(_ lane: Lane) -> Double {
            (s.usage[lane.address] ?? 0) + (lane.next.map { s.typical[$0.kind] ?? firstEstimate } ?? 0) * scale
        }
        while let key = s.lanes.min(by: { a, b in
            if a.value.priority != b.value.priority { return a.value.priority < b.value.priority }
            let (fa, fb) = (finish(a.value), finish(b.value))
            return fa != fb ? fa < fb : a.value.arrival < b.value.arrival
        })?.key, var lane = s.lanes[key] {
            let address = lane.address
            s.virtual = max(s.virtual, s.usage[address] ?? 0)
            var job: Job?
            while job == nil, let connection = lane.order.popFirst() {
                job = lane.connections[connection]?.popFirst()
                if lane.connections[connection]?.isEmpty == false {
                    lane.order.append(connection)
                } else {
                    lane.connections[connection] = nil
                }
            }
            s.lanes[key] = lane.order.isEmpty ? nil : lane
            if let job {
                s.waiting -= 1
                return (job, address)
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
