import Bus
import Contracts
import Foundation
import ServiceKit
import Storage

/// A user's seat in a conversation, as `chat.history` and `chat.read` need it.
struct ChatSeat {
    let conversation: Int64
    /// A group member sees the messages after this sequence number (0 in a direct conversation).
    let joinedSeq: Int64
    let readSeq: Int64
    let unread: Int64
    /// The sequence number of the last message this user can see (`joinedSeq` when none).
    let lastVisibleSeq: Int64
}

/// Chat: direct and group conversations, each ordered by its own sequence number. Group
/// conversations' part is in ChatGroups.swift.
final class ChatStore: SocialFeature {
    let shared: SocialShared
    let groups: GroupStore
    let blocks: BlockStore

    init(_ shared: SocialShared, groups: GroupStore, blocks: BlockStore) {
        self.shared = shared
        self.groups = groups
        self.blocks = blocks
    }

    /// Page cursors of `chat.conversations`: the id of the last message of the last conversation seen.
    static let conversationCursor = IDCursor(tag: "c|", minimum: 1)

    // MARK: chat.send

    /// `chat.send`: checks the body, then answers the caller's earlier message with the same
    /// `client_msg_id` if there is one (storing and pushing nothing), else refuses what the
    /// rules refuse (the recipient, blocks, the sender's rate), stores the message with the
    /// conversation's next sequence number and pushes it.
    func send(_ request: ChatSend, caller: Caller) throws -> ChatSent {
        let to = try ConversationName(request.to, field: "to")
        try ChatRules.checkText(request.text)
        try ChatRules.checkClientMsgId(request.clientMsgId)
        return try db.transaction {
            if let earlier = try earlierMessage(of: caller.id, clientMsgId: request.clientMsgId) {
                guard earlier.sent.conversation == to.text, earlier.text == request.text else {
                    throw ServiceError(
                        .conflict, "client_msg_id \(request.clientMsgId) was already used for another message; make a new one for each message",
                        field: "client_msg_id")
                }
                return earlier.sent
            }
            switch to {
            case .user(let peer): return try sendDirect(request, to: peer, caller: caller.id, origin: caller.origin)
            case .group(let group): return try sendToGroup(request, group: group, caller: caller.id, origin: caller.origin)
            }
        }
    }

    /// The caller's message sent before with `clientMsgId`, as `chat.send` answered it, and its text.
    private func earlierMessage(of sender: Int64, clientMsgId: String) throws -> (sent: ChatSent, text: String)? {
        guard
            let row = try db.queryOne(
                """
                SELECT m.seq, m.text, m.at, c.group_id, p.peer_id FROM chat_messages m JOIN chat_conversations c ON c.id = m.conversation_id
                LEFT JOIN chat_participants p ON p.conversation_id = m.conversation_id AND p.user_id = m.sender_id
                WHERE m.sender_id = ? AND m.client_msg_id = ?
                """, sender, clientMsgId)
        else { return nil }
        let name = try Self.conversationName(group: row.decode("group_id"), peer: row.decode("peer_id"))
        return (ChatSent(conversation: name.text, seq: try row.decode("seq"), at: try row.decode("at"), clientMsgId: clientMsgId), try row.decode("text"))
    }

    /// A direct message: to an existing user other than the caller, in their one conversation,
    /// made at the first message (which counts towards the hourly bound of new conversations).
    /// A caller who blocks the user is told to unblock first; a user who blocks the caller
    /// never gets the message, which is otherwise sent as any other (the block is not revealed).
    private func sendDirect(_ request: ChatSend, to peer: Int64, caller: Int64, origin: String?) throws -> ChatSent {
        guard peer != caller else { throw ServiceError.invalid("to", "cannot be a conversation with yourself") }
        guard try db.queryOne("SELECT 1 FROM users WHERE id = ?", peer) != nil else {
            throw ServiceError(.notFound, "no user with id \(peer)", field: "to")
        }
        if try blocks.contains(blocker: caller, blocked: peer) { throw BlockRules.youBlock(peer, field: "to") }
        let now = nowMs
        try checkSendingRate(of: caller, now: now)
        let conversation = try directConversation(caller, peer, now: now)
        let message = try appendMessage(request, conversation: conversation, sender: caller, now: now)
        if try blocks.contains(blocker: peer, blocked: caller) {
            try withhold(message, from: peer)
        } else {
            try deliver(try delivery(of: message, as: .user(caller)), to: peer)
        }
        return try deliverToSender(try delivery(of: message, as: .user(peer)), caller: caller, origin: origin)
    }

