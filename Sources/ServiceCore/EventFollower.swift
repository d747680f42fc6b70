import Bus
import Foundation
import Synchronization

/// Why an `EventFollower` may have missed events: after any of these, forget everything
/// learned from the publisher's events (a cache of what they invalidate).
public enum EventGap: Sendable, Equatable, CustomStringConvertible {
    /// The first message since the follower started (the publisher's epoch and seq):
    /// what was published before it, while the follower was connecting, is unknown.
    case started(epoch: String, seq: Int64)
    /// An event came with `received` where `expected` was next: the ones between were lost.
    case skipped(expected: Int64, received: Int64)
    /// A heartbeat says the publisher is at `head`, beyond the last event received (`seq`).
    case behind(seq: Int64, head: Int64)
    /// An event or heartbeat is at `received`, before the last seq received (`seq`), in the
    /// same epoch: the publisher's history went back (a database restored from a copy).
    case rewound(seq: Int64, received: Int64)
    /// The publisher's epoch changed: a new outbox, whose sequence started over.
    case newEpoch(String)
    /// Nothing, not even a heartbeat, arrived for this many milliseconds: the publisher may
    /// be gone or unreachable, and events may be lost meanwhile. Reported once per silence.
    case silence(milliseconds: Int)

    public var description: String {
        switch self {
        case .started(let epoch, let seq): "started at \(epoch) \(seq)"
        case .skipped(let expected, let received): "skipped from \(expected) to \(received)"
        case .behind(let seq, let head): "behind: at \(seq), head \(head)"
        case .rewound(let seq, let received): "rewound from \(seq) to \(received)"
        case .newEpoch(let epoch): "new epoch \(epoch)"
        case .silence(let milliseconds): "silent for \(milliseconds) ms"
        }
    }
}

/// What an `EventFollower` follows and how long a silence it tolerates.
public struct EventFollowerOptions: Sendable {
    /// The publisher's name (`social`), for logs and the thread's name.
    public var source: String
    /// The publisher's event (PUB) endpoints.
    public var publishEndpoints: [String]
    /// Prefixes of the event types passed to `onEvent` (`social.session.`); empty: every type.
    /// The follower still receives every event, to see every seq.
    public var topics: [String]
    /// A silence this long (no event, no heartbeat) is a gap. Several publisher heartbeat
    /// intervals (`heartbeat_ms`, 1000 by default): 3000.
    public var silenceMilliseconds = 3_000

    public init(source: String, publishEndpoints: [String], topics: [String] = []) {
        self.source = source
        self.publishEndpoints = publishEndpoints
        self.topics = topics
    }
}

/// Where an `EventFollower` is, for tests and `sys.stats`.
public struct EventFollowerStatus: Sendable, Equatable, Codable {
    public var source: String
    /// The publisher's epoch, once a message came.
    public var epoch: String?
    /// The last seq received (event or heartbeat head).
    public var seq: Int64 = 0
    /// Whether a message came within the silence limit since the last gap: false at start and while silent.
    public var following = false
    /// Events passed to `onEvent`.
    public var delivered = 0
    /// Gaps reported to `onGap`.
    public var gaps = 0
    /// The last gap, as text.
    public var lastGap: String?

    enum CodingKeys: String, CodingKey {
        case source, epoch, seq, following, delivered, gaps
        case lastGap = "last_gap"
    }
}

/// Follows a publisher's events in memory only, for a subscriber that keeps nothing durable:
/// the gateway, which forgets cached token validations when social says a session ended or
/// a role changed.
///
/// It connects a SUB socket to the publisher's PUB endpoints (subscribed to everything, so
/// it sees every seq and every `sys.heartbeat`), calls `onEvent` for each event whose type
/// starts with one of the topics, and keeps the last epoch and seq in memory. It never
/// replays and never snapshots: whenever it may have missed something it calls `onGap`
/// (see `EventGap`), which means "forget everything cached". An event that comes with a gap
/// is still delivered, after `onGap`.
///
/// The socket belongs to the follower's own thread; `onEvent` and `onGap` run on that thread,
/// one at a time, in the order of the stream, and should return quickly (a slow one makes the
/// socket drop messages past its high-water mark, which then shows as a gap).
public final class EventFollower: Sendable {
    private let stopping = StopFlag()
    private let wakeup: Wakeup
    private let state: FollowerStatusCell
    private let thread: WorkerThread

    /// Connects and starts the follower's thread; throws when the socket cannot be made or an
    /// endpoint is malformed (connecting to a publisher that is not there yet is fine).
    public init(context: ZMQContext, options: EventFollowerOptions, logger: Logger,
                onEvent: @escaping @Sendable (ReceivedEvent) -> Void,
                onGap: @escaping @Sendable (EventGap) -> Void) throws {
        let wakeup = try Wakeup()
        self.wakeup = wakeup
        let state = FollowerStatusCell(EventFollowerStatus(source: options.source))
        self.state = state
        let startup = StartupReport()
        let stopping = self.stopping
        thread = WorkerThread(name: "\(logger.component)-follow-\(options.source)") {
            EventFollower.run(context: context, options: options, logger: logger, wakeup: wakeup, stopping: stopping,
                              status: state, onEvent: onEvent, onGap: onGap, startup: startup)
        }
        if case .failure(let error) = startup.wait() {
            thread.join()
            throw error
        }
    }

