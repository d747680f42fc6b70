import Bus
import Contracts
import Foundation
import ServiceKit
import Storage

// Group conversations. Until groups exist in this service, no one is a member of any group.

extension SocialStore {
    /// The SQL condition (on `c`, a `chat_conversations` row, and `p`, the reader's seat) that
    /// keeps a group conversation only while the reader is a member.
    static let currentMembership = "c.group_id IS NULL"

    /// `not_found` (naming `field`) unless `user` is a member of `group`: the same answer for a
    /// group that does not exist, so a non-member learns nothing of it.
    func requireChatMember(group: Int64, user: Int64, field: String) throws {
        throw ServiceError(.notFound, "no group with id \(group)", field: field)
    }

    /// A message to a group the caller is a member of.
    func sendToGroup(_ request: ChatSend, group: Int64, caller: Int64, origin: String?) throws -> ChatSent {
        try requireChatMember(group: group, user: caller, field: "to")
        throw ServiceError(.notFound, "no group with id \(group)", field: "to")
    }
}
