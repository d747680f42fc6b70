import CRaft

#if canImport(Glibc)
    import Glibc
#endif

/// libraft's TCP transport with Nagle's algorithm off on every connection it makes or accepts.
///
/// libraft 0.15 leaves it on, and a small AppendEntries reply then waits for the peer's delayed
/// ACK: about 1 commit in 15 took 40 ms more on loopback (5.3 ms a commit on average, 0.7 to
/// 1.5 ms otherwise). This wraps the TCP transport (`inner`), passing each call through and
/// setting TCP_NODELAY on the streams it hands back. Used only on its node's loop thread.
final class NoDelayTransport {
    /// What libraft's I/O calls (`raft_uv_init`).
    let outer: UnsafeMutablePointer<raft_uv_transport>
    /// libraft's own TCP transport.
    let inner: UnsafeMutablePointer<raft_uv_transport>
    fileprivate var accept: raft_uv_accept_cb?
    fileprivate var closed: raft_uv_transport_close_cb?
    /// Where to dial a replica instead of its address (a tunnel's entrance), when set.
    fileprivate let dial: (@Sendable (UInt64) -> String?)?

    /// `bind` (host:port): where to listen, when not at the node's own address (which peers
    /// dial, and may reach through something in between: a proxy, a tunnel).
    init(loop: UnsafeMutablePointer<uv_loop_t>, bind: String?, dial: (@Sendable (UInt64) -> String?)?) throws(ReplicationError) {
        self.dial = dial
        // Each transport struct is followed by a pointer to this object: libraft keeps its own
        // pointer in the struct's `data`.
        outer = NoDelayTransport.allocate()
        inner = NoDelayTransport.allocate()
        let code = raft_uv_tcp_init(inner, loop)
        guard code == 0 else {
            outer.deallocate()
            inner.deallocate()
            throw ReplicationError("raft_uv_tcp_init: \(String(cString: raft_strerror(code)))")
        }
        if let bind {
            let code = raft_uv_tcp_set_bind_address(inner, bind)
            guard code == 0 else {
                raft_uv_tcp_close(inner)
                outer.deallocate()
                inner.deallocate()
                throw ReplicationError("the Raft bind address \(bind): \(String(cString: raft_strerror(code)))")
            }
        }
        let me = Unmanaged.passUnretained(self).toOpaque()
        for transport in [outer, inner] {
            (UnsafeMutableRawPointer(transport) + MemoryLayout<raft_uv_transport>.stride).storeBytes(of: me, as: UnsafeMutableRawPointer.self)
        }
        outer.pointee.`init` = { outer, id, address in
            let transport = NoDelayTransport.of(outer)
            return transport.inner.pointee.`init`(transport.inner, id, address)
        }
        outer.pointee.listen = { outer, accept in
            let transport = NoDelayTransport.of(outer)
            transport.accept = accept
            return transport.inner.pointee.listen(transport.inner) { inner, id, address, stream in
                let transport = NoDelayTransport.of(inner)
                // Behind a tunnel, only the tunnel, in this process, reaches the listener: a
                // connection from another local process is closed unheard.
                if transport.dial != nil, let stream, !NoDelayTransport.isOwn(stream) {
                    stream.withMemoryRebound(to: uv_handle_t.self, capacity: 1) { handle in uv_close(handle) { raft_free($0) } }
                    return
                }
                NoDelayTransport.noDelay(stream)
                transport.accept?(transport.outer, id, address, stream)
            }
        }
        outer.pointee.connect = { outer, request, id, address, callback in
            let transport = NoDelayTransport.of(outer)
            let mine = UnsafeMutablePointer<raft_uv_connect>.allocate(capacity: 1)
            mine.initialize(to: raft_uv_connect(data: UnsafeMutableRawPointer(request), cb: nil))
            request?.pointee.cb = callback
            // libraft reads the address at once (it parses it before dialling).
            let target = transport.dial?(id) ?? address.map { String(cString: $0) } ?? ""
            let code = target.withCString { target in
                transport.inner.pointee.connect(transport.inner, mine, id, target) { mine, stream, status in
                    guard let mine else { return }
                    let request = mine.pointee.data?.assumingMemoryBound(to: raft_uv_connect.self)
                    mine.deallocate()
                    if status == 0 { NoDelayTransport.noDelay(stream) }
                    request?.pointee.cb?(request, stream, status)
                }
            }
            if code != 0 { mine.deallocate() }
            return code
        }
        outer.pointee.close = { outer, closed in
            let transport = NoDelayTransport.of(outer)
            transport.closed = closed
            transport.inner.pointee.close(transport.inner) { inner in
                let transport = NoDelayTransport.of(inner)
                transport.closed?(transport.outer)
            }
        }
    }

