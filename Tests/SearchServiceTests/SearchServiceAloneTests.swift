import Contracts
import Bus
import Foundation
import SearchService
import ServiceCore
import ServiceKit
import Storage
import Testing
import TestSupport

let quiet = Logger(component: "search-test", level: .error)

/// The search service with fake catalog, social and favorites publishers, all in this process over loopback.
final class SearchFixture {
    let scratch = TemporaryFolder("searchalone")
    var folder: String { scratch.path }
    let context: ZMQContext
    var catalog: ServiceRuntime<WorkerState>
    let social: ServiceRuntime<WorkerState>
    var favorites: ServiceRuntime<WorkerState>
    var search: ServiceRuntime<SearchStore>?
    var catalogClient: RPCClient
    let socialClient: RPCClient
    var favoritesClient: RPCClient
    var searchClient: RPCClient?
    /// How many favorites publishers were started: each new one has a database (a history) of its own.
    private var favoritesHistories = 0

    init() throws {
        let dir = scratch.path
        context = try ZMQContext()
        func config(_ name: String) -> ServiceConfig {
            var c = ServiceConfig(service: name)
            c.dataDirectory = dir
            c.heartbeatMilliseconds = 50
            return c
        }
        catalog = try ServiceRuntime(definition: fakePublisher(name: "catalog"), config: config("catalog"), context: context, logger: quiet)
        social = try ServiceRuntime(definition: fakePublisher(name: "social"), config: config("social"), context: context, logger: quiet)
        catalogClient = try RPCClient(context: context, endpoints: catalog.endpoints.rpc, logger: quiet)
        socialClient = try RPCClient(context: context, endpoints: social.endpoints.rpc, logger: quiet)
        (favorites, favoritesClient) = try SearchFixture.startFavorites(in: dir + "/favorites-0", context: context)
        try startSearch()
    }

    /// A fake favorites publisher with its database in `folder`.
    private static func startFavorites(in folder: String, context: ZMQContext) throws -> (ServiceRuntime<WorkerState>, RPCClient) {
        var c = ServiceConfig(service: "favorites")
        c.dataDirectory = folder
        c.heartbeatMilliseconds = 50
        let runtime = try ServiceRuntime(definition: fakePublisher(name: "favorites"), config: c, context: context, logger: quiet)
        return (runtime, try RPCClient(context: context, endpoints: runtime.endpoints.rpc, logger: quiet))
    }

    /// Replaces the favorites publisher (search stopped meanwhile) with one whose database is new,
    /// as a restore would: its history is another, and search rebuilds its counts from its snapshot.
    func replaceFavorites() throws {
        favoritesClient.close()
        favorites.stop()
        favoritesHistories += 1
        (favorites, favoritesClient) = try SearchFixture.startFavorites(in: folder + "/favorites-\(favoritesHistories)", context: context)
    }

    /// Replaces the fake catalog (search stopped meanwhile) with one whose database is new, as a
    /// restore would: its history is another, and search rebuilds from its snapshot.
    func replaceCatalog() throws {
        catalogClient.close()
        catalog.stop()
        var c = ServiceConfig(service: "catalog")
        c.dataDirectory = folder + "/catalog-new"
        c.heartbeatMilliseconds = 50
        catalog = try ServiceRuntime(definition: fakePublisher(name: "catalog"), config: c, context: context, logger: quiet)
        catalogClient = try RPCClient(context: context, endpoints: catalog.endpoints.rpc, logger: quiet)
    }

    func startSearch() throws {
        var c = ServiceConfig(service: "search")
        c.dataDirectory = folder
        c.peers = ["catalog": PeerEndpoints(rpc: catalog.endpoints.rpc, publish: catalog.endpoints.publish),
                   "social": PeerEndpoints(rpc: social.endpoints.rpc, publish: social.endpoints.publish),
                   "favorites": PeerEndpoints(rpc: favorites.endpoints.rpc, publish: favorites.endpoints.publish)]
        let runtime = try ServiceRuntime(definition: SearchService.definition(), config: c, context: context, logger: quiet)
        search = runtime
        searchClient = try RPCClient(context: context, endpoints: runtime.endpoints.rpc, logger: quiet)
    }

