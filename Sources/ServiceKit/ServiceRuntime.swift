import Bus
import Foundation
import Storage
#if canImport(Glibc)
import Glibc
#endif

/// The endpoints a started service really bound.
public struct BoundEndpoints: Codable, Sendable, Equatable {
    public var service: String
    public var rpc: [String]
    public var publish: [String]
    public var pid: Int32
}

/// Runs a `ServiceDefinition`: migrates its database, serves its handlers plus the `sys.*`
/// requests, relays its outbox, and stops gracefully.
public final class ServiceRuntime<State: ServiceState>: Sendable {
    /// What was bound.
    public let endpoints: BoundEndpoints
    /// The request server (for its stats).
    public let server: RPCServer<State>
    private let relay: OutboxRelay?
    private let peers: PeerClients
    private let logger: Logger

    /// Starts the service; throws when the database cannot be opened or migrated, or a bind fails.
    public init(definition: ServiceDefinition<State>, config: ServiceConfig, context: ZMQContext, logger: Logger? = nil) throws {
        let logger = logger ?? Logger(component: definition.name, level: config.logLevel)
        self.logger = logger
        let path = config.resolvedDatabasePath
        let folder = (path as NSString).deletingLastPathComponent
        if !folder.isEmpty { try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true) }

        // Migrate once, before any worker opens its own connection.
        do {
            let db = try Database(path: path)
            var migrations = definition.migrations
            if definition.publishes { migrations += OutboxSchema.migrations }
            let applied = try db.migrate(migrations)
            if !applied.isEmpty {
                logger.info("migrated", ["database": path, "applied": applied.map { "\($0.domain)/\($0.version)" }.joined(separator: ",")])
            }
        }

        let relay = definition.publishes
            ? try OutboxRelay(context: context, bind: config.publish, databasePath: path,
                              heartbeatMilliseconds: config.heartbeatMilliseconds, retention: config.outboxRetention, logger: logger)
            : nil
        self.relay = relay
        let peers = try PeerClients(context: context, peers: config.peers, logger: logger)
        self.peers = peers

        var table = definition.handlers
        table.wrap(.write) { context, state, inner in
            defer { state.worker.flushEmitted() }
            return try inner(context, state)
        }
        let stats = ServerStats()
        ServiceRuntime.addSystemHandlers(to: &table, definition: definition, stats: stats)

