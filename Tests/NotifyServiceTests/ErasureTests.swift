import Bus
import Contracts
import Foundation
import NotifyService
import ServiceCore
import ServiceKit
import Storage
import Testing
import TestSupport

/// Notify following a fake social, over loopback, with a hand-moved clock.
final class ErasureFixture {
    let folder = TemporaryFolder("notify-erase")
    let context: ZMQContext
    let clock = Locked(notifyEpochMs)
    let social: ServiceRuntime<WorkerState>
    let notify: ServiceRuntime<NotifyStore>
    let socialClient: RPCClient
    let client: RPCClient
    let databasePath: String

    init() throws {
        context = try ZMQContext()
        var socialConfig = ServiceConfig(service: "social")
        socialConfig.dataDirectory = folder.path
        socialConfig.heartbeatMilliseconds = 50
        social = try ServiceRuntime(definition: fakePublisher(name: "social"), config: socialConfig, context: context, logger: notifyQuiet)
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

    /// Publishes an event from the fake social (held for its snapshot under a key of its own).
    func emit(_ type: String, _ body: String) throws {
        _ = try socialClient.call("fake.emit", FakeEmit(type: type, key: UUID().uuidString, body: body), as: Int64.self)
    }

    func count(_ sql: String, _ arguments: (any SQLBindable)?...) throws -> Int64 {
        try Database(path: databasePath).scalarInt(sql, arguments) ?? -1
    }

    /// Waits (at most 10 s) until `sql` counts `expected`.
    func eventually(_ sql: String, _ arguments: (any SQLBindable)?..., is expected: Int64) throws -> Bool {
        try TestSupport.eventually { try Database(path: databasePath).scalarInt(sql, arguments) == expected }
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
        #expect(try !rowsNaming(gone, texts: [], userColumns: ["user_id"], path: f.databasePath).isEmpty)
        let othersRows = "SELECT (SELECT count(*) FROM settings WHERE user_id = ?) || '/' || (SELECT count(*) FROM judged WHERE user_id = ?) || '/' || (SELECT count(*) FROM zones WHERE user_id = ?) || '/' || (SELECT count(*) FROM annotations WHERE user_id IN (?, ?)) AS v"
        let db = try Database(path: f.databasePath)
        let before = try db.queryOne(othersRows, other, other, other, other, third)?.decode("v", as: String.self)
        #expect(before == "1/1/2/2")

        // Events notify does not act on pass by; then the deletion.
        try f.emit(SocialEvents.ratingUpdated, #"{"place_id":1,"average":4,"count":1}"#)
        try f.emit("social.redacted", "{}")
        try f.emit(SocialEvents.userDeleted, #"{"user_id":\#(gone)}"#)
        #expect(try f.eventually("SELECT count(*) FROM settings WHERE user_id = ?", gone, is: 0))

        #expect(try rowsNaming(gone, texts: [], userColumns: ["user_id"], path: f.databasePath) == [])
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

    /// A request signed in before the deletion but arriving after the event (a gateway's cached
    /// token, a queue) is refused, so it makes no row of the user again; others go on.
    @Test func aLateRequestOfAnErasedUserIsRefusedAndLeavesNoRow() throws {
        let f = try ErasureFixture()
        try f.call("annotations.form.set", #"{"form":\#(notifyFormJSON())}"#, as: 1, role: "admin")
        try f.call("notify.settings.set", #"{"radius_m":800}"#, as: 7)
        try f.emit(SocialEvents.userDeleted, #"{"user_id":7}"#)
        #expect(try f.eventually("SELECT count(*) FROM settings WHERE user_id = ?", 7, is: 0))
        let late: [(String, String)] = [("notify.settings.set", #"{"radius_m":900}"#), ("notify.location", #"{"lat":\#(quay.lat),"lon":\#(quay.lon)}"#),
                                        ("annotations.submit", #"{"lat":\#(quay.lat),"lon":\#(quay.lon),"values":\#(quayValues)}"#)]
        for (type, body) in late {
            #expect(throws: ServiceError(.unauthenticated, "this account was deleted")) { try f.call(type, body, as: 7) }
        }
        #expect(try rowsNaming(7, texts: [], userColumns: ["user_id"], path: f.databasePath) == [])
        try f.call("notify.settings.set", #"{"radius_m":900}"#, as: 8)
        // After the window the id is an ordinary one again.
        f.clock.withLock { $0 += 600_001 }
        try f.call("notify.settings.set", #"{"radius_m":900}"#, as: 7)
    }
}
