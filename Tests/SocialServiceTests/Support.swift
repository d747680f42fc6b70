import Bus
import Contracts
import Foundation
import ServiceCore
import ServiceKit
import SocialService
import Storage
import Synchronization
import TestSupport

let quiet = Logger(component: "social-test", level: .error)

/// A clock the tests move by hand; it starts at 2026-06-01T00:00:00Z.
final class TestClock: Sendable {
    private let time = Mutex(Date(timeIntervalSince1970: 1_780_272_000))
    var now: Date { time.withLock { $0 } }
    func advance(_ seconds: TimeInterval) { time.withLock { $0 += seconds } }
}

/// Every log line the service writes, at every level.
final class LogCapture: Sendable {
    private let lines = Mutex<[String]>([])
    var logger: Logger { Logger(component: "social", level: .debug) { line in self.lines.withLock { $0.append(line) } } }
    var text: String { lines.withLock { $0.joined() } }
}

/// The places the fake catalog knows.
let fakePlaces: [Int64: String] = [1: "Sydney Opera House", 2: "Bondi Beach", 3: "Café Sydney & Bar"]

/// Where the fake catalog's places are (Sydney), for `social.people_at`.
let fakePoints: [Int64: (lat: Double, lon: Double)] = [1: (-33.8568, 151.2153), 2: (-33.8908, 151.2743), 3: (-33.8612, 151.2111)]

/// `catalog.get` as the fake catalog reads and answers it.
struct FakePlace: Codable, Sendable {
    var id: Int64
    var name: String?
    var lat: Double?
    var lon: Double?
}

/// A place the fake catalog answers only after `slowPlaceDelay` seconds: a write waiting on it
/// is held between its caller's check and its transaction.
let slowPlace: Int64 = 9
let slowPlaceDelay = 0.5
/// How many lookups of `slowPlace` any fake catalog has begun (a test waits for its own).
let slowLookupsBegun = Atomic<Int>(0)

/// A stand-in catalog: `catalog.get` answers the places of `fakePlaces` (and `slowPlace`, late)
/// and `not_found` for any other id.
func fakeCatalog(context: ZMQContext) throws -> RPCServer<Void> {
    var table = HandlerTable<Void>()
    table.on("catalog.get") { (request: FakePlace, _, _) -> FakePlace in
        if request.id == slowPlace {
            slowLookupsBegun.add(1, ordering: .sequentiallyConsistent)
            Thread.sleep(forTimeInterval: slowPlaceDelay)
            return FakePlace(id: slowPlace, name: "Slow Lookout")
        }
        guard let name = fakePlaces[request.id] else { throw ServiceError(.notFound, "no place with id \(request.id)", field: "id") }
        return FakePlace(id: request.id, name: name, lat: fakePoints[request.id]?.lat, lon: fakePoints[request.id]?.lon)
    }
    return try RPCServer(context: context, bind: ["tcp://127.0.0.1:0"], table: table, logger: quiet) { _ in () }
}

/// A social service running in this process on loopback ports, with a fake catalog, a
/// hand-moved clock, captured logs and a client.
final class SocialFixture {
    static let password = "Tr4vel-Sydney"

    let folder = TemporaryFolder()
    let context: ZMQContext
    let clock: TestClock
    let logs = LogCapture()
    let catalog: RPCServer<Void>
    /// A stand-in favorites (`favorites: true`), whose `fake.emit` publishes its visits.
    let favorites: ServiceRuntime<WorkerState>?
    let favoritesClient: RPCClient?
    let runtime: ServiceRuntime<SocialStore>
    let client: RPCClient
    let databasePath: String

    /// `catalogUp: false` points the service at a catalog that has stopped.
    /// `pageBudget` replaces the most bytes a page of a list takes (`SocialOptions.pageBudgetBytes`).
    /// `favorites: true` has social follow a fake favorites publisher (`visited(_:place:)`).
    init(
        catalogUp: Bool = true, cost: PasswordCost = .minimum, heartbeatMs: Int = 50, pageBudget: Int? = nil, favorites: Bool = false,
        readers: Int = 2
    ) throws {
        context = try ZMQContext()
        catalog = try fakeCatalog(context: context)
        if !catalogUp { catalog.stop() }
        var config = ServiceConfig(service: "social")
        config.dataDirectory = folder.path
        config.heartbeatMilliseconds = heartbeatMs
        config.readers = readers
        config.peers = ["catalog": PeerEndpoints(rpc: catalog.endpoints)]
        if favorites {
            var fake = ServiceConfig(service: "favorites")
            fake.dataDirectory = folder.path + "/favorites"
            fake.heartbeatMilliseconds = heartbeatMs
            let publisher = try ServiceRuntime(definition: fakePublisher(name: "favorites"), config: fake, context: context, logger: quiet)
            self.favorites = publisher
            favoritesClient = try RPCClient(context: context, endpoints: publisher.endpoints.rpc, logger: quiet)
            config.peers["favorites"] = PeerEndpoints(rpc: publisher.endpoints.rpc, publish: publisher.endpoints.publish)
        } else {
            self.favorites = nil
            favoritesClient = nil
        }
        databasePath = config.resolvedDatabasePath
        let clock = TestClock()
        self.clock = clock
        var options = SocialOptions()
        options.passwordCost = cost
        options.clock = { clock.now }
        // The sweep runs when a test sends it, not on its own a minute in.
        options.ratingsSweepIntervalMs = 3_600_000
        if let pageBudget { options.pageBudgetBytes = pageBudget }
        runtime = try ServiceRuntime(definition: SocialService.definition(options: options), config: config, context: context, logger: logs.logger)
        client = try RPCClient(context: context, endpoints: runtime.endpoints.rpc, logger: quiet)
    }

