import Bus
import Contracts
import Foundation
@testable import Gateway
import ServiceCore
import Synchronization
import TestSupport
import Testing

/// A `ClientSession` driven by hand: bytes in, a fake clock, a dispatcher that answers at once
/// or keeps calls until the test answers them.
final class SessionHarness {
    var now: UInt64 = 1_000_000_000
    let session: ClientSession
    /// Calls the fake dispatcher kept, with their completions.
    let kept = Locked<[(call: Call, completion: @Sendable (Outcome, SessionChange?) -> Void)]>([])
    /// Outcomes delivered from completions, waiting to be handed to the session.
    let delivered = Locked<[(slot: Int, outcome: Outcome, change: SessionChange?)]>([])

    /// `answer` returns an outcome at once, or nil to keep the call for `answerKept`.
    /// What the session told the push registry, in order.
    let listened = Locked<[(user: Int64, topics: Set<String>)]>([])
    /// The token each dispatched call went with, in order.
    let tokens = Locked<[String?]>([])
    /// The client address each dispatched call was counted under, in order.
    let clients = Locked<[String]>([])
    /// Each move of the connection to another client address.
    let moves = Locked<[(from: String, to: String)]>([])
    /// Whether `subscribe`'s token check passes (false: the session ended elsewhere).
    let tokensValid = Locked(true)
    /// What the fake push registry answers a connection that starts listening.
    let acceptListeners = Locked(true)

    /// `answer` returns an outcome at once, or nil to keep the call for `answerKept`. With a
    /// `user`, every token signs them in: `auth.resume` (signing in with the params' token),
    /// `auth.logout` and `subscribe` are answered as the gateway's dispatcher does, through `deliverAll`.
    /// `address` and `proxy`: the peer's address, and the proxies trusted when the peer is one;
    /// `refuse`: client addresses that have their share of connections.
    init(limits: GatewayLimits = GatewayLimits(), framing: FramingLimits = FramingLimits(),
         charge: @escaping ClientSession.Charge = { _, _ in 0 }, user: Int64? = nil,
         address: String = "127.0.0.1", proxy: ProxyTrust? = nil, refuse: Set<String> = [], memory: OutputMemory? = nil,
         answer: @escaping (Call) -> Outcome? = { call in call.method == "ping" ? .pong : .result(call.params) }) {
        let kept = self.kept, delivered = self.delivered, listened = self.listened, tokensValid = self.tokensValid
        let acceptListeners = self.acceptListeners, tokens = self.tokens, clients = self.clients, moves = self.moves
        session = ClientSession(limits: limits, framing: framing, now: now, address: address, proxy: proxy, dispatch: { call, client, token, completion in
            clients.withLock { $0.append(client) }
            tokens.withLock { $0.append(token) }
            switch user.map({ _ in call.method }) {
            case "auth.resume":
                let given = JSONSpan.plainString("token", in: call.params) ?? ""
                completion(.result(Data("{}".utf8)), .signedIn(token: given))
                return nil
            case "auth.logout":
                completion(.result(Data("{}".utf8)), token.map { .signedOut(token: $0) })
                return nil
            case "subscribe":
                guard let token else { return .failure(ServiceError(.unauthenticated, "sign in first")) }
                if let user, tokensValid.withLock({ $0 }) {
                    completion(.result(Data("{}".utf8)), .subscribed(userId: user, token: token))
                } else {
                    completion(.failure(ServiceError(.unauthenticated, "invalid or expired token")), .signedOut(token: token))
                }
                return nil
            default:
                if let outcome = answer(call) { return outcome }
                kept.withLock { $0.append((call, completion)) }
                return nil
            }
        }, deliver: { slot, outcome, change in delivered.withLock { $0.append((slot, outcome, change)) } }, charge: charge,
           rekey: { from, to, exempt in
               guard exempt || !refuse.contains(to) else { return false }
               moves.withLock { $0.append((from, to)) }
               return true
           },
           listen: { user, interests in
               listened.withLock { $0.append((user, interests.topics.union(interests.patterns))) }
               return acceptListeners.withLock { $0 }
           }, memory: memory)
    }

    /// Hands the session every outcome its calls delivered, as its loop would; then drains.
    @discardableResult
    func deliverAll() -> String {
        deliverOutcomes()
        return drain()
    }

    /// Hands the session every outcome its calls delivered, as its loop would.
    func deliverOutcomes() {
        let outcomes = delivered.withLock { all in defer { all.removeAll() }; return all }
        for (slot, outcome, change) in outcomes { session.complete(slot, outcome, change, now: now) }
    }

    /// Answers every kept call with its params, as the session's thread would; how many.
    func answerKept() -> Int {
        let calls = kept.withLock { calls in defer { calls.removeAll() }; return calls }
        for (call, completion) in calls { completion(.result(call.params), nil) }
        let outcomes = delivered.withLock { all in defer { all.removeAll() }; return all }
        for (slot, outcome, change) in outcomes { session.complete(slot, outcome, change, now: now) }
        return calls.count
    }

