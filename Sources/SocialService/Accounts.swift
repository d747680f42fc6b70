import Bus
import Contracts
import Foundation
import Sealing
import ServiceKit
import Storage
import Synchronization

/// The rules of account fields; each returns the value as stored or names the field at fault.
/// Every text is checked in bytes (and for control characters) before anything else.
enum AccountRules {

    /// 3-32 characters of `a-z 0-9 _ .`, stored lower-case.
    static func username(_ raw: String) throws(ServiceError) -> String {
        try Registration.usernameRule.checkBytesAndCharacters(raw)
        let username = raw.lowercased()
        guard (3...Registration.usernameRule.maxCharacters).contains(username.count) else {
            throw .invalid("username", "must be 3 to \(Registration.usernameRule.maxCharacters) characters")
        }
        guard username.unicodeScalars.allSatisfy({ ("a"..."z").contains($0) || ("0"..."9").contains($0) || $0 == "_" || $0 == "." }) else {
            throw .invalid("username", "may hold only a-z, 0-9, _ and .")
        }
        return username
    }

    /// `local@domain.tld`: one `@`, a dot in the domain, no spaces, at most 254 characters
    /// (1,016 bytes), and nothing invisible: no control, bidirectional or other formatting
    /// character (a zero-width space would make another account for the same address).
    static func email(_ email: String) throws(ServiceError) -> String {
        try Registration.emailRule.check(email)
        let parts = email.split(separator: "@", omittingEmptySubsequences: false)
        let domain = parts.count == 2 ? parts[1].split(separator: ".", omittingEmptySubsequences: false) : []
        guard parts.count == 2, !parts[0].isEmpty, domain.count >= 2, domain.allSatisfy({ !$0.isEmpty }),
            !email.contains(where: { $0.isWhitespace }),
            !email.unicodeScalars.contains(where: { $0.properties.generalCategory == .format })
        else {
            throw .invalid("email", "must be an email address such as name@example.com")
        }
        return email
    }

    /// 1-100 characters (400 bytes) once surrounding white space is trimmed, on one line.
    static func name(_ raw: String) throws(ServiceError) -> String {
        let name = try Registration.nameRule.trimmed(raw)
        guard !name.isEmpty else { throw .invalid("name", "must not be empty") }
        return name
    }

    /// At most 1024 bytes, checked before anything else (and before any hash).
    static func passwordBytes(_ password: String) throws(ServiceError) {
        guard password.utf8.count <= Registration.maxPasswordBytes else { throw .invalid("password", "must be at most \(Registration.maxPasswordBytes) bytes") }
    }

    /// At most 1024 bytes; at least 8 characters with an upper-case letter, a lower-case letter and a digit.
    static func password(_ password: String) throws(ServiceError) {
        try passwordBytes(password)
        guard password.count >= 8 else { throw .invalid("password", "must be at least 8 characters") }
        guard password.contains(where: \.isUppercase) else { throw .invalid("password", "must contain an upper-case letter") }
        guard password.contains(where: \.isLowercase) else { throw .invalid("password", "must contain a lower-case letter") }
        guard password.contains(where: \.isNumber) else { throw .invalid("password", "must contain a digit") }
    }

    static func role(_ role: String) throws(ServiceError) -> Role {
        guard let known = Role(rawValue: role) else { throw .invalid("role", "must be user or admin") }
        return known
    }

    /// The answer for a user who does not exist (or whom the caller may not see).
    static func noUser(_ id: Int64) -> ServiceError { ServiceError(.notFound, "no user with id \(id)", field: "user_id") }
}

/// Failed-login throttling per username. After 5 consecutive failures the next attempt must
/// wait 1 s after the last failure, then 2 s, 4 s, 8 s, 16 s; from 10 failures the username is
/// locked for 15 minutes after the last one. A success clears the count; so does a day
/// without failures.
enum LoginThrottle {
    static let freeFailures: Int64 = 5
    static let lockFailures: Int64 = 10
    static let lockMilliseconds: Int64 = 15 * 60_000
    static let forgetMilliseconds: Int64 = 86_400_000

    /// `rate_limited` when an attempt at `now` comes too soon after `failures` consecutive
    /// failures (the last at `lastFailure`, both in Unix milliseconds); nil when it may go on.
    static func refusal(failures: Int64, lastFailure: Int64, now: Int64) -> ServiceError? {
        guard failures >= freeFailures else { return nil }
        let locked = failures >= lockFailures
        let wait = locked ? lockMilliseconds : 1_000 << (failures - freeFailures)
        let remaining = lastFailure + wait - now
        guard remaining > 0 else { return nil }
        let seconds = (remaining + 999) / 1_000
        let retry = "try again in \(seconds) second\(seconds == 1 ? "" : "s")"
        return ServiceError(
            .rateLimited, locked ? "too many failed logins: locked for 15 minutes; \(retry)" : "too many failed logins; \(retry)",
            field: "username")
    }
}