    deinit {
        client.close()
        runtime.stop()
        catalog.stop()
        favoritesClient?.close()
        favorites?.stop()
    }

    /// Publishes `favorites.visited` from the fake favorites: `user` visited `place` at `at`
    /// (at `point`, else the fake catalog's point of the place). The fake's snapshot holds it.
    @discardableResult
    func visited(_ user: Int64, place: Int64, at: String = "2026-05-30T10:00:00.000Z", point: (lat: Double, lon: Double)? = nil) throws -> Int64 {
        let point = point ?? fakePoints[place] ?? (0, 0)
        let body = String(decoding: try JSONCoding.encoder.encode(PlaceVisited(userId: user, placeId: place, lat: point.lat, lon: point.lon, at: at)), as: UTF8.self)
        return try favoritesEmit(FakeEmit(type: FavoritesEvents.visited, key: "\(user)/\(place)", body: body))
    }

    /// Publishes `favorites.unvisited` from the fake favorites.
    @discardableResult
    func unvisited(_ user: Int64, place: Int64) throws -> Int64 {
        try favoritesEmit(FakeEmit(type: FavoritesEvents.unvisited, key: "\(user)/\(place)", body: #"{"user_id":\#(user),"place_id":\#(place)}"#, delete: true))
    }

    private func favoritesEmit(_ emit: FakeEmit) throws -> Int64 {
        guard let favoritesClient else { throw ServiceError(.unavailable, "this fixture has no fake favorites") }
        return try favoritesClient.call("fake.emit", emit, as: Int64.self)
    }

    /// The last seq of `source` that social applied, as `sys.stats` says (0 before any).
    func applied(from source: String) throws -> Int64 {
        let stats = try call("sys.stats")
        let following = stats["subscriptions"] as? [[String: Any]] ?? []
        return following.first { $0["source"] as? String == source }.flatMap { ($0["seq"] as? NSNumber)?.int64Value } ?? 0
    }

    /// Polls `condition` (at most 5 s).
    func eventually(_ condition: () throws -> Bool) rethrows -> Bool {
        try TestSupport.eventually(seconds: 5, condition)
    }

    /// Sends a raw JSON body as `user` (nil: no identity) and returns the reply body, or throws the error.
    @discardableResult
    func call(_ type: String, _ json: String = "{}", as user: Int64? = nil, role: String = "user", client address: String? = nil) throws(ServiceError) -> [String: Any] {
        let reply = try client.request(type: type, body: Data(json.utf8), auth: user.map { Auth(userId: String($0), role: role) },
                                       client: address, timeoutMilliseconds: 5_000)
        return (try? JSONSerialization.jsonObject(with: reply.bodyJSON)) as? [String: Any] ?? [:]
    }

    /// The error `call` throws, or nil when it succeeds.
    func error(_ type: String, _ json: String = "{}", as user: Int64? = nil, client address: String? = nil) -> ServiceError? {
        do {
            try call(type, json, as: user, client: address)
            return nil
        } catch {
            return error
        }
    }

    /// Registers `username` (an admin with `admin.create`) with `SocialFixture.password`; returns the id.
    @discardableResult
    func register(_ username: String, admin: Bool = false) throws -> Int64 {
        let account = Registration(username: username, email: "\(username)@example.com", name: username.capitalized, password: Self.password)
        return try client.call(admin ? "admin.create" : "auth.register", account, as: PublicUser.self).id
    }

    /// Logs in as the gateway would for a client at `address` (nil: a caller on the bus).
    func login(_ username: String, _ password: String = SocialFixture.password, from address: String? = nil) throws(ServiceError) -> LoginReply {
        try client.call("auth.login", Credentials(username: username, password: password), as: LoginReply.self, client: address)
    }

    /// Adds `user`'s review of a place and returns its id.
    @discardableResult
    func review(_ place: Int64, _ rating: Int, by user: Int64, text: String = "") throws -> Int64 {
        Int64(try call("reviews.add", #"{"place_id":\#(place),"rating":\#(rating),"text":\#(try json(text))}"#, as: user)["id"] as? Int ?? 0)
    }

    /// Every event in the outbox, in order.
    func events() throws -> [ReceivedEvent] {
        let replay = try client.request(type: "sys.replay", body: Data(#"{"after":0,"limit":10000}"#.utf8))
        return try replay.attachments.map { try ReceivedEvent(envelope: $0) }
    }

    /// Every `social.rating.updated` event in the outbox, in order.
    func ratingEvents() throws -> [RatingUpdated] {
        try events().filter { $0.header.type == SocialEvents.ratingUpdated }.map { try $0.body(RatingUpdated.self) }
    }
}

/// A string as a JSON literal.
func json(_ text: String) throws -> String { String(decoding: try JSONEncoder().encode(text), as: UTF8.self) }
