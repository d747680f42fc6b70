import Bus
import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// TCP connections to a loopback port from a chosen loopback address: to a gateway, each
/// address (127.0.0.2, 127.0.0.3, …) is a client of its own.
public enum LoopbackSocket {
    /// A socket connected to `127.0.0.1:port` from `source` (any address when nil), whose sends
    /// and receives wait at most `timeoutMilliseconds`; `receiveBuffer`, when given, is set
    /// before connecting (a client that reads little takes little into its kernel).
    public static func connect(port: UInt16, from source: String? = nil, timeoutMilliseconds: Int = 5_000, receiveBuffer: Int32? = nil) throws -> Int32 {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw SystemError(operation: "socket", errno: errno) }
        if var receiveBuffer { setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &receiveBuffer, socklen_t(MemoryLayout<Int32>.size)) }
        func address(_ host: String, _ port: UInt16) -> sockaddr_in {
            var a = sockaddr_in()
            a.sin_family = sa_family_t(AF_INET)
            a.sin_addr.s_addr = inet_addr(host)
            a.sin_port = port.bigEndian
            return a
        }
        let size = socklen_t(MemoryLayout<sockaddr_in>.size)
        var local = address(source ?? "127.0.0.1", 0)
        var remote = address("127.0.0.1", port)
        let bound = source == nil || withUnsafePointer(to: &local) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, size) == 0 } }
        let connected = bound && withUnsafePointer(to: &remote) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { Glibc.connect(fd, $0, size) == 0 } }
        guard connected else {
            let error = SystemError(operation: bound ? "connect to 127.0.0.1:\(port)" : "bind to \(source ?? "")", errno: errno)
            close(fd)
            throw error
        }
        var timeout = timeval(tv_sec: timeoutMilliseconds / 1_000, tv_usec: (timeoutMilliseconds % 1_000) * 1_000)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        return fd
    }
}
