import Bus
import Foundation
@testable import NotifyService
import Testing

/// Edges an attacker found: time zone names, canonical ids, an origin no gateway takes, the inbox at 12 h.
@Suite(.serialized) struct NotifyEdgeTests {
    @Test func ianaTimeZoneNamesAreTakenAsFoundationKnowsThem() throws {
        let f = try NotifyFixture()
        for zone in ["Asia/Kolkata", "Etc/GMT-10", "US/Eastern", "Australia/Sydney", "UTC"] {
            #expect(f.error("notify.settings.set", #"{"timezone":"\#(zone)"}"#, as: 2) == nil, "\(zone)")
        }
        for zone in ["../etc/passwd", "GMT+10:00", "Mars/Olympus", "", String(repeating: "A", count: 65)] {
            #expect(f.error("notify.settings.set", #"{"timezone":"\#(zone)"}"#, as: 2)?.field == "timezone", "\(zone)")
        }
    }

    @Test func aUserIdIsOneDecimalSpelling() throws {
        let f = try NotifyFixture()
        let reply = try f.client.request(type: "notify.settings.get", body: Data("{}".utf8), auth: Auth(userId: "7", role: "user"), timeoutMilliseconds: 5_000)
        #expect(!reply.bodyJSON.isEmpty)
        for odd in ["007", "+7", "7 "] {
            #expect(throws: ServiceError.self, "\(odd)") {
                _ = try f.client.request(type: "notify.settings.get", body: Data("{}".utf8), auth: Auth(userId: odd, role: "user"), timeoutMilliseconds: 5_000)
            }
        }
    }

    @Test func anOriginNoGatewayWouldTakeIsLeftOutNotThePush() throws {
        let f = try NotifyFixture()
        try f.setForm()
        try f.submit(by: 2)
        let listener = try f.pushListener()
        let body = Data(#"{"lat":\#(quay.lat),"lon":\#(quay.lon)}"#.utf8)
        _ = try f.client.request(type: "notify.location", body: body, auth: Auth(userId: "3", role: "user", origin: #"gw/1"quoted"#), timeoutMilliseconds: 5_000)
        let push = try listener.next()
        #expect(push?.userId == 3 && push?.origin == nil)
    }

    @Test func inboxEntriesOlderThanTwelveHoursAreGoneBeforeThePurge() throws {
        let f = try NotifyFixture()
        try f.setForm()
        try f.submit(by: 2)
        try f.call("notify.location", #"{"lat":\#(quay.lat),"lon":\#(quay.lon)}"#, as: 3)
        #expect(((try f.call("notify.inbox", as: 3))["entries"] as? [Any])?.count == 1)
        f.advance(12 * 3_600_000 + 1)
        #expect(((try f.call("notify.inbox", as: 3))["entries"] as? [Any])?.isEmpty == true)
    }

    @Test func oneUserSubmitsTenAMinuteKeepsAHundredLiveAndReportsOnceASecond() throws {
        let defaults = NotifyOptions()
        let f = try NotifyFixture { options in
            options.reportIntervalMs = defaults.reportIntervalMs
            options.submitsPerMinute = defaults.submitsPerMinute
            options.liveAnnotationsPerUser = defaults.liveAnnotationsPerUser
        }
        try f.setForm()
        for _ in 0..<10 { try f.submit(by: 2) }
        #expect(f.error("annotations.submit", #"{"lat":\#(quay.lat),"lon":\#(quay.lon),"values":\#(quayValues)}"#, as: 2)?.code == .rateLimited)
        // Another user is not held back; a minute on, the first goes on, up to 100 live.
        try f.submit(by: 3)
        for _ in 0..<9 {
            f.advance(60_000)
            for _ in 0..<10 { try f.submit(by: 2) }
        }
        f.advance(60_000)
        #expect(f.error("annotations.submit", #"{"lat":\#(quay.lat),"lon":\#(quay.lon),"values":\#(quayValues)}"#, as: 2)?.message.contains("live") == true)
        // Reports: one a second per user.
        let here = #"{"lat":\#(quay.lat),"lon":\#(quay.lon)}"#
        try f.call("notify.location", here, as: 4)
        #expect(f.error("notify.location", here, as: 4)?.code == .rateLimited)
        #expect(f.error("notify.location", here, as: 5) == nil)
        f.advance(1_000)
        #expect(f.error("notify.location", here, as: 4) == nil)
    }

    @Test func timesAreRFC3339ReadStrictly() throws {
        let ok: [(String, Int64)] = [
            ("2026-06-01T00:00:00Z", notifyEpochMs), ("2026-06-01t00:00:00.25z", notifyEpochMs + 250),
            ("2026-06-01 10:00:00+10:00", notifyEpochMs), ("2026-05-31T23:30:00.123456789-00:30", notifyEpochMs + 123),
            ("2024-02-29T12:00:00Z", 1_709_208_000_000), ("2026-05-31T23:59:60Z", notifyEpochMs),  // a leap second: the next one
            ("1970-01-01T00:00:00Z", 0),
        ]
        for (text, expected) in ok { #expect(try NotifyStore.milliseconds(at: text) == expected, "\(text)") }
        for bad in ["2026-06-01T00:00:00Z; DROP TABLE", "2026-06-01T00:00:00Z\u{0}", "2026-06-01T00:00:00-11:99", "2026-06-01T00:00:00+05:30:45",
                    "2026-06-01T00:00:00+10", "2026-06-01T00:00:00+24:00", "2026-06-01T24:00:00Z", "2026-02-30T00:00:00Z", "2025-02-29T00:00:00Z",
                    "0000-01-01T00:00:00Z", "2026-6-1T00:00:00Z", "2026-06-01T00:00:00", "2026-06-01T00:00:00.Z", "2026-06-01T00:00:00.1234567890Z",
                    "2026-06-01", "1e9"] {
            #expect(throws: ServiceError.self, "\(bad)") { try NotifyStore.milliseconds(at: bad) }
        }
    }
}
