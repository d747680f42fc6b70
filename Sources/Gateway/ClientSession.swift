import Bus
import Contracts
import Foundation
import ServiceCore

/// One client connection's life as a state machine over bytes in, bytes out and the clock,
/// independent of how the socket is driven.
///
/// - The framing is fixed by the first bytes that are not blank: `{` or `[` is JSON-RPC, a
///   request line HTTP (`framing(of:atEnd:)`), anything else RESP; HTTP may upgrade to a
///   WebSocket. Behind a trusted proxy, the client's address comes from a PROXY header or
///   each request's `X-Forwarded-For`.
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
///
/// Its parts: the framing (fixed by the first byte), the `lifecycle`, one table of deadlines
/// (`deadlines`, which `expired` and `nextDeadline` both read), the `OutputBudget` and the
/// `Subscriptions`.
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
    typealias Dispatch = (_ call: Call, _ client: String, _ token: String?, _ completion: @escaping @Sendable (Outcome, SessionChange?) -> Void) -> Outcome?
    /// Hands an outcome from any thread back to the thread that runs the session (its event loop's).
    typealias Deliver = @Sendable (_ slot: Int, _ outcome: Outcome, _ change: SessionChange?) -> Void
    /// Counts requests read against the client address's rate: nanoseconds to pause reading.
    typealias Charge = (_ client: String, _ requests: Int) -> UInt64
    /// Counts the connection under another client address (a trusted proxy named its client):
    /// false when that address has its share of connections. `exempt`: the address is the
    /// trusted proxy's own, which is never refused.
    typealias Rekey = (_ from: String, _ to: String, _ exempt: Bool) -> Bool

    /// The calls in flight a client address may have across its connections
    /// (`maxInFlightPerAddress`), as a connection takes and gives them back.
    struct AddressShare {
        /// Takes up to `count` of the address's room; at none, the connection is woken
        /// (`resume`) once the address has room again.
        var take: (_ client: String, _ count: Int) -> Int
        /// Gives back `count` calls' room (negative: takes more), from any thread.
        var give: @Sendable (_ client: String, _ count: Int) -> Void
        /// The connection closed: it waits for no room.
        var stopWaiting: (_ client: String) -> Void

        static var unlimited: AddressShare { AddressShare(take: { $1 }, give: { _, _ in }, stopWaiting: { _ in }) }
    }
    typealias Listen = Subscriptions.Listen

    /// Where a connection is in its life.
    enum Lifecycle: Equatable {
        /// Requests are read.
        case open
        /// The client sends nothing more (it half-closed): what it sent is still read and answered.
        case peerClosed
        /// No more requests are read (QUIT, a protocol error, a session that ended, the gateway
        /// stopping): what is owed is answered, then the connection closes.
        case closing(peerClosed: Bool)

        var peerClosed: Bool { self == .peerClosed || self == .closing(peerClosed: true) }
        var closing: Bool { if case .closing = self { true } else { false } }
    }

    /// Input kept buffered, beyond one request, while no more requests may be read.
    static let readAhead = 64 << 10
    /// How long a client whose unread replies stop the reading (they reach `maxPendingOutputBytes`
    /// with what the calls owed are likely to add) may go without taking a byte.
    static let slowReaderGrace: UInt64 = 5_000_000_000

    private let limits: GatewayLimits
    private let framingLimits: FramingLimits
    private let dispatch: Dispatch
    private let deliver: Deliver
    private let charge: Charge
    private let rekey: Rekey
    private let addressShare: AddressShare
    /// Whether the connection waits to be woken because its address has no room for calls.
    private var waitingForAddress = false
    /// The client's address as the gateway counts it: the peer's, or the client a trusted proxy named.
    private(set) var address: String
    /// The peer's own address (`address` until a proxy names its client).
    private let peerAddress: String
    /// Set when the peer is a trusted proxy: it may name its client (PROXY protocol v2, `X-Forwarded-For`).
    private let proxy: ProxyTrust?
    /// Whether a PROXY header was looked for (only at the connection's start).
    private var proxyHeaderRead = false
    /// The client a PROXY header named: the connection's client when a request names none.
    private var proxiedClient: String?

    private var framing: (any Framing)?
    private var input: [UInt8] = []
    private var inputStart = 0
    private let outputBudget: OutputBudget
    private let subscriptions: Subscriptions
    private(set) var lifecycle = Lifecycle.open
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
    /// Calls read and not started, each with the client address its place in flight is counted under.
    private var held: [(slot: Int, call: Call, counted: String)] = []

    /// The topics the connection hears by name.
    var topics: Set<String> { subscriptions.interests.topics }
    /// Output bytes, and how many of them the socket took.
    var output: [UInt8] { outputBudget.output }
    var outputSent: Int { outputBudget.sent }

    private let openedAt: UInt64
    private var lastActivity: UInt64
    private var lastWrite: UInt64
    /// When the client last had nothing to take: the time it has been slow is counted from the
    /// later of this and `lastWrite` (a connection that wrote nothing for a while because it
    /// owed nothing is not slow the moment it owes something).
    private var caughtUpAt: UInt64
    /// When the request now partly read began to arrive.
    private var partialSince: UInt64?
    /// Reading pauses until then: the address is over its request rate.
    private var pausedUntil: UInt64 = 0
    /// Requests read and not yet counted against the address's rate, and when it was last told:
    /// the shared count is told every 64 requests or 10 ms, not for each one.
    private var uncharged = 0
    private var lastCharged: UInt64 = 0

    init(
        limits: GatewayLimits, framing: FramingLimits, now: UInt64, address: String = "client", proxy: ProxyTrust? = nil,
        dispatch: @escaping Dispatch, deliver: @escaping Deliver, charge: @escaping Charge, rekey: @escaping Rekey = { _, _, _ in true },
        addressShare: AddressShare = .unlimited, listen: @escaping Listen = { _, _ in true }, memory: OutputMemory? = nil
    ) {
        self.limits = limits
        self.framingLimits = framing
        self.dispatch = dispatch
        self.deliver = deliver
        self.charge = charge
        self.rekey = rekey
        self.addressShare = addressShare
        self.address = address
        peerAddress = address
        self.proxy = proxy
        outputBudget = OutputBudget(maxPendingBytes: limits.maxPendingOutputBytes, memory: memory ?? OutputMemory(limits: limits))
        subscriptions = Subscriptions(listen: listen)
        openedAt = now
        lastActivity = now
        lastWrite = now
        caughtUpAt = now
    }

    // MARK: Driving

    /// Bytes from the client.
    func receive(_ bytes: some Collection<UInt8>, now: UInt64) {
        if inputStart == input.count {
            // Only a small buffer is kept between reads: thousands of idle connections hold none.
            input.removeAll(keepingCapacity: input.capacity <= OutputBudget.keptBuffer)
            inputStart = 0
        }
        input.append(contentsOf: bytes)
        process(now: now)
    }

    /// The client half-closed: it sends nothing more, but still reads.
    func receiveEnd(now: UInt64) {
        if lifecycle == .open { lifecycle = .peerClosed }
        if lifecycle == .closing(peerClosed: false) { lifecycle = .closing(peerClosed: true) }
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
                close()
            }
            return
        }
        // Calls sent after this answer carry the identity it leaves; pushes for whoever it
        // leaves signed in need a subscription of their own.
        switch framing?.signsIn == false ? nil : change {
        case .signedIn(let newToken)?:
            token = newToken
            stopListening()
        case .signedOut(let oldToken)?:
            if token == oldToken {
                token = nil
                stopListening()
            }
        case .subscribed?, nil: break
        }
        let answered = subscriptions.answered(slot, outcome, change, token: token, now: now)
        if answered.stoppedListening { outputBudget.dropQueuedPushes() }
        noteCaughtUp(now)
        outputBudget.reply(framing?.answer(slot, answered.outcome) ?? [])
        // The session is settled: what waited for it goes now, in order, until another sign-in.
        if sessionSlot == slot { sessionSlot = nil }
        releaseHeld()
        process(now: now)
    }

    /// Whether what the connection holds for its client has reached its bound, while the
    /// client has some of it to take: calls read after that wait until it takes some (a reply
    /// answered at once, such as the OpenRPC document, would otherwise add its bytes however
    /// many were asked for). With nothing to take, the bytes held are answers the framing
    /// holds back until other calls are answered (a batch's), so those calls run.
    private var outputFull: Bool { pendingOutput > 0 && outputBudget.isFull(held: heldForClient) }

    /// Whether `releaseHeld` is letting calls go (a call answered at once does not start another round).
    private var releasing = false

    /// Starts the calls held, in order, while no sign-in is under way and the output is below its bound.
    private func releaseHeld() {
        guard !releasing else { return }
        releasing = true
        defer { releasing = false }
        while sessionSlot == nil, !held.isEmpty, !outputFull {
            let next = held.removeFirst()
            run(next.slot, next.call, counted: next.counted)
        }
    }

    /// The gateway is stopping: read no more requests, answer those in flight.
    func stop() { close() }

    /// Reads no more requests; what is owed is answered.
    private func close() { lifecycle = .closing(peerClosed: lifecycle.peerClosed) }

    /// The connection closed: it hears no more pushes, and waits for no room.
    func closed() {
        stopListening()
        if waitingForAddress { addressShare.stopWaiting(address) }
        for call in held { addressShare.give(call.counted, 1) }
        held = []
    }

    /// The client's address has room for calls again (after `AddressShare.take` found none).
    func resume(now: UInt64) {
        waitingForAddress = false
        process(now: now)
    }

    /// The slot under which `recheck`'s answer comes back: no request's, and answered to no one.
    static let recheckSlot = -1

    /// Checks again that the token this connection listens with is valid (a session of its
    /// user ended elsewhere). If it is not, the connection is signed out, hears no more
    /// pushes and closes once its replies are written: a subscriber learns it must sign in
    /// again. If the accounts service cannot say, it goes on listening.
    func recheck() {
        guard let listener = subscriptions.listener, token == listener.token else { return }
        let deliver = self.deliver
        if let immediate = dispatch(Call(method: Methods.Gateway.subscribe.name, params: Data("{}".utf8)), address, token, { deliver(ClientSession.recheckSlot, $0, $1) }) {
            complete(ClientSession.recheckSlot, immediate, nil, now: lastActivity)
        }
    }

    // MARK: Pushes

    /// A push for the user this connection listens for: written between whole replies, or kept
    /// (the latest of each coalescing key only) while the unsent output is at its window.
    func push(_ push: Push) {
        guard let writer = pushWriter else { return }
        let messages = subscriptions.messages(of: push)
        guard !messages.isEmpty else { return }
        // A key coalesces pushes of its own topic only.
        noteCaughtUp(lastActivity)
        outputBudget.push(push, messages: messages, key: push.coalesce.map { push.topic + " " + $0 }, writer: writer)
    }

    /// The topic of the notice that a connection's waiting pushes were shed (gateway.md).
    static let shedTopic = "gateway.shed"

    /// How this connection's framing writes pushes, and the notice of pushes shed: a push on
    /// `gateway.shed` whose body is `{"count":N}`.
    private var pushWriter: PushWriter? {
        guard let framing else { return nil }
        return PushWriter(
            message: { framing.push($0, pattern: $1) },
            shed: { count in
                framing.push(Push(topic: ClientSession.shedTopic, id: "shed", userId: 0, body: Data(#"{"count":\#(count)}"#.utf8)), pattern: nil)
            })
    }

    /// `subscribe`, `unsubscribe` (topics) and `psubscribe`, `punsubscribe` (patterns, RESP's
    /// only), which the session answers itself once it knows who is signed in (a subscription
    /// goes through the dispatcher, which checks the token).
    private func subscription(_ slot: Int, _ call: Call) {
        switch subscriptions.ask(slot, call) {
        case .answered(let outcome): complete(slot, outcome, nil, now: lastActivity)
        case .needsCheck:
            // Calls after it wait for its answer, as after a sign-in: subscriptions change in the
            // order they were asked for, each counted against what the one before left.
            sessionSlot = slot
            let deliver = self.deliver
            if let immediate = dispatch(Call(method: Methods.Gateway.subscribe.name, params: Data("{}".utf8)), address, token, { deliver(slot, $0, $1) }) {
                complete(slot, immediate, nil, now: lastActivity)
            }
        }
    }

    /// Hears no more pushes, and forgets those kept for the client.
    private func stopListening() {
        if subscriptions.stopAll() { outputBudget.dropQueuedPushes() }
    }

    /// Output is about to be added at `now`: if the client had taken all there was, its time
    /// to take this starts now.
    private func noteCaughtUp(_ now: UInt64) {
        if pendingOutput == 0 { caughtUpAt = max(caughtUpAt, now) }
    }

    /// The socket took `count` bytes of `output` from `outputSent`.
    func wrote(_ count: Int, now: UInt64) {
        guard count > 0 else { return }
        outputBudget.wrote(count)
        // The writer (two closures) is made only when something waits: not on every write.
        if outputBudget.hasPushesToWrite, let pushWriter { outputBudget.writePushes(pushWriter) }
        lastWrite = now
        if endSeenAt != nil { wroteSinceEnd = true }
        lastActivity = now
        releaseHeld()
        process(now: now)
    }

    // MARK: State

    /// Unsent output.
    var pendingOutput: Int { outputBudget.pending }

    /// Whether the socket should be read: not after the client half-closed or while closing,
    /// and not while enough input waits for room to be read.
    func wantsInput(now: UInt64) -> Bool {
        guard lifecycle == .open else { return false }
        let buffered = input.count - inputStart
        // The address's room is not asked here: a request being received is read whole, and its
        // calls wait for the room once it is (`readRequests`).
        return buffered < (!waitingForAddress && ownRoom(now: now) > 0 ? framingLimits.maxRequestBytes + ClientSession.readAhead : ClientSession.readAhead)
    }

    /// Whether the session is over: nothing more will be read and nothing is owed or unsent.
    var isFinished: Bool {
        guard lifecycle.closing || (lifecycle.peerClosed && inputExhausted) else { return false }
        return (framing?.outstanding ?? 0) == 0 && pendingOutput == 0
    }

    /// A limit of time the session has crossed, if any: the first in `deadlines` that has come.
    func expired(now: UInt64) -> Ending? {
        if outputBudget.overflowed { return .unreadPushes }
        var crossed: Ending?
        deadlines { at, ending in
            guard crossed == nil, let ending, now >= at else { return }
            crossed = ending
        }
        return crossed
    }

    /// The earliest time at which `expired` or `tick` may change their answer with no other
    /// event (a timeout runs out, a pause ends); nil while only an outcome can move it.
    /// Earlier events may move it: ask again after each.
    func nextDeadline() -> UInt64? {
        var soonest: UInt64?
        deadlines { at, _ in soonest = min(soonest ?? at, at) }
        return soonest
    }

    /// The session's deadlines that hold now, in the order `expired` weighs them: each the
    /// first instant past its limit, with the ending it brings (none: only `tick` acts then).
    private func deadlines(_ visit: (_ at: UInt64, _ ending: Ending?) -> Void) {
        func after(_ since: UInt64, _ milliseconds: Int) -> UInt64 { since + UInt64(milliseconds) * 1_000_000 + 1 }
        let owed = framing?.outstanding ?? 0
        if framing == nil && partialSince == nil && !lifecycle.peerClosed { visit(after(openedAt, limits.firstByteTimeoutMilliseconds), .firstByteTimeout) }
        if let since = partialSince { visit(after(since, limits.requestTimeoutMilliseconds), .requestTimeout) }
        if pendingOutput > 0 && readingWaitsForClient { visit(max(lastWrite, caughtUpAt) + ClientSession.slowReaderGrace + 1, .slowReader) }
        if pendingOutput > 0 { visit(after(lastWrite, limits.idleTimeoutMilliseconds), .slowReader) }
        // A client that closed its side may be gone for good: with no reply to write there is no
        // way to know, so requests that answer nothing (notifications) run for a while only.
        if let end = endSeenAt, !wroteSinceEnd { visit(after(end, limits.requestTimeoutMilliseconds), .abandoned) }
        // A connection that waits for pushes is not idle.
        if owed == 0 && pendingOutput == 0 && subscriptions.interests.isEmpty { visit(after(lastActivity, limits.idleTimeoutMilliseconds), .idle) }
        if pausedUntil != 0 { visit(pausedUntil, nil) }
        if let at = subscriptions.recheckAt { visit(at, nil) }
    }

    /// The clock moved: requests read while the address was over its rate go on once the pause
    /// ends; a listening connection checks its token when that is due.
    func tick(now: UInt64) {
        if subscriptions.recheckDue(now: now) { recheck() }
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
    private var outputRoom: Int { outputBudget.callRoom(held: heldForClient, owed: framing?.outstanding ?? 0) }

    /// Calls that may be read now as far as this connection goes: within the window and the output bound.
    private func ownRoom(now: UInt64) -> Int {
        guard !lifecycle.closing, now >= pausedUntil else { return 0 }
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

    /// Counts the requests read and not yet counted against the address's rate.
    private func chargeRequests(now: UInt64) {
        let wait = charge(address, uncharged)
        uncharged = 0
        lastCharged = now
        if wait > 0 { pausedUntil = now + wait }
    }

    /// Counts the connection, from now on, under `client`, a trusted proxy's client: false
    /// when that address has its share of connections.
    private func move(to client: String, now: UInt64) -> Bool {
        guard client != address else { return true }
        if uncharged > 0 { chargeRequests(now: now) }
        guard rekey(address, client, client == peerAddress) else { return false }
        address = client
        return true
    }

    private func readRequests(now: UInt64) {
        if proxy != nil && !proxyHeaderRead {
            // A trusted proxy may open with a PROXY protocol v2 header naming its client.
            switch ProxyProtocol.header(input[inputStart...]) {
            case .incomplete: return
            case .absent: break
            case .local(let length): inputStart += length
            case .proxied(let source, let length):
                inputStart += length
                proxiedClient = TCPSocket.clientAddress(source)
                guard move(to: TCPSocket.clientAddress(source), now: now) else {
                    close()
                    return
                }
            case .invalid:
                close()
                return
            }
            proxyHeaderRead = true
        }
        if framing == nil {
            while inputStart < input.count, [0x20, 0x0A, 0x0D, 0x09].contains(input[inputStart]) { inputStart += 1 }
            guard inputStart < input.count else { return }
            guard let detected = ClientSession.framing(of: input[inputStart...], atEnd: lifecycle.peerClosed) else {
                // A first line too short to tell yet: a request has begun, and its timeout runs.
                partialSince = partialSince ?? now
                return
            }
            switch detected {
            case .jsonRPC: framing = JSONRPCFraming(limits: framingLimits)
            case .resp: framing = RESPFraming(limits: framingLimits)
            case .http: framing = HTTPFraming(limits: framingLimits)
            }
        }
        guard framing != nil else { return }
        let own = waitingForAddress ? 0 : ownRoom(now: now)
        // The calls read take their places in flight of the address now, so connections read
        // at once on other threads cannot all take the same room; those not read are given
        // back. A trusted proxy's connection carries many clients, known only once read: it
        // does not wait for any one's room, and its calls are counted under their client.
        var counted = address
        let room = own > 0 && proxy == nil ? addressShare.take(counted, own) : own
        if own > 0 && room == 0 { waitingForAddress = true }
        // The output bound, not the window, sets the room: the client's reading paces this one.
        let paced = !lifecycle.closing && now >= pausedUntil && outputRoom < limits.maxInFlight - (framing?.outstanding ?? 0)
        guard room > 0 else {
            // Waiting on the gateway, the rate or the client's reading: no request timeout runs.
            readingWaitsForClient = paced
            partialSince = nil
            inputExhausted = inputStart == input.count
            return
        }
        let bytes = limits.maxPendingOutputBytes - pendingOutput
        guard let reading = framing?.read(input[inputStart...], atEnd: lifecycle.peerClosed, room: room, bytes: bytes) else {
            if proxy == nil { addressShare.give(counted, room) }
            return
        }
        // Counted under the client a trusted proxy names for what it sent, from here on.
        var clientRefused = false
        if let proxy, let forwarded = reading.forwardedFor {
            clientRefused = !move(to: proxy.client(forwardedFor: forwarded) ?? proxiedClient ?? peerAddress, now: now)
        }
        if proxy == nil {
            addressShare.give(counted, room - reading.calls.count)
        } else {
            counted = address
            addressShare.give(counted, -reading.calls.count)
        }
        readingWaitsForClient = reading.waiting && (paced || (framing?.heldBytes ?? 0) + reading.output.count >= bytes)
        inputStart += reading.consumed
        if inputStart > 1 << 20 && inputStart * 2 > input.count {
            input.removeFirst(inputStart)
            inputStart = 0
        }
        let leftover = inputStart < input.count || reading.partial
        inputExhausted = !leftover || !reading.waiting
        if reading.requests > 0 {
            lastActivity = now
            partialSince = leftover ? now : nil
            uncharged += reading.requests
            if uncharged >= 64 || now < lastCharged || now - lastCharged >= 10_000_000 { chargeRequests(now: now) }
        } else if leftover && partialSince == nil {
            partialSince = now
        } else if !leftover {
            partialSince = nil
        }
        if reading.close { close() }
        if clientRefused {
            // The client the proxy names has its share of connections: nothing it asked for is
            // given (a file, a WebSocket's handshake); its calls are answered so, and the
            // connection closes.
            close()
            let refusal = ServiceError(.unavailable, "too many connections from your address")
            addressShare.give(counted, reading.calls.count)
            for (slot, _) in reading.calls { complete(slot, .failure(refusal), nil, now: now) }
            return
        }
        noteCaughtUp(now)
        outputBudget.append(reading.output)
        for (slot, call) in reading.calls { start(slot, call, counted: counted) }
        if let next = reading.upgrade {
            // What follows the upgrade is read by the new framing, in another round.
            framing = next
            processAgain = true
        } else if proxy != nil && reading.waiting && reading.requests > 0 {
            // A proxy's pipeline stops a pass at another client's request: the next pass reads
            // it now, not when something else wakes the connection (each pass reads at least one
            // request or ends the rounds).
            processAgain = true
        }
    }

    enum WireProtocol: Equatable { case jsonRPC, resp, http }

    /// The longest request line looked at to tell HTTP from RESP's inline commands.
    static let requestLineBytes = 8 << 10

    /// The protocol a connection speaks, from its first bytes (not blank): `{` or `[` is
    /// JSON-RPC; a request line (`METHOD SP target SP HTTP/1.x`) is HTTP; anything else RESP,
    /// whose inline commands share HTTP's first word (`GET key`). Nil while the first line is
    /// too short to tell.
    static func framing(of input: ArraySlice<UInt8>, atEnd: Bool) -> WireProtocol? {
        guard let lead = input.first else { return nil }
        if lead == UInt8(ascii: "{") || lead == UInt8(ascii: "[") { return .jsonRPC }
        let method = input.prefix { (0x41...0x5A).contains($0) }
        guard !method.isEmpty, method.count <= 16, method.endIndex < input.endIndex || !atEnd else { return .resp }
        let lineEnd = input.prefix(requestLineBytes).firstIndex(of: 0x0A)
        guard let lineEnd else {
            // A line too long to be a command, or the last one: its target tells.
            guard input.count >= requestLineBytes || atEnd else { return nil }
            return input.dropFirst(method.count).starts(with: Array(" /".utf8)) ? .http : .resp
        }
        let line = input[..<lineEnd].last == 0x0D ? input[..<(lineEnd - 1)] : input[..<lineEnd]
        let words = line.split(separator: 0x20, omittingEmptySubsequences: false)
        guard words.count == 3, words[0].count == method.count, !words[1].isEmpty else { return .resp }
        let version = Array(words[2])
        return version.count == 8 && version.starts(with: Array("HTTP/".utf8)) && (0x30...0x39).contains(version[5]) && version[6] == UInt8(ascii: ".")
            && (0x30...0x39).contains(version[7]) ? .http : .resp
    }

    /// Starts a call just read, or holds it behind a sign-in or subscription under way and
    /// behind the calls held before it (an answer given at once while those are let go may read
    /// more input: that comes after them), or while the output is at its bound.
    /// `counted`: the client address the call's place in flight is counted under.
    private func start(_ slot: Int, _ call: Call, counted: String) {
        if outputFull || ((sessionSlot != nil || !held.isEmpty) && !Dispatcher.immediate.contains(call.method)) {
            held.append((slot, call, counted))
            return
        }
        run(slot, call, counted: counted)
    }

    /// Runs a call; its place in flight under `counted` is given back once it is answered.
    private func run(_ slot: Int, _ call: Call, counted: String) {
        if Subscriptions.methods.contains(call.method) {
            addressShare.give(counted, 1)
            subscription(slot, call)
            return
        }
        if Authenticator.sessionMethods.contains(call.method) { sessionSlot = slot }
        let deliver = self.deliver
        let give = addressShare.give
        let answered = dispatch(call, address, call.token ?? token) { outcome, change in
            give(counted, 1)
            deliver(slot, outcome, change)
        }
        if let answered {
            give(counted, 1)
            complete(slot, answered, nil, now: lastActivity)
        }
    }
}
