import Bus
import Contracts
import Foundation
import ServiceKit
import SocialService
import Storage
import Synchronization
import Testing
import TestSupport

@Suite struct AccountDeletionTests {
    /// Every column of social's tables that holds a user's id.
    static let socialUserColumns: Set<String> = ["user_id", "follower_id", "followee_id", "users.id", "blocker_id", "blocked_id", "invited_by",
                                                 "sender_id", "peer_id", "started_by"]

    /// The events of the outbox as `seq type body`.
    func outbox(_ f: SocialFixture) throws -> [String] {
        try f.events().map { "\($0.header.seq) \($0.header.type) \(String(decoding: $0.bodyBytes ?? Data(), as: UTF8.self))" }
    }

    @Test func deletingAnAccountLeavesNoRowOfTheUser() throws {
        let f = try SocialFixture()
        let root = try f.register("root", admin: true)
        let ann = try f.register("annika.q"), ben = try f.register("ben"), cat = try f.register("cat")
        try f.review(1, 5, by: ann, text: "ann was here")
        try f.review(2, 2, by: ann)
        try f.review(1, 3, by: ben)
        try f.call("social.follow", #"{"user_id":\#(ben)}"#, as: ann)
        try f.call("social.follow", #"{"user_id":\#(ann)}"#, as: ben)
        try f.call("social.follow", #"{"user_id":\#(ann)}"#, as: cat)
        try f.call("social.follow", #"{"user_id":\#(cat)}"#, as: ben)
        try f.call("profile.update", #"{"bio":"ann's bio","home_city":"Sydney"}"#, as: ann)
        // Earlier events that name ann, and ben's that must stay.
        try f.call("admin.set_role", #"{"user_id":\#(ann),"role":"admin"}"#, as: root)
        try f.call("admin.set_role", #"{"user_id":\#(ann),"role":"user"}"#, as: root)
        let first = try f.login("annika.q").token
        try f.call("auth.logout", #"{"token":"\#(first)"}"#, as: ann)
        try f.call("auth.logout", #"{"token":"\#(try f.login("ben").token)"}"#, as: ben)
        let live = try f.login("annika.q").token
        // Failed logins counted against her username and against her e-mail typed as one.
        #expect(throws: ServiceError.self) { try f.login("annika.q", "Wrong-Passw0rd") }
        #expect(throws: ServiceError.self) { try f.login("annika.q@example.com", "Wrong-Passw0rd") }
        let before = try outbox(f)
        #expect(try !rowsNaming(ann, texts: ["annika.q"], userColumns: Self.socialUserColumns, path: f.databasePath).isEmpty)

        let reply = try f.call("auth.delete", #"{"password":"\#(SocialFixture.password)"}"#, as: ann)
        #expect(reply["user_id"] as? Int == Int(ann))

        // No row holds her id, username or e-mail, but the deletion event's.
        #expect(try rowsNaming(ann, texts: ["annika.q", "ann was here", "ann's bio"], userColumns: Self.socialUserColumns,
                               except: ["outbox": "type = 'social.user.deleted'"], path: f.databasePath) == [])
        let db = try Database(path: f.databasePath)
        #expect(try db.scalarInt("SELECT count(*) FROM users WHERE username = 'annika.q'") == 0)
        #expect(try db.scalarInt("SELECT count(*) FROM login_failures WHERE username IN ('annika.q', 'annika.q@example.com')") == 0)
        // Everyone else's rows stay.
        #expect(try db.scalarInt("SELECT count(*) FROM users") == 3)
        #expect(try db.scalarInt("SELECT count(*) FROM follows WHERE follower_id = ? AND followee_id = ?", ben, cat) == 1)
        #expect(try db.scalarInt("SELECT count(*) FROM reviews WHERE user_id = ?", ben) == 1)
        #expect(try db.scalarInt("SELECT count(*) FROM sessions") == 0)

        // The outbox: the same seqs; ann's earlier events redacted, ben's kept; the new ratings and the deletion last.
        let after = try outbox(f)
        #expect(after.count == before.count + 3)
        for (old, new) in zip(before, after) {
            let seq = old.prefix { $0 != " " }
            if old.contains(#""user_id":\#(ann)"#) {
                #expect(new == "\(seq) social.redacted {}")
            } else {
                #expect(new == old)
            }
        }
        #expect(before.filter { $0.contains(#""user_id":\#(ann)"#) }.count == 3)
        let added = try f.events().suffix(3)
        #expect(try added.prefix(2).map { try $0.body(RatingUpdated.self) } == [
            RatingUpdated(placeId: 1, average: 3, count: 1, reviews30d: 1), RatingUpdated(placeId: 2, average: 0, count: 0, reviews30d: 0),
        ])
        #expect(added.last?.header.type == SocialEvents.userDeleted)
        #expect(try added.last?.body(UserDeleted.self) == UserDeleted(userId: ann))

        // Her token signs no one in; her username is free again, as a new account.
        #expect(f.error("auth.validate", #"{"token":"\#(live)"}"#)?.code == .unauthenticated)
        #expect(f.error("profile.get", #"{"user_id":\#(ann)}"#)?.code == .notFound)
        #expect(try f.register("annika.q") > cat)
        #expect(try f.call("profile.get", #"{"user_id":\#(ben)}"#)["followers"] as? Int == 0)
    }

    /// A user who holds every kind of row the groups, live map, chat, photos and people added:
    /// a group they own and one they joined, invitations sent and received, blocks both
    /// ways, a shared position and a map follow, direct and group messages, a photo, an open
    /// upload and visits. After `auth.delete` no row names them.
    @Test func deletingAnAccountLeavesNoRowOfAnyNewKind() throws {
        let f = try SocialFixture(favorites: true)
        let ann = try f.register("annika.q"), ben = try f.register("ben"), cat = try f.register("cat"), dan = try f.register("dan")
        let owned = try f.group("Harbour walk", owner: ann)
        try f.join(owned, "ben", id: ben, invitedBy: ann)
        try f.call("groups.invite", #"{"group_id":\#(owned),"username":"cat"}"#, as: ann)  // sent, waiting
        let joined = try f.group("Bens trip", owner: ben)
        try f.join(joined, "annika.q", id: ann, invitedBy: ben)
        let invitedTo = try f.group("Cats trip", owner: cat)
        try f.call("groups.invite", #"{"group_id":\#(invitedTo),"username":"annika.q"}"#, as: cat)  // received, waiting
        try f.call("social.block", #"{"user_id":\#(dan)}"#, as: ann)
        let eve = try f.register("eve")
        try f.call("social.block", #"{"user_id":\#(ann)}"#, as: eve)
        for group in [owned, joined] { try f.call("groups.sharing", #"{"group_id":\#(group),"on":true}"#, as: ann) }
        try f.call("groups.sharing", #"{"group_id":\#(joined),"on":true}"#, as: ben)
        try f.call("groups.position", #"{"lat":-33.85,"lon":151.21}"#, as: ann)
        try f.call("groups.position", #"{"lat":-33.86,"lon":151.22}"#, as: ben)
        try f.call("groups.follow", #"{"group_id":\#(joined),"user_id":\#(ben)}"#, as: ann)
        try f.send("ann's secret message", to: "user:\(ben)", as: ann)
        try f.send("to cat", to: "user:\(cat)", as: ann)
        try f.send("ben answers", to: "user:\(ann)", as: ben)
        try f.send("ann's group message", to: "group:\(joined)", as: ann)
        try f.send("ben's group message", to: "group:\(joined)", as: ben)
        try PhotoTests.setPhoto(f, try PhotoTests.solid(120, side: 64), as: ann)
        _ = try PhotoTests.upload(f, try PhotoTests.solid(60, side: 64), as: ann)
        try f.call("profile.update", #"{"discoverable":true}"#, as: ann)
        try f.visited(ann, place: 1)
        try f.visited(ann, place: 2)
        let db = try Database(path: f.databasePath)
        #expect(try f.eventually { try db.scalarInt("SELECT count(*) FROM visits WHERE user_id = ?", ann) == 2 })
        let kinds = ["groups", "group_members", "group_invitations", "blocks", "positions", "chat_messages", "chat_participants",
                     "chat_conversations", "photos", "photo_uploads", "visits"]
        for table in kinds { #expect(try db.scalarInt("SELECT count(*) FROM \(table)") ?? 0 > 0, "\(table)") }
        let named = try rowsNaming(ann, texts: ["annika.q", "ann's secret message", "ann's group message"], userColumns: Self.socialUserColumns,
                                   path: f.databasePath)
        for table in ["group_members", "group_invitations", "blocks", "positions", "chat_messages", "chat_participants", "photos", "photo_uploads", "visits"] {
            #expect(named.contains { $0.hasPrefix("\(table).") }, "\(table)")
        }

        try f.call("auth.delete", #"{"password":"\#(SocialFixture.password)"}"#, as: ann)
        // The one id left is the other side's name for their direct conversation (`user:N`,
        // social.md: a conversation with a deleted user stays readable); ids are never reused.
        let left = try rowsNaming(ann, texts: ["annika.q", "ann's secret message", "ann's group message"], userColumns: Self.socialUserColumns,
                                  except: ["outbox": "type = 'social.user.deleted'", "chat_participants": "user_id IN (\(ben), \(cat)) AND peer_id = \(ann)"],
                                  path: f.databasePath)
        #expect(left == [])
        #expect(try db.scalarInt("SELECT count(*) FROM chat_participants WHERE peer_id = ?", ann) == 2)
        // The others' rows stay: Ben owns the group Ann owned, his messages and position are kept.
        #expect(try db.scalarInt("SELECT count(*) FROM group_members WHERE group_id = ? AND user_id = ? AND role = 'owner'", owned, ben) == 1)
        #expect(try db.scalarInt("SELECT count(*) FROM chat_messages WHERE sender_id = ?", ben) == 2)
        #expect(try db.scalarInt("SELECT count(*) FROM chat_messages WHERE sender_id IS NULL AND text = ''") == 3)
        #expect(try db.scalarInt("SELECT count(*) FROM positions WHERE user_id = ?", ben) == 1)
        #expect(try db.scalarInt("SELECT count(*) FROM photo_upload_chunks") == 0)
    }

    /// A review sent before `auth.delete` whose place the catalog answers after it (the attack
    /// saw `conflict`, "constraint violated: FOREIGN KEY constraint failed") is refused as
    /// the deleted account it is, and leaves nothing.
    @Test func aReviewWaitingOnTheCatalogWhileItsAuthorIsDeletedIsRefusedAsDeleted() throws {
        let f = try SocialFixture()
        let ann = try f.register("ann")
        let endpoints = f.runtime.endpoints.rpc, context = f.context
        let outcome = Mutex<String?>(nil)
        let done = DispatchSemaphore(value: 0)
        let started = Date(), lookups = slowLookupsBegun.load(ordering: .sequentiallyConsistent)
        DispatchQueue.global().async {
            // Its own client, so the deletion below does not queue behind the review.
            var text = "no error"
            do {
                let client = try RPCClient(context: context, endpoints: endpoints, logger: Logger(component: "test", level: .error) { _ in })
                defer { client.close() }
                _ = try client.request(type: "reviews.add", body: Data(#"{"place_id":\#(slowPlace),"rating":4,"text":"late"}"#.utf8),
                                       auth: Auth(userId: String(ann), role: "user"), timeoutMilliseconds: 5_000)
            } catch let error as ServiceError {
                text = "\(error.code.rawValue) \(error.message)"
            } catch {
                text = "\(error)"
            }
            outcome.withLock { $0 = text }
            done.signal()
        }
        // Once the review waits on the catalog's slow answer (at most 200 × 10 ms).
        for _ in 0..<200 where slowLookupsBegun.load(ordering: .sequentiallyConsistent) == lookups {
            Thread.sleep(forTimeInterval: 0.01)
        }
        #expect(slowLookupsBegun.load(ordering: .sequentiallyConsistent) > lookups)
        try f.call("auth.delete", #"{"password":"\#(SocialFixture.password)"}"#, as: ann)
        #expect(done.wait(timeout: .now() + 10) == .success)
        #expect(Date().timeIntervalSince(started) >= slowPlaceDelay)
        #expect(outcome.withLock { $0 } == "unauthenticated this account was deleted")
        #expect(try rowsNaming(ann, texts: ["late"], userColumns: Self.socialUserColumns,
                               except: ["outbox": "type = 'social.user.deleted'"], path: f.databasePath) == [])
    }

    @Test func aWrongPasswordDeletesNothingAndIsThrottledLikeALogin() throws {
        let f = try SocialFixture()
        let ann = try f.register("ann")
        try f.review(1, 4, by: ann)
        let events = try f.events().count
        for _ in 0..<5 {
            let error = f.error("auth.delete", #"{"password":"Wrong-Passw0rd"}"#, as: ann)
            #expect(error?.code == .permissionDenied)
            #expect(error?.field == "password")
        }
        // The sixth comes too soon after five failures, as a login would.
        let throttled = f.error("auth.delete", #"{"password":"\#(SocialFixture.password)"}"#, as: ann)
        #expect(throttled?.code == .rateLimited && throttled?.field == "password")  // the param it has
        let login = f.error("auth.login", #"{"username":"ann","password":"\#(SocialFixture.password)"}"#)
        #expect(login?.code == .rateLimited && login?.field == "username")
        f.clock.advance(2)
        #expect(try f.events().count == events)
        #expect(try f.call("profile.get", #"{"user_id":\#(ann)}"#)["username"] as? String == "ann")
        try f.call("auth.delete", #"{"password":"\#(SocialFixture.password)"}"#, as: ann)
        #expect(f.error("profile.get", #"{"user_id":\#(ann)}"#)?.code == .notFound)
    }

    @Test func deletingNeedsASignedInUserAndABoundedPassword() throws {
        let f = try SocialFixture()
        let ann = try f.register("ann")
        #expect(f.error("auth.delete", #"{"password":"\#(SocialFixture.password)"}"#)?.code == .unauthenticated)
        #expect(f.error("auth.delete", #"{"password":"\#(SocialFixture.password)"}"#, as: 999)?.code == .unauthenticated)
        let long = f.error("auth.delete", #"{"password":"\#(String(repeating: "é", count: 513))"}"#, as: ann)
        #expect(long?.code == .invalidArgument)
        #expect(long?.field == "password")
        #expect(f.error("auth.delete", "{}", as: ann)?.code == .invalidArgument)
        // Refusals counted no failure: the right password still works at once.
        try f.call("auth.delete", #"{"password":"\#(SocialFixture.password)"}"#, as: ann)
        #expect(f.error("auth.delete", #"{"password":"\#(SocialFixture.password)"}"#, as: ann)?.code == .unauthenticated)
    }
}

