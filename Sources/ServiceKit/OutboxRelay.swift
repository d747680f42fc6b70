import Bus
import Contracts
import Foundation
import Storage
import Synchronization

/// Pushes a service hands to its relay, which sends them on the PUB socket beside the events
/// (at most once: past `capacity` waiting, the newest are dropped and counted).
public final class PushOutlet: Sendable {
    /// Pushes that may wait for the relay's thread.
    public static let capacity = 100_000
    private let waiting = Mutex<(pushes: [Push], dropped: Int)>(([], 0))
    private let wakeup: Wakeup

    init(wakeup: Wakeup) { self.wakeup = wakeup }

    /// Queues `pushes` and wakes the relay.
    public func send(_ pushes: [Push]) {
        guard !pushes.isEmpty else { return }
        waiting.withLock { w in
            let room = max(0, PushOutlet.capacity - w.pushes.count)
            w.pushes += pushes.prefix(room)
            w.dropped += max(0, pushes.count - room)
        }
        wakeup.signal()
    }

    /// What waits, and how many were dropped since the last take.
    func take() -> (pushes: [Push], dropped: Int) {
        waiting.withLock { w in
            defer { w = ([], 0) }
            return w
        }
    }
}

/// Publishes a service's committed outbox rows on a PUB socket, with a heartbeat carrying the head.
///
/// Topic frame = event type; second frame = the event envelope. A heartbeat
/// (`sys.heartbeat`, `seq` = head) lets subscribers see that they are behind even when the
/// last events were dropped. The relay also trims the outbox to its retention. The same
/// socket sends the service's pushes (`push.<topic>`, see `Push`), after the events committed
/// before them.
public final class OutboxRelay: Sendable {
    /// The endpoints bound (port 0 resolved).
    public let endpoints: [String]
    /// Signal this after committing outbox rows to publish them at once.
    public let wakeup: Wakeup
    /// Where the service's pushes go.
    public let pushes: PushOutlet
    /// The outbox head as last published (the seq of the last event sent, which heartbeats carry).
    public var head: Int64 { published.value.load(ordering: .relaxed) }
    private let published = PublishedHead()
    private let stopping = StopFlag()
    private let thread: WorkerThread

    /// Opens its own connection to `databasePath`, binds `bind` and starts publishing from the current head.
    /// `curveSecretKey`: the PUB socket is a CURVE server with it (subscribers are admitted by
    /// the context's `ZAPAuthenticator`).
    ///
    /// With `leading` (a replicated database's), the relay publishes, beats and trims only
    /// while it returns true, from the head it finds each time it starts leading (subscribers
    /// replay what came before), and the outbox's epoch never changes: every replica's relay
    /// publishes the one sequence.
    public init(
        context: ZMQContext, bind: [String], curveSecretKey: [UInt8]? = nil, database: DatabaseFile, heartbeatMilliseconds: Int,
        retention: Int, leading: (@Sendable () -> Bool)? = nil, logger: Logger
    ) throws {
        let wakeup = try Wakeup()
        self.wakeup = wakeup
        let pushes = PushOutlet(wakeup: wakeup)
        self.pushes = pushes
        let startup = StartupReport()
        let stopping = self.stopping
        let published = self.published
        thread = WorkerThread(name: "\(logger.component)-relay") {
            OutboxRelay.loop(
                context: context, bind: bind, curveSecretKey: curveSecretKey, database: database, heartbeat: heartbeatMilliseconds,
                retention: retention, leading: leading, wakeup: wakeup, pushes: pushes, stopping: stopping, published: published, logger: logger, startup: startup)
        }
        switch startup.wait() {
        case .success(let bound): endpoints = bound
        case .failure(let error):
            thread.join()
            throw error
        }
    }

    /// Publishes what is committed, then stops and closes the socket.
    public func stop() {
        stopping.set()
        wakeup.signal()
        thread.join()
    }

    deinit { stop() }

