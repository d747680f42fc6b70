import Bus
import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// Replication under CURVE: libraft's TCP links carried over ZeroMQ sockets with the
/// service's own key, as every link of the bus is.
///
/// libraft listens on loopback only (`inside`, a port picked here), and dials each other
/// replica at a loopback entrance of its own (`entrance(for:)`), never a remote address. The
/// tunnel carries the bytes:
/// - at the replica's Raft address (`listen`), a ROUTER that is a CURVE server of ZAP domain
///   `tourbus-raft`, where the context's `ZAPAuthenticator` admits only the keys the suite
///   lists under the service's own name (its replicas share them). Each client there gets a
///   TCP connection of its own to libraft's listener;
/// - at each entrance, every TCP connection libraft opens gets a DEALER of its own, a CURVE
///   client pinning the same key, connected to that replica's address (a host name is
///   resolved by libzmq: libraft 0.15 takes only IPv4 literals).
///
/// A link is never reconnected under a stream (bytes would be lost in between): a DEALER whose
/// link drops, is refused or does not complete its handshake within 5 s ends its TCP
/// connection, and libraft dials again. A connection's end travels as an empty frame; an
/// inbound one that carries nothing for 10 s ends (the ROUTER cannot see a client vanish,
/// and Raft's heartbeats cross every 100 ms while a leader lives). A peer that cannot take
/// more (its send queue full) loses the connection rather than the process its memory.
public final class RaftTunnel: Sendable {
    /// The ZAP domain of the replication port, whose admitted keys are the service's own.
    public static let zapDomain = "tourbus-raft"
    /// Where libraft listens (`host:port` on loopback).
    public let inside: String
    private let entrances: [UInt64: String]
    private let stopping = StopFlag()
    private let thread: WorkerThread

    /// Binds `listen` (`host:port`, or `*:port`) for the other replicas, an entrance for each of
    /// `peers` (replica id to its `host:port`), and picks libraft's loopback port.
    public init(context: ZMQContext, listen: String, peers: [UInt64: String], keys: CurveKeyPair, logger: Logger) throws {
        var listeners: [(UInt64, Int32)] = []
        var entrances: [UInt64: String] = [:]
        do {
            for id in peers.keys.sorted() {
                let (fd, port) = try LoopbackTCP.listen()
                listeners.append((id, fd))
                entrances[id] = "127.0.0.1:\(port)"
            }
            inside = "127.0.0.1:\(try LoopbackTCP.freePort())"
        } catch {
            listeners.forEach { close($0.1) }
            throw error
        }
        self.entrances = entrances
        let router: Socket
        do {
            router = try Socket(context, .router)
            try router.setRouterMandatory(true)
            try router.setSendHighWaterMark(RaftTunnel.queuedMessages)
            try router.setReceiveHighWaterMark(RaftTunnel.queuedMessages)
            try router.setCurveServer(secretKey: keys.secretKey, domain: RaftTunnel.zapDomain)
            try router.bind("tcp://" + listen)
        } catch {
            listeners.forEach { close($0.1) }
            throw ReplicationError("the Raft port \(listen): \(error)")
        }
        let state = TunnelLoop(
            context: context, router: router, listeners: listeners, peers: peers, inside: inside, keys: keys, logger: logger)
        let stopping = self.stopping
        thread = WorkerThread(name: "\(logger.component)-raft-tunnel") { state.run(until: stopping) }
    }

    deinit { stop() }

    /// Where libraft dials replica `id`: its loopback entrance (nil for an id with none).
    public func entrance(for id: UInt64) -> String? { entrances[id] }

    /// Stops carrying bytes: every connection ends. Later calls do nothing.
    public func stop() {
        stopping.set()
        thread.join()
    }

    /// Messages a link may queue each way before its connection is ended.
    static let queuedMessages: Int32 = 10_000
    /// Bytes read from TCP at once (one message).
    static let chunk = 64 << 10
    /// Bytes waiting to be written to one TCP connection before it is ended.
    static let maxPendingBytes = 64 << 20
}

/// The tunnel's thread and everything it alone touches.
private final class TunnelLoop: @unchecked Sendable {
    struct Outbound {
        let peer: UInt64
        let fd: Int32
        let dealer: Socket
        let monitor: Socket
        var toTCP = Data()
        var linked = false
        let opened: UInt64
    }
    struct Inbound {
        let fd: Int32
        var connected = false
        var toTCP = Data()
        var lastHeard: UInt64
    }

    let context: ZMQContext
    let router: Socket
    let listeners: [(UInt64, Int32)]
    let peers: [UInt64: String]
    let insidePort: UInt16
    let keys: CurveKeyPair
    let logger: Logger
    var outbound: [Outbound] = []
    var inbound: [Data: Inbound] = [:]
    var monitors = 0

    init(context: ZMQContext, router: Socket, listeners: [(UInt64, Int32)], peers: [UInt64: String], inside: String, keys: CurveKeyPair, logger: Logger) {
        self.context = context
        self.router = router
        self.listeners = listeners
        self.peers = peers
        insidePort = UInt16(inside.split(separator: ":").last ?? "") ?? 0
        self.keys = keys
        self.logger = logger
    }

