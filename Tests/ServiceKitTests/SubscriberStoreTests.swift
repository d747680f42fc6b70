import Bus
import Foundation
import ServiceCore
import ServiceKit
import Storage
import Synchronization
import Testing
import TestSupport

private let quiet = Logger(component: "subscriber-test", level: .error) { _ in }

/// A subscriber's database holding a copy of a publisher's items, `(id, name)`, and `notes`,
/// which only the subscribing service itself writes.
private struct ItemCopy {
    static let migrations = CursorSchema.migrations + [Migration(domain: "copy", version: 1, sql: """
        CREATE TABLE copy (id INTEGER PRIMARY KEY, name TEXT NOT NULL);
        CREATE TABLE notes (text TEXT NOT NULL);
        """)]

    struct Item: Codable { var id: Int64; var name: String }

    static let applier = EventApplier(
        apply: { event, scope in
            guard event.header.type == "item.upserted" else { return }
            let item = try event.body(Item.self)
            try scope.db.run("INSERT OR REPLACE INTO copy (id, name) VALUES (?, ?)", item.id, item.name)
        },
        reset: { db in try db.run("DELETE FROM copy") })

    let path: String

    init(in folder: TemporaryFolder) throws {
        path = folder.path + "/copy.sqlite"
        _ = try Database(path: path).migrate(Self.migrations)
    }

    /// The copy's names by id, read on a connection of its own (a reader of the service).
    func names() throws -> [String] {
        try Database(path: path).query("SELECT name FROM copy ORDER BY id").decode("name", as: String.self)
    }
}

/// A publisher whose `sys.snapshot` is slow: pages of `perPage` items, each after a delay;
/// the last page waits, besides, until the test opens `lastPage` (at most 10 s).
private final class SlowPublisher {
    final class State: ServiceState {
        let worker: ServiceWorker
        init(worker: ServiceWorker) { self.worker = worker }
    }

    let folder: TemporaryFolder
    let context: ZMQContext
    let config: ServiceConfig
    let runtime: ServiceRuntime<State>
    /// Pages asked for so far.
    let asked = Locked(0)
    let lastPage = DispatchSemaphore(value: 0)