    private static func loop(
        context: ZMQContext, bind: [String], curveSecretKey: [UInt8]?, database: DatabaseFile, heartbeat: Int, retention: Int,
        leading: (@Sendable () -> Bool)?,
        wakeup: Wakeup, pushes: PushOutlet, stopping: StopFlag, published: PublishedHead, logger: Logger, startup: StartupReport
    ) {
        let socket: Socket
        let outbox: Outbox
        var sent: Int64
        let epoch: String
        var bound: [String] = []
        do {
            let db = try database.open()
            outbox = Outbox(database: db)
            // A start after the machine went down mid-run begins a new epoch (Outbox.beginRun);
            // a replicated outbox keeps its epoch (nothing committed is ever lost).
            if leading == nil, try outbox.beginRun() { logger.warn("the machine went down while the last run was publishing: a new epoch", [:]) }
            sent = try outbox.head()
            epoch = try outbox.epoch()
            socket = try Socket(context, .pub, lingerMilliseconds: 200)
            try socket.setSendHighWaterMark(100_000)
            // Subscribers send only subscriptions (a topic prefix each): anything bigger, a
            // stranger's 4 GiB frame before its handshake included, drops its connection.
            try socket.setMaxMessageSize(4_096)
            try socket.setHandshakeInterval(milliseconds: Socket.serverHandshakeMilliseconds)
            if let curveSecretKey { try socket.setCurveServer(secretKey: curveSecretKey) }
            for endpoint in bind { bound.append(try socket.bind(endpoint)) }
        } catch {
            startup.failed(error)
            return
        }
        published.value.store(sent, ordering: .relaxed)
        startup.succeeded(bound)
        logger.info("publishing", ["endpoints": bound.joined(separator: ","), "head": sent, "epoch": epoch])

        var poller = Poller([.descriptor(wakeup.descriptor)])
        var nextHeartbeat: UInt64 = 0
        // Trimming every ten heartbeats keeps the outbox near its retention without a write per event.
        let trimInterval = UInt64(heartbeat) * 10_000_000
        var nextTrim: UInt64 = monotonicNanos() + trimInterval
        func publishCommitted() {
            do {
                while true {
                    let rows = try outbox.read(after: sent, limit: 1_000)
                    for row in rows {
                        let envelope = EnvelopeCoding.event(seq: row.seq, type: row.type, ts: row.ts, epoch: epoch, body: row.body)
                        // PUB never blocks: past the high-water mark a slow subscriber loses
                        // messages and catches up through sys.replay.
                        try socket.send([Data(row.type.utf8), envelope], dontWait: true)
                        sent = row.seq
                    }
                    published.value.store(sent, ordering: .relaxed)
                    if rows.count < 1_000 { return }
                }
            } catch {
                logger.error("relay failed to publish", ["error": error])
            }
        }
        var led = true
        while true {
            let stop = stopping.isSet
            if let leading {
                let leads = leading()
                if leads && !led, let head = try? outbox.head() {
                    // Newly the leader: on from the head (subscribers replay what came before).
                    sent = head
                    published.value.store(sent, ordering: .relaxed)
                }
                led = leads
                if !leads {
                    if stop { return }
                    _ = pushes.take()
                    _ = try? poller.poll(timeoutMilliseconds: 50)
                    wakeup.drain()
                    continue
                }
            }
            let now = monotonicNanos()
            // Rounded up: a wait rounded down to 0 would poll without pause until the beat.
            let wait = nextHeartbeat > now ? Int((nextHeartbeat - now + 999_999) / 1_000_000) : 0
            let ready = (try? poller.poll(timeoutMilliseconds: stop ? 0 : wait)) ?? [false]
            if ready[0] { wakeup.drain() }
            publishCommitted()
            let (waiting, dropped) = pushes.take()
            // PUB never blocks, for pushes too: delivery is at most once.
            for push in waiting { _ = try? socket.send(push.frames, dontWait: true) }
            if dropped > 0 { logger.warn("dropped pushes: more were waiting than the relay keeps", ["dropped": dropped]) }
            if monotonicNanos() >= nextHeartbeat || stop {
                let beat = EnvelopeCoding.event(
                    seq: sent, type: SystemEvents.heartbeat, ts: Logger.timestamp(), epoch: epoch,
                    body: Data("{\"head\":\(sent)}".utf8))
                _ = try? socket.send([Data(SystemEvents.heartbeat.utf8), beat], dontWait: true)
                nextHeartbeat = monotonicNanos() + UInt64(heartbeat) * 1_000_000
            }
            if monotonicNanos() >= nextTrim {
                nextTrim = monotonicNanos() + trimInterval
                do {
                    let trimmed = try outbox.trim(keepingLast: retention)
                    if trimmed > 0 { logger.debug("trimmed outbox", ["rows": trimmed]) }
                } catch {
                    logger.warn("outbox trim failed", ["error": error])
                }
            }
            if stop {
                guard leading == nil else { return }
                do { try outbox.endRun() } catch { logger.warn("could not mark the outbox's run ended", ["error": error]) }
                return
            }
        }
    }
}

/// The relay's published head, shared with the threads that report it.
final class PublishedHead: Sendable {
    let value = Atomic<Int64>(0)
}
