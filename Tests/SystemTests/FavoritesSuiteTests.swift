import Bus
import Foundation
import Testing
import TestSupport

/// Issue 13 through the whole suite: the real executables of every service behind a gateway.
@Suite(.serialized) struct FavoritesSuiteTests {
    /// Values of the shipped annotation form that hold anywhere.
    static let formValues = #"{"kind":"hazard","detail":"flooding","severity":"minor"}"#

    /// Registers `username` (password `User-Pass-1`) and signs a new connection in as them.
    static func signedIn(_ suite: SuiteFixture, _ username: String) throws -> (connection: GatewayConnection, id: Int) {
        let c = try GatewayConnection(port: suite.port)
        let registered = c.rpc("auth.register", #"{"username":"\#(username)","email":"\#(username)@example.org","name":"\#(username) marker","password":"User-Pass-1"}"#)
        let login = c.rpc("auth.login", #"{"username":"\#(username)","password":"User-Pass-1"}"#)
        let id = ((json(login.line)["result"] as? [String: Any])?["user"] as? [String: Any])?["id"] as? Int ?? 0
        guard registered.succeeded, login.succeeded, id > 0 else { throw ServiceError(.unauthenticated, "\(username): \(registered) \(login)") }
        return (c, id)
    }

    /// Creates a place as the admin and returns its id.
    static func place(_ admin: GatewayConnection, _ name: String, lat: Double, lon: Double, popularity: Double = 1) -> Int {
        admin.rpc("catalog.create", #"{"name":"\#(name)","category":"attraction","lat":\#(lat),"lon":\#(lon),"popularity":\#(popularity)}"#).field("id", Int.self) ?? 0
    }


    @Test func aSavedPlaceReachesTheOtherDeviceSearchAndLeavesWithTheCatalogsPlace() throws {
        let suite = try SuiteFixture(everything: true)
        let admin = try suite.adminConnection()
        let opera = Self.place(admin, "Opera Bar", lat: -33.8568, lon: 151.2153, popularity: 1)
        let lookout = Self.place(admin, "Harbour Lookout", lat: -33.8570, lon: 151.2150, popularity: 1.5)
        #expect(opera > 0 && lookout > 0)
        let (phone, _) = try Self.signedIn(suite, "alice")
        // Alice's tablet listens for her changes.
        let tablet = try GatewayConnection(port: suite.port, timeoutMilliseconds: 200)
        #expect(tablet.rpc("auth.login", #"{"username":"alice","password":"User-Pass-1"}"#).succeeded)
        #expect(tablet.rpc("subscribe", #"{"topics":["favorites.changed"]}"#).succeeded)

        // Search ranks by popularity: before any save, the Lookout (1.5) comes first.
        let popular = #"{"near":{"lat":-33.8568,"lon":151.2153},"radius_m":1000,"sort":"popularity"}"#
        func first() -> Int? { ((json(phone.rpc("search.nearby", popular).line)["result"] as? [String: Any])?["hits"] as? [[String: Any]])?.first?["id"] as? Int }
        #expect(eventually { first() != nil } && first() == lookout)

        // A heart: in, out, in; a retried tap changes nothing.
        #expect(phone.rpc("favorites.toggle", #"{"place_id":\#(opera)}"#).line.contains(#""saved":true"#))
        #expect(phone.rpc("favorites.toggle", #"{"place_id":\#(opera),"request_id":"tap-2"}"#).line.contains(#""saved":false"#))
        #expect(phone.rpc("favorites.toggle", #"{"place_id":\#(opera),"request_id":"tap-2"}"#).line.contains(#""saved":false"#))
        #expect(phone.rpc("favorites.contains", #"{"place_ids":[\#(opera)]}"#).line.contains(#""saved":[]"#))
        #expect(phone.rpc("favorites.toggle", #"{"place_id":\#(opera)}"#).line.contains(#""count":1,"list":"favorites","saved":true"#))
        // The tablet heard each change, and the phone none of its own.
        var pushes: [String] = []
        for _ in 0..<30 where pushes.count < 3 { if let line = tablet.line() { pushes.append(line) } }
        #expect(pushes.count == 3 && pushes.allSatisfy { $0.contains(#""topic":"favorites.changed""#) }, "\(pushes)")
        #expect(pushes.map { $0.contains(#""change":"saved""#) } == [true, false, true], "\(pushes)")
        #expect(phone.line() == nil)
        let listed = phone.rpc("favorites.list", #"{"near":{"lat":-33.8568,"lon":151.2153},"sort":"distance"}"#)
        #expect(listed.line.contains(#""name":"Opera Bar""#) && listed.line.contains(#""distance_m""#), "\(listed)")

        // A share link reads through the gateway, for anyone and for a signed-in reader: its
        // `token` param is the link's, not a session's.
        let token = phone.rpc("favorites.share", #"{"list":"favorites"}"#).field("token", String.self) ?? ""
        let stranger = try GatewayConnection(port: suite.port)
        for reader in [stranger, phone] {
            let shared = reader.rpc("favorites.shared", #"{"token":"\#(token)"}"#)
            #expect(shared.line.contains(#""name":"Opera Bar""#), "\(shared)")
        }
        #expect(stranger.rpc("favorites.shared", #"{"token":"\#(token)x"}"#).errorCode == "not_found")

        // With the save, Opera Bar (1 + 2 ln 2) passes the Lookout.
        #expect(eventually { first() == opera },
                "\(phone.rpc("search.nearby", popular))")

        // The catalog deletes the place: it leaves the list.
        #expect(admin.rpc("catalog.delete", #"{"id":\#(opera)}"#).succeeded)
        #expect(eventually { phone.rpc("favorites.list").line.contains(#""items":[]"#) }, "\(phone.rpc("favorites.list"))")
    }

    /// Issue 16: a signed-in `search.text` reaches favorites through search's `search.performed`
    /// and shows in `search.recent`, through the gateway, with real executables; an anonymous one
    /// is never recorded.
    @Test func aSignedInTextSearchShowsUpInRecentSearches() throws {
        let suite = try SuiteFixture(everything: true)
        let (traveller, _) = try Self.signedIn(suite, "traveller")
        let anonymous = try GatewayConnection(port: suite.port)
        func recent() -> [String] {
            let result = json(traveller.rpc("search.recent").line)["result"] as? [String: Any]
            return (result?["searches"] as? [[String: Any]] ?? []).compactMap { $0["q"] as? String }
        }
        #expect(anonymous.rpc("search.text", #"{"q":"anonymous words"}"#).succeeded)
        #expect(anonymous.rpc("search.recent").errorCode == "unauthenticated")
        #expect(traveller.rpc("search.text", #"{"q":"Opera House","near":{"lat":-33.85,"lon":151.21}}"#).succeeded)
        #expect(traveller.rpc("search.text", #"{"q":"bondi beach"}"#).succeeded)
        #expect(traveller.rpc("search.text", #"{"q":" opera  house "}"#).succeeded)
        #expect(eventually { recent() == ["opera house", "bondi beach"] }, "\(recent())")
        #expect(traveller.rpc("search.recent", #"{"limit":1}"#).line.contains(#""q":"opera house""#))
        // Favorites answers search.recent, not search (which has no such method).
        #expect(traveller.rpc("search.recent", #"{"limit":51}"#).errorCode == "invalid_argument")
        #expect(traveller.rpc("search.recent.clear").field("cleared", Int.self) == 2)
        #expect(recent().isEmpty)
        // The anonymous search was never recorded, in search's outbox or anywhere.
        #expect(try Self.rowsOfUser(id: 0, markers: ["anonymous words"], in: suite.folder).isEmpty)
    }

    @Test func deletingAnAccountLeavesNoRowOfItInAnyServiceAndEndsItsSessionsEverywhere() throws {
        let suite = try SuiteFixture(everything: true)
        let admin = try suite.adminConnection()
        let opera = Self.place(admin, "Opera Bar", lat: -33.8568, lon: 151.2153)
        let (gone, goneId) = try Self.signedIn(suite, "eraseme")
        let (bob, bobId) = try Self.signedIn(suite, "bob")
        let marker = "Zq7marker"
        // Everything a user leaves behind, in every service.
        var writes: [RPCReply] = [
            gone.rpc("reviews.add", #"{"place_id":\#(opera),"rating":5,"text":"\#(marker) review"}"#),
            gone.rpc("social.follow", #"{"user_id":\#(bobId)}"#),
            bob.rpc("social.follow", #"{"user_id":\#(goneId)}"#),
            gone.rpc("profile.update", #"{"bio":"\#(marker) bio"}"#),
            gone.rpc("notify.settings.set", #"{"radius_m":500}"#),
            gone.rpc("annotations.submit", #"{"lat":-33.8568,"lon":151.2153,"values":\#(Self.formValues),"text":"\#(marker) annotation"}"#),
            gone.rpc("notify.location", #"{"lat":-33.80,"lon":151.2153}"#),
            bob.rpc("notify.location", #"{"lat":-33.8568,"lon":151.2153}"#),
            gone.rpc("favorites.add", #"{"place_id":\#(opera),"note":"\#(marker) note"}"#),
            gone.rpc("favorites.visited.add", #"{"place_id":\#(opera)}"#),
            gone.rpc("favorites.lists.create", #"{"name":"\#(marker) list"}"#),
            gone.rpc("favorites.share", #"{"list":"\#(marker) list"}"#),
            gone.rpc("pins.add", #"{"lat":-33.85,"lon":151.21,"title":"\#(marker) pin"}"#),
            // Recorded by search (its outbox) and by favorites (recent searches).
            gone.rpc("search.text", #"{"q":"\#(marker) search"}"#),
        ]
        #expect(writes.allSatisfy { $0.succeeded }, "\(writes.filter { !$0.succeeded })")
        // Bob's alert names the annotation's author.
        #expect(bob.rpc("notify.inbox").line.contains(marker))
        #expect(try eventually { try !Self.rowsOfUser(id: goneId, markers: [marker], in: suite.folder).isEmpty })
        #expect(eventually { gone.rpc("search.recent").line.contains("\(marker) search") })

        // Another session of the same user, on a second gateway.
        let second = try ChildProcess("tourbus-gateway", folder: suite.folder, arguments: ["--listen", "127.0.0.1:0"] + suite.gatewayArguments)
        defer { second.tearDown() }
        let secondPort = UInt16((second.endpoints["listen"] as? String ?? "").split(separator: ":").last ?? "") ?? 0
        let elsewhere = try GatewayConnection(port: secondPort)
        #expect(elsewhere.rpc("auth.login", #"{"username":"eraseme","password":"User-Pass-1"}"#).succeeded)
        #expect(elsewhere.rpc("favorites.lists").succeeded)

        #expect(gone.rpc("auth.delete", #"{"password":"wrong-Pass-1"}"#).errorCode == "permission_denied")
        writes = [gone.rpc("auth.delete", #"{"password":"User-Pass-1"}"#)]
        #expect(writes.allSatisfy { $0.succeeded }, "\(writes)")
        #expect(gone.rpc("favorites.lists").errorCode == "unauthenticated")
        #expect(eventually { elsewhere.rpc("favorites.lists").errorCode == "unauthenticated" })

        // Every service erases on the event: a query of every table of every database finds nothing.
        var left: [String] = []
        #expect(try eventually {
            left = try Self.rowsOfUser(id: goneId, markers: [marker, "eraseme"], in: suite.folder)
            return left.isEmpty
        }, "\(left)")
        // The account is gone (a failed login is recorded under the name it tried, so only now).
        #expect(try GatewayConnection(port: suite.port).rpc("auth.login", #"{"username":"eraseme","password":"User-Pass-1"}"#).errorCode == "unauthenticated")
        // Bob's own data is still there.
        #expect(bob.rpc("notify.settings.get").succeeded && bob.rpc("social.following").succeeded)
        #expect(try Self.rowsOfUser(id: bobId, markers: ["bob@example.org"], in: suite.folder).count > 0)
    }

    /// Every row of every table of every service's database that holds the user: their id in a
    /// column that names a user, a JSON `"user_id":id`, or their username, e-mail or the marker
    /// text they wrote anywhere (`rowsNaming`), by file. The outbox rows of `social.user.deleted`
    /// itself are the one exception.
    static func rowsOfUser(id: Int, markers: [String], in folder: String) throws -> [String] {
        let files = try FileManager.default.contentsOfDirectory(atPath: folder).filter { $0.hasSuffix(".sqlite") }.sorted()
        return try files.flatMap { file in
            try rowsNaming(Int64(id), texts: markers, userColumns: ["user_id", "follower_id", "followee_id", "users.id"],
                           except: ["outbox": "type = 'social.user.deleted'"], path: folder + "/" + file).map { "\(file) \($0)" }
        }
    }
}
