import Dispatch
import Synchronization

// In ServiceKit beside its one user, the request server: a generic type used from another
// module is not specialized there, and each push and pop then looked its metadata up at run
// time (measured with bench/callgrind-nearby: about 2,400 instructions a request).

/// A first-in first-out queue that blocking consumers on several threads share.
final class BlockingQueue<Element: Sendable>: Sendable {
    private struct State: ~Copyable {
        var items: [Element?] = []
        var head = 0
        var count: Int { items.count - head }
    }

    private let state = Mutex(State())
    private let available = DispatchSemaphore(value: 0)

    /// An empty queue.
    init() {}

    /// Appends and wakes one waiting consumer.
    func push(_ element: Element) {
        state.withLock { $0.items.append(element) }
        available.signal()
    }

    /// The number of queued elements.
    var count: Int { state.withLock { $0.count } }

    /// Takes the oldest element, waiting up to `timeout` for one; nil when none came.
    func pop(timeout: DispatchTimeInterval) -> Element? {
        guard available.wait(timeout: .now() + timeout) == .success else { return nil }
        return take()
    }

    /// Takes the oldest element if one is queued, without waiting.
    func tryPop() -> Element? {
        guard available.wait(timeout: .now()) == .success else { return nil }
        return take()
    }

    private func take() -> Element? {
        state.withLock { s in
            let element = s.items[s.head]
            s.items[s.head] = nil
            s.head += 1
            if s.head > 1024 && s.head * 2 > s.items.count {
                s.items.removeFirst(s.head)
                s.head = 0
            }
            return element
        }
    }
}
