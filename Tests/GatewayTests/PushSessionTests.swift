import Bus
import Contracts
import Foundation
@testable import Gateway
import ServiceCore
import Testing

/// Subscriptions and pushes on one connection, driven by hand (`SessionHarness`): what each
/// framing answers, who hears what, and what a client that does not read costs.
@Suite struct PushSessionTests {
    static func push(_ n: Int, user: Int64 = 7, topic: String = "notify.alert", coalesce: String? = nil, body: String? = nil) -> Push {
        Push(topic: topic, id: "p\(n)", userId: user, coalesce: coalesce, body: Data((body ?? #"{"n":\#(n)}"#).utf8))
    }

    /// Signs `h` in (JSON-RPC `auth.resume` with the token `tok`), and subscribes it to `notify.alert` when asked.
    static func signIn(_ h: SessionHarness, subscribe: Bool = false) {
        h.send(#"{"jsonrpc":"2.0","id":90,"method":"auth.resume","params":{"token":"tok"}}"# + "\n")
        h.deliverAll()
        if subscribe { self.subscribe(h) }
    }

    static func subscribe(_ h: SessionHarness) {
        h.send(#"{"jsonrpc":"2.0","id":91,"method":"subscribe","params":{"topics":["notify.alert"]}}"# + "\n")
        h.deliverAll()
    }

    @Test func aSignedInJSONRPCConnectionSubscribesAndHearsItsUsersPushesOnly() {
        let h = SessionHarness(user: 7)
        // Not signed in: refused, and nothing registered.
        #expect(h.send(#"{"jsonrpc":"2.0","id":1,"method":"subscribe","params":{"topics":["notify.alert"]}}"# + "\n").contains(#""code":"unauthenticated""#))
        #expect(h.listened.withLock { $0.isEmpty })
        PushSessionTests.signIn(h)
        h.send(#"{"jsonrpc":"2.0","id":3,"method":"subscribe","params":{"topics":["notify.alert","chat.message"]}}"# + "\n")
        #expect(h.deliverAll() == #"{"jsonrpc":"2.0","id":3,"result":{"topics":["chat.message","notify.alert"]}}"# + "\n")
        #expect(h.listened.withLock { $0.last?.user == 7 && $0.last?.topics == ["notify.alert", "chat.message"] })
        h.session.push(PushSessionTests.push(1))
        #expect(h.drain() == #"{"jsonrpc":"2.0","method":"push","params":{"topic":"notify.alert","id":"p1","body":{"n":1}}}"# + "\n")
        // Another user's push, or a topic not subscribed: nothing.
        h.session.push(PushSessionTests.push(2, user: 8))
        h.session.push(PushSessionTests.push(3, topic: "other.topic"))
        #expect(h.drain().isEmpty)
        #expect(h.send(#"{"jsonrpc":"2.0","id":4,"method":"unsubscribe","params":{"topics":["chat.message"]}}"# + "\n")
                == #"{"jsonrpc":"2.0","id":4,"result":{"topics":["notify.alert"]}}"# + "\n")
        #expect(h.send(#"{"jsonrpc":"2.0","id":5,"method":"unsubscribe"}"# + "\n") == #"{"jsonrpc":"2.0","id":5,"result":{"topics":[]}}"# + "\n")
        #expect(h.listened.withLock { $0.last?.topics.isEmpty == true })
        h.session.push(PushSessionTests.push(4))
        #expect(h.drain().isEmpty)
    }

    @Test func signingOutOrInAgainEndsTheSubscriptions() {
        let h = SessionHarness(user: 7)
        PushSessionTests.signIn(h, subscribe: true)
        h.send(#"{"jsonrpc":"2.0","id":3,"method":"auth.logout"}"# + "\n")
        h.deliverAll()
        #expect(h.session.topics.isEmpty)
        #expect(h.listened.withLock { $0.last?.topics.isEmpty == true })
        h.session.push(PushSessionTests.push(1))
        #expect(h.drain().isEmpty)
        // A new sign-in starts with none too.
        PushSessionTests.signIn(h, subscribe: true)
        h.send(#"{"jsonrpc":"2.0","id":6,"method":"auth.resume","params":{"token":"other"}}"# + "\n")
        h.deliverAll()
        #expect(h.session.topics.isEmpty)
        // The connection closing takes it out of the registry.
        PushSessionTests.subscribe(h)
        #expect(h.session.topics == ["notify.alert"])
        h.session.closed()
        #expect(h.listened.withLock { $0.last?.topics.isEmpty == true })
    }

    @Test func pipelinedSubscriptionsChangeInTheOrderAskedAndCountAgainstTheLimitTogether() {
        let h = SessionHarness(user: 7)
        PushSessionTests.signIn(h)
        // Subscribe then unsubscribe in one write: the unsubscribe waits for the subscribe's check.
        h.send(#"{"jsonrpc":"2.0","id":1,"method":"subscribe","params":{"topics":["a"]}}"# + "\n" + #"{"jsonrpc":"2.0","id":2,"method":"unsubscribe","params":{"topics":["a"]}}"# + "\n")
        #expect(h.deliverAll() == #"{"jsonrpc":"2.0","id":1,"result":{"topics":["a"]}}"# + "\n" + #"{"jsonrpc":"2.0","id":2,"result":{"topics":[]}}"# + "\n")
        #expect(h.session.topics.isEmpty && h.listened.withLock { $0.last?.topics.isEmpty == true })
        // Two subscribes of 32 topics each in one write: the second is counted after the first.
        let first = (0..<32).map { #""a\#($0)""# }.joined(separator: ","), second = (0..<32).map { #""b\#($0)""# }.joined(separator: ",")
        h.send(#"{"jsonrpc":"2.0","id":3,"method":"subscribe","params":{"topics":[\#(first)]}}"# + "\n" + #"{"jsonrpc":"2.0","id":4,"method":"subscribe","params":{"topics":[\#(second)]}}"# + "\n")
        let replies = h.deliverAll().split(separator: "\n")
        #expect(replies.count == 2 && replies[1].contains("at most 32 topics"), "\(replies)")
        #expect(h.session.topics.count == 32)
    }

    @Test func aListenerChecksItsTokenEveryMinuteAndClosesWhenItExpired() {
        let h = SessionHarness(user: 7)
        PushSessionTests.signIn(h, subscribe: true)
        #expect(h.session.nextDeadline().map { $0 <= h.now + Subscriptions.recheckInterval } == true)
        h.tokensValid.withLock { $0 = false }  // it expired: no event says so
        h.advance(milliseconds: 59_000)
        h.session.tick(now: h.now)
        h.deliverAll()
        #expect(h.session.topics == ["notify.alert"])
        h.advance(milliseconds: 2_000)
        h.session.tick(now: h.now)
        h.deliverAll()
        #expect(h.session.topics.isEmpty && h.session.isFinished)
    }

    @Test func aUserWithTooManyListeningConnectionsIsRefused() {
        let h = SessionHarness(user: 7)
        h.acceptListeners.withLock { $0 = false }
        PushSessionTests.signIn(h)
        h.send(#"{"jsonrpc":"2.0","id":1,"method":"subscribe","params":{"topics":["notify.alert"]}}"# + "\n")
        #expect(h.deliverAll().contains(#""code":"too_large""#))
        #expect(h.session.topics.isEmpty)
    }

    @Test func aSessionEndedElsewhereStopsThePushesAndClosesTheConnection() {
        let h = SessionHarness(user: 7)
        PushSessionTests.signIn(h, subscribe: true)
        // Still valid: nothing changes, and nothing is written.
        h.session.recheck()
        #expect(h.deliverAll().isEmpty)
        #expect(h.session.topics == ["notify.alert"] && !h.session.isFinished)
        h.tokensValid.withLock { $0 = false }
        h.session.recheck()
        #expect(h.deliverAll().isEmpty)
        #expect(h.session.topics.isEmpty)
        #expect(h.listened.withLock { $0.last?.topics.isEmpty == true })
        #expect(h.session.isFinished)
    }

    @Test func badTopicListsAreRefusedNamingTheField() {
        let h = SessionHarness(user: 7)
        PushSessionTests.signIn(h)
        let many = (0...Subscriptions.maxTopics).map { #""t\#($0)""# }.joined(separator: ",")
        for params in [#"{"topics":"notify.alert"}"#, #"{"topics":["Notify"]}"#, #"{"topics":[""]}"#, #"{"topics":[1]}"#,
                       #"{"topics":["\#(String(repeating: "a", count: 65))"]}"#, #"{"topics":[]}"#, "{}", #"{"topics":[\#(many)]}"#] {
            let reply = h.send(#"{"jsonrpc":"2.0","id":2,"method":"subscribe","params":\#(params)}"# + "\n")
            // A member of the wrong type is named where it is (`topics[0]`, by the params' shape).
            let field = params == #"{"topics":[1]}"# ? "topics[0]" : "topics"
            #expect(reply.contains(#""field":"\#(field)""#), "\(params): \(reply)")
        }
        #expect(h.listened.withLock { $0.isEmpty })
        // 32 at once is the most, over several calls too.
        let half = (0..<16).map { #""a\#($0)""# }.joined(separator: ",")
        let other = (0..<17).map { #""b\#($0)""# }.joined(separator: ",")
        h.send(#"{"jsonrpc":"2.0","id":3,"method":"subscribe","params":{"topics":[\#(half)]}}"# + "\n")
        #expect(h.deliverAll().contains("a15"))
        #expect(h.send(#"{"jsonrpc":"2.0","id":4,"method":"subscribe","params":{"topics":[\#(other)]}}"# + "\n").contains("at most 32 topics"))
    }

    /// Signs a RESP harness in (AUTH <token>) and subscribes it to `topics`; returns the confirmation.
    static func respSubscriber(_ h: SessionHarness, _ topics: String) -> String {
        h.send("AUTH tok\r\n")
        #expect(h.deliverAll() == "+OK\r\n")
        h.send("SUBSCRIBE \(topics)\r\n")
        return h.deliverAll()
    }

    @Test func respTwoSubscribesAsRedisDoesAndTakesOnlyPubSubCommandsMeanwhile() {
        let h = SessionHarness(user: 7)
        #expect(PushSessionTests.respSubscriber(h, "notify.alert chat.message")
                == "*3\r\n$9\r\nsubscribe\r\n$12\r\nnotify.alert\r\n:1\r\n*3\r\n$9\r\nsubscribe\r\n$12\r\nchat.message\r\n:2\r\n")
        h.session.push(PushSessionTests.push(1))
        #expect(h.drain() == "*3\r\n$7\r\nmessage\r\n$12\r\nnotify.alert\r\n$49\r\n" + #"{"topic":"notify.alert","id":"p1","body":{"n":1}}"# + "\r\n")
        #expect(h.send("PING\r\n") == "*2\r\n$4\r\npong\r\n$0\r\n\r\n")
        #expect(h.send("catalog.get id 1\r\n").hasPrefix("-ERR Can't execute 'catalog.get'"))
        #expect(h.send("UNSUBSCRIBE chat.message\r\n") == "*3\r\n$11\r\nunsubscribe\r\n$12\r\nchat.message\r\n:1\r\n")
        #expect(h.send("UNSUBSCRIBE\r\n") == "*3\r\n$11\r\nunsubscribe\r\n$12\r\nnotify.alert\r\n:0\r\n")
        #expect(h.send("UNSUBSCRIBE\r\n") == "*3\r\n$11\r\nunsubscribe\r\n$-1\r\n:0\r\n")
        // Out of the pub/sub mode: every command again.
        #expect(h.send("PING\r\n") == "+PONG\r\n")
    }

    @Test func respTwoPubSubModeHoldsWhileASubscriptionIsPendingOrAfterHelloTwo() {
        let h = SessionHarness(user: 7)
        h.send("AUTH tok\r\n")
        h.deliverAll()
        // A refused SUBSCRIBE right behind a pending one: the mode holds for the pending one.
        #expect(h.send("SUBSCRIBE a\r\nSUBSCRIBE Bad\r\nPING\r\n").isEmpty)
        #expect(h.deliverAll().hasSuffix("-INVALID_ARGUMENT topics: a topic is 1 to 64 bytes of a-z, 0-9, '.', '_' and '-', starting with a letter\r\n*2\r\n$4\r\npong\r\n$0\r\n\r\n"))
        #expect(h.send("HELLO 3\r\n").hasPrefix("-ERR Can't execute 'hello'"))
        // RESP3 takes every command; back to RESP2 while subscribed, the mode is back.
        let k = SessionHarness(user: 7)
        k.send("AUTH tok\r\n")
        k.deliverAll()
        k.send("HELLO 3\r\n")
        k.send("SUBSCRIBE a\r\n")
        k.deliverAll()
        #expect(k.send("HELLO 2\r\n").hasPrefix("*"))
        #expect(k.send("PING\r\n") == "*2\r\n$4\r\npong\r\n$0\r\n\r\n")
        // Each topic named is confirmed, repeats too.
        #expect(k.send("SUBSCRIBE b b\r\n").isEmpty)
        #expect(k.deliverAll() == "*3\r\n$9\r\nsubscribe\r\n$1\r\nb\r\n:2\r\n*3\r\n$9\r\nsubscribe\r\n$1\r\nb\r\n:2\r\n")
    }

    @Test func aRefusedRespSubscribeLeavesThePubSubMode() {
        let h = SessionHarness(user: 7)
        #expect(h.send("SUBSCRIBE notify.alert\r\n").hasPrefix("-UNAUTHENTICATED"))
        #expect(h.send("PING\r\n") == "+PONG\r\n")
        #expect(h.send("SUBSCRIBE\r\n").hasPrefix("-ERR wrong number of arguments"))
        #expect(h.send("PSUBSCRIBE notify.*\r\n").hasPrefix("-UNAUTHENTICATED"))
        #expect(h.send("SSUBSCRIBE notify.alert\r\n").hasPrefix("-ERR SSUBSCRIBE is not supported"))
    }

    @Test func respThreeSendsPushFramesAndKeepsEveryCommand() {
        let h = SessionHarness(user: 7)
        #expect(h.send("HELLO 3\r\n").hasPrefix("%6\r\n"))
        #expect(PushSessionTests.respSubscriber(h, "notify.alert") == ">3\r\n$9\r\nsubscribe\r\n$12\r\nnotify.alert\r\n:1\r\n")
        h.session.push(PushSessionTests.push(1))
        #expect(h.drain().hasPrefix(">3\r\n$7\r\nmessage\r\n$12\r\nnotify.alert\r\n"))
        #expect(h.send("PING\r\n") == "+PONG\r\n")
        #expect(h.send("UNSUBSCRIBE\r\n") == ">3\r\n$11\r\nunsubscribe\r\n$12\r\nnotify.alert\r\n:0\r\n")
    }

    @Test func aClientThatDoesNotReadKeepsOnlyTheLatestOfEachKeyThenIsDisconnected() {
        var limits = GatewayLimits()
        limits.maxPendingOutputBytes = 16_384
        let h = SessionHarness(limits: limits, user: 7)
        PushSessionTests.signIn(h, subscribe: true)
        h.send(#"{"jsonrpc":"2.0","id":9,"method":"subscribe","params":{"topics":["chat.message"]}}"# + "\n")
        h.deliverAll()
        // The client reads nothing: 16 KiB of output fill, the rest queue; positions coalesce.
        let big = #"{"pad":"\#(String(repeating: "x", count: 900))"}"#
        for n in 0..<10 { h.session.push(PushSessionTests.push(n, body: big)) }
        for n in 0..<500 { h.session.push(PushSessionTests.push(1_000 + n, coalesce: "position", body: #"{"n":\#(n)}"#)) }
        // The same key on another topic is another push's.
        h.session.push(PushSessionTests.push(1_600, topic: "chat.message", coalesce: "position"))
        #expect(h.session.expired(now: h.now) == nil)
        // Once it reads, what was kept comes out in order: the unkeyed ones, then the last position only.
        var out = ""
        for _ in 0..<20 { out += h.drain() }
        #expect((0..<10).allSatisfy { out.contains(#""id":"p\#($0)""#) })
        #expect(out.contains(#""id":"p1499""#) && !out.contains(#""id":"p1498""#) && out.contains(#""id":"p1600""#))
        // A thousand and more it cannot keep: it is disconnected, and hears nothing more.
        for n in 0...OutputBudget.maxQueuedPushes + 5 { h.session.push(PushSessionTests.push(2_000 + n, body: big)) }
        #expect(h.session.expired(now: h.now) == .unreadPushes)
    }

    @Test func aSubscribedConnectionIsNotIdle() {
        var limits = GatewayLimits()
        limits.idleTimeoutMilliseconds = 1_000
        let h = SessionHarness(limits: limits, user: 7)
        PushSessionTests.signIn(h, subscribe: true)
        h.advance(milliseconds: 5_000)
        #expect(h.session.expired(now: h.now) == nil)
        h.send(#"{"jsonrpc":"2.0","id":3,"method":"unsubscribe"}"# + "\n")
        h.advance(milliseconds: 1_500)
        #expect(h.session.expired(now: h.now) == .idle)
    }

    @Test func theRegistryPostsAPushToItsUsersConnectionsOnItsTopicOnly() throws {
        let registry = PushRegistry(gatewayId: "gw")
        let inbox = try LoopInbox()
        registry.set(user: 1, connection: 10, inbox: inbox, interests: Interests(topics: ["notify.alert"]))
        registry.set(user: 1, connection: 11, inbox: inbox, interests: Interests(topics: ["chat.message"]))
        registry.set(user: 2, connection: 20, inbox: inbox, interests: Interests(topics: ["notify.alert"]))
        #expect(registry.deliver(PushSessionTests.push(1, user: 1)) == 1)
        guard case .push(let key, let push, _)? = inbox.take().first else {
            Issue.record("nothing posted")
            return
        }
        #expect(key == 10 && push.id == "p1")
        #expect(registry.deliver(PushSessionTests.push(2, user: 3)) == 0)
        // Not to the connection whose request caused it.
        var own = PushSessionTests.push(4, user: 1)
        own.origin = PushRegistry.origin("gw", 10)
        #expect(registry.deliver(own) == 0)
        own.origin = PushRegistry.origin("other-gateway", 10)
        #expect(registry.deliver(own) == 1)
        _ = inbox.take()
        registry.set(user: 1, connection: 10, inbox: inbox, interests: Interests(topics: []))
        #expect(registry.deliver(PushSessionTests.push(3, user: 1)) == 0)
        #expect(registry.count == 2)
        // A backlog the loop has not taken is bounded: past it, pushes are dropped before they are posted.
        var posted = 0
        for n in 0...OutputBudget.maxQueuedPushes { posted += registry.deliver(PushSessionTests.push(100 + n, user: 2)) }
        #expect(posted == OutputBudget.maxQueuedPushes)
        _ = inbox.take()
        // At most 16 listening connections of one user.
        for key in UInt64(100)..<UInt64(100 + PushRegistry.maxConnectionsPerUser - 1) {
            #expect(registry.set(user: 2, connection: key, inbox: inbox, interests: Interests(topics: ["notify.alert"])))
        }
        #expect(!registry.set(user: 2, connection: 999, inbox: inbox, interests: Interests(topics: ["notify.alert"])))
        #expect(registry.set(user: 2, connection: 20, inbox: inbox, interests: Interests(topics: ["chat.message"])))
        registry.recheck(user: 2)
        let rechecked: [UInt64] = inbox.take().compactMap { if case .recheck(let key) = $0 { key } else { nil } }
        #expect(rechecked.count == PushRegistry.maxConnectionsPerUser && rechecked.contains(20))
    }

    /// 5,000 subscribes and unsubscribes in one write: each waits for the one before, and
    /// calls read while held ones are let go come after them, so the state is the last asked.
    @Test func fiveThousandPipelinedChangesLeaveExactlyTheLastState() {
        let h = SessionHarness(user: 7)
        PushSessionTests.signIn(h)
        var chunk = ""
        for k in 0..<5_000 {
            chunk += #"{"jsonrpc":"2.0","id":\#(10_000 + k),"method":"\#(k % 2 == 0 ? "subscribe" : "unsubscribe")","params":{"topics":["churn.\#(k % 7)"]}}"# + "\n"
        }
        h.send(chunk)
        var answers = 0
        for _ in 0..<10_000 {
            let out = h.deliverAll()
            answers += out.split(separator: "\n").count
            if answers >= 5_000 { break }
        }
        #expect(answers == 5_000)
        // The last change of each topic: churn.0, .3 and .5 subscribed, the others not.
        #expect(h.session.topics == ["churn.0", "churn.3", "churn.5"])
    }

    @Test func respPatternsAreHeardAsRedisDoes() {
        let h = SessionHarness(user: 7)
        h.send("AUTH tok\r\n")
        h.deliverAll()
        h.send("PSUBSCRIBE notify.* chat.[a-m]*\r\n")
        #expect(h.deliverAll() == "*3\r\n$10\r\npsubscribe\r\n$8\r\nnotify.*\r\n:1\r\n*3\r\n$10\r\npsubscribe\r\n$11\r\nchat.[a-m]*\r\n:2\r\n")
        // Heard by a pattern: pmessage with the pattern; by name and by a pattern: both.
        h.session.push(PushSessionTests.push(1))
        #expect(h.drain().hasPrefix("*4\r\n$8\r\npmessage\r\n$8\r\nnotify.*\r\n$12\r\nnotify.alert\r\n$"))
        h.send("SUBSCRIBE notify.alert\r\n")
        #expect(h.deliverAll().hasSuffix(":3\r\n"))
        h.session.push(PushSessionTests.push(2))
        let both = h.drain()
        #expect(both.hasPrefix("*3\r\n$7\r\nmessage\r\n") && both.contains("*4\r\n$8\r\npmessage\r\n"))
        h.session.push(PushSessionTests.push(3, topic: "chat.help"))
        h.session.push(PushSessionTests.push(4, topic: "chat.zoo"))
        let chat = h.drain()
        #expect(chat.contains(#""id":"p3""#) && !chat.contains(#""id":"p4""#))
        // Patterns alone keep RESP2's pub/sub mode.
        let p = SessionHarness(user: 7)
        p.send("AUTH tok\r\n")
        p.deliverAll()
        p.send("PSUBSCRIBE notify.*\r\n")
        p.deliverAll()
        #expect(p.send("PING\r\n") == "*2\r\n$4\r\npong\r\n$0\r\n\r\n")
        #expect(p.send("UNSUBSCRIBE\r\n") == "*3\r\n$11\r\nunsubscribe\r\n$-1\r\n:1\r\n")
        #expect(p.send("PING\r\n") == "*2\r\n$4\r\npong\r\n$0\r\n\r\n")
        #expect(h.send("PUNSUBSCRIBE notify.*\r\n") == "*3\r\n$12\r\npunsubscribe\r\n$8\r\nnotify.*\r\n:2\r\n")
        #expect(h.send("PUNSUBSCRIBE\r\n") == "*3\r\n$12\r\npunsubscribe\r\n$11\r\nchat.[a-m]*\r\n:1\r\n")
        // Topics and patterns share the 32.
        let many = (0..<31).map { "p\($0).*" }.joined(separator: " ")
        h.send("PSUBSCRIBE \(many)\r\n")
        #expect(h.deliverAll().hasSuffix(":32\r\n"))
        #expect(h.send("PSUBSCRIBE x*\r\n").contains("at most 32 topics and patterns"))
        #expect(h.send("PSUBSCRIBE Bad*\r\n").hasPrefix("-INVALID_ARGUMENT patterns:"))
    }

    @Test func topicPatternsMatchAsRedisGlobsDo() {
        let cases: [(String, String, Bool)] = [
            ("*", "notify.alert", true), ("notify.*", "notify.alert", true), ("notify.*", "notify", false),
            ("n?tify.alert", "notify.alert", true), ("n?tify.alert", "ntify.alert", false),
            ("chat.[a-c]x", "chat.bx", true), ("chat.[a-c]x", "chat.dx", false), ("chat.[^a-c]x", "chat.dx", true),
            ("chat.[^a-c]x", "chat.ax", false), ("a\\*", "a*", true), ("a\\*", "ab", false), ("*.*.*", "a.b.c", true), ("*.*.*", "a.b", false),
            ("[abc", "a", true), ("", "a", false), ("a", "a", true),
        ]
        for (pattern, topic, expected) in cases {
            #expect(TopicPattern.matches(pattern, topic) == expected, "\(pattern) ~ \(topic)")
        }
        // A pattern built to make backtracking explode is answered at once (one step per pattern byte and topic byte).
        let nasty = String(repeating: "*a", count: 32), topic = String(repeating: "a", count: 63) + "b"
        #expect(!TopicPattern.matches(nasty, topic))
        #expect(TopicPattern.isValid("notify.*") && !TopicPattern.isValid("Notify*") && !TopicPattern.isValid(String(repeating: "*", count: 65)))
    }
}
