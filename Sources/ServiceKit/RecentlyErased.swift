import Bus
import Synchronization

/// Users a service erased a moment ago (`social.user.deleted`), held in memory for a window, so
/// that a write signed in before the deletion and arriving after it (a gateway vouches for a
/// token it checked up to 2 s earlier; a request may wait in a queue) is refused rather than
/// making a row that nothing erases again.
///
/// In memory, not in the database: after the deletion the database keeps nothing of the user.
/// A restart forgets it, which leaves only the writes in flight across a restart that happens
/// within the window.
public final class RecentlyErased: Sendable {
    /// How long an erased user's writes are refused, in milliseconds.
    public let windowMilliseconds: Int64
    /// User id → until when (milliseconds since 1970).
    private let until = Mutex<[Int64: Int64]>([:])

    public init(windowMilliseconds: Int64) {
        self.windowMilliseconds = windowMilliseconds
    }

    /// Remembers that `userId` is being erased at `now`. Call it in the erasing transaction,
    /// before it commits: a write that takes the database's write lock after the erasure
    /// commits then finds the user here.
    public func note(_ userId: Int64, now: Int64) {
        until.withLock { entries in
            entries = entries.filter { $0.value > now }
            entries[userId] = now + windowMilliseconds
        }
    }

    /// Whether any user was erased within the window before `now` (cheap: a hot path asks it
    /// before it looks closer).
    public func any(now: Int64) -> Bool {
        until.withLock { entries in entries.values.contains { $0 > now } }
    }

    /// `unauthenticated` when `userId` was erased within the window before `now`. Call it in
    /// the transaction of a write that makes a row of the user, so the check and the write are
    /// one with respect to the erasure.
    public func refuse(_ userId: Int64, now: Int64) throws(ServiceError) {
        let erased = until.withLock { entries in (entries[userId] ?? .min) > now }
        if erased { throw ServiceError(.unauthenticated, "this account was deleted") }
    }
}
