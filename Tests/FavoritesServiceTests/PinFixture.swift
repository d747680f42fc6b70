import Bus
import Contracts
import FavoritesService
import Foundation
import ServiceCore
import ServiceKit
import Storage
import TestSupport

let pinQuiet = Logger(component: "pins-test", level: .error) { _ in }

/// 2026-06-01T00:00:00Z in milliseconds: where the pin fixture's clock starts.
let pinEpochMs: Int64 = 1_780_272_000_000

/// What `sys.stats` says of the subscriptions: how far each source has been applied.
struct PinSubscriptions: Decodable {
    struct Status: Decodable {
        var source: String
        var seq: Int64
    }
    var subscriptions: [Status]?
}

/// A pin as the tests read a reply.
struct PinReply: Decodable, Equatable {
    struct Place: Decodable, Equatable {
        var id: Int64
        var name: String
        var address: String?
        var distanceM: Double

        enum CodingKeys: String, CodingKey {
            case id, name, address
            case distanceM = "distance_m"
        }
    }

    var id: Int64
    var lat: Double
    var lon: Double
    var title: String?
    var note: String?
    var createdAt: String
    var updatedAt: String
    var place: Place?
    var distanceM: Double?

    enum CodingKeys: String, CodingKey {
        case id, lat, lon, title, note, place
        case createdAt = "created_at"
        case updatedAt = "updated_at"
        case distanceM = "distance_m"
    }
}

/// A page of `pins.list` as the tests read it.
struct PinPageReply: Decodable {
    var pins: [PinReply]
    var nextCursor: String?

    enum CodingKeys: String, CodingKey {
        case pins
        case nextCursor = "next_cursor"
    }
}

/// The favorites service running in this process on loopback ports, with fake catalog and
/// social publishers, a hand-moved clock (milliseconds) and a client.
final class PinFixture {
    let folder = TemporaryFolder("pins")
    let context: ZMQContext
    let clock = Locked(pinEpochMs)
    let catalog: ServiceRuntime<WorkerState>
    let social: ServiceRuntime<WorkerState>
    let favorites: ServiceRuntime<FavoritesStore>
    let catalogClient: RPCClient
    let socialClient: RPCClient
    let client: RPCClient

    init(configure: (inout FavoritesOptions) -> Void = { _ in }) throws {
        context = try ZMQContext()
        let dir = folder.path
        func config(_ name: String) -> ServiceConfig {
            var c = ServiceConfig(service: name)
            c.dataDirectory = dir
            c.heartbeatMilliseconds = 50
            return c
        }
        catalog = try ServiceRuntime(definition: fakePublisher(name: "catalog"), config: config("catalog"), context: context, logger: pinQuiet)
        social = try ServiceRuntime(definition: fakePublisher(name: "social"), config: config("social"), context: context, logger: pinQuiet)
        catalogClient = try RPCClient(context: context, endpoints: catalog.endpoints.rpc, logger: pinQuiet)
        socialClient = try RPCClient(context: context, endpoints: social.endpoints.rpc, logger: pinQuiet)
        var c = config("favorites")
        c.peers = ["catalog": PeerEndpoints(rpc: catalog.endpoints.rpc, publish: catalog.endpoints.publish),
                   "social": PeerEndpoints(rpc: social.endpoints.rpc, publish: social.endpoints.publish)]
        var options = FavoritesOptions()
        let clock = self.clock
        options.clock = { clock.value }
        configure(&options)
        favorites = try ServiceRuntime(definition: FavoritesService.definition(options: options), config: c, context: context, logger: pinQuiet)
        client = try RPCClient(context: context, endpoints: favorites.endpoints.rpc, logger: pinQuiet)
    }

    deinit {
        client.close()
        catalogClient.close()
        socialClient.close()
        favorites.stop()
        catalog.stop()
        social.stop()
    }

    /// Moves the clock by `ms` milliseconds.
    func advance(_ ms: Int64) { clock.withLock { $0 += ms } }

