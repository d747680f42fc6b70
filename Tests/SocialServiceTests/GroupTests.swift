import Bus
import Contracts
import Foundation
import SocialService
import Testing

/// Groups over real sockets: creating, inviting (with its push), accepting, declining,
/// leaving and removing; the limits from the attacker's side; privacy as a non-member, a
/// removed member, a blocked user and an anonymous client; erasure.
@Suite struct GroupTests {
    @Test func createChecksTheNameAndMakesTheCallerTheOwner() throws {
        let f = try SocialFixture()
        let ann = try f.register("ann")
        let view = try f.call("groups.create", #"{"name":"  Sydney trip "}"#, as: ann)
        #expect(view["name"] as? String == "Sydney trip" && int(view["id"]) > 0)
        let members = view["members"] as? [[String: Any]] ?? []
        #expect(members.count == 1 && members.first?["role"] as? String == "owner" && members.first?["sharing"] as? Bool == false
            && members.first?["joined_at"] as? String == "2026-06-01T00:00:00.000Z")
        #expect(f.ids(view, "members") == [ann] && (view["invitations"] as? [Any])?.isEmpty == true)
        let bad: [(String, String)] = [
            (#""""#, "must not be empty"), (#""   ""#, "must not be empty"),
            (try json(String(repeating: "n", count: 101)), "must be at most 100 characters"),
            (try json(String(repeating: "é", count: 201)), "must be at most 400 bytes"),
            (try json("e" + String(repeating: "\u{301}", count: 300)), "must be at most 400 bytes"),
            (#""two\nlines""#, "must be one line without control or bidirectional formatting characters"),
            (#""\u202Eevil""#, "must be one line without control or bidirectional formatting characters"),
        ]
        for (name, message) in bad {
            #expect(f.error("groups.create", #"{"name":\#(name)}"#, as: ann) == ServiceError.invalid("name", message), "\(name)")
        }
        // The limit counts the name once trimmed, as it is kept: 100 characters with white space around fit.
        let padded = try f.call("groups.create", #"{"name":\#(try json("  " + String(repeating: "n", count: 100) + "\n "))}"#, as: ann)
        #expect(padded["name"] as? String == String(repeating: "n", count: 100))
        #expect(f.refusal("groups.create", #"{"name":"x"}"#) == "unauthenticated")
        #expect(f.refusal("groups.create", #"{}"#, as: ann) == "invalid_argument name")
    }

    @Test func inviteAcceptDeclineWithTheInvitedPush() throws {
        let f = try SocialFixture()
        let ann = try f.register("ann"), ben = try f.register("ben"), cat = try f.register("cat")
        let group = try f.group("Trip", owner: ann)
        let pushes = try f.pushes()
        let sent = try f.call("groups.invite", #"{"group_id":\#(group),"username":"BEN"}"#, as: ann)
        #expect(int(sent["group_id"]) == group && sent["username"] as? String == "ben" && sent["invited"] as? Bool == true)
        let push = try pushes.next()
        #expect(push?.topic == "group.invited" && push?.userId == ben)
        let body = pushBody(push)
        #expect(int((body["group"] as? [String: Any])?["id"]) == group && (body["group"] as? [String: Any])?["name"] as? String == "Trip")
        #expect(int((body["invited_by"] as? [String: Any])?["id"]) == ann && body["invited_at"] != nil)
        // Invited again: the same answer, one invitation, no second push (the next push is Cat's).
        try f.call("groups.invite", #"{"group_id":\#(group),"username":"ben"}"#, as: ann)
        try f.call("groups.invite", #"{"group_id":\#(group),"username":"cat"}"#, as: ann)
        #expect(try pushes.next()?.userId == cat)
        #expect(try f.count("group_invitations", "group_id = ?", group) == 2)

        // The invitee sees the invitation, not the group.
        let list = try f.call("groups.list", as: ben)
        #expect((list["groups"] as? [Any])?.isEmpty == true)
        let invitation = (list["invitations"] as? [[String: Any]])?.first
        #expect(int((invitation?["group"] as? [String: Any])?["id"]) == group && int((invitation?["invited_by"] as? [String: Any])?["id"]) == ann)
        #expect(f.refusal("groups.get", #"{"group_id":\#(group)}"#, as: ben) == "not_found group_id")
        // Members see who is invited, and by whom.
        let pending = try f.call("groups.get", #"{"group_id":\#(group)}"#, as: ann)
        #expect(f.ids(pending, "invitations") == [ben, cat])
        #expect(int(((pending["invitations"] as? [[String: Any]])?.first?["invited_by"] as? [String: Any])?["id"]) == ann)

        let joined = try f.call("groups.accept", #"{"group_id":\#(group)}"#, as: ben)
        #expect(f.ids(joined, "members") == [ann, ben] && f.ids(joined, "invitations") == [cat])
        #expect((joined["members"] as? [[String: Any]])?.last?["role"] as? String == "member")
        #expect(f.refusal("groups.accept", #"{"group_id":\#(group)}"#, as: ben) == "not_found group_id")
        #expect(f.error("groups.invite", #"{"group_id":\#(group),"username":"ben"}"#, as: ann)
            == ServiceError(.alreadyExists, "ben is a member already", field: "username"))
        // Any member may invite.
        let dan = try f.register("dan")
        try f.call("groups.invite", #"{"group_id":\#(group),"username":"dan"}"#, as: ben)
        #expect(try f.call("groups.decline", #"{"group_id":\#(group)}"#, as: cat)["declined"] as? Bool == true)
        #expect(f.refusal("groups.decline", #"{"group_id":\#(group)}"#, as: cat) == "not_found group_id")
        #expect(f.ids(try f.call("groups.get", #"{"group_id":\#(group)}"#, as: ben), "invitations") == [dan])
        let mine = try f.call("groups.list", as: ben)
        let listed = (mine["groups"] as? [[String: Any]])?.first
        #expect(int(listed?["id"]) == group && listed?["role"] as? String == "member" && int(listed?["members"]) == 2 && listed?["sharing"] as? Bool == false)

        #expect(f.error("groups.invite", #"{"group_id":\#(group),"username":"nobody"}"#, as: ann)
            == ServiceError(.notFound, "no user named nobody", field: "username"))
        #expect(f.refusal("groups.invite", #"{"group_id":\#(group),"username":"no body"}"#, as: ann) == "invalid_argument username")
        #expect(f.refusal("groups.invite", #"{"group_id":\#(group),"username":"ann"}"#, as: ann) == "invalid_argument username")
    }

    @Test func everyGroupMethodIsNotFoundToAnyoneNotAMember() throws {
        let f = try SocialFixture()
        let ann = try f.register("ann"), ben = try f.register("ben"), eve = try f.register("eve")
        let group = try f.group("Trip", owner: ann)
        try f.join(group, "ben", id: ben, invitedBy: ann)
        try f.call("groups.remove", #"{"group_id":\#(group),"user_id":\#(ben)}"#, as: ann)
        // Ben, removed, blocks Ann too; Eve is blocked by her: neither finds the group.
        try f.call("social.block", #"{"user_id":\#(ann)}"#, as: ben)
        try f.call("social.block", #"{"user_id":\#(eve)}"#, as: ann)
        let methods: [(String, String)] = [
            ("groups.get", #"{"group_id":\#(group)}"#), ("groups.invite", #"{"group_id":\#(group),"username":"eve"}"#),
            ("groups.leave", #"{"group_id":\#(group)}"#), ("groups.remove", #"{"group_id":\#(group),"user_id":\#(ann)}"#),
            ("groups.accept", #"{"group_id":\#(group)}"#), ("groups.decline", #"{"group_id":\#(group)}"#),
        ]
        // A stranger, the removed member, and a group that never was; anyone without identity
        // is refused before the group is looked at, whether it exists or not.
        for (method, body) in methods {
            for caller in [eve, ben] {
                #expect(f.refusal(method, body, as: caller) == "not_found group_id", "\(method) as \(caller)")
            }
            let never = body.replacingOccurrences(of: #""group_id":\#(group)"#, with: #""group_id":777"#)
            #expect(f.refusal(method, never, as: ann) == "not_found group_id", "\(method) of a group that never was")
            #expect(f.refusal(method, body, as: nil) == "unauthenticated" && f.refusal(method, never, as: nil) == "unauthenticated", "\(method)")
        }
        #expect(f.error("groups.get", #"{"group_id":\#(group)}"#, as: eve) == ServiceError(.notFound, "no group with id \(group)", field: "group_id"))
        #expect(f.error("groups.get", #"{"group_id":777}"#, as: eve) == ServiceError(.notFound, "no group with id 777", field: "group_id"))
        #expect(f.refusal("groups.list") == "unauthenticated")
        // Nothing of theirs changed the group.
        #expect(f.ids(try f.call("groups.get", #"{"group_id":\#(group)}"#, as: ann), "members") == [ann])
        #expect(try f.count("group_invitations") == 0)
    }

    @Test func leavingPassesOwnershipAndTheLastMemberEndsTheGroup() throws {
        let f = try SocialFixture()
        let ann = try f.register("ann"), ben = try f.register("ben"), cat = try f.register("cat"), dan = try f.register("dan")
        let group = try f.group("Trip", owner: ann)
        try f.join(group, "ben", id: ben, invitedBy: ann)
        f.clock.advance(1)
        try f.join(group, "cat", id: cat, invitedBy: ann)
        try f.call("groups.invite", #"{"group_id":\#(group),"username":"dan"}"#, as: cat)
        // Only the owner removes.
        #expect(f.error("groups.remove", #"{"group_id":\#(group),"user_id":\#(cat)}"#, as: ben)
            == ServiceError(.permissionDenied, "only the group's owner may remove members or invitations"))
        #expect(try f.call("groups.leave", #"{"group_id":\#(group)}"#, as: ann)["left"] as? Bool == true)
        let after = try f.call("groups.get", #"{"group_id":\#(group)}"#, as: ben)
        #expect(f.ids(after, "members") == [ben, cat])
        #expect((after["members"] as? [[String: Any]])?.first?["role"] as? String == "owner")
        #expect(f.refusal("groups.get", #"{"group_id":\#(group)}"#, as: ann) == "not_found group_id")
        // The new owner removes a member and cancels an invitation.
        #expect(try f.call("groups.remove", #"{"group_id":\#(group),"user_id":\#(dan)}"#, as: ben)["removed"] as? Bool == true)
        #expect(f.refusal("groups.accept", #"{"group_id":\#(group)}"#, as: dan) == "not_found group_id")
        #expect(f.error("groups.remove", #"{"group_id":\#(group),"user_id":\#(dan)}"#, as: ben)
            == ServiceError(.notFound, "user \(dan) is neither a member of group \(group) nor invited", field: "user_id"))
        #expect(f.error("groups.remove", #"{"group_id":\#(group),"user_id":\#(ben)}"#, as: ben)
            == ServiceError.invalid("user_id", "cannot remove yourself; leave the group (groups.leave)"))
        try f.call("groups.remove", #"{"group_id":\#(group),"user_id":\#(cat)}"#, as: ben)
        #expect(f.refusal("groups.get", #"{"group_id":\#(group)}"#, as: cat) == "not_found group_id")
        // An invitation outlives nothing: the last member leaves, the group and its invitations go.
        try f.call("groups.invite", #"{"group_id":\#(group),"username":"dan"}"#, as: ben)
        try f.call("groups.leave", #"{"group_id":\#(group)}"#, as: ben)
        #expect(try f.count("groups") == 0 && f.count("group_invitations") == 0 && f.count("group_members") == 0)
        #expect(f.refusal("groups.accept", #"{"group_id":\#(group)}"#, as: dan) == "not_found group_id")
    }

    @Test func theOwnerCancelsAnInvitationOfSomeoneWhoBlocksThem() throws {
        let f = try SocialFixture()
        let ann = try f.register("ann"), ben = try f.register("ben"), cat = try f.register("cat")
        let group = try f.group("Trip", owner: ann)
        try f.join(group, "ben", id: ben, invitedBy: ann)
        // Ben invites Cat, who blocks Ann, the owner: Ann still sees and cancels it.
        try f.call("groups.invite", #"{"group_id":\#(group),"username":"cat"}"#, as: ben)
        try f.call("social.block", #"{"user_id":\#(ann)}"#, as: cat)
        #expect(f.ids(try f.call("groups.get", #"{"group_id":\#(group)}"#, as: ann), "invitations") == [cat])
        try f.call("groups.remove", #"{"group_id":\#(group),"user_id":\#(cat)}"#, as: ann)
        #expect(try f.count("group_invitations") == 0)
    }

    @Test func fiftyMembersAndInvitationsAGroup() throws {
        let f = try SocialFixture()
        let ann = try f.register("ann")
        let group = try f.group("Big", owner: ann)
        let users = try f.addUsers(50, prefix: "mem")
        for i in 0..<25 { try f.join(group, "mem\(i)", id: users[i], invitedBy: ann) }
        for i in 25..<49 { try f.call("groups.invite", #"{"group_id":\#(group),"username":"mem\#(i)"}"#, as: ann) }
        #expect(f.error("groups.invite", #"{"group_id":\#(group),"username":"mem49"}"#, as: users[0])
            == ServiceError(.conflict, "group \(group) has 50 members and invitations, the most", field: "group_id"))
        // Full, yet one already there is told so first: a member, or invited (answered again).
        #expect(f.error("groups.invite", #"{"group_id":\#(group),"username":"mem3"}"#, as: ann)
            == ServiceError(.alreadyExists, "mem3 is a member already", field: "username"))
        #expect(try f.call("groups.invite", #"{"group_id":\#(group),"username":"mem30"}"#, as: ann)["invited"] as? Bool == true)
        // Accepting does not grow the count; cancelling an invitation makes room.
        try f.call("groups.accept", #"{"group_id":\#(group)}"#, as: users[25])
        #expect(f.refusal("groups.invite", #"{"group_id":\#(group),"username":"mem49"}"#, as: ann) == "conflict group_id")
        try f.call("groups.remove", #"{"group_id":\#(group),"user_id":\#(users[26])}"#, as: ann)
        try f.call("groups.invite", #"{"group_id":\#(group),"username":"mem49"}"#, as: ann)
        #expect(try f.count("group_members", "group_id = ?", group) + f.count("group_invitations", "group_id = ?", group) == 50)
    }

    @Test func twentyGroupsAUserAndAcceptingATwentyFirstIsRefused() throws {
        let f = try SocialFixture()
        let ann = try f.register("ann"), ben = try f.register("ben")
        for i in 0..<20 { _ = try f.group("g\(i)", owner: ann) }
        #expect(f.error("groups.create", #"{"name":"one more"}"#, as: ann)
            == ServiceError(.conflict, "you are in 20 groups, the most; leave one (groups.leave) first", field: "name"))
        let other = try f.group("Ben's", owner: ben)
        try f.call("groups.invite", #"{"group_id":\#(other),"username":"ann"}"#, as: ben)
        #expect(f.error("groups.accept", #"{"group_id":\#(other)}"#, as: ann)
            == ServiceError(.conflict, "you are in 20 groups, the most; leave one (groups.leave) first", field: "group_id"))
        // The invitation waits while she leaves one.
        let first = int(((try f.call("groups.list", as: ann))["groups"] as? [[String: Any]])?.first?["id"])
        try f.call("groups.leave", #"{"group_id":\#(first)}"#, as: ann)
        try f.call("groups.accept", #"{"group_id":\#(other)}"#, as: ann)
        #expect((try f.call("groups.list", as: ann)["groups"] as? [Any])?.count == 20)
    }

    @Test func pendingInvitationsAndInvitesAreBounded() throws {
        let f = try SocialFixture()
        let victim = try f.register("victim")
        let owners = try f.addUsers(6, prefix: "own")
        var groups: [Int64] = []
        for owner in owners { for i in 0..<17 { groups.append(try f.group("g\(i)", owner: owner)) } }
        // 100 invitations wait for one user at most; the 101st is refused.
        for (i, group) in groups.prefix(100).enumerated() {
            try f.call("groups.invite", #"{"group_id":\#(group),"username":"victim"}"#, as: owners[i / 17])
        }
        #expect(f.error("groups.invite", #"{"group_id":\#(groups[100]),"username":"victim"}"#, as: owners[5])
            == ServiceError(.conflict, "victim has 100 invitations waiting, the most", field: "username"))
        try f.call("groups.decline", #"{"group_id":\#(groups[0])}"#, as: victim)
        try f.call("groups.invite", #"{"group_id":\#(groups[100]),"username":"victim"}"#, as: owners[5])
        #expect((try f.call("groups.list", as: victim)["invitations"] as? [Any])?.count == 100)

        // One user sends at most 60 invitations a minute.
        let spammer = try f.register("spammer")
        let targets = try f.addUsers(61, prefix: "tgt")
        let a = try f.group("a", owner: spammer), b = try f.group("b", owner: spammer)
        for i in 0..<60 { try f.call("groups.invite", #"{"group_id":\#(i < 45 ? a : b),"username":"tgt\#(i)"}"#, as: spammer) }
        #expect(f.error("groups.invite", #"{"group_id":\#(b),"username":"tgt60"}"#, as: spammer)
            == ServiceError(.rateLimited, "at most 60 invitations a minute; try again in a moment"))
        f.clock.advance(60)
        try f.call("groups.invite", #"{"group_id":\#(b),"username":"tgt60"}"#, as: spammer)
        #expect(targets.count == 61)
    }

    @Test func blockedUsersAreHiddenInGroupsAndTheirInvitationsUnseen() throws {
        let f = try SocialFixture()
        let ann = try f.register("ann"), ben = try f.register("ben"), cat = try f.register("cat")
        let group = try f.group("Trip", owner: ann)
        try f.join(group, "ben", id: ben, invitedBy: ann)
        try f.join(group, "cat", id: cat, invitedBy: ann)
        // Cat blocks Ben: she no longer sees him in the group; Ann sees both. Ben sees Cat as
        // any member, not sharing (her positions never reach him, though she shares).
        try f.call("groups.sharing", #"{"group_id":\#(group),"on":true}"#, as: cat)
        try f.call("social.block", #"{"user_id":\#(ben)}"#, as: cat)
        #expect(f.ids(try f.call("groups.get", #"{"group_id":\#(group)}"#, as: cat), "members") == [ann, cat])
        let seenByBen = try f.call("groups.get", #"{"group_id":\#(group)}"#, as: ben)["members"] as? [[String: Any]] ?? []
        #expect(seenByBen.map { int(($0["user"] as? [String: Any])?["id"]) } == [ann, ben, cat])
        #expect(seenByBen.map { $0["sharing"] as? Bool } == [false, false, false] && seenByBen.allSatisfy { $0["blocked"] == nil })
        let seenByAnn = try f.call("groups.get", #"{"group_id":\#(group)}"#, as: ann)["members"] as? [[String: Any]] ?? []
        #expect(seenByAnn.map { $0["sharing"] as? Bool } == [false, false, true])
        #expect(int((try f.call("groups.list", as: ben)["groups"] as? [[String: Any]])?.first?["members"]) == 3)
        #expect(f.ids(try f.call("groups.get", #"{"group_id":\#(group)}"#, as: ann), "members") == [ann, ben, cat])
        #expect(int((try f.call("groups.list", as: cat)["groups"] as? [[String: Any]])?.first?["members"]) == 2)

        // Ben (blocked) invites Cat to his own group: answered, kept and shown to the group as a
        // real invitation, but Cat never sees it.
        let bens = try f.group("Ben's", owner: ben)
        let pushes = try f.pushes()
        let unseen = try f.call("groups.invite", #"{"group_id":\#(bens),"username":"cat"}"#, as: ben)
        let real = try f.call("groups.invite", #"{"group_id":\#(bens),"username":"ann"}"#, as: ben)
        #expect(unseen["invited"] as? Bool == true && Set(unseen.keys) == Set(real.keys))
        #expect(try pushes.next()?.userId == ann)  // the only push: Ann's
        let shown = try f.call("groups.get", #"{"group_id":\#(bens)}"#, as: ben)["invitations"] as? [[String: Any]] ?? []
        #expect(shown.map { int(($0["user"] as? [String: Any])?["id"]) } == [cat, ann] && shown.allSatisfy { $0["blocked"] == nil })
        #expect((try f.call("groups.list", as: cat)["invitations"] as? [Any])?.isEmpty == true)
        #expect(f.refusal("groups.accept", #"{"group_id":\#(bens)}"#, as: cat) == "not_found group_id")
        #expect(f.refusal("groups.decline", #"{"group_id":\#(bens)}"#, as: cat) == "not_found group_id")
        #expect(try f.count("group_invitations", "user_id = ?", cat) == 1)
        // Inviting again answers the same; the owner cancels it as any other.
        #expect(try f.call("groups.invite", #"{"group_id":\#(bens),"username":"cat"}"#, as: ben)["invited"] as? Bool == true)
        try f.call("groups.remove", #"{"group_id":\#(bens),"user_id":\#(cat)}"#, as: ben)
        #expect(try f.count("group_invitations", "user_id = ?", cat) == 0)
        // Cat (the blocker) must unblock Ben to invite him.
        let cats = try f.group("Cat's", owner: cat)
        #expect(f.error("groups.invite", #"{"group_id":\#(cats),"username":"ben"}"#, as: cat)
            == ServiceError(.conflict, "you block user \(ben); unblock them (social.unblock) first", field: "username"))

        // Ben's invitation of Dan to the shared group is not shown to Cat, nor Ben as its sender.
        let dan = try f.register("dan")
        try f.call("groups.invite", #"{"group_id":\#(group),"username":"dan"}"#, as: ben)
        let pending = try f.call("groups.get", #"{"group_id":\#(group)}"#, as: cat)["invitations"] as? [[String: Any]]
        #expect(pending?.count == 1 && int((pending?.first?["user"] as? [String: Any])?["id"]) == dan && pending?.first?["invited_by"] == nil)
        // The owner sees and removes any member, whatever the blocks: one who blocks her (shown
        // unmarked, as the block is theirs), and one she blocks (marked).
        try f.call("social.block", #"{"user_id":\#(ann)}"#, as: ben)
        try f.call("social.block", #"{"user_id":\#(cat)}"#, as: ann)
        let members = try f.call("groups.get", #"{"group_id":\#(group)}"#, as: ann)["members"] as? [[String: Any]] ?? []
        #expect(members.map { int(($0["user"] as? [String: Any])?["id"]) } == [ann, ben, cat])
        #expect(members.map { $0["blocked"] as? Bool } == [nil, nil, true])
        #expect(int((try f.call("groups.list", as: ann)["groups"] as? [[String: Any]])?.first?["members"]) == 3)
        try f.call("groups.remove", #"{"group_id":\#(group),"user_id":\#(ben)}"#, as: ann)
        #expect(f.refusal("groups.get", #"{"group_id":\#(group)}"#, as: ben) == "not_found group_id")
        #expect(f.refusal("chat.history", #"{"conversation":"group:\#(group)"}"#, as: ben) != "ok")
        try f.call("groups.remove", #"{"group_id":\#(group),"user_id":\#(cat)}"#, as: ann)
        #expect(f.refusal("groups.get", #"{"group_id":\#(group)}"#, as: cat) == "not_found group_id")

        // Blocking ends the invitations between the two: Ann's to Ben's group is gone.
        #expect(try f.count("group_invitations", "user_id = ? AND invited_by = ?", ann, ben) == 0)
    }

    @Test func deletingAnAccountLeavesItsGroupsAndForgetsItsBlocks() throws {
        let f = try SocialFixture()
        let ann = try f.register("ann"), ben = try f.register("ben"), cat = try f.register("cat")
        let shared = try f.group("Shared", owner: ann)
        let alone = try f.group("Alone", owner: ann)
        try f.join(shared, "ben", id: ben, invitedBy: ann)
        try f.call("groups.invite", #"{"group_id":\#(shared),"username":"cat"}"#, as: ann)
        let bens = try f.group("Ben's", owner: ben)
        try f.call("groups.invite", #"{"group_id":\#(bens),"username":"ann"}"#, as: ben)
        try f.call("social.block", #"{"user_id":\#(cat)}"#, as: ann)
        try f.call("social.block", #"{"user_id":\#(ann)}"#, as: ben)
        try f.call("auth.delete", #"{"password":"\#(SocialFixture.password)"}"#, as: ann)
        // Ben owns the shared group now; Ann's group alone is gone; her invitations, sent and
        // received, and her blocks both ways are gone.
        let view = try f.call("groups.get", #"{"group_id":\#(shared)}"#, as: ben)
        #expect(f.ids(view, "members") == [ben] && (view["members"] as? [[String: Any]])?.first?["role"] as? String == "owner")
        #expect(f.ids(view, "invitations") == [])
        #expect(f.refusal("groups.get", #"{"group_id":\#(alone)}"#, as: ben) == "not_found group_id")
        for (table, column) in [("group_members", "user_id"), ("group_invitations", "user_id"), ("group_invitations", "invited_by"),
                                ("blocks", "blocker_id"), ("blocks", "blocked_id"), ("positions", "user_id")] {
            #expect(try f.count(table, "\(column) = ?", ann) == 0, "\(table).\(column)")
        }
        #expect(try f.count("groups", "id = ?", alone) == 0)
    }
}