    /// Frees libraft's transport (after its loop has stopped) and this one's memory.
    func release() {
        raft_uv_tcp_close(inner)
        inner.deallocate()
        outer.deallocate()
    }

    /// A transport struct with room after it for the pointer back to its `NoDelayTransport`.
    private static func allocate() -> UnsafeMutablePointer<raft_uv_transport> {
        let raw = UnsafeMutableRawPointer.allocate(
            byteCount: MemoryLayout<raft_uv_transport>.stride + MemoryLayout<UnsafeMutableRawPointer>.size,
            alignment: MemoryLayout<raft_uv_transport>.alignment)
        let transport = raw.bindMemory(to: raft_uv_transport.self, capacity: 1)
        transport.initialize(to: raft_uv_transport())
        return transport
    }

    private static func of(_ transport: UnsafeMutablePointer<raft_uv_transport>?) -> NoDelayTransport {
        let me = (UnsafeMutableRawPointer(transport!) + MemoryLayout<raft_uv_transport>.stride).load(as: UnsafeMutableRawPointer.self)
        return Unmanaged<NoDelayTransport>.fromOpaque(me).takeUnretainedValue()
    }

    /// Whether the process at the other end of `stream` is this one.
    private static func isOwn(_ stream: UnsafeMutablePointer<uv_stream_t>) -> Bool {
        var descriptor: uv_os_fd_t = -1
        let handle = UnsafeMutableRawPointer(stream).assumingMemoryBound(to: uv_handle_t.self)
        return uv_fileno(handle, &descriptor) == 0 && LoopbackTCP.isOwn(descriptor)
    }

    /// Nagle off, and a link to a host that went away ends within seconds: libraft keeps a
    /// connection until it fails, and a peer that died without a reset (its host lost, a
    /// link cut) would otherwise hold it for the kernel's retransmission timeout, many minutes,
    /// while the peer, back, waits to hear from the leader. TCP keepalive probes an idle link
    /// after 1 s, 3 probes 1 s apart; data unacknowledged for 5 s ends it.
    private static func noDelay(_ stream: UnsafeMutablePointer<uv_stream_t>?) {
        guard let stream else { return }
        stream.withMemoryRebound(to: uv_tcp_t.self, capacity: 1) { tcp in
            _ = uv_tcp_nodelay(tcp, 1)
            _ = uv_tcp_keepalive(tcp, 1, 1)
            var descriptor: uv_os_fd_t = -1
            guard uv_fileno(UnsafeMutableRawPointer(tcp).assumingMemoryBound(to: uv_handle_t.self), &descriptor) == 0 else { return }
            var value: Int32 = 1
            setsockopt(descriptor, Int32(IPPROTO_TCP), TCP_KEEPINTVL, &value, socklen_t(MemoryLayout<Int32>.size))
            value = 3
            setsockopt(descriptor, Int32(IPPROTO_TCP), TCP_KEEPCNT, &value, socklen_t(MemoryLayout<Int32>.size))
            value = 5_000
            setsockopt(descriptor, Int32(IPPROTO_TCP), TCP_USER_TIMEOUT, &value, socklen_t(MemoryLayout<Int32>.size))
        }
    }
}
