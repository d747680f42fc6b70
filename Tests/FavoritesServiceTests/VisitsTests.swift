import Bus
import Contracts
import FavoritesService
import Foundation
import ServiceCore
import ServiceKit
import Storage
import Testing
import TestSupport

/// `favorites.visited` and `favorites.unvisited`: published for discoverable users only, as
/// social's `social.profile.discoverable` says.
@Suite struct VisitsTests {
    /// Publishes `social.profile.discoverable` from the fake social, and waits until favorites applied it.
    func discoverable(_ f: FavoritesFixture, _ user: Int64, _ on: Bool) throws {
        _ = try f.socialClient.call("fake.emit", FakeEmit(type: SocialEvents.profileDiscoverable, key: "p\(user)",
                                                         body: #"{"user_id":\#(user),"discoverable":\#(on)}"#, delete: !on), as: Int64.self)
        #expect(try f.eventually { try !f.rows("SELECT 1 FROM discoverable WHERE user_id = ?", user).isEmpty == on })
    }

    /// Every visit event favorites published so far, oldest first, as `+user/place` and `-user/place`.
    func published(_ f: FavoritesFixture) throws -> [String] {
        try f.rows("SELECT type, CAST(body AS TEXT) AS body FROM outbox WHERE type IN (?, ?) ORDER BY seq", FavoritesEvents.visited, FavoritesEvents.unvisited)
            .map { row in
                let body = Data(try row.decode("body", as: String.self).utf8)
                if try row.decode("type", as: String.self) == FavoritesEvents.visited {
                    let visit = try JSONDecoder().decode(PlaceVisited.self, from: body)
                    return "+\(visit.userId)/\(visit.placeId)"
                }
                let gone = try JSONDecoder().decode(PlaceUnvisited.self, from: body)
                return "-\(gone.userId)/\(gone.placeId)"
            }
    }

    @Test func aDiscoverableUsersVisitsArePublishedWithThePlacesPoint() throws {
        let f = try FavoritesFixture()
        try f.place(1, lat: -33.8568, lon: 151.2153)
        try f.place(2)
        try discoverable(f, 7, true)
        try f.call("favorites.visited.add", #"{"place_id":1,"at":"2026-05-30T10:00:00Z"}"#, as: 7)
        let body = try f.rows("SELECT CAST(body AS TEXT) AS body FROM outbox WHERE type = ?", FavoritesEvents.visited).first?.decode("body", as: String.self)
        #expect(try JSONDecoder().decode(PlaceVisited.self, from: Data((body ?? "").utf8))
                == PlaceVisited(userId: 7, placeId: 1, lat: -33.8568, lon: 151.2153, at: "2026-05-30T10:00:00.000Z"))
        // Marking again moves the time; a save into `visited` is a visit; every way out is an unvisit.
        try f.call("favorites.visited.add", #"{"place_id":1}"#, as: 7)
        try f.call("favorites.toggle", #"{"place_id":2,"list":"visited"}"#, as: 7)
        try f.call("favorites.toggle", #"{"place_id":2,"list":"visited"}"#, as: 7)
        try f.call("favorites.add", #"{"place_id":2,"list":"visited"}"#, as: 7)
        try f.call("favorites.remove", #"{"place_id":2,"list":"visited"}"#, as: 7)
        try f.call("favorites.remove", #"{"place_id":2,"list":"visited"}"#, as: 7)  // not there: nothing
        // Other lists are not visits.
        try f.call("favorites.toggle", #"{"place_id":2}"#, as: 7)
        try f.call("favorites.add", #"{"place_id":2,"list":"want_to_go"}"#, as: 7)
        #expect(try published(f) == ["+7/1", "+7/1", "+7/2", "-7/2", "+7/2", "-7/2"])

        // A place the catalog moves is published again with its new point; a rename alone is not.
        func upsert(_ name: String, lat: Double, version: Int) throws {
            let json = FavoritesFixture.placeJSON(1, name: name, lat: lat, lon: 151.22, version: version)
            _ = try f.catalogClient.call("fake.emit", FakeEmit(type: CatalogEvents.upserted, key: "00000001", body: json), as: Int64.self)
        }
        try upsert("Moved", lat: -33.86, version: 2)
        #expect(try f.eventually { try published(f).count == 7 })
        let last: String = try f.rows("SELECT CAST(body AS TEXT) AS body FROM outbox WHERE type = ? ORDER BY seq DESC LIMIT 1", FavoritesEvents.visited)
            .first?.decode("body", as: String.self) ?? ""
        let moved = try JSONDecoder().decode(PlaceVisited.self, from: Data(last.utf8))
        #expect(moved.userId == 7 && moved.placeId == 1 && moved.lat == -33.86 && moved.lon == 151.22, "\(last)")
        try upsert("Renamed", lat: -33.86, version: 3)
        try f.place(3)  // a marker: once it is in the copy, the rename before it was applied
        #expect(f.waitForPlace(3))
        #expect(try published(f).count == 7)

        // A place the catalog deletes is unvisited for each discoverable visitor.
        try f.deletePlace(1)
        #expect(f.waitForPlace(1, present: false))
        #expect(try published(f).last == "-7/1")
    }

    @Test func aUserWhoIsNotDiscoverableNeverHasAVisitOnTheBus() throws {
        let f = try FavoritesFixture()
        try f.place(1)
        try f.place(2)
        try f.call("favorites.visited.add", #"{"place_id":1}"#, as: 8)
        try f.call("favorites.toggle", #"{"place_id":2,"list":"visited"}"#, as: 8)
        try f.call("favorites.remove", #"{"place_id":2,"list":"visited"}"#, as: 8)
        // One who was discoverable and stopped: nothing more.
        try discoverable(f, 8, true)
        try discoverable(f, 8, false)
        let before = try published(f)
        try f.call("favorites.visited.add", #"{"place_id":2}"#, as: 8)
        try f.call("favorites.remove", #"{"place_id":1,"list":"visited"}"#, as: 8)
        try f.deletePlace(2)
        #expect(f.waitForPlace(2, present: false))
        #expect(try published(f) == before)
        #expect(!before.contains { $0.hasPrefix("-") })  // stopping publishes nothing either
        // Nor in the snapshot.
        #expect(try snapshotVisits(f).isEmpty)
    }

    @Test func becomingDiscoverablePublishesTheLatestThousandVisitsOnce() throws {
        let f = try FavoritesFixture()
        for id in 1...1_003 { try f.place(Int64(id), publish: false) }
        for id in 1...1_003 {
            try f.call("favorites.visited.add", #"{"place_id":\#(id),"at":"\#(Logger.timestamp(Date(timeIntervalSince1970: 1_780_000_000 + Double(id))))"}"#, as: 9)
        }
        #expect(try published(f).isEmpty)
        try discoverable(f, 9, true)
        #expect(try f.eventually { try published(f).count == 1_000 })
        let sent = try published(f)
        #expect(!sent.contains("+9/1") && !sent.contains("+9/3") && sent.contains("+9/4") && sent.first == "+9/1003")
        // Told again (a replay, a rebuild from social's snapshot), nothing is sent twice.
        try discoverable(f, 9, true)
        usleep(300_000)
        #expect(try published(f).count == 1_000)

        // The snapshot carries the same latest thousand, over pages.
        let snapshot = try snapshotVisits(f)
        #expect(snapshot.count == 1_000 && Set(snapshot) == Set(sent.map { String($0.dropFirst()) }))
    }

    @Test func aRebuildFromSocialsSnapshotForgetsWhoStoppedMeanwhile() throws {
        let f = try FavoritesFixture()
        try f.place(1)
        try discoverable(f, 10, true)
        try discoverable(f, 11, true)
        try f.call("favorites.visited.add", #"{"place_id":1}"#, as: 10)
        #expect(try published(f) == ["+10/1"])
        f.stopFavorites()
        // While favorites is away, 11 stops and the outbox that said so is past replay (a new
        // stream): only the snapshot says who is discoverable now.
        _ = try f.socialClient.call("fake.emit", FakeEmit(type: SocialEvents.profileDiscoverable, key: "p11", body: #"{"user_id":11,"discoverable":false}"#, delete: true),
                                    as: Int64.self)
        let db = try Database(path: f.folder.file("favorites.sqlite"))
        try db.run("UPDATE event_cursor SET epoch = 'another history' WHERE source = 'social'")  // so it must rebuild
        try f.startFavorites()
        #expect(try f.eventually { try f.rows("SELECT user_id FROM discoverable").map { try $0.decode("user_id", as: Int64.self) } == [10] })
        // 10 was discoverable all along: the rebuild sends none of their visits again.
        #expect(try published(f) == ["+10/1"])
    }

    @Test func stoppingOrBeingDeletedRedactsTheVisitsStillInTheOutbox() throws {
        let f = try FavoritesFixture()
        try f.place(1)
        try discoverable(f, 12, true)
        try discoverable(f, 13, true)
        try f.call("favorites.visited.add", #"{"place_id":1}"#, as: 12)
        try f.call("favorites.visited.add", #"{"place_id":1}"#, as: 13)
        try f.call("favorites.remove", #"{"place_id":1,"list":"visited"}"#, as: 13)
        #expect(try published(f) == ["+12/1", "+13/1", "-13/1"])
        try discoverable(f, 13, false)
        #expect(try published(f) == ["+12/1"])
        try f.deleteUser(12)
        #expect(try f.eventually { try published(f).isEmpty })
        // The seqs stay: three redacted rows, bodies empty.
        let redacted = try f.rows("SELECT CAST(body AS TEXT) AS body FROM outbox WHERE type = ?", FavoritesEvents.redacted)
        #expect(try redacted.map { try $0.decode("body", as: String.self) } == ["{}", "{}", "{}"])
    }

    @Test func aSnapshotPageLooksAtNoMoreUsersThanItsLimit() throws {
        let f = try FavoritesFixture()
        try f.place(1, publish: false)
        // 30 discoverable users without a visit, then one with.
        for user in Int64(20)...50 { try discoverable(f, user, true) }
        try f.call("favorites.visited.add", #"{"place_id":1}"#, as: 50)
        var pages = 0
        #expect(try snapshotVisits(f, pages: &pages) == ["50/1"])
        // Pages of 7 look at 7 users each: 31 users need at least 5 pages, not one.
        #expect(pages >= 5, "\(pages) pages")
    }

    /// The `user/place` of every `favorites.visited` in favorites' whole snapshot, a page of 7 at a time.
    func snapshotVisits(_ f: FavoritesFixture) throws -> [String] {
        var pages = 0
        return try snapshotVisits(f, pages: &pages)
    }

    /// `snapshotVisits(_:)`, counting the pages it took in `pages`.
    func snapshotVisits(_ f: FavoritesFixture, pages: inout Int) throws -> [String] {
        guard let client = f.client else { return [] }
        var after: String?
        var seen: [String] = []
        for _ in 0..<1_000 {
            pages += 1
            let body = after.map { #"{"after":"\#($0)","limit":7}"# } ?? #"{"limit":7}"#
            let reply = try client.request(type: "sys.snapshot", body: Data(body.utf8), timeoutMilliseconds: 5_000)
            for event in try reply.attachments.map({ try ReceivedEvent(envelope: $0) }) where event.header.type == FavoritesEvents.visited {
                let visit = try event.body(PlaceVisited.self)
                seen.append("\(visit.userId)/\(visit.placeId)")
            }
            guard let next = (try JSONSerialization.jsonObject(with: reply.bodyJSON) as? [String: Any])?["next"] as? String else { return seen }
            after = next
        }
        return seen
    }

    /// Erasing a user's visit events reads that user's outbox rows through an index, not the
    /// whole outbox inside the applying transaction.
    @Test func erasingVisitsReadsTheIndexNotTheOutbox() throws {
        let f = try FavoritesFixture()
        let plan = try outboxRedactionPlan(types: 2, path: f.folder.file("favorites.sqlite"))
        #expect(plan.contains { $0.contains("USING INDEX outbox_by_user") }, "\(plan)")
        #expect(!plan.contains { $0 == "SCAN outbox" }, "\(plan)")
    }
}
