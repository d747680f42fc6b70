import Bus
import Contracts
import Foundation
import ServiceKit
import Storage

/// Who follows whom.
final class FollowStore: SocialFeature {
    let shared: SocialShared
    let blocks: BlockStore

    init(_ shared: SocialShared, blocks: BlockStore) {
        self.shared = shared
        self.blocks = blocks
    }

    /// Starts (or keeps) following `userId`. A user who blocks `userId` must unblock them
    /// first (`conflict`); a follow of a user who blocks the caller is answered and kept as
    /// usual, but shown to the caller alone (`BlockRules.followShown`) while the block lasts.
    func follow(_ userId: Int64, caller: Caller) throws -> FollowState {
        guard userId != caller.id else { throw ServiceError.invalid("user_id", "cannot follow yourself") }
        return try db.transaction {
            try requireUser(userId)
            if try blocks.contains(blocker: caller.id, blocked: userId) { throw BlockRules.youBlock(userId) }
            try db.run("INSERT OR IGNORE INTO follows (follower_id, followee_id, created_at) VALUES (?, ?, ?)", caller.id, userId, timestamp())
            return FollowState(userId: userId, following: true)
        }
    }

    /// Stops following `userId` (nothing to do when the caller did not follow them).
    func unfollow(_ userId: Int64, caller: Caller) throws -> FollowState {
        try requireUser(userId)
        try db.run("DELETE FROM follows WHERE follower_id = ? AND followee_id = ?", caller.id, userId)
        return FollowState(userId: userId, following: false)
    }

    /// Page cursors of the follow lists: the id of the last follow seen.
    static let followCursor = IDCursor(tag: "f|")

    /// Who follows `userId` (`followers`), or whom `userId` follows; the newest follow first,
    /// `limit` users (fewer when they would take more than the page budget). A signed-in
    /// `viewer` sees no user they block: such a `userId` is `not_found`, as their profile is,
    /// and such users are left out of the list. A follow of a user who blocks its follower is
    /// listed to that follower alone.
    func follows(of userId: Int64, viewer: Int64?, followers: Bool, cursor: String?, limit: Int) throws -> UserPage {
        let (own, other) = followers ? ("followee_id", "follower_id") : ("follower_id", "followee_id")
        let after = try cursor.map(Self.followCursor.decode) ?? Int64.max
        try blocks.requireVisibleUser(userId, viewer: viewer)
        let hidden = viewer.map { _ in "AND " + BlockRules.shown("u.id") } ?? ""
        return try shared.userPage(
            """
            SELECT f.id AS page_id, u.id AS user_id, u.username, u.name FROM follows f JOIN users u ON u.id = f.\(other)
            WHERE f.\(own) = ? AND f.id < ? AND \(BlockRules.followShown()) \(hidden) ORDER BY f.id DESC LIMIT ?
            """, [userId, after, viewer] + (viewer.map { [$0] } ?? []), cursor: Self.followCursor, limit: limit)
    }

    /// Follows both ways of user `id`: part of erasing an account, in its transaction.
    func erase(of id: Int64) throws {
        try db.run("DELETE FROM follows WHERE follower_id = ? OR followee_id = ?", id, id)
    }
}
