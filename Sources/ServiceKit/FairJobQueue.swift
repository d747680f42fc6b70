import Bus
import Dispatch
import Synchronization

// Not generic, and in ServiceKit beside its one user, the request server: a generic type used
// from another module is not specialized there, and each push and pop then looked its
// metadata up at run time (measured with bench/callgrind-nearby: about 2,400 instructions a
// request, with the first-in first-out queue this replaced).

/// Requests waiting for a service's handler threads, shared fairly between the clients they
/// come from (`RequestHeader.client`, else the bus peer that sent them).
///
/// Fair queueing by handler time (self-clocked, by finish tags): each client's lane counts
/// the nanoseconds its requests took (charged at the route's typical cost when one starts,
/// corrected by what it really took when it ends), and a free thread takes the oldest request
/// of the lane whose count would be least once that request ran. A lane that starts waiting
/// begins at the count of the request started last, so a client that has been quiet goes
/// before those that have been busy, a cheap request before a costly one, and a client that
/// floods, with cheap requests or costly ones, waits behind its own. A lane that empties
/// keeps its count until the others pass it, so sending one request at a time gains nothing.
final class FairJobQueue: Sendable {
    /// A lane's count once its next request ran, its place among lanes with the same, and its key.
    private struct Turn: Comparable {
        var tag: UInt64
        var order: UInt64
        var key: String
        static func < (a: Turn, b: Turn) -> Bool { a.tag != b.tag ? a.tag < b.tag : a.order < b.order }
    }

    private struct Lane {
        var jobs: [ServerJob] = []
        var head = 0
        /// Nanoseconds of handler time used, on the virtual clock.
        var tag: UInt64
        var waiting: Int { jobs.count - head }

        mutating func take() -> ServerJob {
            let job = jobs[head]
            head += 1
            if head == jobs.count {
                jobs.removeAll(keepingCapacity: jobs.count < 64)
                head = 0
            }
            return job
        }
    }

    private struct State: ~Copyable {
        var lanes: [String: Lane] = [:]
        /// One turn per lane that has jobs waiting.
        var turns = MinHeap<Turn>()
        var count = 0
        var order: UInt64 = 0
        /// The tag of the request started last.
        var virtualTime: UInt64 = 0
        /// Typical nanoseconds of each route (a moving average), charged when a request starts.
        var typicalCost: [UInt64]
        var startedSincePrune = 0
    }

    /// The most requests one client may have waiting, so one cannot fill the queue.
    let maxPerClient: Int
    private let state: Mutex<State>
    private let available = DispatchSemaphore(value: 0)

    /// What a route is assumed to cost before it has been measured.
    static let firstEstimate: UInt64 = 200_000

    init(routes: Int, maxPerClient: Int) {
        self.maxPerClient = max(1, maxPerClient)
        state = Mutex(State(typicalCost: Array(repeating: FairJobQueue.firstEstimate, count: max(1, routes))))
    }

    /// The number of requests waiting.
    var count: Int { state.withLock { $0.count } }

    /// Queues `job` behind its client's earlier ones, unless the client already has
    /// `maxPerClient` waiting (then false, and nothing is queued).
    func push(_ job: ServerJob) -> Bool {
        let pushed = state.withLock { s -> Bool in
            let key = job.lane
            var lane = s.lanes.removeValue(forKey: key) ?? Lane(tag: s.virtualTime)
            guard lane.waiting < maxPerClient else {
                s.lanes[key] = lane
                return false
            }
            lane.jobs.append(job)
            if lane.waiting == 1 {
                lane.tag = max(lane.tag, s.virtualTime)
                s.order &+= 1
                s.turns.push(Turn(tag: lane.tag &+ s.typicalCost[job.route], order: s.order, key: key))
            }
            s.lanes[key] = lane
            s.count += 1
            return true
        }
        if pushed { available.signal() }
        return pushed
    }

    /// Takes the next request, waiting up to `timeout` for one; nil when none came.
    func pop(timeout: DispatchTimeInterval) -> ServerJob? {
        guard available.wait(timeout: .now() + timeout) == .success else { return nil }
        return take()
    }

    /// Takes the next request if one is waiting, without waiting.
    func tryPop() -> ServerJob? {
        guard available.wait(timeout: .now()) == .success else { return nil }
        return take()
    }

    /// Records what a request taken from this queue really cost its client.
    func finished(_ job: ServerJob, nanoseconds: UInt64) {
        state.withLock { s in
            let typical = s.typicalCost[job.route]
            // A moving average over about eight requests.
            s.typicalCost[job.route] = typical - typical / 8 + nanoseconds / 8
            guard nanoseconds != job.charged, var lane = s.lanes.removeValue(forKey: job.lane) else { return }
            if nanoseconds > job.charged {
                lane.tag &+= nanoseconds - job.charged
            } else {
                lane.tag -= min(lane.tag, job.charged - nanoseconds)
            }
            // A waiting lane's turn in the heap keeps its old tag until it is taken; it is
            // read again then (`take`), so the correction counts from its next request on.
            s.lanes[job.lane] = lane
        }
    }

    private func take() -> ServerJob? {
        state.withLock { s -> ServerJob? in
            while let turn = s.turns.pop() {
                guard var lane = s.lanes.removeValue(forKey: turn.key), lane.waiting > 0 else { continue }
                // A correction since the turn was queued may have moved the lane on: queue it again.
                let finish = lane.tag &+ s.typicalCost[lane.jobs[lane.head].route]
                if finish > turn.tag, let next = s.turns.first, next.tag < finish {
                    s.turns.push(Turn(tag: finish, order: turn.order, key: turn.key))
                    s.lanes[turn.key] = lane
                    continue
                }
                var job = lane.take()
                s.count -= 1
                s.virtualTime = max(s.virtualTime, lane.tag)
                job.charged = s.typicalCost[job.route]
                lane.tag &+= job.charged
                if lane.waiting > 0 {
                    s.order &+= 1
                    s.turns.push(Turn(tag: lane.tag &+ s.typicalCost[lane.jobs[lane.head].route], order: s.order, key: turn.key))
                }
                s.lanes[turn.key] = lane
                s.startedSincePrune += 1
                if s.startedSincePrune >= 4_096 { FairJobQueue.prune(&s) }
                return job
            }
            return nil
        }
    }

    /// Forgets idle lanes the virtual clock has passed: they would start where a new one does.
    private static func prune(_ s: inout State) {
        s.startedSincePrune = 0
        let now = s.virtualTime
        s.lanes = s.lanes.filter { $0.value.waiting > 0 || $0.value.tag > now }
    }
}
