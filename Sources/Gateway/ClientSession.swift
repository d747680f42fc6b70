import Bus
import Contracts
import Foundation
import ServiceCore

/// One client connection's life as a state machine over bytes in, bytes out and the clock,
/// independent of how the socket is driven.
///
/// - The framing is fixed by the first byte that is not blank: `{` or `[` is JSON-RPC,
///   anything else RESP.
/// - Calls are dispatched as they are read (pipelining), except that those after a sign-in
///   or sign-out wait for its answer, so they run as whoever it leaves signed in.
/// - Backpressure, as Redis gives it: while `maxInFlight` replies are owed, or unsent
///   output and the replies owed (estimated from the sizes of recent ones) would pass
///   `maxPendingOutputBytes`, or the client's address is over its request rate, the session
///   reads no more requests and, once a little input is buffered, asks for no more bytes,
///   so the kernel's TCP window slows the client. Nothing is refused for it, and a
///   connection's memory stays near that bound whatever its replies weigh.
/// - Time: a connection must send its first request byte within `firstByteTimeout`, finish
///   a request it started within `requestTimeout`, and is closed after `idleTimeout`
///   without requests or replies (blank lines do not count); a client whose unread replies
///   stop the reading (the output bound above, not the window) and that takes no byte for
///   5 s is disconnected.
final class ClientSession {
    /// Why a session ended before the client closed it.
    enum Ending: String, Equatable {
        case firstByteTimeout = "no request byte within the first-byte timeout"
        case requestTimeout = "request not completed within the request timeout"
        case idle = "idle"
        case slowReader = "client does not read its replies"
        case abandoned = "client closed after notifications that get no reply"
        case unreadPushes = "client does not read its pushes"
    }

    /// Starts a call: returns its outcome when there is one at once, else calls `completion`
    /// later (on any thread), exactly once.
    typealias Dispatch = (_ call: Call, _ token: String?, _ completion: @escaping @Sendable (Outcome, SessionChange?) -> Void) -> Outcome?
    /// Hands an outcome from any thread back to the thread that runs the session (its event loop's).
    typealias Deliver = @Sendable (_ slot: Int, _ outcome: Outcome, _ change: SessionChange?) -> Void
    /// Counts requests read against the client address's rate: nanoseconds to pause reading.
    typealias Charge = (_ requests: Int) -> UInt64
    /// Tells the gateway's `PushRegistry` the topics on which this connection hears `user`'s
    /// pushes (none: it hears nothing); false when the registry refuses (too many of the
    /// user's connections listen already).
    typealias Listen = (_ user: Int64, _ interests: Interests) -> Bool

    /// Input kept buffered, beyond one request, while no more requests may be read.
    static let readAhead = 64 << 10
    /// How long a client whose unread replies stop the reading (they reach `maxPendingOutputBytes`
    /// with what the calls owed are likely to add) may go without taking a byte.
    static let slowReaderGrace: UInt64 = 5_000_000_000
    /// What a reply is assumed to weigh before any was written: a new connection starts with
    /// a few calls in flight (16 at the default bound) and widens to the window as small
    /// replies come back.
    static let firstReplyEstimate = 64 << 10
    /// Capacity of an emptied input or output buffer that is kept for the next bytes; a larger
    /// one is freed.
    static let keptBuffer = 4 << 10
    /// Topics one connection may hear at once.
    static let maxTopics = 32
    /// Pushes kept for a client whose unsent output is at its bound; past this, or past that
    /// bound in bytes, it is disconnected (`unreadPushes`).
    static let maxQueuedPushes = 1_024

    private let limits: GatewayLimits
    private let framingLimits: FramingLimits
    private let dispatch: Dispatch
    private let deliver: Deliver
    private let charge: Charge
    private let listen: Listen

    private var framing: (any Framing)?
    private var input: [UInt8] = []
    private var inputStart = 0
    private(set) var output: [UInt8] = []
    private(set) var outputSent = 0
    /// The client will send nothing more.
    private var peerClosed = false
    /// No more requests are read: QUIT, a protocol error, or the gateway stopping.
    private var closing = false
    /// Whether the last read used every complete request there was (so the input left is a fragment).
    private var inputExhausted = true
    /// When the client's end of stream arrived (perhaps with unread requests before it), and
    /// whether a reply was written since.
    private var endSeenAt: UInt64?
    private var wroteSinceEnd = false

