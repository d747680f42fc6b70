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
        // Each request's bytes but its id, made before the clock starts.
        let bodies = plan.requests.map { Array(#","method":"\#($0.method)","params":\#($0.params)}"#.utf8) + [0x0A] }
        let interval = 1e9 / plan.rate
        let start = monotonic() + 50_000_000
        let results = Mutex(Outcome())
        let endOfRun = start + UInt64(plan.seconds * 1e9) + UInt64(plan.drainSeconds * 1e9)
        let answeredCount = Atomic<Int>(0)
        let finished = DispatchGroup()
        for fd in sockets {
            finished.enter()
            let reader = Thread {
                var local = Outcome()
                var seen = Set<Int>()
                var buffer = [UInt8]()
                var chunk = [UInt8](repeating: 0, count: 65_536)
                while monotonic() < endOfRun && answeredCount.load(ordering: .relaxed) < total {
                    var poller = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
                    guard poll(&poller, 1, 100) > 0 else { continue }
                    let n = read(fd, &chunk, chunk.count)
                    if n <= 0 { break }
                    buffer.append(contentsOf: chunk[0..<n])
                    let now = monotonic()
                    var lineStart = 0
                    while let newline = buffer[lineStart...].firstIndex(of: 0x0A) {
                        let line = buffer[lineStart..<newline]
                        lineStart = newline + 1
                        guard let id = OpenLoop.id(in: line), id >= 0, id < total, seen.insert(id).inserted else { continue }
                        let due = start + UInt64(Double(id) * interval)
                        local.latency.record(now > due ? now - due : 0)
                        local.answered += 1
                        if let code = OpenLoop.errorCode(in: line) { local.errors[code, default: 0] += 1 }
                        answeredCount.add(1, ordering: .relaxed)
                    }
                    buffer.removeFirst(lineStart)
                }
                results.withLock { r in
                    r.latency.merge(local.latency)
                    r.answered += local.answered
                    r.errors.merge(local.errors, uniquingKeysWith: +)
                }
                finished.leave()
            }
            reader.start()
        }
        var late = 0, written = 0
        for i in 0..<total {
            let due = start + UInt64(Double(i) * interval)
            var now = monotonic()
            if due > now + 200_000 { usleep(UInt32((due - now - 100_000) / 1_000)) }
            while now < due { now = monotonic() }
            if now > due + 1_000_000 { late += 1 }
            let line = Array(#"{"jsonrpc":"2.0","id":\#(i)"#.utf8) + bodies[i % bodies.count]
            if !writeAll(sockets[i % sockets.count], line) { break }
            written += 1
        }
        finished.wait()
        let ended = monotonic()
        return results.withLock { r in
            var outcome = r
            outcome.sent = written
            outcome.lateSends = late
            // Unanswered requests waited at least until now.
            for i in 0..<Swift.max(0, written - outcome.answered) {
                let due = start + UInt64(Double(written - 1 - i) * interval)
                outcome.latency.record(ended > due ? ended - due : 0)
            }
            outcome.achievedRate = Double(outcome.answered) / plan.seconds
            return outcome
        }
    }

    /// The number after the first `"id":` of a reply line, or nil.
    static func id(in line: ArraySlice<UInt8>) -> Int? {
        let key = Array(#""id":"#.utf8)
        guard let at = find(key, in: line) else { return nil }
        var value = 0, index = at + key.count, digits = 0
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
        let idKey = Array(#""id":"#.utf8), errorKey = Array(#","error":"#.utf8)
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
