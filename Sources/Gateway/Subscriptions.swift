import Bus
import Contracts
import Foundation

/// Which pushes a connection hears: whose (the user its token signed in when it subscribed),
/// on which topics and patterns, the subscriptions waiting for their token's check, and when
/// the token is next checked again. The session asks the dispatcher for each check; this
/// keeps the rest.
final class Subscriptions {
    /// Tells the gateway's `PushRegistry` the topics on which this connection hears `user`'s
    /// pushes (none: it hears nothing); false when the registry refuses (too many of the
    /// user's connections listen already).
    typealias Listen = (_ user: Int64, _ interests: Interests) -> Bool

    /// Topics one connection may hear at once.
    static let maxTopics = 32
    /// How often a listening connection checks its token.
    static let recheckInterval: UInt64 = 60_000_000_000
    /// The methods the session answers itself: `subscribe`, `unsubscribe` and RESP's pattern forms.
    static let methods: Set<String> = [Methods.Gateway.subscribe.name, Methods.Gateway.unsubscribe.name, "psubscribe", "punsubscribe"]
    /// The params of RESP's `psubscribe` and `punsubscribe`: `{"patterns":[…]}`.
    static let patternsShape = Schema.object(ObjectSchema([.init("patterns", .array(of: .string(StringBounds()), items: CountBounds()), required: false)]))

    private let listen: Listen
    /// Whose pushes the connection hears, and the token it subscribed with.
    private(set) var listener: (user: Int64, token: String)?
    private(set) var interests = Interests()
    /// The topics or patterns of `subscribe` and `psubscribe` calls waiting for their token's check, by slot.
    private var waiting: [Int: (names: [String], patterns: Bool)] = [:]
    /// When a listening connection next checks its token again (a session can end with no
    /// event the gateway hears of: it expires, or the accounts service's events are not followed).
    private(set) var recheckAt: UInt64?

    init(listen: @escaping Listen) { self.listen = listen }

    /// What a (un)subscription asks for.
    enum Request {
        /// Answered at once (an unsubscription, or a refusal).
        case answered(Outcome)
        /// A subscription, once the token is checked (`checked`).
        case needsCheck
    }

    /// Reads `subscribe`, `unsubscribe` (topics) or `psubscribe`, `punsubscribe` (patterns,
    /// RESP's only) in `slot`: an unsubscription takes effect at once; a subscription waits for
    /// its token's check.
    func ask(_ slot: Int, _ call: Call) -> Request {
        let patterns = call.method.hasPrefix("p")
        let field = patterns ? "patterns" : "topics"
        let named: [String]
        switch Subscriptions.names(call.params, patterns: patterns) {
        case .success(let list): named = list
        case .failure(let error): return .answered(.failure(error))
        }
        if call.method.hasSuffix("unsubscribe") { return .answered(.subscription(stop(named, patterns: patterns))) }
        guard !named.isEmpty else { return .answered(.failure(ServiceError.invalid(field, "name at least one"))) }
        var after = interests
        after.add(named, patterns: patterns)
        guard after.count <= Subscriptions.maxTopics else {
            return .answered(.failure(ServiceError.invalid(field, "at most \(Subscriptions.maxTopics) topics and patterns per connection")))
        }
        waiting[slot] = (named, patterns)
        return .needsCheck
    }

    /// The answer of `slot`'s call, with the session change it made: a subscription waiting in
    /// that slot starts when its token was checked as the one the connection holds (`token`).
    /// `stoppedListening`: it heard another user's pushes before, and no longer does.
    func answered(
        _ slot: Int, _ outcome: Outcome, _ change: SessionChange?, token: String?, now: UInt64
    ) -> (outcome: Outcome, stoppedListening: Bool) {
        let named = waiting.removeValue(forKey: slot)
        guard case .subscribed(let user, let checked)? = change else { return (outcome, false) }
        guard let named, checked == token else {
            return (.failure(ServiceError(.unauthenticated, "signed out before the subscription took; sign in and subscribe again")), false)
        }
        let stopped = listener.map { $0.user != user } ?? false
        if stopped { stopAll() }
        return (start(named.names, patterns: named.patterns, as: user, token: checked, now: now), stopped)
    }