    /// Sends bytes, then takes everything the session has to write.
    @discardableResult
    func send(_ bytes: [UInt8]) -> String {
        session.receive(bytes, now: now)
        return drain()
    }

    func send(_ text: String) -> String { send(Array(text.utf8)) }

    /// What the session has written since the last drain.
    func drain() -> String { String(decoding: drainBytes(), as: UTF8.self) }

    /// What the session has written since the last drain, as bytes (a WebSocket's frames).
    func drainBytes() -> [UInt8] {
        let pending = Array(session.output[session.outputSent...])
        session.wrote(pending.count, now: now)
        return pending
    }

    func advance(milliseconds: Int) { now += UInt64(milliseconds) * 1_000_000 }
}

/// Runs `body` on a thread with a 512 KiB stack, what a connection had before the event loops (theirs have 4 MiB): deep input must fit even there.
func onConnectionStack(_ body: @escaping @Sendable () -> Void) {
    let thread = WorkerThread(name: "test-conn", stackSize: 512 << 10, body)
    thread.join()
}

@Suite struct HostileInputTests {
    static func nested(_ depth: Int, object: Bool) -> String {
        object ? String(repeating: #"{"a":"#, count: depth) + "1" + String(repeating: "}", count: depth)
               : String(repeating: "[", count: depth) + String(repeating: "]", count: depth)
    }

    static let depths = Array(1...1_000) + (10...16).map { 1 << $0 } + [100_000]

    @Test func nestingIsBoundedInBothFramingsAtEveryDepth() {
        onConnectionStack {
            let json = SessionHarness()
            let resp = SessionHarness()
            for depth in HostileInputTests.depths {
                for object in [false, true] {
                    let value = HostileInputTests.nested(depth, object: object)
                    let reply = json.send(#"{"jsonrpc":"2.0","id":1,"method":"echo","params":{"x":"# + value + "}}\n")
                    // The request and its params object are two levels, so the value may nest 62 deep.
                    if depth <= StrictJSON.defaultMaxDepth - 2 {
                        #expect(reply.contains(#""result""#), "depth \(depth)")
                    } else {
                        #expect(reply.contains("-32700") && reply.contains("nesting deeper than 64"), "depth \(depth): \(reply.prefix(200))")
                    }
                    let answer = resp.send(Array(RESPClient.command(["echo.back", "x", value])))
                    if depth <= StrictJSON.defaultMaxDepth - 2 {
                        #expect(answer.hasPrefix("$"), "depth \(depth)")
                    } else {
                        #expect(answer.hasPrefix("-INVALID_ARGUMENT x: nesting deeper than 62"), "depth \(depth): \(answer.prefix(200))")
                    }
                }
            }
            // The connections are still usable.
            #expect(json.send(#"{"jsonrpc":"2.0","id":2,"method":"ping"}"# + "\n").contains("pong"))
            #expect(resp.send("PING\r\n") == "+PONG\r\n")
        }
    }

    @Test func strictJSONOnly() {
        let s = SessionHarness()
        #expect(s.send(#"{"jsonrpc":"2.0","id":1,"method":"ping",}"# + "\n").contains(#""code":-32700"#))
        #expect(s.send(#"{"jsonrpc":"2.0","id":1,"method":"ping","params":{"a":[1,2,]}}"# + "\n").contains("trailing comma"))
        #expect(s.send(#"{"jsonrpc":"2.0","id":1,"method":"ping","deadline_ms":null}"# + "\n").contains("deadline_ms must be an integer"))
        #expect(s.send(#"{"jsonrpc":"2.0","id":1,"method":"ping"}"# + "\n").contains("pong"))
        // I-JSON: a key given twice, in the request or in its params at any depth, escaped or not.
        let twice = s.send(#"{"jsonrpc":"2.0","id":1,"method":"ping","method":"help"}"# + "\n")
        #expect(twice.contains(#""code":-32700"#) && twice.contains("parse error: duplicate key at byte 41"), "\(twice)")
        #expect(s.send(#"{"jsonrpc":"2.0","id":1,"method":"echo","params":{"a":{"b":1,"\u0062":2}}}"# + "\n").contains("duplicate key"))
        // RESP: a key given twice in words, or in a JSON word, is refused by name.
        let r = SessionHarness()
        #expect(r.send(Array(RESPClient.command(["echo.back", "x", "1", "y", "2", "x", "3"]))) == "-INVALID_ARGUMENT x: is given twice\r\n")
        #expect(r.send(Array(RESPClient.command(["echo.back", "x", #"{"k":1,"k":2}"#]))).hasPrefix("-INVALID_ARGUMENT x: duplicate key at byte 8"))
        #expect(r.send(Array(RESPClient.command(["echo.back", #"{"k":1,"k":2}"#]))).hasPrefix("-INVALID_ARGUMENT duplicate key at byte 8"))
    }

    @Test func paramsAndIdsPassAsWrittenNotParsedAndWrittenAgain() {
        let s = SessionHarness()
        let reply = s.send(#"{"jsonrpc":"2.0","id":1e2,"method":"echo","params":{"x":[1.0,1e2,"\u00e9"],"y":{}}}"# + "\n")
        #expect(reply == #"{"jsonrpc":"2.0","id":1e2,"result":{"x":[1.0,1e2,"\u00e9"],"y":{}}}"# + "\n", "\(reply)")
        let r = SessionHarness()
        #expect(r.send(Array(RESPClient.command(["echo.back", "x", "[2]", "s", "say \"hi\"\n"]))) == "$" + "\(#"{"x":[2],"s":"say \"hi\"\n"}"#.utf8.count)\r\n" + #"{"x":[2],"s":"say \"hi\"\n"}"# + "\r\n")
    }

    @Test func echoedInputIsCut() {
        let s = SessionHarness(answer: { .failure(Dispatcher.unknownMethod($0.method)) })
        let long = String(repeating: "m", count: 500_000)
        let json = s.send(#"{"jsonrpc":"2.0","id":1,"method":""# + long + #""}"# + "\n")
        #expect(json.utf8.count < 400 && json.contains("-32600"), "\(json.prefix(300))")
        let r = SessionHarness(answer: { .failure(Dispatcher.unknownMethod($0.method)) })
        let resp = r.send(Array(RESPClient.command([long])))
        #expect(resp.utf8.count < 300 && resp.hasPrefix("-NOT_FOUND"), "\(resp.prefix(300))")
        let odd = r.send(Array(RESPClient.command(["x.y", "a", "1", long])))
        #expect(odd.utf8.count < 300 && odd.hasPrefix("-INVALID_ARGUMENT"), "\(odd.prefix(300))")
    }

    @Test func respLengthsAreDigitsOnly() {
        for broken in ["*1\r\n$+4\r\nPING\r\n", "*+1\r\n$4\r\nPING\r\n", "*1\r\n$ 4\r\nPING\r\n", "*1\r\n$04\r\nPING\r\n", "*01\r\n$4\r\nPING\r\n",
                       "*1\r\n$-0\r\n\r\n", "*-0\r\n", "*1\n$4\r\nPING\r\n", "*1\r\n$4\nPING\r\n"] {
            let s = SessionHarness()
            #expect(s.send(broken).hasPrefix("-ERR Protocol error"), "\(broken.debugDescription)")
        }
    }

    @Test func aSingleJSONObjectArgumentSaysItIsTooDeep() {
        let s = SessionHarness()
        let deep = "{\"a\":" + HostileInputTests.nested(70, object: false) + "}"
        #expect(s.send(Array(RESPClient.command(["x.y", deep]))).hasPrefix("-INVALID_ARGUMENT nesting deeper than 63 levels"))
        let fine = "{\"a\":" + HostileInputTests.nested(61, object: false) + "}"
        #expect(s.send(Array(RESPClient.command(["x.y", fine]))).hasPrefix("$"))
    }

    @Test func aLastLineWithoutNewlineIsAnsweredAfterAHalfClose() {
        let json = SessionHarness()
        #expect(json.send(#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#) == "")
        json.session.receiveEnd(now: json.now)
        #expect(json.drain().contains("pong"))
        #expect(json.session.isFinished)
        let resp = SessionHarness()
        #expect(resp.send("PING") == "")
        resp.session.receiveEnd(now: resp.now)
        #expect(resp.drain() == "+PONG\r\n")
        #expect(resp.session.isFinished)
    }

    @Test func repliesOverTheLimitAreTooLargeNotCut() {
        var framing = FramingLimits()
        framing.maxReplyBytes = 1_000
        let big = Data("\"\(String(repeating: "x", count: 5_000))\"".utf8)
        let s = SessionHarness(framing: framing, answer: { $0.method == "ping" ? .pong : .result(big) })
        let one = s.send(#"{"jsonrpc":"2.0","id":1,"method":"big"}"# + "\n")
        #expect(one.contains("too_large") && one.contains("reply of 5002 bytes exceeds the limit of 1000"), "\(one)")
        // A batch whose members fit one by one but not together.
        let half = Data("\"\(String(repeating: "y", count: 400))\"".utf8)
        let b = SessionHarness(framing: framing, answer: { $0.method == "ping" ? .pong : .result(half) })
        let batch = b.send("[" + (1...4).map { #"{"jsonrpc":"2.0","id":\#($0),"method":"half"}"# }.joined(separator: ",") + "]\n")
        #expect(batch.utf8.count <= 1_001 && batch.contains("too_large"), "\(batch)")
        let r = SessionHarness(framing: framing, answer: { $0.method == "ping" ? .pong : .result(big) })
        #expect(r.send("big\r\n").hasPrefix("-TOO_LARGE reply of 5002 bytes"))
        #expect(r.send("PING\r\n") == "+PONG\r\n")
    }
}

@Suite struct RedisCompatibilityTests {
    @Test func housekeepingCommandsOfToolsAndLibraries() {
        let s = SessionHarness()
        #expect(s.send("CLIENT SETINFO LIB-NAME redis-py\r\n") == "+OK\r\n")
        #expect(s.send("CLIENT SETINFO LIB-VER 5.0.0\r\n") == "+OK\r\n")
        #expect(s.send("CLIENT SETNAME worker-1\r\n") == "+OK\r\n")
        #expect(s.send("CLIENT GETNAME\r\n") == "$8\r\nworker-1\r\n")
        #expect(s.send("CLIENT KILL x\r\n").hasPrefix("-ERR"))
        #expect(s.send("ECHO hello\r\n") == "$5\r\nhello\r\n")
        #expect(s.send("SELECT 0\r\n") == "+OK\r\n")
        #expect(s.send("SELECT 1\r\n") == "-ERR DB index is out of range\r\n")
        #expect(s.send("COMMAND\r\n") == "*0\r\n")
        #expect(s.send("COMMAND DOCS\r\n") == "*0\r\n")
        #expect(s.send("COMMAND COUNT\r\n") == ":0\r\n")
        #expect(s.send("HELLO 4\r\n").hasPrefix("-NOPROTO"))
        #expect(s.send("HELLO 2\r\n").hasPrefix("*12\r\n$6\r\nserver\r\n"))
        #expect(s.send("HELLO 3 SETNAME app\r\n").hasPrefix("%6\r\n$6\r\nserver\r\n"))
        #expect(s.send("CLIENT GETNAME\r\n") == "$3\r\napp\r\n")
        #expect(s.send("HELLO 3 SETNAME \"two words\"\r\n").hasPrefix("-ERR Client names cannot contain spaces"))
        #expect(s.send("CLIENT GETNAME\r\n") == "$3\r\napp\r\n")
        #expect(s.send("CLIENT SETNAME \"\"\r\n") == "+OK\r\n")
        #expect(s.send("CLIENT GETNAME\r\n") == "_\r\n")
    }

    @Test func helloAndAuthSignInAsRedisClientsDo() {
        let s = SessionHarness(answer: { call in
            switch call.method {
            case "auth.login": return .result(Data(#"{"token":"t"}"#.utf8))
            case "auth.resume": return call.params == Data(#"{"token":"tb1_x"}"#.utf8) ? .result(Data("{}".utf8)) : .failure(ServiceError(.unauthenticated, "invalid or expired token", field: "token"))
            default: return .result(call.params)
            }
        })
        #expect(s.send("HELLO 3 AUTH alice Alice-Pass-1\r\n").hasPrefix("%6\r\n"))
        #expect(s.send("HELLO 3 AUTH default tb1_x\r\n").hasPrefix("%6\r\n"))
        #expect(s.send("HELLO 3 AUTH default wrong\r\n") == "-UNAUTHENTICATED token: invalid or expired token\r\n")
        #expect(s.send("AUTH default tb1_x\r\n") == "+OK\r\n")
        #expect(s.send("AUTH tb1_x\r\n") == "+OK\r\n")
        #expect(s.send("HELLO 3 AUTH alice\r\n").hasPrefix("-ERR syntax error"))
    }

    @Test func deepPipelinesGetBackpressureNotErrors() {
        let s = SessionHarness(answer: { _ in nil })
        let count = 10_000
        let pipeline = (0..<count).flatMap { RESPClient.command(["catalog.get", "id", "\($0)"]) }
        s.session.receive(pipeline, now: s.now)
        // A new connection starts with a few calls in flight; no more is read, and nothing is refused.
        #expect(s.kept.withLock { $0.count } == 16)
        #expect(!s.session.wantsInput(now: s.now))
        #expect(s.drain() == "")
        var answered = 0
        var replies = ""
        var widest = 0
        for _ in 0..<(count * 2) where answered < count {
            widest = max(widest, s.kept.withLock { $0.count })
            answered += s.answerKept()
            replies += s.drain()
        }
        #expect(answered == count)
        // Small replies widened the window to the full 128.
        #expect(widest == 128)
        #expect(!replies.contains("-"))
        #expect(replies.components(separatedBy: "$").count - 1 == count)
        // In order: the last reply is the last command's params.
        #expect(replies.hasSuffix(#"{"id":\#(count - 1)}"# + "\r\n"))
    }

    @Test func heavyRepliesShrinkTheWindowSoAClientThatDoesNotReadCostsLittle() {
        let page = Data("\"\(String(repeating: "p", count: 250_000))\"".utf8)
        let kept = Locked<[@Sendable (Outcome, SessionChange?) -> Void]>([])
        let delivered = Locked<[(Int, Outcome)]>([])
        let limits = GatewayLimits()
        let session = ClientSession(limits: limits, framing: FramingLimits(), now: 0, dispatch: { _, _, _, completion in
            kept.withLock { $0.append(completion) }
            return nil
        }, deliver: { slot, outcome, _ in delivered.withLock { $0.append((slot, outcome)) } }, charge: { _, _ in 0 })
        session.receive((0..<400).flatMap { _ in RESPClient.command(["catalog.list", "limit", "100"]) }, now: 0)
        var dispatched = 0
        for _ in 0..<400 {
            let calls = kept.withLock { all in defer { all.removeAll() }; return all }
            if calls.isEmpty { break }
            dispatched += calls.count
            for completion in calls { completion(.result(page), nil) }
            for (slot, outcome) in delivered.withLock({ all in defer { all.removeAll() }; return all }) { session.complete(slot, outcome, nil, now: 0) }
        }
        // Nothing is read by the client: the session stopped taking requests near its bound.
        #expect(dispatched <= 20, "\(dispatched) dispatched")
        #expect(session.pendingOutput < limits.maxPendingOutputBytes + 16 * page.count, "\(session.pendingOutput) bytes unsent")
        #expect(session.expired(now: 6_000_000_000) == .slowReader)
    }

    /// A batch whose members answered at once weigh more than the output bound is still
    /// answered whole: its held answers are not something the client can take, so they do not
    /// stop the members that finish it.
    @Test func aBatchHeavierThanTheOutputBoundIsAnswered() {
        let page = Data("\"\(String(repeating: "p", count: 300_000))\"".utf8)
        let s = SessionHarness(answer: { _ in .result(page) })
        let batch = "[" + (1...5).map { #"{"jsonrpc":"2.0","id":\#($0),"method":"big"}"# }.joined(separator: ",") + "]\n"
        let reply = s.send(batch)
        #expect(reply.utf8.count > 5 * 300_000 && (1...5).allSatisfy { reply.contains(#""id":\#($0),"#) }, "\(reply.utf8.count) bytes")
    }

    /// Past the gateway's bound for replies, a connection over its share runs no more of the
    /// calls it read, however small its replies were before (a reply-size estimate taught by
    /// pings lets it read 128 calls at once): the eighth of eight such clients holds about its
    /// share and one reply, not its own bound.
    @Test func pastTheGatewaysBoundCallsReadWaitHoweverSmallTheRepliesWere() {
        var limits = GatewayLimits()
        limits.maxUnsentReplyBytes = 2 << 20
        let memory = OutputMemory(limits: limits)
        let page = Data("\"\(String(repeating: "p", count: 300_000))\"".utf8)
        let hogs = (0..<8).map { _ in
            SessionHarness(limits: limits, memory: memory, answer: { $0.method == "ping" ? .pong : .result(page) })
        }
        for hog in hogs {
            for _ in 0..<100 { hog.send(Array(RESPClient.command(["PING"]))) }
            hog.session.receive((0..<128).flatMap { _ in RESPClient.command(["big"]) }, now: hog.now)
        }
        let last = hogs[7].session.pendingOutput
        #expect(last < (2 << 20) / 8 + page.count + 1_000, "\(last) bytes unsent")
        // Its client takes it all: the calls it read go on.
        #expect(hogs[7].drain().utf8.count == last)
        #expect(hogs[7].session.pendingOutput > 0)
    }

    /// Replies that the session answers itself (ECHO) pile up below the bound on unsent bytes,
    /// yet with what the calls owed would add they stop the reading: a client that then takes
    /// nothing for 5 s is a slow reader, as one over the bound is (not kept for the idle timeout).
    @Test func aClientThatStopsTheReadingBelowTheBoundIsDroppedAfterTheGrace() {
        let harness = SessionHarness()
        let echo = RESPClient.command(["ECHO", String(repeating: "e", count: 1_000)])
        var sent = 0
        for _ in 0..<2_000 where harness.session.wantsInput(now: harness.now) {
            harness.session.receive((0..<64).flatMap { _ in echo }, now: harness.now)
            sent += 64
        }
        let session = harness.session
        #expect(!session.wantsInput(now: harness.now), "still reading after \(sent) commands")
        #expect(session.pendingOutput > 0)
        harness.advance(milliseconds: 4_000)
        #expect(session.expired(now: harness.now) == nil)
        harness.advance(milliseconds: 1_100)
        #expect(session.expired(now: harness.now) == .slowReader, "\(session.pendingOutput) bytes unsent")
        #expect(session.nextDeadline().map { $0 <= harness.now } == true)
    }

    @Test func aRateOverTheAddressLimitPausesReading() {
        let s = SessionHarness(charge: { $1 > 0 ? 500_000_000 : 0 })
        #expect(s.send("PING\r\n") == "+PONG\r\n")
        #expect(!s.session.wantsInput(now: s.now) || (s.session.nextDeadline() ?? .max) <= s.now + 500_000_000)
        // Read while paused: kept, not answered, not refused.
        #expect(s.send("PING\r\n") == "")
        s.advance(milliseconds: 600)
        // Nothing more arrives from the client: the clock alone lets the kept request go.
        s.session.tick(now: s.now)
        #expect(s.drain() == "+PONG\r\n")
    }
}

@Suite struct ConnectionTimeTests {
    static func limits() -> GatewayLimits {
        var limits = GatewayLimits()
        limits.firstByteTimeoutMilliseconds = 1_000
        limits.requestTimeoutMilliseconds = 2_000
        limits.idleTimeoutMilliseconds = 5_000
        return limits
    }

    @Test func aConnectionMustStartARequestSoon() {
        let s = SessionHarness(limits: ConnectionTimeTests.limits())
        _ = s.send("   \r\n  ")
        s.advance(milliseconds: 900)
        #expect(s.session.expired(now: s.now) == nil)
        s.advance(milliseconds: 200)
        #expect(s.session.expired(now: s.now) == .firstByteTimeout)
    }

    @Test func notificationsAfterTheClientLeftRunForAWhileOnly() {
        let s = SessionHarness(limits: ConnectionTimeTests.limits())
        _ = s.send(#"{"jsonrpc":"2.0","method":"ping"}"# + "\n")
        s.session.endArrived(now: s.now)
        s.advance(milliseconds: 1_500)
        _ = s.send(#"{"jsonrpc":"2.0","method":"ping"}"# + "\n")
        #expect(s.session.expired(now: s.now) == nil)
        s.advance(milliseconds: 1_000)
        #expect(s.session.expired(now: s.now) == .abandoned)
        // One that is answered shows the client is still there.
        let t = SessionHarness(limits: ConnectionTimeTests.limits())
        t.session.endArrived(now: t.now)
        #expect(t.send(#"{"jsonrpc":"2.0","id":1,"method":"ping"}"# + "\n").contains("pong"))
        t.advance(milliseconds: 3_000)
        #expect(t.session.expired(now: t.now) != .abandoned)
    }

    @Test func aStartedRequestMustFinish() {
        let s = SessionHarness(limits: ConnectionTimeTests.limits())
        for byte in Array("catalog.get id".utf8) {
            _ = s.send([byte])
            s.advance(milliseconds: 300)
        }
        #expect(s.session.expired(now: s.now) == .requestTimeout)
    }

    @Test func blankLinesDoNotKeepAConnectionOpen() {
        for first in ["PING\r\n", #"{"jsonrpc":"2.0","id":1,"method":"ping"}"# + "\n"] {
            let s = SessionHarness(limits: ConnectionTimeTests.limits())
            #expect(s.send(first) != "")
            for _ in 0..<6 {
                s.advance(milliseconds: 1_000)
                _ = s.send("\r\n")
            }
            #expect(s.session.expired(now: s.now) == .idle, "\(first)")
        }
    }
}

@Suite struct FairnessTests {
    @Test func aFloodWaitsBehindItsOwnRequests() {
        let queue = FairQueue(window: 1)
        let order = Mutex<[String]>([])
        let finish = Mutex<[@Sendable () -> Void]>([])
        func job(_ name: String) -> FairQueue.Job {
            FairQueue.Job(deadline: .max, run: { done in
                order.withLock { $0.append(name) }
                finish.withLock { $0.append(done) }
            }, expire: {})
        }
        let flood = ClientKey(address: "10.0.0.1", connection: 1)
        let victim = ClientKey(address: "10.0.0.2", connection: 2)
        for i in 0..<100 { queue.submit(flood, job("flood\(i)")) }
        queue.submit(victim, job("victim"))
        // The victim has used nothing: it goes ahead of 99 flood jobs.
        for _ in 0..<1 {
            let next = finish.withLock { $0.removeFirst() }
            next()
        }
        #expect(order.withLock { $0 } == ["flood0", "victim"])
        // A client that shows up after the flood was served for a while goes next.
        for _ in 0..<50 {
            let next = finish.withLock { $0.removeFirst() }
            next()
        }
        let late = ClientKey(address: "10.0.0.3", connection: 3)
        queue.submit(late, job("late"))
        let next = finish.withLock { $0.removeFirst() }
        next()
        #expect(order.withLock { $0 }.last == "late")
        for _ in 0..<200 {
            guard let next = finish.withLock({ $0.isEmpty ? nil : $0.removeFirst() }) else { break }
            next()
        }
        #expect(order.withLock { $0.count } == 102)
        #expect(queue.waiting == 0 && queue.running == 0)
    }

    /// 200 addresses each keep one costly request waiting (100 ms of the backend each) and
    /// send the next as soon as it is answered; a victim that sends a cheap one now and then
    /// goes next, however many wait, because the queue remembers what each address used
    /// (a turn of each address would put it 200 requests back, 20 s past its deadline).
    @Test func twoHundredBusyAddressesDoNotPutAVictimBehindATurnOfEach() {
        let clock = Locked<UInt64>(1_000_000_000)
        let queue = FairQueue(window: 1, clock: { clock.withLock { $0 } })
        let started = Locked<[(name: String, cost: UInt64, done: @Sendable () -> Void)]>([])
        func job(_ name: String, cost: UInt64) -> FairQueue.Job {
            FairQueue.Job(deadline: .max, run: { done in started.withLock { $0.append((name, cost, done)) } }, expire: {})
        }
        let attackers = (0..<200).map { ClientKey(address: "203.0.113.\($0)", connection: UInt64($0)) }
        // Finishes the oldest running job after its cost; an attacker's is sent again at once.
        func finishNext() -> String? {
            guard let next = started.withLock({ $0.isEmpty ? nil : $0.removeFirst() }) else { return nil }
            clock.withLock { $0 += next.cost }
            if next.name.hasPrefix("203.") {
                let attacker = attackers.first { $0.address == next.name }!
                queue.submit(attacker, job(attacker.address, cost: 100_000_000))
            }
            next.done()
            return next.name
        }
        for attacker in attackers { queue.submit(attacker, job(attacker.address, cost: 100_000_000)) }
        // Two turns of every attacker, then the victim asks.
        for _ in 0..<400 { _ = finishNext() }
        queue.submit(ClientKey(address: "zz-victim", connection: 999), job("victim", cost: 1_000_000))
        var before = 0
        for _ in 0..<300 {
            guard let name = finishNext(), name != "victim" else { break }
            before += 1
        }
        #expect(before <= 1, "the victim waited behind \(before) costly requests")
        #expect(queue.waiting + queue.running == 200)
    }

    /// 200 addresses new to the queue each send a request of a kind known to be costly, while
    /// the victim has been busy with cheap ones: the victim's next cheap request still goes
    /// first, as its use once it ran would be less than theirs. And a lower priority class
    /// (sign-ups) waits while a higher one (logins) does, however little its addresses used.
    @Test func aCostlyKindAndALowerClassWaitBehindACheapRequest() {
        let clock = Locked<UInt64>(1_000_000_000)
        let queue = FairQueue(window: 1, clock: { clock.withLock { $0 } })
        let started = Locked<[(name: String, cost: UInt64, done: @Sendable () -> Void)]>([])
        func job(_ name: String, kind: String, cost: UInt64, priority: Int = 0) -> FairQueue.Job {
            FairQueue.Job(deadline: .max, run: { done in started.withLock { $0.append((name, cost, done)) } }, expire: {}, kind: kind, priority: priority)
        }
        func finishNext() -> String? {
            guard let next = started.withLock({ $0.isEmpty ? nil : $0.removeFirst() }) else { return nil }
            clock.withLock { $0 += next.cost }
            next.done()
            return next.name
        }
        let victim = ClientKey(address: "198.51.100.9", connection: 1)
        // The queue learns the kinds: a third address's costly request, the victim's 200 cheap ones.
        queue.submit(ClientKey(address: "192.0.2.1", connection: 2), job("teacher", kind: "tours.list", cost: 100_000_000))
        _ = finishNext()
        for n in 0..<200 {
            queue.submit(victim, job("v\(n)", kind: "catalog.get", cost: 1_000_000))
            _ = finishNext()
        }
        // Something runs, so the rest wait.
        queue.submit(ClientKey(address: "192.0.2.1", connection: 2), job("holder", kind: "tours.list", cost: 100_000_000))
        for n in 0..<200 { queue.submit(ClientKey(address: "203.0.113.\(n)", connection: UInt64(10 + n)), job("a\(n)", kind: "tours.list", cost: 100_000_000)) }
        queue.submit(victim, job("victim", kind: "catalog.get", cost: 1_000_000))
        #expect(finishNext() == "holder")
        #expect(finishNext() == "victim")
        // Sign-ups from quiet addresses wait behind a login from a busy one.
        while finishNext() != nil {}
        queue.submit(ClientKey(address: "192.0.2.1", connection: 2), job("holder", kind: "auth.login", cost: 70_000_000))
        for n in 0..<20 {
            queue.submit(ClientKey(address: "203.0.114.\(n)", connection: UInt64(500 + n)), job("s\(n)", kind: "auth.register", cost: 70_000_000, priority: 1))
        }
        queue.submit(victim, job("login", kind: "auth.login", cost: 70_000_000))
        #expect(finishNext() == "holder")
        #expect(finishNext() == "login")
    }

    @Test func jobsPastTheirDeadlineExpireUnrun() {
        let queue = FairQueue(window: 1)
        let expired = Mutex(0)
        let hold = Mutex<(@Sendable () -> Void)?>(nil)
        queue.submit(ClientKey(address: "a", connection: 1), FairQueue.Job(deadline: .max, run: { done in hold.withLock { $0 = done } }, expire: {}))
        for _ in 0..<5 {
            queue.submit(ClientKey(address: "b", connection: 2), FairQueue.Job(deadline: 1, run: { _ in Issue.record("ran an expired job") },
                                                                               expire: { expired.withLock { $0 += 1 } }))
        }
        hold.withLock { $0 }?()
        #expect(expired.withLock { $0 } == 5)
    }

    @Test func waitingJobsExpireOnTimeWhileNothingFinishes() {
        let queue = FairQueue(window: 1)
        let expired = Mutex(0)
        queue.submit(ClientKey(address: "a", connection: 1), FairQueue.Job(deadline: .max, run: { _ in }, expire: {}))
        for i in 0..<10 {
            queue.submit(ClientKey(address: i % 2 == 0 ? "b" : "c", connection: UInt64(i)),
                         FairQueue.Job(deadline: i < 6 ? 100 : .max, run: { _ in }, expire: { expired.withLock { $0 += 1 } }))
        }
        queue.expireOverdue(now: 200)
        #expect(expired.withLock { $0 } == 6)
        #expect(queue.waiting == 4 && queue.running == 1)
    }

    @Test func jobsFinishingAtOnceDoNotRecurse() {
        let queue = FairQueue(window: 1)
        let ran = Mutex(0)
        let hold = Mutex<(@Sendable () -> Void)?>(nil)
        queue.submit(ClientKey(address: "a", connection: 1), FairQueue.Job(deadline: .max, run: { done in hold.withLock { $0 = done } }, expire: {}))
        for _ in 0..<50_000 {
            queue.submit(ClientKey(address: "b", connection: 2), FairQueue.Job(deadline: .max, run: { done in
                ran.withLock { $0 += 1 }
                done()
            }, expire: {}))
        }
        onConnectionStack { hold.withLock { $0 }?() }
        #expect(ran.withLock { $0 } == 50_000)
    }

    @Test func aNearlyFullGatewayKeepsItsLastQuarterForAddressesWithFewConnections() {
        var limits = GatewayLimits()
        limits.maxConnections = 40
        limits.maxConnectionsPerAddress = 16
        let addresses = ClientAddresses(limits: limits)
        var open = 0
        for _ in 0..<16 { open += 1; #expect(addresses.open("a", total: open)) }
        for _ in 0..<14 { open += 1; #expect(addresses.open("b", total: open)) }
        // 30 of 40 open: an address with 2 or more connections gets no more, a new one does.
        #expect(!addresses.open("b", total: open + 1))
        open += 1
        #expect(addresses.open("c", total: open))
        open += 1
        #expect(addresses.open("c", total: open))
        #expect(!addresses.open("c", total: open + 1))
    }

    @Test func addressesGetAShareOfConnectionsAndSignIns() {
        var limits = GatewayLimits()
        limits.maxConnectionsPerAddress = 2
        limits.loginsPerMinutePerAddress = 3
        let clock = Mutex<UInt64>(1_000_000_000)
        let addresses = ClientAddresses(limits: limits, clock: { clock.withLock { $0 } })
        #expect(addresses.open("a", total: 1) && addresses.open("a", total: 2) && !addresses.open("a", total: 3) && addresses.open("b", total: 3))
        addresses.close("a")
        #expect(addresses.open("a", total: 3))
        for _ in 0..<3 { #expect(addresses.signInPermit("a", .login) == nil) }
        #expect(addresses.signInPermit("a", .login) != nil)
        #expect(addresses.signInPermit("b", .login) == nil)
        clock.withLock { $0 += 20_000_000_000 }
        #expect(addresses.signInPermit("a", .login) == nil)
    }
}

@Suite struct TokenCacheTests {
    @Test func aClockReadBeforeALaterStoreDoesNotTrap() {
        // Another thread stored a time later than the one this reader took before the lock.
        let clock = Mutex<UInt64>(5_000_000_000)
        let cache = TokenCache(clock: { clock.withLock { $0 } })
        let owner = TokenOwner(userId: 7, role: "user")
        cache.remember("t", owner)
        clock.withLock { $0 = 1_000_000_000 }
        #expect(cache.owner(of: "t") == owner)
        cache.revoke("u")
        clock.withLock { $0 = 500_000_000 }
        cache.remember("u", owner)
        #expect(cache.owner(of: "u") == nil)
        clock.withLock { $0 = 10_000_000_000 }
        #expect(cache.owner(of: "t") == nil)
    }

    @Test func forgettingAUserDropsAllTheirTokens() {
        let cache = TokenCache()
        cache.remember("a1", TokenOwner(userId: 1, role: "admin"))
        cache.remember("a2", TokenOwner(userId: 1, role: "admin"))
        cache.remember("b", TokenOwner(userId: 2, role: "user"))
        cache.forget(userId: 1)
        #expect(cache.owner(of: "a1") == nil && cache.owner(of: "a2") == nil && cache.owner(of: "b") != nil)
        // A check that was under way when the user was forgotten is not learned.
        cache.remember("a1", TokenOwner(userId: 1, role: "admin"))
        #expect(cache.owner(of: "a1") == nil)
        cache.forgetAll()
        #expect(cache.owner(of: "b") == nil)
    }
}

/// RESP arrays as clients send them.
enum RESPClient {
    static func command(_ words: [String]) -> [UInt8] {
        var out = Array("*\(words.count)\r\n".utf8)
        for word in words { out += Array("$\(word.utf8.count)\r\n".utf8) + Array(word.utf8) + [0x0D, 0x0A] }
        return out
    }
}

@Suite struct LimitDocumentationTests {
    /// Every limit the gateway takes is in gateway.md's Limits table with its default.
    @Test func everyLimitIsDocumentedWithItsDefault() throws {
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        let doc = try String(contentsOf: root.appendingPathComponent("Protocols/gateway.md"), encoding: .utf8)
        let defaults = GatewayLimits()
        for setting in GatewayLimits.settings {
            #expect(doc.contains("| `--\(setting.name)` | \(defaults[keyPath: setting.field]) |"), "\(setting.name)")
        }
        #expect(doc.contains("| `--max-request-bytes` | \(1 << 20) |") && doc.contains("| `--max-json-depth` | \(StrictJSON.defaultMaxDepth) |"))
    }
}
