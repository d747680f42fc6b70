import Bus
import CatalogService
import Contracts
import Foundation
import ServiceCore
import ServiceKit
import Storage
import Synchronization
import TestSupport

let quiet = Logger(component: "catalog-test", level: .error)

/// A catalog service running in this process on loopback ports, with a client to it.
final class CatalogFixture {
    let folder: TemporaryFolder
    let context: ZMQContext
    let runtime: ServiceRuntime<CatalogStore>
    let client: RPCClient
    let config: ServiceConfig

    /// `context`: a ZeroMQ context to share with peers the test runs (a fake social); `peers`:
    /// the endpoints the catalog follows; `options`: the catalog's own (a test's clock);
    /// `folder`: another fixture's, to start again on its database once that one stopped.
    init(retention: Int = 100_000, heartbeatMs: Int = 100, logger: Logger = quiet, context: ZMQContext? = nil,
         peers: [String: PeerEndpoints] = [:], options: CatalogOptions = CatalogOptions(), folder: TemporaryFolder = TemporaryFolder()) throws {
        self.folder = folder
        if let context { self.context = context } else { self.context = try ZMQContext() }
        var config = ServiceConfig(service: "catalog")
        config.dataDirectory = folder.path
        config.heartbeatMilliseconds = heartbeatMs
        config.outboxRetention = retention
        config.peers = peers
        self.config = config
        runtime = try ServiceRuntime(definition: CatalogService.definition(options: options), config: config, context: self.context, logger: logger)
        client = try RPCClient(context: self.context, endpoints: runtime.endpoints.rpc, logger: quiet)
    }

    deinit { stop() }

    /// Stops the service (another fixture may then start on its folder).
    func stop() {
        client.close()
        runtime.stop()
    }

    /// Sends a raw JSON body and returns the reply body as a dictionary, or throws the error.
    @discardableResult
    func raw(_ type: String, _ json: String) throws(ServiceError) -> [String: Any] {
        let reply = try client.request(type: type, body: Data(json.utf8), timeoutMilliseconds: 5_000)
        let object = try? JSONSerialization.jsonObject(with: reply.envelope) as? [String: Any]
        return object?["body"] as? [String: Any] ?? [:]
    }

    func create(_ name: String, category: String = "restaurant", lat: Double = -33.86, lon: Double = 151.21) throws -> Place {
        try client.call("catalog.create", PlaceInput(name: name, category: category, lat: lat, lon: lon), as: Place.self)
    }

    /// Creates `count` places with up to 64 requests in flight; returns when all are answered.
    func createMany(_ count: Int, prefix: String) throws {
        let group = DispatchGroup()
        let failures = Locked<[ServiceError]>([])
        for i in 0..<count {
            group.enter()
            let body = try JSONCoding.encoder.encode(PlaceInput(name: "\(prefix) \(i)", category: "cafe", lat: -33.8 + Double(i) * 1e-4, lon: 151.2))
            client.send(type: "catalog.create", body: body, timeoutMilliseconds: 30_000) { result in
                if case .failure(let error) = result { failures.withLock { $0.append(error) } }
                group.leave()
            }
            if i % 64 == 63 { group.wait() }
        }
        group.wait()
        if let error = failures.value.first { throw error }
    }

    /// Every place, by paging through `catalog.list`.
    func allPlaces() throws -> [Place] {
        var places: [Place] = []
        var cursor: String?
        for _ in 0..<10_000 {
            let page = try client.call("catalog.list", ListPlaces(limit: 100, cursor: cursor), as: PlacePage.self)
            places += page.places.map(\.place)
            guard let next = page.nextCursor else { break }
            cursor = next
        }
        return places
    }
}


/// A subscriber that keeps a copy of the catalog's places (id, name, version) in its own database.
final class PlaceMirror {
    let folder = TemporaryFolder()
    var path: String { folder.path + "/mirror.sqlite" }

    init() throws {
        let db = try Database(path: path)
        _ = try db.migrate(CursorSchema.migrations + [Migration(domain: "mirror", version: 1, sql: """
            CREATE TABLE mirror (id INTEGER PRIMARY KEY, name TEXT NOT NULL, version INTEGER NOT NULL);
            CREATE TABLE applied (n INTEGER NOT NULL);
            INSERT INTO applied VALUES (0);
            CREATE TABLE bulk_log (step TEXT NOT NULL);
            """)])
    }

    /// An event whose first application fails as storage would (the batch rolls back and the subscriber retries).
    struct InjectedFailure: Error {}
    static let failOnce = Mutex<Int64?>(nil)

    static let applier = EventApplier(
        apply: { event, scope in
            let db = scope.db
            if failOnce.withLock({ seq in seq == event.header.seq ? { seq = nil; return true }() : false }) { throw InjectedFailure() }
            switch event.header.type {
            case CatalogEvents.upserted:
                let place = try event.body(Place.self)
                try db.run("INSERT INTO mirror (id, name, version) VALUES (?, ?, ?) ON CONFLICT(id) DO UPDATE SET name = excluded.name, version = excluded.version",
                           place.id, place.name, place.version)
            case CatalogEvents.deleted:
                try db.run("DELETE FROM mirror WHERE id = ?", try event.body(PlaceDeleted.self).id)
            default:
                break
            }
            try db.run("UPDATE applied SET n = n + 1")
        },
        reset: { db in try db.run("DELETE FROM mirror") },
        startBulk: { db in try db.run("INSERT INTO bulk_log VALUES ('start')") },
        finishBulk: { db in try db.run("INSERT INTO bulk_log VALUES ('finish')") })

    /// The bulk hooks the applier saw, in order.
    func bulkLog() throws -> [String] {
        try Database(path: path).query("SELECT step FROM bulk_log ORDER BY rowid").decode("step", as: String.self)
    }

    func subscribe(to catalog: CatalogFixture, drop: (@Sendable (Int64) -> Bool)? = nil, bulkThreshold: Int64 = 20_000) throws -> EventSubscriber {
        var options = SubscriptionOptions(source: "catalog", publishEndpoints: catalog.runtime.endpoints.publish,
                                          rpcEndpoints: catalog.runtime.endpoints.rpc, database: DatabaseFile(path: path))
        options.dropLiveEvent = drop
        options.replayBatch = 200
        options.snapshotBatch = 300
        options.bulkThreshold = bulkThreshold
        return try EventSubscriber(context: catalog.context, options: options, applier: PlaceMirror.applier, logger: quiet)
    }

    /// The mirrored rows as (id, name, version), by id.
    func rows() throws -> [[String]] {
        let db = try Database(path: path)
        return try db.query("SELECT id, name, version FROM mirror ORDER BY id").map { row throws in
            [String(try row.decode("id", as: Int64.self)), try row.decode("name", as: String.self), String(try row.decode("version", as: Int64.self))]
        }
    }
}

func rows(of places: [Place]) -> [[String]] {
    places.sorted { $0.id < $1.id }.map { [String($0.id), $0.name, String($0.version)] }
}
