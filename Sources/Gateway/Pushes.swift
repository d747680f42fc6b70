import Bus
import Contracts
import Foundation
import Synchronization

/// Pushes posted to a connection's loop and not yet handed to its session: past
/// `ClientSession.maxQueuedPushes` more are dropped before they are posted, so a connection
/// whose loop falls behind (or whose client does not read) holds a bounded number.
final class PushBacklog: Sendable {
    private let count = Atomic<Int>(0)

    /// Takes a place for one more push; false when the backlog is full.
    func take() -> Bool {
        guard count.load(ordering: .relaxed) < ClientSession.maxQueuedPushes else { return false }
        count.add(1, ordering: .relaxed)
        return true
    }

    /// The loop handed one to its session.
    func release() { count.subtract(1, ordering: .relaxed) }
}

/// Which connections of this gateway hear which user's pushes, and on which topics.
///
/// A session sets its entry when a subscription of its changes and removes it when it signs
/// out, signs in as someone else, or closes; the push receiver's thread looks a push's user
/// up and posts it to the inbox of each connection that subscribed to its topic. A user's
/// connections that hear pushes are at most `maxConnectionsPerUser` on one gateway, so one
/// push costs a bounded amount of work.
final class PushRegistry: Sendable {
    /// Connections of one user that may hear pushes on one gateway.
    static let maxConnectionsPerUser = 16

    private struct Subscriber {
        let inbox: LoopInbox
        var topics: Set<String>
        let backlog = PushBacklog()
    }

    private let users = Mutex<[Int64: [UInt64: Subscriber]]>([:])
    /// This gateway's name in the origins of its connections.
    let gatewayId: String

    init(gatewayId: String) { self.gatewayId = gatewayId }

    /// A name for a gateway process, new at each start: 13 characters of base 36.
    static func newGatewayId() -> String {
        let id = String(UInt64.random(in: 0...UInt64.max), radix: 36)
        return String(repeating: "0", count: 13 - id.count) + id
    }

    /// How requests from connection `key` of gateway `gatewayId` name their origin (`auth.origin`).
    static func origin(_ gatewayId: String, _ key: UInt64) -> String { "\(gatewayId)/\(key)" }

    /// Connection `key` (served by the loop of `inbox`) hears `user`'s pushes on `topics`;
    /// none removes it. False, and nothing changed, when it would be more than
    /// `maxConnectionsPerUser` of that user.
    @discardableResult
    func set(user: Int64, connection key: UInt64, inbox: LoopInbox, topics: Set<String>) -> Bool {
        users.withLock { users in
            if topics.isEmpty {
                users[user]?.removeValue(forKey: key)
                if users[user]?.isEmpty == true { users.removeValue(forKey: user) }
            } else if users[user]?[key] != nil {
                users[user]?[key]?.topics = topics
            } else {
                guard (users[user]?.count ?? 0) < PushRegistry.maxConnectionsPerUser else { return false }
                users[user, default: [:]][key] = Subscriber(inbox: inbox, topics: topics)
            }
            return true
        }
    }

    /// Posts `push` to every connection of its user subscribed to its topic, but the one it
    /// names as its origin and those whose backlog is full; how many.
    @discardableResult
    func deliver(_ push: Push) -> Int {
        let targets: [(LoopInbox, UInt64, PushBacklog)] = users.withLock { users in
            (users[push.userId] ?? [:]).compactMap { key, subscriber in
                subscriber.topics.contains(push.topic) && push.origin != PushRegistry.origin(gatewayId, key) ? (subscriber.inbox, key, subscriber.backlog) : nil
            }
        }
        var posted = 0
        for (inbox, key, backlog) in targets where backlog.take() {
            inbox.post(.push(key: key, push, backlog))
            posted += 1
        }
        return posted
    }

    /// Has each connection that hears `user`'s pushes check its token again (the accounts
    /// service ended a session of theirs, or changed their role); all users' when nil.
    func recheck(user: Int64?) {
        let targets: [(LoopInbox, UInt64)] = users.withLock { users in
            users.filter { user == nil || $0.key == user }.values.flatMap { $0.map { ($0.value.inbox, $0.key) } }
        }
        for (inbox, key) in targets { inbox.post(.recheck(key: key)) }
    }

    /// Connections that hear some push.
    var count: Int { users.withLock { $0.values.reduce(0) { $0 + $1.count } } }
}

/// The thread that receives pushes from every service's event endpoints (only the `push.`
/// topics) and hands each to the registry. A push that breaks the contract is dropped, with a
/// log line at most once a second.
final class PushReceiver: Sendable {
    private let stopping = StopFlag()
    private let thread: WorkerThread

    /// The socket, moved once to the receiver's thread.
    private struct Owned: @unchecked Sendable { let socket: Socket }

    /// Subscribes to `push.` at `endpoints` (every peer's event endpoints).
    init(context: ZMQContext, endpoints: [String], registry: PushRegistry, logger: Logger) throws(ZMQError) {
        let socket = try Socket(context, .sub)
        // A burst waits here, bounded in count and in each message's size (a bigger one drops
        // the link to its sender, which reconnects): at most 10,000 of 68 KiB.
        try socket.setReceiveHighWaterMark(10_000)
        try socket.setMaxMessageSize(Int64(Push.maxEnvelopeBytes + 4_096))
        try socket.setReconnectInterval(milliseconds: 100, maximum: 1_000)
        try socket.setReceiveTimeout(milliseconds: 200)
        try socket.subscribe(Push.framePrefix)
        for endpoint in endpoints { try socket.connect(endpoint) }
        let owned = Owned(socket: socket), stopping = self.stopping
        thread = WorkerThread(name: "gateway-pushes") {
            var lastWarning: UInt64 = 0
            var dropped = 0
            while !stopping.isSet {
                let frames: [Data]
                do {
                    guard let received = try owned.socket.receive() else { continue }
                    frames = received
                } catch {
                    logger.error("push socket failed; pushes stop", ["error": error])
                    return
                }
                do throws(Push.Refusal) {
                    registry.deliver(try Push.read(frames))
                } catch {
                    dropped += 1
                    let now = monotonicNanos()
                    if now - lastWarning > 1_000_000_000 {
                        logger.warn("dropped a push that breaks the contract", ["reason": error.description, "dropped": dropped])
                        lastWarning = now
                    }
                }
            }
        }
    }

    /// Stops the thread (within 200 ms).
    func stop() {
        stopping.set()
        thread.join()
    }
}
