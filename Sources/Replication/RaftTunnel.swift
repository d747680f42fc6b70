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
/// Loopback is shared with every process of the host, so both ends take a connection only
/// when the process at its other end is this one (`LoopbackTCP.isOwn`): another local user
/// can neither speak for a replica at an entrance nor reach libraft's listener, and a port
/// taken from under libraft is not followed.
///
/// A link is never reconnected under a stream (bytes would be lost in between): a DEALER whose
/// link drops, is refused or does not complete its handshake within 5 s ends its TCP
/// connection, and libraft dials again. Frames: one non-empty frame is data, one empty frame
/// ends the connection (either way), two empty frames are a DEALER's keepalive (every 2 s; an
/// inbound link heard from for 10 s neither way ends, as its peer is gone). A connection that
/// ended is never opened again by a late frame: its identity is remembered and answered with
/// an end. Memory is bounded by back-pressure: a DEALER queues at most 64 messages of 64 KiB,
/// and libraft's socket is read only while it has room; the ROUTER is read only while no
/// inbound connection holds more than 1 MiB for libraft.
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
        let insidePort: UInt16
        do {
            for id in peers.keys.sorted() {
                let (fd, port) = try LoopbackTCP.listen()
                listeners.append((id, fd))
                entrances[id] = "127.0.0.1:\(port)"
            }
            insidePort = try LoopbackTCP.freePort()
            inside = "127.0.0.1:\(insidePort)"
        } catch {
            listeners.forEach { close($0.1) }
            throw error
        }
        self.entrances = entrances
        let router: Socket
        do {
            router = try Socket(context, .router)
            try router.setRouterMandatory(true)
            try RaftTunnel.bound(router)
            try router.setCurveServer(secretKey: keys.secretKey, domain: RaftTunnel.zapDomain)
            try router.bind("tcp://" + listen)
        } catch {
            listeners.forEach { close($0.1) }
            throw ReplicationError("the Raft port \(listen): \(error)")
        }
        let state = TunnelLoop(
            context: context, router: router, listeners: listeners, peers: peers, insidePort: insidePort, keys: keys, logger: logger)
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

    /// The limits every tunnel socket has: queues, the largest message, and the bus's time for a
    /// handshake (an unauthenticated connection holds a descriptor no longer).
    static func bound(_ socket: Socket) throws(ZMQError) {
        try socket.setSendHighWaterMark(queuedMessages)
        try socket.setReceiveHighWaterMark(queuedMessages)
        try socket.setMaxMessageSize(Int64(chunk + 1_024))
        try socket.setHandshakeInterval(milliseconds: Socket.serverHandshakeMilliseconds)
    }

    /// Messages a link queues each way: back-pressure reaches libraft beyond them.
    static let queuedMessages: Int32 = 64
    /// Bytes read from TCP at once (one message).
    static let chunk = 64 << 10
    /// Bytes waiting for libraft on one inbound connection before the ROUTER is read no more.
    static let pausingBytes = 1 << 20
    /// Connections libraft may hold open to one peer (it needs one; a reconnect briefly two).
    static let linksPerPeer = 4
    /// Inbound connections at once, from every peer.
    static let inboundLinks = 16
    /// A DEALER's keepalive interval, and how long an inbound link may go unheard.
    static let keepaliveNanoseconds: UInt64 = 2_000_000_000
    static let silenceNanoseconds: UInt64 = 10_000_000_000
}

/// Bytes waiting for a non-blocking descriptor, written from the front without copying the rest.
struct PendingBytes {
    private var chunks: [Data] = []
    private var offset = 0
    private(set) var count = 0

    var isEmpty: Bool { count == 0 }

    mutating func append(_ data: Data) {
        chunks.append(data)
        count += data.count
    }

    /// Writes what `fd` takes; false on an error (its end included).
    mutating func flush(to fd: Int32) -> Bool {
        while let first = chunks.first {
            let written = first.withUnsafeBytes { bytes in
                send(fd, bytes.baseAddress.map { $0 + offset }, bytes.count - offset, Int32(MSG_NOSIGNAL))
            }
            if written < 0 { return errno == EAGAIN || errno == EINTR }
            offset += written
            count -= written
            if offset == first.count {
                chunks.removeFirst()
                offset = 0
            }
        }
        return true
    }
}

