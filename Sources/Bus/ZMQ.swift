import CZeroMQ
import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// A failed libzmq call: the operation, errno and libzmq's own message.
public struct ZMQError: Error, Sendable, CustomStringConvertible, Equatable {
    /// The libzmq function or step that failed (`zmq_bind tcp://…`).
    public let operation: String
    /// The errno value libzmq reported.
    public let errno: Int32
    /// `zmq_strerror(errno)`.
    public let message: String

    init(_ operation: String, errno code: Int32 = zmq_errno()) {
        self.operation = operation
        self.errno = code
        self.message = String(cString: zmq_strerror(code))
    }

    public var description: String { "\(operation): \(message) (errno \(errno))" }

    /// The context was terminated under this socket; the owner should close up.
    public var isTerminated: Bool { errno == ETERM }
}

/// A libzmq context: the I/O threads all sockets of a process share.
///
/// libzmq documents contexts as thread-safe, which is why this one handle type is Sendable.
public final class ZMQContext: @unchecked Sendable {
    let handle: UnsafeMutableRawPointer

    /// Creates a context with `ioThreads` background I/O threads.
    public init(ioThreads: Int32 = 1) throws(ZMQError) {
        guard let h = zmq_ctx_new() else { throw ZMQError("zmq_ctx_new") }
        handle = h
        if zmq_ctx_set(h, ZMQ_IO_THREADS, ioThreads) != 0 {
            let error = ZMQError("zmq_ctx_set ZMQ_IO_THREADS")
            zmq_ctx_term(h)
            throw error
        }
        _ = zmq_ctx_set(h, ZMQ_MAX_SOCKETS, 65_536)
    }

    deinit {
        // Every Socket holds a strong reference to its context, so all sockets are closed by now.
        while zmq_ctx_term(handle) != 0 && zmq_errno() == EINTR {}
    }

    /// Whether libzmq was built with a capability (`"curve"`, `"ipc"`, …).
    public static func has(_ capability: String) -> Bool { zmq_has(capability) != 0 }
}

/// The ZeroMQ socket patterns Tourbus uses.
public enum SocketType: Sendable {
    case req, rep, dealer, router, pub, sub, xpub, xsub, push, pull, pair

    var raw: Int32 {
        switch self {
        case .req: ZMQ_REQ
        case .rep: ZMQ_REP
        case .dealer: ZMQ_DEALER
        case .router: ZMQ_ROUTER
        case .pub: ZMQ_PUB
        case .sub: ZMQ_SUB
        case .xpub: ZMQ_XPUB
        case .xsub: ZMQ_XSUB
        case .push: ZMQ_PUSH
        case .pull: ZMQ_PULL
        case .pair: ZMQ_PAIR
        }
    }
}

/// One libzmq socket, owned by exactly one thread for its whole life.
///
/// Not Sendable on purpose: create it on the thread that uses it.
public final class Socket {
    let handle: UnsafeMutableRawPointer
    /// Keeps the context alive for as long as the socket exists.
    public let context: ZMQContext
    /// The pattern this socket was created with.
    public let type: SocketType

    /// Creates a socket of `type` with linger set to `lingerMilliseconds` (0 by default,
    /// so closing never blocks on unsent messages).
    public init(_ context: ZMQContext, _ type: SocketType, lingerMilliseconds: Int32 = 0) throws(ZMQError) {
        guard let h = zmq_socket(context.handle, type.raw) else { throw ZMQError("zmq_socket") }
        self.handle = h
        self.context = context
        self.type = type
        try setOption(ZMQ_LINGER, lingerMilliseconds, "ZMQ_LINGER")
    }

    deinit { zmq_close(handle) }

    // MARK: Endpoints

    /// Binds and returns the real endpoint (`tcp://127.0.0.1:0` comes back with its port).
    @discardableResult
    public func bind(_ endpoint: String) throws(ZMQError) -> String {
        guard zmq_bind(handle, endpoint) == 0 else { throw ZMQError("zmq_bind \(endpoint)") }
        return try lastEndpoint()
    }

    /// Connects to an endpoint; libzmq reconnects by itself when the peer comes and goes.
    public func connect(_ endpoint: String) throws(ZMQError) {
        guard zmq_connect(handle, endpoint) == 0 else { throw ZMQError("zmq_connect \(endpoint)") }
    }

