import Bus
import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// One TCP socket descriptor, owned by one thread and closed in deinit: the gateway's
/// clients and the metrics port's.
public final class TCPSocket {
    public private(set) var descriptor: Int32

    public init(descriptor: Int32) { self.descriptor = descriptor }

    deinit { if descriptor >= 0 { close(descriptor) } }

    /// Hands the descriptor over (to the thread that will own it); this object no longer closes it.
    public func take() -> Int32 {
        defer { descriptor = -1 }
        return descriptor
    }

    /// Binds and listens on `host:port` (port 0 picks a free one); IPv4 or IPv6 by what the host resolves to.
    public static func listen(host: String, port: UInt16, backlog: Int32 = 1024) throws(SystemError) -> TCPSocket {
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
            guard fd >= 0 else {
                lastError = SystemError(operation: "socket", errno: errno)
                continue
            }
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
    public func localPort() -> UInt16 {
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

    /// The kernel's send buffer of a client connection (it doubles it for its own use). Left to
    /// itself it grows to `tcp_wmem`'s maximum (4 MiB here), and replies a client does not
    /// read would sit there, out of the gateway's output bound and its slow-reader rule.
    public static let sendBufferBytes: Int32 = 128 << 10

    /// Accepts one connection (non-blocking, no delay, a bounded send buffer) with the client's
    /// address as it is counted (`clientAddress`) and the peer's whole address (16 bytes, an
    /// IPv4 one mapped), or nil when none is waiting.
    public func accept() throws(SystemError) -> (socket: TCPSocket, address: String, peer: [UInt8])? {
        while true {
            var storage = sockaddr_storage()
            var length = socklen_t(MemoryLayout<sockaddr_storage>.size)
            let fd = withUnsafeMutablePointer(to: &storage) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { Glibc.accept(descriptor, $0, &length) }
            }
            if fd >= 0 {
                _ = fcntl(fd, F_SETFD, FD_CLOEXEC)
                _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK)
                var one: Int32 = 1
                setsockopt(fd, Int32(IPPROTO_TCP), TCP_NODELAY, &one, socklen_t(MemoryLayout<Int32>.size))
                var sendBuffer = TCPSocket.sendBufferBytes
                setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &sendBuffer, socklen_t(MemoryLayout<Int32>.size))
                let peer = TCPSocket.peerBytes(storage)
                return (TCPSocket(descriptor: fd), TCPSocket.clientAddress(peer), peer)
            }
            switch errno {
            case EINTR: continue
            case EAGAIN, ECONNABORTED, EPROTO: return nil
            default: throw SystemError(operation: "accept", errno: errno)
            }
        }
    }

    /// A peer's address as 16 bytes: an IPv6 address, or an IPv4 one mapped (`::ffff:a.b.c.d`).
    public static func peerBytes(_ storage: sockaddr_storage) -> [UInt8] {
        var storage = storage
        return withUnsafePointer(to: &storage) { pointer -> [UInt8] in
            switch Int32(pointer.pointee.ss_family) {
            case AF_INET:
                return pointer.withMemoryRebound(to: sockaddr_in.self, capacity: 1) { address in
                    Array(repeating: 0, count: 10) + [0xFF, 0xFF] + withUnsafeBytes(of: address.pointee.sin_addr) { Array($0) }
                }
            case AF_INET6:
                return pointer.withMemoryRebound(to: sockaddr_in6.self, capacity: 1) { address in withUnsafeBytes(of: address.pointee.sin6_addr) { Array($0) } }
            default:
                return Array(repeating: 0, count: 16)
            }
        }
    }

    /// The address a client is counted under, from its 16 bytes (`peerBytes`): an IPv4 address
    /// as written, an IPv6 address by its /64 network (one host usually has a whole /64).
    public static func clientAddress(_ bytes: [UInt8]) -> String {
        guard bytes.count == 16 else { return "unknown" }
        if bytes[0..<10].allSatisfy({ $0 == 0 }) && bytes[10] == 0xFF && bytes[11] == 0xFF {
            return bytes[12..<16].map(String.init).joined(separator: ".")
        }
        let groups = stride(from: 0, to: 8, by: 2).map { String(UInt16(bytes[$0]) << 8 | UInt16(bytes[$0 + 1]), radix: 16) }
        return groups.joined(separator: ":") + "::/64"
    }

    /// Makes the socket non-blocking.
    public func setNonBlocking() {
        let flags = fcntl(descriptor, F_GETFL)
        _ = fcntl(descriptor, F_SETFL, flags | O_NONBLOCK)
    }

    /// Reads what is available into the front of `buffer` (its size is the most read at
    /// once): the count, 0 at end of stream, nil when nothing is there now.
    public func read(into buffer: inout [UInt8]) throws(SystemError) -> Int? {
        while true {
            let n = buffer.withUnsafeMutableBytes { Glibc.read(descriptor, $0.baseAddress, $0.count) }
            if n >= 0 { return n }
            let code = errno
            if code == EINTR { continue }
            if code == EAGAIN { return nil }
            throw SystemError(operation: "read", errno: code)
        }
    }

    /// Writes as much of `bytes[offset...]` as the kernel takes now; returns how many bytes went.
    public func write(_ bytes: [UInt8], from offset: Int) throws(SystemError) -> Int {
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