    func run(until stopping: StopFlag) {
        defer {
            for index in outbound.indices.reversed() { closeOutbound(index) }
            for id in Array(inbound.keys) { closeInbound(id, tell: false) }
            listeners.forEach { close($0.1) }
        }
        while !stopping.isSet {
            // What to wait on, and what each item stands for.
            var items: [Poller.Item] = [.socket(router)]
            enum Role {
                case router
                case listener(Int)
                case dealer(Int)
                case monitor(Int)
                case outboundTCP(Int)
                case inboundTCP(Data)
            }
            var roles: [Role] = [.router]
            for (index, listener) in listeners.enumerated() {
                items.append(.descriptor(listener.1))
                roles.append(.listener(index))
            }
            for (index, link) in outbound.enumerated() {
                items.append(.socket(link.monitor))
                roles.append(.monitor(index))
                if link.toTCP.isEmpty {
                    items.append(.socket(link.dealer))
                    roles.append(.dealer(index))
                    items.append(.descriptor(link.fd))
                } else {
                    items.append(.descriptorOutput(link.fd))
                }
                roles.append(.outboundTCP(index))
            }
            for (id, link) in inbound {
                items.append(link.connected && link.toTCP.isEmpty ? .descriptor(link.fd) : .descriptorOutput(link.fd))
                roles.append(.inboundTCP(id))
            }
            var poller = Poller(items)
            guard let ready = try? poller.poll(timeoutMilliseconds: 100) else { continue }
            // Outbound links may close while these are handled: by peer and fd, not index.
            var closing = Set<Int32>()
            for (role, isReady) in zip(roles, ready) where isReady {
                switch role {
                case .router: readRouter()
                case .listener(let index): accept(listeners[index])
                case .monitor(let index): if !readMonitor(index) { closing.insert(outbound[index].fd) }
                case .dealer(let index): if !readDealer(index) { closing.insert(outbound[index].fd) }
                case .outboundTCP(let index): if !pumpOutboundTCP(index) { closing.insert(outbound[index].fd) }
                case .inboundTCP(let id): pumpInboundTCP(id)
                }
            }
            let now = monotonicNanos()
            for (index, link) in outbound.enumerated().reversed() {
                if closing.contains(link.fd) || (!link.linked && now - link.opened > 5_000_000_000) { closeOutbound(index) }
            }
            for (id, link) in inbound where now - link.lastHeard > 10_000_000_000 { closeInbound(id, tell: true) }
        }
    }

    // MARK: outbound: libraft dials another replica

