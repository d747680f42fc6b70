import Bus
import Contracts
import Foundation
import ServiceCore
import ServiceKit
import Storage
import Testing
import TestSupport

private let quiet = Logger(component: "backup-test", level: .error) { _ in }

/// `sys.backup` on a real service runtime: a copy of a big file made while writes go on, one
/// backup at a time, and the paths it refuses.
@Suite struct BackupRequestTests {
    /// A service with `t.fill` (a write adding `n` blobs of 1 MiB, no event) and `t.put` (a
    /// write adding an item with its `item.put` event).
    final class Fixture {

        struct Item: Codable, Sendable { var name: String }
        struct Fill: Codable, Sendable { var n: Int }

        let folder = TemporaryFolder("backup")
        let context: ZMQContext
        let runtime: ServiceRuntime<WorkerState>
        let client: RPCClient

        init() throws {
            context = try ZMQContext()
            var table = HandlerTable<WorkerState>()
            table.on("t.fill", .write) { (fill: Fill, _, state) -> Empty in
                try state.worker.db.run("""
                    WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < ?)
                    INSERT INTO blobs (data) SELECT randomblob(1048576) FROM n
                    """, fill.n)
                return Empty()
            }
            table.on("t.put", .write) { (item: Item, _, state) -> Item in
                try state.worker.db.run("INSERT INTO items (name) VALUES (?)", item.name)
                try state.worker.emit("item.put", item)
                return item
            }
            let schema = Migration(domain: "items", version: 1, sql: """
                CREATE TABLE items (name TEXT PRIMARY KEY);
                CREATE TABLE blobs (id INTEGER PRIMARY KEY, data BLOB NOT NULL);
                """)
            let definition = ServiceDefinition<WorkerState>(name: "items", migrations: [schema], handlers: table, publishes: true,
                                                      makeState: { WorkerState(worker: $0) })
            var config = ServiceConfig(service: "items")
            config.dataDirectory = folder.path
            runtime = try ServiceRuntime(definition: definition, config: config, context: context, logger: quiet)
            client = try RPCClient(context: context, endpoints: runtime.endpoints.rpc, logger: quiet)
        }

        deinit {
            client.close()
            runtime.stop()
        }

        func put(_ name: String) throws {
            _ = try client.call("t.put", Item(name: name), as: Item.self)
        }

        /// The error code of a `sys.backup` to `path`, nil when it succeeds.
        func backupRefusal(_ path: String) -> ServiceError? {
            do {
                _ = try client.call(Methods.System.backup.name, BackupRequest(to: path), as: BackupReply.self)
                return nil
            } catch {
                return error
            }
        }
    }

    /// The relay marks its run in the outbox (`Outbox.beginRun`): running while it publishes,
    /// ended once it stopped, so that only a start after the machine went down mid-run
    /// begins a new epoch.
    @Test func theRelayMarksItsRunBegunAndEnded() throws {
        let fixture = try Fixture()
        var config = ServiceConfig(service: "items")
        config.dataDirectory = fixture.folder.path
        let path = config.resolvedDatabasePath
        try fixture.put("one")
        func running() throws -> String? {
            try Database(path: path).queryOne("SELECT value FROM outbox_meta WHERE key = 'running'")?.decode("value", as: String.self)
        }
        #expect(try running() == "1")
        fixture.runtime.stop()
        #expect(try running() == "0")
    }

    @Test func aBackupOfABigFileIsOneCommitWhileWritesGoOnAndASecondWaitsItsTurn() throws {
        let fixture = try Fixture()
        _ = try fixture.client.call("t.fill", Fixture.Fill(n: 96), as: Empty.self, timeoutMilliseconds: 60_000)
        for name in ["a", "b", "c"] { try fixture.put(name) }

        let copy = fixture.folder.file("copy.sqlite")
        let answer = Locked<Result<BackupReply, ServiceError>?>(nil)
        let done = DispatchSemaphore(value: 0)
        fixture.client.send(type: Methods.System.backup.name, body: try JSONCoding.encoder.encode(BackupRequest(to: copy)), timeoutMilliseconds: 60_000) { result in
            answer.withLock { $0 = result.flatMap { reply in Result { () throws(ServiceError) in try reply.body(BackupReply.self) } } }
            done.signal()
        }
        // The copy is under way once its partial file appears (bounded: 10 s).
        for _ in 0..<1_000 where !FileManager.default.fileExists(atPath: copy + ".partial") && answer.value == nil { usleep(10_000) }
        #expect(FileManager.default.fileExists(atPath: copy + ".partial"))

        // Meanwhile a second backup is refused and writes are acknowledged.
        #expect(fixture.backupRefusal(fixture.folder.file("other.sqlite"))?.code == .conflict)
        for name in ["d", "e", "f", "g", "h"] { try fixture.put(name) }
        #expect(answer.value == nil, "the backup answered before the writes made during it; make the file bigger")

        #expect(done.wait(timeout: .now() + 60) == .success)
        let reply = try #require(try answer.value?.get())
        #expect(reply.service == "items" && reply.file == copy && reply.bytes > 96 << 20)
        #expect(try reply.bytes == (FileManager.default.attributesOfItem(atPath: copy)[.size] as? NSNumber)?.int64Value)
        #expect(!FileManager.default.fileExists(atPath: copy + ".partial"))
        // One commit: every item in the copy has its event in the copy's outbox, and no more.
        let head = try #require(reply.head)
        let db = try Database(path: copy, readOnly: true)
        #expect(try db.scalarInt("SELECT count(*) FROM items") == head)
        #expect(try Outbox(database: db).head() == head && Outbox(database: db).epoch() == reply.epoch)
        #expect(head >= 3 && head <= 8)
        #expect(try db.scalarInt("SELECT count(*) FROM blobs") == 96)

        // The turn is free again once the first is done.
        #expect(fixture.backupRefusal(fixture.folder.file("other.sqlite")) == nil)
    }

    @Test func aBackupRefusesAnExistingFileARelativePathAndAMissingFolder() throws {
        let fixture = try Fixture()
        try fixture.put("a")
        let existing = fixture.folder.file("existing.sqlite")
        try Data("keep".utf8).write(to: URL(fileURLWithPath: existing))
        let exists = fixture.backupRefusal(existing)
        #expect(exists?.code == .alreadyExists && exists?.field == "to")
        #expect(try Data(contentsOf: URL(fileURLWithPath: existing)) == Data("keep".utf8))
        let relative = fixture.backupRefusal("copy.sqlite")
        #expect(relative?.code == .invalidArgument && relative?.field == "to" && relative?.message.contains("absolute") == true)
        let missing = fixture.backupRefusal(fixture.folder.file("nowhere/copy.sqlite"))
        #expect(missing?.code == .invalidArgument && missing?.message.contains("does not exist") == true)
        // A refused backup leaves the turn free.
        #expect(fixture.backupRefusal(fixture.folder.file("copy.sqlite")) == nil)
    }
}