    func stopSearch() {
        searchClient?.close()
        search?.stop()
        search = nil
    }

    deinit {
        stopSearch()
        catalogClient.close()
        socialClient.close()
        favoritesClient.close()
        catalog.stop()
        social.stop()
        favorites.stop()
    }

    /// Publishes a place's counts as the favorites service does (its snapshot holds the last of each place's).
    @discardableResult
    func counted(_ id: Int, saves: Int, visits: Int) throws -> Int64 {
        let body = #"{"place_id":\#(id),"saves":\#(saves),"visits_30d":\#(visits)}"#
        return try favoritesClient.call("fake.emit", FakeEmit(type: "favorites.place.counted", key: String(format: "%08d", id), body: body), as: Int64.self)
    }

    @discardableResult
    func place(_ id: Int, name: String, lat: Double, lon: Double, category: String = "cafe", popularity: Double = 0) throws -> Int64 {
        let body = #"{"id":\#(id),"name":"\#(name)","category":"\#(category)","lat":\#(lat),"lon":\#(lon),"popularity":\#(popularity),"opening_hours":[],"photos":[],"external_ids":{},"version":1,"created_at":"x","updated_at":"x"}"#
        return try catalogClient.call("fake.emit", FakeEmit(type: "catalog.place.upserted", key: String(format: "%08d", id), body: body), as: Int64.self)
    }