    /// The id of the direct conversation of `caller` and `peer`, made (with both seats) when
    /// there is none: `rate_limited` when the caller started `newConversationsPerHour` in the last hour.
    private func directConversation(_ caller: Int64, _ peer: Int64, now: Int64) throws -> Int64 {
        if let id = try db.scalarInt("SELECT conversation_id FROM chat_participants WHERE user_id = ? AND peer_id = ?", caller, peer) { return id }
        let limit = ChatRules.newConversationsPerHour
        if let started = try db.scalarInt(
            """
            SELECT started_ms FROM chat_conversations WHERE started_by = ? AND started_ms > ? ORDER BY started_ms DESC LIMIT 1 OFFSET ?
            """, caller, now - 3_600_000, limit - 1)
        {
            let minutes = (started + 3_600_000 - now + 59_999) / 60_000
            throw ServiceError(
                .rateLimited, "you started \(limit) conversations in the last hour, the most; try again in \(minutes) minute\(minutes == 1 ? "" : "s")",
                field: "to")
        }
        try db.run("INSERT INTO chat_conversations (started_by, started_ms) VALUES (?, ?)", caller, now)
        let id = db.lastInsertRowID
        for (user, other) in [(caller, peer), (peer, caller)] {
            try db.run("INSERT INTO chat_participants (conversation_id, user_id, peer_id, joined_seq, read_seq) VALUES (?, ?, ?, 0, 0)", id, user, other)
        }
        return id
    }

    /// `rate_limited` when `sender` already sent as many messages as a rate allows within its
    /// span (dropped ones count too), saying when the next may go.
    func checkSendingRate(of sender: Int64, now: Int64) throws {
        for rate in ChatRules.rates {
            guard
                let oldest = try db.scalarInt(
                    """
                    SELECT at_ms FROM chat_messages WHERE sender_id = ? AND at_ms > ? ORDER BY at_ms DESC LIMIT 1 OFFSET ?
                    """, sender, now - rate.milliseconds, rate.count - 1)
            else { continue }
            throw ServiceError(.rateLimited, "too many messages: at most \(rate.count) in \(rate.span); \(ChatRules.tryAgain(oldest: oldest, within: rate.milliseconds, now: now))")
        }
    }

    /// A message just stored: its row id and what readers see but the conversation's name,
    /// which is each reader's own (`wire(_:)` adds it).
    struct StoredMessage {
        let id: Int64
        let conversation: Int64
        let seq: Int64
        let at: String
        let from: ChatAuthor
        let text: String
        let clientMsgId: String

        func wire(_ name: ConversationName) -> ChatMessage {
            ChatMessage(seq: seq, conversation: name.text, from: from, text: text, at: at, clientMsgId: clientMsgId)
        }
    }

    /// Stores the message with the conversation's next sequence number.
    func appendMessage(_ request: ChatSend, conversation: Int64, sender: Int64, now: Int64) throws -> StoredMessage {
        try db.run("UPDATE chat_conversations SET last_seq = last_seq + 1 WHERE id = ?", conversation)
        guard let seq = try db.scalarInt("SELECT last_seq FROM chat_conversations WHERE id = ?", conversation) else {
            throw ServiceError(.internal, "conversation \(conversation) vanished while sending")
        }
        let from = ChatAuthor.user(try shared.summary(of: sender))
        let at = timestamp(Date(timeIntervalSince1970: Double(now) / 1_000))
        try db.run(
            "INSERT INTO chat_messages (conversation_id, seq, sender_id, client_msg_id, text, at, at_ms) VALUES (?, ?, ?, ?, ?, ?, ?)",
            conversation, seq, sender, request.clientMsgId, request.text, at, now)
        return StoredMessage(
            id: db.lastInsertRowID, conversation: conversation, seq: seq, at: at, from: from, text: request.text,
            clientMsgId: request.clientMsgId)
    }

