import Bus
import Foundation
import Testing
import TestSupport

/// Walking a tour through the gateway with the real executables: a signed-in user is located
/// along a tour, an anonymous client is refused, and deleting the account at social erases the
/// user's walk in the catalog (which follows social's events).
@Suite(.serialized) struct WalkSuiteTests {
    @Test func aSignedInUserWalksATourAndDeletingTheAccountErasesTheWalk() throws {
        let suite = try SuiteFixture()
        // The fixture starts the catalog before social; start it again following social.
        suite.stopCatalog()
        try suite.startCatalog(followingSocial: true)
        let admin = try suite.adminConnection()
        let stops = [(-33.8614, 151.2107), (-33.8599, 151.2090)]
        let ids = stops.enumerated().map { i, stop in
            admin.rpc("catalog.create", #"{"name":"Stop \#(i)","category":"attraction","lat":\#(stop.0),"lon":\#(stop.1)}"#).field("id", Int.self) ?? 0
        }
        let tour = admin.rpc("tours.create", #"{"name":"Circular Quay","stops":\#(ids)}"#).field("id", Int.self) ?? 0
        #expect(tour > 0 && !ids.contains(0))

        let anonymous = try GatewayConnection(port: suite.port)
        let refused = anonymous.rpc("tours.locate", #"{"tour_id":\#(tour),"lat":-33.8614,"lon":151.2107}"#)
        #expect(!refused.succeeded && refused.errorCode == "unauthenticated", "\(refused.line)")
        #expect(anonymous.rpc("tours.progress", #"{"tour_id":\#(tour)}"#).errorCode == "unauthenticated")

        let (walker, userId) = try FavoritesSuiteTests.signedIn(suite, "walker")
        let located = walker.rpc("tours.locate", #"{"tour_id":\#(tour),"lat":-33.8614,"lon":151.2107,"course_deg":315}"#)
        #expect(located.succeeded, "\(located.line)")
        struct Stop: Decodable { var id: Int }
        #expect(located.field("arrived", [Int].self) == [ids[0]] && located.field("heading_deg", Double.self) == 315)
        #expect(located.field("next_stop", Stop.self)?.id == ids[1])
        #expect(walker.rpc("tours.progress", #"{"tour_id":\#(tour)}"#).field("visited", [Int].self) == [ids[0]])

        // The account deleted at social: the catalog erases the walk (asked on the bus as that user).
        #expect(walker.rpc("auth.delete", #"{"password":"User-Pass-1"}"#).succeeded)
        let context = try ZMQContext()
        let catalog = try RPCClient(context: context, endpoints: [suite.catalogEndpoint], logger: Logger(component: "test", level: .error))
        defer { catalog.close() }
        let erased = eventually {
            let reply = try? catalog.request(type: "tours.progress", body: Data(#"{"tour_id":\#(tour)}"#.utf8),
                                             auth: Auth(userId: String(userId), role: "user"), timeoutMilliseconds: 2_000)
            struct Progress: Decodable { var visited_count: Int }
            return reply.flatMap { try? JSONDecoder().decode(Progress.self, from: $0.bodyJSON) }?.visited_count == 0
        }
        #expect(erased)
    }
}
