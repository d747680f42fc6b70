import Bus
import Contracts
import Foundation
import ServiceKit
import Storage

extension SocialStore {
    /// What an outbox row that named a deleted user becomes: its `seq` stays (replay stays
    /// gap-free), its body is `{}`, and every follower ignores the type.
    public static let redactedType = "social.redacted"
    /// A wrong password from a signed-in caller: the caller is known, the proof is not.
    static let wrongPassword = ServiceError(.permissionDenied, "wrong password", field: "password")

    /// Deletes the caller's account after checking their password as `auth.login` does: the
    /// same byte bound first, the same hashing gate, the attempt counted in the same
    /// throttle (by username) before the slow check, and a decoy hash when the account has
    /// gone meanwhile. Then `erase(user:username:email:)` in one transaction.
    func deleteAccount(_ request: AccountDeletion, caller: Caller) throws -> AccountDeleted {
        try AccountRules.passwordBytes(request.password)
        return try hashing.run(readers: worker.config.readers, refusal: Self.busyHashing) { try checkedDeletion(request.password, caller: caller) }
    }

    private func checkedDeletion(_ password: String, caller: Caller) throws -> AccountDeleted {
        let row = try db.queryOne("SELECT username, email, password_hash FROM users WHERE id = ?", caller.id)
        let username: String? = try row?.decode("username")
        if let username {
            do {
                try countAttempt(Self.throttleKey(username), now: options.clock())
            } catch var refusal as ServiceError where refusal.field == "username" {
                refusal.field = "password"  // the guess this request makes; it has no username
                throw refusal
            }
        }
        let stored = try row.map { row throws(RowError) in PasswordHash(encoded: try row.decode("password_hash")) } ?? decoy.value()
        guard try stored.matches(password), let row, let username else {
            if row == nil { throw ServiceError(.unauthenticated, "no user with id \(caller.id)") }
            throw Self.wrongPassword
        }
        try db.transaction {
            // Another deletion of the same account may have committed since the check.
            guard try db.queryOne("SELECT 1 FROM users WHERE id = ?", caller.id) != nil else {
                throw ServiceError(.unauthenticated, "no user with id \(caller.id)")
            }
            try erase(user: caller.id, username: username, email: try row.decode("email"))
        }
        return AccountDeleted(userId: caller.id)
    }

    /// Removes every row of user `id` from this service, inside the caller's transaction:
    /// their reviews (publishing each affected place's new rating), follows both ways,
    /// sessions, devices, their groups (`eraseGroups`: memberships, passing on the groups they
    /// owned, invitations, blocks both ways, their position), their chat seats (`eraseChat`:
    /// their messages stay, blanked), their photo and open photo uploads, the login failures
    /// counted against their username (or their e-mail typed as one), and the account with its
    /// profile. Earlier outbox events that name the user
    /// become `social.redacted` with body `{}`; then `social.user.deleted` is emitted, the one
    /// row left that holds the id.
    private func erase(user id: Int64, username: String, email: String) throws {
        let places = try db.query("SELECT DISTINCT place_id FROM reviews WHERE user_id = ? ORDER BY place_id", id)
            .decode("place_id", as: Int64.self)
        try db.run("DELETE FROM reviews WHERE user_id = ?", id)
        for place in places { try publishRating(of: place) }
        try db.run("DELETE FROM follows WHERE follower_id = ? OR followee_id = ?", id, id)
        try db.run("DELETE FROM sessions WHERE user_id = ?", id)
        try db.run("DELETE FROM devices WHERE user_id = ?", id)
        try eraseGroups(of: id)
        try eraseChat(of: id)
        try db.run("DELETE FROM photos WHERE user_id = ?", id)
        try db.run("DELETE FROM photo_uploads WHERE user_id = ?", id)  // and their chunks
        try db.run("DELETE FROM login_failures WHERE username IN (?, ?)", Self.throttleKey(username), Self.throttleKey(email))
        try db.run("DELETE FROM users WHERE id = ?", id)
        // Every body that names a user does so as `user_id` (session ended, role changed, devices).
        try db.run(
            """
            UPDATE outbox SET type = ?, body = CAST('{}' AS BLOB)
            WHERE json_valid(CAST(body AS TEXT)) AND json_extract(CAST(body AS TEXT), '$.user_id') = ?
            """, Self.redactedType, id)
        try worker.emit(SocialEvents.userDeleted, UserDeleted(userId: id))
    }
}
