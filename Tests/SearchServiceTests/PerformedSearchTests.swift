import Bus
import Contracts
import Foundation
import SearchService
import ServiceCore
import ServiceKit
import Storage
import Testing
import TestSupport

/// `search.performed`: search alone over real sockets tells of the text searches of signed-in
/// callers, and of no one else's.
@Suite struct PerformedSearchTests {
    /// Sends `search.text` with `json` as `user` (nil: anonymous); the error code, or nil.
    @discardableResult
    static func text(_ f: SearchFixture, _ json: String, as user: String?) throws -> String? {
        let client = try #require(f.searchClient)
        do {
            _ = try client.request(type: "search.text", body: Data(json.utf8), auth: user.map { Auth(userId: $0, role: "user") },
                                   timeoutMilliseconds: 5_000)
            return nil
        } catch {
            return "\(error.code.rawValue) \(error.field ?? "-")"
        }
    }

    /// The `search.performed` events search's outbox holds, through `sys.replay`.
    static func replayed(_ f: SearchFixture) throws -> [SearchPerformed] {
        let client = try #require(f.searchClient)
        let reply = try client.request(type: "sys.replay", body: Data(#"{"after":0}"#.utf8), timeoutMilliseconds: 5_000)
        return try reply.attachments.map { frame in
            let event = try ReceivedEvent(envelope: frame)
            #expect(event.header.type == SearchEvents.performed)
            return try event.body(SearchPerformed.self)
        }
    }

    /// Polls until search's outbox holds `count` events (at most 5 s), then a little longer, so
    /// that one too many would show.
    static func waitForEvents(_ f: SearchFixture, _ count: Int) throws -> [SearchPerformed] {
        for _ in 0..<100 {
            if try replayed(f).count >= count { break }
            usleep(50_000)
        }
        usleep(300_000)
        return try replayed(f)
    }

    @Test func aSignedInSearchIsPublishedAndAnAnonymousOneIsNot() throws {
        let f = try SearchFixture()
        let search = try #require(f.search)
        let context = try ZMQContext()
        let sub = try Socket(context, .sub)
        try sub.subscribe("search.")
        for endpoint in search.endpoints.publish { try sub.connect(endpoint) }
        usleep(200_000)  // the subscription reaches the publisher

        #expect(try Self.text(f, #"{"q":"opera bar"}"#, as: nil) == nil)
        #expect(try Self.text(f, #"{"q":"Harbour  Bridge","near":{"lat":-33.85,"lon":151.21}}"#, as: "7") == nil)
        // Not recorded: a continued page, an identity that is not a user id, a refused search.
        let seq = try f.place(1, name: "Quay One", lat: -33.86, lon: 151.21)
        try f.place(2, name: "Quay Two", lat: -33.86, lon: 151.21)
        #expect(try f.caughtUp("catalog", to: seq + 1))
        let first = try #require(f.searchClient).request(type: "search.text", body: Data(#"{"q":"quay","limit":1}"#.utf8), auth: Auth(userId: "9", role: "user"),
                                                          timeoutMilliseconds: 5_000).body(SearchPage.self)
        let cursor = try #require(first.nextCursor)
        #expect(try Self.text(f, #"{"q":"quay","limit":1,"cursor":"\#(cursor)"}"#, as: "9") == nil)
        #expect(try Self.text(f, #"{"q":"quay"}"#, as: "alice") == nil)
        #expect(try Self.text(f, #"{"q":"quay"}"#, as: "0") == nil)
        #expect(try Self.text(f, #"{"q":"!!!"}"#, as: "7") == "invalid_argument q")
        #expect(try Self.text(f, #"{"q":"museum"}"#, as: "8") == nil)

        let events = try Self.waitForEvents(f, 3)
        #expect(events.map(\.userId) == [7, 9, 8])
        #expect(events.map(\.q) == ["Harbour  Bridge", "quay", "museum"])
        #expect(events.first?.near == SearchPerformed.Point(lat: -33.85, lon: 151.21) && events.last?.near == nil)
        for event in events { #expect(event.at.wholeMatch(of: /\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z/) != nil, "\(event.at)") }

        // Live, on the PUB socket, as favorites hears it.
        var heard: [String] = []
        for _ in 0..<100 where heard.count < 3 {
            if let frames = try sub.receive(dontWait: true) {
                if String(decoding: frames[0], as: UTF8.self) == SearchEvents.performed {
                    heard.append(try ReceivedEvent(envelope: frames[1]).body(SearchPerformed.self).q)
                }
            } else {
                usleep(20_000)
            }
        }
        #expect(heard == ["Harbour  Bridge", "quay", "museum"])

    }

    @Test func aQueryIsBoundedInBytesAsWellAsCharacters() throws {
        let f = try SearchFixture()
        // One character of 801 bytes: a letter and 400 combining accents.
        let bomb = "e" + String(repeating: "\u{0301}", count: 400)
        #expect(bomb.count == 1 && bomb.utf8.count == 801)
        #expect(try Self.text(f, #"{"q":"\#(bomb)"}"#, as: "7") == "invalid_argument q")
        let fits = "e" + String(repeating: "\u{0301}", count: 399)
        #expect(try Self.text(f, #"{"q":"\#(fits)"}"#, as: "7") == nil, "799 bytes")
        #expect(try Self.text(f, #"{"q":"caf\#(String(repeating: "é", count: 199))"}"#, as: "7") == "invalid_argument q", "202 characters")
        #expect(try Self.text(f, #"{"q":"\#(String(repeating: "é", count: 200))"}"#, as: "7") == nil, "200 characters, 400 bytes")
        #expect(try Self.waitForEvents(f, 2).map(\.q.utf8.count) == [799, 400])
    }

    @Test func aStopAppendsEverySearchHandedOver() throws {
        let f = try SearchFixture()
        let client = try #require(f.searchClient)
        // Many at once, so the writer is still busy when the stop comes.
        let pending = (0..<300).map { i in
            client.start(type: "search.text", body: Data(#"{"q":"walk \#(i)"}"#.utf8), auth: Auth(userId: "\(i % 7 + 1)", role: "user"),
                         timeoutMilliseconds: 10_000)
        }
        for reply in pending { _ = try reply.wait() }
        f.stopSearch()
        let db = try Database(path: f.folder + "/search.sqlite", readOnly: true)
        #expect(try db.scalarInt("SELECT count(*) FROM outbox WHERE type = ?", SearchEvents.performed) == 300)
        // Consecutive seqs, one per search, in one outbox.
        #expect(try db.scalarInt("SELECT max(seq) - min(seq) + 1 FROM outbox") == 300)
    }

    @Test func aDeletedUsersSearchesAreRedactedAndNoLongerRecorded() throws {
        let f = try SearchFixture()
        try Self.text(f, #"{"q":"my hotel"}"#, as: "7")
        try Self.text(f, #"{"q":"museum"}"#, as: "8")
        #expect(try Self.waitForEvents(f, 2).count == 2)
        let seq = try f.socialClient.call("fake.emit", FakeEmit(type: "social.user.deleted", key: "u7", body: #"{"user_id":7}"#, delete: true), as: Int64.self)
        #expect(try f.caughtUp("social", to: seq))
        try Self.text(f, #"{"q":"signed in before the deletion"}"#, as: "7")
        try Self.text(f, #"{"q":"gallery"}"#, as: "8")
        let client = try #require(f.searchClient)
        var types: [String] = []
        for _ in 0..<100 {
            let reply = try client.request(type: "sys.replay", body: Data(#"{"after":0}"#.utf8), timeoutMilliseconds: 5_000)
            types = try reply.attachments.map { try ReceivedEvent(envelope: $0).header.type }
            if types.count >= 3 { break }
            usleep(50_000)
        }
        usleep(300_000)
        let reply = try client.request(type: "sys.replay", body: Data(#"{"after":0}"#.utf8), timeoutMilliseconds: 5_000)
        let events = try reply.attachments.map { try ReceivedEvent(envelope: $0) }
        // The seqs stay (no gap for a follower); the deleted user's row says nothing of them.
        #expect(events.map(\.header.seq) == [1, 2, 3])
        #expect(events.map(\.header.type) == [SearchEvents.redacted, SearchEvents.performed, SearchEvents.performed])
        #expect(events[0].bodyBytes.map { String(decoding: $0, as: UTF8.self) } == "{}")
        #expect(try events.dropFirst().map { try $0.body(SearchPerformed.self).q } == ["museum", "gallery"])
        #expect(try rowsNaming(7, texts: ["my hotel", "deletion"], userColumns: ["user_id"], path: f.folder + "/search.sqlite") == [])
    }

    @Test func theSnapshotIsWhatTheOutboxStillHolds() throws {
        let f = try SearchFixture()
        for q in ["one", "two", "three"] { try Self.text(f, #"{"q":"\#(q)"}"#, as: "3") }
        #expect(try Self.waitForEvents(f, 3).count == 3)
        let client = try #require(f.searchClient)
        var after: String?
        var seen: [String] = []
        repeat {
            let body = after.map { #"{"after":"\#($0)","limit":2}"# } ?? #"{"limit":2}"#
            let reply = try client.request(type: "sys.snapshot", body: Data(body.utf8), timeoutMilliseconds: 5_000)
            let page = try reply.body(SnapshotReply.self)
            #expect(page.seq == 3)
            seen += try reply.attachments.map { try ReceivedEvent(envelope: $0).body(SearchPerformed.self).q }
            after = page.next
        } while after != nil
        #expect(seen == ["one", "two", "three"])
        do {
            _ = try client.request(type: "sys.snapshot", body: Data(#"{"after":"x"}"#.utf8), timeoutMilliseconds: 5_000)
            Issue.record("a bad key was taken")
        } catch {
            #expect(error.code == .invalidArgument && error.field == "after")
        }
    }

    /// Erasing a user's recorded searches reads that user's outbox rows through an index, not
    /// the whole outbox inside the applying transaction.
    @Test func erasingSearchesReadsTheIndexNotTheOutbox() throws {
        let f = try SearchFixture()
        let plan = try outboxRedactionPlan(types: 1, path: f.folder + "/search.sqlite")
        #expect(plan.contains { $0.contains("USING INDEX outbox_by_user") }, "\(plan)")
        #expect(!plan.contains { $0 == "SCAN outbox" }, "\(plan)")
    }
}
