import Foundation
import Testing
import Storage

@Suite struct OutboxTests {
    struct Boom: Error {}

    func openOutbox(_ path: String = ":memory:") throws -> Outbox {
        let database = try Database(path: path)
        try database.migrate(OutboxSchema.migrations)
        return Outbox(database: database)
    }

    func append(_ outbox: Outbox, count: Int) throws -> [Int64] {
        try (0..<count).map { index in
            try outbox.database.transaction {
                try outbox.append(type: "thing.happened", body: Data("event \(index)".utf8))
            }
        }
    }

    @Test func emptyOutbox() throws {
        let outbox = try openOutbox()
        #expect(try outbox.head() == 0)
        #expect(try outbox.firstAvailable() == nil)
        #expect(try outbox.read(after: 0, limit: 10).isEmpty)
        #expect(try outbox.trim(keepingLast: 5) == 0)
    }

    @Test func appendOutsideATransactionIsRejected() throws {
        let outbox = try openOutbox()
        #expect {
            try outbox.append(type: "t", body: Data())
        } throws: { ($0 as? SQLiteError)?.code == .misuse }
        #expect(try outbox.head() == 0)
    }

    @Test func appendRolledBackWithItsTransactionLeavesHeadUnchanged() throws {
        let outbox = try openOutbox()
        #expect(try append(outbox, count: 2) == [1, 2])
        #expect(throws: Boom.self) {
            try outbox.database.transaction {
                try outbox.append(type: "doomed", body: Data([1]))
                throw Boom()
            }
        }
        #expect(try outbox.head() == 2)
        #expect(try append(outbox, count: 1) == [3])
    }

    @Test func recordsReadBackInPagesWithConsecutiveSeqs() throws {
        let outbox = try openOutbox()
        let seqs = try append(outbox, count: 7)
        #expect(seqs == Array(1...7))
        let explicit = try outbox.database.transaction {
            try outbox.append(type: "explicit", body: Data(), ts: "2024-01-02T03:04:05.678Z")
        }
        #expect(explicit == 8)

        let firstPage = try outbox.read(after: 0, limit: 3)
        #expect(firstPage.map(\.seq) == [1, 2, 3])
        #expect(firstPage[0].type == "thing.happened")
        #expect(firstPage[0].body == Data("event 0".utf8))
        let timestamp = firstPage[0].ts
        #expect(timestamp.count == 24 && timestamp.hasSuffix("Z") && timestamp.contains("T"))  // 2024-01-02T03:04:05.678Z
        #expect(try outbox.read(after: 3, limit: 3).map(\.seq) == [4, 5, 6])
        let lastPage = try outbox.read(after: 6, limit: 3)
        #expect(lastPage.map(\.seq) == [7, 8])
        #expect(lastPage.last == OutboxRecord(seq: 8, type: "explicit", ts: "2024-01-02T03:04:05.678Z", body: Data()))
        #expect(try outbox.read(after: 8, limit: 3).isEmpty)
        #expect(try outbox.read(after: 0, limit: 0).isEmpty)
    }

    @Test func trimKeepsTheLastRecords() throws {
        let outbox = try openOutbox()
        _ = try append(outbox, count: 10)
        #expect(try outbox.trim(keepingLast: 20) == 0)
        #expect(try outbox.trim(keepingLast: 4) == 6)
        #expect(try outbox.firstAvailable() == 7)
        #expect(try outbox.read(after: 0, limit: 100).map(\.seq) == [7, 8, 9, 10])
        #expect(try outbox.head() == 10)
    }

    @Test func headSurvivesTrimmingEverything() throws {
        try withTemporaryDatabasePath { path in
            do {
                let outbox = try openOutbox(path)
                _ = try append(outbox, count: 3)
                #expect(try outbox.trim(keepingLast: 0) == 3)
                #expect(try outbox.firstAvailable() == nil)
                #expect(try outbox.head() == 3)
            }
            let reopened = try openOutbox(path)
            #expect(try reopened.head() == 3)
            #expect(try append(reopened, count: 1) == [4])
            #expect(try reopened.firstAvailable() == 4)
        }
    }

    @Test func epochIsAUUIDStableAcrossReopenAndDistinctPerDatabase() throws {
        try withTemporaryDatabasePath { path in
            let epoch = try openOutbox(path).epoch()
            #expect(UUID(uuidString: epoch) != nil)
            #expect(try openOutbox(path).epoch() == epoch)
            #expect(try openOutbox().epoch() != epoch)
        }
    }

    @Test func epochIsCreatedLazilyIfMissing() throws {
        let outbox = try openOutbox()
        try outbox.database.run("DELETE FROM outbox_meta")
        let epoch = try outbox.epoch()
        #expect(UUID(uuidString: epoch) != nil)
        #expect(try outbox.epoch() == epoch)
    }

    /// The epoch changes only at a start on another boot after a run that did not end: not at
    /// a restart after `kill -9` (the same boot), nor after a clean stop, whatever the boot.
    @Test func aNewEpochBeginsOnlyAfterTheMachineWentDownMidRun() throws {
        let outbox = try openOutbox()
        let first = try outbox.epoch()
        #expect(try outbox.beginRun(bootID: "boot-a") == false)
        _ = try append(outbox, count: 3)
        // Killed, restarted on the same boot: the same history.
        #expect(try outbox.beginRun(bootID: "boot-a") == false)
        #expect(try outbox.epoch() == first)
        // Stopped cleanly, started after a reboot: the same history.
        try outbox.endRun()
        #expect(try outbox.beginRun(bootID: "boot-b") == false)
        #expect(try outbox.epoch() == first)
        // Running when the machine went down (a power loss): the head may have gone back.
        #expect(try outbox.beginRun(bootID: "boot-c") == true)
        let second = try outbox.epoch()
        #expect(second != first && UUID(uuidString: second) != nil)
        #expect(try outbox.head() == 3)
        // Without a boot id (not Linux) nothing is told apart, and the epoch stays; the boot
        // known before is kept, so the next start on another one is still told.
        #expect(try outbox.beginRun(bootID: nil) == false)
        #expect(try outbox.epoch() == second)
        #expect(try outbox.beginRun(bootID: "boot-d") == true)
        #expect(Outbox.currentBootID().map { UUID(uuidString: $0) != nil } ?? true)
    }
}