/// Accounts and sessions: registration, passwords (hashed on a reader thread, throttled by
/// username), tokens and roles.
final class AccountStore: SocialFeature {
    let shared: SocialShared
    /// Password hashing (slow, and 64 MiB each at the production cost) on one reader thread
    /// at a time, so it takes at most one core, and checking tokens, which every signed-in
    /// request through the gateway waits on, always finds a thread free.
    let hashing: ReaderGate

    /// How many addresses each user's successful logins are remembered from.
    static let signInAddressesKept = 16
    /// How long a successful login keeps its address known.
    static let signInAddressDays = 90

    init(_ shared: SocialShared, hashing: ReaderGate) {
        self.shared = shared
        self.hashing = hashing
    }

    /// A hash that finds every slot taken.
    static let busyHashing = ServiceError(.unavailable, "busy checking other passwords; try again in a moment")
    static let wrongCredentials = ServiceError(.unauthenticated, "wrong username or password")
    static let invalidToken = ServiceError(.unauthenticated, "invalid or expired token", field: "token")

    /// Creates an account. The slow hash runs outside any transaction; the checks for a taken
    /// username or email run before it (to answer fast) and again in the insert's transaction.
    func register(_ request: Registration, role: Role) throws -> PublicUser {
        let username = try AccountRules.username(request.username)
        let email = try AccountRules.email(request.email)
        let name = try AccountRules.name(request.name)
        try AccountRules.password(request.password)
        try checkAvailable(username: username, email: email)
        let hash = try hashing.run(readers: worker.config.readers, refusal: Self.busyHashing) { try PasswordHash(hashing: request.password, cost: options.passwordCost) }
        return try db.transaction {
            try checkAvailable(username: username, email: email)
            try db.run(
                "INSERT INTO users (username, email, name, password_hash, role, created_at) VALUES (?, ?, ?, ?, ?, ?)",
                username, email, name, hash.encoded, role.rawValue, timestamp())
            return PublicUser(id: db.lastInsertRowID, username: username, name: name, role: role.rawValue)
        }
    }

    private func checkAvailable(username: String, email: String) throws {
        if try db.queryOne("SELECT 1 FROM users WHERE username = ?", username) != nil {
            throw ServiceError(.alreadyExists, "username '\(username)' is taken", field: "username")
        }
        if try db.queryOne("SELECT 1 FROM users WHERE lower(email) = lower(?)", email) != nil {
            throw ServiceError(.alreadyExists, "this email already has an account", field: "email")
        }
    }

    /// Checks a password and opens a session. An unknown username is answered at once, with
    /// no hash (usernames are public: `profile.get`). For a known one the attempt is counted as
    /// a failure before the (slow) check, so guesses sent in parallel are throttled too; a
    /// success clears the count. A username or password longer (in bytes) than any
    /// registration accepts is refused before anything else: `invalid_argument`, not counted.
    /// `client` is the address the request comes from (`RequestContext.client`).
    func login(_ credentials: Credentials, client: String?) throws -> LoginReply {
        guard credentials.username.utf8.count <= Registration.usernameRule.maxBytes else {
            throw ServiceError.invalid("username", "must be at most \(Registration.usernameRule.maxBytes) bytes")
        }
        try AccountRules.passwordBytes(credentials.password)
        let username = Self.throttleKey(credentials.username)
        guard let row = try db.queryOne("SELECT id, username, name, role, password_hash FROM users WHERE username = ?", username) else {
            throw Self.wrongCredentials
        }
        let id: Int64 = try row.decode("id")
        let stored = PasswordHash(encoded: try row.decode("password_hash"))
        let now = options.clock()
        let key = try throttleKey(username, userId: id, client: client, now: now)
        // Counted inside the gate: an attempt refused as busy has changed nothing.
        let matches = try hashing.run(readers: worker.config.readers, refusal: Self.busyHashing) {
            try countAttempt(key, now: now)
            return try stored.matches(credentials.password)
        }
        guard matches else { throw Self.wrongCredentials }

        let token = try HashedToken.generate()
        let expiresAt = timestamp(now.addingTimeInterval(options.sessionLifetime))
        try db.transaction {
            try db.run("DELETE FROM login_failures WHERE username = ?", key)
            if let client { try rememberSignIn(userId: id, client: client, now: now) }
            // Sessions that ended by themselves, anyone's, a few at a time.
            try db.run("DELETE FROM sessions WHERE token_hash IN (SELECT token_hash FROM sessions WHERE expires_at <= ? LIMIT 100)", timestamp(now))
            try db.run(
                "INSERT INTO sessions (token_hash, user_id, created_at, expires_at) VALUES (?, ?, ?, ?)",
                token.hash, id, timestamp(now), expiresAt)
        }
        return LoginReply(
            token: token.text, expiresAt: expiresAt,
            user: PublicUser(id: id, username: try row.decode("username"), name: try row.decode("name"), role: try row.decode("role")))
    }

    /// The `login_failures` key of a username as a client typed it. No username is longer
    /// than 32 characters; 64 bound what an attacker can make us store.
    static func throttleKey(_ username: String) -> String { String(username.lowercased().prefix(64)) }