    init(pages: Int, perPage: Int, delayMilliseconds: Int) throws {
        folder = TemporaryFolder("subscriber")
        context = try ZMQContext()
        var config = ServiceConfig(service: "slow")
        config.dataDirectory = folder.path
        config.heartbeatMilliseconds = 50
        self.config = config
        let asked = self.asked, lastPage = self.lastPage
        let definition = ServiceDefinition<State>(
            name: "slow", migrations: [], handlers: HandlerTable(), publishes: true,
            snapshot: { _, after, _ in
                let page = Int(after ?? "0") ?? 0
                asked.withLock { $0 += 1 }
                usleep(UInt32(delayMilliseconds) * 1_000)
                if page == pages - 1 { _ = lastPage.wait(timeout: .now() + 10) }
                let events = (0..<perPage).map { i -> (type: String, body: Data) in
                    let id = page * perPage + i + 1
                    return ("item.upserted", Data(#"{"id":\#(id),"name":"new \#(id)"}"#.utf8))
                }
                return SnapshotPage(events: events, next: page + 1 < pages ? String(page + 1) : nil)
            },
            makeState: { State(worker: $0) })
        runtime = try ServiceRuntime(definition: definition, config: config, context: context, logger: quiet)
    }

    deinit {
        lastPage.signal()
        runtime.stop()
    }

    func subscribe(_ copy: ItemCopy) throws -> EventSubscriber {
        var options = SubscriptionOptions(source: "slow", publishEndpoints: runtime.endpoints.publish,
                                          rpcEndpoints: runtime.endpoints.rpc, database: DatabaseFile(path: copy.path))
        options.snapshotBatch = 100
        return try EventSubscriber(context: context, options: options, applier: ItemCopy.applier, logger: quiet)
    }
}

@Suite(.serialized) struct SnapshotRebuildTests {
    /// The service's own writers go on while a rebuild waits for the publisher's pages, and
    /// its readers see the old copy until the whole snapshot is in.
    @Test func writersAndReadersGoOnDuringARebuild() throws {
        let folder = TemporaryFolder("subscriber")
        defer { withExtendedLifetime(folder) {} }
        let copy = try ItemCopy(in: folder)
        do {
            let db = try Database(path: copy.path)
            try db.run("INSERT INTO copy (id, name) VALUES (1, 'old 1'), (2, 'old 2')")
            // A cursor of a history the publisher does not have: the subscriber must rebuild.
            try CursorStore(database: db).set(source: "slow", EventCursor(epoch: "gone", seq: 7))
        }
        let publisher = try SlowPublisher(pages: 4, perPage: 3, delayMilliseconds: 100)
        let subscriber = try publisher.subscribe(copy)
        defer { subscriber.stop() }

        // Wait until the last page is asked for: the first three are in, the rebuild is under way.
        var waited = 0
        while publisher.asked.value < 4 && waited < 1_000 { usleep(10_000); waited += 1 }
        #expect(publisher.asked.value == 4)

        // The service's own writes, with a busy timeout far shorter than the rebuild (which
        // lasts until the test lets the last page go), succeed.
        let writer = try Database(path: copy.path, busyTimeoutMilliseconds: 200)
        for i in 0..<3 {
            #expect(throws: Never.self) {
                try writer.transaction { try writer.run("INSERT INTO notes (text) VALUES (?)", "written during the rebuild \(i)") }
            }
        }
        #expect(try writer.scalarInt("SELECT count(*) FROM notes") == 3)
        // A reader sees the old copy and the old cursor: a partial rebuild is invisible.
        #expect(try copy.names() == ["old 1", "old 2"])
        #expect(try CursorStore(database: writer).get(source: "slow") == EventCursor(epoch: "gone", seq: 7))
        #expect(subscriber.status.snapshots == 0)

        publisher.lastPage.signal()
        var rebuilt = false
        for _ in 0..<1_000 where !rebuilt {
            rebuilt = subscriber.status.snapshots == 1
            if !rebuilt { usleep(10_000) }
        }
        #expect(rebuilt)
        #expect(try copy.names() == (1...12).map { "new \($0)" })
        let epoch = try Outbox(database: Database(path: publisher.config.resolvedDatabasePath)).epoch()
        #expect(try CursorStore(database: writer).get(source: "slow") == EventCursor(epoch: epoch, seq: 0))
        #expect(try writer.scalarInt("SELECT count(*) FROM notes") == 3)
    }
}
/// An event as a publisher would send it.
private func event(_ type: String, _ id: Int, _ name: String = "", seq: Int64 = 1) throws -> ReceivedEvent {
    try ReceivedEvent(envelope: EnvelopeCoding.event(seq: seq, type: type, ts: "t", epoch: "e2",
                                                     body: Data(#"{"id":\#(id),"name":"\#(name)"}"#.utf8)))
}

@Suite struct SQLiteCursorStoreTests {
    /// The copy's applier, wanting only upserts (so others are not staged), failing on item 666.
    static let applier = EventApplier(
        apply: { event, scope in
            struct Boom: Error {}
            let item = try event.body(ItemCopy.Item.self)
            if item.id == 666 { throw Boom() }
            try ItemCopy.applier.apply(event, scope)
        },
        reset: ItemCopy.applier.reset,
        types: ["item.upserted"])

    fileprivate func store(_ copy: ItemCopy) throws -> SQLiteCursorStore {
        let options = SubscriptionOptions(source: "items", publishEndpoints: [], rpcEndpoints: [], database: DatabaseFile(path: copy.path))
        return try SQLiteCursorStore(options: options, applier: Self.applier, logger: quiet)
    }

    fileprivate func oldCopy(_ copy: ItemCopy) throws -> Database {
        let reader = try Database(path: copy.path)
        try reader.run("INSERT INTO copy (id, name) VALUES (1, 'old 1')")
        try CursorStore(database: reader).set(source: "items", EventCursor(epoch: "e1", seq: 4))
        return reader
    }

    @Test func aStagedSnapshotIsInvisibleUntilTheSwap() throws {
        let folder = TemporaryFolder("subscriber")
        defer { withExtendedLifetime(folder) {} }
        let copy = try ItemCopy(in: folder)
        let reader = try oldCopy(copy)
        let store = try store(copy)
        let staging = CursorStore(database: reader)

        try store.stageSnapshot([try event("item.upserted", 1, "half 1"), try event("item.noise", 2)])
        #expect(try staging.stagedCount(source: "items") == 1)  // the noise is not wanted, so not staged
        #expect(try copy.names() == ["old 1"])
        // A new snapshot starts over.
        try store.discardSnapshot()
        #expect(try staging.stagedCount(source: "items") == 0)

        try store.stageSnapshot([try event("item.upserted", 2, "new 2"), try event("item.noise", 9)])
        try store.stageSnapshot([try event("item.upserted", 3, "new 3")])
        #expect(try copy.names() == ["old 1"])
        #expect(try store.loadCursor() == EventCursor(epoch: "e1", seq: 4))
        #expect(try store.swapSnapshot(cursor: EventCursor(epoch: "e2", seq: 8), stopping: StopFlag()) == 2)
        #expect(try copy.names() == ["new 2", "new 3"])
        #expect(try store.loadCursor() == EventCursor(epoch: "e2", seq: 8))
        #expect(try staging.stagedCount(source: "items") == 0)
    }

    @Test func aFailedSwapLeavesTheOldCopyAndCursor() throws {
        let folder = TemporaryFolder("subscriber")
        defer { withExtendedLifetime(folder) {} }
        let copy = try ItemCopy(in: folder)
        let reader = try oldCopy(copy)
        let store = try store(copy)
        try store.stageSnapshot([try event("item.upserted", 2, "new 2"), try event("item.upserted", 666, "boom")])
        #expect(throws: (any Error).self) { try store.swapSnapshot(cursor: EventCursor(epoch: "e2", seq: 8), stopping: StopFlag()) }
        #expect(try copy.names() == ["old 1"])
        #expect(try CursorStore(database: reader).get(source: "items") == EventCursor(epoch: "e1", seq: 4))
    }

    @Test func aSnapshotItemThatCanNeverApplyIsSkippedNotWedgingTheSwap() throws {
        let folder = TemporaryFolder("subscriber")
        defer { withExtendedLifetime(folder) {} }
        let copy = try ItemCopy(in: folder)
        _ = try oldCopy(copy)
        let store = try store(copy)
        // Its body is not an item (a ServiceError when decoded): skipped, as live events are.
        let broken = try ReceivedEvent(envelope: EnvelopeCoding.event(seq: 8, type: "item.upserted", ts: "t", epoch: "e2", body: Data("{}".utf8)))
        try store.stageSnapshot([try event("item.upserted", 2, "new 2"), broken, try event("item.upserted", 3, "new 3")])
        #expect(try store.swapSnapshot(cursor: EventCursor(epoch: "e2", seq: 8), stopping: StopFlag()) == 2)
        #expect(try copy.names() == ["new 2", "new 3"])
        #expect(try store.loadCursor() == EventCursor(epoch: "e2", seq: 8))
    }

    @Test func skippedEventsStillMoveTheCursor() throws {
        let folder = TemporaryFolder("subscriber")
        defer { withExtendedLifetime(folder) {} }
        let copy = try ItemCopy(in: folder)
        _ = try oldCopy(copy)
        let store = try store(copy)
        // An upsert whose body is not an item can never apply: skipped. Noise is not wanted.
        let broken = try ReceivedEvent(envelope: EnvelopeCoding.event(seq: 5, type: "item.upserted", ts: "t", epoch: "e1", body: Data("{}".utf8)))
        let skipped = try store.apply([broken, try event("item.noise", 0, seq: 6), try event("item.upserted", 7, "seven", seq: 7)],
                                      advancingTo: EventCursor(epoch: "e1", seq: 7))
        #expect(skipped == 1)
        #expect(try copy.names() == ["old 1", "seven"])
        #expect(try store.loadCursor() == EventCursor(epoch: "e1", seq: 7))
    }
}

@Suite struct MemoryCursorStoreTests {
    @Test func appliesItsTypesAndForgetsAllInMemory() throws {
        var copy: [Int64: String] = [:]
        let store = MemoryCursorStore(source: "items", logger: quiet, types: ["item.upserted"],
                                      apply: { event in
                                          let item = try event.body(ItemCopy.Item.self)
                                          copy[item.id] = item.name
                                      },
                                      forgetAll: { copy = [:] })
        #expect(try store.loadCursor() == nil)
        let broken = try ReceivedEvent(envelope: EnvelopeCoding.event(seq: 2, type: "item.upserted", ts: "t", epoch: "e1", body: Data("{}".utf8)))
        #expect(try store.apply([try event("item.upserted", 1, "one"), broken, try event("item.noise", 5)],
                                advancingTo: EventCursor(epoch: "e1", seq: 3)) == 1)
        #expect(copy == [1: "one"])
        #expect(try store.loadCursor() == EventCursor(epoch: "e1", seq: 3))

        try store.forgetAll(advancingTo: EventCursor(epoch: "e2", seq: 9))
        #expect(copy.isEmpty)
        #expect(try store.loadCursor() == EventCursor(epoch: "e2", seq: 9))
    }
}

@Suite struct CursorStoreTests {
    @Test func upsertGetRemove() throws {
        let database = try Database(path: ":memory:")
        try database.migrate(CursorSchema.migrations)
        let cursors = CursorStore(database: database)
        #expect(try cursors.get(source: "catalog") == nil)

        try cursors.set(source: "catalog", EventCursor(epoch: "e1", seq: 5))
        #expect(try cursors.get(source: "catalog") == EventCursor(epoch: "e1", seq: 5))
        try cursors.set(source: "catalog", EventCursor(epoch: "e2", seq: 1))
        #expect(try cursors.get(source: "catalog") == EventCursor(epoch: "e2", seq: 1))
        try cursors.set(source: "billing", EventCursor(epoch: "b", seq: 9))
        #expect(try database.scalarInt("SELECT count(*) FROM event_cursor") == 2)

        try cursors.remove(source: "catalog")
        #expect(try cursors.get(source: "catalog") == nil)
        #expect(try cursors.get(source: "billing") == EventCursor(epoch: "b", seq: 9))
    }

    @Test func cursorUpdateRollsBackWithTheEffect() throws {
        let database = try Database(path: ":memory:")
        try database.migrate(CursorSchema.migrations)
        try database.execute("CREATE TABLE effect(x)")
        let cursors = CursorStore(database: database)
        try cursors.set(source: "s", EventCursor(epoch: "e", seq: 1))
        struct Boom: Error {}
        #expect(throws: Boom.self) {
            try database.transaction {
                try database.run("INSERT INTO effect VALUES(2)")
                try cursors.set(source: "s", EventCursor(epoch: "e", seq: 2))
                throw Boom()
            }
        }
        #expect(try cursors.get(source: "s") == EventCursor(epoch: "e", seq: 1))
        #expect(try database.scalarInt("SELECT count(*) FROM effect") == 0)
    }
}

/// A copy that merges its rebuilds (`SnapshotMerge`): in slices, each its own transaction,
/// with the write lock left to others between them.
@Suite(.serialized) struct SnapshotMergeTests {
    /// Transactions the merging applier committed, counted by `settled`.
    static let commits = Atomic<Int>(0)