    /// A stored message as the readers who call its conversation `name` see it, with the push
    /// body encoded once for all of them (a group's members share one).
    struct Delivery {
        let message: StoredMessage
        let name: ConversationName
        let body: PushBody<ChatMessage>
    }

    func delivery(of message: StoredMessage, as name: ConversationName) throws -> Delivery {
        Delivery(message: message, name: name, body: try Pushes.chatMessage.encode(message.wire(name)))
    }

    /// Gives the message to `recipient`: one more unread, their last message, and a push to
    /// every connection of theirs.
    func deliver(_ delivery: Delivery, to recipient: Int64) throws {
        try db.run(
            "UPDATE chat_participants SET unread = unread + 1, last_message_id = ? WHERE conversation_id = ? AND user_id = ?",
            delivery.message.id, delivery.message.conversation, recipient)
        pushMessage(delivery, to: recipient, origin: nil)
    }

    /// Keeps `message` from `recipient`, for good: a block stands between them.
    func withhold(_ message: StoredMessage, from recipient: Int64) throws {
        try db.run("INSERT INTO chat_hidden (user_id, message_id) VALUES (?, ?)", recipient, message.id)
    }

    /// The sender's last message is `message`, pushed to their other connections; the reply of `chat.send`.
    func deliverToSender(_ delivery: Delivery, caller: Int64, origin: String?) throws -> ChatSent {
        let message = delivery.message
        try db.run("UPDATE chat_participants SET last_message_id = ? WHERE conversation_id = ? AND user_id = ?", message.id, message.conversation, caller)
        pushMessage(delivery, to: caller, origin: origin)
        return ChatSent(conversation: delivery.name.text, seq: message.seq, at: message.at, clientMsgId: message.clientMsgId)
    }

    private func pushMessage(_ delivery: Delivery, to user: Int64, origin: String?) {
        worker.push(Push(Pushes.chatMessage, id: "chat-\(delivery.message.id)-\(user)", userId: user, origin: origin, body: delivery.body))
    }

    // MARK: Reading

    /// The name of a conversation as its participant calls it: by the group, or by the other user.
    static func conversationName(group: Int64?, peer: Int64?) throws -> ConversationName {
        if let group { return .group(group) }
        guard let peer else { throw ServiceError(.internal, "a direct conversation without its other user") }
        return .user(peer)
    }

    /// `user`'s seat in the conversation `name`; nil when they have none yet (no message so
    /// far, or none since they joined the group). `not_found` (naming `field`) when the
    /// conversation cannot be theirs: no such user, or a group they are not a member of.
    func seat(in name: ConversationName, of user: Int64, field: String) throws -> ChatSeat? {
        let condition: String
        let key: Int64
        switch name {
        case .user(let peer):
            guard peer != user else { throw ServiceError.invalid(field, "cannot be a conversation with yourself") }
            (condition, key) = ("p.peer_id = ?", peer)
        case .group(let group):
            try requireChatMember(group: group, user: user, field: field)
            (condition, key) = ("c.group_id = ?", group)
        }
        let row = try db.queryOne(
            """
            SELECT p.conversation_id, p.joined_seq, p.read_seq, p.unread,
                   coalesce((SELECT seq FROM chat_messages WHERE id = p.last_message_id), p.joined_seq) AS last_visible_seq
            FROM chat_participants p JOIN chat_conversations c ON c.id = p.conversation_id WHERE p.user_id = ? AND \(condition)
            """, user, key)
        guard let row else {
            // A deleted user's conversation stays (with their seat gone); one never begun needs the user.
            if case .user(let peer) = name, try db.queryOne("SELECT 1 FROM users WHERE id = ?", peer) == nil {
                throw ServiceError(.notFound, "no user with id \(peer)", field: field)
            }
            return nil
        }
        return ChatSeat(
            conversation: try row.decode("conversation_id"), joinedSeq: try row.decode("joined_seq"), readSeq: try row.decode("read_seq"),
            unread: try row.decode("unread"), lastVisibleSeq: try row.decode("last_visible_seq"))
    }

