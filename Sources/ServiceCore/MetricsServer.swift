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
    public init(listen: String, limits: MetricsServerLimits = MetricsServerLimits(), logger: Logger,
                render: @escaping @Sendable () -> String) throws {
        let (host, port) = try MetricsServer.split(listen)
        let listener = try MetricsSocket.listen(host: host, port: port)
        let bound = listener.localPort()
        endpoint = host.contains(":") ? "[\(host)]:\(bound)" : "\(host):\(bound)"
        let stopping = self.stopping
        let descriptor = listener.take()
        thread = WorkerThread(name: "\(logger.component)-metrics") {
            let listener = MetricsSocket(descriptor: descriptor)
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
        guard let colon = listen.lastIndex(of: ":"), colon != listen.startIndex,
              let port = UInt16(listen[listen.index(after: colon)...]) else {
            throw ConfigError("--metrics-listen takes HOST:PORT, got '\(listen)'")
        }
        var host = String(listen[..<colon])
        if host.hasPrefix("[") && host.hasSuffix("]") { host = String(host.dropFirst().dropLast()) }
        return (host, port)
    }

    /// One connection: what it sent so far, the answer once known, how much of it went.
    private final class Connection {
        let socket: MetricsSocket
        let deadline: UInt64
        var head: [UInt8] = []
        var answer: [UInt8]?
        var sent = 0
        init(socket: MetricsSocket, deadline: UInt64) {
            self.socket = socket
            self.deadline = deadline
        }
    }

    private static func serve(listener: MetricsSocket, limits: MetricsServerLimits, render: () -> String, stopping: StopFlag, logger: Logger) {
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
                    guard let n = c.socket.read(into: &buffer) else { continue }
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
                    guard let socket = listener.accept() else { break }
                    if connections.count >= limits.maxConnections { connections.removeFirst() }
                    connections.append(Connection(socket: socket, deadline: monotonicNanos() + UInt64(limits.timeoutMilliseconds) * 1_000_000))
                }
            }
        }
    }

    /// Sends what the kernel takes of the answer; false once it all went (or the peer is gone).
    private static func send(_ c: Connection) -> Bool {
        guard let answer = c.answer else { return true }
        guard let n = c.socket.write(answer, from: c.sent) else { return false }
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
              version.hasPrefix("HTTP/1.") else {
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
        return response(200, "OK", method == "HEAD" ? "" : body, contentType: MetricsText.contentType,
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

    private static func response(_ status: Int, _ reason: String, _ body: String, contentType: String = "text/plain; charset=utf-8",
                                 length: Int? = nil, extra: String = "") -> [UInt8] {
        let head = "HTTP/1.1 \(status) \(reason)\r\nContent-Type: \(contentType)\r\nContent-Length: \(length ?? body.utf8.count)\r\n\(extra)Connection: close\r\n\r\n"
        return Array(head.utf8) + Array(body.utf8)
    }
}

/// A TCP socket descriptor of the metrics server, owned by its thread and closed in deinit.
final class MetricsSocket {
    private(set) var descriptor: Int32

    init(descriptor: Int32) { self.descriptor = descriptor }

    deinit { if descriptor >= 0 { close(descriptor) } }

    /// Hands the descriptor over (to the thread that will own it); this object no longer closes it.
    func take() -> Int32 {
        defer { descriptor = -1 }
        return descriptor
    }

    /// A non-blocking listening socket on `host:port` (port 0 picks a free one).
    static func listen(host: String, port: UInt16) throws(SystemError) -> MetricsSocket {
        var hints = addrinfo()
        hints.ai_family = AF_UNSPEC
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV
        var result: UnsafeMutablePointer<addrinfo>?
        let rc = getaddrinfo(host.isEmpty || host == "*" ? nil : host, String(port), &hints, &result)
        guard rc == 0, let first = result else { throw SystemError(operation: "getaddrinfo \(host)", errno: rc == EAI_SYSTEM ? errno : EINVAL) }
        defer { freeaddrinfo(result) }
        var lastError = SystemError(operation: "bind \(host):\(port)", errno: EADDRNOTAVAIL)
        var candidate: UnsafeMutablePointer<addrinfo>? = first
        while let info = candidate {
            candidate = info.pointee.ai_next
            let fd = socket(info.pointee.ai_family, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue) | Int32(SOCK_NONBLOCK.rawValue), 0)
            guard fd >= 0 else { lastError = SystemError(operation: "socket", errno: errno); continue }
            let owned = MetricsSocket(descriptor: fd)
            var one: Int32 = 1
            setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, socklen_t(MemoryLayout<Int32>.size))
            guard bind(fd, info.pointee.ai_addr, info.pointee.ai_addrlen) == 0 else {
                lastError = SystemError(operation: "bind metrics \(host):\(port)", errno: errno)
                continue
            }
            guard Glibc.listen(fd, 64) == 0 else {
                lastError = SystemError(operation: "listen metrics \(host):\(port)", errno: errno)
                continue
            }
            return owned
        }
        throw lastError
    }

    /// The local port (after binding port 0).
    func localPort() -> UInt16 {
        var storage = sockaddr_storage()
        var length = socklen_t(MemoryLayout<sockaddr_storage>.size)
        let rc = withUnsafeMutablePointer(to: &storage) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(descriptor, $0, &length) }
        }
        guard rc == 0 else { return 0 }
        let family = storage.ss_family
        return withUnsafePointer(to: &storage) { pointer in
            if family == sa_family_t(AF_INET6) {
                return pointer.withMemoryRebound(to: sockaddr_in6.self, capacity: 1) { UInt16(bigEndian: $0.pointee.sin6_port) }
            }
            return pointer.withMemoryRebound(to: sockaddr_in.self, capacity: 1) { UInt16(bigEndian: $0.pointee.sin_port) }
        }
    }

    /// A waiting connection, non-blocking, or nil when none waits.
    func accept() -> MetricsSocket? {
        while true {
            let fd = Glibc.accept(descriptor, nil, nil)
            if fd >= 0 {
                _ = fcntl(fd, F_SETFD, FD_CLOEXEC)
                _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK)
                // A client that does not read holds at most this much of the kernel's memory.
                var sendBuffer: Int32 = 64 << 10
                setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &sendBuffer, socklen_t(MemoryLayout<Int32>.size))
                return MetricsSocket(descriptor: fd)
            }
            if errno == EINTR || errno == ECONNABORTED { continue }
            return nil
        }
    }

    /// Reads into `buffer`: the count (0 at end of stream, -1 on an error), nil when nothing is there now.
    func read(into buffer: inout [UInt8]) -> Int? {
        while true {
            let n = buffer.withUnsafeMutableBytes { recv(descriptor, $0.baseAddress, $0.count, 0) }
            if n >= 0 { return n }
            if errno == EINTR { continue }
            return errno == EAGAIN || errno == EWOULDBLOCK ? nil : -1
        }
    }

    /// Writes what the kernel takes of `bytes[offset...]` now; nil when the peer is gone.
    func write(_ bytes: [UInt8], from offset: Int) -> Int? {
        while true {
            let n = bytes.withUnsafeBufferPointer { pointer -> Int in
                guard let base = pointer.baseAddress, offset < bytes.count else { return 0 }
                return Glibc.send(descriptor, base + offset, bytes.count - offset, Int32(MSG_NOSIGNAL))
            }
            if n >= 0 { return n }
            if errno == EINTR { continue }
            return errno == EAGAIN || errno == EWOULDBLOCK ? 0 : nil
        }
    }
}