    func accept(_ listener: (UInt64, Int32)) {
        let fd = Glibc.accept(listener.1, nil, nil)
        guard fd >= 0 else { return }
        guard let address = peers[listener.0], fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK) == 0,
            fcntl(fd, F_SETFD, FD_CLOEXEC) == 0
        else {
            close(fd)
            return
        }
        do {
            let dealer = try Socket(context, .dealer)
            try dealer.disableReconnect()
            try dealer.setSendHighWaterMark(RaftTunnel.queuedMessages)
            try dealer.setReceiveHighWaterMark(RaftTunnel.queuedMessages)
            try dealer.watchForDeadLinks()
            try dealer.setCurveClient(publicKey: keys.publicKey, secretKey: keys.secretKey, serverKey: keys.publicKey)
            monitors += 1
            let endpoint = "inproc://raft-tunnel-\(ObjectIdentifier(self).hashValue)-\(monitors)"
            try dealer.startMonitor(endpoint, events: MonitorEvent.linkEvents)
            let monitor = try Socket(context, .pair)
            try monitor.connect(endpoint)
            try dealer.connect("tcp://" + address)
            outbound.append(Outbound(peer: listener.0, fd: fd, dealer: dealer, monitor: monitor, opened: monotonicNanos()))
        } catch {
            logger.warn("could not open a Raft link", ["peer": listener.0, "error": error])
            close(fd)
        }
    }

    /// False when the link ended.
    func readMonitor(_ index: Int) -> Bool {
        while let frames = try? outbound[index].monitor.receive(dontWait: true) {
            switch MonitorEvent(frames: frames) {
            case .handshakeSucceeded?: outbound[index].linked = true
            case nil: continue
            default: return false
            }
        }
        return true
    }

    func readDealer(_ index: Int) -> Bool {
        for _ in 0..<64 {
            guard let frames = try? outbound[index].dealer.receive(dontWait: true) else { return true }
            guard let data = frames.first, !data.isEmpty else { return false }
            outbound[index].toTCP.append(data)
            guard flush(outbound[index].fd, &outbound[index].toTCP) else { return false }
            if !outbound[index].toTCP.isEmpty { return true }
        }
        return true
    }

    func pumpOutboundTCP(_ index: Int) -> Bool {
        if !outbound[index].toTCP.isEmpty { return flush(outbound[index].fd, &outbound[index].toTCP) }
        guard let data = readChunk(outbound[index].fd) else {
            // libraft closed it: the other end is told (an empty frame), then the link goes.
            _ = try? outbound[index].dealer.send([Data()], dontWait: true)
            try? outbound[index].dealer.setLinger(milliseconds: 1_000)
            return false
        }
        // Refused (its queue is full) or failed: the connection ends, libraft dials again.
        return data.isEmpty || (try? outbound[index].dealer.send([data], dontWait: true)) == true
    }

    func closeOutbound(_ index: Int) {
        let link = outbound.remove(at: index)
        link.dealer.stopMonitor()
        close(link.fd)
    }

    // MARK: inbound: another replica's libraft reaches this one's

    func readRouter() {
        for _ in 0..<256 {
            guard let frames = try? router.receive(dontWait: true) else { return }
            guard frames.count == 2 else { continue }
            let id = frames[0]
            if inbound[id] == nil {
                guard !frames[1].isEmpty, let fd = LoopbackTCP.connect(port: insidePort) else { continue }
                inbound[id] = Inbound(fd: fd, lastHeard: monotonicNanos())
            }
            guard !frames[1].isEmpty else {
                closeInbound(id, tell: false)
                continue
            }
            inbound[id]?.lastHeard = monotonicNanos()
            inbound[id]?.toTCP.append(frames[1])
            if (inbound[id]?.toTCP.count ?? 0) > RaftTunnel.maxPendingBytes { closeInbound(id, tell: true) }
        }
    }

    func pumpInboundTCP(_ id: Data) {
        guard var link = inbound[id] else { return }
        if !link.connected {
            var error: Int32 = 0
            var length = socklen_t(MemoryLayout<Int32>.size)
            guard getsockopt(link.fd, SOL_SOCKET, SO_ERROR, &error, &length) == 0, error == 0 else { return closeInbound(id, tell: true) }
            link.connected = true
        }
        if !link.toTCP.isEmpty {
            let ok = flush(link.fd, &link.toTCP)
            inbound[id] = link
            if !ok { closeInbound(id, tell: true) }
            return
        }
        inbound[id] = link
        guard let data = readChunk(link.fd) else { return closeInbound(id, tell: true) }
        guard !data.isEmpty else { return }
        guard (try? router.send([id, data], dontWait: true)) == true else { return closeInbound(id, tell: false) }
        inbound[id]?.lastHeard = monotonicNanos()
    }

    /// Ends an inbound connection; `tell`: the replica at the other end is told to end its side.
    func closeInbound(_ id: Data, tell: Bool) {
        guard let link = inbound.removeValue(forKey: id) else { return }
        close(link.fd)
        if tell { _ = try? router.send([id, Data()], dontWait: true) }
    }

    // MARK: bytes

    /// A chunk read from `fd` (empty when there was nothing yet), or nil at its end or on an error.
    func readChunk(_ fd: Int32) -> Data? {
        var buffer = [UInt8](repeating: 0, count: RaftTunnel.chunk)
        let count = read(fd, &buffer, buffer.count)
        if count < 0 && (errno == EAGAIN || errno == EINTR) { return Data() }
        guard count > 0 else { return nil }
        return Data(buffer[0..<count])
    }

    /// Writes what it can of `pending` to `fd`; false on an error, or past the limit.
    func flush(_ fd: Int32, _ pending: inout Data) -> Bool {
        while !pending.isEmpty {
            let written = pending.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
            if written < 0 {
                if errno == EAGAIN || errno == EINTR { return pending.count <= RaftTunnel.maxPendingBytes }
                return false
            }
            pending.removeFirst(written)
        }
        return true
    }
}

/// Plain TCP on loopback, non-blocking, for the tunnel's ends.
enum LoopbackTCP {
    /// A listener on 127.0.0.1 at a port the kernel picks.
    static func listen() throws(ReplicationError) -> (Int32, UInt16) {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_NONBLOCK.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { throw ReplicationError("socket: \(String(cString: strerror(errno)))") }
        var address = loopback(port: 0)
        let bound = withUnsafePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) } }
        guard bound == 0, Glibc.listen(fd, 16) == 0 else {
            let message = String(cString: strerror(errno))
            close(fd)
            throw ReplicationError("a loopback listener: \(message)")
        }
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) } }
        return (fd, UInt16(bigEndian: address.sin_port))
    }

    /// A port free on 127.0.0.1 now (the kernel's pick for a listener closed at once).
    static func freePort() throws(ReplicationError) -> UInt16 {
        let (fd, port) = try listen()
        close(fd)
        return port
    }

    /// A non-blocking connection to 127.0.0.1:`port` under way, or nil.
    static func connect(port: UInt16) -> Int32? {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_NONBLOCK.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { return nil }
        var address = loopback(port: port)
        let result = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { Glibc.connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard result == 0 || errno == EINPROGRESS else {
            close(fd)
            return nil
        }
        return fd
    }

    private static func loopback(port: UInt16) -> sockaddr_in {
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = port.bigEndian
        address.sin_addr.s_addr = UInt32(0x7f00_0001).bigEndian
        return address
    }
}
