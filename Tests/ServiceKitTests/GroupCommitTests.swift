import Bus
import Foundation
import ServiceCore
import ServiceKit
import Storage
import Testing
import TestSupport

private let quiet = Logger(component: "group-commit-test", level: .error) { _ in }

/// Group commit on a real SQLite file: the writes that queue up together commit in one
/// transaction, each in its own savepoint, and are answered only after the commit.
@Suite struct GroupCommitTests {
    /// A service whose `t.hold` write waits until the test opens the gate, so the writes sent
    /// meanwhile queue up behind it. `t.put` inserts an item and emits `item.put` without a
    /// transaction of its own, and throws after writing when the name starts with "bad";
    /// `t.orphan` inserts a row whose deferred foreign key fails only at COMMIT.
    final class Fixture {

        struct Item: Codable, Sendable { var name: String }

        let folder = TemporaryFolder("group-commit")
        let context: ZMQContext
        let runtime: ServiceRuntime<WorkerState>
        let client: RPCClient
        let db: Database
        let entered = DispatchSemaphore(value: 0)
        let gate = DispatchSemaphore(value: 0)

        init() throws {
            context = try ZMQContext()
            var table = HandlerTable<WorkerState>()
            let (entered, gate) = (entered, gate)
            table.on("t.hold", .write) { (_: Empty, _, _) -> Empty in
                entered.signal()
                _ = gate.wait(timeout: .now() + 10)
                return Empty()
            }
            table.on("t.put", .write) { (item: Item, _, state) -> Item in
                try state.worker.db.run("INSERT INTO items (name) VALUES (?)", item.name)
                try state.worker.emit("item.put", item)
                if item.name.hasPrefix("bad") { throw ServiceError(.conflict, "refused after writing", field: "name") }
                return item
            }
            table.on("t.orphan", .write) { (_: Empty, _, state) -> Empty in
                try state.worker.db.run("INSERT INTO owned (owner) VALUES (42)")
                return Empty()
            }
            let schema = Migration(domain: "items", version: 1, sql: """
                CREATE TABLE items (name TEXT PRIMARY KEY);
                CREATE TABLE owners (id INTEGER PRIMARY KEY);
                CREATE TABLE owned (owner INTEGER NOT NULL REFERENCES owners (id) DEFERRABLE INITIALLY DEFERRED);
                """)
            let definition = ServiceDefinition<WorkerState>(name: "items", migrations: [schema], handlers: table, publishes: true,
                                                      makeState: { WorkerState(worker: $0) })
            var config = ServiceConfig(service: "items")
            config.dataDirectory = folder.path
            runtime = try ServiceRuntime(definition: definition, config: config, context: context, logger: quiet)
            client = try RPCClient(context: context, endpoints: runtime.endpoints.rpc, logger: quiet)
            db = try Database(path: config.resolvedDatabasePath)
        }

        deinit {
            client.close()
            runtime.stop()
        }

        /// Holds the writer, sends `requests` (type and item name) and opens the gate once all
        /// of them wait in the server; returns each request's answer (the name, "ok" or the error code).
        func heldBatch(_ requests: [(type: String, name: String)]) throws -> [String] {
            let replies = Locked<[Int: String]>([:])
            let group = DispatchGroup()
            group.enter()
            client.send(type: "t.hold", body: Data("{}".utf8), timeoutMilliseconds: 10_000) { _ in group.leave() }
            #expect(entered.wait(timeout: .now() + 5) == .success)
            for (index, request) in requests.enumerated() {
                group.enter()
                let body = try JSONCoding.encoder.encode(Item(name: request.name))
                client.send(type: request.type, body: body, timeoutMilliseconds: 10_000) { result in
                    let answer: String
                    switch result {
                    case .success(let reply): answer = (try? reply.body(Item.self).name) ?? "ok"
                    case .failure(let error): answer = error.code.rawValue
                    }
                    replies.withLock { $0[index] = answer }
                    group.leave()
                }
            }
            for _ in 0..<500 where runtime.server.stats.snapshot().inFlight < requests.count + 1 { usleep(10_000) }
            #expect(runtime.server.stats.snapshot().inFlight == requests.count + 1)
            gate.signal()
            #expect(group.wait(timeout: .now() + 10) == .success)
            return requests.indices.map { replies.value[$0] ?? "no reply" }
        }

        var items: [String] { get throws { try db.query("SELECT name FROM items ORDER BY name").map { $0.value(0).textValue ?? "" } } }
        var events: Int64 { get throws { try Outbox(database: db).head() } }
    }

    @Test func aWriteThatThrowsUndoesOnlyItselfAndTheOthersCommit() throws {
        let fixture = try Fixture()
        let replies = try fixture.heldBatch([("t.put", "a"), ("t.put", "bad"), ("t.put", "b")])
        #expect(replies == ["a", "conflict", "b"])
        // "bad" wrote its row and its event before throwing; its savepoint undid both.
        #expect(try fixture.items == ["a", "b"])
        #expect(try fixture.events == 2)
    }

    @Test func writesQueuedTogetherCommitAsOneTransactionAndNoneIsAnsweredBeforeIt() throws {
        let fixture = try Fixture()
        // The orphan's deferred foreign key fails at COMMIT: the writes sharing its transaction
        // are undone with it, and answered with the commit's error though their handlers succeeded.
        let replies = try fixture.heldBatch([("t.put", "c"), ("t.orphan", "-"), ("t.put", "d")])
        #expect(replies == ["conflict", "conflict", "conflict"])
        #expect(try fixture.items == [])
        #expect(try fixture.events == 0)
        // The writer goes on: a write alone commits and is answered.
        #expect(try fixture.client.call("t.put", Fixture.Item(name: "e"), as: Fixture.Item.self).name == "e")
        #expect(try fixture.items == ["e"])
        #expect(try fixture.events == 1)
    }
}
