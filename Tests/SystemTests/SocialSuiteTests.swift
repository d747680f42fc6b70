import Bus
import Foundation
import Testing
import TestSupport

/// Accounts, reviews and ratings through the gateway, with the real executables.
@Suite struct SocialSuiteTests {
    /// A review or a search hit, as much of it as these tests read.
    struct Rated: Decodable {
        var id: Int?
        var rating: Double?
        var reviewCount: Int?
        enum CodingKeys: String, CodingKey { case id, rating, reviewCount = "review_count" }
    }

    func errorCode(_ c: GatewayConnection, _ method: String, _ params: String = "{}") -> String? {
        c.rpc(method, params).errorCode
    }

    /// A new user, registered and signed in on a connection of their own; returns it and the token.
    func member(_ suite: SuiteFixture, _ name: String) throws -> (GatewayConnection, String) {
        let c = try GatewayConnection(port: suite.port)
        _ = c.rpc("auth.register", #"{"username":"\#(name)","email":"\#(name)@example.org","name":"\#(name.capitalized)","password":"\#(name.capitalized)-Pass-1"}"#)
        let login = c.rpc("auth.login", #"{"username":"\#(name)","password":"\#(name.capitalized)-Pass-1"}"#)
        return (c, login.field("token", String.self) ?? "")
    }

    @Test func reviewsReachSearchAndEndWithTheSession() throws {
        let suite = try SuiteFixture(withSearch: true)
        let admin = try suite.adminConnection()
        for (name, lon) in [("Harbour Lookout", 151.21), ("Harbour Kiosk", 151.211), ("Harbour Steps", 151.212)] {
            #expect(admin.rpc("catalog.create", #"{"name":"\#(name)","category":"attraction","lat":-33.86,"lon":\#(lon)}"#).succeeded)
        }
        let (alice, aliceToken) = try member(suite, "alice")
        let (bob, _) = try member(suite, "bob")
        #expect(alice.rpc("reviews.add", #"{"place_id":1,"rating":5,"text":"Best view"}"#).succeeded)
        #expect(alice.rpc("reviews.add", #"{"place_id":2,"rating":2,"text":"Closed early"}"#).succeeded)
        #expect(bob.rpc("reviews.add", #"{"place_id":1,"rating":3,"text":"Crowded"}"#).succeeded)
        #expect(bob.rpc("reviews.add", #"{"place_id":3,"rating":4,"text":"Steep"}"#).succeeded)

        // Place 1's reviews, sorted each way, by anyone.
        let anyone = try GatewayConnection(port: suite.port)
        func ratings(_ params: String) -> [Int] {
            anyone.rpc("reviews.list", params).field("reviews", [Rated].self)?.compactMap { $0.rating.map(Int.init) } ?? []
        }
        #expect(ratings(#"{"place_id":1,"sort":"rating","order":"asc"}"#) == [3, 5])
        #expect(ratings(#"{"place_id":1,"sort":"rating","order":"desc"}"#) == [5, 3])
        #expect(ratings(#"{"place_id":1,"sort":"date","order":"asc"}"#) == [5, 3])
        #expect(ratings(#"{"place_id":1,"sort":"date","order":"desc"}"#) == [3, 5])
        #expect(ratings(#"{"place_id":1}"#) == [3, 5])

        // The averages reach search: in its hits, and as its order.
        var hits: [Rated] = []
        for _ in 0..<200 {
            hits = anyone.rpc("search.text", #"{"q":"harbour","sort":"rating"}"#).field("hits", [Rated].self) ?? []
            if hits.count == 3, hits.allSatisfy({ $0.rating != nil }) { break }
            usleep(50_000)
        }
        #expect(hits.map(\.id) == [1, 3, 2])  // 4.0, 4.0 (ties by id), 2.0
        #expect(hits.map(\.rating) == [4, 4, 2] && hits.map(\.reviewCount) == [2, 1, 1])

        // After logging out, the token works nowhere.
        #expect(alice.rpc("auth.logout").succeeded)
        #expect(errorCode(anyone, "reviews.add", #"{"place_id":3,"rating":1,"text":"x","token":"\#(aliceToken)"}"#) == "unauthenticated")
        #expect(errorCode(alice, "social.feed") == "unauthenticated")
    }

    @Test func aPasswordIsNowhereInTheSuitesFilesOrLogs() throws {
        let suite = try SuiteFixture()
        let (c, _) = try member(suite, "dave")  // password "Dave-Pass-1"
        _ = errorCode(c, "auth.login", #"{"username":"dave","password":"Dave-Pass-1-wrong"}"#)
        _ = c.rpc("auth.logout")
        var scanned = 0
        for name in try FileManager.default.contentsOfDirectory(atPath: suite.folder) {
            guard let bytes = FileManager.default.contents(atPath: suite.folder + "/" + name) else { continue }
            scanned += 1
            #expect(bytes.range(of: Data("Dave-Pass-1".utf8)) == nil, "the password is in \(name)")
        }
        #expect(scanned >= 6)  // the databases, their write-ahead logs, and each process's log (a wrong password too)
    }

    @Test func aDeletedPlaceTakesItsReviewsAndRatingWithIt() throws {
        let suite = try SuiteFixture(withSearch: true)
        let admin = try suite.adminConnection()
        #expect(admin.rpc("catalog.create", #"{"name":"Pop-up Bar","category":"bar","lat":-33.86,"lon":151.21}"#).succeeded)
        let (alice, _) = try member(suite, "hana")
        #expect(alice.rpc("reviews.add", #"{"place_id":1,"rating":4,"text":"Gone soon"}"#).succeeded)
        #expect(admin.rpc("catalog.delete", #"{"id":1}"#).succeeded)
        var left = 1
        for _ in 0..<100 where left > 0 {
            left = alice.rpc("reviews.list", #"{"place_id":1}"#).field("reviews", [Rated].self)?.count ?? -1
            if left > 0 { usleep(50_000) }
        }
        #expect(left == 0)
    }

    @Test func aTokenEndedElsewhereStopsWorkingWithinTheCacheBound() throws {
        let suite = try SuiteFixture()
        let (c, token) = try member(suite, "carol")
        #expect(c.rpc("social.feed").succeeded)  // checked, and now trusted for up to 2 s
        // Logged out through the social service itself, as another gateway would.
        let context = try ZMQContext()
        let social = try RPCClient(context: context, endpoints: [suite.social.rpc], logger: Logger(component: "test", level: .error))
        defer { social.close() }
        let me = try JSONSerialization.jsonObject(with: social.request(type: "auth.validate", body: Data(#"{"token":"\#(token)"}"#.utf8)).bodyJSON) as? [String: Any]
        let userId = String(me?["user_id"] as? Int ?? 0)
        _ = try social.request(type: "auth.logout", body: Data(#"{"token":"\#(token)"}"#.utf8), auth: Auth(userId: userId, role: "user"))
        var refused = false
        for _ in 0..<50 where !refused {  // 5 s at most: the documented bound is 2 s
            refused = errorCode(c, "social.feed") == "unauthenticated"
            if !refused { usleep(100_000) }
        }
        #expect(refused)
        // That refusal signed the connection out: it is anonymous again, and logging out is harmless.
        #expect(c.rpc("catalog.categories").succeeded)
        #expect(errorCode(c, "social.feed") == "unauthenticated")
    }

    /// At the production cost the service hashes one password at a time (2 readers) and
    /// refuses more; the gateway tries those again, so a pool of connections signing in at
    /// once all get in.
    @Test func manyConnectionsSigningInAtOnceAllGetIn() throws {
        let suite = try SuiteFixture(passwordCost: "interactive")
        let admin = SuiteFixture.admin
        let connections = try (0..<6).map { _ in try GatewayConnection(port: suite.port) }
        let login = #"{"jsonrpc":"2.0","id":1,"method":"auth.login","params":{"username":"\#(admin.username)","password":"\#(admin.password)"}}"#
        for c in connections { c.send(login + "\n") }
        let tokens = connections.map { RPCReply($0.line()).field("token", String.self) }
        #expect(tokens.allSatisfy { $0 != nil }, "\(tokens)")
    }

    @Test func readsNeedNoAccountsServiceEvenWhenSignedIn() throws {
        let suite = try SuiteFixture()
        let (c, _) = try member(suite, "gina")
        suite.stopSocial()
        #expect(c.rpc("catalog.categories").succeeded)  // with a cold cache too: the token is not needed here
        usleep(2_100_000)
        #expect(c.rpc("catalog.categories").succeeded)
        #expect(errorCode(c, "social.feed") == "unavailable")
    }

    @Test func signInsAndOutsOrderTheRequestsAfterThem() throws {
        let suite = try SuiteFixture()
        let admin = try suite.adminConnection()
        #expect(admin.rpc("catalog.create", #"{"name":"Opera Bar","category":"bar","lat":-33.857,"lon":151.214}"#).succeeded)
        let (c, token) = try member(suite, "erin")
        let (_, otherToken) = try member(suite, "frank")
        // Logging out with another session's token (a param) leaves this connection's own.
        #expect(c.rpc("auth.logout", #"{"token":"\#(otherToken)"}"#).succeeded)
        #expect(c.rpc("social.feed").succeeded)
        #expect(errorCode(c, "social.feed", #"{"token":"\#(otherToken)"}"#) == "unauthenticated")
        // A logout pipelined with a review: the review runs after it, anonymous.
        c.send(#"{"jsonrpc":"2.0","id":"out","method":"auth.logout"}"# + "\n" + #"{"jsonrpc":"2.0","id":"r","method":"reviews.add","params":{"place_id":1,"rating":4,"text":"late"}}"# + "\n")
        let answers = [json(c.line()), json(c.line())]
        let review = answers.first { $0["id"] as? String == "r" }
        #expect(((review?["error"] as? [String: Any])?["data"] as? [String: Any])?["code"] as? String == "unauthenticated")
        #expect(errorCode(try GatewayConnection(port: suite.port), "social.feed", #"{"token":"\#(token)"}"#) == "unauthenticated")
        // Internal methods of the services are not offered.
        for method in ["auth.validate", "admin.create", "sys.stats"] {
            #expect(errorCode(c, method, #"{"token":"\#(token)"}"#) == "not_found")
        }
    }

    /// An event social emits while applying the catalog's (a deleted place's rating going to
    /// nothing) leaves at once, not at social's next heartbeat: here an hour away.
    @Test func anEventEmittedWhileApplyingLeavesAtOnce() throws {
        let suite = try SuiteFixture(socialArguments: ["--heartbeat-ms", "3600000"])
        let admin = try suite.adminConnection()
        let created = admin.reply(#"{"jsonrpc":"2.0","id":1,"method":"catalog.create","params":{"name":"Gone soon","category":"cafe","lat":-33.87,"lon":151.2}}"#)
        let placeId = created.field("id", Int.self) ?? 0
        let (c, _) = try member(suite, "hugo")
        #expect(c.rpc("reviews.add", #"{"place_id":\#(placeId),"rating":4,"text":"ok"}"#).succeeded)
        let context = try ZMQContext()
        let sub = try Socket(context, .sub)
        try sub.subscribe("social.rating.updated")
        try sub.setReceiveTimeout(milliseconds: 100)
        try sub.connect((suite.social.endpoints["publish"] as? [String])?.first ?? "")
        usleep(300_000)  // the subscription reaches the publisher
        #expect(admin.rpc("catalog.delete", #"{"id":\#(placeId)}"#).succeeded)
        var zeroed = false
        for _ in 0..<30 where !zeroed {
            guard let frames = try sub.receive(), frames.count >= 2 else { continue }
            let body = (try? JSONSerialization.jsonObject(with: frames[1])) as? [String: Any]
            let rating = body?["body"] as? [String: Any]
            zeroed = rating?["place_id"] as? Int == placeId && rating?["count"] as? Int == 0
        }
        // Thirty reads of 100 ms at most: the event came long before social's next heartbeat.
        #expect(zeroed)
    }
}
