import Bus
import Contracts
import Foundation
import ServiceKit
import SocialService
import Storage
import Testing
import TestSupport

extension SocialFixture {
    /// `chat.send` of `text` to `to` as `user`; the id is made from the text unless given.
    @discardableResult
    func send(_ text: String, to: String, as user: Int64, id: String? = nil, origin: String? = nil) throws(ServiceError) -> [String: Any] {
        let clientId = id ?? "m-\(user)-\(UUID().uuidString)"
        let body = #"{"to":"\#(to)","text":\#((try? json(text)) ?? "\"\""),"client_msg_id":"\#(clientId)"}"#
        guard let origin else { return try call("chat.send", body, as: user) }
        return try call("chat.send", body, as: user, origin: origin)
    }

    /// The error of `chat.send` with this body, or nil.
    func sendError(_ body: String, as user: Int64?) -> ServiceError? { error("chat.send", body, as: user) }

    /// A page of `chat.history`.
    func history(_ conversation: String, as user: Int64, before: Int64? = nil, limit: Int? = nil) throws(ServiceError) -> [String: Any] {
        var body = #"{"conversation":"\#(conversation)""#
        if let before { body += #","before":\#(before)"# }
        if let limit { body += #","limit":\#(limit)"# }
        return try call("chat.history", body + "}", as: user)
    }

    /// The sequence numbers and texts of a whole conversation as `user` sees it, newest first.
    func messages(_ conversation: String, as user: Int64) throws -> [String] {
        (try history(conversation, as: user, limit: 50)["messages"] as? [[String: Any]] ?? []).map { "\($0["seq"] as? Int ?? -1) \($0["text"] as? String ?? "?")" }
    }
}

/// A push as a test reads it: the user, origin and topic, and the body as JSON.
struct SeenPush {
    let user: Int64
    let origin: String?
    let topic: String
    let body: [String: Any]

    init(_ push: Push) {
        user = push.userId
        origin = push.origin
        topic = push.topic
        body = (try? JSONSerialization.jsonObject(with: push.body)) as? [String: Any] ?? [:]
    }

    /// `user topic conversation seq text` (or `up_to` for a read mark).
    var line: String {
        let place = topic == "chat.read" ? "up_to \(body["up_to"] as? Int ?? -1)" : "\(body["seq"] as? Int ?? -1) \(body["text"] as? String ?? "?")"
        return "\(user) \(topic) \(body["conversation"] as? String ?? "?") \(place)"
    }
}

extension PushListener {
    /// The next `count` pushes (fewer if they do not come within about 2 s each).
    func take(_ count: Int) throws -> [SeenPush] {
        var seen: [SeenPush] = []
        while seen.count < count, let push = try next() { seen.append(SeenPush(push)) }
        return seen
    }
}

/// Direct chat over real sockets: sending, the order and pushes, idempotency, the bounds of
/// every field from the sender's side, paging, the conversation list and unread counts, read
/// marks, rates, and deleting an account.
@Suite struct ChatTests {
    @Test func messagesAreNumberedInOrderAndEachSideNamesTheOther() throws {
        let f = try SocialFixture()
        let ann = try f.register("ann"), ben = try f.register("ben")
        let first = try f.send("Hi Ben", to: "user:\(ben)", as: ann, id: "a-1")
        #expect(first["conversation"] as? String == "user:\(ben)" && first["seq"] as? Int == 1 && first["client_msg_id"] as? String == "a-1")
        #expect((first["at"] as? String)?.hasPrefix("2026-06-01T00:00:00") == true)
        #expect(try f.send("Hi Ann\nhow are you?", to: "user:\(ann)", as: ben)["seq"] as? Int == 2)
        #expect(try f.send("Fine", to: "user:\(ben)", as: ann)["seq"] as? Int == 3)
        #expect(try f.messages("user:\(ann)", as: ben) == ["3 Fine", "2 Hi Ann\nhow are you?", "1 Hi Ben"])
        #expect(try f.messages("user:\(ben)", as: ann) == ["3 Fine", "2 Hi Ann\nhow are you?", "1 Hi Ben"])
        let message = try #require((try f.history("user:\(ann)", as: ben)["messages"] as? [[String: Any]])?.last)
        #expect(message["conversation"] as? String == "user:\(ann)" && message["client_msg_id"] as? String == "a-1")
        let from = try #require(message["from"] as? [String: Any])
        #expect(from["id"] as? Int == Int(ann) && from["username"] as? String == "ann" && from["name"] as? String == "Ann")
        #expect(from.keys.sorted() == ["id", "name", "username"])
        // A new conversation numbers from 1 again.
        let cat = try f.register("cat")
        #expect(try f.send("Hello", to: "user:\(ann)", as: cat)["seq"] as? Int == 1)
        #expect(try f.messages("user:\(cat)", as: ben) == [])
    }

    @Test func aMessageIsPushedToTheRecipientAndTheSendersOtherConnections() throws {
        let f = try SocialFixture()
        let ann = try f.register("ann"), ben = try f.register("ben")
        let listener = try f.pushes()
        try f.send("Hi Ben", to: "user:\(ben)", as: ann, origin: "gw-1/7")
        let pushes = try listener.take(2).sorted { $0.user < $1.user }
        #expect(pushes.map(\.line) == ["\(ann) chat.message user:\(ben) 1 Hi Ben", "\(ben) chat.message user:\(ann) 1 Hi Ben"])
        // The sending connection does not hear its own message; every one of Ben's does.
        #expect(pushes.map(\.origin) == ["gw-1/7", nil])
        let body = try #require(pushes.last?.body)
        #expect(body.keys.sorted() == ["at", "client_msg_id", "conversation", "from", "seq", "text"])
        #expect((body["from"] as? [String: Any])?["username"] as? String == "ann")
    }

    @Test func theSameClientMessageIdAnswersTheFirstMessageAndStoresNothing() throws {
        let f = try SocialFixture()
        let ann = try f.register("ann"), ben = try f.register("ben")
        let listener = try f.pushes()
        let first = try f.send("Hi Ben", to: "user:\(ben)", as: ann, id: "retry-1")
        #expect(try listener.take(2).count == 2)
        f.clock.advance(5)
        let again = try f.send("Hi Ben", to: "user:\(ben)", as: ann, id: "retry-1")
        #expect(again["seq"] as? Int == 1 && again["at"] as? String == first["at"] as? String && again["conversation"] as? String == "user:\(ben)")
        // Nothing pushed for the retry: the next pushes are those of the next message.
        try f.send("Second", to: "user:\(ben)", as: ann)
        #expect(try listener.take(2).map(\.line).sorted() == ["\(ann) chat.message user:\(ben) 2 Second", "\(ben) chat.message user:\(ann) 2 Second"])
        #expect(try f.messages("user:\(ann)", as: ben) == ["2 Second", "1 Hi Ben"])
        // The same id for another message is a mistake, said as one.
        let conflict = ServiceError(.conflict, "client_msg_id retry-1 was already used for another message; make a new one for each message", field: "client_msg_id")
        #expect(f.sendError(#"{"to":"user:\#(ben)","text":"Other","client_msg_id":"retry-1"}"#, as: ann) == conflict)
        let cat = try f.register("cat")
        #expect(f.sendError(#"{"to":"user:\#(cat)","text":"Hi Ben","client_msg_id":"retry-1"}"#, as: ann) == conflict)
        // Ids are each sender's own: Ben may use the same one.
        #expect(try f.send("Hi Ann", to: "user:\(ann)", as: ben, id: "retry-1")["seq"] as? Int == 3)
    }

    @Test func everyFieldIsBoundedFromTheSendersSide() throws {
        let f = try SocialFixture()
        let ann = try f.register("ann"), ben = try f.register("ben")
        func refusal(_ to: String = "user:\(ben)", text: String = "Hi", id: String = "ok-1") throws -> ServiceError? {
            f.sendError(#"{"to":\#(try json(to)),"text":\#(try json(text)),"client_msg_id":\#(try json(id))}"#, as: ann)
        }
        let badName = ServiceError.invalid("to", #"must be "user:<id>" or "group:<id>""#)
        for to in ["", "ben", "user:", "user:0", "user:-2", "user:+2", "user:02", "user:2x", "user: 2", "users:2", "group:", ":2", "user:99999999999999999999",
                   "user:" + String(repeating: "1", count: 40), String(repeating: "u", count: 10_000)] {
            #expect(try refusal(to) == badName, "\(to.prefix(40))")
        }
        #expect(try refusal("user:\(ann)") == .invalid("to", "cannot be a conversation with yourself"))
        #expect(try refusal("user:999") == ServiceError(.notFound, "no user with id 999", field: "to"))
        // Text: bytes first (one character of 9,001 bytes), then characters, then emptiness and controls.
        #expect(try refusal(text: "e" + String(repeating: "\u{301}", count: 4_500)) == .invalid("text", "must be at most 8000 bytes"))
        #expect(try refusal(text: String(repeating: "é", count: 4_001)) == .invalid("text", "must be at most 8000 bytes"))
        #expect(try refusal(text: String(repeating: "x", count: 2_001)) == .invalid("text", "must be at most 2000 characters"))
        let invisible = ServiceError.invalid("text", "must hold at least one visible character (not only white space or invisible characters)")
        #expect(try refusal(text: "") == invisible)
        #expect(try refusal(text: " \n\t ") == invisible)
        // Characters that draw nothing: zero width space, Hangul fillers, blank Braille, BOM,
        // word joiner, tags (1,000 of them, 4,000 bytes), and a mix with white space.
        for blank in ["\u{200B}", "\u{3164}", "\u{115F}\u{1160}", "\u{FFA0}", "\u{2800}\u{2800}", "\u{FEFF}", "\u{2060}",
                      String(repeating: "\u{E0041}", count: 1_000), " \u{200B}\n\u{3164}\t\u{2028}",
                      "\u{3164}\u{034F}", "\u{2800}\u{034F}", " \u{034F} ", "\u{17B4}\u{17B5}", "\u{FE0F}", "\u{FE00}", "\u{E0100}", "\u{180B}\u{180F}"] {
            #expect(try refusal(text: blank) == invisible, "\(blank.unicodeScalars.first.map { String($0.value, radix: 16) } ?? "")")
        }
        // One visible character among them is enough; U+2028 and U+2029 are accepted as line breaks.
        #expect(try refusal(text: "\u{200B}.\u{3164}", id: "vis-1") == nil)
        #expect(try refusal(text: "one\u{2028}two\u{2029}three", id: "vis-2") == nil)
        let controls = ServiceError.invalid("text", "must not contain control or bidirectional formatting characters other than line breaks and tabs")
        for bad in ["a\u{0}b", "a\u{7}", "\u{202E}evil", "a\u{85}"] { #expect(try refusal(text: bad) == controls) }
        // Client ids: 1 to 64 bytes of a small alphabet.
        #expect(try refusal(id: "") == .invalid("client_msg_id", "must be 1 to 64 bytes"))
        #expect(try refusal(id: String(repeating: "a", count: 65)) == .invalid("client_msg_id", "must be at most 64 bytes"))
        for bad in ["a b", "a/b", "é", "a\"b", "a\u{0}"] {
            #expect(try refusal(id: bad) == .invalid("client_msg_id", "may hold only A-Z, a-z, 0-9, '.', '_', ':' and '-'"), "\(bad)")
        }
        #expect(f.sendError(#"{"to":"user:\#(ben)","text":"Hi"}"#, as: ann)?.code == .invalidArgument)
        #expect(f.sendError(#"{"to":2,"text":"Hi","client_msg_id":"x"}"#, as: ann)?.code == .invalidArgument)
        // The largest message passes: 2,000 characters of 4 bytes, tabs and line breaks kept.
        let largest = String(repeating: "😀", count: 1_998) + "\t\n"
        #expect(try f.send(largest, to: "user:\(ben)", as: ann, id: "big.1:x_Y-2")["seq"] as? Int == 3)
        #expect(try f.messages("user:\(ann)", as: ben) == ["3 \(largest)", "2 one\u{2028}two\u{2029}three", "1 \u{200B}.\u{3164}"])
        // Nothing refused was stored.
        #expect(try Database(path: f.databasePath).scalarInt("SELECT count(*) FROM chat_messages") == 3)
    }

    @Test func everyMethodNeedsASignedInUser() throws {
        let f = try SocialFixture()
        let ann = try f.register("ann"), ben = try f.register("ben")
        try f.send("Hi", to: "user:\(ben)", as: ann)
        for (type, body) in [("chat.send", #"{"to":"user:\#(ben)","text":"Hi","client_msg_id":"x"}"#),
                             ("chat.history", #"{"conversation":"user:\#(ben)"}"#), ("chat.conversations", "{}"),
                             ("chat.read", #"{"conversation":"user:\#(ben)","up_to":1}"#), ("chat.history", #"{"conversation":"group:1"}"#)] {
            #expect(f.error(type, body, as: nil) == ServiceError(.unauthenticated, "\(type) needs a signed-in user"), "\(type)")
            #expect(f.error(type, body, as: 99) == ServiceError(.unauthenticated, "no user with id 99"), "\(type)")
        }
    }

    @Test func aThirdUserNeverSeesAnotherPairsConversation() throws {
        let f = try SocialFixture()
        let ann = try f.register("ann"), ben = try f.register("ben"), cat = try f.register("cat")
        try f.send("Secret", to: "user:\(ben)", as: ann)
        // Cat's "user:ann" is Cat's own conversation with Ann: empty.
        #expect(try f.messages("user:\(ann)", as: cat) == [])
        #expect(try f.messages("user:\(ben)", as: cat) == [])
        #expect((try f.call("chat.conversations", as: cat)["conversations"] as? [Any])?.isEmpty == true)
        #expect(try f.call("chat.read", #"{"conversation":"user:\#(ann)","up_to":1}"#, as: cat) as NSDictionary == ["conversation": "user:\(ann)", "up_to": 0, "unread": 0])
        #expect(f.error("chat.history", #"{"conversation":"user:999"}"#, as: cat) == ServiceError(.notFound, "no user with id 999", field: "conversation"))
        #expect(f.error("chat.history", #"{"conversation":"user:\#(cat)"}"#, as: cat) == .invalid("conversation", "cannot be a conversation with yourself"))
    }

    @Test func historyPagesNewestFirstBySeqAndByBytes() throws {
        let f = try SocialFixture(pageBudget: 1_500)
        let ann = try f.register("ann"), ben = try f.register("ben")
        for i in 1...7 { try f.send("m\(i)", to: "user:\(ben)", as: ann) }
        var pages: [[Int]] = []
        var before: Int64?
        repeat {
            let page = try f.history("user:\(ann)", as: ben, before: before, limit: 3)
            pages.append((page["messages"] as? [[String: Any]] ?? []).compactMap { $0["seq"] as? Int })
            before = (page["next_before"] as? Int).map(Int64.init)
        } while before != nil && pages.count < 10
        #expect(pages == [[7, 6, 5], [4, 3, 2], [1]])
        // A page stops at the budget: messages of 400 characters (about 570 bytes each), two to a 1,500-byte page.
        let cat = try f.register("cat")
        for i in 1...3 { try f.send(String(repeating: "\(i)", count: 400), to: "user:\(cat)", as: ann) }
        let page = try f.history("user:\(ann)", as: cat, limit: 50)
        #expect((page["messages"] as? [[String: Any]])?.compactMap { $0["seq"] as? Int } == [3, 2] && page["next_before"] as? Int == 2)
        #expect((try f.history("user:\(ann)", as: cat, before: 2)["messages"] as? [[String: Any]])?.compactMap { $0["seq"] as? Int } == [1])
        #expect(f.error("chat.history", #"{"conversation":"user:\#(ann)","before":0}"#, as: ben) == .invalid("before", "must be 1 or more"))
        #expect(f.error("chat.history", #"{"conversation":"user:\#(ann)","limit":51}"#, as: ben) == .invalid("limit", "must be 1 to 50"))
        #expect(f.error("chat.history", #"{"conversation":"nobody"}"#, as: ben) == .invalid("conversation", #"must be "user:<id>" or "group:<id>""#))
    }

    @Test func conversationsListTheLatestFirstWithUnreadCountsAndReadMarksNeverGoBack() throws {
        let f = try SocialFixture()
        let ann = try f.register("ann"), ben = try f.register("ben"), cat = try f.register("cat")
        try f.send("a1", to: "user:\(ben)", as: ann)
        try f.send("a2", to: "user:\(ben)", as: ann)
        try f.send("c1", to: "user:\(ben)", as: cat)
        try f.send("b1", to: "user:\(cat)", as: ben)
        func list(_ user: Int64, cursor: String? = nil, limit: Int = 20) throws -> (lines: [String], next: String?) {
            let cursorJSON = try cursor.map { #","cursor":\#(try json($0))"# } ?? ""
            let reply = try f.call("chat.conversations", #"{"limit":\#(limit)\#(cursorJSON)}"#, as: user)
            let lines = (reply["conversations"] as? [[String: Any]] ?? []).map { entry in
                let last = entry["last_message"] as? [String: Any] ?? [:]
                let with = (entry["with"] as? [String: Any])?["username"] as? String ?? "?"
                return "\(entry["conversation"] as? String ?? "?") with \(with) last \(last["seq"] as? Int ?? -1) \(last["text"] as? String ?? "?") unread \(entry["unread"] as? Int ?? -1) read \(entry["read_up_to"] as? Int ?? -1)"
            }
            return (lines, reply["next_cursor"] as? String)
        }
        // Ben's own message is not unread; the conversation with Cat moved up with it.
        #expect(try list(ben).lines == ["user:\(cat) with cat last 2 b1 unread 1 read 0", "user:\(ann) with ann last 2 a2 unread 2 read 0"])
        #expect(try list(ann).lines == ["user:\(ben) with ben last 2 a2 unread 0 read 0"])
        let firstPage = try list(ben, limit: 1)
        #expect(firstPage.lines.count == 1)
        let cursor: String = try #require(firstPage.next)
        let second = try list(ben, cursor: cursor, limit: 1)
        #expect(second.lines == ["user:\(ann) with ann last 2 a2 unread 2 read 0"])
        #expect(f.error("chat.conversations", #"{"cursor":"bogus"}"#, as: ben)?.code == .invalidArgument)

        let listener = try f.pushes()
        func read(_ upTo: Int) throws -> NSDictionary {
            try f.call("chat.read", #"{"conversation":"user:\#(ann)","up_to":\#(upTo)}"#, as: ben, origin: "gw/ben-phone") as NSDictionary
        }
        #expect(try read(1) == ["conversation": "user:\(ann)", "up_to": 1, "unread": 1])
        let pushed = try #require(try listener.take(1).first)
        #expect(pushed.line == "\(ben) chat.read user:\(ann) up_to 1" && pushed.origin == "gw/ben-phone")
        #expect(pushed.body as NSDictionary == ["conversation": "user:\(ann)", "up_to": 1])
        // Never backwards, and never past the last message: both answer the mark as it is.
        #expect(try read(0) == ["conversation": "user:\(ann)", "up_to": 1, "unread": 1])
        #expect(try read(99) == ["conversation": "user:\(ann)", "up_to": 2, "unread": 0])
        #expect(try listener.take(1).first?.line == "\(ben) chat.read user:\(ann) up_to 2")
        #expect(try read(99) == ["conversation": "user:\(ann)", "up_to": 2, "unread": 0])
        #expect(try list(ben).lines.last == "user:\(ann) with ann last 2 a2 unread 0 read 2")
        // A mark that did not move pushes nothing: the next push is the next message's.
        try f.send("a3", to: "user:\(ben)", as: ann)
        #expect(try listener.take(2).map(\.topic) == ["chat.message", "chat.message"])
        #expect(try read(2) == ["conversation": "user:\(ann)", "up_to": 2, "unread": 1])
        #expect(f.error("chat.read", #"{"conversation":"user:\#(ann)","up_to":-1}"#, as: ben) == .invalid("up_to", "must be 0 or more"))
        #expect(f.error("chat.read", #"{"conversation":"user:\#(ann)"}"#, as: ben)?.code == .invalidArgument)
    }

    @Test func aSenderIsLimitedTo20MessagesIn10SecondsAnd60AMinute() throws {
        let f = try SocialFixture()
        let ann = try f.register("ann"), ben = try f.register("ben"), cat = try f.register("cat")
        for i in 1...20 { try f.send("m\(i)", to: "user:\(i % 2 == 0 ? ben : cat)", as: ann, id: "m\(i)") }
        let refused = f.sendError(#"{"to":"user:\#(ben)","text":"one too many","client_msg_id":"m21"}"#, as: ann)
        #expect(refused == ServiceError(.rateLimited, "too many messages: at most 20 in 10 seconds; try again in 10 seconds"))
        // A retry of a message sent is still answered; others may still send.
        #expect(try f.send("m2", to: "user:\(ben)", as: ann, id: "m2")["seq"] as? Int == 1)
        #expect(try f.send("Hi", to: "user:\(ann)", as: ben)["seq"] as? Int == 11)
        f.clock.advance(9.5)
        #expect(f.sendError(#"{"to":"user:\#(ben)","text":"still","client_msg_id":"m21"}"#, as: ann)
            == ServiceError(.rateLimited, "too many messages: at most 20 in 10 seconds; try again in 1 second"))
        f.clock.advance(0.5)
        for i in 21...40 { try f.send("m\(i)", to: "user:\(ben)", as: ann, id: "m\(i)") }
        f.clock.advance(10)
        for i in 41...60 { try f.send("m\(i)", to: "user:\(ben)", as: ann, id: "m\(i)") }
        f.clock.advance(10)
        #expect(f.sendError(#"{"to":"user:\#(ben)","text":"61st","client_msg_id":"m61"}"#, as: ann)
            == ServiceError(.rateLimited, "too many messages: at most 60 in a minute; try again in 30 seconds"))
        f.clock.advance(30)
        #expect(try f.send("m61", to: "user:\(ben)", as: ann, id: "m61")["seq"] as? Int != nil)
        // Refused messages took no sequence number: Ben's conversation has no gap.
        let seqs = (try f.history("user:\(ann)", as: ben, limit: 50)["messages"] as? [[String: Any]] ?? []).compactMap { $0["seq"] as? Int }
        #expect(seqs.count == 50 && seqs == Array((3...52).reversed()))
    }

    @Test func aUserStartsAtMost30ConversationsAnHour() throws {
        let f = try SocialFixture()
        let ann = try f.register("ann")
        var others: [Int64] = []
        for i in 0...30 { others.append(try f.register("user\(i)")) }
        for (i, other) in others.prefix(30).enumerated() {
            try f.send("Hello", to: "user:\(other)", as: ann)
            if i % 15 == 14 { f.clock.advance(60) }  // within the per-minute rate
        }
        f.clock.advance(60)
        let last = try #require(others.last)
        #expect(f.sendError(#"{"to":"user:\#(last)","text":"Hello","client_msg_id":"x"}"#, as: ann)
            == ServiceError(.rateLimited, "you started 30 conversations in the last hour, the most; try again in 57 minutes", field: "to"))
        // Conversations begun go on, and others may start one with Ann.
        try f.send("Again", to: "user:\(others[0])", as: ann)
        #expect(try f.send("Hi Ann", to: "user:\(ann)", as: last)["seq"] as? Int == 1)
        f.clock.advance(57 * 60)
        let late = try f.register("late")
        #expect(try f.send("Hello", to: "user:\(late)", as: ann)["seq"] as? Int == 1)
    }

    @Test func deletingAnAccountBlanksItsMessagesInPlaceAndRemovesItsSeats() throws {
        let f = try SocialFixture()
        let ann = try f.register("annika.q"), ben = try f.register("ben"), cat = try f.register("cat")
        try f.send("ann's secret", to: "user:\(ben)", as: ann, id: "ann-1")
        try f.send("reply", to: "user:\(ann)", as: ben)
        try f.send("ann again", to: "user:\(ben)", as: ann, id: "ann-2")
        try f.send("to cat", to: "user:\(cat)", as: ann)
        try f.call("chat.read", #"{"conversation":"user:\#(ann)","up_to":1}"#, as: ben)
        try f.call("auth.delete", #"{"password":"\#(SocialFixture.password)"}"#, as: ann)

        // Ben's conversation keeps its messages and sequence numbers; Ann's are blanked.
        let messages = try #require(try f.history("user:\(ann)", as: ben)["messages"] as? [[String: Any]])
        #expect(messages.map { $0["seq"] as? Int } == [3, 2, 1])
        #expect(messages.map { $0["text"] as? String } == ["", "reply", ""])
        #expect(messages.map { $0["client_msg_id"] as? String != nil } == [true, true, true])
        #expect(messages[0]["from"] as? NSDictionary == ["deleted": true, "name": "deleted user"])
        #expect((messages[1]["from"] as? [String: Any])?["username"] as? String == "ben")
        let list = try #require(try f.call("chat.conversations", as: ben)["conversations"] as? [[String: Any]])
        #expect(list.first?["with"] as? NSDictionary == ["deleted": true, "name": "deleted user"])
        #expect(list.first?["unread"] as? Int == 1)
        #expect(((list.first?["last_message"] as? [String: Any])?["from"] as? [String: Any])?["deleted"] as? Bool == true)
        #expect(f.sendError(#"{"to":"user:\#(ann)","text":"hello?","client_msg_id":"b-2"}"#, as: ben) == ServiceError(.notFound, "no user with id \(ann)", field: "to"))
        #expect(try f.call("chat.read", #"{"conversation":"user:\#(ann)","up_to":3}"#, as: ben)["unread"] as? Int == 0)

        // No row holds her id (but the other side's name of the conversation), nor her texts.
        #expect(try rowsNaming(ann, texts: ["annika.q", "ann's secret", "ann again", "ann-1"],
                               userColumns: AccountDeletionTests.socialUserColumns.union(["sender_id", "peer_id", "started_by"]),
                               except: ["outbox": "type = 'social.user.deleted'", "chat_participants": "user_id != \(ann) AND peer_id = \(ann)"],
                               path: f.databasePath) == [])
        // Once both sides are gone, so is their conversation.
        try f.call("auth.delete", #"{"password":"\#(SocialFixture.password)"}"#, as: cat)
        let db = try Database(path: f.databasePath)
        #expect(try db.scalarInt("SELECT count(*) FROM chat_conversations") == 1)
        #expect(try db.scalarInt("SELECT count(*) FROM chat_messages") == 3)
    }
}
