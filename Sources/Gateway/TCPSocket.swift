import Bus
import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// One TCP socket descriptor, owned by one thread and closed in deinit.
final class TCPSocket {
    let descriptor: Int32

    init(descriptor: Int32) { self.descriptor = descriptor }

    deinit { close(descriptor) }

    /// Binds and listens on `host:port` (port 0 picks a free one); IPv4 or IPv6 by what the host resolves to.
    static func listen(host: String, port: UInt16, backlog: Int32 = 1024) throws(SystemError) -> TCPSocket {
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
            let fd = socket(info.pointee.ai_family, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
            guard fd >= 0 else { lastError = SystemError(operation: "socket", errno: errno); continue }
            let owned = TCPSocket(descriptor: fd)
            var one: Int32 = 1
            setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, socklen_t(MemoryLayout<Int32>.size))
            guard bind(fd, info.pointee.ai_addr, info.pointee.ai_addrlen) == 0 else {
                lastError = SystemError(operation: "bind \(host):\(port)", errno: errno)
                continue
            }
            guard Glibc.listen(fd, backlog) == 0 else {
                lastError = SystemError(operation: "listen \(host):\(port)", errno: errno)
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

    /// Accepts one connection (non-blocking, no delay), or nil when none is waiting.
    func accept() throws(SystemError) -> TCPSocket? {
        while true {
            let fd = Glibc.accept(descriptor, nil, nil)
            if fd >= 0 {
                _ = fcntl(fd, F_SETFD, FD_CLOEXEC)
                _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK)
                var one: Int32 = 1
                setsockopt(fd, Int32(IPPROTO_TCP), TCP_NODELAY, &one, socklen_t(MemoryLayout<Int32>.size))
                return TCPSocket(descriptor: fd)
            }
            switch errno {
            case EINTR: continue
            case EAGAIN, ECONNABORTED, EPROTO: return nil
            default: throw SystemError(operation: "accept", errno: errno)
            }
        }
    }

    /// Makes the socket non-blocking.
    func setNonBlocking() {
        let flags = fcntl(descriptor, F_GETFL)
        _ = fcntl(descriptor, F_SETFL, flags | O_NONBLOCK)
    }

    /// Reads what is available, appending it to `buffer`: the count, 0 at end of stream, nil
    /// when nothing is there now. `scratch` is the caller's reusable read buffer; its size is
    /// the most read at once.
    func read(appendingTo buffer: inout [UInt8], scratch: inout [UInt8]) throws(SystemError) -> Int? {
        while true {
            let n = scratch.withUnsafeMutableBytes { Glibc.read(descriptor, $0.baseAddress, $0.count) }
            if n >= 0 {
                buffer.append(contentsOf: scratch[0..<n])
                return n
            }
            let code = errno
            if code == EINTR { continue }
            if code == EAGAIN { return nil }
            throw SystemError(operation: "read", errno: code)
        }
    }

    /// Writes as much of `bytes[offset...]` as the kernel takes now; returns how many bytes went.
    func write(_ bytes: [UInt8], from offset: Int) throws(SystemError) -> Int {
        while true {
            guard offset < bytes.count else { return 0 }
            let n = bytes.withUnsafeBufferPointer { pointer -> Int in
                guard let base = pointer.baseAddress else { return 0 }
                return send(descriptor, base + offset, bytes.count - offset, Int32(MSG_NOSIGNAL))
            }
            if n >= 0 { return n }
            let code = errno
            if code == EINTR { continue }
            if code == EAGAIN { return 0 }
            throw SystemError(operation: "write", errno: code)
        }
    }
}
