import Foundation
import Synchronization

#if canImport(Glibc)
    import Glibc
#endif

/// An open-loop load on the gateway's JSON-RPC lines: request `i` is due at
/// `start + i / rate`, whatever the replies do, and its latency runs from that due time, not
/// from when it was written. So a stall shows in every request due during it (no coordinated
/// omission), and a sender that falls behind shows as latency too.
public enum OpenLoop {
    /// What to send.
    public struct Plan: Sendable {
        /// `HOST:PORT` of the gateway.
        public var gateway: String
        public var rate: Double
        public var seconds: Double
        public var connections = 16
        /// Requests by position: the method and params JSON of request `i` (called once per
        /// distinct request before the run; it should cycle through a pool).
        public var requests: [(method: String, params: String)]
        /// Lines each connection sends first, each waited for (a sign-in, say).
        public var setup: [String] = []
        /// How long replies are waited for after the last request is due.
        public var drainSeconds = 5.0
        /// Speak RESP inline commands (`method` is the whole command, `PING`) instead of
        /// JSON-RPC: the same load on a Redis server, as a peer.
        public var resp = false
        /// Send each request as an HTTP/1.1 `POST /rpc` on kept-alive connections (pipelined),
        /// instead of a line: the same load over the gateway's HTTP face.
        public var http = false

        public init(gateway: String, rate: Double, seconds: Double, requests: [(method: String, params: String)]) {
            self.gateway = gateway
            self.rate = rate
            self.seconds = seconds
            self.requests = requests
        }
    }

    /// What came of a run.
    public struct Outcome: Sendable {
        /// Latency from each request's due time to its reply, answered or not (an unanswered
        /// one counts with the time it had waited when the run ended).
        public var latency = LogHistogram()
        public var sent = 0
        public var answered = 0
        /// Replies that were errors, by error code (`data.code`).
        public var errors: [String: Int] = [:]
        /// Requests written more than 1 ms after they were due (the sender fell behind).
        public var lateSends = 0
        /// Answered requests per second over the run.
        public var achievedRate = 0.0
    }

    /// A failure to run at all (the gateway unreachable, setup refused).
    public struct Failure: Error, CustomStringConvertible {
        public let description: String
    }

