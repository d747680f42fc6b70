import Synchronization

/// A value shared between threads behind a `Mutex`, for tests that collect what callbacks
/// on other threads saw (instead of an `NSLock` in an `@unchecked Sendable` class).
public final class Locked<Value: Sendable>: Sendable {
    private let mutex: Mutex<Value>

    public init(_ value: Value) { mutex = Mutex(value) }

    public func withLock<R>(_ body: (inout Value) -> R) -> R { mutex.withLock { body(&$0) } }

    /// A copy of the value now.
    public var value: Value { mutex.withLock { $0 } }
}
