import Bus
import Contracts
import FavoritesService
import Foundation
import ServiceCore
import ServiceKit
import Storage
import TestSupport

let favoritesQuiet = Logger(component: "favorites-test", level: .error) { _ in }

/// 2026-06-01T00:00:00Z in milliseconds: where the fixture's clock starts.
let favoritesEpochMs: Int64 = 1_780_272_000_000

/// The favorites service with a fake catalog and a fake social, all in this process over
/// loopback, with a hand-moved clock (milliseconds).
final class FavoritesFixture {
    let folder = TemporaryFolder("favorites")
    let context: ZMQContext
    let clock = Locked(favoritesEpochMs)
    let catalog: ServiceRuntime<WorkerState>
    let social: ServiceRuntime<WorkerState>
    let catalogClient: RPCClient
    let socialClient: RPCClient
    /// Two fake search replicas, each publishing its own `search.performed` stream.
    private(set) var searches: [ServiceRuntime<WorkerState>] = []
    private(set) var searchClients: [RPCClient] = []
    /// How many search replicas were replaced by one with a new history (`replaceSearch`).
    private var searchHistories = 0
    private(set) var favorites: ServiceRuntime<FavoritesStore>?
    private(set) var client: RPCClient?
    let options: FavoritesOptions

    /// The counts are flushed only when a test asks (`flush()`), unless `configure` says otherwise.
    init(start: Bool = true, configure: (inout FavoritesOptions) -> Void = { _ in }) throws {
        context = try ZMQContext()
        let path = folder.path
        func config(_ name: String) -> ServiceConfig {
            var c = ServiceConfig(service: name)
            c.dataDirectory = path
            c.heartbeatMilliseconds = 50
            return c
        }
        catalog = try ServiceRuntime(definition: fakePublisher(name: "catalog"), config: config("catalog"), context: context, logger: favoritesQuiet)
        social = try ServiceRuntime(definition: fakePublisher(name: "social"), config: config("social"), context: context, logger: favoritesQuiet)
        catalogClient = try RPCClient(context: context, endpoints: catalog.endpoints.rpc, logger: favoritesQuiet)
        socialClient = try RPCClient(context: context, endpoints: social.endpoints.rpc, logger: favoritesQuiet)
        for i in 1...2 {
            let (search, client) = try Self.startSearch(in: path + "/search-\(i)", context: context)
            searches.append(search)
            searchClients.append(client)
        }
        var options = FavoritesOptions()
        let clock = self.clock
        options.clock = { clock.value }
        options.countsFlushIntervalMs = 3_600_000
        configure(&options)
        self.options = options
        if start { try startFavorites() }
    }

    /// Starts (or restarts) favorites on the same folder; `catalogRPC` puts another server
    /// in the catalog's place for its requests (its events still come from the fake).
    func startFavorites(catalogRPC: [String]? = nil) throws {
        var c = ServiceConfig(service: "favorites")
        c.dataDirectory = folder.path
        c.heartbeatMilliseconds = 50
        c.peers = ["catalog": PeerEndpoints(rpc: catalogRPC ?? catalog.endpoints.rpc, publish: catalog.endpoints.publish),
                   "social": PeerEndpoints(rpc: social.endpoints.rpc, publish: social.endpoints.publish),
                   "search": PeerEndpoints(rpc: searches.flatMap(\.endpoints.rpc), publish: searches.flatMap(\.endpoints.publish))]
        let runtime = try ServiceRuntime(definition: FavoritesService.definition(options: options), config: c, context: context, logger: favoritesQuiet)
        favorites = runtime
        client = try RPCClient(context: context, endpoints: runtime.endpoints.rpc, logger: favoritesQuiet)
    }

    func stopFavorites() {
        client?.close()
        favorites?.stop()
        client = nil
        favorites = nil
    }

    deinit {
        stopFavorites()
        catalogClient.close()
        socialClient.close()
        catalog.stop()
        social.stop()
        searchClients.forEach { $0.close() }
        searches.forEach { $0.stop() }
    }