    /// `chat.history`: the messages of the conversation the caller can see, newest first,
    /// before `before` (a sequence number), at most `limit` and the page budget.
    func history(_ request: ChatHistoryRequest, caller: Caller) throws -> ChatHistory {
        let name = try ConversationName(request.conversation, field: "conversation")
        let limit = try SocialService.limit(request.limit)
        guard let seat = try seat(in: name, of: caller.id, field: "conversation") else { return ChatHistory(messages: []) }
        let page = try readPage(
            """
            SELECT m.seq, m.sender_id, m.client_msg_id, m.text, m.at, u.username, u.name
            FROM chat_messages m LEFT JOIN users u ON u.id = m.sender_id
            WHERE m.conversation_id = ? AND m.seq > ? AND m.seq < ?
              AND NOT EXISTS (SELECT 1 FROM chat_hidden h WHERE h.user_id = ? AND h.message_id = m.id)
            ORDER BY m.seq DESC LIMIT ?
            """, [seat.conversation, seat.joinedSeq, request.before ?? Int64.max, caller.id], limit: limit,
            item: { row in try Self.message(row, name: name) }, wire: { $0 })
        return ChatHistory(messages: page.items, nextBefore: page.isFull ? page.items.last?.seq : nil)
    }

    /// A message row (`seq`, `sender_id`, `client_msg_id`, `text`, `at` and the sender's
    /// `username` and `name`, null once the account is deleted) as `name`'s reader sees it.
    static func message(_ row: Row, name: ConversationName) throws -> ChatMessage {
        ChatMessage(
            seq: try row.decode("seq"), conversation: name.text,
            from: try author(id: row.decode("sender_id"), username: row.decode("username"), name: row.decode("name")),
            text: try row.decode("text"), at: try row.decode("at"), clientMsgId: try row.decode("client_msg_id"))
    }

    /// A user summary, or the deleted author when the account is gone.
    static func author(id: Int64?, username: String?, name: String?) -> ChatAuthor {
        guard let id, let username, let name else { return .deleted }
        return .user(UserSummary(id: id, username: username, name: name))
    }

    /// `chat.conversations`: the caller's conversations, the one with the latest message they
    /// can see first, each with that message, their unread count and read mark.
    func conversations(_ request: ChatConversationsRequest, caller: Caller) throws -> ChatConversationList {
        let limit = try SocialService.limit(request.limit)
        let after = try request.cursor.map(Self.conversationCursor.decode) ?? Int64.max
        let page = try readPage(
            """
            SELECT p.last_message_id, p.unread, p.read_seq, p.peer_id, c.group_id, g.name AS group_name,
                   pu.username AS peer_username, pu.name AS peer_name, m.seq, m.sender_id, m.client_msg_id, m.text, m.at, u.username, u.name
            FROM chat_participants p JOIN chat_conversations c ON c.id = p.conversation_id
            JOIN chat_messages m ON m.id = p.last_message_id
            LEFT JOIN users u ON u.id = m.sender_id LEFT JOIN users pu ON pu.id = p.peer_id LEFT JOIN groups g ON g.id = c.group_id
            WHERE p.user_id = ? AND p.last_message_id < ? AND \(Self.currentMembership)
            ORDER BY p.last_message_id DESC LIMIT ?
            """, [caller.id, after], limit: limit,
            item: { row throws -> (last: Int64, entry: ChatConversation) in
                let group: Int64? = try row.decode("group_id")
                let peer: Int64? = try row.decode("peer_id")
                let name = try Self.conversationName(group: group, peer: peer)
                let with = try peer.map { id in Self.author(id: id, username: try row.decode("peer_username"), name: try row.decode("peer_name")) }
                let groupName = try group.map { id in GroupName(id: id, name: try row.decode("group_name")) }
                return (
                    last: try row.decode("last_message_id"),
                    entry: ChatConversation(
                        conversation: name.text, with: with, group: groupName, lastMessage: try Self.message(row, name: name),
                        unread: try row.decode("unread"), readUpTo: try row.decode("read_seq"))
                )
            },
            wire: \.entry)
        return ChatConversationList(conversations: page.items.map(\.entry), nextCursor: page.isFull ? page.items.last.map { Self.conversationCursor.encode($0.last) } : nil)
    }

