import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// A raw TCP connection to a loopback HTTP port, for tests that scrape metrics or play a
/// hostile client: it sends bytes as given and reads with a bounded wait.
public final class HTTPProbe {
    public let descriptor: Int32

    /// Connects to `127.0.0.1:port` (or the `host:port` given); reads wait at most `timeoutMilliseconds`.
    public init(_ endpoint: String, timeoutMilliseconds: Int = 5_000) throws {
        let parts = endpoint.split(separator: ":")
        guard parts.count == 2, let port = UInt16(parts[1]) else { throw HTTPProbeError("not host:port: \(endpoint)") }
        descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard descriptor >= 0 else { throw HTTPProbeError("socket: errno \(errno)") }
        var timeout = timeval(tv_sec: timeoutMilliseconds / 1_000, tv_usec: Int((timeoutMilliseconds % 1_000) * 1_000))
        setsockopt(descriptor, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        setsockopt(descriptor, SOL_SOCKET, SO_SNDTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = port.bigEndian
        address.sin_addr.s_addr = inet_addr(String(parts[0]))
        let rc = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(descriptor, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard rc == 0 else {
            close(descriptor)
            throw HTTPProbeError("connect \(endpoint): errno \(errno)")
        }
    }

    deinit { close(descriptor) }

    /// Sends `text` (as much as the kernel takes within the send timeout).
    public func send(_ text: String) { send(Array(text.utf8)) }

    /// Sends `bytes`.
    public func send(_ bytes: [UInt8]) {
        var offset = 0
        while offset < bytes.count {
            let n = bytes.withUnsafeBufferPointer { Glibc.send(descriptor, $0.baseAddress! + offset, bytes.count - offset, Int32(MSG_NOSIGNAL)) }
            if n <= 0 { return }
            offset += n
        }
    }

    /// Reads until the peer closes or the read timeout passes, at most `limit` bytes.
    public func readAll(limit: Int = 16 << 20) -> (bytes: [UInt8], closed: Bool) {
        var out: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 65_536)
        while out.count < limit {
            let n = buffer.withUnsafeMutableBytes { recv(descriptor, $0.baseAddress, $0.count, 0) }
            if n == 0 { return (out, true) }
            if n < 0 { return (out, errno == ECONNRESET) }
            out += buffer.prefix(n)
        }
        return (out, false)
    }

    /// Whether the peer closed the connection (or reset it) within the read timeout.
    public func isClosedByPeer() -> Bool { readAll(limit: 1 << 20).closed }

    /// A loopback TCP port free now (bound and let go), for a program that cannot report the one it bound.
    public static func freePort() throws -> UInt16 {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(fd) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, length) == 0 && getsockname(fd, $0, &length) == 0 }
        }
        guard bound else { throw HTTPProbeError("no free port: errno \(errno)") }
        return UInt16(bigEndian: address.sin_port)
    }

    /// One HTTP request on a new connection: the status and the body.
    public static func request(_ endpoint: String, method: String = "GET", path: String = "/metrics",
                               timeoutMilliseconds: Int = 5_000) throws -> (status: Int, headers: String, body: String) {
        let probe = try HTTPProbe(endpoint, timeoutMilliseconds: timeoutMilliseconds)
        probe.send("\(method) \(path) HTTP/1.1\r\nHost: \(endpoint)\r\nAccept: text/plain\r\nConnection: close\r\n\r\n")
        let text = String(decoding: probe.readAll().bytes, as: UTF8.self)
        guard let split = text.range(of: "\r\n\r\n"), let status = Int(text.split(separator: " ").dropFirst().first ?? "") else {
            throw HTTPProbeError("no HTTP answer from \(endpoint): '\(text.prefix(200))'")
        }
        return (status, String(text[..<split.lowerBound]), String(text[split.upperBound...]))
    }
}

/// A test's HTTP client failed.
public struct HTTPProbeError: Error, CustomStringConvertible {
    public let description: String
    public init(_ description: String) { self.description = description }
}