    /// A fake search replica with its database in `folder`.
    private static func startSearch(in folder: String, context: ZMQContext) throws -> (ServiceRuntime<WorkerState>, RPCClient) {
        var c = ServiceConfig(service: "search")
        c.dataDirectory = folder
        c.heartbeatMilliseconds = 50
        let runtime = try ServiceRuntime(definition: fakePublisher(name: "search"), config: c, context: context, logger: favoritesQuiet)
        return (runtime, try RPCClient(context: context, endpoints: runtime.endpoints.rpc, logger: favoritesQuiet))
    }

    /// Replaces search replica `replica` (0 or 1; favorites stopped meanwhile) with one whose
    /// database is new, as a restore or a lost disk would: its history is another, at new endpoints.
    func replaceSearch(_ replica: Int) throws {
        searchClients[replica].close()
        searches[replica].stop()
        searchHistories += 1
        (searches[replica], searchClients[replica]) = try Self.startSearch(in: folder.path + "/search-new-\(searchHistories)", context: context)
    }

    /// Publishes `search.performed` from search replica `replica`: `user` searched `q` (near a
    /// point) `seconds` after the fixture's start. Its snapshot holds every one, as search's does.
    @discardableResult
    func searched(_ q: String, user: Int64 = 1, near: (lat: Double, lon: Double)? = nil, seconds: Double, replica: Int = 0) throws -> Int64 {
        let at = Logger.timestamp(Date(timeIntervalSince1970: Double(favoritesEpochMs) / 1_000 + seconds))
        let body = try JSONEncoder().encode(SearchPerformed(userId: user, q: q, near: near.map { SearchPerformed.Point(lat: $0.lat, lon: $0.lon) }, at: at))
        return try searchClients[replica].call("fake.emit", FakeEmit(type: SearchEvents.performed, key: UUID().uuidString, body: String(decoding: body, as: UTF8.self)),
                                               as: Int64.self)
    }

    /// The `q`s of user `user`'s `search.recent` (`json` its body), newest first.
    func recent(_ json: String = "{}", as user: Int64 = 1) throws -> [String] {
        (try call("search.recent", json, as: user)["searches"] as? [[String: Any]] ?? []).compactMap { $0["q"] as? String }
    }

    /// Polls until favorites has applied replica `replica`'s stream up to `seq` (at most 5 s).
    func caughtUp(search replica: Int, to seq: Int64) throws -> Bool {
        try eventually {
            let stats = try call("sys.stats", as: nil)
            let following = stats["subscriptions"] as? [[String: Any]] ?? []
            return following.contains { $0["source"] as? String == "search-\(replica + 1)" && ($0["seq"] as? NSNumber)?.int64Value ?? 0 >= seq }
        }
    }

    /// Moves the clock by `ms` milliseconds.
    func advance(_ ms: Int64) { clock.withLock { $0 += ms } }

    /// A catalog place's JSON, as events and `catalog.get` carry it.
    static func placeJSON(_ id: Int64, name: String, lat: Double, lon: Double, version: Int = 1) -> String {
        #"{"id":\#(id),"name":"\#(name)","category":"cafe","address":"\#(id) George St","lat":\#(lat),"lon":\#(lon),"popularity":0,"opening_hours":[],"photos":[],"external_ids":{},"version":\#(version),"created_at":"x","updated_at":"x"}"#
    }

    /// Creates place `id` at the catalog: `catalog.get` knows it, and with `publish` its event goes out.
    func place(_ id: Int64, name: String = "Cafe", lat: Double = -33.86, lon: Double = 151.21, publish: Bool = true) throws {
        let body = Self.placeJSON(id, name: name, lat: lat, lon: lon)
        _ = try catalogClient.call("fake.known", FakeKnown(id: id, body: body), as: Int64.self)
        if publish {
            _ = try catalogClient.call("fake.emit", FakeEmit(type: CatalogEvents.upserted, key: String(format: "%08d", id), body: body), as: Int64.self)
        }
    }

