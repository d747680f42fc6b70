import Bus
import Contracts
import Foundation
import Synchronization

/// Which connections of this gateway hear which user's pushes, and on which topics.
///
/// A session sets its entry when a subscription of its changes and removes it when it signs
/// out, signs in as someone else, or closes; the push receiver's thread looks a push's user
/// up and posts it to the inbox of each connection that subscribed to its topic.
final class PushRegistry: Sendable {
    private struct Subscriber {
        let inbox: LoopInbox
        var topics: Set<String>
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
    /// none removes it.
    func set(user: Int64, connection key: UInt64, inbox: LoopInbox, topics: Set<String>) {
        users.withLock { users in
            if topics.isEmpty {
                users[user]?.removeValue(forKey: key)
                if users[user]?.isEmpty == true { users.removeValue(forKey: user) }
            } else {
                users[user, default: [:]][key] = Subscriber(inbox: inbox, topics: topics)
            }
        }
    }

    /// Posts `push` to every connection of its user subscribed to its topic, but the one it
    /// names as its origin; how many.
    @discardableResult
    func deliver(_ push: Push) -> Int {
        let targets: [(LoopInbox, UInt64)] = users.withLock { users in
            (users[push.userId] ?? [:]).compactMap { key, subscriber in
                subscriber.topics.contains(push.topic) && push.origin != PushRegistry.origin(gatewayId, key) ? (subscriber.inbox, key) : nil
            }
        }
        for (inbox, key) in targets { inbox.post(.push(key: key, push)) }
        return targets.count
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
        try socket.setReceiveHighWaterMark(100_000)
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
