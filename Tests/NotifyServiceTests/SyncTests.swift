import Bus
import Foundation
import Testing

/// `annotations.sync` over the change log, and the purge of R6, on a real service with a moved clock.
@Suite(.serialized) struct SyncTests {
    /// Pages of a sync from `cursor` until `more` is false (at most 100 pages): the ids changed
    /// and deleted, in order, and the cursor to go on from.
    static func syncAll(_ f: NotifyFixture, from cursor: String? = nil, box: String = "", limit: Int = 100, as user: Int64? = nil) throws
        -> (changed: [Int64], deleted: [Int64], cursor: String, poll: Int) {
        var changed: [Int64] = [], deleted: [Int64] = []
        var cursor = cursor
        var poll = 0
        for _ in 0..<100 {
            let cursorMember = cursor.map { #","cursor":"\#($0)""# } ?? ""
            let page = try f.call("annotations.sync", #"{"limit":\#(limit)\#(cursorMember)\#(box)}"#, as: user)
            changed += ((page["changed"] as? [[String: Any]]) ?? []).compactMap { ($0["id"] as? NSNumber)?.int64Value }
            deleted += ((page["deleted"] as? [NSNumber]) ?? []).map(\.int64Value)
            cursor = page["cursor"] as? String
            poll = (page["next_poll_s"] as? Int) ?? 0
            if page["more"] as? Bool != true { break }
        }
        return (changed, deleted, cursor ?? "", poll)
    }

    @Test func theFirstSyncListsEveryLiveOneThenEachSyncWhatChangedSince() throws {
        let f = try NotifyFixture()
        try f.setForm()
        let ids = try (0..<7).map { _ in try f.submit(by: 2) }
        // Listed over pages of 3.
        let first = try SyncTests.syncAll(f, limit: 3)
        #expect(first.changed == ids && first.deleted.isEmpty)
        // Nothing since.
        let again = try SyncTests.syncAll(f, from: first.cursor)
        #expect(again.changed.isEmpty && again.deleted.isEmpty && again.cursor == first.cursor)
        // One new, one deleted, one new then deleted: each told once, as it ends.
        let fresh = try f.submit(by: 3)
        try f.call("annotations.delete", #"{"id":\#(ids[1])}"#, as: 2)
        let gone = try f.submit(by: 3)
        try f.call("annotations.delete", #"{"id":\#(gone)}"#, as: 3)
        let since = try SyncTests.syncAll(f, from: first.cursor, limit: 1)
        #expect(since.changed == [fresh] && since.deleted == [ids[1], gone], "\(since)")
        #expect(try SyncTests.syncAll(f, from: since.cursor).changed.isEmpty)
    }

    @Test func aBoxSyncHearsOnlyOfItsBox() throws {
        let f = try NotifyFixture()
        try f.setForm()
        let inside = try f.submit(by: 2)
        _ = try f.submit(by: 2, lat: -33.90, lon: 151.25, values: #"{"kind":"b","detail":"b1"}"#)
        let box = #","bbox":{"south":-33.87,"west":151.20,"north":-33.85,"east":151.22}"#
        let first = try SyncTests.syncAll(f, box: box)
        #expect(first.changed == [inside])
        let later = try f.submit(by: 2)
        _ = try f.submit(by: 2, lat: -33.90, lon: 151.25, values: #"{"kind":"b","detail":"b1"}"#)
        #expect(try SyncTests.syncAll(f, from: first.cursor, box: box).changed == [later])
        #expect(f.error("annotations.sync", #"{"bbox":{"south":-33.87}}"#)?.field == "bbox.west")
        #expect(f.error("annotations.sync", #"{"bbox":{"south":-33.8,"west":151.2,"north":-33.9,"east":151.3}}"#)?.field == "bbox.north")
        #expect(f.error("annotations.sync", #"{"cursor":"nonsense"}"#)?.field == "cursor")
    }

    @Test func thePurgeDeletesWhatIsOlderThanTwelveHoursAndSyncSaysSo() throws {
        let f = try NotifyFixture()
        try f.setForm()
        let old = try f.submit(by: 2)
        let first = try SyncTests.syncAll(f)
        f.advance(6 * 3_600_000)
        let younger = try f.submit(by: 3)
        // A report alerts user 4 of the old one (the younger, beside it, is suppressed: R3), filling its inbox and pairs.
        #expect(((try f.call("notify.location", #"{"lat":\#(quay.lat),"lon":\#(quay.lon)}"#, as: 4))["alerts"] as? [Any])?.count == 1)
        f.advance(6 * 3_600_000 + 1)  // the old one is 12 h and 1 ms old
        #expect((try f.call("annotations.purge"))["annotations"] as? Int == 1)
        #expect(f.error("annotations.get", #"{"id":\#(old)}"#)?.code == .notFound)
        let since = try SyncTests.syncAll(f, from: first.cursor)
        #expect(since.changed == [younger] && since.deleted == [old], "\(since)")
        // Inbox entries go after 12 h too (this one came with the report 6 h ago).
        #expect(((try f.call("notify.inbox", as: 4))["entries"] as? [Any])?.count == 1)
        f.advance(6 * 3_600_000)
        #expect((try f.call("annotations.purge"))["annotations"] as? Int == 1)
        #expect(((try f.call("notify.inbox", as: 4))["entries"] as? [Any])?.isEmpty == true)
        // A day on, the change log before the cursor is gone: the cursor is refused.
        f.advance(24 * 3_600_000)
        try f.call("annotations.purge")
        #expect(f.error("annotations.sync", #"{"cursor":"\#(first.cursor)"}"#)?.field == "cursor")
        #expect(try SyncTests.syncAll(f).changed.isEmpty)
    }

    @Test func nextPollIsLongerAtNightInTheCallersTimeZone() throws {
        let f = try NotifyFixture()
        try f.setForm()
        // The fixture's clock is 00:00 UTC: night in UTC, 10:00 in Sydney.
        #expect(try SyncTests.syncAll(f).poll == 600)
        try f.call("notify.settings.set", #"{"timezone":"Australia/Sydney"}"#, as: 5)
        #expect(try SyncTests.syncAll(f, as: 5).poll == 60)
    }
}
