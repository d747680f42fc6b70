import Bus
import Foundation
@testable import Gateway
import ServiceCore
import TestSupport
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// One `EventLoop` on its thread, fed connected sockets whose sessions answer `ping` at once
/// and keep `wait` calls (in `kept`) for the test to answer.
final class LoopHarness {
    let limits: GatewayLimits
    let count = ConnectionCount()
    let stopping = StopFlag()
    private let abandon = StopFlag()
    let loop: EventLoop
    private let thread: WorkerThread
    private let listener: TCPSocket
    private let charge: ClientSession.Charge
    private var nextKey: UInt64 = 0
    /// The completions of `wait` calls, not answered yet.
    let kept = Locked<[@Sendable (Outcome, SessionChange?) -> Void]>([])

    init(limits: GatewayLimits = GatewayLimits(), charge: @escaping ClientSession.Charge = { _, _ in 0 }) throws {
        self.limits = limits
        self.charge = charge
        listener = try TCPSocket.listen(host: "127.0.0.1", port: 0)
        loop = try EventLoop(addresses: ClientAddresses(limits: limits), connections: count,
                             logger: Logger(component: "test", level: .error), stopping: stopping, abandon: abandon)
        let loop = self.loop
        thread = WorkerThread(name: "test-loop") { loop.run() }
    }

    deinit {
        stopping.set()
        abandon.set()
        thread.join()
    }

    /// A client socket (blocking, with a 5 s receive timeout) whose other end the loop serves.
    func connect() throws -> Int32 {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = listener.localPort().bigEndian
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { Glibc.connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) == 0 }
        }
        guard connected, let (socket, _, _) = try listener.accept() else { throw SystemError(operation: "connect", errno: errno) }
        var timeout = timeval(tv_sec: 5, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        nextKey += 1
        let key = nextKey, inbox = loop.inbox, kept = self.kept
        let session = ClientSession(limits: limits, framing: FramingLimits(), now: monotonicNanos(),
                                    dispatch: { call, _, _, completion in
                                        guard call.method == "wait" else { return call.method == "ping" ? .pong : .result(call.params) }
                                        kept.withLock { $0.append(completion) }
                                        return nil
                                    },
                                    deliver: { inbox.post(.outcome(key: key, slot: $0, outcome: $1, change: $2)) },
                                    charge: charge)
        _ = count.add(1)
        inbox.post(.arrival(Arrival(socket: socket, session: session, address: "127.0.0.1", key: key)))
        return fd
    }

    static func send(_ fd: Int32, _ text: String) {
        _ = Array(text.utf8).withUnsafeBufferPointer { Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
    }

    /// What arrives within the receive timeout until `expected` bytes came, or the end (nil).
    static func receive(_ fd: Int32, _ expected: Int) -> String? {
        var bytes: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 4_096)
        while bytes.count < expected {
            let n = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            guard n > 0 else { return nil }
            bytes += buffer[0..<n]
        }
        return String(decoding: bytes, as: UTF8.self)
    }

    /// How many of `fds`, in order, read a PONG (up to the first that does not).
    static func pongs(_ fds: [Int32]) -> Int {
        var count = 0
        for fd in fds {
            guard receive(fd, 7) == "+PONG\r\n" else { break }
            count += 1
        }
        return count
    }

    /// How many of `fds` the loop closed (their end of stream came) within `seconds` in all.
    static func closedByPeer(_ fds: some Collection<Int32>, within seconds: Double = 5) -> Int {
        var watched = fds.map { pollfd(fd: $0, events: Int16(POLLIN), revents: 0) }
        var closed = 0
        let end = Date().addingTimeInterval(seconds)
        while !watched.isEmpty, Date() < end {
            guard poll(&watched, nfds_t(watched.count), 100) > 0 else { continue }
            var byte: UInt8 = 0
            let ended = watched.filter { $0.revents != 0 && recv($0.fd, &byte, 1, Int32(MSG_DONTWAIT)) == 0 }
            closed += ended.count
            watched.removeAll { entry in entry.revents != 0 }
        }
        return closed
    }
}