    /// Where a password attempt for a user is counted: under the username and the client's
    /// address when the user has logged in from that address within `signInAddressDays`,
    /// else under the username alone. So others' failures lock the username for every
    /// address but those its owner uses, and the owner's own failures there lock only there.
    func throttleKey(_ username: String, userId: Int64, client: String?, now: Date) throws -> String {
        guard let client else { return username }
        let since = Int64(now.timeIntervalSince1970 * 1_000) - Int64(Self.signInAddressDays) * 86_400_000
        let known = try db.queryOne("SELECT 1 FROM sign_in_addresses WHERE user_id = ? AND client = ? AND last_at_ms >= ?", userId, client, since) != nil
        return known ? username + " @" + client : username
    }

    /// Remembers that the user logged in from `client`, keeping the user's most recent
    /// `signInAddressesKept` addresses.
    private func rememberSignIn(userId: Int64, client: String, now: Date) throws {
        try db.run(
            """
            INSERT INTO sign_in_addresses (user_id, client, last_at_ms) VALUES (?, ?, ?)
            ON CONFLICT (user_id, client) DO UPDATE SET last_at_ms = excluded.last_at_ms
            """, userId, client, Int64(now.timeIntervalSince1970 * 1_000))
        try db.run(
            """
            DELETE FROM sign_in_addresses WHERE user_id = ? AND client NOT IN
                (SELECT client FROM sign_in_addresses WHERE user_id = ? ORDER BY last_at_ms DESC LIMIT ?)
            """, userId, userId, Self.signInAddressesKept)
    }

    /// Counts a password attempt against `key` as a failure before the (slow) check, so guesses
    /// sent in parallel are throttled too: `rate_limited` (field `username`) when it comes too
    /// soon after earlier failures (`LoginThrottle`). The caller clears the count on a success.
    func countAttempt(_ key: String, now: Date) throws {
        let nowMs = Int64((now.timeIntervalSince1970 * 1_000).rounded(.down))
        try db.transaction {
            let row = try db.queryOne("SELECT failures, last_failure_ms FROM login_failures WHERE username = ?", key)
            // No row: no failures to remember.
            let last: Int64 = try row?.decode("last_failure_ms") ?? 0
            let failures: Int64 = nowMs - last >= LoginThrottle.forgetMilliseconds ? 0 : try row?.decode("failures") ?? 0
            if let refusal = LoginThrottle.refusal(failures: failures, lastFailure: last, now: nowMs) { throw refusal }
            try db.run("DELETE FROM login_failures WHERE last_failure_ms < ?", nowMs - LoginThrottle.forgetMilliseconds)
            try db.run(
                """
                INSERT INTO login_failures (username, failures, last_failure_ms) VALUES (?, ?, ?)
                ON CONFLICT (username) DO UPDATE SET failures = excluded.failures, last_failure_ms = excluded.last_failure_ms
                """, key, failures + 1, nowMs)
        }
    }

    /// Who a live session token signs in; `unauthenticated` for anything else.
    func validate(_ token: String) throws -> TokenOwner {
        guard let hash = try HashedToken.storedHash(of: token),
            let row = try db.queryOne(
                """
                SELECT s.user_id, u.role, s.expires_at FROM sessions s JOIN users u ON u.id = s.user_id
                WHERE s.token_hash = ? AND s.expires_at > ?
                """, hash, timestamp())
        else { throw Self.invalidToken }
        return try TokenOwner(userId: row.decode("user_id"), role: row.decode("role"), expiresAt: row.decode("expires_at"))
    }

    /// Ends the caller's session with this token at once (nothing to do if it has ended already),
    /// publishing `social.session.ended` in the same transaction.
    func logout(_ token: String, caller: Caller) throws {
        guard let hash = try HashedToken.storedHash(of: token) else { return }
        try db.transaction {
            try db.run("DELETE FROM sessions WHERE token_hash = ? AND user_id = ?", hash, caller.id)
            if db.changes > 0 { try worker.emit(SocialEvents.sessionEnded, SessionEnded(userId: caller.id)) }
        }
    }

    /// Makes a user a user or an admin; a change of role is published as `social.role.changed`
    /// in the same transaction (setting the role a user has already publishes nothing).
    func setRole(_ change: RoleChange) throws -> PublicUser {
        let role = try AccountRules.role(change.role)
        return try db.transaction {
            guard let before = try db.queryOne("SELECT role FROM users WHERE id = ?", change.userId)?.decode("role", as: String.self) else {
                throw AccountRules.noUser(change.userId)
            }
            if before != role.rawValue {
                try db.run("UPDATE users SET role = ? WHERE id = ?", role.rawValue, change.userId)
                try worker.emit(SocialEvents.roleChanged, RoleChange(userId: change.userId, role: role.rawValue))
            }
            return try publicUser(change.userId)
        }
    }

    func publicUser(_ id: Int64) throws -> PublicUser {
        guard let row = try db.queryOne("SELECT username, name, role FROM users WHERE id = ?", id) else { throw AccountRules.noUser(id) }
        return try PublicUser(id: id, username: row.decode("username"), name: row.decode("name"), role: row.decode("role"))
    }
}
