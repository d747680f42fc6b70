import Bus
import Contracts
import Foundation
import NotifyService
import ServiceCore
import ServiceKit
import Storage
import Testing
import TestSupport

/// A stand-in social service: a real runtime named `social` whose one request
/// (`fake.emit {type, body}`) writes any event to its outbox.
final class FakeSocialState: ServiceState {
    let worker: ServiceWorker
    init(worker: ServiceWorker) { self.worker = worker }
}

/// `fake.emit`'s body.
struct FakeEvent: Codable, Sendable {
    var type: String
    var body: String
}

func fakeSocial() -> ServiceDefinition<FakeSocialState> {
    var table = HandlerTable<FakeSocialState>()
    table.on("fake.emit", .write) { (event: FakeEvent, _, state) -> Int64 in
        try state.worker.db.transaction { try Outbox(database: state.worker.db).append(type: event.type, body: Data(event.body.utf8)) }
    }
    return ServiceDefinition(name: "social", migrations: [], handlers: table, publishes: true,
                             snapshot: { _, _, _ in SnapshotPage(events: [], next: nil) }, makeState: { FakeSocialState(worker: $0) })
}

/// What of user `id` is left in the SQLite file at `path`: each table and column, with a
/// count, where a `user_id` column holds `id` or a value holds the JSON `"user_id":id`.
func rowsNaming(_ id: Int64, path: String) throws -> [String] {
    let db = try Database(path: path)
    var found: [String] = []
    // sqlite_sequence holds counters, not rows of anyone.
    let tables = try db.query("SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' ORDER BY name")
        .decode("name", as: String.self)
    for table in tables {
        for column in try db.query("SELECT name FROM pragma_table_info(?)", table).decode("name", as: String.self) {
            let value = "CAST(\"\(column)\" AS TEXT)"
            var sql = "SELECT count(*) FROM \"\(table)\" WHERE \(value) LIKE ? OR \(value) LIKE ?"
            var arguments: [(any SQLBindable)?] = [#"%"user_id":\#(id),%"#, #"%"user_id":\#(id)}%"#]
            if column == "user_id" {
                sql += " OR user_id = ?"
                arguments.append(id)
            }
            if let count = try db.scalarInt(sql, arguments), count > 0 { found.append("\(table).\(column): \(count)") }
        }
    }
    return found
}

/// Notify following a fake social, over loopback, with a hand-moved clock.
final class ErasureFixture {
    let folder = TemporaryFolder("notify-erase")
    let context: ZMQContext
    let clock = Locked(notifyEpochMs)
    let social: ServiceRuntime<FakeSocialState>
    let notify: ServiceRuntime<NotifyStore>
    let socialClient: RPCClient
    let client: RPCClient
    let databasePath: String

    init() throws {
        context = try ZMQContext()
        var socialConfig = ServiceConfig(service: "social")
        socialConfig.dataDirectory = folder.path
        socialConfig.heartbeatMilliseconds = 50
        social = try ServiceRuntime(definition: fakeSocial(), config: socialConfig, context: context, logger: notifyQuiet)
        var config = ServiceConfig(service: "notify")
        config.dataDirectory = folder.path
        config.heartbeatMilliseconds = 50
        config.peers = ["social": PeerEndpoints(rpc: social.endpoints.rpc, publish: social.endpoints.publish)]
        databasePath = config.resolvedDatabasePath
        var options = NotifyOptions()
        let clock = self.clock
        options.clock = { clock.value }
        options.reportIntervalMs = 0
        notify = try ServiceRuntime(definition: NotifyService.definition(options: options), config: config, context: context, logger: notifyQuiet)
        socialClient = try RPCClient(context: context, endpoints: social.endpoints.rpc, logger: notifyQuiet)
        client = try RPCClient(context: context, endpoints: notify.endpoints.rpc, logger: notifyQuiet)
    }

    deinit {
        client.close()
        socialClient.close()
        notify.stop()
        social.stop()
    }

    @discardableResult
    func call(_ type: String, _ json: String = "{}", as user: Int64, role: String = "user") throws -> [String: Any] {
        let reply = try client.request(type: type, body: Data(json.utf8), auth: Auth(userId: String(user), role: role), timeoutMilliseconds: 5_000)
        return jsonObject(reply.bodyJSON)
    }

    func submit(by user: Int64, lat: Double, lon: Double) throws -> Int64 {
        (try call("annotations.submit", #"{"lat":\#(lat),"lon":\#(lon),"values":\#(quayValues)}"#, as: user)["id"] as? NSNumber)?.int64Value ?? 0
    }

    /// The alerts' annotation ids of a report by `user` at `lat, lon`, a second after the last.
    func report(by user: Int64, lat: Double, lon: Double) throws -> [Int64] {
        clock.withLock { $0 += 1_000 }
        let alerts = try call("notify.location", #"{"lat":\#(lat),"lon":\#(lon)}"#, as: user)["alerts"] as? [[String: Any]] ?? []
        return alerts.compactMap { ($0["id"] as? NSNumber)?.int64Value }
    }

    func emit(_ type: String, _ body: String) throws {
        _ = try socialClient.call("fake.emit", FakeEvent(type: type, body: body), as: Int64.self)
    }

    func count(_ sql: String, _ arguments: (any SQLBindable)?...) throws -> Int64 {
        try Database(path: databasePath).scalarInt(sql, arguments) ?? -1
    }

    /// Waits (at most 10 s) until `sql` counts `expected`.
    func eventually(_ sql: String, _ arguments: (any SQLBindable)?..., is expected: Int64) throws -> Bool {
        for _ in 0..<200 {
            if try Database(path: databasePath).scalarInt(sql, arguments) == expected { return true }
            usleep(50_000)
        }
        return false
    }
}

@Suite struct ErasureTests {
    /// 2 km east and west of the quay: apart from it and each other by more than any radius here.
    static let east = (lat: quay.lat, lon: quay.lon + 0.0216)
    static let west = (lat: quay.lat, lon: quay.lon - 0.0216)

    @Test func aDeletedUserLeavesNoRowAndOthersKeepTheirs() throws {
        let f = try ErasureFixture()
        try f.call("annotations.form.set", #"{"form":\#(notifyFormJSON())}"#, as: 1, role: "admin")
        let (gone, other, third): (Int64, Int64, Int64) = (7, 8, 9)
        try f.call("notify.settings.set", #"{"radius_m":800}"#, as: gone)
        try f.call("notify.settings.set", #"{"radius_m":900}"#, as: other)
        let goneAt = try f.submit(by: gone, lat: quay.lat, lon: quay.lon)
        let goneOld = try f.submit(by: gone, lat: quay.lat + 0.0001, lon: quay.lon)
        let otherAt = try f.submit(by: other, lat: Self.west.lat, lon: Self.west.lon)
        let thirdAt = try f.submit(by: third, lat: Self.east.lat, lon: Self.east.lon)
        // The one to go is alerted (inbox, pair, zone, judged); the other is alerted of theirs and of the third's.
        #expect(try f.report(by: gone, lat: Self.west.lat, lon: Self.west.lon) == [otherAt])
        #expect(try f.report(by: other, lat: quay.lat, lon: quay.lon).contains(goneAt))
        #expect(try f.report(by: other, lat: Self.east.lat, lon: Self.east.lon) == [thirdAt])
        let cursor = try f.call("annotations.sync", as: other)["cursor"] as? String ?? ""
        #expect(try !rowsNaming(gone, path: f.databasePath).isEmpty)
        let othersRows = "SELECT (SELECT count(*) FROM settings WHERE user_id = ?) || '/' || (SELECT count(*) FROM judged WHERE user_id = ?) || '/' || (SELECT count(*) FROM zones WHERE user_id = ?) || '/' || (SELECT count(*) FROM annotations WHERE user_id IN (?, ?)) AS v"
        let db = try Database(path: f.databasePath)
        let before = try db.queryOne(othersRows, other, other, other, other, third)?.decode("v", as: String.self)
        #expect(before == "1/1/2/2")

        // Events notify does not act on pass by; then the deletion.
        try f.emit(SocialEvents.ratingUpdated, #"{"place_id":1,"average":4,"count":1}"#)
        try f.emit("social.redacted", "{}")
        try f.emit(SocialEvents.userDeleted, #"{"user_id":\#(gone)}"#)
        #expect(try f.eventually("SELECT count(*) FROM settings WHERE user_id = ?", gone, is: 0))

        #expect(try rowsNaming(gone, path: f.databasePath) == [])
        #expect(try db.queryOne(othersRows, other, other, other, other, third)?.decode("v", as: String.self) == before)
        // The other's inbox keeps the third's alert only; their pair with the gone annotation went with it.
        let inbox = try f.call("notify.inbox", as: other)["entries"] as? [[String: Any]] ?? []
        #expect(inbox.compactMap { (($0["alert"] as? [String: Any])?["id"] as? NSNumber)?.int64Value } == [thirdAt])
        #expect(try f.count("SELECT count(*) FROM pairs WHERE annotation_id IN (?, ?)", goneAt, goneOld) == 0)
        #expect(try f.count("SELECT count(*) FROM annotations_geo WHERE id IN (?, ?)", goneAt, goneOld) == 0)
        #expect(try f.count("SELECT count(*) FROM zones_geo") == 2)
        // Clients that sync hear that both annotations are gone.
        let sync = try f.call("annotations.sync", #"{"cursor":"\#(cursor)"}"#, as: other)
        #expect(Set((sync["deleted"] as? [NSNumber] ?? []).map(\.int64Value)) == [goneAt, goneOld])

        // The same event again changes nothing.
        let changes = try f.count("SELECT count(*) FROM changes")
        try f.emit(SocialEvents.userDeleted, #"{"user_id":\#(gone)}"#)
        try f.emit(SocialEvents.userDeleted, #"{"user_id":\#(third)}"#)
        #expect(try f.eventually("SELECT count(*) FROM annotations WHERE user_id = ?", third, is: 0))
        #expect(try f.count("SELECT count(*) FROM changes") == changes + 1)
        #expect(try f.count("SELECT count(*) FROM annotations WHERE user_id = ?", other) == 1)
    }
}
