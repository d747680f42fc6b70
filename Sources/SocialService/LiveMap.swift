import Bus
import Contracts
import Foundation
import ServiceKit
import Storage

/// How many times each user did something in a sliding window: at most `limit` in `windowMs`.
/// Kept in memory on the one writer thread (whose handlers alone use it), so it costs no
/// write; a restart forgets it, which only lets a user start afresh.
struct RateWindow {
    let limit: Int
    let windowMs: Int64
    private var times: [Int64: [Int64]] = [:]
    private var lastPrune: Int64 = 0

    init(limit: Int, windowMs: Int64) {
        self.limit = limit
        self.windowMs = windowMs
    }

    /// Counts one more for `user` at `now`, or throws `refusal` (counting nothing) when they
    /// have done it `limit` times within the window.
    mutating func admit(_ user: Int64, now: Int64, refusal: @autoclosure () -> ServiceError) throws(ServiceError) {
        prune(now: now)
        var recent = times[user, default: []].filter { now - $0 < windowMs }
        guard recent.count < limit else {
            times[user] = recent
            throw refusal()
        }
        recent.append(now)
        times[user] = recent
    }

    /// Forgets users idle for a window, at most once a window, so memory follows the active users.
    private mutating func prune(now: Int64) {
        guard now - lastPrune >= windowMs else { return }
        lastPrune = now
        times = times.filter { _, recent in recent.contains { now - $0 < windowMs } }
    }
}

/// What the writer thread keeps in memory: rate windows, and the throttle of position pushes.
/// Each thread's `SocialStore` has one; only the writer's is used.
final class LiveState {
    var invites = RateWindow(limit: GroupRules.invitesPerWindow, windowMs: GroupRules.inviteWindowMs)
}
