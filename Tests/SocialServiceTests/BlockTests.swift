import Bus
import Foundation
import SocialService
import Testing

/// Blocks over real sockets: the rules of blocking, the list, profiles and follows hidden both
/// ways, and the limit from the attacker's side.
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

    @Test func aBlockedPairSeesNoProfileEitherWay() throws {
        let f = try SocialFixture()
        let ann = try f.register("ann"), ben = try f.register("ben"), cat = try f.register("cat")
        try f.call("social.block", #"{"user_id":\#(ben)}"#, as: ann)
        #expect(f.error("profile.get", #"{"user_id":\#(ben)}"#, as: ann) == ServiceError(.notFound, "no user with id \(ben)", field: "user_id"))
        #expect(f.error("profile.get", #"{"user_id":\#(ann)}"#, as: ben) == ServiceError(.notFound, "no user with id \(ann)", field: "user_id"))
        // Others, and each their own, see as before.
        #expect(int(try f.call("profile.get", #"{"user_id":\#(ben)}"#, as: cat)["id"]) == ben)
        #expect(int(try f.call("profile.get", #"{"user_id":\#(ann)}"#)["id"]) == ann)
        #expect(int(try f.call("profile.get", #"{"user_id":\#(ann)}"#, as: ann)["id"]) == ann)
        try f.call("social.unblock", #"{"user_id":\#(ben)}"#, as: ann)
        #expect(int(try f.call("profile.get", #"{"user_id":\#(ann)}"#, as: ben)["id"]) == ann)
    }

    @Test func blockingEndsFollowsAndHidesUsersFromFollowLists() throws {
        let f = try SocialFixture()
        let ann = try f.register("ann"), ben = try f.register("ben"), cat = try f.register("cat")
        try f.call("social.follow", #"{"user_id":\#(ben)}"#, as: ann)
        try f.call("social.follow", #"{"user_id":\#(ann)}"#, as: ben)
        try f.call("social.follow", #"{"user_id":\#(cat)}"#, as: ann)
        try f.call("social.follow", #"{"user_id":\#(cat)}"#, as: ben)
        try f.call("social.block", #"{"user_id":\#(ben)}"#, as: ann)
        #expect(try f.count("follows", "(follower_id = ? AND followee_id = ?) OR (follower_id = ? AND followee_id = ?)", ann, ben, ben, ann) == 0)
        // Ben's follow of Ann is answered as usual and changes nothing she sees.
        let silent = try f.call("social.follow", #"{"user_id":\#(ann)}"#, as: ben)
        #expect(silent["following"] as? Bool == true)
        #expect(f.ids(try f.call("social.followers", as: ann), "users") == [])
        #expect(int(try f.call("profile.get", as: ann)["followers"]) == 0)
        // Ann must unblock Ben to follow him.
        #expect(f.error("social.follow", #"{"user_id":\#(ben)}"#, as: ann)
            == ServiceError(.conflict, "you block user \(ben); unblock them (social.unblock) first", field: "user_id"))
        // Cat's followers: each of the pair sees the list without the other; anyone else sees both.
        #expect(f.ids(try f.call("social.followers", #"{"user_id":\#(cat)}"#, as: ann), "users") == [ann])
        #expect(f.ids(try f.call("social.followers", #"{"user_id":\#(cat)}"#, as: ben), "users") == [ben])
        #expect(f.ids(try f.call("social.followers", #"{"user_id":\#(cat)}"#), "users") == [ben, ann])
        // The other's own lists are not there for them.
        #expect(f.refusal("social.following", #"{"user_id":\#(ben)}"#, as: ann) == "not_found user_id")
        #expect(f.refusal("social.followers", #"{"user_id":\#(ann)}"#, as: ben) == "not_found user_id")
        // Unblocked, what the block ended stays ended, and following works again.
        try f.call("social.unblock", #"{"user_id":\#(ben)}"#, as: ann)
        #expect(f.ids(try f.call("social.followers", as: ann), "users") == [])
        try f.call("social.follow", #"{"user_id":\#(ann)}"#, as: ben)
        #expect(f.ids(try f.call("social.followers", as: ann), "users") == [ben])
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
