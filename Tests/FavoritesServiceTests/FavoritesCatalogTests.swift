import Bus
import Contracts
import Foundation
import ServiceKit
import Testing
import TestSupport

/// Favorites and its copy of the catalog: deletions, places it has not heard of yet, a
/// catalog that is down, and a favorites that starts behind.
@Suite struct FavoritesCatalogTests {
    @Test func aCatalogDeleteEmptiesTheListEntry() throws {
        let f = try FavoritesFixture()
        try f.place(1)
        try f.place(2)
        #expect(f.waitForPlace(2))
        try f.call("favorites.add", #"{"place_id":1}"#)
        try f.call("favorites.add", #"{"place_id":2}"#)
        try f.call("favorites.visited.add", #"{"place_id":1}"#)
        try f.deletePlace(1)
        #expect(f.waitForPlace(1, present: false))
        #expect(listedPlaceIds(try f.call("favorites.list")) == [2])
        #expect(listedItems(try f.call("favorites.list", #"{"list":"visited"}"#)).isEmpty)
        #expect((try f.call("favorites.contains", #"{"place_ids":[1]}"#)["saved"] as? [Any])?.isEmpty == true)
        // It cannot come back: the catalog has it no more.
        #expect(refusal(f.error("favorites.add", #"{"place_id":1}"#)) == "not_found place_id")
    }

    @Test func aPlaceWhoseEventHasNotArrivedIsSavedThroughCatalogGet() throws {
        let f = try FavoritesFixture()
        try f.place(7, name: "Brand new", publish: false)
        #expect(try f.rows("SELECT 1 FROM places WHERE id = 7").isEmpty)
        let reply = try f.call("favorites.toggle", #"{"place_id":7}"#)
        #expect(reply["saved"] as? Bool == true)
        let card = listedItems(try f.call("favorites.list")).first?["place"] as? [String: Any]
        #expect(card?["name"] as? String == "Brand new")
        // A place the catalog never had is not_found, for every method that saves.
        #expect(refusal(f.error("favorites.toggle", #"{"place_id":99}"#)) == "not_found place_id")
        #expect(refusal(f.error("favorites.add", #"{"place_id":99}"#)) == "not_found place_id")
        #expect(refusal(f.error("favorites.visited.add", #"{"place_id":99}"#)) == "not_found place_id")
        #expect(refusal(f.error("favorites.add", #"{"place_id":0}"#)) == "invalid_argument place_id")
    }

    @Test func aCatalogThatIsDownIsUnavailableWithinTheDeadline() throws {
        let f = try FavoritesFixture()
        try f.place(1)
        #expect(f.waitForPlace(1))
        f.catalog.stop()
        let started = Date()
        #expect(refusal(f.error("favorites.add", #"{"place_id":5}"#)) == "unavailable -")
        #expect(Date().timeIntervalSince(started) < 3)
        // What favorites already has is saved without the catalog.
        #expect(try f.call("favorites.toggle", #"{"place_id":1}"#)["saved"] as? Bool == true)
    }

    /// Unknown place ids sent in a stream while the catalog stalls hold at most one reader
    /// (of two) for the lookup's second: another user's list still answers at once.
    @Test func lookupsOfAStalledCatalogLeaveAReaderForEveryoneElse() throws {
        let f = try FavoritesFixture(start: false)
        // A catalog that takes each request and answers none within favorites' second.
        var table = HandlerTable<Void>()
        table.onRaw(Methods.Catalog.get.name) { _, _ in
            usleep(1_500_000)
            throw ServiceError(.notFound, "late")
        }
        let stalled = try RPCServer(context: f.context, bind: ["tcp://127.0.0.1:0"], table: table, logger: favoritesQuiet) { _ in () }
        defer { stalled.stop() }
        try f.startFavorites(catalogRPC: stalled.endpoints)
        let endpoints = try #require(f.favorites).endpoints.rpc
        let clients = try (0..<16).map { _ in try RPCClient(context: f.context, endpoints: endpoints, logger: favoritesQuiet) }
        defer { clients.forEach { $0.close() } }
        try f.call("favorites.lists", as: 2)
        usleep(300_000)  // the sockets connect
        // Sixteen clients of user 1 save unknown places, each again as soon as answered, for 2.5 s.
        let codes = Locked<Set<String>>([])
        let group = DispatchGroup()
        let end = Date().addingTimeInterval(2.5)
        for (k, client) in clients.enumerated() {
            DispatchQueue.global().async(group: group) {
                for n in 0..<50 where Date() < end {
                    do {
                        _ = try client.request(type: "favorites.add", body: Data(#"{"place_id":\#(1_000 + 100 * k + n)}"#.utf8),
                                               auth: Auth(userId: "1", role: "user"), timeoutMilliseconds: 5_000)
                    } catch {
                        codes.withLock { _ = $0.insert(refusal(error as? ServiceError)) }
                    }
                }
            }
        }
        usleep(1_200_000)
        let started = Date()
        try f.call("favorites.lists", as: 2)
        let waited = Date().timeIntervalSince(started)
        #expect(group.wait(timeout: .now() + 20) == .success)
        #expect(waited < 0.2, "another user's request waited \(waited) s")
        #expect(codes.value == ["unavailable -"], "\(codes.value)")
    }

    @Test func favoritesStartedBehindTheCatalogCatchesUpByReplay() throws {
        let f = try FavoritesFixture(start: false)
        // FakeKnown to the catalog only through its events (catalog.get would answer not_found).
        for id in Int64(1)...3 {
            try f.place(id)
            _ = try f.catalogClient.call("fake.known", FakeKnown(id: id, body: nil), as: Int64.self)
        }
        try f.startFavorites()
        #expect(f.waitForPlace(3))
        try f.call("favorites.add", #"{"place_id":2}"#)
        // Down while the catalog deletes it: after the restart the deletion arrives.
        f.stopFavorites()
        try f.deletePlace(2)
        try f.startFavorites()
        #expect(f.waitForPlace(2, present: false))
        #expect(listedPlaceIds(try f.call("favorites.list")).isEmpty)
    }
}
