import Bus
import Synchronization

/// Keeps slow work on a service's reader threads (a password hash, a wait on another service)
/// to all readers but one, so quick requests (checking a token, reading a list) always find a
/// reader free. Work that finds every slot taken is refused at once, never queued: a flood of
/// slow requests cannot stall the rest. One gate is shared by all of a service's threads.
public final class ReaderGate: Sendable {
    private let busy = Mutex(0)
    private let most: Int

    /// A gate of all readers but one, or of at most `most` of them (a kind of slow work that
    /// must leave room for another, with its own gate).
    public init(most: Int = .max) { self.most = max(1, most) }

    /// Runs `body` when fewer than `readers - 1` (at least 1, at most `most`) slow requests
    /// are under way, else throws `refusal` (an `unavailable` that says what is busy).
    public func run<Result>(readers: Int, refusal: @autoclosure () -> ServiceError, _ body: () throws -> Result) throws -> Result {
        let slots = min(most, max(1, readers - 1))
        let admitted = busy.withLock { busy -> Bool in
            guard busy < slots else { return false }
            busy += 1
            return true
        }
        guard admitted else { throw refusal() }
        defer { busy.withLock { $0 -= 1 } }
        return try body()
    }
}
