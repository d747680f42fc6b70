import Bus
import Contracts
import Foundation
import ServiceKit
import Storage

// Blocks: a user who blocks another no longer sees them anywhere social shows users (profiles,
// follow lists, reviews, groups — except to a group's owner —, the live map, pushes). The
// blocked user is never told: they see the blocker as a stranger sees a user who blocks no one.
// What they send the blocker (a follow, a message, an invitation, a map follow) is answered and
// kept as usual and shown to them alone. Where the two are (their positions, presence at a
// place, a group's chat) each is hidden from the other, which tells nothing: a stranger cannot
// tell either whether someone is there.

/// The rules of blocks.
enum BlockRules {
    /// The most users one user blocks at once.
    static let maxBlocks = 1_000

    /// An SQL condition that holds when the user in column `column` and the viewer do not
    /// block each other, either way: what keeps where each is (positions, presence at a place)
    /// from the other. It binds two arguments, the viewer's id both times.
    static func apart(_ column: String) -> String {
        """
        NOT EXISTS (SELECT 1 FROM blocks WHERE blocker_id = ? AND blocked_id = \(column)) \
        AND NOT EXISTS (SELECT 1 FROM blocks WHERE blocker_id = \(column) AND blocked_id = ?)
        """
    }

    /// An SQL condition that holds when the viewer does not block the user in column `column`:
    /// what leaves the users a viewer blocks out of what they are shown. A user the viewer is
    /// blocked by is shown as to anyone. It binds one argument, the viewer's id.
    static func shown(_ column: String) -> String {
        "NOT EXISTS (SELECT 1 FROM blocks WHERE blocker_id = ? AND blocked_id = \(column))"
    }

    /// An SQL condition that holds when the follow of row alias `f` (of `follows` or
    /// `group_map_follows`) counts for the viewer: its followee does not block its follower, or
    /// the viewer is that follower, who is never told of the block. It binds one argument, the
    /// viewer's id (nil for an anonymous viewer).
    static func followShown(_ f: String = "f") -> String {
        "(\(f).follower_id IS ? OR NOT EXISTS (SELECT 1 FROM blocks WHERE blocker_id = \(f).followee_id AND blocked_id = \(f).follower_id))"
    }

    /// The refusal of something the caller may not do to a user they block (follow, invite):
    /// they unblock first. The blocker knows of the block, so it is said plainly.
    static func youBlock(_ user: Int64, field: String = "user_id") -> ServiceError {
        ServiceError(.conflict, "you block user \(user); unblock them (social.unblock) first", field: field)
    }
}

/// Blocks between users, which every feature that shows users asks.
final class BlockStore: SocialFeature {
    let shared: SocialShared

    init(_ shared: SocialShared) { self.shared = shared }

    /// Whether either of `a` and `b` blocks the other.
    func anyBetween(_ a: Int64, _ b: Int64) throws -> Bool {
        try db.queryOne("SELECT 1 FROM blocks WHERE (blocker_id = ? AND blocked_id = ?) OR (blocker_id = ? AND blocked_id = ?)", a, b, b, a) != nil
    }

    /// Whether `blocker` blocks `blocked` (one direction only).
    func contains(blocker: Int64, blocked: Int64) throws -> Bool {
        try db.queryOne("SELECT 1 FROM blocks WHERE blocker_id = ? AND blocked_id = ?", blocker, blocked) != nil
    }

    /// `not_found` (field `user_id`, as for no user at all) unless user `id` exists and
    /// `viewer` does not block them: `profile.get`'s rules, which `profile.photo` and the follow
    /// lists follow. A user who blocks the viewer is shown as to anyone.
    func requireVisibleUser(_ id: Int64, viewer: Int64?) throws {
        if let viewer, viewer != id, try contains(blocker: viewer, blocked: id) { throw AccountRules.noUser(id) }
        try requireUser(id)
    }

    /// `social.block`: blocks `userId`, ending the caller's follows of them (as a user and on a
    /// group's map) and the invitations the caller sent them. What they sent the caller (follows,
    /// invitations) stays, unseen by the caller and shown to them as before. It deletes those
    /// rows of the follows' and groups' tables itself, in its one transaction.
    func block(_ userId: Int64, caller: Caller) throws -> BlockState {
        guard userId != caller.id else { throw ServiceError.invalid("user_id", "cannot block yourself") }
        return try db.transaction {
            try requireUser(userId)
            if try !contains(blocker: caller.id, blocked: userId) {
                let count = try db.scalarInt("SELECT count(*) FROM blocks WHERE blocker_id = ?", caller.id) ?? 0
                guard count < BlockRules.maxBlocks else {
                    throw ServiceError(.conflict, "you block \(BlockRules.maxBlocks) users, the most; unblock one (social.unblock) first", field: "user_id")
                }
                try db.run("INSERT INTO blocks (blocker_id, blocked_id, created_at) VALUES (?, ?, ?)", caller.id, userId, timestamp())
            }
            try db.run("DELETE FROM follows WHERE follower_id = ? AND followee_id = ?", caller.id, userId)
            try db.run("DELETE FROM group_invitations WHERE user_id = ? AND invited_by = ?", userId, caller.id)
            try db.run("DELETE FROM group_map_follows WHERE follower_id = ? AND followee_id = ?", caller.id, userId)
            return BlockState(userId: userId, blocked: true)
        }
    }

    /// `social.unblock`: stops blocking `userId` (nothing to do when the caller did not). What
    /// the block ended (the caller's follows, invitations) stays ended; what they sent the
    /// caller and the block kept unseen (follows, an invitation) shows again (with no push).
    func unblock(_ userId: Int64, caller: Caller) throws -> BlockState {
        try requireUser(userId)
        try db.run("DELETE FROM blocks WHERE blocker_id = ? AND blocked_id = ?", caller.id, userId)
        return BlockState(userId: userId, blocked: false)
    }

    /// Page cursors of `social.blocks`: the id of the last block seen.
    static let blockCursor = IDCursor(tag: "b|")

    /// `social.blocks`: the users `blocker` blocks, the most recent block first.
    func blockList(of blocker: Int64, cursor: String?, limit: Int) throws -> UserPage {
        let after = try cursor.map(Self.blockCursor.decode) ?? Int64.max
        return try shared.userPage(
            """
            SELECT b.id AS page_id, u.id AS user_id, u.username, u.name FROM blocks b JOIN users u ON u.id = b.blocked_id
            WHERE b.blocker_id = ? AND b.id < ? ORDER BY b.id DESC LIMIT ?
            """, [blocker, after], cursor: Self.blockCursor, limit: limit)
    }

    /// Blocks both ways of user `id`: part of erasing an account, in its transaction.
    func erase(of id: Int64) throws {
        try db.run("DELETE FROM blocks WHERE blocker_id = ? OR blocked_id = ?", id, id)
    }
}
