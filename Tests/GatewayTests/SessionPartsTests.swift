import Bus
import Contracts
import Foundation
@testable import Gateway
import Testing

/// The parts of a session alone: its output budget, and its deadline table as `expired` and
/// `nextDeadline` both read it.
@Suite struct SessionPartsTests {
    /// Room for calls follows what replies weigh: one call at first when nothing is owed, more
    /// as small replies teach the estimate, none once the bound is reached.
    @Test func roomFollowsWhatRepliesWeigh() {
        let budget = OutputBudget(maxPendingBytes: 1 << 20)
        #expect(budget.callRoom(held: 0, owed: 0) == 16)  // 1 MiB over the first estimate, 64 KiB
        #expect(budget.callRoom(held: 1 << 20, owed: 0) == 0)
        #expect(budget.callRoom(held: (1 << 20) - 1, owed: 0) == 1)  // none owed: one goes
        for _ in 0..<200 { budget.reply(Array(repeating: 0x61, count: 100)) }
        #expect(budget.callRoom(held: 0, owed: 0) > 5_000)
        #expect(budget.pending == 200 * 100)
        budget.wrote(budget.pending)
        #expect(budget.pending == 0 && budget.sent == 0 && budget.output.isEmpty)
    }

    /// A writer that writes a push's message as `id/pattern;` (`-` by name), and a shed notice as `shed N;`.
    static var writer: PushWriter {
        PushWriter(message: { push, pattern in Array("\(push.id)/\(pattern ?? "-");".utf8) }, shed: { Array("shed \($0);".utf8) })
    }

    static func push(_ id: String, body: Int = 10) -> Push {
        Push(topic: "notify.alert", id: id, userId: 1, body: Data(repeating: 0x20, count: body))
    }

    /// Pushes past the window wait as pushes, the latest of a key replacing its earlier one,
    /// and go out oldest first, one message per pattern, as the client reads; past the count
    /// of kept pushes the budget overflows.
    @Test func pushesWaitCoalesceAndOverflow() {
        let budget = OutputBudget(maxPendingBytes: 1 << 20)
        budget.append(Array(repeating: 0x61, count: OutputBudget.pushWindow))
        budget.push(Self.push("a1"), messages: [nil], key: "a", writer: Self.writer)
        budget.push(Self.push("b"), messages: ["n*", "notify.*"], key: nil, writer: Self.writer)
        budget.push(Self.push("a2"), messages: [nil], key: "a", writer: Self.writer)
        #expect(budget.pending == OutputBudget.pushWindow && budget.waitingPushes == 2)
        budget.wrote(budget.pending)
        budget.writePushes(Self.writer)
        // In order, one message per pattern, the latest of key a only.
        #expect(String(decoding: budget.output[budget.sent...], as: UTF8.self) == "b/n*;b/notify.*;a2/-;" && budget.waitingPushes == 0)
        let flooded = OutputBudget(maxPendingBytes: 1 << 20)
        flooded.append(Array(repeating: 0x61, count: OutputBudget.pushWindow))
        for n in 0...OutputBudget.maxQueuedPushes { flooded.push(Self.push("p\(n)"), messages: [nil], key: nil, writer: Self.writer) }
        #expect(flooded.overflowed && flooded.waitingPushes == 0)
    }

    /// A push waits as itself, however many patterns it matches: 1,000 pushes of 33 messages
    /// each, for a client that reads nothing, hold one window of output and 1,000 pushes'
    /// bodies counted once each, not 33 times.
    @Test func aPushWaitsOnceHoweverManyPatternsItMatches() {
        let shared = OutputMemory(limits: GatewayLimits())
        let memory = shared.pushes
        let budget = OutputBudget(maxPendingBytes: 1 << 20, memory: shared)
        let messages: [String?] = [nil] + (0..<32).map { "notify.*\($0)" }
        for n in 0..<1_000 { budget.push(Self.push("p\(n)", body: 900), messages: messages, key: nil, writer: Self.writer) }
        #expect(budget.pending < OutputBudget.pushWindow + 100)
        #expect(memory.waiting < 1_000 * 1_000 && memory.waiting > 900 * 900, "\(memory.waiting)")
        budget.dropQueuedPushes()
        #expect(memory.waiting == 0)
    }

