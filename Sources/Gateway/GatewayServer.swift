import Bus
import Foundation
import ServiceKit
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// The gateway: one TCP endpoint for clients (JSON-RPC lines or RESP), in front of the services.
///
/// One thread accepts; each connection gets a thread of its own. Backends are reached
/// through one RPC client per service.
public final class GatewayServer: Sendable {
    /// `host:port` really bound.
    public let endpoint: String
    /// The port really bound.
    public let port: UInt16
    private let backends: Backends
    private let stopping = StopFlag()
    private let connections = ConnectionCount()
    private let acceptor: WorkerThread
    private let logger: Logger

    /// Listens on `config.listen` and connects to `config.peers`.
    public init(config: ServiceConfig, context: ZMQContext, logger: Logger, healthCheckMilliseconds: Int = 1_000) throws {
        self.logger = logger
        let (host, requestedPort) = try GatewayServer.split(config.listen)
        let listener = try TCPSocket.listen(host: host, port: requestedPort)
        listener.setNonBlocking()
        port = listener.localPort()
        endpoint = host.contains(":") ? "[\(host)]:\(port)" : "\(host):\(port)"
        let backends = try Backends(context: context, peers: config.peers, logger: logger, checkIntervalMilliseconds: healthCheckMilliseconds)
        self.backends = backends
        let dispatcher = Dispatcher(backends: backends, defaultDeadlineMilliseconds: config.deadlineMilliseconds,
                                    connections: connections, maxConnections: config.maxConnections)
        var limits = ConnectionLimits()
        limits.maxRequestBytes = config.maxRequestBytes
        limits.idleTimeoutMilliseconds = config.idleTimeoutMilliseconds
        let accept = AcceptLoop(listener: listener, dispatcher: dispatcher, limits: limits, maxConnections: config.maxConnections,
                                logger: logger, stopping: stopping, connections: connections)
        acceptor = WorkerThread(name: "gateway-accept") { accept.run() }
        logger.info("listening", ["endpoint": endpoint, "backends": config.peers.keys.sorted().joined(separator: ",")])
    }

    /// Client connections open now.
    public var openConnections: Int { connections.value }

    /// Stops accepting, closes every connection (waiting up to 5 s) and the backend clients.
    public func stop() {
        stopping.set()
        acceptor.join()
        for _ in 0..<100 where connections.value > 0 { usleep(50_000) }
        backends.close()
        logger.info("gateway stopped", [:])
    }

    static func split(_ listen: String) throws(ConfigError) -> (String, UInt16) {
        guard let colon = listen.lastIndex(of: ":"), let port = UInt16(listen[listen.index(after: colon)...]) else {
            throw ConfigError("--listen takes HOST:PORT, got '\(listen)'")
        }
        var host = String(listen[..<colon])
        if host.hasPrefix("[") && host.hasSuffix("]") { host = String(host.dropFirst().dropLast()) }
        return (host, port)
    }
}

/// How many client connections are open, shared by the acceptor and the connection threads.
final class ConnectionCount: Sendable {
    private let count = Atomic<Int>(0)
    /// Adds `n` (negative to remove) and returns the new count.
    func add(_ n: Int) -> Int { count.add(n, ordering: .relaxed).newValue }
    var value: Int { count.load(ordering: .relaxed) }
}

/// The accepting thread's work: admit connections up to the limit, refuse the rest with an error.
///
/// Unchecked because it carries the listening socket to the acceptor thread, which alone uses it.
struct AcceptLoop: @unchecked Sendable {
    let listener: TCPSocket
    let dispatcher: Dispatcher
    let limits: ConnectionLimits
    let maxConnections: Int
    let logger: Logger
    let stopping: StopFlag
    let connections: ConnectionCount

    func run() {
        var fds = [pollfd(fd: listener.descriptor, events: Int16(POLLIN), revents: 0)]
        while !stopping.isSet {
            guard poll(&fds, 1, 200) > 0 else { continue }
            while let socket = try? listener.accept() {
                if connections.add(1) > maxConnections {
                    _ = connections.add(-1)
                    refuse(socket)
                    continue
                }
                do {
                    let connection = try Connection(socket: socket, dispatcher: dispatcher, limits: limits,
                                                    logger: logger, stopping: stopping)
                    let handoff = Handoff(connection: connection, connections: connections)
                    _ = WorkerThread(name: "gateway-conn", stackSize: 512 << 10) { handoff.serve() }
                } catch {
                    _ = connections.add(-1)
                    logger.error("could not serve a connection", ["error": error])
                }
            }
        }
    }

    /// Says why the connection is refused, in the client's framing if it speaks within 100 ms.
    private func refuse(_ socket: TCPSocket) {
        logger.warn("refused a connection: limit reached", ["limit": maxConnections])
        var fds = [pollfd(fd: socket.descriptor, events: Int16(POLLIN), revents: 0)]
        var first: [UInt8] = []
        var scratch = [UInt8](repeating: 0, count: 4_096)
        if poll(&fds, 1, 100) > 0 { _ = try? socket.read(appendingTo: &first, scratch: &scratch) }
        let lead = first.first { ![0x20, 0x0A, 0x0D, 0x09].contains($0) }
        let error = ServiceError(.unavailable, "too many connections (limit \(maxConnections))")
        let message = lead == UInt8(ascii: "{") || lead == UInt8(ascii: "[")
            ? JSONRPC.error(id: Data("null".utf8), error) + [0x0A]
            : RESP.error("UNAVAILABLE", error.message)
        _ = try? socket.write(message, from: 0)
        // Half-close and read what else came, so the close does not reset the connection
        // and lose the error line on its way.
        shutdown(socket.descriptor, Int32(SHUT_WR))
        for _ in 0..<10 where poll(&fds, 1, 10) > 0 {
            guard let n = try? socket.read(appendingTo: &first, scratch: &scratch), n > 0 else { break }
        }
    }
}

/// Moves a connection onto its own thread. Unchecked: the connection is used only there from then on.
struct Handoff: @unchecked Sendable {
    let connection: Connection
    let connections: ConnectionCount

    func serve() {
        connection.run()
        _ = connections.add(-1)
    }
}
