import Bus
import Contracts
import Synchronization

/// How many times each user (or client address: any `Key`) did something in a sliding window:
/// at most `limit` in `windowMs`. Kept in memory on the one writer thread (whose handlers
/// alone use it), so it costs no write; a restart forgets it, which only lets a user start afresh.
struct RateWindow<Key: Hashable> {
    let limit: Int
    let windowMs: Int64
    private var times: [Key: [Int64]] = [:]
    private var lastPrune: Int64 = 0

    init(limit: Int, windowMs: Int64) {
        self.limit = limit
        self.windowMs = windowMs
    }

    /// Counts one more for `user` at `now`, or throws `refusal` (counting nothing) when they
    /// have done it `limit` times within the window.
    mutating func admit(_ user: Key, now: Int64, refusal: @autoclosure () -> ServiceError) throws(ServiceError) {
        guard admits(user, now: now) else { throw refusal() }
    }

    /// Counts one more for `user` at `now` and says so, or says not (counting nothing) when
    /// they have done it `limit` times within the window.
    mutating func admits(_ user: Key, now: Int64) -> Bool {
        prune(now: now)
        var recent = times[user, default: []].filter { now - $0 < windowMs }
        defer { times[user] = recent }
        guard recent.count < limit else { return false }
        recent.append(now)
        return true
    }

    /// Forgets users idle for a window, at most once a window, so memory follows the active users.
    private mutating func prune(now: Int64) {
        guard now - lastPrune >= windowMs else { return }
        lastPrune = now
        times = times.filter { _, recent in recent.contains { now - $0 < windowMs } }
    }
}

/// A `RateWindow` every thread of the service shares: read handlers (`social.people_at`,
/// a photo commit) run on any reader thread, so their limits are counted under a lock.
final class SharedRateWindow<Key: Hashable & Sendable>: Sendable {
    private let window: Mutex<RateWindow<Key>>

    init(limit: Int, windowMs: Int64) { window = Mutex(RateWindow(limit: limit, windowMs: windowMs)) }

    /// Counts one more for `user` at `now`, or throws `refusal` (counting nothing) at the limit.
    func admit(_ user: Key, now: Int64, refusal: @autoclosure () -> ServiceError) throws(ServiceError) {
        guard window.withLock({ $0.admits(user, now: now) }) else { throw refusal() }
    }
}