    /// Deletes place `id` at the catalog, with its event.
    func deletePlace(_ id: Int64) throws {
        _ = try catalogClient.call("fake.known", FakeKnown(id: id, body: nil), as: Int64.self)
        _ = try catalogClient.call("fake.emit", FakeEmit(type: CatalogEvents.deleted, key: String(format: "%08d", id), body: #"{"id":\#(id)}"#, delete: true),
                                   as: Int64.self)
    }

    /// Publishes `social.user.deleted` for `user`.
    func deleteUser(_ user: Int64) throws {
        _ = try socialClient.call("fake.emit", FakeEmit(type: SocialEvents.userDeleted, key: "u\(user)", body: #"{"user_id":\#(user)}"#, delete: true),
                                  as: Int64.self)
    }

    /// Sends a raw JSON body as `user` (nil: no identity) and returns the reply body, or throws the error.
    @discardableResult
    func call(_ type: String, _ json: String = "{}", as user: Int64? = 1, origin: String? = nil) throws(ServiceError) -> [String: Any] {
        guard let client else { throw ServiceError(.unavailable, "favorites is stopped") }
        let reply = try client.request(type: type, body: Data(json.utf8), auth: user.map { Auth(userId: String($0), role: "user", origin: origin) },
                                       timeoutMilliseconds: 5_000)
        return (try? JSONSerialization.jsonObject(with: reply.bodyJSON)) as? [String: Any] ?? [:]
    }

    /// The error `call` throws, or nil when it succeeds.
    func error(_ type: String, _ json: String = "{}", as user: Int64? = 1) -> ServiceError? {
        do {
            try call(type, json, as: user)
            return nil
        } catch {
            return error
        }
    }

    /// Runs `query` on favorites' own SQLite file (read-only), as the test's eyes.
    func rows(_ query: String, _ args: (any SQLBindable)?...) throws -> [Row] {
        let db = try Database(path: folder.file("favorites.sqlite"), readOnly: true)
        return try db.query(query, args)
    }

    /// Whether favorites' copy holds place `id`, polled until `expected` (at most 5 s).
    @discardableResult
    func waitForPlace(_ id: Int64, present expected: Bool = true) -> Bool {
        for _ in 0..<100 {
            if let found = try? rows("SELECT 1 FROM places WHERE id = ?", id), !found.isEmpty == expected { return true }
            usleep(50_000)
        }
        return false
    }

    /// Polls `condition` (at most 5 s).
    func eventually(_ condition: () throws -> Bool) rethrows -> Bool {
        try TestSupport.eventually(seconds: 5, condition)
    }

    /// Recounts and publishes what is due now (the periodic request, sent by hand).
    @discardableResult
    func flush() throws -> [String: Any] { try call("favorites.counts.flush", as: nil) }

    /// Every `favorites.place.counted` favorites published so far, oldest first.
    func counted(_ place: Int64? = nil) throws -> [PlaceCounted] {
        try rows("SELECT CAST(body AS TEXT) AS body FROM outbox WHERE type = ? ORDER BY seq", FavoritesEvents.counted).map { row in
            try JSONDecoder().decode(PlaceCounted.self, from: Data(try row.decode("body", as: String.self).utf8))
        }.filter { place == nil || $0.placeId == place }
    }
}

/// The items of a `favorites.list` reply.
func listedItems(_ reply: [String: Any]) -> [[String: Any]] { reply["items"] as? [[String: Any]] ?? [] }

/// The place ids of a `favorites.list` reply, in order.
func listedPlaceIds(_ reply: [String: Any]) -> [Int64] {
    listedItems(reply).compactMap { (($0["place"] as? [String: Any])?["id"] as? NSNumber)?.int64Value }
}

/// `code field` of a refusal, or "no error" when the call succeeded.
func refusal(_ error: ServiceError?) -> String {
    guard let error else { return "no error" }
    return "\(error.code.rawValue) \(error.field ?? "-")"
}

/// An integer member of a reply.
func intMember(_ reply: [String: Any], _ key: String) -> Int? { (reply[key] as? NSNumber)?.intValue }
