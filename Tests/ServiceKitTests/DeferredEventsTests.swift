import Bus
import Foundation
@testable import ServiceKit
import Storage
import Testing
import TestSupport

@Suite struct DeferredEventsTests {
    /// An outbox in a scratch file, for the writer to append to.
    static func outbox(_ folder: TemporaryFolder) throws -> String {
        let path = folder.file("deferred.sqlite")
        _ = try Database(path: path).migrate(OutboxSchema.migrations)
        return path
    }

    static func rows(_ path: String) throws -> [String] {
        try Database(path: path, readOnly: true).query("SELECT CAST(body AS TEXT) AS body FROM outbox ORDER BY seq").decode("body", as: String.self)
    }

    @Test func aFullQueueRefusesOneMoreAndCountsIt() {
        let events = DeferredEvents(capacity: 2)
        #expect(events.hand("t", json: Data("1".utf8)) && events.hand("t", json: Data("2".utf8)))
        #expect(!events.hand("t", json: Data("3".utf8)))
        #expect(events.dropped == 1 && events.waiting == 2)
    }

    @Test func theWriterAppendsInGroupsInOrderAndEverythingAtStop() throws {
        let folder = TemporaryFolder("deferred")
        let path = try Self.outbox(folder)
        let events = DeferredEvents(groupSize: 7)
        let writer = try DeferredEventWriter(events, database: DatabaseFile(path: path), tuning: DatabaseTuning(), relayWakeup: nil,
                                             logger: Logger(component: "test", level: .error))
        for i in 1...100 { events.hand("t", json: Data("\(i)".utf8)) }
        writer.stop()
        #expect(try Self.rows(path) == (1...100).map(String.init))
        #expect(events.waiting == 0)
    }

    @Test func keepIsAskedInTheAppendingTransaction() throws {
        let folder = TemporaryFolder("deferred-keep")
        let path = try Self.outbox(folder)
        let events = DeferredEvents(keep: { _, body in String(decoding: body, as: UTF8.self) != "\"drop\"" })
        let writer = try DeferredEventWriter(events, database: DatabaseFile(path: path), tuning: DatabaseTuning(), relayWakeup: nil,
                                             logger: Logger(component: "test", level: .error))
        for body in ["\"a\"", "\"drop\"", "\"b\""] { events.hand("t", json: Data(body.utf8)) }
        writer.stop()
        #expect(try Self.rows(path) == ["\"a\"", "\"b\""])
    }

    @Test func aGroupThatCannotCommitStaysQueuedAndIsRetried() throws {
        let folder = TemporaryFolder("deferred-busy")
        let path = try Self.outbox(folder)
        let events = DeferredEvents()
        let writer = try DeferredEventWriter(events, database: DatabaseFile(path: path), tuning: DatabaseTuning(), relayWakeup: nil,
                                             logger: Logger(component: "test", level: .error))
        // Another connection holds the write lock: the writer's group waits, fails, stays queued.
        let holder = try Database(path: path)
        try holder.run("BEGIN IMMEDIATE")
        events.hand("t", json: Data("1".utf8))
        usleep(300_000)
        #expect(events.waiting == 1)
        try holder.run("COMMIT")
        for _ in 0..<200 where events.waiting > 0 { usleep(50_000) }
        writer.stop()
        #expect(try Self.rows(path) == ["1"])
    }
}