    /// Where the follower is.
    public var status: EventFollowerStatus { state.value }

    /// Stops the thread and closes its socket; returns once the thread has finished. No
    /// callback runs after it returns.
    public func stop() {
        stopping.set()
        wakeup.signal()
        thread.join()
    }

    deinit { stop() }

    private static func run(context: ZMQContext, options: EventFollowerOptions, logger: Logger, wakeup: Wakeup, stopping: StopFlag,
                            status: FollowerStatusCell, onEvent: @Sendable (ReceivedEvent) -> Void,
                            onGap: @Sendable (EventGap) -> Void, startup: StartupReport) {
        let socket: Socket
        do {
            socket = try Socket(context, .sub)
            try socket.setReceiveHighWaterMark(100_000)
            try socket.setReconnectInterval(milliseconds: 100, maximum: 1_000)
            try socket.subscribe("")
            for endpoint in options.publishEndpoints { try socket.connect(endpoint) }
        } catch {
            startup.failed(error)
            return
        }
        startup.succeeded(nil)
        logger.info("following", ["source": options.source, "endpoints": options.publishEndpoints.joined(separator: ",")])

        var tracker = EventStreamTracker(topics: options.topics)
        let silence = UInt64(max(1, options.silenceMilliseconds)) * 1_000_000
        var lastHeard = monotonicNanos()
        var silent = false
        func gap(_ gap: EventGap) {
            logger.info("events may be missing; forgetting", ["source": options.source, "gap": gap])
            status.update { s in
                s.gaps += 1
                s.lastGap = gap.description
            }
            onGap(gap)
        }

        var poller = Poller([.socket(socket), .descriptor(wakeup.descriptor)])
        while !stopping.isSet {
            let now = monotonicNanos()
            let deadline = lastHeard + silence
            let wait = silent ? 1_000 : Int(min(1_000, (deadline > now ? deadline - now : 0) / 1_000_000))
            let ready = (try? poller.poll(timeoutMilliseconds: wait)) ?? [false, false]
            if ready.count > 1, ready[1] { wakeup.drain() }
            if stopping.isSet { break }
            var heard = false
            if ready.first == true {
                for _ in 0..<1_000 {
                    guard let frames = try? socket.receive(dontWait: true) else { break }
                    guard frames.count == 2, let event = try? ReceivedEvent(envelope: frames[1]) else {
                        logger.warn("dropped a malformed event", ["source": options.source])
                        continue
                    }
                    heard = true
                    let step = tracker.receive(event)
                    if let found = step.gap { gap(found) }
                    status.update { s in
                        s.epoch = tracker.epoch
                        s.seq = tracker.seq
                        s.following = true
                        if step.deliver { s.delivered += 1 }
                    }
                    if step.deliver { onEvent(event) }
                    if stopping.isSet { break }
                }
            }
            if heard {
                lastHeard = monotonicNanos()
                silent = false
            } else if !silent, monotonicNanos() >= lastHeard + silence {
                silent = true
                status.update { $0.following = false }
                gap(.silence(milliseconds: options.silenceMilliseconds))
            }
        }
        logger.info("stopped following", ["source": options.source])
    }
}

/// The status the follower thread writes and readers copy.
final class FollowerStatusCell: Sendable {
    private let state: Mutex<EventFollowerStatus>
    init(_ initial: EventFollowerStatus) { state = Mutex(initial) }
    var value: EventFollowerStatus { state.withLock { $0 } }
    func update(_ change: (inout EventFollowerStatus) -> Void) { state.withLock { change(&$0) } }
}

/// The follower's view of one publisher's stream: the last epoch and seq, and what each
/// message says about what may have been missed. No sockets, so it is tested on its own.
struct EventStreamTracker {
    /// What one message means.
    struct Step: Equatable {
        /// Report this before anything else.
        var gap: EventGap?
        /// Pass the event to `onEvent`.
        var deliver: Bool
    }

    let topics: [String]
    private(set) var epoch: String?
    private(set) var seq: Int64 = 0

    init(topics: [String]) { self.topics = topics }

    /// Takes one message (an event or a heartbeat) and moves to its position.
    mutating func receive(_ event: ReceivedEvent) -> Step {
        let header = event.header
        let heartbeat = header.type == "sys.heartbeat"
        let wanted = !heartbeat && (topics.isEmpty || topics.contains { header.type.hasPrefix($0) })
        defer {
            epoch = header.epoch
            seq = header.seq
        }
        guard let epoch else { return Step(gap: .started(epoch: header.epoch, seq: header.seq), deliver: wanted) }
        if header.epoch != epoch { return Step(gap: .newEpoch(header.epoch), deliver: wanted) }
        if heartbeat {
            if header.seq > seq { return Step(gap: .behind(seq: seq, head: header.seq), deliver: false) }
            if header.seq < seq { return Step(gap: .rewound(seq: seq, received: header.seq), deliver: false) }
            return Step(gap: nil, deliver: false)
        }
        if header.seq == seq + 1 { return Step(gap: nil, deliver: wanted) }
        if header.seq > seq + 1 { return Step(gap: .skipped(expected: seq + 1, received: header.seq), deliver: wanted) }
        return Step(gap: .rewound(seq: seq, received: header.seq), deliver: wanted)
    }
}
