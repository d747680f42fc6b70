import Bus
import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// The limits of a `MetricsServer`: what one scraper may cost it.
public struct MetricsServerLimits: Sendable {
    /// Largest request head (request line and headers) read; past it the answer is 431.
    public var maxHeadBytes = 8 << 10
    /// Time a connection has, from its accept, to send its head and take the whole answer;
    /// past it the connection is closed.
    public var timeoutMilliseconds = 2_000
    /// Connections served at once; a new one past it closes the oldest.
    public var maxConnections = 8

    public init() {}
}

/// A tiny HTTP/1.x server on its own thread that answers `GET /metrics` with Prometheus text
/// (`render`, called on that thread for each scrape), 404 for other paths and 405 for other
/// methods, then closes the connection. For operators only: clients use the bus or the gateway.
///
/// No input can stall it: sockets are non-blocking and polled; the head is bounded in bytes
/// (`MetricsServerLimits.maxHeadBytes`), a connection in time (`timeoutMilliseconds`, for
/// sending the head and taking the answer together), and connections in number
/// (`maxConnections`): a new connection past it closes the oldest, so idle or slow
/// connections cannot lock a scraper out.
public final class MetricsServer: Sendable {
    /// `host:port` really bound (port 0 resolved).
    public let endpoint: String
    private let stopping = StopFlag()
    private let thread: WorkerThread

    /// Binds `listen` (`HOST:PORT`) and serves on a thread of its own.
    public init(
        listen: String, limits: MetricsServerLimits = MetricsServerLimits(), logger: Logger,
        render: @escaping @Sendable () -> String
    ) throws {
        let (host, port) = try MetricsServer.split(listen)
        let listener = try TCPSocket.listen(host: host, port: port, backlog: 64)
        listener.setNonBlocking()
        let bound = listener.localPort()
        endpoint = host.contains(":") ? "[\(host)]:\(bound)" : "\(host):\(bound)"
        let stopping = self.stopping
        let descriptor = listener.take()
        thread = WorkerThread(name: "\(logger.component)-metrics") {
            let listener = TCPSocket(descriptor: descriptor)
            MetricsServer.serve(listener: listener, limits: limits, render: render, stopping: stopping, logger: logger)
        }
        logger.info("metrics listening", ["endpoint": endpoint])
    }

    /// Stops serving and closes every socket. Safe to call more than once.
    public func stop() {
        stopping.set()
        thread.join()
    }

    deinit { stop() }

    /// `HOST:PORT` split (an IPv6 host in brackets), or a configuration error naming the setting.
    public static func split(_ listen: String) throws(ConfigError) -> (host: String, port: UInt16) {
        try splitHostPort(listen, or: ConfigError("--metrics-listen takes HOST:PORT, got '\(listen)'"))
    }

    /// One connection: what it sent so far, the answer once known, how much of it went.
    private final class Connection {
        let socket: TCPSocket
        let deadline: UInt64
        var head: [UInt8] = []
        var answer: [UInt8]?
        var sent = 0
        init(socket: TCPSocket, deadline: UInt64) {
            self.socket = socket
            self.deadline = deadline
        }
    }