    func deletePlace(_ id: Int) throws {
        _ = try catalogClient.call("fake.emit", FakeEmit(type: "catalog.place.deleted", key: String(format: "%08d", id), body: #"{"id":\#(id)}"#, delete: true), as: Int64.self)
    }

    func nearby(_ json: String) throws -> SearchPage {
        guard let client = searchClient else { throw ServiceError(.unavailable, "search is stopped") }
        return try client.request(type: "search.nearby", body: Data(json.utf8)).body(SearchPage.self)
    }

    /// Polls (bounded: 10 s) until search has applied `source`'s events up to `seq`.
    func caughtUp(_ source: String, to seq: Int64) throws -> Bool {
        for _ in 0..<200 {
            let stats = try searchClient?.call("sys.stats", Empty(), as: SubscriberCheck.self)
            if stats?.subscriptions?.first(where: { $0.source == source })?.seq == seq { return true }
            usleep(50_000)
        }
        return false
    }

    /// Polls (bounded: 10 s) until `condition` holds for the nearby answer.
    func eventually(_ json: String, _ condition: (SearchPage) -> Bool) throws -> Bool {
        try TestSupport.eventually { condition(try nearby(json)) }
    }
}

@Suite(.serialized) struct SearchServiceAloneTests {
    @Test func followsTheCatalogAndSocialEvents() throws {
        let f = try SearchFixture()
        let opera = #"{"near":{"lat":-33.8568,"lon":151.2153},"radius_m":500}"#
        try f.place(1, name: "Opera Bar", lat: -33.8570, lon: 151.2150, category: "bar")
        #expect(try f.eventually(opera) { $0.hits.map(\.name) == ["Opera Bar"] })
        #expect(try f.nearby(opera).hits.first?.distanceM.map { $0 > 0 && $0 < 100 } == true)

        // Moved away: gone from here, found there.
        try f.place(1, name: "Opera Bar", lat: -33.9, lon: 151.0, category: "bar")
        #expect(try f.eventually(opera) { $0.hits.isEmpty })
        #expect(try f.nearby(#"{"near":{"lat":-33.9,"lon":151.0},"radius_m":10}"#).hits.count == 1)

        // Ratings from social.
        _ = try f.socialClient.call("fake.emit", FakeEmit(type: "social.rating.updated", key: "1", body: #"{"place_id":1,"average":4.25,"count":8}"#), as: Int64.self)
        #expect(try f.eventually(#"{"near":{"lat":-33.9,"lon":151.0},"radius_m":10,"min_rating":4}"#) { $0.hits.first?.rating == 4.25 && $0.hits.first?.reviewCount == 8 })

        try f.deletePlace(1)
        #expect(try f.eventually(#"{"near":{"lat":-33.9,"lon":151.0},"radius_m":10}"#) { $0.hits.isEmpty })
    }

    @Test func aSearchThatWasDownCatchesUpOnEveryPlaceOnce() throws {
        let f = try SearchFixture()
        try f.place(1, name: "First", lat: -33.87, lon: 151.21)
        #expect(try f.eventually(#"{"near":{"lat":-33.87,"lon":151.21},"radius_m":10}"#) { $0.hits.count == 1 })
        f.stopSearch()
        for i in 2...1_000 { try f.place(i, name: "P\(i)", lat: -33.87 + Double(i % 40) * 1e-3, lon: 151.21 + Double(i / 40) * 1e-3) }
        try f.startSearch()
        var ids: [Int64] = []
        let area = #"{"near":{"lat":-33.85,"lon":151.22},"radius_m":10000,"limit":50"#
        var caughtUp = false
        for _ in 0..<200 where !caughtUp {
            let stats = try f.searchClient?.call("sys.stats", Empty(), as: SubscriberCheck.self)
            caughtUp = stats?.subscriptions?.first(where: { $0.source == "catalog" })?.seq == 1_000
            if !caughtUp { usleep(50_000) }
        }
        #expect(caughtUp)
        var cursor: String?
        for _ in 0..<100 {
            let page = try f.nearby(area + (cursor.map { #","cursor":"\#($0)"}"# } ?? "}"))
            ids += page.hits.map(\.id)
            guard let next = page.nextCursor else { break }
            cursor = next
        }
        #expect(ids.count == 1_000 && Set(ids).count == 1_000)
    }
}

extension SearchServiceAloneTests {
    @Test func anIndexDeletedWhileStoppedIsRebuiltFromNothing() throws {
        let f = try SearchFixture()
        for i in 1...50 { try f.place(i, name: "P\(i)", lat: -33.87 + Double(i) * 1e-4, lon: 151.21) }
        try f.deletePlace(7)
        #expect(try f.eventually(#"{"near":{"lat":-33.87,"lon":151.21},"radius_m":2000,"limit":50}"#) { $0.hits.count == 49 })
        f.stopSearch()
        for suffix in ["", "-wal", "-shm"] { try? FileManager.default.removeItem(atPath: f.folder + "/search.sqlite" + suffix) }
        try f.startSearch()
        #expect(try f.eventually(#"{"near":{"lat":-33.87,"lon":151.21},"radius_m":2000,"limit":50}"#) { page in
            page.hits.count == 49 && !page.hits.contains { $0.id == 7 }
        })
    }
}

extension SearchServiceAloneTests {
    /// Social publishes session and role events beside ratings on the same stream: search
    /// ignores them, live and replayed, without skipping them as errors.
    @Test func socialEventsOtherThanRatingsAreIgnored() throws {
        let f = try SearchFixture()
        try f.place(1, name: "Opera Bar", lat: -33.8570, lon: 151.2150, category: "bar")
        let here = #"{"near":{"lat":-33.8570,"lon":151.2150},"radius_m":10}"#
        func emit(_ type: String, _ body: String) throws -> Int64 {
            try f.socialClient.call("fake.emit", FakeEmit(type: type, key: "\(type) \(body)", body: body), as: Int64.self)
        }
        func socialStatus() throws -> SubscriberCheck.Status? {
            try f.searchClient?.call("sys.stats", Empty(), as: SubscriberCheck.self).subscriptions?.first { $0.source == "social" }
        }
        func caughtUp(to head: Int64) throws -> Bool {
            for _ in 0..<200 {
                if try socialStatus()?.seq == head { return true }
                usleep(50_000)
            }
            return false
        }
        _ = try emit("social.session.ended", #"{"user_id":7}"#)
        _ = try emit("social.rating.updated", #"{"place_id":1,"average":4.5,"count":2}"#)
        let live = try emit("social.role.changed", #"{"role":"admin","user_id":7}"#)
        #expect(try caughtUp(to: live))
        #expect(try f.eventually(here) { $0.hits.first?.rating == 4.5 })

        // Replayed after a stop, between ratings.
        f.stopSearch()
        _ = try emit("social.role.changed", #"{"role":"user","user_id":7}"#)
        _ = try emit("social.rating.updated", #"{"place_id":1,"average":3,"count":3}"#)
        let replayed = try emit("social.session.ended", #"{"user_id":8}"#)
        try f.startSearch()
        #expect(try caughtUp(to: replayed))
        #expect(try f.eventually(here) { $0.hits.first?.rating == 3 && $0.hits.first?.reviewCount == 3 })
        #expect(try socialStatus()?.skipped == 0)
    }
}

/// The part of `sys.stats` these tests read.
struct SubscriberCheck: Decodable {
    struct Status: Decodable {
        var source: String
        var seq: Int64
        var skipped: Int?
        var snapshots: Int?
    }
    var subscriptions: [Status]?
}

extension SearchServiceAloneTests {
    /// Popularity follows what travellers save: counts from the favorites service reorder
    /// `sort: popularity`, also those that come before their place.
    @Test func favoritesCountsReorderPopularity() throws {
        let f = try SearchFixture()
        let popular = #"{"near":{"lat":-33.86,"lon":151.21},"radius_m":5000,"sort":"popularity"}"#
        try f.place(1, name: "Garden", lat: -33.8642, lon: 151.2166, category: "park", popularity: 90)
        try f.place(2, name: "Museum", lat: -33.8599, lon: 151.2090, category: "museum", popularity: 85)
        #expect(try f.eventually(popular) { $0.hits.map(\.id) == [1, 2] })
        // 85 + 2·ln 121 + ln 41 = 98.3: the museum first; its hit still shows the catalog's 85.
        try f.counted(2, saves: 120, visits: 40)
        #expect(try f.eventually(popular) { $0.hits.map(\.id) == [2, 1] })
        #expect(try f.nearby(popular).hits.map(\.popularity) == [85, 90])
        // Counted, and applied, before the catalog has the place: 80 + 2·ln 501 = 92.4, between the two.
        let head = try f.counted(3, saves: 500, visits: 0)
        #expect(try f.caughtUp("favorites", to: head))
        try f.place(3, name: "Bar", lat: -33.8572, lon: 151.2142, category: "bar", popularity: 80)
        #expect(try f.eventually(popular) { $0.hits.map(\.id) == [2, 3, 1] })
    }

    /// A rebuild from the favorites service's snapshot replaces the counts: those its snapshot
    /// lacks are forgotten, those it has are blended.
    @Test func aRebuildFromTheFavoritesSnapshotReplacesTheCounts() throws {
        let f = try SearchFixture()
        let popular = #"{"near":{"lat":-33.86,"lon":151.21},"radius_m":5000,"sort":"popularity"}"#
        try f.place(1, name: "Garden", lat: -33.8642, lon: 151.2166, category: "park", popularity: 90)
        try f.place(2, name: "Museum", lat: -33.8599, lon: 151.2090, category: "museum", popularity: 85)
        try f.place(3, name: "Bar", lat: -33.8572, lon: 151.2142, category: "bar", popularity: 80)
        try f.counted(3, saves: 500, visits: 100)  // 80 + 12.43 + 4.62 = 97.0
        #expect(try f.eventually(popular) { $0.hits.map(\.id) == [3, 1, 2] })
        f.stopSearch()
        // A new history: the bar's counts are gone, the museum's are new (85 + 2·ln 201 = 95.6).
        try f.replaceFavorites()
        try f.counted(2, saves: 200, visits: 0)
        try f.startSearch()
        #expect(try f.eventually(popular) { $0.hits.map(\.id) == [2, 1, 3] })
        let favorites = try f.searchClient?.call("sys.stats", Empty(), as: SubscriberCheck.self).subscriptions?.first { $0.source == "favorites" }
        #expect((favorites?.snapshots ?? 0) >= 1)
    }
}
