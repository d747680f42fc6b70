import Bus
import Contracts
import FavoritesService
import Foundation
import ServiceCore
import Testing
import TestSupport

/// `favorites.place.counted`: coalesced, recounted when visits leave the 30-day window,
/// republished when a user is erased, and in the snapshot.
@Suite struct FavoritesCountsTests {
    @Test func aBurstOfTogglesIsAHandfulOfEvents() throws {
        let f = try FavoritesFixture { $0.countsFlushIntervalMs = 200 }
        try f.place(1)
        #expect(f.waitForPlace(1))
        let started = Date()
        for _ in 0..<1_000 { try f.call("favorites.toggle", #"{"place_id":1}"#) }
        try f.call("favorites.toggle", #"{"place_id":1}"#)
        let seconds = Date().timeIntervalSince(started)
        #expect(f.eventually { (try? f.counted(1).last) == PlaceCounted(placeId: 1, saves: 1, visits30d: 0) })
        // At most one flush per interval while the toggles ran, and a last one after.
        let events = try f.counted(1).count
        #expect(events >= 1 && events <= Int(seconds / 0.2) + 3, "\(events) events in \(seconds) s")
    }

    @Test func countsAreUsersWithThePlaceSavedOrVisitedInThirtyDays() throws {
        let f = try FavoritesFixture()
        try f.place(1)
        try f.place(2)
        #expect(f.waitForPlace(2))
        try f.call("favorites.add", #"{"place_id":1}"#, as: 1)
        try f.call("favorites.add", #"{"place_id":1}"#, as: 2)
        try f.call("favorites.add", #"{"place_id":1,"list":"want_to_go"}"#, as: 3)
        try f.call("favorites.visited.add", #"{"place_id":1,"at":"2026-05-10T00:00:00Z"}"#, as: 1)
        try f.call("favorites.visited.add", #"{"place_id":1}"#, as: 3)
        try f.call("favorites.visited.add", #"{"place_id":2,"at":"2026-04-01T00:00:00Z"}"#, as: 3)
        #expect(intMember(try f.flush(), "published") == 1)
        #expect(try f.counted() == [PlaceCounted(placeId: 1, saves: 2, visits30d: 2)])
        // Nothing changed: nothing more is published.
        try f.call("favorites.add", #"{"place_id":1}"#, as: 1)
        try f.call("favorites.toggle", #"{"place_id":1}"#, as: 2)
        try f.call("favorites.toggle", #"{"place_id":1}"#, as: 2)
        try f.flush()
        #expect(try f.counted().count == 1)
        // User 1's visit of 10 May leaves the window at 9 June 00:00, 30 days later, with no write at all.
        f.advance(8 * 86_400_000 - 1)
        try f.flush()
        #expect(try f.counted().count == 1)
        f.advance(1)
        try f.flush()
        #expect(try f.counted().last == PlaceCounted(placeId: 1, saves: 2, visits30d: 1))
        // The snapshot holds every place with saves or visits, as last published.
        let page = try countedSnapshot(f)
        #expect(page == [PlaceCounted(placeId: 1, saves: 2, visits30d: 1)])
        // A deleted place is published with nothing, and leaves the snapshot.
        try f.deletePlace(1)
        #expect(f.waitForPlace(1, present: false))
        try f.flush()
        #expect(try f.counted().last == PlaceCounted(placeId: 1, saves: 0, visits30d: 0))
        #expect(try countedSnapshot(f).isEmpty)
    }

    @Test func anErasedUserLeavesNoRowAndTheirPlacesAreRecounted() throws {
        let f = try FavoritesFixture()
        try f.place(1)
        #expect(f.waitForPlace(1))
        try f.call("favorites.add", #"{"place_id":1,"note":"mine"}"#, as: 5)
        try f.call("favorites.visited.add", #"{"place_id":1}"#, as: 5)
        try f.call("favorites.toggle", #"{"place_id":1,"list":"want_to_go","request_id":"a"}"#, as: 5)
        try f.call("favorites.lists.create", #"{"name":"Trip"}"#, as: 5)
        let token = try f.call("favorites.share", #"{"list":"Trip"}"#, as: 5)["token"] as? String ?? ""
        try f.call("favorites.add", #"{"place_id":1}"#, as: 6)
        try f.flush()
        #expect(try f.counted().last == PlaceCounted(placeId: 1, saves: 2, visits30d: 1))
        try f.deleteUser(5)
        #expect(f.eventually { (try? f.rows("SELECT 1 FROM lists WHERE user_id = 5").isEmpty) == true })
        for table in ["lists WHERE user_id = 5", "toggle_requests WHERE user_id = 5", "shares", "items i JOIN lists l ON l.id = i.list_id WHERE l.user_id = 5"] {
            #expect(try f.rows("SELECT 1 FROM \(table)").isEmpty, "\(table)")
        }
        #expect(refusal(f.error("favorites.shared", #"{"token":"\#(token)"}"#, as: nil)) == "not_found token")
        try f.flush()
        #expect(try f.counted().last == PlaceCounted(placeId: 1, saves: 1, visits30d: 0))
        #expect(listedPlaceIds(try f.call("favorites.list", as: 6)) == [1])
    }

    /// A write signed in before the deletion but arriving after `social.user.deleted` (a
    /// gateway's cached token, a request in a queue) is refused, so nothing of the user is
    /// made again, and nothing of the user is kept to refuse them; the refusal ends with its window.
    @Test func aWriteOfAnErasedUserArrivingLateLeavesNoRow() throws {
        let f = try FavoritesFixture { $0.erasedUserWindowMs = 60_000 }
        try f.place(1)
        #expect(f.waitForPlace(1))
        try f.call("favorites.add", #"{"place_id":1}"#, as: 5)
        try f.deleteUser(5)
        #expect(f.eventually { (try? f.rows("SELECT 1 FROM lists WHERE user_id = 5").isEmpty) == true })
        let late: [(String, String)] = [
            ("favorites.add", #"{"place_id":1}"#), ("favorites.toggle", #"{"place_id":1,"list":"want_to_go","request_id":"r"}"#),
            ("favorites.visited.add", #"{"place_id":1}"#), ("favorites.lists.create", #"{"name":"Trip"}"#),
            ("favorites.share", #"{"list":"favorites"}"#), ("pins.add", #"{"lat":-33.86,"lon":151.21}"#),
        ]
        for (type, body) in late {
            #expect(refusal(f.error(type, body, as: 5)).hasPrefix("unauthenticated"), "\(type)")
        }
        for table in ["lists", "toggle_requests", "pins"] {
            #expect(try f.rows("SELECT 1 FROM \(table) WHERE user_id = 5").isEmpty, "\(table)")
        }
        #expect(try rowsNaming(5, texts: [], userColumns: ["user_id"], path: f.folder.file("favorites.sqlite")) == [])
        // Another user writes as before; after the window, so would the id again.
        try f.call("favorites.lists.create", #"{"name":"Trip"}"#, as: 6)
        f.advance(60_001)
        #expect(f.error("favorites.lists.create", #"{"name":"Trip"}"#, as: 5) == nil)
    }
}

/// The counted events of favorites' first `sys.snapshot` page.
func countedSnapshot(_ f: FavoritesFixture) throws -> [PlaceCounted] {
    guard let client = f.client else { return [] }
    let reply = try client.request(type: "sys.snapshot", body: Data("{}".utf8), timeoutMilliseconds: 5_000)
    return try reply.attachments.map { try ReceivedEvent(envelope: $0).body(PlaceCounted.self) }
}