    /// Undoes a `connect`.
    public func disconnect(_ endpoint: String) throws(ZMQError) {
        guard zmq_disconnect(handle, endpoint) == 0 else { throw ZMQError("zmq_disconnect \(endpoint)") }
    }

    /// Undoes a `bind`, so another socket may bind the same endpoint.
    public func unbind(_ endpoint: String) throws(ZMQError) {
        guard zmq_unbind(handle, endpoint) == 0 else { throw ZMQError("zmq_unbind \(endpoint)") }
    }

    /// The endpoint of the last bind, with wildcards resolved.
    public func lastEndpoint() throws(ZMQError) -> String {
        var buffer = [CChar](repeating: 0, count: 1024)
        var size = buffer.count
        guard zmq_getsockopt(handle, ZMQ_LAST_ENDPOINT, &buffer, &size) == 0 else {
            throw ZMQError("zmq_getsockopt ZMQ_LAST_ENDPOINT")
        }
        return String(decoding: buffer.prefix(while: { $0 != 0 }).map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    // MARK: Sending and receiving

    /// Sends one multipart message. Returns false when `dontWait` is set and the message
    /// cannot be queued now (EAGAIN); EINTR is retried.
    @discardableResult
    public func send(_ frames: [Data], dontWait: Bool = false) throws(ZMQError) -> Bool {
        precondition(!frames.isEmpty, "a message has at least one frame")
        for (index, frame) in frames.enumerated() {
            var flags: Int32 = dontWait ? ZMQ_DONTWAIT : 0
            if index < frames.count - 1 { flags |= ZMQ_SNDMORE }
            while true {
                let rc = frame.withUnsafeBytes { zmq_send(handle, $0.baseAddress, $0.count, flags) }
                if rc >= 0 { break }
                let code = zmq_errno()
                if code == EINTR { continue }
                // libzmq queues multipart messages atomically: EAGAIN can only come on the first frame.
                if code == EAGAIN && index == 0 { return false }
                throw ZMQError("zmq_send", errno: code)
            }
        }
        return true
    }

    /// Sends a single-frame message.
    @discardableResult
    public func send(_ frame: Data, dontWait: Bool = false) throws(ZMQError) -> Bool {
        try send([frame], dontWait: dontWait)
    }

    /// Receives one whole multipart message, or nil when `dontWait` is set and none is
    /// waiting (or a receive timeout passed). EINTR is retried.
    public func receive(dontWait: Bool = false) throws(ZMQError) -> [Data]? {
        var frames: [Data] = []
        var message = zmq_msg_t()
        zmq_msg_init(&message)
        defer { zmq_msg_close(&message) }
        while true {
            // Later frames of a multipart message are already here: libzmq delivers it whole.
            let rc = zmq_msg_recv(&message, handle, frames.isEmpty && dontWait ? ZMQ_DONTWAIT : 0)
            if rc < 0 {
                let code = zmq_errno()
                if code == EINTR { continue }
                if code == EAGAIN && frames.isEmpty { return nil }
                throw ZMQError("zmq_msg_recv", errno: code)
            }
            let size = zmq_msg_size(&message)
            if size == 0 {
                frames.append(Data())
            } else if let base = zmq_msg_data(&message) {
                frames.append(Data(bytes: base, count: size))
            }
            if zmq_msg_more(&message) == 0 { return frames }
        }
    }

    // MARK: Options

    func setOption(_ option: Int32, _ value: Int32, _ name: String) throws(ZMQError) {
        var v = value
        guard zmq_setsockopt(handle, option, &v, MemoryLayout<Int32>.size) == 0 else {
            throw ZMQError("zmq_setsockopt \(name)")
        }
    }

    func setOption(_ option: Int32, _ value: Int64, _ name: String) throws(ZMQError) {
        var v = value
        guard zmq_setsockopt(handle, option, &v, MemoryLayout<Int64>.size) == 0 else {
            throw ZMQError("zmq_setsockopt \(name)")
        }
    }

    func setOption(_ option: Int32, bytes: [UInt8], _ name: String) throws(ZMQError) {
        let rc = bytes.withUnsafeBytes { zmq_setsockopt(handle, option, $0.baseAddress, $0.count) }
        guard rc == 0 else { throw ZMQError("zmq_setsockopt \(name)") }
    }

    func getInt32(_ option: Int32, _ name: String) throws(ZMQError) -> Int32 {
        var v: Int32 = 0
        var size = MemoryLayout<Int32>.size
        guard zmq_getsockopt(handle, option, &v, &size) == 0 else { throw ZMQError("zmq_getsockopt \(name)") }
        return v
    }

    /// How long `close` waits to flush unsent messages.
    public func setLinger(milliseconds: Int32) throws(ZMQError) { try setOption(ZMQ_LINGER, milliseconds, "ZMQ_LINGER") }
    /// The outgoing queue bound, in messages.
    public func setSendHighWaterMark(_ messages: Int32) throws(ZMQError) { try setOption(ZMQ_SNDHWM, messages, "ZMQ_SNDHWM") }
    /// The incoming queue bound, in messages.
    public func setReceiveHighWaterMark(_ messages: Int32) throws(ZMQError) { try setOption(ZMQ_RCVHWM, messages, "ZMQ_RCVHWM") }
    /// How soon and how often at most libzmq retries a lost connection.
    public func setReconnectInterval(milliseconds: Int32, maximum: Int32) throws(ZMQError) {
        try setOption(ZMQ_RECONNECT_IVL, milliseconds, "ZMQ_RECONNECT_IVL")
        try setOption(ZMQ_RECONNECT_IVL_MAX, maximum, "ZMQ_RECONNECT_IVL_MAX")
    }
    /// A link that died silently (a cable cut, a partition, a host powered off) is reset by the
    /// kernel within seconds, and libzmq dials again, rather than when TCP gives up (minutes):
    /// TCP keepalive probes after 1 s without a segment, 1 s apart, 3 unanswered ones ending it;
    /// and data unacknowledged for 3 s ends it (`TCP_USER_TIMEOUT`, a peer gone while a request
    /// was on its way). A live peer's kernel answers both, even while libzmq has stopped reading
    /// the connection (a full receive queue), so backpressure never ends a link.
    ///
    /// Not ZMTP heartbeats (`ZMQ_HEARTBEAT_*`): the engine cannot read a peer's PINGs while its
    /// input is stopped, so it ends a healthy but backed-up link, and the reconnect trips
    /// libzmq's `_input_stopped` assertion (zeromq/libzmq#3937, unfixed in 4.3.4), which
    /// crashed subscribers during large imports.
    public func watchForDeadLinks() throws(ZMQError) {
        try setOption(ZMQ_TCP_KEEPALIVE, Int32(1), "ZMQ_TCP_KEEPALIVE")
        try setOption(ZMQ_TCP_KEEPALIVE_IDLE, Int32(1), "ZMQ_TCP_KEEPALIVE_IDLE")
        try setOption(ZMQ_TCP_KEEPALIVE_INTVL, Int32(1), "ZMQ_TCP_KEEPALIVE_INTVL")
        try setOption(ZMQ_TCP_KEEPALIVE_CNT, Int32(3), "ZMQ_TCP_KEEPALIVE_CNT")
        try setOption(ZMQ_TCP_MAXRT, Int32(3_000), "ZMQ_TCP_MAXRT")
    }
    /// How long a new connection may take to finish its handshake (the greeting and, on a
    /// CURVE server, its key's check) before it is dropped; libzmq's default is 30 s, which
    /// lets idle strangers hold a server's files.
    public func setHandshakeInterval(milliseconds: Int32) throws(ZMQError) { try setOption(ZMQ_HANDSHAKE_IVL, milliseconds, "ZMQ_HANDSHAKE_IVL") }
    /// The handshake interval of Tourbus's server sockets: seconds of round trips to spare on a slow link.
    public static let serverHandshakeMilliseconds: Int32 = 5_000
    /// The largest inbound message libzmq accepts; a larger one drops the connection.
    public func setMaxMessageSize(_ bytes: Int64) throws(ZMQError) { try setOption(ZMQ_MAXMSGSIZE, bytes, "ZMQ_MAXMSGSIZE") }
    /// Never dials again once a connection ends (or its first attempt fails): for a link whose
    /// stream must not resume on a new connection.
    public func disableReconnect() throws(ZMQError) { try setOption(ZMQ_RECONNECT_IVL, Int32(-1), "ZMQ_RECONNECT_IVL") }
    /// Queue messages only to completed connections, so sends fail fast when no peer is there.
    public func setImmediate(_ on: Bool) throws(ZMQError) { try setOption(ZMQ_IMMEDIATE, on ? Int32(1) : Int32(0), "ZMQ_IMMEDIATE") }
    /// Makes blocking receives give up after this long (-1 waits forever).
    public func setReceiveTimeout(milliseconds: Int32) throws(ZMQError) { try setOption(ZMQ_RCVTIMEO, milliseconds, "ZMQ_RCVTIMEO") }
    /// Makes blocking sends give up after this long (-1 waits forever).
    public func setSendTimeout(milliseconds: Int32) throws(ZMQError) { try setOption(ZMQ_SNDTIMEO, milliseconds, "ZMQ_SNDTIMEO") }
    /// Makes a ROUTER fail with EHOSTUNREACH rather than drop a message to an unknown peer.
    public func setRouterMandatory(_ on: Bool) throws(ZMQError) { try setOption(ZMQ_ROUTER_MANDATORY, on ? Int32(1) : Int32(0), "ZMQ_ROUTER_MANDATORY") }
    /// Subscribes a SUB socket to topics starting with `prefix` ("" means all).
    public func subscribe(_ prefix: String) throws(ZMQError) { try setOption(ZMQ_SUBSCRIBE, bytes: Array(prefix.utf8), "ZMQ_SUBSCRIBE") }

    /// Makes this socket a CURVE server with its long-term secret key (32 raw bytes).
    ///
    /// Clients are admitted by the context's `ZAPAuthenticator`; with none running, every
    /// client is refused (`ZMQ_ZAP_ENFORCE_DOMAIN`), never every client admitted.
    /// `domain` is the ZAP domain the handler judges its clients in (`ZAPAuthenticator`).
    public func setCurveServer(secretKey: [UInt8], domain: String = ZAPAuthenticator.busDomain) throws(ZMQError) {
        try setOption(ZMQ_CURVE_SERVER, Int32(1), "ZMQ_CURVE_SERVER")
        try setOption(ZMQ_CURVE_SECRETKEY, bytes: secretKey, "ZMQ_CURVE_SECRETKEY")
        try setOption(ZMQ_ZAP_DOMAIN, bytes: Array(domain.utf8), "ZMQ_ZAP_DOMAIN")
        // ZMQ_ZAP_ENFORCE_DOMAIN (93): zmq.h declares it only under ZMQ_BUILD_DRAFT_API, but
        // Debian's libzmq 4.3 takes it; one that does not refuses to make the server.
        try setOption(93, Int32(1), "ZMQ_ZAP_ENFORCE_DOMAIN")
    }
    /// Makes this socket a CURVE client (see `CurveClientKeys`).
    public func setCurveClient(_ keys: CurveClientKeys) throws(ZMQError) {
        try setCurveClient(publicKey: keys.publicKey, secretKey: keys.secretKey, serverKey: keys.serverKey)
    }
    /// Makes this socket a CURVE client of the server with `serverKey`.
    public func setCurveClient(publicKey: [UInt8], secretKey: [UInt8], serverKey: [UInt8]) throws(ZMQError) {
        try setOption(ZMQ_CURVE_PUBLICKEY, bytes: publicKey, "ZMQ_CURVE_PUBLICKEY")
        try setOption(ZMQ_CURVE_SECRETKEY, bytes: secretKey, "ZMQ_CURVE_SECRETKEY")
        try setOption(ZMQ_CURVE_SERVERKEY, bytes: serverKey, "ZMQ_CURVE_SERVERKEY")
    }

    /// Starts a monitor that reports connection events on a PAIR socket bound at `endpoint`
    /// (an `inproc://` name); connect a PAIR to it to read them.
    public func startMonitor(_ endpoint: String, events: Int32) throws(ZMQError) {
        guard zmq_socket_monitor(handle, endpoint, events) == 0 else { throw ZMQError("zmq_socket_monitor") }
    }

    /// Stops the monitor. Call it before closing a monitored socket: libzmq's I/O thread
    /// reports the close on the monitor's PAIR, and if nobody reads that PAIR any more the
    /// send blocks the I/O thread, and with it every socket of the context.
    public func stopMonitor() {
        _ = zmq_socket_monitor(handle, nil, 0)
    }
}

/// Connection events a socket monitor reports.
public enum MonitorEvent: Sendable, Equatable {
    case handshakeSucceeded(endpoint: String)
    case disconnected(endpoint: String)
    case other(code: UInt16, endpoint: String)

    /// Event flags to ask `startMonitor` for.
    public static let connectionEvents: Int32 = ZMQ_EVENT_HANDSHAKE_SUCCEEDED | ZMQ_EVENT_DISCONNECTED
    /// Those of a link that must not outlive its first connection: up, and every way it ends
    /// (dropped, closed after a failed dial, refused at the handshake).
    public static let linkEvents: Int32 =
        ZMQ_EVENT_HANDSHAKE_SUCCEEDED | ZMQ_EVENT_DISCONNECTED | ZMQ_EVENT_CLOSED | ZMQ_EVENT_HANDSHAKE_FAILED_NO_DETAIL
        | ZMQ_EVENT_HANDSHAKE_FAILED_PROTOCOL | ZMQ_EVENT_HANDSHAKE_FAILED_AUTH

    /// Parses the two frames libzmq sends for one event, or nil when they are malformed.
    public init?(frames: [Data]) {
        guard frames.count >= 2, frames[0].count >= 6 else { return nil }
        let code = UInt16(frames[0][frames[0].startIndex]) | UInt16(frames[0][frames[0].startIndex + 1]) << 8
        let endpoint = String(decoding: frames[1], as: UTF8.self)
        switch Int32(code) {
        case ZMQ_EVENT_HANDSHAKE_SUCCEEDED: self = .handshakeSucceeded(endpoint: endpoint)
        case ZMQ_EVENT_DISCONNECTED: self = .disconnected(endpoint: endpoint)
        default: self = .other(code: code, endpoint: endpoint)
        }
    }
}

/// Waits on several sockets and plain file descriptors at once (`zmq_poll`).
public struct Poller {
    /// Something to wait on.
    public enum Item {
        case socket(Socket)
        case descriptor(Int32)
        /// A descriptor to write to, ready once it takes bytes (or has failed).
        case descriptorOutput(Int32)
        /// A socket to send on, ready once its queue has room.
        case socketOutput(Socket)
    }

    private var items: [zmq_pollitem_t]
    private let sockets: [Socket?]

    /// A poller waiting for input on each of `items`.
    public init(_ items: [Item]) {
        self.items = items.map { item in
            switch item {
            case .socket(let s): zmq_pollitem_t(socket: s.handle, fd: -1, events: Int16(ZMQ_POLLIN), revents: 0)
            case .descriptor(let fd): zmq_pollitem_t(socket: nil, fd: fd, events: Int16(ZMQ_POLLIN), revents: 0)
            case .descriptorOutput(let fd): zmq_pollitem_t(socket: nil, fd: fd, events: Int16(ZMQ_POLLOUT), revents: 0)
            case .socketOutput(let s): zmq_pollitem_t(socket: s.handle, fd: -1, events: Int16(ZMQ_POLLOUT), revents: 0)
            }
        }
        self.sockets = items.map { item in
            switch item {
            case .socket(let s), .socketOutput(let s): s
            default: nil
            }
        }
    }

    /// Waits up to `timeoutMilliseconds` (-1 forever) and returns, per item, whether it is
    /// ready (readable, or writable for `descriptorOutput`; a descriptor's error counts as
    /// ready, so its reader finds it). EINTR counts as nothing ready.
    public mutating func poll(timeoutMilliseconds: Int) throws(ZMQError) -> [Bool] {
        let count = Int32(items.count)
        let rc = withExtendedLifetime(sockets) { items.withUnsafeMutableBufferPointer { zmq_poll($0.baseAddress, count, timeoutMilliseconds) } }
        if rc < 0 {
            let code = zmq_errno()
            if code == EINTR { return Array(repeating: false, count: items.count) }
            throw ZMQError("zmq_poll", errno: code)
        }
        return items.map { $0.revents & ($0.events | Int16(ZMQ_POLLERR)) != 0 }
    }
}
