import Bus
import Contracts
import Foundation
import Synchronization

/// What a connection hears: topics by name, and patterns of topics (RESP's `PSUBSCRIBE`).
struct Interests: Equatable, Sendable {
    var topics: Set<String> = []
    var patterns: Set<String> = []

    var count: Int { topics.count + patterns.count }
    var isEmpty: Bool { topics.isEmpty && patterns.isEmpty }

    /// Whether a push on `topic` is heard: by name or by a pattern.
    func hears(_ topic: String) -> Bool { topics.contains(topic) || patterns.contains { TopicPattern.matches($0, topic) } }

    /// Adds `names` (topics, or patterns); the count after each.
    @discardableResult
    mutating func add(_ names: [String], patterns isPattern: Bool) -> [Int] {
        names.map { name in
            if isPattern { patterns.insert(name) } else { topics.insert(name) }
            return count
        }
    }

    /// Removes `names`; the count after each.
    mutating func remove(_ names: [String], patterns isPattern: Bool) -> [Int] {
        names.map { name in
            if isPattern { patterns.remove(name) } else { topics.remove(name) }
            return count
        }
    }
}

/// Redis's glob patterns of channels, for topics: `*` any bytes, `?` one, `[abc]`, `[a-z]`,
/// `[^a]` one of a set (or not), `\x` the byte x. Matched over bytes by dynamic programming, so
/// no pattern takes more than (pattern bytes × topic bytes) steps.
enum TopicPattern {
    /// 1 to `Push.maxTopicBytes` bytes of a topic's characters and the glob characters.
    static func isValid(_ pattern: String) -> Bool {
        let bytes = pattern.utf8
        return (1...Push.maxTopicBytes).contains(bytes.count)
            && bytes.allSatisfy {
                (0x61...0x7A).contains($0) || (0x30...0x39).contains($0) || Array("._-*?[]^\\".utf8).contains($0)
            }
    }

    private enum Token {
        case any, one
        case byte(UInt8)
        case set(Set<UInt8>, negated: Bool)

        func takes(_ byte: UInt8) -> Bool {
            switch self {
            case .any, .one: true
            case .byte(let b): b == byte
            case .set(let set, let negated): set.contains(byte) != negated
            }
        }
    }

    private static func tokens(_ pattern: [UInt8]) -> [Token] {
        var tokens: [Token] = []
        var i = 0
        while i < pattern.count {
            switch pattern[i] {
            case UInt8(ascii: "*"): tokens.append(.any)
            case UInt8(ascii: "?"): tokens.append(.one)
            case UInt8(ascii: "\\") where i + 1 < pattern.count:
                i += 1
                tokens.append(.byte(pattern[i]))
            case UInt8(ascii: "["):
                var j = i + 1
                let negated = j < pattern.count && pattern[j] == UInt8(ascii: "^")
                if negated { j += 1 }
                var set = Set<UInt8>()
                while j < pattern.count && pattern[j] != UInt8(ascii: "]") {
                    if pattern[j] == UInt8(ascii: "\\"), j + 1 < pattern.count {
                        j += 1
                        set.insert(pattern[j])
                    } else if j + 2 < pattern.count, pattern[j + 1] == UInt8(ascii: "-"), pattern[j + 2] != UInt8(ascii: "]") {
                        let (low, high) = (min(pattern[j], pattern[j + 2]), max(pattern[j], pattern[j + 2]))
                        set.formUnion(low...high)
                        j += 2
                    } else {
                        set.insert(pattern[j])
                    }
                    j += 1
                }
                tokens.append(.set(set, negated: negated))
                i = j  // at the `]`, or past the end when it never closed (Redis takes that as the end)
            default: tokens.append(.byte(pattern[i]))
            }
            i += 1
        }
        return tokens
    }

