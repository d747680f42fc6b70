import Bus
import Contracts
import Foundation
import ServiceKit
import Storage

extension SocialStore {
    /// `auth.delete`: deletes the caller's account once `AccountStore.checkDeletion` has
    /// checked their password, then erases every row of theirs from each feature in one
    /// transaction: their reviews (publishing each affected place's new rating), follows both
    /// ways, devices, their groups (memberships, passing on the groups they owned, invitations,
    /// their position), blocks both ways, their chat seats (their messages stay, blanked), their
    /// photo and open photo uploads, and last the account itself (`AccountStore.erase`).
    func deleteAccount(_ request: AccountDeletion, caller: Caller, client: String?) throws -> AccountDeleted {
        let id = caller.id
        try accounts.checkDeletion(request, caller: caller, client: client) { account in
            try db.transaction {
                // Another deletion of the same account may have committed since the check.
                guard try db.queryOne("SELECT 1 FROM users WHERE id = ?", id) != nil else {
                    throw ServiceError(.unauthenticated, "no user with id \(id)")
                }
                try reviews.erase(of: id)
                try follows.erase(of: id)
                try devices.erase(of: id)
                try groups.erase(of: id)
                try blocks.erase(of: id)
                try chat.erase(of: id)
                try photos.erase(of: id)
                try accounts.erase(of: id, username: account.username, email: account.email)
            }
        }
        return AccountDeleted(userId: id)
    }
}

extension AccountStore {
    /// What an outbox row that named a deleted user becomes: its `seq` stays (replay stays
    /// gap-free), its body is `{}`, and every follower ignores the type.
    static let redactedType = "social.redacted"
    /// A wrong password from a signed-in caller: the caller is known, the proof is not.
    static let wrongPassword = ServiceError(.permissionDenied, "wrong password", field: "password")

    /// Checks the password of an account's deletion as `auth.login` does: the same byte bound
    /// first, the attempt counted in the same throttle (by username, and address where the
    /// user logs in) before the slow check, the same hashing gate. Then `erase` with the
    /// account's username and e-mail, still holding the hashing gate's slot, so deletions
    /// waiting for the write lock never take the reader kept free for tokens.
    func checkDeletion(
        _ request: AccountDeletion, caller: Caller, client: String?, then erase: ((username: String, email: String)) throws -> Void
    ) throws {
        try AccountRules.passwordBytes(request.password)
        guard let row = try db.queryOne("SELECT username, email, password_hash FROM users WHERE id = ?", caller.id) else {
            throw ServiceError(.unauthenticated, "no user with id \(caller.id)")
        }
        let username: String = try row.decode("username")
        let stored = PasswordHash(encoded: try row.decode("password_hash"))
        let now = options.clock()
        let key = try throttleKey(username, userId: caller.id, client: client, now: now)
        // Counted inside the gate: an attempt refused as busy has changed nothing.
        try hashing.run(readers: worker.config.readers, refusal: Self.busyHashing) {
            do {
                try countAttempt(key, now: now)
            } catch var refusal as ServiceError where refusal.field == "username" {
                refusal.field = "password"  // the guess this request makes; it has no username
                throw refusal
            }
            guard try stored.matches(request.password) else { throw Self.wrongPassword }
            try erase((username, try row.decode("email")))
        }
    }

    /// The account's own rows, last of an account's erasure and in its transaction: its
    /// sessions, the login failures counted against its username (alone or with an address
    /// it logs in from, or its e-mail typed as a username), the addresses it logged in from,
    /// and the account with its profile. Earlier outbox events that name the user
    /// become `social.redacted` with body `{}`; then `social.user.deleted` is emitted, the one
    /// row left that holds the id.
    func erase(of id: Int64, username: String, email: String) throws {
        try db.run("DELETE FROM sessions WHERE user_id = ?", id)
        try db.run("DELETE FROM login_failures WHERE username IN (?, ?)", Self.throttleKey(username), Self.throttleKey(email))
        try db.run("DELETE FROM login_failures WHERE username IN (SELECT ? || ' @' || client FROM sign_in_addresses WHERE user_id = ?)", username, id)
        try db.run("DELETE FROM sign_in_addresses WHERE user_id = ?", id)
        try db.run("DELETE FROM users WHERE id = ?", id)
        // Every body that names a user does so as `user_id` (session ended, role changed,
        // devices), which the index `outbox_by_user` (social migration 4) finds without reading
        // the rest of the outbox.
        try Outbox(database: db).redact(user: id, as: Self.redactedType)
        try worker.emit(SocialEvents.userDeleted, UserDeleted(userId: id))
    }
}