    /// The token this connection signed in with (auth.login, auth.resume, AUTH), if any.
    private var token: String?
    /// The slot of a sign-in or sign-out under way: calls after it wait for its answer.
    private var sessionSlot: Int?
    private var held: [(slot: Int, call: Call)] = []

    /// Whose pushes the connection hears (the user its token signed in when it subscribed), on which topics.
    private var listener: (user: Int64, token: String)?
    private(set) var interests = Interests()
    /// The topics the connection hears by name.
    var topics: Set<String> { interests.topics }
    /// The topics or patterns of `subscribe` and `psubscribe` calls waiting for their token's check.
    private var subscribing: [Int: (names: [String], patterns: Bool)] = [:]
    /// Pushes that did not fit under the output bound, oldest first, with their coalescing keys.
    private var queuedPushes: [(key: String?, bytes: [UInt8])] = []
    private var queuedPushBytes = 0
    /// More pushes came than a client that does not read may be kept.
    private var pushesOverflowed = false
    /// When a listening connection next checks its token again (a session can end with no
    /// event the gateway hears of: it expires, or the accounts service's events are not followed).
    private var recheckAt: UInt64?
    /// How often a listening connection checks its token.
    static let recheckInterval: UInt64 = 60_000_000_000

    private let openedAt: UInt64
    private var lastActivity: UInt64
    private var lastWrite: UInt64
    /// When the request now partly read began to arrive.
    private var partialSince: UInt64?
    /// Reading pauses until then: the address is over its request rate.
    private var pausedUntil: UInt64 = 0
    /// Requests read and not yet counted against the address's rate, and when it was last told:
    /// the shared count is told every 64 requests or 10 ms, not for each one.
    private var uncharged = 0
    private var lastCharged: UInt64 = 0
    /// Recent replies' average size per call (a moving average), to guess what the calls owed will add.
    private var replyEstimate = ClientSession.firstReplyEstimate
    /// Calls answered since bytes were last written for them (a batch's answers come out together).
    private var answeredUnwritten = 0

    init(
        limits: GatewayLimits, framing: FramingLimits, now: UInt64, dispatch: @escaping Dispatch, deliver: @escaping Deliver,
        charge: @escaping Charge, listen: @escaping Listen = { _, _ in true }
    ) {
        self.limits = limits
        self.framingLimits = framing
        self.dispatch = dispatch
        self.deliver = deliver
        self.charge = charge
        self.listen = listen
        openedAt = now
        lastActivity = now
        lastWrite = now
    }

    // MARK: Driving

    /// Bytes from the client.
    func receive(_ bytes: some Collection<UInt8>, now: UInt64) {
        if inputStart == input.count {
            // Only a small buffer is kept between reads: thousands of idle connections hold none.
            input.removeAll(keepingCapacity: input.capacity <= ClientSession.keptBuffer)
            inputStart = 0
        }
        input.append(contentsOf: bytes)
        process(now: now)
    }

    /// The client half-closed: it sends nothing more, but still reads.
    func receiveEnd(now: UInt64) {
        peerClosed = true
        endSeenAt = endSeenAt ?? now
        process(now: now)
    }

    /// The client's end of stream has arrived, behind input not read yet.
    func endArrived(now: UInt64) { endSeenAt = endSeenAt ?? now }

    /// Whether the end of stream is known to have arrived.
    var endKnown: Bool { endSeenAt != nil }