@Suite struct EventLoopTests {
    @Test func oneLoopServesManyConnectionsAndClosesTheIdleOnTime() throws {
        var limits = GatewayLimits()
        limits.idleTimeoutMilliseconds = 400
        let harness = try LoopHarness(limits: limits)
        let clients = try (0..<200).map { _ in try harness.connect() }
        defer { clients.forEach { close($0) } }
        for fd in clients { LoopHarness.send(fd, "PING\r\n") }
        #expect(LoopHarness.pongs(clients) == clients.count)
        // One client keeps talking; the others say nothing more and are closed by the clock alone.
        let keeper = clients[0]
        let started = Date()
        for _ in 0..<10 {
            usleep(100_000)
            LoopHarness.send(keeper, "PING\r\n")
            #expect(LoopHarness.receive(keeper, 7) == "+PONG\r\n")
        }
        #expect(LoopHarness.closedByPeer(clients.dropFirst()) == clients.count - 1)
        #expect(Date().timeIntervalSince(started) < 5)
        // Closed connections are counted out; the one that talked is still served.
        for _ in 0..<50 where harness.count.value > 1 { usleep(20_000) }
        #expect(harness.count.value == 1)
        LoopHarness.send(keeper, "PING\r\n")
        #expect(LoopHarness.receive(keeper, 7) == "+PONG\r\n")
    }

    @Test func aPausedConnectionGoesOnWhenItsPauseEndsWithNothingElseHappening() throws {
        // The address is over its rate after its first request: reading pauses for 300 ms.
        let harness = try LoopHarness(charge: { $1 > 0 ? 300_000_000 : 0 })
        let fd = try harness.connect()
        defer { close(fd) }
        LoopHarness.send(fd, "PING\r\n")
        #expect(LoopHarness.receive(fd, 7) == "+PONG\r\n")
        let started = Date()
        LoopHarness.send(fd, "PING\r\n")
        // No byte and no outcome arrives meanwhile: only the loop's timer lets it go.
        #expect(LoopHarness.receive(fd, 7) == "+PONG\r\n")
        #expect(Date().timeIntervalSince(started) > 0.2)
    }

    @Test func stoppingAnswersWhatIsInFlightAndClosesEveryConnection() throws {
        let harness = try LoopHarness()
        let clients = try (0..<20).map { _ in try harness.connect() }
        defer { clients.forEach { close($0) } }
        for fd in clients { LoopHarness.send(fd, "PING\r\n") }
        #expect(LoopHarness.pongs(clients) == clients.count)
        // A call in flight on every connection when the loop is told to stop.
        for fd in clients { LoopHarness.send(fd, "wait\r\n") }
        for _ in 0..<250 where harness.kept.withLock({ $0.count }) < clients.count { usleep(20_000) }
        #expect(harness.kept.withLock { $0.count } == clients.count)
        harness.stopping.set()
        usleep(100_000)
        #expect(harness.count.value == clients.count, "connections closed with their calls still in flight")
        for completion in harness.kept.withLock({ $0 }) { completion(.pong, nil) }
        // Each gets its answer, then the close.
        #expect(LoopHarness.pongs(clients) == clients.count)
        #expect(LoopHarness.closedByPeer(clients) == clients.count)
        for _ in 0..<50 where harness.count.value > 0 { usleep(20_000) }
        #expect(harness.count.value == 0)
    }

    @Test func theNextDeadlineIsWhenALimitOfTimeIsCrossed() {
        var limits = GatewayLimits()
        limits.firstByteTimeoutMilliseconds = 1_000
        limits.idleTimeoutMilliseconds = 5_000
        // Before the first byte: the first-byte timeout.
        let silent = SessionHarness(limits: limits)
        let first = silent.session.nextDeadline() ?? 0
        #expect(silent.session.expired(now: first - 1) == nil)
        #expect(silent.session.expired(now: first) == .firstByteTimeout)
        // After a reply: the idle timeout, from the last activity.
        let talked = SessionHarness(limits: limits)
        #expect(talked.send("PING\r\n") == "+PONG\r\n")
        let idle = talked.session.nextDeadline() ?? 0
        #expect(idle > first)
        #expect(talked.session.expired(now: idle - 1) == nil)
        #expect(talked.session.expired(now: idle) == .idle)
        // A request waiting on the backend: no deadline of the session's own (the backend's deadline answers).
        let waiting = SessionHarness(limits: limits, answer: { _ in nil })
        _ = waiting.send("catalog.get id 1\r\n")
        #expect(waiting.session.nextDeadline() == nil)
    }
}
