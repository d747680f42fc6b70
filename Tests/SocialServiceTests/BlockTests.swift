import Bus
import Foundation
import SocialService
import Testing

/// Blocks over real sockets: the rules of blocking, the list, what the blocker no longer sees,
/// that the blocked user is told nothing, and the limit from the attacker's side.
@Suite struct BlockTests {
    @Test func blockUnblockAndTheList() throws {
        let f = try SocialFixture()
        let ann = try f.register("ann"), ben = try f.register("ben"), cat = try f.register("cat")
        #expect(f.error("social.block", #"{"user_id":\#(ann)}"#, as: ann) == ServiceError.invalid("user_id", "cannot block yourself"))
        #expect(f.refusal("social.block", #"{"user_id":999}"#, as: ann) == "not_found user_id")
        #expect(f.refusal("social.block", #"{"user_id":\#(ben)}"#) == "unauthenticated")
        #expect(f.refusal("social.blocks") == "unauthenticated")
        let reply = try f.call("social.block", #"{"user_id":\#(ben)}"#, as: ann)
        #expect(int(reply["user_id"]) == ben && reply["blocked"] as? Bool == true)
        // Twice is no error and one block.
        try f.call("social.block", #"{"user_id":\#(ben)}"#, as: ann)
        try f.call("social.block", #"{"user_id":\#(cat)}"#, as: ann)
        #expect(f.ids(try f.call("social.blocks", as: ann), "users") == [cat, ben])
        let first = try f.call("social.blocks", #"{"limit":1}"#, as: ann)
        #expect(f.ids(first, "users") == [cat])
        let cursor = try #require(first["next_cursor"] as? String)
        #expect(f.ids(try f.call("social.blocks", #"{"limit":1,"cursor":"\#(cursor)"}"#, as: ann), "users") == [ben])
        // Ben's list is his own: empty.
        #expect(f.ids(try f.call("social.blocks", as: ben), "users") == [])
        let unblocked = try f.call("social.unblock", #"{"user_id":\#(ben)}"#, as: ann)
        #expect(int(unblocked["user_id"]) == ben && unblocked["blocked"] as? Bool == false)
        try f.call("social.unblock", #"{"user_id":\#(ben)}"#, as: ann)
        #expect(f.ids(try f.call("social.blocks", as: ann), "users") == [cat])
        #expect(f.refusal("social.unblock", #"{"user_id":999}"#, as: ann) == "not_found user_id")
    }

    @Test func theBlockerSeesNoProfileOfTheBlockedWhoSeesTheirsAsAnyone() throws {
        let f = try SocialFixture()
        let ann = try f.register("ann"), ben = try f.register("ben"), cat = try f.register("cat")
        try f.call("social.block", #"{"user_id":\#(ben)}"#, as: ann)
        #expect(f.error("profile.get", #"{"user_id":\#(ben)}"#, as: ann) == ServiceError(.notFound, "no user with id \(ben)", field: "user_id"))
        // Ben sees Ann's profile as a signed-out caller does.
        #expect(NSDictionary(dictionary: try f.call("profile.get", #"{"user_id":\#(ann)}"#, as: ben)) == NSDictionary(dictionary: try f.call("profile.get", #"{"user_id":\#(ann)}"#)))
        // Others, and each their own, see as before.
        #expect(int(try f.call("profile.get", #"{"user_id":\#(ben)}"#, as: cat)["id"]) == ben)
        #expect(int(try f.call("profile.get", #"{"user_id":\#(ann)}"#, as: ann)["id"]) == ann)
        try f.call("social.unblock", #"{"user_id":\#(ben)}"#, as: ann)
        #expect(int(try f.call("profile.get", #"{"user_id":\#(ben)}"#, as: ann)["id"]) == ben)
    }

    @Test func blockingEndsTheBlockersFollowsAndWithholdsTheBlockedsFromAllButThem() throws {
        let f = try SocialFixture()
        let ann = try f.register("ann"), ben = try f.register("ben"), cat = try f.register("cat")
        try f.call("social.follow", #"{"user_id":\#(ben)}"#, as: ann)
        try f.call("social.follow", #"{"user_id":\#(ann)}"#, as: ben)
        try f.call("social.follow", #"{"user_id":\#(cat)}"#, as: ann)
        try f.call("social.follow", #"{"user_id":\#(cat)}"#, as: ben)
        try f.call("social.block", #"{"user_id":\#(ben)}"#, as: ann)
        #expect(try f.count("follows", "follower_id = ? AND followee_id = ?", ann, ben) == 0)
        // Ben's follow of Ann stays his: he sees it, in his list, hers and both counts; no one else does.
        #expect(f.ids(try f.call("social.following", as: ben), "users") == [cat, ann])
        #expect(f.ids(try f.call("social.followers", #"{"user_id":\#(ann)}"#, as: ben), "users") == [ben])
        #expect(int(try f.call("profile.get", #"{"user_id":\#(ann)}"#, as: ben)["followers"]) == 1)
        #expect(int(try f.call("profile.get", as: ben)["following"]) == 2)
        for viewer in [ann, cat, nil] as [Int64?] {
            #expect(f.ids(try f.call("social.followers", #"{"user_id":\#(ann)}"#, as: viewer), "users") == [])
            #expect(f.ids(try f.call("social.following", #"{"user_id":\#(ben)}"#, as: viewer == ann ? cat : viewer), "users") == [cat])
            #expect(int(try f.call("profile.get", #"{"user_id":\#(ann)}"#, as: viewer)["followers"]) == 0)
        }
        // Following again, or anew after unfollowing, is answered as usual and still his alone.
        #expect(try f.call("social.follow", #"{"user_id":\#(ann)}"#, as: ben)["following"] as? Bool == true)
        try f.call("social.unfollow", #"{"user_id":\#(ann)}"#, as: ben)
        #expect(f.ids(try f.call("social.following", as: ben), "users") == [cat])
        try f.call("social.follow", #"{"user_id":\#(ann)}"#, as: ben)
        #expect(f.ids(try f.call("social.followers", as: ann), "users") == [])
        // Ann must unblock Ben to follow him.
        #expect(f.error("social.follow", #"{"user_id":\#(ben)}"#, as: ann)
            == ServiceError(.conflict, "you block user \(ben); unblock them (social.unblock) first", field: "user_id"))
        // Cat's followers: Ann does not see Ben; Ben, and anyone else, see both.
        #expect(f.ids(try f.call("social.followers", #"{"user_id":\#(cat)}"#, as: ann), "users") == [ann])
        #expect(f.ids(try f.call("social.followers", #"{"user_id":\#(cat)}"#, as: ben), "users") == [ben, ann])
        #expect(f.ids(try f.call("social.followers", #"{"user_id":\#(cat)}"#), "users") == [ben, ann])
        #expect(f.refusal("social.following", #"{"user_id":\#(ben)}"#, as: ann) == "not_found user_id")
        // Unblocked, Ann's follow stays ended; Ben's, his all along, counts for all.
        try f.call("social.unblock", #"{"user_id":\#(ben)}"#, as: ann)
        #expect(f.ids(try f.call("social.followers", as: ann), "users") == [ben])
        #expect(f.ids(try f.call("social.following", as: ann), "users") == [cat])
    }

    @Test func theBlockerSeesNoReviewOfTheBlockedWhoSeesTheirs() throws {
        let f = try SocialFixture()
        let ann = try f.register("ann"), ben = try f.register("ben"), cat = try f.register("cat")
        for user in [ann, ben, cat] { try f.review(1, 4, by: user) }
        func authors(as viewer: Int64?) throws -> [Int64] {
            (try f.call("reviews.list", #"{"place_id":1}"#, as: viewer)["reviews"] as? [[String: Any]] ?? [])
                .map { int(($0["user"] as? [String: Any])?["id"]) }
        }
        try f.call("social.block", #"{"user_id":\#(ann)}"#, as: ben)
        #expect(try authors(as: ben) == [cat, ben])
        #expect(try authors(as: ann) == [cat, ben, ann])
        #expect(try authors(as: cat) == [cat, ben, ann] && authors(as: nil) == [cat, ben, ann])
    }

    @Test func oneUserBlocksAtMostAThousand() throws {
        let f = try SocialFixture()
        let ann = try f.register("ann")
        let others = try f.addUsers(1_001, prefix: "u")
        for other in others.prefix(1_000) { try f.call("social.block", #"{"user_id":\#(other)}"#, as: ann) }
        #expect(f.error("social.block", #"{"user_id":\#(others[1_000])}"#, as: ann)
            == ServiceError(.conflict, "you block 1000 users, the most; unblock one (social.unblock) first", field: "user_id"))
        // Blocking one already blocked is still fine; unblocking one makes room.
        try f.call("social.block", #"{"user_id":\#(others[0])}"#, as: ann)
        try f.call("social.unblock", #"{"user_id":\#(others[0])}"#, as: ann)
        try f.call("social.block", #"{"user_id":\#(others[1_000])}"#, as: ann)
        // Pages of the list stay bounded.
        let page = try f.call("social.blocks", #"{"limit":50}"#, as: ann)
        #expect(f.ids(page, "users").count == 50 && page["next_cursor"] != nil)
        #expect(f.refusal("social.blocks", #"{"limit":51}"#, as: ann) == "invalid_argument limit")
    }
}