    public static func run(_ plan: Plan) throws(Failure) -> Outcome {
        let total = Int(plan.rate * plan.seconds)
        guard total > 0, plan.connections > 0, !plan.requests.isEmpty else { throw Failure(description: "nothing to send") }
        guard !(plan.http && (plan.resp || !plan.setup.isEmpty)) else { throw Failure(description: "HTTP sends neither RESP nor setup lines") }
        let sockets = try (0..<plan.connections).map { _ throws(Failure) in try connect(plan.gateway) }
        defer { sockets.forEach { close($0) } }
        for fd in sockets {
            for line in plan.setup {
                guard writeAll(fd, Array((line + "\n").utf8)), let reply = readLine(fd, timeoutSeconds: 10) else {
                    throw Failure(description: "setup line not answered: \(line.prefix(80))")
                }
                if reply.contains("\"error\"") { throw Failure(description: "setup refused: \(reply.prefix(200))") }
            }
        }
        // Each request's bytes but its id, made before the clock starts. RESP's inline commands
        // carry no id: their replies come back in order on each connection.
        let bodies = plan.requests.map {
            plan.resp ? Array("\($0.method)\r\n".utf8) : Array(#","method":"\#($0.method)","params":\#($0.params)}"#.utf8) + (plan.http ? [] : [0x0A])
        }
        let httpHead = Array("POST /rpc HTTP/1.1\r\nHost: \(plan.gateway)\r\nContent-Type: application/json\r\nContent-Length: ".utf8)
        let interval = 1e9 / plan.rate
        let start = monotonic() + 50_000_000
        let endOfRun = start + UInt64(plan.seconds * 1e9) + UInt64(plan.drainSeconds * 1e9)
        let written = Atomic<Int>(0)
        let receiver = Receiver(sockets: sockets, total: total, resp: plan.resp, http: plan.http, due: { start + UInt64(Double($0) * interval) })
        let done = DispatchSemaphore(value: 0)
        // One thread reads every connection (poll), so the load's own cost stays small.
        Thread {
            receiver.run(until: endOfRun)
            done.signal()
        }.start()
        var late = 0
        for i in 0..<total {
            let due = start + UInt64(Double(i) * interval)
            var now = monotonic()
            if due > now + 200_000 { usleep(UInt32((due - now - 100_000) / 1_000)) }
            while now < due { now = monotonic() }
            if now > due + 1_000_000 { late += 1 }
            let connection = i % sockets.count
            var line = plan.resp ? bodies[i % bodies.count] : Array(#"{"jsonrpc":"2.0","id":\#(i)"#.utf8) + bodies[i % bodies.count]
            if plan.http { line = httpHead + Array("\(line.count)\r\n\r\n".utf8) + line }
            receiver.sent(i, on: connection)
            if !writeAll(sockets[connection], line) { break }
            written.add(1, ordering: .relaxed)
        }
        done.wait()
        let ended = monotonic()
        var outcome = receiver.outcome
        let sent = written.load(ordering: .relaxed)
        outcome.sent = sent
        outcome.lateSends = late
        // Unanswered requests waited at least until now.
        for i in 0..<Swift.max(0, sent - outcome.answered) {
            let due = start + UInt64(Double(sent - 1 - i) * interval)
            outcome.latency.record(ended > due ? ended - due : 0)
        }
        // Throughput: answers over the time until the last of them (a backlog answered during
        // the drain does not count as keeping up).
        let span = Swift.max(plan.seconds, Double(receiver.lastAnswer > start ? receiver.lastAnswer - start : 0) / 1e9)
        outcome.achievedRate = Double(outcome.answered) / span
        return outcome
    }

    /// The receiving side of a run: reads every connection, matches replies to requests (by
    /// id, or in order for RESP) and records each one's latency from its due time.
    final class Receiver: @unchecked Sendable {
        let sockets: [Int32]
        let total: Int
        let resp: Bool
        let http: Bool
        let due: (Int) -> UInt64
        var outcome = Outcome()
        var lastAnswer: UInt64 = 0
        /// RESP: the ids sent on each connection and not yet answered, oldest first.
        private let pending: Mutex<[[Int]]>

        init(sockets: [Int32], total: Int, resp: Bool, http: Bool = false, due: @escaping (Int) -> UInt64) {
            self.sockets = sockets
            self.total = total
            self.resp = resp
            self.http = http
            self.due = due
            pending = Mutex(Array(repeating: [], count: sockets.count))
        }

        func sent(_ id: Int, on connection: Int) {
            if resp { pending.withLock { $0[connection].append(id) } }
        }

        func run(until end: UInt64) {
            var buffers = [[UInt8]](repeating: [], count: sockets.count)
            var chunk = [UInt8](repeating: 0, count: 65_536)
            var seen = [Bool](repeating: false, count: total)
            var polls = sockets.map { pollfd(fd: $0, events: Int16(POLLIN), revents: 0) }
            while monotonic() < end && outcome.answered < total {
                guard poll(&polls, nfds_t(polls.count), 100) > 0 else { continue }
                let now = monotonic()
                for (c, entry) in polls.enumerated() where entry.revents != 0 {
                    let n = read(sockets[c], &chunk, chunk.count)
                    if n <= 0 {
                        polls[c].fd = -1  // poll skips it from now on
                        continue
                    }
                    buffers[c].append(contentsOf: chunk[0..<n])
                    var lineStart = 0
                    while let (line, next) = http ? OpenLoop.httpBody(buffers[c], from: lineStart) : OpenLoop.line(buffers[c], from: lineStart) {
                        lineStart = next
                        let id: Int?
                        if resp {
                            // Only one-line replies (+PONG, -ERR …) are read in RESP.
                            id = pending.withLock { $0[c].isEmpty ? nil : $0[c].removeFirst() }
                            if line.first == UInt8(ascii: "-") { outcome.errors["error", default: 0] += 1 }
                        } else {
                            id = OpenLoop.id(in: line)
                            if let code = OpenLoop.errorCode(in: line) { outcome.errors[code, default: 0] += 1 }
                        }
                        guard let id, id >= 0, id < total, !seen[id] else { continue }
                        seen[id] = true
                        let dueTime = due(id)
                        outcome.latency.record(now > dueTime ? now - dueTime : 0)
                        outcome.answered += 1
                        lastAnswer = now
                    }
                    buffers[c].removeFirst(lineStart)
                }
            }
        }
    }

    /// The line at `start` of `buffer` (without its LF) and where the next begins, or nil when it is not whole.
    static func line(_ buffer: [UInt8], from start: Int) -> (ArraySlice<UInt8>, Int)? {
        guard let newline = buffer[start...].firstIndex(of: 0x0A) else { return nil }
        return (buffer[start..<newline], newline + 1)
    }

    private static let contentLength = Array("Content-Length: ".utf8)

    /// The body of the HTTP response at `start` of `buffer` (framed by its `Content-Length`)
    /// and where the next begins, or nil when it is not whole.
    static func httpBody(_ buffer: [UInt8], from start: Int) -> (ArraySlice<UInt8>, Int)? {
        // The gateway writes `Content-Length: N` as such: the load's own cost stays small.
        var headEnd = start
        while headEnd + 3 < buffer.count, !(buffer[headEnd] == 0x0D && buffer[headEnd + 1] == 0x0A && buffer[headEnd + 2] == 0x0D && buffer[headEnd + 3] == 0x0A) {
            headEnd += 1
        }
        guard headEnd + 3 < buffer.count else { return nil }
        var length = 0
        if let at = find(contentLength, in: buffer[start..<headEnd]) {
            var digit = at + contentLength.count
            while digit < headEnd, (0x30...0x39).contains(buffer[digit]) {
                length = length * 10 + Int(buffer[digit] - 0x30)
                digit += 1
            }
        }
        let bodyStart = headEnd + 4
        guard buffer.count >= bodyStart + length else { return nil }
        return (buffer[bodyStart..<(bodyStart + length)], bodyStart + length)
    }

    /// The number after the first `"id":` of a reply line, or nil.
    static func id(in line: ArraySlice<UInt8>) -> Int? {
        let key = Array(#""id":"#.utf8)
        guard let at = find(key, in: line) else { return nil }
        var value = 0
        var index = at + key.count
        var digits = 0
        while index < line.endIndex, line[index] >= 0x30, line[index] <= 0x39, digits < 12 {
            value = value * 10 + Int(line[index] - 0x30)
            index += 1
            digits += 1
        }
        return digits > 0 ? value : nil
    }

    /// The error code of an error reply (`"data":{"code":"…"`), or nil for a result. The gateway
    /// writes `"error"` or `"result"` right after the id, which is where it is looked for.
    static func errorCode(in line: ArraySlice<UInt8>) -> String? {
        let idKey = Array(#""id":"#.utf8)
        let errorKey = Array(#","error":"#.utf8)
        guard var at = find(idKey, in: line) else { return nil }
        at += idKey.count
        while at < line.endIndex, line[at] >= 0x30, line[at] <= 0x39 { at += 1 }
        guard line[at...].starts(with: errorKey) else { return nil }
        let key = Array(#""data":{"code":""#.utf8)
        guard let at = find(key, in: line) else { return "error" }
        let from = at + key.count
        let to = line[from...].firstIndex(of: 0x22) ?? line.endIndex
        return String(decoding: line[from..<Swift.min(to, from + 40)], as: UTF8.self)
    }

    private static func find(_ needle: [UInt8], in line: ArraySlice<UInt8>) -> Int? {
        guard line.count >= needle.count else { return nil }
        var i = line.startIndex
        while i <= line.endIndex - needle.count {
            if line[i] == needle[0] && line[i..<i + needle.count].elementsEqual(needle) { return i }
            i += 1
        }
        return nil
    }

    static func monotonic() -> UInt64 {
        var t = timespec()
        clock_gettime(CLOCK_MONOTONIC, &t)
        return UInt64(t.tv_sec) * 1_000_000_000 + UInt64(t.tv_nsec)
    }

    static func connect(_ endpoint: String) throws(Failure) -> Int32 {
        let parts = endpoint.split(separator: ":")
        guard parts.count == 2, let port = UInt16(parts[1]) else { throw Failure(description: "expected HOST:PORT, got \(endpoint)") }
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = port.bigEndian
        address.sin_addr.s_addr = inet_addr(String(parts[0]))
        let ok = withUnsafePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { Glibc.connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) == 0 } }
        guard ok else {
            close(fd)
            throw Failure(description: "cannot connect to \(endpoint): \(String(cString: strerror(errno)))")
        }
        var one: Int32 = 1
        setsockopt(fd, Int32(IPPROTO_TCP), TCP_NODELAY, &one, socklen_t(MemoryLayout<Int32>.size))
        return fd
    }

    static func writeAll(_ fd: Int32, _ bytes: [UInt8]) -> Bool {
        var offset = 0
        while offset < bytes.count {
            let n = bytes[offset...].withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
            if n < 0 && errno == EINTR { continue }
            if n <= 0 { return false }
            offset += n
        }
        return true
    }

    /// Sends one line on a connection of its own and returns the reply line (a sign-in before
    /// a run, say).
    public static func exchange(_ gateway: String, _ line: String) throws(Failure) -> String {
        let fd = try connect(gateway)
        defer { close(fd) }
        guard writeAll(fd, Array((line + "\n").utf8)), let reply = readLine(fd, timeoutSeconds: 30) else {
            throw Failure(description: "no reply from \(gateway) to \(line.prefix(80))")
        }
        return reply
    }

    /// One line read byte by byte (setup only), or nil on timeout or close.
    static func readLine(_ fd: Int32, timeoutSeconds: Int32) -> String? {
        var bytes: [UInt8] = []
        var byte: UInt8 = 0
        while bytes.count < 1 << 20 {
            var poller = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            guard poll(&poller, 1, timeoutSeconds * 1_000) > 0, read(fd, &byte, 1) == 1 else { return nil }
            if byte == 0x0A { return String(decoding: bytes, as: UTF8.self) }
            bytes.append(byte)
        }
        return nil
    }
}
