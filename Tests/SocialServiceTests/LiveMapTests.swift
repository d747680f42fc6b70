import Bus
import Contracts
import Foundation
import SocialService
import Testing
import TestSupport

/// The live map over real sockets: opt-in sharing, positions checked and bounded, the map with
/// ages, the throttle of `group.position` pushes, following a member, and privacy.
@Suite struct LiveMapTests {
    /// Ann owns a group with Ben in it.
    struct Trip {
        let f: SocialFixture
        let ann: Int64, ben: Int64, group: Int64

        init() throws {
            f = try SocialFixture()
            ann = try f.register("ann")
            ben = try f.register("ben")
            group = try f.group("Trip", owner: ann)
            try f.join(group, "ben", id: ben, invitedBy: ann)
        }

        func share(_ user: Int64, _ on: Bool = true) throws {
            try f.call("groups.sharing", #"{"group_id":\#(group),"on":\#(on)}"#, as: user)
        }

        @discardableResult
        func report(_ user: Int64, lat: Double, lon: Double = 151.2, extra: String = "", origin: String = "gw/1") throws -> [String: Any] {
            try f.call("groups.position", #"{"lat":\#(lat),"lon":\#(lon)\#(extra)}"#, as: user, origin: origin)
        }

        func map(as user: Int64) throws -> [[String: Any]] {
            try f.call("groups.map", #"{"group_id":\#(group)}"#, as: user)["positions"] as? [[String: Any]] ?? []
        }
    }

    /// The next push to `user` on `topic` (others passed over), within about 2 s.
    func next(_ listener: PushListener, to user: Int64, topic: String = "group.position") throws -> Push? {
        for _ in 0..<20 {
            guard let push = try listener.next() else { return nil }
            if push.userId == user && push.topic == topic { return push }
        }
        return nil
    }

    @Test func sharingIsOffUntilTurnedOnAndAPositionIsKeptOnlyWhileShared() throws {
        let t = try Trip()
        let first = try t.report(t.ann, lat: -33.85)
        #expect(first["kept"] as? Bool == false && (first["shared_with"] as? [Any])?.isEmpty == true && first["at"] as? String == "2026-06-01T00:00:00.000Z")
        #expect(try t.f.count("positions") == 0)
        #expect(try t.map(as: t.ben).isEmpty)
        let on = try t.f.call("groups.sharing", #"{"group_id":\#(t.group),"on":true}"#, as: t.ann)
        #expect(int(on["group_id"]) == t.group && on["sharing"] as? Bool == true)
        let shared = try t.report(t.ann, lat: -33.86, extra: #","accuracy_m":12.5,"heading_deg":90,"speed_mps":1.4"#)
        #expect(shared["kept"] as? Bool == true && (shared["shared_with"] as? [NSNumber])?.map(\.int64Value) == [t.group])
        let dots = try t.map(as: t.ben)
        #expect(dots.count == 1 && int((dots.first?["user"] as? [String: Any])?["id"]) == t.ann)
        #expect(dots.first?["lat"] as? Double == -33.86 && dots.first?["accuracy_m"] as? Double == 12.5 && dots.first?["heading_deg"] as? Double == 90
            && dots.first?["speed_mps"] as? Double == 1.4 && int(dots.first?["age_s"]) == 0 && dots.first?["stale"] as? Bool == false)
        #expect((try t.f.call("groups.get", #"{"group_id":\#(t.group)}"#, as: t.ben)["members"] as? [[String: Any]])?.first?["sharing"] as? Bool == true)
        // Off again: the position goes.
        try t.share(t.ann, false)
        #expect(try t.f.count("positions") == 0 && t.map(as: t.ben).isEmpty)
        // Sharing, then leaving the group: the same.
        try t.share(t.ann)
        try t.report(t.ann, lat: -33.87)
        try t.f.call("groups.remove", #"{"group_id":\#(t.group),"user_id":\#(t.ben)}"#, as: t.ann)
        try t.f.call("groups.leave", #"{"group_id":\#(t.group)}"#, as: t.ann)
        #expect(try t.f.count("positions") == 0)
    }

    @Test func aPositionGoesOnlyToTheGroupsSharedWith() throws {
        let t = try Trip()
        let cat = try t.f.register("cat")
        let other = try t.f.group("Other", owner: t.ann)
        try t.f.join(other, "cat", id: cat, invitedBy: t.ann)
        try t.share(t.ann)
        let pushes = try t.f.pushes()
        let first = try t.report(t.ann, lat: 1)
        #expect((first["shared_with"] as? [NSNumber])?.map(\.int64Value) == [t.group])
        #expect((try t.f.call("groups.map", #"{"group_id":\#(other)}"#, as: cat)["positions"] as? [Any])?.isEmpty == true)
        // Cat hears nothing until Ann shares with the other group too: her first push is the second position.
        try t.f.call("groups.sharing", #"{"group_id":\#(other),"on":true}"#, as: t.ann)
        t.f.clock.advance(1)
        try t.report(t.ann, lat: 2)
        // Pushed group by group (each to its members in id order): Ben's of the first group, then Cat's.
        #expect(int(pushBody(try next(pushes, to: t.ben))["group_id"]) == t.group)
        let cats = pushBody(try next(pushes, to: cat))
        #expect(cats["lat"] as? Double == 2 && int(cats["group_id"]) == other)
    }

    @Test func aPositionIsCheckedFieldByField() throws {
        let t = try Trip()
        let bad: [(String, String, String)] = [
            (#"{"lat":90.5,"lon":0}"#, "lat", "must be a number in [-90, 90]"),
            (#"{"lat":0,"lon":-180.01}"#, "lon", "must be a number in [-180, 180]"),
            (#"{"lat":0,"lon":0,"accuracy_m":-1}"#, "accuracy_m", "must be a number in [0, 100000]"),
            (#"{"lat":0,"lon":0,"heading_deg":360}"#, "heading_deg", "must be a number of degrees from 0 up to but not including 360"),
            (#"{"lat":0,"lon":0,"speed_mps":1e6}"#, "speed_mps", "must be a number in [0, 1000]"),
        ]
        for (body, field, message) in bad {
            #expect(t.f.error("groups.position", body, as: t.ann) == ServiceError.invalid(field, message), "\(body)")
        }
        #expect(t.f.refusal("groups.position", #"{"lat":"north","lon":0}"#, as: t.ann) == "invalid_argument lat")
        #expect(t.f.refusal("groups.position", #"{"lon":0}"#, as: t.ann) == "invalid_argument lat")
        #expect(t.f.refusal("groups.position", #"{"lat":0,"lon":0}"#) == "unauthenticated")
        #expect(t.f.refusal("groups.sharing", #"{"group_id":\#(t.group),"on":"yes"}"#, as: t.ann) == "invalid_argument on")
    }

    @Test func tenPositionsASecondAtMost() throws {
        let t = try Trip()
        for i in 0..<10 { try t.report(t.ann, lat: Double(i)) }
        #expect(t.f.error("groups.position", #"{"lat":1,"lon":1}"#, as: t.ann)
            == ServiceError(.rateLimited, "at most 10 positions a second; send them less often"))
        // Each user their own: Ben is not slowed by Ann.
        try t.report(t.ben, lat: 1)
        t.f.clock.advance(1)
        try t.report(t.ann, lat: 1)
    }

    @Test func aBurstOfPositionsGivesOnePushASecondWithTheLatest() throws {
        let t = try Trip()
        try t.share(t.ann)
        let pushes = try t.f.pushes()
        for i in 1...5 { try t.report(t.ann, lat: Double(i), origin: "gw/ann-phone") }
        let first = try next(pushes, to: t.ben)
        #expect(pushBody(first)["lat"] as? Double == 1)
        #expect(first?.coalesce == "group.position:\(t.ann)" && first?.origin == "gw/ann-phone")
        let body = pushBody(first)
        #expect(int(body["group_id"]) == t.group && int(body["user_id"]) == t.ann && body["at"] as? String == "2026-06-01T00:00:00.000Z")
        #expect((body["group_ids"] as? [NSNumber])?.map(\.int64Value) == [t.group])
        // Ann's other devices hear it too (her phone, the origin, does not: the gateway sees to that).
        #expect(try t.f.call("groups.map", #"{"group_id":\#(t.group)}"#, as: t.ann)["positions"] != nil)
        // Held within the second; when it ends the flush pushes the latest, once.
        t.f.clock.advance(1)
        let second = try next(pushes, to: t.ben)
        #expect(pushBody(second)["lat"] as? Double == 5 && pushBody(second)["at"] as? String == "2026-06-01T00:00:00.000Z")
        // Of the same time, yet another push: its own id (a client drops an id it saw).
        #expect(second?.id != nil && second?.id != first?.id)
        // Nothing more was held: the next push is the next report's, sent at once.
        t.f.clock.advance(1)
        try t.report(t.ann, lat: 6)
        #expect(pushBody(try next(pushes, to: t.ben))["lat"] as? Double == 6)
        // The map has the latest position.
        #expect(try t.map(as: t.ben).first?["lat"] as? Double == 6)
    }

    @Test func aMemberSharingWithManyGroupsOfOneRecipientSendsThemOnePushASecond() throws {
        let t = try Trip()
        let other = try t.f.group("Other", owner: t.ann)
        try t.f.join(other, "ben", id: t.ben, invitedBy: t.ann)
        try t.share(t.ann)
        try t.f.call("groups.sharing", #"{"group_id":\#(other),"on":true}"#, as: t.ann)
        let pushes = try t.f.pushes()
        try t.report(t.ann, lat: 1)
        try t.report(t.ann, lat: 2)
        // One push to Ben within the second, naming both groups, not one per group.
        var bens: [Push] = []
        while let push = try pushes.next() {
            if push.userId == t.ben { bens.append(push) }
        }
        #expect(bens.count == 1)
        let body = pushBody(bens.first)
        #expect((body["group_ids"] as? [NSNumber])?.map(\.int64Value) == [t.group, other] && int(body["group_id"]) == t.group)
        #expect(body["lat"] as? Double == 1 && bens.first?.coalesce == "group.position:\(t.ann)")
        // The second ends: the latest, once.
        t.f.clock.advance(1)
        #expect(pushBody(try next(pushes, to: t.ben))["lat"] as? Double == 2)
        // The map stays per group: both show Ann.
        #expect(try t.map(as: t.ben).first?["lat"] as? Double == 2)
        #expect((try t.f.call("groups.map", #"{"group_id":\#(other)}"#, as: t.ben)["positions"] as? [[String: Any]])?.first?["lat"] as? Double == 2)
    }

    @Test func turningSharingOnShowsNoPositionFromBefore() throws {
        let t = try Trip()
        let other = try t.f.group("Other", owner: t.ann)
        try t.f.join(other, "ben", id: t.ben, invitedBy: t.ann)
        // Ann shares with the other group only: her position is kept for it.
        try t.f.call("groups.sharing", #"{"group_id":\#(other),"on":true}"#, as: t.ann)
        try t.report(t.ann, lat: 1)
        t.f.clock.advance(60)
        try t.share(t.ann)
        #expect(try t.map(as: t.ben).isEmpty)
        #expect((try t.f.call("groups.map", #"{"group_id":\#(other)}"#, as: t.ben)["positions"] as? [Any])?.count == 1)
        // Turned on again while on, it keeps its start.
        try t.share(t.ann)
        try t.report(t.ann, lat: 2)
        #expect(try t.map(as: t.ben).first?["lat"] as? Double == 2)
        // A held position from before sharing began is not pushed to the group either.
        let cat = try t.f.register("cat")
        let third = try t.f.group("Third", owner: t.ann)
        try t.f.join(third, "cat", id: cat, invitedBy: t.ann)
        try t.report(t.ann, lat: 3)  // held: within the second of lat 2
        t.f.clock.advance(0.5)
        try t.f.call("groups.sharing", #"{"group_id":\#(third),"on":true}"#, as: t.ann)
        let pushes = try t.f.pushes()
        t.f.clock.advance(1)
        #expect(pushBody(try next(pushes, to: t.ben))["lat"] as? Double == 3)
        #expect(try next(pushes, to: cat) == nil)
        #expect((try t.f.call("groups.map", #"{"group_id":\#(third)}"#, as: cat)["positions"] as? [Any])?.isEmpty == true)
    }

    @Test func aHeldPositionIsDroppedWhenSharingStops() throws {
        let t = try Trip()
        try t.share(t.ann)
        let pushes = try t.f.pushes()
        try t.report(t.ann, lat: 1)
        try t.report(t.ann, lat: 2)
        #expect(pushBody(try next(pushes, to: t.ben))["lat"] as? Double == 1)
        try t.share(t.ann, false)
        t.f.clock.advance(1)
        try t.share(t.ann)
        try t.report(t.ann, lat: 3)
        // Not 2: the held one went with the sharing.
        #expect(pushBody(try next(pushes, to: t.ben))["lat"] as? Double == 3)
    }

    @Test func theMapShowsAgesMarksStalePositionsAndHidesOldOnes() throws {
        let t = try Trip()
        try t.share(t.ann)
        try t.share(t.ben)
        try t.report(t.ann, lat: 1)
        t.f.clock.advance(599)
        try t.report(t.ben, lat: 2)
        var dots = try t.map(as: t.ann)
        #expect(dots.map { int(($0["user"] as? [String: Any])?["id"]) } == [t.ann, t.ben])
        #expect(dots.map { int($0["age_s"]) } == [599, 0] && dots.map { $0["stale"] as? Bool } == [false, false])
        t.f.clock.advance(2)
        dots = try t.map(as: t.ann)
        #expect(dots.map { $0["stale"] as? Bool } == [true, false] && int(dots.first?["age_s"]) == 601)
        t.f.clock.advance(3_600 - 601 + 1)
        dots = try t.map(as: t.ann)
        #expect(dots.map { int(($0["user"] as? [String: Any])?["id"]) } == [t.ben] && dots.first?["stale"] as? Bool == true)
    }

    @Test func theMapAndItsMethodsAreNotFoundToNonMembers() throws {
        let t = try Trip()
        let eve = try t.f.register("eve"), cat = try t.f.register("cat")
        try t.f.join(t.group, "cat", id: cat, invitedBy: t.ann)
        try t.f.call("groups.remove", #"{"group_id":\#(t.group),"user_id":\#(cat)}"#, as: t.ann)
        try t.share(t.ann)
        try t.report(t.ann, lat: 1)
        // Eve is blocked by the owner too: still a stranger to the group.
        try t.f.call("social.block", #"{"user_id":\#(eve)}"#, as: t.ann)
        let methods: [(String, String)] = [
            ("groups.map", #"{"group_id":\#(t.group)}"#), ("groups.sharing", #"{"group_id":\#(t.group),"on":true}"#),
            ("groups.follow", #"{"group_id":\#(t.group),"user_id":\#(t.ann)}"#),
            ("groups.unfollow", #"{"group_id":\#(t.group),"user_id":\#(t.ann)}"#),
        ]
        for (method, body) in methods {
            for caller in [eve, cat] {
                #expect(t.f.refusal(method, body, as: caller) == "not_found group_id", "\(method) as \(caller)")
            }
            #expect(t.f.refusal(method, body, as: nil) == "unauthenticated", "\(method) without identity")
        }
        // The removed member's report goes to no group.
        let report = try t.report(cat, lat: 5)
        #expect((report["shared_with"] as? [Any])?.isEmpty == true)
    }

    @Test func blockedMembersSeeNoDotAndGetNoPushOfEachOther() throws {
        let t = try Trip()
        let cat = try t.f.register("cat")
        try t.f.join(t.group, "cat", id: cat, invitedBy: t.ann)
        for user in [t.ann, t.ben, cat] { try t.share(user) }
        try t.f.call("social.block", #"{"user_id":\#(t.ben)}"#, as: cat)
        let pushes = try t.f.pushes()
        try t.report(t.ben, lat: 2)
        // Ann hears Ben; Cat does not, and sees no dot of him (nor he of her).
        var heard: [Int64] = []
        while let push = try pushes.next() {
            heard.append(push.userId)
            if heard.count == 2 { break }
        }
        #expect(Set(heard) == [t.ann, t.ben])
        try t.report(cat, lat: 3)
        #expect(try t.map(as: cat).map { int(($0["user"] as? [String: Any])?["id"]) } == [cat])
        #expect(try t.map(as: t.ben).map { int(($0["user"] as? [String: Any])?["id"]) } == [t.ben])
        #expect(try t.map(as: t.ann).count == 2)  // Ben and Cat, who reported
        // Cat may not follow Ben on the map; Ben's follow of Cat is answered and shown to him as
        // any, but tells Cat nothing (no push) and brings Ben none of her positions.
        #expect(t.f.refusal("groups.follow", #"{"group_id":\#(t.group),"user_id":\#(t.ben)}"#, as: cat) == "not_found user_id")
        #expect(try t.f.call("groups.follow", #"{"group_id":\#(t.group),"user_id":\#(cat)}"#, as: t.ben)["following"] as? Bool == true)
        let seenByBen = try t.f.call("groups.get", #"{"group_id":\#(t.group)}"#, as: t.ben)
        #expect(int((seenByBen["following"] as? [String: Any])?["id"]) == cat)
        #expect((try t.f.call("groups.get", #"{"group_id":\#(t.group)}"#, as: cat)["followed_by"] as? [Any])?.isEmpty == true)
        // Cat's own push: to Ann and Cat, never Ben.
        t.f.clock.advance(1)
        try t.report(cat, lat: 4)
        heard = []
        while let push = try pushes.next() {
            if pushBody(push)["lat"] as? Double == 4 { heard.append(push.userId) }
            if heard.count == 2 { break }
        }
        #expect(Set(heard) == [t.ann, cat])
    }

    @Test func followingAMemberTellsThemWho() throws {
        let t = try Trip()
        let cat = try t.f.register("cat"), dan = try t.f.register("dan")
        try t.f.join(t.group, "cat", id: cat, invitedBy: t.ann)
        let pushes = try t.f.pushes()
        let reply = try t.f.call("groups.follow", #"{"group_id":\#(t.group),"user_id":\#(t.ann)}"#, as: t.ben)
        #expect(int(reply["user_id"]) == t.ann && reply["following"] as? Bool == true)
        let push = try next(pushes, to: t.ann, topic: "group.followed")
        #expect(int(pushBody(push)["group_id"]) == t.group && int((pushBody(push)["user"] as? [String: Any])?["id"]) == t.ben)
        let seen = try t.f.call("groups.get", #"{"group_id":\#(t.group)}"#, as: t.ann)
        #expect(f(seen["followed_by"]) == [t.ben])
        #expect(int((try t.f.call("groups.get", #"{"group_id":\#(t.group)}"#, as: t.ben)["following"] as? [String: Any])?["id"]) == t.ann)
        // Again: no second push. Then one member at a time: following Cat ends following Ann.
        try t.f.call("groups.follow", #"{"group_id":\#(t.group),"user_id":\#(t.ann)}"#, as: t.ben)
        try t.f.call("groups.follow", #"{"group_id":\#(t.group),"user_id":\#(cat)}"#, as: t.ben)
        #expect(try next(pushes, to: cat, topic: "group.followed") != nil)
        #expect(f(try t.f.call("groups.get", #"{"group_id":\#(t.group)}"#, as: t.ann)["followed_by"]) == [])
        #expect(f(try t.f.call("groups.get", #"{"group_id":\#(t.group)}"#, as: cat)["followed_by"]) == [t.ben])
        let stopped = try t.f.call("groups.unfollow", #"{"group_id":\#(t.group),"user_id":\#(cat)}"#, as: t.ben)
        #expect(stopped["following"] as? Bool == false)
        #expect(f(try t.f.call("groups.get", #"{"group_id":\#(t.group)}"#, as: cat)["followed_by"]) == [])
        #expect(t.f.error("groups.follow", #"{"group_id":\#(t.group),"user_id":\#(t.ben)}"#, as: t.ben) == ServiceError.invalid("user_id", "cannot follow yourself"))
        #expect(t.f.error("groups.follow", #"{"group_id":\#(t.group),"user_id":\#(dan)}"#, as: t.ben)
            == ServiceError(.notFound, "no member \(dan) in group \(t.group)", field: "user_id"))
        // A member who leaves is no longer followed.
        try t.f.call("groups.follow", #"{"group_id":\#(t.group),"user_id":\#(cat)}"#, as: t.ben)
        try t.f.call("groups.leave", #"{"group_id":\#(t.group)}"#, as: cat)
        #expect(try t.f.call("groups.get", #"{"group_id":\#(t.group)}"#, as: t.ben)["following"] == nil)
        // Follows are bounded, so a member cannot flood another with pushes: Ben has made 4
        // (refusals of the rules not counted), 26 more is 30 in a minute, the most.
        for _ in 0..<26 { try t.f.call("groups.follow", #"{"group_id":\#(t.group),"user_id":\#(t.ann)}"#, as: t.ben) }
        #expect(t.f.error("groups.follow", #"{"group_id":\#(t.group),"user_id":\#(t.ann)}"#, as: t.ben)
            == ServiceError(.rateLimited, "at most 30 follows a minute; try again in a moment"))
    }

    @Test func deletingAnAccountForgetsItsPosition() throws {
        let t = try Trip()
        try t.share(t.ben)
        try t.report(t.ben, lat: 1)
        #expect(try t.f.count("positions", "user_id = ?", t.ben) == 1)
        try t.f.call("auth.delete", #"{"password":"\#(SocialFixture.password)"}"#, as: t.ben)
        #expect(try t.f.count("positions") == 0 && t.map(as: t.ann).isEmpty)
    }

    /// The ids of a list of summaries.
    func f(_ value: Any?) -> [Int64] { (value as? [[String: Any]] ?? []).map { int($0["id"]) } }
}