/// The tunnel's thread and everything it alone touches.
private final class TunnelLoop: @unchecked Sendable {
    struct Outbound {
        let peer: UInt64
        let fd: Int32
        let dealer: Socket
        let monitor: Socket
        /// Bytes from the peer, for libraft.
        var toTCP = PendingBytes()
        /// A chunk from libraft the DEALER had no room for yet.
        var toZMQ: Data?
        var linked = false
        let opened: UInt64
        var lastSent: UInt64
    }
    struct Inbound {
        let fd: Int32
        var connected = false
        var toTCP = PendingBytes()
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
    /// Identities whose connection ended, newest last (a bounded memory: the ROUTER never
    /// gives an identity twice).
    var ended: [Data] = []
    var endedSet = Set<Data>()
    var monitors = 0
    /// Where `readChunk` reads, kept between reads.
    private var readBuffer = [UInt8](repeating: 0, count: RaftTunnel.chunk)

    init(
        context: ZMQContext, router: Socket, listeners: [(UInt64, Int32)], peers: [UInt64: String], insidePort: UInt16, keys: CurveKeyPair,
        logger: Logger
    ) {
        self.context = context
        self.router = router
        self.listeners = listeners
        self.peers = peers
        self.insidePort = insidePort
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
            enum Role {
                case router
                case listener(Int)
                case dealer(Int)
                case dealerRoom(Int)
                case monitor(Int)
                case outboundTCP(Int)
                case inboundTCP(Data)
            }
            var items: [Poller.Item] = []
            var roles: [Role] = []
            // The ROUTER is read only while libraft keeps up with what came before.
            if inbound.values.allSatisfy({ $0.toTCP.count < RaftTunnel.pausingBytes }) {
                items.append(.socket(router))
                roles.append(.router)
            }
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
                    if link.toZMQ == nil {
                        items.append(.descriptor(link.fd))
                        roles.append(.outboundTCP(index))
                    } else {
                        items.append(.socketOutput(link.dealer))
                        roles.append(.dealerRoom(index))
                    }
                } else {
                    items.append(.descriptorOutput(link.fd))
                    roles.append(.outboundTCP(index))
                }
            }
            for (id, link) in inbound {
                items.append(link.connected && link.toTCP.isEmpty ? .descriptor(link.fd) : .descriptorOutput(link.fd))
                roles.append(.inboundTCP(id))
            }
            var poller = Poller(items)
            guard let ready = try? poller.poll(timeoutMilliseconds: 100) else { continue }
            // Outbound links may close while these are handled: by fd, not index.
            var closing = Set<Int32>()
            for (role, isReady) in zip(roles, ready) where isReady {
                switch role {
                case .router: readRouter()
                case .listener(let index): accept(listeners[index])
                case .monitor(let index): if !readMonitor(index) { closing.insert(outbound[index].fd) }
                case .dealer(let index): if !readDealer(index) { closing.insert(outbound[index].fd) }
                case .dealerRoom(let index): if !sendPending(index) { closing.insert(outbound[index].fd) }
                case .outboundTCP(let index): if !pumpOutboundTCP(index) { closing.insert(outbound[index].fd) }
                case .inboundTCP(let id): pumpInboundTCP(id)
                }
            }
            let now = monotonicNanos()
            for index in outbound.indices where outbound[index].linked && now - outbound[index].lastSent > RaftTunnel.keepaliveNanoseconds {
                if (try? outbound[index].dealer.send([Data(), Data()], dontWait: true)) == true { outbound[index].lastSent = now }
            }
            for (index, link) in outbound.enumerated().reversed() {
                if closing.contains(link.fd) || (!link.linked && now - link.opened > UInt64(Socket.serverHandshakeMilliseconds) * 1_000_000) {
                    closeOutbound(index)
                }
            }
            for (id, link) in inbound where now - link.lastHeard > RaftTunnel.silenceNanoseconds { closeInbound(id, tell: true) }
        }
    }

    // MARK: outbound: libraft dials another replica

    func accept(_ listener: (UInt64, Int32)) {
        let fd = Glibc.accept(listener.1, nil, nil)
        guard fd >= 0 else { return }
        guard let address = peers[listener.0], fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK) == 0,
            fcntl(fd, F_SETFD, FD_CLOEXEC) == 0, LoopbackTCP.isOwn(fd),
            outbound.filter({ $0.peer == listener.0 }).count < RaftTunnel.linksPerPeer
        else {
            close(fd)
            return
        }
        do {
            let dealer = try Socket(context, .dealer)
            try dealer.disableReconnect()
            try RaftTunnel.bound(dealer)
            try dealer.watchForDeadLinks()
            try dealer.setCurveClient(publicKey: keys.publicKey, secretKey: keys.secretKey, serverKey: keys.publicKey)
            monitors += 1
            let endpoint = "inproc://raft-tunnel-\(ObjectIdentifier(self).hashValue)-\(monitors)"
            try dealer.startMonitor(endpoint, events: MonitorEvent.linkEvents)
            let monitor = try Socket(context, .pair)
            try monitor.connect(endpoint)
            try dealer.connect("tcp://" + address)
            let now = monotonicNanos()
            outbound.append(Outbound(peer: listener.0, fd: fd, dealer: dealer, monitor: monitor, opened: now, lastSent: now))
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

    /// Bytes from the peer for libraft; false when the link ended (an end frame, or libraft's socket).
    func readDealer(_ index: Int) -> Bool {
        for _ in 0..<64 {
            guard let frames = try? outbound[index].dealer.receive(dontWait: true) else { return true }
            guard frames.count == 1, let data = frames.first, !data.isEmpty else { return false }
            outbound[index].toTCP.append(data)
            guard outbound[index].toTCP.flush(to: outbound[index].fd) else { return false }
            if !outbound[index].toTCP.isEmpty { return true }
        }
        return true
    }

    /// The chunk the DEALER had no room for, sent now; false on a failure.
    func sendPending(_ index: Int) -> Bool {
        guard let data = outbound[index].toZMQ else { return true }
        guard let sent = try? outbound[index].dealer.send([data], dontWait: true) else { return false }
        if sent {
            outbound[index].toZMQ = nil
            outbound[index].lastSent = monotonicNanos()
        }
        return true
    }

    func pumpOutboundTCP(_ index: Int) -> Bool {
        if !outbound[index].toTCP.isEmpty { return outbound[index].toTCP.flush(to: outbound[index].fd) }
        guard let data = readChunk(outbound[index].fd) else {
            // libraft closed it: the other end is told (an empty frame), then the link goes.
            _ = try? outbound[index].dealer.send([Data()], dontWait: true)
            try? outbound[index].dealer.setLinger(milliseconds: 1_000)
            return false
        }
        guard !data.isEmpty else { return true }
        outbound[index].toZMQ = data
        return sendPending(index)
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
            guard frames.count >= 2 else { continue }
            let id = frames[0]
            if endedSet.contains(id) {
                // A late frame of a connection that ended: never a new one mid-stream.
                if frames.count == 2 && !frames[1].isEmpty { _ = try? router.send([id, Data()], dontWait: true) }
                continue
            }
            let keepalive = frames.count == 3 && frames[1].isEmpty && frames[2].isEmpty
            guard frames.count == 2 || keepalive else { continue }
            if inbound[id] == nil {
                guard !keepalive, !frames[1].isEmpty, inbound.count < RaftTunnel.inboundLinks, let fd = LoopbackTCP.connect(port: insidePort) else {
                    remember(id)
                    if !frames[1].isEmpty { _ = try? router.send([id, Data()], dontWait: true) }
                    continue
                }
                inbound[id] = Inbound(fd: fd, lastHeard: monotonicNanos())
            }
            inbound[id]?.lastHeard = monotonicNanos()
            if keepalive { continue }
            guard !frames[1].isEmpty else {
                // Its end: what it sent before goes to libraft first, as far as it takes it.
                if var link = inbound[id], link.connected { _ = link.toTCP.flush(to: link.fd) }
                closeInbound(id, tell: false)
                continue
            }
            inbound[id]?.toTCP.append(frames[1])
        }
    }

    func pumpInboundTCP(_ id: Data) {
        guard var link = inbound[id] else { return }
        if !link.connected {
            var error: Int32 = 0
            var length = socklen_t(MemoryLayout<Int32>.size)
            // Connected, and to this process's own libraft (not a port taken from under it).
            // The kernel completes a connection before libraft accepts it, and its end belongs
            // to no descriptor until then: libraft's loop accepts within moments.
            guard getsockopt(link.fd, SOL_SOCKET, SO_ERROR, &error, &length) == 0, error == 0,
                (0..<20).contains(where: { attempt in
                    if attempt > 0 { usleep(5_000) }
                    return LoopbackTCP.isOwn(link.fd)
                })
            else {
                return closeInbound(id, tell: true)
            }
            link.connected = true
        }
        if !link.toTCP.isEmpty {
            let ok = link.toTCP.flush(to: link.fd)
            inbound[id] = link
            if !ok { closeInbound(id, tell: true) }
            return
        }
        inbound[id] = link
        // libraft writes nothing on a connection it accepted: readable means its end.
        guard let data = readChunk(link.fd) else { return closeInbound(id, tell: true) }
        guard !data.isEmpty else { return }
        guard (try? router.send([id, data], dontWait: true)) == true else { return closeInbound(id, tell: false) }
    }

    /// Ends an inbound connection; `tell`: the replica at the other end is told to end its side.
    func closeInbound(_ id: Data, tell: Bool) {
        guard let link = inbound.removeValue(forKey: id) else { return }
        close(link.fd)
        remember(id)
        if tell { _ = try? router.send([id, Data()], dontWait: true) }
    }

    func remember(_ id: Data) {
        guard endedSet.insert(id).inserted else { return }
        ended.append(id)
        if ended.count > 4_096 { endedSet.remove(ended.removeFirst()) }
    }

    // MARK: bytes

    /// A chunk read from `fd` (empty when there was nothing yet), or nil at its end or on an error.
    func readChunk(_ fd: Int32) -> Data? {
        let count = read(fd, &readBuffer, readBuffer.count)
        if count < 0 && (errno == EAGAIN || errno == EINTR) { return Data() }
        guard count > 0 else { return nil }
        return Data(readBuffer[0..<count])
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

    /// Whether the process at the other end of loopback connection `fd` is this one: the socket
    /// whose address is `fd`'s peer and whose peer is `fd` (`/proc/net/tcp`) is among this
    /// process's descriptors (`/proc/self/fd`).
    static func isOwn(_ fd: Int32) -> Bool {
        func port(_ get: (Int32, UnsafeMutablePointer<sockaddr>, UnsafeMutablePointer<socklen_t>) -> Int32) -> UInt16? {
            var address = sockaddr_in()
            var length = socklen_t(MemoryLayout<sockaddr_in>.size)
            let ok = withUnsafeMutablePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { get(fd, $0, &length) } }
            return ok == 0 && address.sin_addr.s_addr == UInt32(0x7f00_0001).bigEndian ? UInt16(bigEndian: address.sin_port) : nil
        }
        guard let local = port({ getsockname($0, $1, $2) }), let peer = port({ getpeername($0, $1, $2) }),
            let table = procFile("/proc/net/tcp")
        else { return false }
        let mine = "0100007F:" + String(format: "%04X", local)
        let theirs = "0100007F:" + String(format: "%04X", peer)
        // Each line: number, local address, remote address, …, its socket's inode tenth.
        let row = table.split(separator: "\n").dropFirst().lazy.map { $0.split(separator: " ") }.first {
            $0.count > 9 && $0[1] == theirs && $0[2] == mine
        }
        guard let inode = row?[9], inode != "0", let descriptors = try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd") else {
            return false
        }
        let target = "socket:[\(inode)]"
        var link = [CChar](repeating: 0, count: 64)
        return descriptors.contains { name in
            let count = readlink("/proc/self/fd/" + name, &link, link.count - 1)
            return count > 0 && String(decoding: link[0..<count].map { UInt8(bitPattern: $0) }, as: UTF8.self) == target
        }
    }

    /// A file of /proc, read to its end (its size says 0, so Foundation would read nothing).
    private static func procFile(_ path: String) -> String? {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        var bytes: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 65_536)
        // A host's table is a few MB at most; past 64 MiB it is not read.
        while bytes.count < 64 << 20 {
            let count = read(fd, &buffer, buffer.count)
            guard count > 0 else { break }
            bytes += buffer[0..<count]
        }
        return String(decoding: bytes, as: UTF8.self)
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
