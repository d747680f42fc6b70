import Bus
import Foundation
import Testing
import TestSupport

/// People at a place (issue 17) through the whole suite: social learns favorites' visits of
/// discoverable users from its events, and favorites learns who is discoverable from social's.
@Suite(.serialized) struct PeopleSuiteTests {
    /// The user ids `social.people_at` (`params`) lists on `c`, or nil on an error.
    static func people(_ c: GatewayConnection, _ params: String) -> [Int]? {
        ((json(c.rpc("social.people_at", params).line)["result"] as? [String: Any])?["people"] as? [[String: Any]])?
            .compactMap { ($0["user"] as? [String: Any])?["id"] as? Int }
    }

    @Test func aVisitReachesPeopleAtThroughFavoritesAndSocialOnlyForTheDiscoverable() throws {
        let suite = try SuiteFixture(everything: true)
        let admin = try suite.adminConnection()
        let opera = FavoritesSuiteTests.place(admin, "Opera Bar", lat: -33.8568, lon: 151.2153)
        let (ann, annId) = try FavoritesSuiteTests.signedIn(suite, "ann")
        let (shy, _) = try FavoritesSuiteTests.signedIn(suite, "shy")
        let (viewer, _) = try FavoritesSuiteTests.signedIn(suite, "viewer")
        // Ann visits before she opts in; shy visits and never does.
        #expect(ann.rpc("favorites.visited.add", #"{"place_id":\#(opera)}"#).succeeded)
        #expect(shy.rpc("favorites.visited.add", #"{"place_id":\#(opera)}"#).succeeded)
        #expect(Self.people(viewer, #"{"place_id":\#(opera)}"#) == [])
        // Opting in publishes her earlier visit: favorites hears social, social hears favorites.
        #expect(ann.rpc("profile.update", #"{"discoverable":true}"#).line.contains(#""discoverable":true"#))
        #expect(eventually { Self.people(viewer, #"{"place_id":\#(opera)}"#) == [annId] })
        #expect(Self.people(viewer, #"{"near":{"lat":-33.8568,"lon":151.2153},"radius_m":500}"#) == [annId])
        // Unmarking it takes her out again; anonymous callers are refused by the gateway.
        #expect(ann.rpc("favorites.remove", #"{"place_id":\#(opera),"list":"visited"}"#).succeeded)
        #expect(eventually { Self.people(viewer, #"{"place_id":\#(opera)}"#) == [] })
        let stranger = try GatewayConnection(port: suite.port)
        #expect(stranger.rpc("social.people_at", #"{"place_id":\#(opera)}"#).errorCode == "unauthenticated")
    }
}
