import Bus
import Foundation
import ServiceKit
import Testing
import TestSupport

/// Group commit in the request server: the writes queued behind one another run as one batch
/// (`HandlerTable.writeBatch`), bounded by `maxWriteBatch`, and are answered only after it.
@Suite struct WriteBatchTests {
    /// A server whose `test.hold` write waits until the test opens the gate, so the writes sent
    /// meanwhile queue up behind it; `test.note` (a write) and the batch hook record what ran,
    /// batch by batch. The hook throws after its batch ran when `failCommit` is set.
    final class Fixture {
        let context: ZMQContext
        let server: RPCServer<Int>
        let client: RPCClient
        let entered = DispatchSemaphore(value: 0)
        let gate = DispatchSemaphore(value: 0)
        /// The writes that ran, in order (the hold counts as "hold").
        let ran = Locked<[String]>([])
        /// The writes each batch ran, as the hook saw them.
        let batches = Locked<[[String]]>([])
        let failCommit = Locked(false)

        init(maxWriteBatch: Int = 64, maxWriteBatchMilliseconds: Int = 10_000) throws {
            context = try ZMQContext()
            var table = HandlerTable<Int>()
            let (entered, gate, ran, batches, failCommit) = (entered, gate, ran, batches, failCommit)
            table.on("test.hold", .write) { (_: Empty, _, _) -> Bool in
                ran.withLock { $0.append("hold") }
                entered.signal()
                return gate.wait(timeout: .now() + 10) == .success
            }
            table.on("test.note", .write) { (request: Echo, _, _) -> Echo in
                ran.withLock { $0.append(request.text) }
                if request.text.hasPrefix("slow") { usleep(40_000) }
                if request.text.hasPrefix("bad") { throw ServiceError(.conflict, "refused", field: "text") }
                return request
            }
            table.on("test.echo") { (request: Echo, _, _) -> Echo in request }
            table.writeBatch = { _, body in
                let start = ran.value.count
                try body()
                batches.withLock { $0.append(Array(ran.value[start...])) }
                if failCommit.value { throw ServiceError(.unavailable, "the commit failed") }
            }
            var options = RPCServerOptions()
            options.maxWriteBatch = maxWriteBatch
            options.maxWriteBatchMilliseconds = maxWriteBatchMilliseconds
            server = try RPCServer(context: context, bind: ["tcp://127.0.0.1:0"], table: table, options: options, logger: logger) { _ in 0 }
            client = try RPCClient(context: context, endpoints: server.endpoints, logger: logger)
        }

        deinit {
            client.close()
            server.stop()
        }

        /// Holds the writer, sends `notes` (each a `test.note`, in order) and opens the gate once
        /// all of them wait in the server; returns each note's reply (its text, or its error code).
        func heldBatch(_ notes: [String]) throws -> [String: String] {
            let replies = Locked<[String: String]>([:])
            let group = DispatchGroup()
            group.enter()
            client.send(type: "test.hold", body: Data("{}".utf8), timeoutMilliseconds: 10_000) { _ in group.leave() }
            #expect(entered.wait(timeout: .now() + 5) == .success)
            for note in notes {
                group.enter()
                let body = try JSONCoding.encoder.encode(Echo(text: note))
                client.send(type: "test.note", body: body, timeoutMilliseconds: 10_000) { result in
                    let answer: String
                    switch result {
                    case .success(let reply): answer = (try? reply.body(Echo.self).text) ?? "undecodable"
                    case .failure(let error): answer = error.code.rawValue
                    }
                    replies.withLock { $0[note] = answer }
                    group.leave()
                }
            }
            // Every note is queued behind the hold (bounded: 5 s).
            for _ in 0..<500 where server.stats.snapshot().inFlight < notes.count + 1 { usleep(10_000) }
            #expect(server.stats.snapshot().inFlight == notes.count + 1)
            gate.signal()
            #expect(group.wait(timeout: .now() + 10) == .success)
            return replies.value
        }
    }