    static let applier = EventApplier(
        apply: { event, scope in
            let item = try event.body(ItemCopy.Item.self)
            try scope.named(item.id)
            try ItemCopy.applier.apply(event, scope)
        },
        reset: { _ in Issue.record("a merge does not reset") },
        types: ["item.upserted"],
        settled: { committed in if committed { SnapshotMergeTests.commits.add(1, ordering: .relaxed) } },
        merge: SnapshotMerge(keys: "SELECT id FROM copy", remove: { id, scope in try scope.db.run("DELETE FROM copy WHERE id = ?", id) }))

    fileprivate func setUp(_ folder: TemporaryFolder, staging count: Int) throws -> (ItemCopy, SQLiteCursorStore) {
        let copy = try ItemCopy(in: folder)
        let db = try Database(path: copy.path)
        try db.transaction {
            for id in [1, 5, 100_000] { try db.run("INSERT INTO copy (id, name) VALUES (?, ?)", Int64(id), "old \(id)") }
        }
        try CursorStore(database: db).set(source: "items", EventCursor(epoch: "e1", seq: 4))
        let options = SubscriptionOptions(source: "items", publishEndpoints: [], rpcEndpoints: [], database: DatabaseFile(path: copy.path))
        let store = try SQLiteCursorStore(options: options, applier: Self.applier, logger: quiet)
        try store.beginSnapshot()
        for page in stride(from: 1, through: count, by: 1_000) {
            try store.stageSnapshot(try (page..<min(page + 1_000, count + 1)).map { try event("item.upserted", $0, "new \($0)") })
        }
        return (copy, store)
    }

