import Foundation
import Synchronization

/// Collects the start-up outcome of threads that own sockets: the bound endpoints or the first error.
public final class StartupReport: Sendable {
    private let state = Mutex<(remaining: Int, endpoints: [String], error: Error?)>((0, [], nil))
    private let done = DispatchSemaphore(value: 0)

    /// Expects `expected` threads to report.
    public init(expected: Int = 1) { state.withLock { $0.remaining = expected } }

    /// One thread is ready (a socket thread passes what it bound).
    public func succeeded(_ endpoints: [String]?) {
        let finished = state.withLock { s in
            if let endpoints { s.endpoints = endpoints }
            s.remaining -= 1
            return s.remaining == 0
        }
        if finished { done.signal() }
    }

    /// A thread could not start; the waiter gets this error.
    public func failed(_ error: Error) {
        state.withLock { s in
            if s.error == nil { s.error = error }
        }
        done.signal()
    }

    /// Waits for every thread to succeed, or for the first failure.
    public func wait() -> Result<[String], Error> {
        done.wait()
        return state.withLock { s in s.error.map { .failure($0) } ?? .success(s.endpoints) }
    }
}