    /// Sends a raw JSON body as `user` (nil: no identity) and returns the reply body's JSON.
    @discardableResult
    func call(_ type: String, _ json: String = "{}", as user: Int64?, origin: String? = nil) throws(ServiceError) -> Data {
        try client.request(type: type, body: Data(json.utf8), auth: user.map { Auth(userId: String($0), role: "user", origin: origin) },
                           timeoutMilliseconds: 5_000).bodyJSON
    }

    /// The error `call` throws, or nil when it succeeds.
    func error(_ type: String, _ json: String = "{}", as user: Int64?) -> ServiceError? {
        do {
            try call(type, json, as: user)
            return nil
        } catch {
            return error
        }
    }

    /// Adds a pin as `user` and returns it.
    @discardableResult
    func add(_ json: String, as user: Int64) throws -> PinReply {
        try JSONCoding.decoder.decode(PinReply.self, from: try call("pins.add", json, as: user))
    }

    /// A page of `pins.list` as `user`.
    func list(_ json: String = "{}", as user: Int64) throws -> PinPageReply {
        try JSONCoding.decoder.decode(PinPageReply.self, from: try call("pins.list", json, as: user))
    }

    /// Every pin of a listing, page after page (at most 100 pages), and how many pages it took.
    func listAll(_ members: String = "", as user: Int64) throws -> (pins: [PinReply], pages: Int) {
        var pins: [PinReply] = [], cursor: String?, pages = 0
        for _ in 0..<100 {
            let cursorMember = cursor.map { #""cursor":"\#($0)""# }
            let json = "{" + [members.isEmpty ? nil : members, cursorMember].compactMap { $0 }.joined(separator: ",") + "}"
            let page = try list(json, as: user)
            pins += page.pins
            pages += 1
            guard let next = page.nextCursor else { break }
            cursor = next
        }
        return (pins, pages)
    }

    /// Publishes place `id` from the fake catalog and waits until favorites has applied it.
    func place(_ id: Int64, name: String, lat: Double, lon: Double, category: String = "cafe", address: String? = nil, version: Int64 = 1) throws {
        let addressMember = address.map { #","address":"\#($0)""# } ?? ""
        let body = #"{"id":\#(id),"name":"\#(name)","category":"\#(category)","lat":\#(lat),"lon":\#(lon)\#(addressMember),"version":\#(version),"created_at":"x","updated_at":"x"}"#
        try waitFor("catalog", try catalogClient.call("fake.emit", FakeEmit(type: CatalogEvents.upserted, key: String(format: "%08d", id), body: body), as: Int64.self))
    }

    /// Deletes place `id` in the fake catalog and waits until favorites has applied it.
    func deletePlace(_ id: Int64) throws {
        try waitFor("catalog", try catalogClient.call("fake.emit", FakeEmit(type: CatalogEvents.deleted, key: String(format: "%08d", id), body: #"{"id":\#(id)}"#, delete: true), as: Int64.self))
    }

    /// Publishes `social.user.deleted` for `user` and waits until favorites has applied it.
    func deleteUser(_ user: Int64) throws {
        try waitFor("social", try socialClient.call("fake.emit", FakeEmit(type: SocialEvents.userDeleted, key: "u\(user)", body: #"{"user_id":\#(user)}"#), as: Int64.self))
    }

    struct NotApplied: Error {}

    /// Waits (at most 10 s) until favorites has applied `source`'s events up to `seq`.
    func waitFor(_ source: String, _ seq: Int64) throws {
        for _ in 0..<200 {
            let stats = try client.call("sys.stats", Empty(), as: PinSubscriptions.self)
            if let applied = stats.subscriptions?.first(where: { $0.source == source })?.seq, applied >= seq { return }
            usleep(50_000)
        }
        throw NotApplied()
    }

    /// Favorites' pushes, as a gateway hears them.
    func pushListener() throws -> PushListener { try PushListener(context, endpoints: favorites.endpoints.publish) }
}

/// The code and field of a refusal, or "no error" when the call succeeded.
func pinRefusal(_ error: ServiceError?) -> String {
    guard let error else { return "no error" }
    return "\(error.code.rawValue) \(error.field ?? "-")"
}