    /// The topics (or patterns) a (un)subscription names (`{"topics":[...]}`,
    /// `{"patterns":[...]}`; none when absent), each checked, at most `maxTopics` of them,
    /// repeats kept (each is confirmed, as Redis does).
    static func names(_ params: Data, patterns: Bool) -> Result<[String], ServiceError> {
        let field = patterns ? "patterns" : "topics"
        // Held to the declared shape first: a misspelt `topic` must not read as "all topics".
        do {
            try SchemaCheck.check(params, against: patterns ? patternsShape : (Dispatcher.builtInShapes[Methods.Gateway.unsubscribe.name] ?? .any))
        } catch {
            return .failure(error)
        }
        guard let range = JSONSpan.member(field, in: params) else { return .success([]) }
        guard let elements = JSONSpan.elements(at: range, in: params) else { return .failure(ServiceError.invalid(field, "must be an array of names")) }
        guard elements.count <= maxTopics else { return .failure(ServiceError.invalid(field, "at most \(maxTopics) topics and patterns per connection")) }
        var names: [String] = []
        for element in elements {
            guard let name = JSONSpan.string(at: element, in: params), patterns ? TopicPattern.isValid(name) : Push.isValidTopic(name) else {
                return .failure(
                    ServiceError.invalid(
                        field,
                        patterns
                            ? "a pattern is 1 to \(Push.maxTopicBytes) bytes of a-z, 0-9, '.', '_', '-' and the glob characters * ? [ ] ^ \\"
                            : "a topic is 1 to \(Push.maxTopicBytes) bytes of a-z, 0-9, '.', '_' and '-', starting with a letter"))
            }
            names.append(name)
        }
        return .success(names)
    }

    private func start(_ named: [String], patterns: Bool, as user: Int64, token checked: String, now: UInt64) -> Outcome {
        var after = interests
        let counts = after.add(named, patterns: patterns)
        guard listen(user, after) else {
            return .failure(ServiceError(.tooLarge, "at most \(PushRegistry.maxConnectionsPerUser) connections of one user hear pushes on one gateway"))
        }
        listener = (user, checked)
        interests = after
        recheckAt = recheckAt ?? now + Subscriptions.recheckInterval
        return .subscription(
            SubscriptionChange(
                kind: patterns ? "psubscribe" : "subscribe", topics: named, counts: counts,
                all: interests.topics.sorted(), total: interests.count))
    }

    /// Stops hearing `named` topics or patterns (all of them, when none are named).
    private func stop(_ named: [String], patterns: Bool) -> SubscriptionChange {
        let dropped = named.isEmpty ? (patterns ? interests.patterns : interests.topics).sorted() : named
        let counts = interests.remove(dropped, patterns: patterns)
        if let listener {
            _ = listen(listener.user, interests)
            if interests.isEmpty {
                self.listener = nil
                recheckAt = nil
            }
        }
        return SubscriptionChange(
            kind: patterns ? "punsubscribe" : "unsubscribe", topics: dropped, counts: counts,
            all: interests.topics.sorted(), total: interests.count)
    }

    /// Hears nothing more (signed out or in as someone else, or the connection closed);
    /// false when it heard nothing.
    @discardableResult
    func stopAll() -> Bool {
        guard let listener else { return false }
        interests = Interests()
        _ = listen(listener.user, interests)
        self.listener = nil
        recheckAt = nil
        return true
    }

    /// Whether the token's check is due at `now` (then the next is set an interval on).
    func recheckDue(now: UInt64) -> Bool {
        guard let at = recheckAt, now >= at else { return false }
        recheckAt = now + Subscriptions.recheckInterval
        return true
    }

    /// The messages of `push` this connection hears, as Redis gives them: one by the topic's
    /// name (nil) if it is heard by name, and one for each pattern it matches; none if it is
    /// not `listener`'s.
    func messages(of push: Push) -> [String?] {
        guard listener?.user == push.userId else { return [] }
        var messages: [String?] = interests.topics.contains(push.topic) ? [nil] : []
        for pattern in interests.patterns.sorted() where TopicPattern.matches(pattern, push.topic) { messages.append(pattern) }
        return messages
    }
}