    /// Past the gateway's bound, the connection holding more than its fair share sheds its
    /// own waiting pushes, coalescable ones first, then the oldest, and tells its client how
    /// many once it has room; a connection within its share keeps all of its own.
    @Test func pastTheGatewaysBoundTheBiggestHolderShedsAndIsTold() {
        var limits = GatewayLimits()
        limits.maxQueuedPushBytes = 20_000
        let shared = OutputMemory(limits: limits)
        let memory = shared.pushes
        let slow = OutputBudget(maxPendingBytes: 1 << 20, memory: shared)
        let modest = OutputBudget(maxPendingBytes: 1 << 20, memory: shared)
        for budget in [slow, modest] { budget.append(Array(repeating: 0x61, count: OutputBudget.pushWindow)) }
        for n in 0..<3 { modest.push(Self.push("m\(n)", body: 900), messages: [nil], key: nil, writer: Self.writer) }
        for n in 0..<40 {
            slow.push(Self.push("s\(n)", body: 900), messages: [nil], key: n % 4 == 0 ? "position \(n)" : nil, writer: Self.writer)
        }
        // Two holders: the slow one keeps about half the bound, the modest one all of its own.
        #expect(memory.waiting <= 20_000 + 1_000, "\(memory.waiting)")
        #expect(modest.waitingPushes == 3 && slow.shedUntold > 0 && slow.waitingPushes < 40)
        let shed = slow.shedUntold
        slow.wrote(slow.pending)
        slow.writePushes(Self.writer)
        let written = String(decoding: slow.output[slow.sent...], as: UTF8.self)
        #expect(written.hasPrefix("shed \(shed);"), "\(written.prefix(40))")
        // Coalescable pushes went first: none of the keyed ones before the last kept survives.
        #expect(!written.contains("s0/") && !written.contains("s4/") && written.contains("s39/"))
        #expect(slow.shedUntold == 0)
    }

    /// Past the gateway's bound for replies, a connection claiming more than its fair share
    /// has room for no call until its client takes some, while one that holds nothing may
    /// still make one; under the bound each has its own bound's room.
    @Test func pastTheGatewaysBoundForRepliesTheBiggestHolderReadsNoMore() {
        var limits = GatewayLimits()
        limits.maxUnsentReplyBytes = 1 << 20
        let shared = OutputMemory(limits: limits)
        let hog = OutputBudget(maxPendingBytes: 1 << 20, memory: shared)
        let quiet = OutputBudget(maxPendingBytes: 1 << 20, memory: shared)
        #expect(hog.callRoom(held: 0, owed: 0) == 16 && quiet.callRoom(held: 0, owed: 0) == 16)
        hog.append(Array(repeating: 0x61, count: 900 << 10))
        #expect(hog.callRoom(held: hog.pending, owed: 0) == 1)
        // The quiet one may claim what the hog leaves of the bound, and at least half of it;
        // the calls it reads are its claim.
        #expect(quiet.callRoom(held: 0, owed: 0) == 8)
        #expect(quiet.callRoom(held: 0, owed: 8) == 0)
        #expect(shared.replies.waiting == (900 << 10) + 8 * OutputBudget.firstReplyEstimate)
        // Over the bound, the hog (over its half) has no room.
        #expect(hog.callRoom(held: hog.pending, owed: 0) == 0)
        // Its client takes most of it: room again.
        hog.wrote(800 << 10)
        #expect(hog.callRoom(held: hog.pending, owed: 0) == 6)
    }

    /// Whatever state a session is in, nothing expires before its next deadline, and at that
    /// deadline either a limit is crossed or the time only `tick` acts on has come.
    @Test func nothingExpiresBeforeTheNextDeadline() {
        var limits = GatewayLimits()
        limits.firstByteTimeoutMilliseconds = 2_000
        limits.requestTimeoutMilliseconds = 3_000
        limits.idleTimeoutMilliseconds = 5_000
        let states: [(String, (SessionHarness) -> Void)] = [
            ("new", { _ in }),
            ("a request half sent", { h in _ = h.send("PIN") }),
            ("idle after a reply", { h in _ = h.send("PING\r\n") }),
            ("half closed", { h in h.session.receiveEnd(now: h.now) }),
        ]
        for (name, setUp) in states {
            let h = SessionHarness(limits: limits)
            setUp(h)
            guard let next = h.session.nextDeadline() else {
                Issue.record("\(name): no deadline")
                continue
            }
            #expect(next > h.now, "\(name)")
            for at in stride(from: h.now, to: next, by: Int(max(1, (next - h.now) / 50))) {
                #expect(h.session.expired(now: at) == nil, "\(name) at \(at - h.now) ns")
            }
            #expect(h.session.expired(now: next) != nil, "\(name)")
        }
        // A call owed and nothing else: only its outcome moves the session (the gateway's
        // deadline bounds the call), so there is no deadline, and nothing expires.
        let h = SessionHarness(limits: limits, answer: { _ in nil })
        _ = h.send(#"{"jsonrpc":"2.0","id":1,"method":"slow"}"# + "\n")
        #expect(h.session.nextDeadline() == nil)
        #expect(h.session.expired(now: h.now + 3_600_000_000_000) == nil)
    }
}
