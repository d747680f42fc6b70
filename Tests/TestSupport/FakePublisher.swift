import Bus
import Contracts
import Foundation
import ServiceKit
import Storage

/// The state of a service that needs only its worker: a stand-in publisher, or a test's own
/// small service.
public final class WorkerState: ServiceState {
    public let worker: ServiceWorker
    public init(worker: ServiceWorker) { self.worker = worker }
}

/// `fake.emit`: an event of `type` with `body` to publish, held for the snapshot under `key`
/// (or no longer held, with `delete`).
public struct FakeEmit: Codable, Sendable {
    public var type: String
    public var key: String
    public var body: String
    public var delete: Bool?

    public init(type: String, key: String, body: String, delete: Bool? = nil) {
        self.type = type
        self.key = key
        self.body = body
        self.delete = delete
    }
}

/// `fake.known`: what `catalog.get` answers for place `id` (nil body: forget it).
public struct FakeKnown: Codable, Sendable {
    public var id: Int64
    public var body: String?

    public init(id: Int64, body: String?) {
        self.id = id
        self.body = body
    }
}

/// `fake.streets`: a street network the fake catalog keeps as set `id` (bytes in base64, none:
/// forget it), told as `catalog.streets.changed`; `catalog.streets.list` and `.chunk` serve them.
public struct FakeStreets: Codable, Sendable {
    public var id: Int64
    public var data: String?

    public init(id: Int64, data: String?) {
        self.id = id
        self.data = data
    }
}

/// A stand-in publisher: a real runtime named like the service it imitates (catalog, social,
/// favorites), whose request `fake.emit` writes any event to its outbox, with a snapshot of
/// what it holds. It also answers `catalog.get` from what `fake.known` told it, so a place can
/// exist at a fake catalog before its event.
public func fakePublisher(name: String) -> ServiceDefinition<WorkerState> {
    var table = HandlerTable<WorkerState>()
    table.on("fake.emit", .write) { (emit: FakeEmit, _, state) -> Int64 in
        let db = state.worker.db
        if emit.delete == true {
            try db.run("DELETE FROM held WHERE key = ?", emit.key)
        } else {
            try db.run("INSERT OR REPLACE INTO held (key, type, body) VALUES (?, ?, ?)", emit.key, emit.type, emit.body)
        }
        return try Outbox(database: db).append(type: emit.type, body: Data(emit.body.utf8))
    }
    table.on("fake.known", .write) { (known: FakeKnown, _, state) -> Int64 in
        if let body = known.body {
            try state.worker.db.run("INSERT OR REPLACE INTO known (id, body) VALUES (?, ?)", known.id, body)
        } else {
            try state.worker.db.run("DELETE FROM known WHERE id = ?", known.id)
        }
        return known.id
    }
    table.onRaw(Methods.Catalog.get.name) { context, state in
        struct ById: Decodable { var id: Int64 }
        let id = try context.body(ById.self).id
        guard let row = try state.worker.db.queryOne("SELECT body FROM known WHERE id = ?", id) else {
            throw ServiceError(.notFound, "no place with id \(id)", field: "id")
        }
        return Response(body: Data(try row.decode("body", as: String.self).utf8))
    }
    table.on("fake.streets", .write) { (streets: FakeStreets, _, state) -> Int64 in
        let db = state.worker.db
        if let data = streets.data.flatMap({ Data(base64Encoded: $0) }) {
            try db.run("INSERT OR REPLACE INTO streets (id, bytes) VALUES (?, ?)", streets.id, data)
        } else {
            try db.run("DELETE FROM streets WHERE id = ?", streets.id)
        }
        let body = try JSONEncoder().encode(StreetSetsChanged(setId: streets.id, removed: []))
        return try Outbox(database: db).append(type: StreetEvents.changed, body: body)
    }
    table.on(Methods.Streets.list) { (_: Empty, _, state) in
        StreetSetList(
            sets: try state.worker.db.query("SELECT id, bytes FROM streets ORDER BY id").map { row in
                let bytes = [UInt8](try row.decode("bytes", as: Data.self))
                return StreetSetInfo(
                    id: try row.decode("id"), checksum: StreetSetInfo.checksum(bytes), bytes: bytes.count, nodes: 0, ways: 0, south: 0, west: 0,
                    north: 0, east: 0, createdAt: "x")
            })
    }
    table.on(Methods.Streets.chunk) { (request: StreetChunkRequest, _, state) in
        guard let row = try state.worker.db.queryOne("SELECT bytes FROM streets WHERE id = ?", request.setId) else {
            throw ServiceError(.notFound, "no street network \(request.setId)", field: "set_id")
        }
        let bytes = try row.decode("bytes", as: Data.self)
        let slice = bytes.dropFirst(request.offset).prefix(StreetChunk.maxBytes)
        return StreetChunk(setId: request.setId, offset: request.offset, total: bytes.count, data: Data(slice).base64EncodedString())
    }
    return ServiceDefinition(
        name: name,
        migrations: [Migration(domain: "fake", version: 1, sql: """
            CREATE TABLE held (key TEXT PRIMARY KEY, type TEXT NOT NULL, body TEXT NOT NULL);
            CREATE TABLE known (id INTEGER PRIMARY KEY, body TEXT NOT NULL);
            CREATE TABLE streets (id INTEGER PRIMARY KEY, bytes BLOB NOT NULL);
            """)],
        handlers: table, publishes: true,
        snapshot: { state, after, limit in
            let rows = try state.worker.db.query("SELECT key, type, body FROM held WHERE key > ? ORDER BY key LIMIT ?", after ?? "", limit)
            return SnapshotPage(events: try rows.map { (type: try $0.decode("type", as: String.self), body: Data(try $0.decode("body", as: String.self).utf8)) },
                                next: rows.count == limit ? try rows.last?.decode("key", as: String.self) : nil)
        },
        makeState: { WorkerState(worker: $0) })
}