    /// Rows the snapshot names are applied and the others removed; the cursor is stored and
    /// the staging emptied, in more than one transaction.
    @Test(arguments: [3, 5_000]) func aMergeEndsWithTheSnapshotAndItsCursor(items: Int) throws {
        let folder = TemporaryFolder("merge")
        let (copy, store) = try setUp(folder, staging: items)
        let before = Self.commits.load(ordering: .relaxed)
        #expect(try store.swapSnapshot(cursor: EventCursor(epoch: "e2", seq: 8), stopping: StopFlag()) == items)
        let names = try copy.names()
        #expect(names.count == items && names.first == "new 1" && names.last == "new \(items)" && !names.contains("old 100000"))
        #expect(try store.loadCursor() == EventCursor(epoch: "e2", seq: 8))
        #expect(try CursorStore(database: Database(path: copy.path)).stagedCount(source: "items") == 0)
        // 5,000 items: at least three slices of 2,000, the removal and the cursor.
        #expect(Self.commits.load(ordering: .relaxed) - before >= (items > 2_000 ? 5 : 3))
    }

    /// A row the service added after the rebuild began (as favorites adds a place it fetched
    /// with `catalog.get`) is newer than the snapshot's first page: the merge keeps it, while
    /// it removes the rows it held before that the snapshot did not name.
    @Test func aRowAddedAfterTheRebuildBeganIsKept() throws {
        let folder = TemporaryFolder("merge")
        let (copy, store) = try setUp(folder, staging: 3)
        try Database(path: copy.path).run("INSERT INTO copy (id, name) VALUES (200000, 'fetched')")
        #expect(try store.swapSnapshot(cursor: EventCursor(epoch: "e2", seq: 8), stopping: StopFlag()) == 3)
        #expect(try copy.names() == ["new 1", "new 2", "new 3", "fetched"])
    }