    /// The outcome of a call, back on the session's thread.
    func complete(_ slot: Int, _ outcome: Outcome, _ change: SessionChange?, now: UInt64) {
        if slot == ClientSession.recheckSlot {
            if case .signedOut(let oldToken)? = change, token == oldToken {
                token = nil
                stopListening()
                closing = true
            }
            return
        }
        var outcome = outcome
        let named = subscribing.removeValue(forKey: slot)
        // Calls sent after this answer carry the identity it leaves; pushes for whoever it
        // leaves signed in need a subscription of their own.
        switch change {
        case .signedIn(let newToken)?:
            token = newToken
            stopListening()
        case .signedOut(let oldToken)?:
            if token == oldToken {
                token = nil
                stopListening()
            }
        case .subscribed(let user, let checked)?:
            if let named, checked == token {
                outcome = startListening(named.names, patterns: named.patterns, as: user, token: checked, now: now)
            } else {
                outcome = .failure(ServiceError(.unauthenticated, "signed out before the subscription took; sign in and subscribe again"))
            }
        case nil: break
        }
        let reply = framing?.answer(slot, outcome) ?? []
        answeredUnwritten += 1
        if !reply.isEmpty {
            replyEstimate = max(64, (replyEstimate * 7 + reply.count / answeredUnwritten) / 8)
            answeredUnwritten = 0
        }
        appendOutput(reply)
        if sessionSlot == slot {
            // The session is settled: what waited for it goes now, in order, until another sign-in.
            sessionSlot = nil
            while sessionSlot == nil, !held.isEmpty {
                let next = held.removeFirst()
                run(next.slot, next.call)
            }
        }
        process(now: now)
    }

    /// The gateway is stopping: read no more requests, answer those in flight.
    func stop() { closing = true }

    /// The connection closed: it hears no more pushes.
    func closed() { stopListening() }

    /// The slot under which `recheck`'s answer comes back: no request's, and answered to no one.
    static let recheckSlot = -1

    /// Checks again that the token this connection listens with is valid (a session of its
    /// user ended elsewhere). If it is not, the connection is signed out, hears no more
    /// pushes and closes once its replies are written: a subscriber learns it must sign in
    /// again. If the accounts service cannot say, it goes on listening.
    func recheck() {
        guard let listener, token == listener.token else { return }
        let deliver = self.deliver
        if let immediate = dispatch(Call(method: Methods.Gateway.subscribe.name, params: Data("{}".utf8)), token, { deliver(ClientSession.recheckSlot, $0, $1) }) {
            complete(ClientSession.recheckSlot, immediate, nil, now: lastActivity)
        }
    }

    // MARK: Pushes

    /// A push for the user this connection listens for: written between whole replies, or kept
    /// (the latest of each coalescing key only) while the unsent output is at its bound.
    func push(_ push: Push) {
        guard listener?.user == push.userId, !pushesOverflowed, let framing else { return }
        // As Redis: a message if the topic is heard by name, and one for each pattern it matches.
        var bytes = interests.topics.contains(push.topic) ? framing.push(push, pattern: nil) : []
        for pattern in interests.patterns.sorted() where TopicPattern.matches(pattern, push.topic) {
            bytes += framing.push(push, pattern: pattern)
        }
        guard !bytes.isEmpty else { return }
        if queuedPushes.isEmpty && pendingOutput + bytes.count <= limits.maxPendingOutputBytes {
            appendOutput(bytes)
            return
        }
        // A key coalesces pushes of its own topic only.
        let key = push.coalesce.map { push.topic + " " + $0 }
        if let key, let index = queuedPushes.firstIndex(where: { $0.key == key }) {
            queuedPushBytes -= queuedPushes[index].bytes.count
            queuedPushes.remove(at: index)
        }
        queuedPushes.append((key, bytes))
        queuedPushBytes += bytes.count
        if queuedPushes.count > ClientSession.maxQueuedPushes || queuedPushBytes > limits.maxPendingOutputBytes {
            pushesOverflowed = true
            queuedPushes = []
            queuedPushBytes = 0
        }
    }

    /// Queued pushes that now fit under the output bound go out, oldest first.
    private func releasePushes() {
        var taken = 0
        while taken < queuedPushes.count, pendingOutput + queuedPushes[taken].bytes.count <= limits.maxPendingOutputBytes {
            appendOutput(queuedPushes[taken].bytes)
            queuedPushBytes -= queuedPushes[taken].bytes.count
            taken += 1
        }
        queuedPushes.removeFirst(taken)
    }

    /// The params of RESP's `psubscribe` and `punsubscribe`: `{"patterns":[…]}`.
    static let patternsShape = Schema.object(ObjectSchema([.init("patterns", .array(of: .string(StringBounds()), items: CountBounds()), required: false)]))