        var options = RPCServerOptions()
        options.readers = config.readers
        options.maxRequestBytes = config.maxRequestBytes
        let wakeup = relay?.wakeup
        let makeState = definition.makeState
        do {
            server = try RPCServer(context: context, bind: config.bind, table: table, options: options, stats: stats, logger: logger) { _ in
                let db = try Database(path: path)
                return try makeState(ServiceWorker(db: db, config: config, logger: logger, peers: peers, relayWakeup: wakeup))
            }
        } catch {
            relay?.stop()
            peers.closeAll()
            throw error
        }
        endpoints = BoundEndpoints(service: definition.name, rpc: server.endpoints, publish: relay?.endpoints ?? [],
                                   pid: getpid())
    }

    /// Stops taking requests, finishes those in flight, publishes what is committed, closes everything.
    public func stop() {
        server.stop()
        relay?.stop()
        peers.closeAll()
        logger.info("service stopped", [:])
    }

    // MARK: sys.*

    struct Ping: Codable, Sendable {
        var service: String
        var pong = true
        var time: String
    }

    struct OutboxInfo: Codable, Sendable {
        var epoch: String
        var head: Int64
        var first: Int64?
    }

    struct Stats: Codable, Sendable {
        var service: String
        var server: StatsSnapshot?
        var outbox: OutboxInfo?
    }

    struct ReplayRequest: Codable, Sendable {
        var after: Int64
        var limit: Int?
    }

    struct ReplayReply: Codable, Sendable {
        var epoch: String
        var head: Int64
        var first: Int64?
        var trimmed: Bool
        var count: Int
    }

    struct SnapshotRequest: Codable, Sendable {
        var after: String?
        var limit: Int?
    }

    struct SnapshotReply: Codable, Sendable {
        var epoch: String
        var seq: Int64
        var next: String?
        var count: Int
    }

    private static func addSystemHandlers(to table: inout HandlerTable<State>, definition: ServiceDefinition<State>, stats: ServerStats) {
        let name = definition.name
        table.on("sys.ping") { (_: Empty, _, _) -> Ping in Ping(service: name, time: Logger.timestamp()) }
        let publishes = definition.publishes
        table.on("sys.stats") { (_: Empty, _, state) -> Stats in
            var outbox: OutboxInfo?
            if publishes {
                let box = Outbox(database: state.worker.db)
                outbox = OutboxInfo(epoch: try box.epoch(), head: try box.head(), first: try box.firstAvailable())
            }
            return Stats(service: name, server: stats.snapshot(), outbox: outbox)
        }
        guard publishes else { return }
        table.onRaw("sys.replay") { context, state in
            let request = try context.body(ReplayRequest.self)
            let limit = min(max(request.limit ?? 1_000, 1), 10_000)
            guard request.after >= 0 else { throw ServiceError.invalid("after", "must be 0 or more") }
            let db = state.worker.db
            return try db.transaction(.deferred) {
                let outbox = Outbox(database: db)
                let head = try outbox.head()
                let first = try outbox.firstAvailable()
                let epoch = try outbox.epoch()
                let trimmed = request.after < head && (first ?? Int64.max) > request.after + 1
                let rows = trimmed ? [] : try outbox.read(after: request.after, limit: limit)
                let frames = rows.map { EnvelopeCoding.event(seq: $0.seq, type: $0.type, ts: $0.ts, epoch: epoch, body: $0.body) }
                let reply = ReplayReply(epoch: epoch, head: head, first: first, trimmed: trimmed, count: frames.count)
                return Response(body: try JSONCoding.encoder.encode(reply), attachments: frames)
            }
        }
        guard let snapshot = definition.snapshot else { return }
        table.onRaw("sys.snapshot") { context, state in
            let request = try context.body(SnapshotRequest.self)
            let limit = min(max(request.limit ?? 1_000, 1), 10_000)
            let db = state.worker.db
            // One read transaction: the head and the page are of the same moment.
            return try db.transaction(.deferred) {
                let outbox = Outbox(database: db)
                let head = try outbox.head()
                let epoch = try outbox.epoch()
                let page = try snapshot(state, request.after, limit)
                let ts = Logger.timestamp()
                let frames = page.events.map { EnvelopeCoding.event(seq: head, type: $0.type, ts: ts, epoch: epoch, body: $0.body) }
                let reply = SnapshotReply(epoch: epoch, seq: head, next: page.next, count: frames.count)
                return Response(body: try JSONCoding.encoder.encode(reply), attachments: frames)
            }
        }
    }

    // MARK: Process entry

    /// Runs the service as a process: reads configuration, starts, prints the bound
    /// endpoints as one JSON line on stdout, and stops gracefully on SIGINT or SIGTERM.
    public static func main(_ definition: ServiceDefinition<State>, arguments: [String] = Array(CommandLine.arguments.dropFirst())) -> Never {
        if arguments.contains("--help") || arguments.contains("-h") {
            print(ServiceConfig.usage(service: definition.name))
            exit(0)
        }
        let config: ServiceConfig
        do {
            config = try ServiceConfig.load(service: definition.name, arguments: arguments, environment: ProcessInfo.processInfo.environment)
        } catch {
            FileHandle.standardError.write(Data("tourbus-\(definition.name): \(error)\n\(ServiceConfig.usage(service: definition.name))\n".utf8))
            exit(2)
        }
        let logger = Logger(component: definition.name, level: config.logLevel)

        // Block the stop signals before any thread exists, so every thread inherits the
        // mask and only sigwait below sees them.
        var signals = sigset_t()
        sigemptyset(&signals)
        sigaddset(&signals, SIGINT)
        sigaddset(&signals, SIGTERM)
        pthread_sigmask(SIG_BLOCK, &signals, nil)

        let runtime: ServiceRuntime
        do {
            let context = try ZMQContext()
            runtime = try ServiceRuntime(definition: definition, config: config, context: context, logger: logger)
        } catch {
            logger.error("failed to start", ["error": error])
            exit(1)
        }
        let sorted = JSONEncoder()
        sorted.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        if let line = try? sorted.encode(runtime.endpoints) {
            FileHandle.standardOutput.write(line + Data("\n".utf8))
            if let file = config.readyFile { try? line.write(to: URL(fileURLWithPath: file), options: .atomic) }
        }
        logger.info("ready", ["rpc": runtime.endpoints.rpc.joined(separator: ","), "publish": runtime.endpoints.publish.joined(separator: ",")])
        var received: Int32 = 0
        sigwait(&signals, &received)
        logger.info("signal received; stopping", ["signal": received])
        runtime.stop()
        exit(0)
    }
}
