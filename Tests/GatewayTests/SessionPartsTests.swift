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

    /// Pushes past the bound wait, the latest of a key replacing its earlier one, and go out
    /// oldest first as the client reads; past the count of kept pushes the budget overflows.
    @Test func pushesWaitCoalesceAndOverflow() {
        let budget = OutputBudget(maxPendingBytes: 10)
        budget.append(Array("0123456789".utf8))
        budget.push(Array("a1".utf8), key: "a")
        budget.push(Array("b".utf8), key: nil)
        budget.push(Array("a2".utf8), key: "a")
        #expect(budget.pending == 10)
        budget.wrote(10)
        #expect(String(decoding: budget.output[budget.sent...], as: UTF8.self) == "ba2")
        let flooded = OutputBudget(maxPendingBytes: 1)
        flooded.append([0x61])
        for _ in 0...OutputBudget.maxQueuedPushes { flooded.push([0x62], key: nil) }
        #expect(flooded.overflowed)
        flooded.wrote(1)
        #expect(flooded.pending == 0)  // what was kept went with the overflow
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
