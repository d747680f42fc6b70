import Bus
import Foundation
import SocialService
import Testing

/// A block tells the blocked user nothing: method by method, what a blocked user is answered
/// toward the user who blocks them is byte for byte what a signed-in stranger is answered
/// toward a user who blocks no one, their own lists included.
@Suite struct BlockSecrecyTests {
    /// One world: `target`, `caller` and `owner` (of a group both others are in), with the
    /// target's review, photo and membership. `block` makes the target block the caller.
    struct World {
        let f: SocialFixture
        let target: Int64, caller: Int64, owner: Int64, group: Int64

        init(block: Bool) throws {
            f = try SocialFixture()
            target = try f.register("tess")
            caller = try f.register("carl")
            owner = try f.register("olga")
            try f.review(1, 5, by: target, text: "Worth the climb")
            try PhotoTests.setPhoto(f, try PhotoTests.solid(90), as: target)
            group = try f.group("Coast walk", owner: owner)
            try f.join(group, "tess", id: target, invitedBy: owner)
            try f.join(group, "carl", id: caller, invitedBy: owner)
            // The caller followed the target, and wrote to them, before any block.
            try f.call("social.follow", #"{"user_id":\#(target)}"#, as: caller)
            try f.call("chat.send", #"{"to":"user:\#(target)","text":"Hello","client_msg_id":"m1"}"#, as: caller)
            if block { try f.call("social.block", #"{"user_id":\#(caller)}"#, as: target) }
        }

        /// What the caller is answered, as sorted-key JSON text, or the error's code, field and message.
        func answer(_ method: String, _ body: String) -> String {
            do {
                let reply = try f.call(method, body, as: caller)
                let data = try JSONSerialization.data(withJSONObject: reply, options: [.sortedKeys])
                return String(decoding: data, as: UTF8.self)
            } catch {
                return "error \(error)"
            }
        }
    }

    @Test func aBlockedUserIsAnsweredAsAStrangerToAUserWhoBlocksNoOne() throws {
        let blocked = try World(block: true), stranger = try World(block: false)
        let w = blocked
        #expect(w.target == stranger.target && w.caller == stranger.caller && w.group == stranger.group)
        let conversation = "user:\(w.target)"
        // Each step as the caller, in order: toward the target, then the caller's own lists.
        let steps: [(String, String)] = [
            ("profile.get", #"{"user_id":\#(w.target)}"#),
            ("profile.photo", #"{"user_id":\#(w.target),"size":96}"#),
            ("social.followers", #"{"user_id":\#(w.target)}"#),
            ("social.following", #"{"user_id":\#(w.target)}"#),
            ("social.following", "{}"),
            ("social.feed", "{}"),
            ("reviews.list", #"{"place_id":1}"#),
            ("social.unfollow", #"{"user_id":\#(w.target)}"#),
            ("social.follow", #"{"user_id":\#(w.target)}"#),
            ("social.followers", #"{"user_id":\#(w.target)}"#),
            ("profile.get", #"{"user_id":\#(w.target)}"#),
            ("profile.get", "{}"),
            ("social.followers", "{}"),
            ("chat.send", #"{"to":"\#(conversation)","text":"Are you there?","client_msg_id":"m2"}"#),
            ("chat.history", #"{"conversation":"\#(conversation)"}"#),
            ("chat.conversations", "{}"),
            ("groups.get", #"{"group_id":\#(w.group)}"#),
            ("groups.list", "{}"),
            ("groups.follow", #"{"group_id":\#(w.group),"user_id":\#(w.target)}"#),
            ("groups.get", #"{"group_id":\#(w.group)}"#),
            ("groups.create", #"{"name":"Ferry day"}"#),
            ("groups.invite", #"{"group_id":\#(w.group + 1),"username":"tess"}"#),
            ("groups.get", #"{"group_id":\#(w.group + 1)}"#),
            ("groups.list", "{}"),
            ("groups.unfollow", #"{"group_id":\#(w.group),"user_id":\#(w.target)}"#),
        ]
        for (method, body) in steps {
            let got = blocked.answer(method, body), expected = stranger.answer(method, body)
            #expect(got == expected, "\(method) \(body)")
            #expect(!got.hasPrefix("error"), "\(method) \(body): \(got)")
        }
        // Nothing of it reached the target: no follower, no message, no invitation.
        let target = w.target
        #expect(w.f.ids(try w.f.call("social.followers", as: target), "users") == [])
        #expect(int(try w.f.call("profile.get", as: target)["followers"]) == 0)
        #expect((try w.f.call("groups.list", as: target)["invitations"] as? [Any])?.isEmpty == true)
        let history = try w.f.call("chat.history", #"{"conversation":"user:\#(w.caller)"}"#, as: target)["messages"] as? [[String: Any]] ?? []
        #expect(history.map { $0["text"] as? String } == ["Hello"])
        // While the stranger's target has them all.
        let s = stranger
        #expect(s.f.ids(try s.f.call("social.followers", as: target), "users") == [s.caller])
        #expect((try s.f.call("groups.list", as: target)["invitations"] as? [Any])?.count == 1)
    }
}