    // MARK: chat.read

    /// `chat.read`: moves the caller's read mark up to `up_to` (never back, never past the last
    /// message they can see), answers what stays unread, and pushes the new mark to their
    /// other connections when it moved.
    func read(_ request: ChatReadMark, caller: Caller) throws -> ChatReadState {
        let name = try ConversationName(request.conversation, field: "conversation")
        guard request.upTo >= 0 else { throw ServiceError.invalid("up_to", "must be 0 or more") }
        return try db.transaction {
            guard let seat = try seat(in: name, of: caller.id, field: "conversation") else { return ChatReadState(conversation: name.text, upTo: 0, unread: 0) }
            let mark = min(request.upTo, seat.lastVisibleSeq)
            guard mark > seat.readSeq else { return ChatReadState(conversation: name.text, upTo: seat.readSeq, unread: seat.unread) }
            // What was delivered to the caller between the old mark and the new one.
            let read =
                try db.scalarInt(
                    """
                    SELECT count(*) FROM chat_messages m WHERE m.conversation_id = ? AND m.seq > ? AND m.seq <= ?
                      AND (m.sender_id IS NULL OR m.sender_id != ?)
                      AND NOT EXISTS (SELECT 1 FROM chat_hidden h WHERE h.user_id = ? AND h.message_id = m.id)
                    """, seat.conversation, max(seat.readSeq, seat.joinedSeq), mark, caller.id, caller.id) ?? 0
            let unread = max(0, seat.unread - read)
            try db.run("UPDATE chat_participants SET read_seq = ?, unread = ? WHERE conversation_id = ? AND user_id = ?", mark, unread, seat.conversation, caller.id)
            worker.push(
                Push(
                    Pushes.chatRead, id: "chat-read-\(seat.conversation)-\(caller.id)-\(mark)", userId: caller.id,
                    coalesce: "chat-read-\(name.text)", origin: caller.origin,
                    body: try Pushes.chatRead.encode(ChatReadMark(conversation: name.text, upTo: mark))))
            return ChatReadState(conversation: name.text, upTo: mark, unread: unread)
        }
    }

    // MARK: Deleting an account

    /// Inside `auth.delete`'s transaction: the user's messages keep their place and sequence
    /// number with their text and client id blanked and no sender (read as "deleted user");
    /// their seats (read marks, unread counts) and withheld marks go; a direct conversation in
    /// which nobody has a seat any more goes with its messages.
    func erase(of user: Int64) throws {
        let conversations = try db.query("SELECT conversation_id FROM chat_participants WHERE user_id = ?", user).decode("conversation_id", as: Int64.self)
        try db.run("UPDATE chat_messages SET sender_id = NULL, text = '', client_msg_id = '' WHERE sender_id = ?", user)
        try db.run("DELETE FROM chat_participants WHERE user_id = ?", user)
        try db.run("DELETE FROM chat_hidden WHERE user_id = ?", user)
        try db.run("UPDATE chat_conversations SET started_by = NULL WHERE started_by = ?", user)
        for conversation in conversations {
            try db.run(
                """
                DELETE FROM chat_conversations WHERE id = ? AND group_id IS NULL
                  AND NOT EXISTS (SELECT 1 FROM chat_participants WHERE conversation_id = ?)
                """, conversation, conversation)
        }
    }
}
