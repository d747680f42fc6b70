import Bus
import Contracts
import FavoritesService
import Foundation
import ServiceCore
import ServiceKit
import Testing
import TestSupport

/// Recent searches: favorites alone, with two fake search replicas publishing `search.performed`.
@Suite struct RecentSearchTests {
    @Test func keepsTheLastFiftyDifferentSearchesNewestFirst() throws {
        let f = try FavoritesFixture()
        var last: Int64 = 0
        for i in 1...60 { last = try f.searched("walk \(i)", seconds: Double(i)) }
        #expect(try f.caughtUp(search: 0, to: last))
        let shown = try f.recent()
        #expect(shown.count == 50)
        #expect(shown.first == "walk 60" && shown.last == "walk 11")
        #expect(try f.rows("SELECT 1 FROM recent_searches WHERE user_id = 1").count == 50, "the older ten are gone from the file too")
        #expect(try f.recent(#"{"limit":3}"#) == ["walk 60", "walk 59", "walk 58"])
        for bad in [0, 51, -1] { #expect(refusal(f.error("search.recent", #"{"limit":\#(bad)}"#)) == "invalid_argument limit") }
        #expect(refusal(f.error("search.recent", as: nil)) == "unauthenticated -")
        #expect(refusal(f.error("search.recent.clear", as: nil)) == "unauthenticated -")
        #expect(try f.recent(as: 2).isEmpty, "another user's searches are not shown")
    }

    @Test func aRepeatMovesToTheTopWithItsLatestSpellingAndPoint() throws {
        let f = try FavoritesFixture()
        try f.searched("Opera House", seconds: 1)
        try f.searched("bondi", seconds: 2)
        // The same after trimming, folding white space and case: one entry, moved to the top.
        let seq = try f.searched("  opera   HOUSE ", near: (-33.85, 151.21), seconds: 3)
        #expect(try f.caughtUp(search: 0, to: seq))
        let reply = try f.call("search.recent")
        let searches = try #require(reply["searches"] as? [[String: Any]])
        #expect(searches.compactMap { $0["q"] as? String } == ["opera HOUSE", "bondi"])
        #expect((searches[0]["near"] as? [String: Any])?["lat"] as? Double == -33.85)
        #expect(searches[0]["at"] as? String == "2026-06-01T00:00:03.000Z")
        #expect(searches[1]["near"] == nil)
        // An older search of the same words (a replica that was behind) changes nothing; a
        // newer one on the other replica moves it again.
        let older = try f.searched("Opera house", seconds: 2.5, replica: 1)
        #expect(try f.caughtUp(search: 1, to: older))
        #expect(try f.recent() == ["opera HOUSE", "bondi"])
        let newer = try f.searched("BONDI", seconds: 4, replica: 1)
        #expect(try f.caughtUp(search: 1, to: newer))
        #expect(try f.recent() == ["BONDI", "opera HOUSE"])
        // Newest first across replicas, by when each search was made.
        let between = try f.searched("manly", seconds: 3.5, replica: 0)
        #expect(try f.caughtUp(search: 0, to: between))
        #expect(try f.recent() == ["BONDI", "manly", "opera HOUSE"])
    }

    /// A text that NFC lengthens (क़ U+0958 is decomposed by NFC, and the accent after it kept):
    /// 160 of them are 800 bytes as sent and 1,280 in NFC. It is shown as sent, so it can be
    /// searched again, and a decomposed spelling of a precomposed text is still its duplicate.
    @Test func aSearchIsShownAsSentNeverLengthenedByNormalizing() throws {
        let f = try FavoritesFixture()
        let grows = String(repeating: "\u{0958}\u{0301}", count: 160)
        #expect(grows.utf8.count == 800 && grows.precomposedStringWithCanonicalMapping.utf8.count > 800)
        try f.searched(grows, seconds: 1)
        try f.searched("Caf\u{00E9}", seconds: 2)
        let seq = try f.searched("cafe\u{0301}", seconds: 3)
        #expect(try f.caughtUp(search: 0, to: seq))
        let shown = try f.recent()
        #expect(shown == ["cafe\u{0301}", grows], "\(shown.map { $0.utf8.count })")
        #expect(shown.allSatisfy { $0.utf8.count <= 800 })
    }

    @Test func clearEmptiesAndALateOlderSearchStaysCleared() throws {
        let f = try FavoritesFixture()
        try f.searched("one", seconds: 1)
        let seq = try f.searched("two", seconds: 2)
        try f.searched("mine", user: 2, seconds: 2)
        #expect(try f.caughtUp(search: 0, to: seq + 1))
        f.advance(10_000)  // now 10 s after the start
        #expect(intMember(try f.call("search.recent.clear"), "cleared") == 2)
        #expect(try f.recent().isEmpty)
        #expect(try f.recent(as: 2) == ["mine"], "only the caller's are cleared")
        // Made before the clear, heard after it (the other replica was behind): not brought back.
        let late = try f.searched("three", seconds: 5, replica: 1)
        let after = try f.searched("four", seconds: 11, replica: 1)
        #expect(try f.caughtUp(search: 1, to: max(late, after)))
        #expect(try f.recent() == ["four"])
        #expect(intMember(try f.call("search.recent.clear"), "cleared") == 1)
    }

    @Test func aDeletedUserIsErasedAndLeavesNoRow() throws {
        let f = try FavoritesFixture()
        let seq = try f.searched("secret place", user: 5, seconds: 1)
        try f.searched("kept", user: 6, seconds: 1)
        #expect(try f.caughtUp(search: 0, to: seq + 1))
        #expect(try f.recent(as: 5) == ["secret place"])
        f.advance(5_000)
        try f.call("search.recent.clear", as: 5)
        let again = try f.searched("after the clear", user: 5, seconds: 6)
        #expect(try f.caughtUp(search: 0, to: again))
        try f.deleteUser(5)
        #expect(try f.eventually { try f.rows("SELECT 1 FROM recent_searches WHERE user_id = 5").isEmpty })
        // A search of theirs heard in the window after, from either replica (the other was behind): not stored.
        let late = try f.searched("late", user: 5, seconds: 2, replica: 1)
        let later = try f.searched("later", user: 5, seconds: 99_999, replica: 0)
        #expect(try f.caughtUp(search: 1, to: late) && f.caughtUp(search: 0, to: later))
        // Nothing of the user is kept: neither searches nor the time of their last clear.
        #expect(try rowsNaming(5, texts: ["secret place", "late"], userColumns: ["user_id"],
                               path: f.folder.file("favorites.sqlite")) == [])
        #expect(try f.recent(as: 6) == ["kept"])
    }

    @Test func searchesMadeWhileFavoritesWasDownShowUpOnceItIsBack() throws {
        let f = try FavoritesFixture()
        let before = try f.searched("before", seconds: 1)
        #expect(try f.caughtUp(search: 0, to: before))
        f.stopFavorites()
        var last = [Int64](repeating: 0, count: 2)
        for i in 1...5 {
            last[0] = try f.searched("down \(i) on one", seconds: Double(10 + i), replica: 0)
            last[1] = try f.searched("down \(i) on two", seconds: Double(20 + i), replica: 1)
        }
        try f.startFavorites()
        #expect(try f.caughtUp(search: 0, to: last[0]) && f.caughtUp(search: 1, to: last[1]))
        let shown = try f.recent()
        #expect(shown.count == 11)
        #expect(shown.prefix(2) == ["down 5 on two", "down 4 on two"] && shown.last == "before")
        // Each replica is a source of its own, with its own cursor.
        let cursors = try f.rows("SELECT source, seq FROM event_cursor WHERE source LIKE 'search%' ORDER BY source")
        #expect(try cursors.map { try $0.decode("source", as: String.self) } == ["search-1", "search-2"])
    }

    @Test func aReplicaWithANewHistoryIsFollowedWithoutForgettingAnything() throws {
        let f = try FavoritesFixture()
        let seq = try f.searched("old history", seconds: 1, replica: 0)
        #expect(try f.caughtUp(search: 0, to: seq))
        f.stopFavorites()
        try f.replaceSearch(0)
        // The new replica's outbox starts over: seq 1 again, under another epoch.
        #expect(try f.searched("new history", seconds: 2, replica: 0) == 1)
        try f.startFavorites()
        #expect(try f.eventually { try f.recent() == ["new history", "old history"] })
        // Nothing applied twice: the snapshot's event and its replay are one search.
        #expect(try f.rows("SELECT 1 FROM recent_searches").count == 2)
    }

    @Test func eventsOutOfBoundsAreSkippedAndTheStreamGoesOn() throws {
        let f = try FavoritesFixture()
        func emit(_ body: String) throws -> Int64 {
            try f.searchClients[0].call("fake.emit", FakeEmit(type: SearchEvents.performed, key: UUID().uuidString, body: body), as: Int64.self)
        }
        let at = "2026-06-01T00:00:01.000Z"
        _ = try emit(#"{"user_id":1,"q":"\#(String(repeating: "a", count: 801))","at":"\#(at)"}"#)
        _ = try emit(#"{"user_id":1,"q":"bad time","at":"yesterday"}"#)
        _ = try emit(#"{"user_id":0,"q":"nobody","at":"\#(at)"}"#)
        _ = try emit(#"{"user_id":1,"q":"off the map","near":{"lat":91,"lon":0},"at":"\#(at)"}"#)
        _ = try emit(#"{"user_id":1,"q":"   ","at":"\#(at)"}"#)
        let good = try emit(#"{"user_id":1,"q":"\#(String(repeating: "é", count: 400))","at":"\#(at)"}"#)
        #expect(try f.caughtUp(search: 0, to: good))
        #expect(try f.recent().map(\.utf8.count) == [800])
        let stats = try f.call("sys.stats", as: nil)
        let stream = (stats["subscriptions"] as? [[String: Any]] ?? []).first { $0["source"] as? String == "search-1" }
        #expect(intMember(stream ?? [:], "skipped") == 4, "the blank one is ignored, not skipped")
    }

    @Test func replicasNeedOneEventEndpointEach() throws {
        let f = try FavoritesFixture(start: false)
        var c = ServiceConfig(service: "favorites")
        c.dataDirectory = f.folder.path
        c.peers = ["search": PeerEndpoints(rpc: f.searches.flatMap(\.endpoints.rpc), publish: f.searches[0].endpoints.publish)]
        #expect(throws: ConfigError.self) {
            _ = try ServiceRuntime(definition: FavoritesService.definition(options: f.options), config: c, context: f.context, logger: favoritesQuiet)
        }
        // One replica: the stream keeps the service's name.
        c.peers = ["search": PeerEndpoints(rpc: f.searches[0].endpoints.rpc, publish: f.searches[0].endpoints.publish)]
        let runtime = try ServiceRuntime(definition: FavoritesService.definition(options: f.options), config: c, context: f.context, logger: favoritesQuiet)
        defer { runtime.stop() }
        let client = try RPCClient(context: f.context, endpoints: runtime.endpoints.rpc, logger: favoritesQuiet)
        defer { client.close() }
        let seq = try f.searched("alone", seconds: 1)
        var caught = false
        for _ in 0..<100 where !caught {
            let stats = try client.call("sys.stats", Empty(), as: StatsCheck.self)
            caught = stats.subscriptions?.contains { $0.source == "search" && $0.seq >= seq } == true
            if !caught { usleep(50_000) }
        }
        #expect(caught)
    }
}

/// What a test reads of `sys.stats`.
private struct StatsCheck: Decodable {
    var subscriptions: [SubscriberStatus]?
}
