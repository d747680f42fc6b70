import CRaft

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

    init(loop: UnsafeMutablePointer<uv_loop_t>) throws(ReplicationError) {
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
                NoDelayTransport.noDelay(stream)
                transport.accept?(transport.outer, id, address, stream)
            }
        }
        outer.pointee.connect = { outer, request, id, address, callback in
            let transport = NoDelayTransport.of(outer)
            let mine = UnsafeMutablePointer<raft_uv_connect>.allocate(capacity: 1)
            mine.initialize(to: raft_uv_connect(data: UnsafeMutableRawPointer(request), cb: nil))
            request?.pointee.cb = callback
            let code = transport.inner.pointee.connect(transport.inner, mine, id, address) { mine, stream, status in
                guard let mine else { return }
                let request = mine.pointee.data?.assumingMemoryBound(to: raft_uv_connect.self)
                mine.deallocate()
                if status == 0 { NoDelayTransport.noDelay(stream) }
                request?.pointee.cb?(request, stream, status)
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

    private static func noDelay(_ stream: UnsafeMutablePointer<uv_stream_t>?) {
        guard let stream else { return }
        stream.withMemoryRebound(to: uv_tcp_t.self, capacity: 1) { _ = uv_tcp_nodelay($0, 1) }
    }
}
