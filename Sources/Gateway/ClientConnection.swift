import Bus
import Foundation
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// Answers that other threads hand to a connection's thread: a queue and an eventfd.
final class Inbox: Sendable {
    let wakeup: Wakeup
    private let queue = Mutex<[(slot: Int, outcome: Outcome, change: SessionChange?)]>([])

    init() throws(SystemError) { wakeup = try Wakeup() }

    func post(_ slot: Int, _ outcome: Outcome, _ change: SessionChange?) {
        queue.withLock { $0.append((slot, outcome, change)) }
        wakeup.signal()
    }

    func take() -> [(slot: Int, outcome: Outcome, change: SessionChange?)] {
        wakeup.drain()
        return queue.withLock { q in
            defer { q.removeAll(keepingCapacity: false) }
            return q
        }
    }
}

/// Drives one client's `ClientSession` from its socket, on a thread of its own: polls the
/// socket and the inbox of answers, reads when the session wants input, writes what it has,
/// and ends the connection when the session is finished or a limit of time is crossed.
final class ClientConnection {
    private let socket: TCPSocket
    private let session: ClientSession
    private let inbox: Inbox
    private let logger: Logger
    private let stopping: StopFlag
    private var scratch = [UInt8](repeating: 0, count: 32 << 10)
    /// Linux's POLLRDHUP (0x2000), which Glibc's Swift module leaves out (it needs _GNU_SOURCE).
    static let pollReadHangUp: Int16 = 0x2000

    init(socket: TCPSocket, client: ClientKey, dispatcher: Dispatcher, framing: FramingLimits, addresses: ClientAddresses,
         logger: Logger, stopping: StopFlag) throws {
        self.socket = socket
        self.logger = logger
        self.stopping = stopping
        let inbox = try Inbox()
        self.inbox = inbox
        let limits = dispatcher.limits
        session = ClientSession(
            limits: limits, framing: framing, now: monotonicNanos(),
            dispatch: { call, token, completion in dispatcher.dispatch(call, client: client, token: token, completion: completion) },
            deliver: { inbox.post($0, $1, $2) },
            charge: { addresses.charge(client.address, requests: $0) })
    }

    /// Serves the connection until the client leaves, a limit is crossed or the gateway stops.
    func run() {
        var poller = [pollfd(fd: socket.descriptor, events: 0, revents: 0), pollfd(fd: inbox.wakeup.descriptor, events: Int16(POLLIN), revents: 0)]
        while true {
            var now = monotonicNanos()
            if stopping.isSet { session.stop() }
            if session.isFinished { return }
            if let ending = session.expired(now: now) {
                if ending == .slowReader {
                    logger.warn("disconnecting a client that does not read its replies", ["pending_bytes": session.pendingOutput])
                } else {
                    logger.debug("closing a connection", ["reason": ending.rawValue])
                }
                return
            }
            let reading = session.wantsInput(now: now)
            // POLLRDHUP tells when the client's end of stream arrives, even behind input not read yet.
            let watchEnd = session.endKnown ? 0 : ClientConnection.pollReadHangUp
            poller[0].events = Int16(reading ? POLLIN : 0) | Int16(session.pendingOutput > 0 ? POLLOUT : 0) | watchEnd
            var timeout: Int32 = 200
            if let wake = session.nextWake(now: now) { timeout = Int32(min(200, max(1, (wake - now) / 1_000_000 + 1))) }
            let rc = poll(&poller, 2, timeout)
            if rc < 0 && errno != EINTR { return }
            now = monotonicNanos()
            session.tick(now: now)
            if poller[1].revents != 0 {
                for (slot, outcome, change) in inbox.take() { session.complete(slot, outcome, change, now: now) }
            }
            if watchEnd != 0 && poller[0].revents & watchEnd != 0 { session.endArrived(now: now) }
            if reading && poller[0].revents & Int16(POLLIN | POLLHUP | POLLERR) != 0 {
                guard readInput(now: now) else { return }
            }
            if session.pendingOutput > 0 {
                guard let sent = try? socket.write(session.output, from: session.outputSent) else { return }
                session.wrote(sent, now: now)
            }
        }
    }

    private func readInput(now: UInt64) -> Bool {
        do {
            guard let count = try socket.read(into: &scratch) else { return true }
            if count == 0 {
                session.receiveEnd(now: now)
            } else {
                session.receive(scratch[0..<count], now: now)
            }
            return true
        } catch {
            return false
        }
    }
}