    /// Whether `topic` matches `pattern`.
    static func matches(_ pattern: String, _ topic: String) -> Bool {
        let tokens = tokens(Array(pattern.utf8))
        let text = Array(topic.utf8)
        // reach[j]: the first i tokens can match the first j bytes.
        var reach = [Bool](repeating: false, count: text.count + 1)
        reach[0] = true
        for token in tokens {
            var next = [Bool](repeating: false, count: text.count + 1)
            if case .any = token {
                var seen = false
                for j in 0...text.count {
                    seen = seen || reach[j]
                    next[j] = seen
                }
            } else {
                for j in 0..<text.count where reach[j] && token.takes(text[j]) { next[j + 1] = true }
            }
            reach = next
        }
        return reach[text.count]
    }
}

/// Pushes posted to a connection's loop and not yet handed to its session: past
/// `OutputBudget.maxQueuedPushes` more are dropped before they are posted, so a connection
/// whose loop falls behind (or whose client does not read) holds a bounded number.
final class PushBacklog: Sendable {
    private let count = Atomic<Int>(0)

    /// Takes a place for one more push; false when the backlog is full.
    func take() -> Bool {
        guard count.load(ordering: .relaxed) < OutputBudget.maxQueuedPushes else { return false }
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
        var interests: Interests
        let backlog = PushBacklog()
    }

    private let users = Mutex<[Int64: [UInt64: Subscriber]]>([:])
    private let counts = Mutex<(delivered: Int, dropped: Int)>((0, 0))
    /// Pushes posted to a subscribed connection, and those dropped because its backlog was
    /// full, since start (for the metrics port).
    var deliveries: (delivered: Int, dropped: Int) { counts.withLock { $0 } }
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

    /// Connection `key` (served by the loop of `inbox`) hears `user`'s pushes on what
    /// `interests` names; none removes it. False, and nothing changed, when it would be more
    /// than `maxConnectionsPerUser` of that user.
    @discardableResult
    func set(user: Int64, connection key: UInt64, inbox: LoopInbox, interests: Interests) -> Bool {
        users.withLock { users in
            if interests.isEmpty {
                users[user]?.removeValue(forKey: key)
                if users[user]?.isEmpty == true { users.removeValue(forKey: user) }
            } else if users[user]?[key] != nil {
                users[user]?[key]?.interests = interests
            } else {
                guard (users[user]?.count ?? 0) < PushRegistry.maxConnectionsPerUser else { return false }
                users[user, default: [:]][key] = Subscriber(inbox: inbox, interests: interests)
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
                subscriber.interests.hears(push.topic) && push.origin != PushRegistry.origin(gatewayId, key) ? (subscriber.inbox, key, subscriber.backlog) : nil
            }
        }
        var posted = 0
        for (inbox, key, backlog) in targets where backlog.take() {
            inbox.post(.push(key: key, push, backlog))
            posted += 1
        }
        counts.withLock {
            $0.delivered += posted
            $0.dropped += targets.count - posted
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

    /// Subscribes to `push.` at `endpoints` (every peer's event endpoints, each with its CURVE
    /// keys when the bus is secured).
    init(context: ZMQContext, endpoints: [(String, CurveClientKeys?)], registry: PushRegistry, logger: Logger) throws(ZMQError) {
        let socket = try Socket(context, .sub)
        // A burst waits here, bounded in count and in each message's size (a bigger one drops
        // the link to its sender, which reconnects): at most 10,000 of 68 KiB.
        try socket.setReceiveHighWaterMark(10_000)
        try socket.setMaxMessageSize(Int64(Push.maxEnvelopeBytes + 4_096))
        try socket.setReconnectInterval(milliseconds: 100, maximum: 1_000)
        // A link that died silently is noticed in seconds and dialled again (`watchForDeadLinks`).
        try socket.watchForDeadLinks()
        try socket.setReceiveTimeout(milliseconds: 200)
        try socket.subscribe(Push.framePrefix)
        // libzmq takes a connection's CURVE keys when it connects, so each publisher gets its own.
        for (endpoint, curve) in endpoints {
            if let curve { try socket.setCurveClient(curve) }
            try socket.connect(endpoint)
        }
        let owned = Owned(socket: socket)
        let stopping = self.stopping
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
