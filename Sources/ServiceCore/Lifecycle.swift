import Bus
import Synchronization

/// The pieces a service starts, in order, and stops in the reverse order.
///
/// A service starts each piece (a relay, a subscriber, a request server, a thread) through
/// `start(_:stop:_:)`, which records how to stop it, or records a stop step with `onStop`.
/// `stop()` runs the steps last first, once: what started last, and leans on what started
/// before it, stops first. A service whose start fails part way calls `stop()` too, so what
/// did start is stopped, in the same order.
public final class Lifecycle: Sendable {
    private struct Step: Sendable {
        let name: String
        let stop: @Sendable () -> Void
    }

    private struct State {
        var steps: [Step] = []
        var stopped = false
    }

    private let state = Mutex(State())
    private let logger: Logger?

    /// A lifecycle that logs each stop step at debug level to `logger`.
    public init(logger: Logger? = nil) { self.logger = logger }

    /// Starts one piece with `make` and records `stop` for it; throws what `make` throws,
    /// recording nothing then.
    public func start<Piece: Sendable>(
        _ name: String, stop: @escaping @Sendable (Piece) -> Void,
        _ make: () throws -> Piece
    ) throws -> Piece {
        let piece = try make()
        onStop(name) { stop(piece) }
        return piece
    }

    /// Records a stop step for something started without `start` (threads that share a
    /// flag, say), in its place in the start order.
    public func onStop(_ name: String, _ stop: @escaping @Sendable () -> Void) {
        state.withLock { $0.steps.append(Step(name: name, stop: stop)) }
    }

    /// The names of the pieces started so far, in start order.
    public var started: [String] { state.withLock { $0.steps.map(\.name) } }

    /// Stops every piece, the last started first, and returns true; returns false at once
    /// when an earlier call already did (or is doing) it.
    @discardableResult
    public func stop() -> Bool {
        let steps: [Step]? = state.withLock { state in
            guard !state.stopped else { return nil }
            state.stopped = true
            return state.steps
        }
        guard let steps else { return false }
        for step in steps.reversed() {
            logger?.debug("stopping", ["piece": step.name])
            step.stop()
        }
        return true
    }
}