    private static func serve(listener: TCPSocket, limits: MetricsServerLimits, render: () -> String, stopping: StopFlag, logger: Logger) {
        var connections: [Connection] = []  // oldest first
        var buffer = [UInt8](repeating: 0, count: 4_096)
        while !stopping.isSet {
            var fds = [pollfd(fd: listener.descriptor, events: Int16(POLLIN), revents: 0)]
            for c in connections { fds.append(pollfd(fd: c.socket.descriptor, events: Int16(c.answer == nil ? POLLIN : POLLOUT), revents: 0)) }
            // Wake at least every 100 ms to see a stop and the connections' deadlines.
            let rc = poll(&fds, nfds_t(fds.count), 100)
            if rc < 0 && errno != EINTR {
                logger.error("metrics poll failed", ["errno": errno])
                return
            }
            let now = monotonicNanos()
            var closed = Set<ObjectIdentifier>()
            for (i, c) in connections.enumerated() {
                let events = fds[i + 1].revents
                if now > c.deadline {
                    closed.insert(ObjectIdentifier(c))
                    continue
                }
                guard events != 0 else { continue }
                if c.answer == nil {
                    let read: Int?
                    do { read = try c.socket.read(into: &buffer) } catch { read = -1 }
                    guard let n = read else { continue }
                    if n <= 0 {
                        closed.insert(ObjectIdentifier(c))
                        continue
                    }
                    c.head += buffer.prefix(n)
                    c.answer = answer(to: c.head, limits: limits, render: render)
                }
                if c.answer != nil && !send(c) { closed.insert(ObjectIdentifier(c)) }
            }
            connections.removeAll { closed.contains(ObjectIdentifier($0)) }
            if fds[0].revents != 0 {
                // Bounded per wake, so a flood of connections cannot keep the loop from the others.
                for _ in 0..<64 {
                    guard let socket = (try? listener.accept())??.socket else { break }
                    if connections.count >= limits.maxConnections { connections.removeFirst() }
                    connections.append(Connection(socket: socket, deadline: monotonicNanos() + UInt64(limits.timeoutMilliseconds) * 1_000_000))
                }
            }
        }
    }

    /// Sends what the kernel takes of the answer; false once it all went (or the peer is gone).
    private static func send(_ c: Connection) -> Bool {
        guard let answer = c.answer else { return true }
        guard let n = try? c.socket.write(answer, from: c.sent) else { return false }
        c.sent += n
        return c.sent < answer.count
    }

    /// The answer to a head read so far, or nil while it is incomplete and within bounds.
    static func answer(to head: [UInt8], limits: MetricsServerLimits, render: () -> String) -> [UInt8]? {
        guard let end = headEnd(head) else {
            return head.count > limits.maxHeadBytes
                ? response(431, "Request Header Fields Too Large", "request head over \(limits.maxHeadBytes) bytes\n") : nil
        }
        guard end <= limits.maxHeadBytes else {
            return response(431, "Request Header Fields Too Large", "request head over \(limits.maxHeadBytes) bytes\n")
        }
        let lineEnd = head.firstIndex(of: UInt8(ascii: "\n")) ?? end
        let parts = head[..<lineEnd].split(separator: UInt8(ascii: " "), omittingEmptySubsequences: true)
        guard parts.count == 3, let version = String(bytes: parts[2], encoding: .ascii),
            version.hasPrefix("HTTP/1.")
        else {
            return response(400, "Bad Request", "expected: GET /metrics HTTP/1.1\n")
        }
        let method = String(decoding: parts[0], as: UTF8.self)
        var target = String(decoding: parts[1], as: UTF8.self)
        if let query = target.firstIndex(of: "?") { target = String(target[..<query]) }
        guard target == "/metrics" else { return response(404, "Not Found", "only /metrics is served here\n") }
        guard method == "GET" || method == "HEAD" else {
            return response(405, "Method Not Allowed", "only GET is answered\n", extra: "Allow: GET, HEAD\r\n")
        }
        let body = render()
        return response(
            200, "OK", method == "HEAD" ? "" : body, contentType: MetricsText.contentType,
            length: body.utf8.count)
    }

    /// The offset just past the blank line that ends a head (`\r\n\r\n` or `\n\n`), if there is one.
    static func headEnd(_ bytes: [UInt8]) -> Int? {
        var i = 0
        while i < bytes.count {
            if bytes[i] == UInt8(ascii: "\n") {
                if i + 1 < bytes.count && bytes[i + 1] == UInt8(ascii: "\n") { return i + 2 }
                if i + 2 < bytes.count && bytes[i + 1] == UInt8(ascii: "\r") && bytes[i + 2] == UInt8(ascii: "\n") { return i + 3 }
            }
            i += 1
        }
        return nil
    }

    private static func response(
        _ status: Int, _ reason: String, _ body: String, contentType: String = "text/plain; charset=utf-8",
        length: Int? = nil, extra: String = ""
    ) -> [UInt8] {
        let head = "HTTP/1.1 \(status) \(reason)\r\nContent-Type: \(contentType)\r\nContent-Length: \(length ?? body.utf8.count)\r\n\(extra)Connection: close\r\n\r\n"
        return Array(head.utf8) + Array(body.utf8)
    }
}