    /// The methods the session answers itself: `subscribe`, `unsubscribe` and RESP's pattern forms.
    static let subscriptionMethods: Set<String> = [Methods.Gateway.subscribe.name, Methods.Gateway.unsubscribe.name, "psubscribe", "punsubscribe"]

    /// `subscribe`, `unsubscribe` (topics) and `psubscribe`, `punsubscribe` (patterns, RESP's
    /// only), which the session answers itself once it knows who is signed in (a subscription
    /// goes through the dispatcher, which checks the token).
    private func subscription(_ slot: Int, _ call: Call) {
        let patterns = call.method.hasPrefix("p")
        let field = patterns ? "patterns" : "topics"
        let named: [String]
        switch ClientSession.names(call.params, patterns: patterns) {
        case .success(let list): named = list
        case .failure(let error):
            complete(slot, .failure(error), nil, now: lastActivity)
            return
        }
        if call.method.hasSuffix("unsubscribe") {
            complete(slot, .subscription(stopListening(to: named, patterns: patterns)), nil, now: lastActivity)
            return
        }
        guard !named.isEmpty else {
            complete(slot, .failure(ServiceError.invalid(field, "name at least one")), nil, now: lastActivity)
            return
        }
        var after = interests
        after.add(named, patterns: patterns)
        guard after.count <= ClientSession.maxTopics else {
            complete(slot, .failure(ServiceError.invalid(field, "at most \(ClientSession.maxTopics) topics and patterns per connection")), nil, now: lastActivity)
            return
        }
        subscribing[slot] = (named, patterns)
        // Calls after it wait for its answer, as after a sign-in: subscriptions change in the
        // order they were asked for, each counted against what the one before left.
        sessionSlot = slot
        let deliver = self.deliver
        if let immediate = dispatch(Call(method: Methods.Gateway.subscribe.name, params: Data("{}".utf8)), token, { deliver(slot, $0, $1) }) {
            complete(slot, immediate, nil, now: lastActivity)
        }
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

    private func startListening(_ named: [String], patterns: Bool, as user: Int64, token checked: String, now: UInt64) -> Outcome {
        if listener?.user != user { stopListening() }
        var after = interests
        let counts = after.add(named, patterns: patterns)
        guard listen(user, after) else {
            return .failure(ServiceError(.tooLarge, "at most \(PushRegistry.maxConnectionsPerUser) connections of one user hear pushes on one gateway"))
        }
        listener = (user, checked)
        interests = after
        recheckAt = recheckAt ?? now + ClientSession.recheckInterval
        return .subscription(
            SubscriptionChange(
                kind: patterns ? "psubscribe" : "subscribe", topics: named, counts: counts,
                all: interests.topics.sorted(), total: interests.count))
    }

    /// Stops hearing `named` topics or patterns (all of them, when none are named).
    private func stopListening(to named: [String], patterns: Bool) -> SubscriptionChange {
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

    private func stopListening() {
        guard listener != nil else { return }
        interests = Interests()
        if let listener { _ = listen(listener.user, interests) }
        listener = nil
        recheckAt = nil
        queuedPushes = []
        queuedPushBytes = 0
    }

    /// The socket took `count` bytes of `output` from `outputSent`.
    func wrote(_ count: Int, now: UInt64) {
        guard count > 0 else { return }
        outputSent += count
        lastWrite = now
        if endSeenAt != nil { wroteSinceEnd = true }
        lastActivity = now
        if !queuedPushes.isEmpty { releasePushes() }
        if outputSent == output.count {
            // Give a buffer back rather than keep it for the life of the connection.
            output.removeAll(keepingCapacity: output.capacity <= ClientSession.keptBuffer)
            outputSent = 0
        } else if outputSent > 1 << 20 {
            output.removeFirst(outputSent)
            outputSent = 0
        }
        process(now: now)
    }

    // MARK: State

    /// Unsent output.
    var pendingOutput: Int { output.count - outputSent }

    /// Whether the socket should be read: not after the client half-closed or while closing,
    /// and not while enough input waits for room to be read.
    func wantsInput(now: UInt64) -> Bool {
        guard !peerClosed && !closing else { return false }
        let buffered = input.count - inputStart
        return buffered < (room(now: now) > 0 ? framingLimits.maxRequestBytes + ClientSession.readAhead : ClientSession.readAhead)
    }

    /// Whether the session is over: nothing more will be read and nothing is owed or unsent.
    var isFinished: Bool {
        guard closing || (peerClosed && inputExhausted) else { return false }
        return (framing?.outstanding ?? 0) == 0 && pendingOutput == 0
    }

    /// A limit of time the session has crossed, if any.
    func expired(now: UInt64) -> Ending? {
        func past(_ since: UInt64, _ milliseconds: Int) -> Bool { now > since && now - since > UInt64(milliseconds) * 1_000_000 }
        if pushesOverflowed { return .unreadPushes }
        if framing == nil && !peerClosed && past(openedAt, limits.firstByteTimeoutMilliseconds) { return .firstByteTimeout }
        if let since = partialSince, past(since, limits.requestTimeoutMilliseconds) { return .requestTimeout }
        if pendingOutput > 0 && readingWaitsForClient && now > lastWrite && now - lastWrite > ClientSession.slowReaderGrace { return .slowReader }
        if pendingOutput > 0 && past(lastWrite, limits.idleTimeoutMilliseconds) { return .slowReader }
        // A client that closed its side may be gone for good: with no reply to write there is no
        // way to know, so requests that answer nothing (notifications) run for a while only.
        if let end = endSeenAt, !wroteSinceEnd, past(end, limits.requestTimeoutMilliseconds) { return .abandoned }
        // A connection that waits for pushes is not idle.
        if (framing?.outstanding ?? 0) == 0 && pendingOutput == 0 && interests.isEmpty && past(lastActivity, limits.idleTimeoutMilliseconds) { return .idle }
        return nil
    }

    /// The earliest time at which `expired` or `tick` may change their answer with no other
    /// event (a timeout runs out, a pause ends); nil while only an outcome can move it.
    /// Earlier events may move it: ask again after each.
    func nextDeadline() -> UInt64? {
        func after(_ since: UInt64, _ milliseconds: Int) -> UInt64 { since + UInt64(milliseconds) * 1_000_000 + 1 }
        var soonest = UInt64.max
        if framing == nil && !peerClosed { soonest = min(soonest, after(openedAt, limits.firstByteTimeoutMilliseconds)) }
        if let since = partialSince { soonest = min(soonest, after(since, limits.requestTimeoutMilliseconds)) }
        if pendingOutput > 0 && readingWaitsForClient { soonest = min(soonest, lastWrite + ClientSession.slowReaderGrace + 1) }
        if pendingOutput > 0 { soonest = min(soonest, after(lastWrite, limits.idleTimeoutMilliseconds)) }
        if let end = endSeenAt, !wroteSinceEnd { soonest = min(soonest, after(end, limits.requestTimeoutMilliseconds)) }
        if (framing?.outstanding ?? 0) == 0 && pendingOutput == 0 && interests.isEmpty { soonest = min(soonest, after(lastActivity, limits.idleTimeoutMilliseconds)) }
        if pausedUntil != 0 { soonest = min(soonest, pausedUntil) }
        if let recheckAt { soonest = min(soonest, recheckAt) }
        return soonest == .max ? nil : soonest
    }

    /// The clock moved: requests read while the address was over its rate go on once the pause
    /// ends; a listening connection checks its token when that is due.
    func tick(now: UInt64) {
        if let at = recheckAt, now >= at {
            recheckAt = now + ClientSession.recheckInterval
            recheck()
        }
        guard pausedUntil != 0, now >= pausedUntil else { return }
        pausedUntil = 0
        process(now: now)
    }

    // MARK: Reading requests

    /// Unsent output and replies held back in the framing: what the connection holds for its client.
    private var heldForClient: Int { pendingOutput + (framing?.heldBytes ?? 0) }

    /// Whether the last look at the input left requests unread because of the output bound
    /// (not the window of calls in flight, nor the rate): nothing more is read until the
    /// client takes its replies.
    private var readingWaitsForClient = false

    /// Calls the output bound leaves room for: what the connection holds for its client, with
    /// what the calls owed are likely to add, within `maxPendingOutputBytes` (at least one when
    /// none is owed and the bound is not reached).
    private var outputRoom: Int {
        guard heldForClient < limits.maxPendingOutputBytes else { return 0 }
        let owed = framing?.outstanding ?? 0
        let budget = limits.maxPendingOutputBytes - heldForClient - owed * replyEstimate
        return max(owed == 0 ? 1 : 0, budget / replyEstimate)
    }

    /// Calls that may be read now: within the window and within the output bound.
    private func room(now: UInt64) -> Int {
        guard !closing, now >= pausedUntil else { return 0 }
        return max(0, min(limits.maxInFlight - (framing?.outstanding ?? 0), outputRoom))
    }

    /// Whether `process` is running (a call answered at once asks for another round instead of recursing).
    private var processing = false
    private var processAgain = false

    private func process(now: UInt64) {
        if processing {
            processAgain = true
            return
        }
        processing = true
        defer { processing = false }
        repeat {
            processAgain = false
            readRequests(now: now)
        } while processAgain
    }

    private func readRequests(now: UInt64) {
        if framing == nil {
            while inputStart < input.count, [0x20, 0x0A, 0x0D, 0x09].contains(input[inputStart]) { inputStart += 1 }
            guard inputStart < input.count else { return }
            let lead = input[inputStart]
            framing = lead == UInt8(ascii: "{") || lead == UInt8(ascii: "[") ? JSONRPCFraming(limits: framingLimits) : RESPFraming(limits: framingLimits)
        }
        guard framing != nil else { return }
        let room = room(now: now)
        // The output bound, not the window, sets the room: the client's reading paces this one.
        let paced = !closing && now >= pausedUntil && outputRoom < limits.maxInFlight - (framing?.outstanding ?? 0)
        guard room > 0 else {
            // Waiting on the gateway, the rate or the client's reading: no request timeout runs.
            readingWaitsForClient = paced
            partialSince = nil
            inputExhausted = inputStart == input.count
            return
        }
        let bytes = limits.maxPendingOutputBytes - pendingOutput
        guard let reading = framing?.read(input[inputStart...], atEnd: peerClosed, room: room, bytes: bytes) else { return }
        readingWaitsForClient = reading.waiting && (paced || (framing?.heldBytes ?? 0) + reading.output.count >= bytes)
        inputStart += reading.consumed
        if inputStart > 1 << 20 && inputStart * 2 > input.count {
            input.removeFirst(inputStart)
            inputStart = 0
        }
        let leftover = inputStart < input.count
        inputExhausted = !leftover || !reading.waiting
        if reading.requests > 0 {
            lastActivity = now
            partialSince = leftover ? now : nil
            uncharged += reading.requests
            if uncharged >= 64 || now < lastCharged || now - lastCharged >= 10_000_000 {
                let wait = charge(uncharged)
                uncharged = 0
                lastCharged = now
                if wait > 0 { pausedUntil = now + wait }
            }
        } else if leftover && partialSince == nil {
            partialSince = now
        } else if !leftover {
            partialSince = nil
        }
        if reading.close { closing = true }
        appendOutput(reading.output)
        for (slot, call) in reading.calls { start(slot, call) }
    }

    /// Starts a call just read, or holds it behind a sign-in or subscription under way and
    /// behind the calls held before it (an answer given at once while those are let go may read
    /// more input: that comes after them).
    private func start(_ slot: Int, _ call: Call) {
        if (sessionSlot != nil || !held.isEmpty) && !Dispatcher.immediate.contains(call.method) {
            held.append((slot, call))
            return
        }
        run(slot, call)
    }

    private func run(_ slot: Int, _ call: Call) {
        if ClientSession.subscriptionMethods.contains(call.method) {
            subscription(slot, call)
            return
        }
        if Authenticator.sessionMethods.contains(call.method) { sessionSlot = slot }
        let deliver = self.deliver
        if let immediate = dispatch(call, token, { deliver(slot, $0, $1) }) {
            complete(slot, immediate, nil, now: lastActivity)
        }
    }

    private func appendOutput(_ bytes: [UInt8]) {
        guard !bytes.isEmpty else { return }
        output += bytes
    }
}
