import Bus
import Contracts
import Foundation
import SocialService
import Storage
import Testing
import TestSupport

/// Group conversations and blocks in chat over real sockets: messages reach current members
/// only, every method is `not_found` to a non-member and a removed member, a member sees the
/// messages from when they joined, and a block keeps messages from the blocker (direct) or
/// between the pair (in a group) without telling the blocked user.
@Suite struct ChatPrivacyTests {
    /// A group of `owner` with the members `others` (username, id).
    func group(_ f: SocialFixture, owner: Int64, _ others: [(String, Int64)]) throws -> Int64 {
        let group = try f.group("Trip", owner: owner)
        for (username, id) in others { try f.join(group, username, id: id, invitedBy: owner) }
        return group
    }

    /// `code field message` of every chat method on conversation `name` as `user`.
    func refusals(_ f: SocialFixture, _ name: String, as user: Int64?) -> [String] {
        [("chat.send", #"{"to":"\#(name)","text":"Hi","client_msg_id":"probe-\#(UUID().uuidString)"}"#),
         ("chat.history", #"{"conversation":"\#(name)"}"#), ("chat.read", #"{"conversation":"\#(name)","up_to":1}"#)].map { type, body in
            guard let error = f.error(type, body, as: user) else { return "\(type) ok" }
            return "\(type) \(error.code.rawValue) \(error.field ?? "-") \(error.message)"
        }
    }

    func conversationNames(_ f: SocialFixture, of user: Int64) throws -> [String] {
        (try f.call("chat.conversations", as: user)["conversations"] as? [[String: Any]] ?? []).compactMap { $0["conversation"] as? String }
    }

    @Test func groupMessagesReachCurrentMembersOnlyAndNonMembersLearnNothing() throws {
        let f = try SocialFixture()
        let ann = try f.register("ann"), ben = try f.register("ben"), cat = try f.register("cat"), dan = try f.register("dan")
        let trip = try group(f, owner: ann, [("ben", ben), ("cat", cat)])
        let name = "group:\(trip)"
        let listener = try f.pushes()
        #expect(try f.send("Where are we meeting?", to: name, as: ann, id: "g-1", origin: "gw/ann-phone") as NSDictionary
            == ["conversation": name, "seq": 1, "at": "2026-06-01T00:00:00.000Z", "client_msg_id": "g-1"])
        let first = try listener.take(3).sorted { $0.user < $1.user }
        #expect(first.map(\.line) == [ann, ben, cat].map { "\($0) chat.message \(name) 1 Where are we meeting?" })
        #expect(first.map(\.origin) == ["gw/ann-phone", nil, nil])
        #expect(try f.send("At the steps", to: name, as: ben)["seq"] as? Int == 2)
        #expect(try listener.take(3).count == 3)
        #expect(try f.messages(name, as: cat) == ["2 At the steps", "1 Where are we meeting?"])

        // A non-member, and a group that does not exist, get the same answer for everything.
        func absent(_ group: String) -> [String] {
            ["chat.send not_found to no group with id \(group.dropFirst(6))", "chat.history not_found conversation no group with id \(group.dropFirst(6))",
             "chat.read not_found conversation no group with id \(group.dropFirst(6))"]
        }
        #expect(refusals(f, name, as: dan) == absent(name))
        #expect(refusals(f, "group:999", as: dan) == absent("group:999"))
        #expect(refusals(f, name, as: nil) == ["chat.send", "chat.history", "chat.read"].map { "\($0) unauthenticated - \($0) needs a signed-in user" })
        #expect(try conversationNames(f, of: dan) == [])

        // Cat leaves and Ben is removed: from then on neither hears, reads or lists the group.
        try f.call("groups.leave", #"{"group_id":\#(trip)}"#, as: cat)
        try f.call("groups.remove", #"{"group_id":\#(trip),"user_id":\#(ben)}"#, as: ann)
        for gone in [cat, ben] {
            #expect(refusals(f, name, as: gone) == absent(name))
            #expect(try conversationNames(f, of: gone) == [])
        }
        try f.send("Just me now", to: name, as: ann)
        try f.send("Hi Ann", to: "user:\(ann)", as: dan)
        // Ann's two pushes (her own message, Dan's) and Dan's own: none for Cat or Ben.
        #expect(try listener.take(3).map(\.line).sorted() == [
            "\(ann) chat.message \(name) 3 Just me now", "\(ann) chat.message user:\(dan) 1 Hi Ann", "\(dan) chat.message user:\(ann) 1 Hi Ann",
        ])
        #expect(try f.count("chat_participants", "user_id IN (?, ?) AND peer_id IS NULL", ben, cat) == 0)
    }

    @Test func aMemberSeesTheMessagesFromWhenTheyJoined() throws {
        let f = try SocialFixture()
        let ann = try f.register("ann"), ben = try f.register("ben"), eve = try f.register("eve")
        let trip = try group(f, owner: ann, [("ben", ben)])
        let name = "group:\(trip)"
        try f.send("before Eve", to: name, as: ann)
        try f.send("still before", to: name, as: ben)
        try f.join(trip, "eve", id: eve, invitedBy: ann)
        #expect(try f.messages(name, as: eve) == [])
        #expect(try f.call("chat.read", #"{"conversation":"\#(name)","up_to":2}"#, as: eve) as NSDictionary == ["conversation": name, "up_to": 0, "unread": 0])
        try f.send("Welcome Eve", to: name, as: ben)
        #expect(try f.messages(name, as: eve) == ["3 Welcome Eve"])
        #expect(try f.messages(name, as: ann) == ["3 Welcome Eve", "2 still before", "1 before Eve"])
        // Her list shows the group with what she can read; reading past what she sees stops there.
        let entry = try #require((try f.call("chat.conversations", as: eve)["conversations"] as? [[String: Any]])?.first)
        #expect(entry["conversation"] as? String == name && entry["unread"] as? Int == 1 && entry["read_up_to"] as? Int == 2)
        #expect(entry["group"] as? NSDictionary == ["id": trip, "name": "Trip"])
        #expect(entry["with"] == nil)
        #expect(try f.call("chat.read", #"{"conversation":"\#(name)","up_to":99}"#, as: eve)["unread"] as? Int == 0)
        // Leaving and coming back: what was said meanwhile stays unseen.
        try f.call("groups.leave", #"{"group_id":\#(trip)}"#, as: eve)
        try f.send("while Eve was away", to: name, as: ann)
        try f.join(trip, "eve", id: eve, invitedBy: ann)
        try f.send("Eve is back", to: name, as: ann)
        #expect(try f.messages(name, as: eve) == ["5 Eve is back"])
    }

    @Test func aBlockedSendersDirectMessagesAreAcceptedAndNeverReachTheBlocker() throws {
        let f = try SocialFixture()
        let ann = try f.register("ann"), ben = try f.register("ben")
        try f.send("Hi Ben", to: "user:\(ben)", as: ann)
        try f.call("social.block", #"{"user_id":\#(ben)}"#, as: ann)
        let listener = try f.pushes()
        // Ben is answered as always, and his other connections hear his message; Ann does not.
        let sent = try f.send("Why no answer?", to: "user:\(ann)", as: ben, origin: "gw/ben-phone")
        #expect(sent["seq"] as? Int == 2 && sent["conversation"] as? String == "user:\(ann)")
        #expect(try listener.take(1).map { "\($0.line) \($0.origin ?? "-")" } == ["\(ben) chat.message user:\(ann) 2 Why no answer? gw/ben-phone"])
        #expect(try f.messages("user:\(ann)", as: ben) == ["2 Why no answer?", "1 Hi Ben"])
        #expect(try f.messages("user:\(ben)", as: ann) == ["1 Hi Ben"])
        let annList = try #require((try f.call("chat.conversations", as: ann)["conversations"] as? [[String: Any]])?.first)
        #expect(annList["unread"] as? Int == 0 && (annList["last_message"] as? [String: Any])?["seq"] as? Int == 1)
        #expect(try f.call("chat.read", #"{"conversation":"user:\#(ben)","up_to":2}"#, as: ann)["up_to"] as? Int == 1)
        // Ann must unblock before she writes to Ben.
        #expect(f.sendError(#"{"to":"user:\#(ben)","text":"Hm","client_msg_id":"a-2"}"#, as: ann)
            == ServiceError(.conflict, "you block user \(ben); unblock them (social.unblock) first", field: "to"))
        try f.call("social.unblock", #"{"user_id":\#(ben)}"#, as: ann)
        try f.send("Sorry", to: "user:\(ben)", as: ann)
        try f.send("OK", to: "user:\(ann)", as: ben)
        // The gap (2) is Ann's own doing; what came after the block reaches her.
        #expect(try f.messages("user:\(ben)", as: ann) == ["4 OK", "3 Sorry", "1 Hi Ben"])
        // Ann's read mark (pushed to her other connections), then the four pushes of the two messages.
        #expect(try listener.take(5).filter { $0.user == ann }.map(\.line) == ["\(ann) chat.read user:\(ben) up_to 1", "\(ann) chat.message user:\(ben) 3 Sorry", "\(ann) chat.message user:\(ben) 4 OK"])
    }

    @Test func messagesDroppedByABlockCountTowardsTheSendersRate() throws {
        let f = try SocialFixture()
        let ann = try f.register("ann"), ben = try f.register("ben")
        try f.call("social.block", #"{"user_id":\#(ben)}"#, as: ann)
        for i in 1...20 { try f.send("spam \(i)", to: "user:\(ann)", as: ben) }
        #expect(f.sendError(#"{"to":"user:\#(ann)","text":"more","client_msg_id":"b-21"}"#, as: ben)
            == ServiceError(.rateLimited, "too many messages: at most 20 in 10 seconds; try again in 10 seconds"))
        #expect(try f.messages("user:\(ben)", as: ann) == [])
        #expect(try f.count("chat_hidden", "user_id = ?", ann) == 20)
    }

    @Test func inAGroupNoMemberReceivesMessagesAcrossABlockEitherWay() throws {
        let f = try SocialFixture()
        let ann = try f.register("ann"), ben = try f.register("ben"), cat = try f.register("cat")
        let trip = try group(f, owner: ann, [("ben", ben), ("cat", cat)])
        let name = "group:\(trip)"
        try f.call("social.block", #"{"user_id":\#(ben)}"#, as: cat)
        let listener = try f.pushes()
        try f.send("from Ben", to: name, as: ben)
        #expect(try listener.take(2).map(\.user).sorted() == [ann, ben])
        try f.send("from Cat", to: name, as: cat)
        #expect(try listener.take(2).map(\.user).sorted() == [ann, cat])
        try f.send("from Ann", to: name, as: ann)
        #expect(try listener.take(3).map(\.user).sorted() == [ann, ben, cat])
        #expect(try f.messages(name, as: ann) == ["3 from Ann", "2 from Cat", "1 from Ben"])
        #expect(try f.messages(name, as: ben) == ["3 from Ann", "1 from Ben"])
        #expect(try f.messages(name, as: cat) == ["3 from Ann", "2 from Cat"])
        let unread = { (user: Int64) throws -> Int? in
            ((try f.call("chat.conversations", as: user)["conversations"] as? [[String: Any]])?.first?["unread"] as? Int)
        }
        #expect(try unread(ann) == 2)
        #expect(try unread(ben) == 1)
        #expect(try unread(cat) == 1)
    }

    @Test func aGroupsConversationGoesWithTheGroupAndADeletedMembersMessagesStayBlanked() throws {
        let f = try SocialFixture()
        let ann = try f.register("annika.q"), ben = try f.register("ben")
        let trip = try group(f, owner: ann, [("ben", ben)])
        let name = "group:\(trip)"
        try f.send("ann in the group", to: name, as: ann)
        try f.send("ben in the group", to: name, as: ben)
        try f.call("auth.delete", #"{"password":"\#(SocialFixture.password)"}"#, as: ann)
        let messages = try #require(try f.history(name, as: ben)["messages"] as? [[String: Any]])
        #expect(messages.map { $0["seq"] as? Int } == [2, 1] && messages.map { $0["text"] as? String } == ["ben in the group", ""])
        #expect(messages.last?["from"] as? NSDictionary == ["deleted": true, "name": "deleted user"])
        #expect(try f.count("chat_participants", "user_id = ?", ann) == 0)
        // The last member leaves: the group, its conversation and its messages are gone.
        try f.call("groups.leave", #"{"group_id":\#(trip)}"#, as: ben)
        for table in ["chat_conversations", "chat_messages", "chat_participants"] { #expect(try f.count(table) == 0, "\(table)") }
    }

    /// A group's conversation takes at most 30 messages in 10 seconds from all its members
    /// together (the attack: 50 members at 20 each in 10 s delayed everyone's pushes); each
    /// member is still within their own rate, and other conversations are not held back.
    @Test func aBusyGroupIsLimitedTo30MessagesIn10SecondsOfAllItsMembers() throws {
        let f = try SocialFixture()
        let owner = try f.register("owner")
        let members = try f.addUsers(3, prefix: "member")
        let group = try f.group("Busy", owner: owner)
        for (index, member) in members.enumerated() { try f.join(group, "member\(index)", id: member, invitedBy: owner) }
        let senders = [owner] + members
        for i in 0..<30 { try f.send("g\(i)", to: "group:\(group)", as: senders[i % senders.count]) }
        let busy = ServiceError(.rateLimited, "this group's conversation is busy: at most 30 messages of all its members in 10 seconds; try again in 10 seconds")
        for sender in senders { #expect(f.sendError(#"{"to":"group:\#(group)","text":"more","client_msg_id":"x\#(sender)"}"#, as: sender) == busy) }
        // The members may still write to each other directly.
        #expect(try f.send("direct", to: "user:\(owner)", as: members[0])["seq"] as? Int == 1)
        f.clock.advance(9)
        #expect(f.sendError(#"{"to":"group:\#(group)","text":"more","client_msg_id":"late"}"#, as: owner)?.message.hasSuffix("try again in 1 second") == true)
        f.clock.advance(1)
        #expect(try f.send("again", to: "group:\(group)", as: owner)["seq"] as? Int == 31)
        // Refused messages took no number.
        #expect(try Database(path: f.databasePath).scalarInt("SELECT count(*) FROM chat_messages") == 32)
    }
}
