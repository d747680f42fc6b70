import Bus
import Contracts
import Foundation
@testable import NotifyService
import Testing
import TestSupport

/// `notify.location`, its push and the inbox, over real sockets with a hand-moved clock.
@Suite struct LocationServiceTests {
    /// The ids of the alerts of a reply or push body.
    static func alertIds(_ body: [String: Any]) -> [Int64] {
        (body["alerts"] as? [[String: Any]] ?? []).compactMap { ($0["id"] as? NSNumber)?.int64Value }
    }

    static let atQuay = #"{"lat":-33.861,"lon":151.211}"#

    /// Submits `count` annotations by user 2 evenly on a circle of 2.5 km around the quay.
    @discardableResult
    static func ring(_ count: Int, _ f: NotifyFixture) throws -> [Int64] {
        try (0..<count).map { i in
            let angle = Double(i) / Double(count) * 2 * Double.pi
            return try f.submit(by: 2, lat: quay.lat + 0.0225 * sin(angle), lon: quay.lon + 0.027 * cos(angle))
        }
    }

    @Test func aReportNearAFreshAnnotationAlertsPushesOnceAndFillsTheInbox() throws {
        let f = try NotifyFixture()
        try f.setForm()
        let listener = try f.pushListener()
        let id = try f.submit(by: 2, text: "Ferry late")
        // The author is never alerted of their own annotation.
        #expect(Self.alertIds(try f.call("notify.location", Self.atQuay, as: 2)).isEmpty)
        f.advance(60_000)
        let reply = try f.call("notify.location", #"{"lat":-33.8615,"lon":151.211}"#, as: 3)
        #expect(Self.alertIds(reply) == [id] && reply["stale"] as? Bool == false && reply["more"] == nil)
        let alert = (reply["alerts"] as? [[String: Any]])?.first ?? [:]
        let distance = (alert["distance_m"] as? Double) ?? -1
        #expect(abs(distance - 55.6) < 0.1, "distance_m \(distance)")
        #expect(alert["text"] as? String == "Ferry late" && alert["user_id"] as? Int == 2)

        let push = try listener.next()
        #expect(push?.topic == "notify.alert" && push?.userId == 3 && push?.coalesce == nil)
        let pushed = push.map { jsonObject($0.body) } ?? [:]
        #expect(Self.alertIds(pushed) == [id] && pushed["stale"] == nil)
        // The user's own report made no push: only user 3's arrived.
        #expect(try listener.next() == nil)

        // Seen: no second alert while the user stays in range.
        f.advance(60_000)
        #expect(Self.alertIds(try f.call("notify.location", Self.atQuay, as: 3)).isEmpty)

        let inbox = try f.call("notify.inbox", as: 3)
        let entries = inbox["entries"] as? [[String: Any]] ?? []
        #expect(entries.count == 1 && (entries.first?["alert"] as? [String: Any])?["id"] as? Int == Int(id))
        #expect(entries.first?["at"] as? String == "2026-06-01T00:01:00.000Z")
        #expect(try f.call("notify.inbox", as: 2)["entries"] as? [Any] != nil)
        #expect((try f.call("notify.inbox", as: 2)["entries"] as? [Any])?.isEmpty == true)
        let entry = (entries.first?["id"] as? NSNumber)?.int64Value ?? 0
        #expect(try f.call("notify.ack", #"{"ids":[\#(entry)]}"#, as: 2)["acked"] as? Int == 0)  // not user 2's
        #expect(try f.call("notify.ack", #"{"ids":[\#(entry),\#(entry)]}"#, as: 3)["acked"] as? Int == 1)
        #expect((try f.call("notify.inbox", as: 3)["entries"] as? [Any])?.isEmpty == true)
    }

    @Test func aReportsTimeIsCheckedAndAnEarlierOneIsStale() throws {
        let f = try NotifyFixture()
        try f.setForm()
        f.advance(12 * 3_600_000)  // now 2026-06-01T12:00:00Z
        func report(_ at: String) -> String { refusedField(f.error("notify.location", #"{"lat":-33.861,"lon":151.211,"at":"\#(at)"}"#, as: 3)) }
        #expect(report("2026-05-31T23:59:59.999Z") == "invalid_argument at")
        #expect(report("2026-06-01T12:01:00.001Z") == "invalid_argument at")
        #expect(report("yesterday") == "invalid_argument at")
        #expect(report(String(repeating: "2", count: 41)) == "invalid_argument at")
        #expect(report("2026-06-01T00:00:00.000Z") == "no error")
        #expect(report("2026-06-01T22:01:00+10:00") == "no error")  // 12:01 UTC
        #expect(refusedField(f.error("notify.location", #"{"lat":-33.861,"lon":200}"#, as: 3)) == "invalid_argument lon")
        #expect(refusedField(f.error("notify.location", #"{"lat":-33.861,"lon":151.211}"#)) == "unauthenticated -")
        // Earlier than the latest judged report: stale; the same time is not.
        #expect(try f.call("notify.location", #"{"lat":-33.861,"lon":151.211,"at":"2026-06-01T12:00:59.999Z"}"#, as: 3)["stale"] as? Bool == true)
        #expect(try f.call("notify.location", #"{"lat":-33.861,"lon":151.211,"at":"2026-06-01T12:01:00Z"}"#, as: 3)["stale"] as? Bool == false)
    }

    @Test func anAlertSuppressesAnAnnotationPostedNearbyLater() throws {
        let f = try NotifyFixture()
        try f.setForm()
        let first = try f.submit(by: 2)
        f.advance(1_000)
        #expect(Self.alertIds(try f.call("notify.location", Self.atQuay, as: 3)) == [first])
        // 30 minutes later someone posts 200 m away: the zone of the first alert suppresses it for user 3 ...
        f.advance(30 * 60_000)
        let second = try f.submit(by: 4, lat: quay.lat + 0.0018)
        #expect(Self.alertIds(try f.call("notify.location", #"{"lat":\#(quay.lat + 0.0018),"lon":151.211}"#, as: 3)).isEmpty)
        // ... but alerts user 5, who had no alert.
        #expect(Self.alertIds(try f.call("notify.location", #"{"lat":\#(quay.lat + 0.0018),"lon":151.211}"#, as: 5)).contains(second))
    }

    @Test func anAlertSuppressesAnnotationsBeyondTheUsersRadiusToo() throws {
        let f = try NotifyFixture()
        try f.setForm()
        try f.call("notify.settings.set", #"{"radius_m":50}"#, as: 3)
        let near = try f.submit(by: 2)
        let beyond = try f.submit(by: 4, lat: quay.lat + 0.0036)  // 400 m north: out of 50 m, within R3's 500 m
        f.advance(1_000)
        #expect(Self.alertIds(try f.call("notify.location", Self.atQuay, as: 3)) == [near])
        f.advance(1_000)
        // Walking there finds it suppressed (waiting, now seen): no alert.
        #expect(Self.alertIds(try f.call("notify.location", #"{"lat":\#(quay.lat + 0.0036),"lon":151.211}"#, as: 3)).isEmpty)
        #expect(beyond > near)
    }

    @Test func alertsOffMeansNoAlertAndAFarReportReArms() throws {
        let f = try NotifyFixture()
        try f.setForm()
        let id = try f.submit(by: 2)
        try f.call("notify.settings.set", #"{"alerts":false}"#, as: 3)
        #expect(Self.alertIds(try f.call("notify.location", Self.atQuay, as: 3)).isEmpty)
        try f.call("notify.settings.set", #"{"alerts":true,"radius_m":100}"#, as: 3)
        f.advance(1)
        #expect(Self.alertIds(try f.call("notify.location", Self.atQuay, as: 3)) == [id])
        f.advance(1)
        #expect(Self.alertIds(try f.call("notify.location", #"{"lat":-33.8621,"lon":151.211}"#, as: 3)).isEmpty)  // 122 m: left
        f.advance(1)
        #expect(Self.alertIds(try f.call("notify.location", Self.atQuay, as: 3)) == [id])  // back: armed again
        // Leaving far away (2 km, beyond radius_m + 500 m) re-arms it as well.
        f.advance(1)
        #expect(Self.alertIds(try f.call("notify.location", #"{"lat":-33.879,"lon":151.211}"#, as: 3)).isEmpty)
        f.advance(1)
        #expect(Self.alertIds(try f.call("notify.location", Self.atQuay, as: 3)) == [id])
    }

    @Test func aPushListsAtMost20AlertsAndAtMostItsBytesAndCountsTheRest() throws {
        let f = try NotifyFixture()
        try f.setForm()
        // 21 annotations on a circle of 2.5 km around the quay, about 750 m apart, so that no
        // alert suppresses another (R3 reaches 500 m); a radius of 5 km takes them all in.
        try f.call("notify.settings.set", #"{"radius_m":5000}"#, as: 3)
        let ids = try Self.ring(21, f)
        #expect(ids.count == 21)
        let listener = try f.pushListener()
        let reply = try f.call("notify.location", Self.atQuay, as: 3)
        #expect(Self.alertIds(reply).count == 20 && reply["more"] as? Int == 1)
        let pushed = try listener.next().map { jsonObject($0.body) } ?? [:]
        #expect(Self.alertIds(pushed) == Self.alertIds(reply) && pushed["more"] as? Int == 1)
        // Every alert is in the inbox: 21 entries, in pages of 20 and 1.
        let page = try f.call("notify.inbox", #"{"limit":20}"#, as: 3)
        let cursor = page["next_cursor"] as? String ?? ""
        let rest = try f.call("notify.inbox", #"{"limit":20,"cursor":"\#(cursor)"}"#, as: 3)
        #expect((page["entries"] as? [Any])?.count == 20 && (rest["entries"] as? [Any])?.count == 1 && rest["next_cursor"] == nil)
        #expect(refusedField(f.error("notify.inbox", #"{"limit":101}"#, as: 3)) == "invalid_argument limit")
        #expect(refusedField(f.error("notify.inbox", #"{"cursor":"djE"}"#, as: 3)) == "invalid_argument cursor")

        // With a budget of 1,000 bytes a push holds what fits (each alert is about 250 bytes).
        let small = try NotifyFixture { $0.pushBudgetBytes = 1_000 }
        try small.setForm()
        try small.call("notify.settings.set", #"{"radius_m":5000}"#, as: 3)
        try Self.ring(5, small)
        let capped = try small.call("notify.location", Self.atQuay, as: 3)
        let listed = Self.alertIds(capped).count
        #expect(listed >= 1 && listed < 5 && capped["more"] as? Int == 5 - listed, "\(listed) listed")
    }

    @Test func ackTakesOneTo100Ids() throws {
        let f = try NotifyFixture()
        #expect(refusedField(f.error("notify.ack", #"{"ids":[]}"#, as: 3)) == "invalid_argument ids")
        let many = (1...101).map(String.init).joined(separator: ",")
        #expect(refusedField(f.error("notify.ack", #"{"ids":[\#(many)]}"#, as: 3)) == "invalid_argument ids")
        #expect(try f.call("notify.ack", #"{"ids":[\#((1...100).map(String.init).joined(separator: ","))]}"#, as: 3)["acked"] as? Int == 0)
        #expect(refusedField(f.error("notify.ack", #"{"ids":[1]}"#)) == "unauthenticated -")
    }
}
