import Bus
import Contracts
import Foundation
import ServiceKit
import Storage

// Group conversations: one a group, for its current members. A member has a seat from the
// first message after they joined and sees the messages from there on; a member who left (or
// was removed) loses the seat at the next message, and sees nothing of the group meanwhile.

extension ChatStore {
    /// The SQL condition (on `c`, a `chat_conversations` row, and `p`, the reader's seat) that
    /// keeps a group conversation only while the reader is a member.
    static let currentMembership = """
        (c.group_id IS NULL OR EXISTS (SELECT 1 FROM group_members gm WHERE gm.group_id = c.group_id AND gm.user_id = p.user_id))
        """

    /// `not_found` (naming `field`) unless `user` is a member of `group`: the same answer as
    /// for a group that does not exist, so a non-member learns nothing of it.
    func requireChatMember(group: Int64, user: Int64, field: String) throws {
        guard try groups.isMember(group: group, user: user) else { throw GroupRules.noGroup(group, field: field) }
    }

    /// A message to a group the caller is a member of: every other current member gets it,
    /// except those in a block relation with the caller (either way), for whom it is withheld.
    func sendToGroup(_ request: ChatSend, group: Int64, caller: Int64, origin: String?) throws -> ChatSent {
        try requireChatMember(group: group, user: caller, field: "to")
        let now = nowMs
        try checkSendingRate(of: caller, now: now)
        let conversation = try groupConversation(group, now: now)
        try checkGroupRate(conversation, now: now)
        let members = try groups.members(of: group)
        try seatMembers(members, of: group, in: conversation)
        let message = try appendMessage(request, conversation: conversation, sender: caller, now: now)
        let delivery = try delivery(of: message, as: .group(group))
        for member in members where member != caller {
            if try blocks.anyBetween(caller, member) {
                try withhold(message, from: member)
            } else {
                try deliver(delivery, to: member)
            }
        }
        return try deliverToSender(delivery, caller: caller, origin: origin)
    }

    /// `rate_limited` when the group's conversation already took `ChatRules.groupRate` messages
    /// of all its members within its span, saying when the next may go.
    private func checkGroupRate(_ conversation: Int64, now: Int64) throws {
        let rate = ChatRules.groupRate
        guard
            let oldest = try db.scalarInt(
                "SELECT at_ms FROM chat_messages WHERE conversation_id = ? ORDER BY seq DESC LIMIT 1 OFFSET ?",
                conversation, rate.count - 1), oldest > now - rate.milliseconds
        else { return }
        throw ServiceError(
            .rateLimited,
            "this group's conversation is busy: at most \(rate.count) messages of all its members in \(rate.span); \(ChatRules.tryAgain(oldest: oldest, within: rate.milliseconds, now: now))"
        )
    }

    /// The id of `group`'s conversation, made at its first message.
    private func groupConversation(_ group: Int64, now: Int64) throws -> Int64 {
        if let id = try db.scalarInt("SELECT id FROM chat_conversations WHERE group_id = ?", group) { return id }
        try db.run("INSERT INTO chat_conversations (group_id, started_ms) VALUES (?, ?)", group, now)
        return db.lastInsertRowID
    }

    /// Before a message: the seats of those who are no longer members go, and those who joined
    /// since the last message get one that starts after it.
    private func seatMembers(_ members: [Int64], of group: Int64, in conversation: Int64) throws {
        try db.run(
            """
            DELETE FROM chat_participants WHERE conversation_id = ?
              AND user_id NOT IN (SELECT user_id FROM group_members WHERE group_id = ?)
            """, conversation, group)
        let last = try db.scalarInt("SELECT last_seq FROM chat_conversations WHERE id = ?", conversation) ?? 0
        for member in members {
            try db.run(
                "INSERT OR IGNORE INTO chat_participants (conversation_id, user_id, joined_seq, read_seq) VALUES (?, ?, ?, ?)",
                conversation, member, last, last)
        }
    }
}