    @Test func writesQueuedTogetherRunAsOneBatch() throws {
        let fixture = try Fixture()
        let replies = try fixture.heldBatch(["a", "b", "c", "d", "e"])
        #expect(replies == ["a": "a", "b": "b", "c": "c", "d": "d", "e": "e"])
        #expect(fixture.batches.value == [["hold", "a", "b", "c", "d", "e"]])
        // Reads are not batched: the hook never sees them.
        #expect(try fixture.client.call("test.echo", Echo(text: "r"), as: Echo.self) == Echo(text: "r"))
        #expect(fixture.batches.value.count == 1)
    }

    @Test func aBatchHoldsAtMostMaxWriteBatchWrites() throws {
        let fixture = try Fixture(maxWriteBatch: 4)
        let notes = (0..<9).map { "n\($0)" }
        let replies = try fixture.heldBatch(notes)
        #expect(replies == Dictionary(uniqueKeysWithValues: notes.map { ($0, $0) }))
        #expect(fixture.batches.value == [["hold", "n0", "n1", "n2"], ["n3", "n4", "n5", "n6"], ["n7", "n8"]])
    }

    @Test func aBatchTakesNoMoreWritesOnceItHasRunItsTime() throws {
        // Each slow write takes 40 ms, past the batch's 30: a batch ends after its first, but
        // for the hold's, which may take one more if the hold was quick.
        let fixture = try Fixture(maxWriteBatchMilliseconds: 30)
        let notes = (0..<4).map { "slow\($0)" }
        let replies = try fixture.heldBatch(notes)
        #expect(replies == Dictionary(uniqueKeysWithValues: notes.map { ($0, $0) }))
        let batches = fixture.batches.value
        #expect(batches.first?.first == "hold" && (batches.first?.count ?? 0) <= 2, "\(batches)")
        #expect(batches.dropFirst().allSatisfy { $0.count == 1 } && batches.joined().count == 5, "\(batches)")
    }

    @Test func aFailingWriteGetsItsOwnErrorAndTheOthersTheirAnswers() throws {
        let fixture = try Fixture()
        let replies = try fixture.heldBatch(["a", "bad", "b"])
        #expect(replies == ["a": "a", "bad": "conflict", "b": "b"])
        #expect(fixture.batches.value == [["hold", "a", "bad", "b"]])
    }

    @Test func aBatchThatFailsToCommitAnswersEveryWriteWithItsError() throws {
        let fixture = try Fixture()
        fixture.failCommit.withLock { $0 = true }
        // Each handler succeeded (but one), and none is answered with success.
        let replies = try fixture.heldBatch(["a", "bad", "b"])
        #expect(replies == ["a": "unavailable", "bad": "unavailable", "b": "unavailable"])
        // The next batch commits and is answered.
        fixture.failCommit.withLock { $0 = false }
        #expect(try fixture.client.call("test.note", Echo(text: "after"), as: Echo.self) == Echo(text: "after"))
    }

    @Test func aWritePastItsDeadlineInABatchDoesNotRun() throws {
        let fixture = try Fixture()
        let late = Locked<ErrorCode?>(nil)
        let done = DispatchSemaphore(value: 0)
        fixture.client.send(type: "test.hold", body: Data("{}".utf8), timeoutMilliseconds: 10_000) { _ in }
        #expect(fixture.entered.wait(timeout: .now() + 5) == .success)
        fixture.client.send(type: "test.note", body: try JSONCoding.encoder.encode(Echo(text: "late")), timeoutMilliseconds: 50) { result in
            if case .failure(let error) = result { late.withLock { $0 = error.code } }
            done.signal()
        }
        for _ in 0..<500 where fixture.server.stats.snapshot().inFlight < 2 { usleep(10_000) }
        // The server took it by now: its 50 ms run from then (a busy machine may have read it
        // after the client sent it, so the client giving up is not enough to know they passed).
        let queued = Date()
        #expect(fixture.server.stats.snapshot().inFlight == 2)
        #expect(done.wait(timeout: .now() + 5) == .success)
        #expect(late.value == .deadlineExceeded)
        let left = 0.1 - Date().timeIntervalSince(queued)
        if left > 0 { usleep(UInt32(left * 1_000_000)) }
        fixture.gate.signal()
        #expect(try fixture.client.call("test.note", Echo(text: "next"), as: Echo.self, timeoutMilliseconds: 5_000) == Echo(text: "next"))
        // The late write was queued in the held batch, past its deadline: its handler never ran.
        #expect(fixture.ran.value == ["hold", "next"])
    }
}