    /// Another writer of the database gets the lock between slices: its write commits while
    /// the merge goes on, not after it.
    @Test func anotherWriterGoesBetweenSlices() throws {
        let folder = TemporaryFolder("merge")
        let (copy, store) = try setUp(folder, staging: 12_000)
        let writer = try Database(path: copy.path)
        let merged = StopFlag()
        nonisolated(unsafe) let merger = store
        let merging = Thread {
            _ = try? merger.swapSnapshot(cursor: EventCursor(epoch: "e2", seq: 8), stopping: StopFlag())
            merged.set()
        }
        let start = Self.commits.load(ordering: .relaxed)
        merging.start()
        for _ in 0..<1_000 where Self.commits.load(ordering: .relaxed) == start { usleep(1_000) }
        // The write sees the cursor as it was: it went in before the merge's last step.
        let cursorSeen = try writer.transaction(.immediate) {
            try writer.run("INSERT INTO notes (text) VALUES ('between')")
            return try CursorStore(database: writer).get(source: "items")
        }
        #expect(cursorSeen == EventCursor(epoch: "e1", seq: 4), "the write waited for the whole merge")
        for _ in 0..<3_000 where !merged.isSet { usleep(10_000) }
        #expect(try copy.names().count == 12_000)
    }

    /// A stop half-way leaves rows old and new and the rest staged, and the cursor as it was;
    /// the next rebuild's discard starts over.
    @Test func aStopHalfWayKeepsTheOldCursor() throws {
        let folder = TemporaryFolder("merge")
        let (copy, store) = try setUp(folder, staging: 10)
        let stop = StopFlag()
        stop.set()
        #expect(throws: CancellationError.self) { try store.swapSnapshot(cursor: EventCursor(epoch: "e2", seq: 8), stopping: stop) }
        #expect(try store.loadCursor() == EventCursor(epoch: "e1", seq: 4))
        #expect(try copy.names() == ["old 1", "old 5", "old 100000"])
        try store.discardSnapshot()
        #expect(try CursorStore(database: Database(path: copy.path)).stagedCount(source: "items") == 0)
    }
}
