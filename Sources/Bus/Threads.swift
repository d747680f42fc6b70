import CZeroMQ
import Foundation
import Synchronization

#if canImport(Glibc)
    import Glibc
#endif

/// A failure of an operating-system call outside libzmq (eventfd, threads).
public struct SystemError: Error, Sendable, CustomStringConvertible {
    /// The call that failed.
    public let operation: String
    /// errno at the time.
    public let errno: Int32

    public init(operation: String, errno: Int32) {
        self.operation = operation
        self.errno = errno
    }

    public var description: String { "\(operation): \(String(cString: strerror(errno))) (errno \(errno))" }
}

/// An eventfd that one thread signals and another polls beside its sockets.
///
/// This is how work crosses into a socket-owning thread: the sender appends to a
/// mutex-guarded queue and signals; the owner wakes in `zmq_poll` and drains it.
public final class Wakeup: Sendable {
    /// The descriptor to give to a `Poller`.
    public let descriptor: Int32

    /// Creates a non-blocking eventfd.
    public init() throws(SystemError) {
        let fd = eventfd(0, Int32(EFD_NONBLOCK | EFD_CLOEXEC))
        guard fd >= 0 else { throw SystemError(operation: "eventfd", errno: errno) }
        descriptor = fd
    }

    deinit { close(descriptor) }

    /// Makes the descriptor readable (cheap; many signals fold into one).
    public func signal() {
        var one: UInt64 = 1
        _ = withUnsafeBytes(of: &one) { write(descriptor, $0.baseAddress, 8) }
    }

    /// Clears the readable state.
    public func drain() {
        var value: UInt64 = 0
        _ = withUnsafeMutableBytes(of: &value) { read(descriptor, $0.baseAddress, 8) }
    }
}

/// A named thread that can be joined.
public final class WorkerThread: Sendable {
    private let finished = DispatchSemaphore(value: 0)
    /// The thread's pthread id, once it runs.
    private let id = Atomic<UInt>(0)

    /// Starts `body` on a new thread called `name` (visible in debuggers and `top -H`).
    public init(name: String, stackSize: Int = 4 << 20, _ body: @escaping @Sendable () -> Void) {
        let done = finished
        let thread = Thread { [self] in
            id.store(UInt(pthread_self()), ordering: .sequentiallyConsistent)
            // The kernel's name (at most 15 bytes), so `top -H` and /proc/PID/task/*/comm say
            // which thread spends what.
            let fd = open("/proc/thread-self/comm", O_WRONLY)
            if fd >= 0 {
                _ = Array(name.utf8.prefix(15)).withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
                close(fd)
            }
            body()
            done.signal()
        }
        thread.name = name
        thread.stackSize = stackSize
        thread.start()
    }

    /// Whether the caller runs on this thread (which must not join itself).
    public var isCurrent: Bool { id.load(ordering: .sequentiallyConsistent) == UInt(pthread_self()) }

    /// Waits until the thread's body has returned.
    public func join() {
        finished.wait()
        finished.signal()
    }
}

/// A flag one thread raises and others poll, to ask a loop to finish.
public final class StopFlag: Sendable {
    private let raised = Atomic<Bool>(false)

    public init() {}

    /// Raises the flag.
    public func set() { raised.store(true, ordering: .sequentiallyConsistent) }

    /// Whether the flag was raised.
    public var isSet: Bool { raised.load(ordering: .sequentiallyConsistent) }
}

/// Monotonic time in nanoseconds, for deadlines and latencies.
@inline(__always)
public func monotonicNanos() -> UInt64 { DispatchTime.now().uptimeNanoseconds }
