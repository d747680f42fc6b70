import Bus
import Contracts
import Foundation
import ServiceCore
import ServiceKit
import SocialService
import Storage
import Testing

let wrongCredentials = ServiceError(.unauthenticated, "wrong username or password")
let invalidToken = ServiceError(.unauthenticated, "invalid or expired token", field: "token")

@Suite struct AccountTests {
    @Test func registerLoginValidateAndLogout() throws {
        let f = try SocialFixture()
        let registered = try f.call("auth.register", #"{"username":"Alice.W","email":"alice@example.com","name":"  Alice Walker ","password":"\#(SocialFixture.password)"}"#)
        // The public user only: no email, no hash.
        #expect(Set(registered.keys) == ["id", "username", "name", "role"])
        #expect(registered["id"] as? Int == 1 && registered["username"] as? String == "alice.w" && registered["name"] as? String == "Alice Walker")

        let login = try f.login("ALICE.W")
        #expect(login.token.hasPrefix("tb1_") && login.token.count == 47)
        #expect(login.expiresAt == "2026-07-01T00:00:00.000Z")
        #expect(login.user == PublicUser(id: 1, username: "alice.w", name: "Alice Walker", role: "user"))
        let owner = try f.client.call("auth.validate", TokenBody(token: login.token), as: TokenOwner.self)
        #expect(owner.userId == 1 && owner.role == "user" && owner.expiresAt == login.expiresAt)

        // Logging out ends that session only, at once.
        let other = try f.login("alice.w")
        #expect(f.error("auth.logout", #"{"token":"\#(login.token)"}"#)?.code == .unauthenticated)
        #expect(try f.call("auth.logout", #"{"token":"\#(login.token)"}"#, as: 1).isEmpty)
        #expect(throws: invalidToken) { try f.client.call("auth.validate", TokenBody(token: login.token), as: TokenOwner.self) }
        #expect(try f.client.call("auth.validate", TokenBody(token: other.token), as: TokenOwner.self).userId == 1)
        #expect(try f.call("auth.logout", #"{"token":"\#(login.token)"}"#, as: 1).isEmpty)  // again: nothing to end
    }

    @Test(arguments: [
        ("Sh0rtPw", "must be at least 8 characters"),
        ("no-upper-case-1", "must contain an upper-case letter"),
        ("NO-LOWER-CASE-1", "must contain a lower-case letter"),
        ("No-Digits-Here", "must contain a digit"),
        (String(repeating: "Aa1", count: 342), "must be at most 1024 bytes"),
    ])
    func weakPasswordsSayWhichRuleFailed(password: String, message: String) throws {
        let f = try SocialFixture()
        let account = Registration(username: "erin", email: "erin@example.com", name: "Erin", password: password)
        #expect(throws: ServiceError.invalid("password", message)) { try f.client.call("auth.register", account, as: PublicUser.self) }
        // Nothing was stored: the name is still free and the first id is still 1.
        #expect(try f.register("erin") == 1)
    }

    @Test func usernamesAndEmailsAreCheckedAndUnique() throws {
        let f = try SocialFixture()
        try f.register("bob")
        func refusal(_ username: String, _ email: String, name: String = "Bob") -> ServiceError? {
            let body = Registration(username: username, email: email, name: name, password: SocialFixture.password)
            do {
                _ = try f.client.call("auth.register", body, as: PublicUser.self)
                return nil
            } catch {
                return error
            }
        }
        #expect(refusal("BOB", "other@example.com") == ServiceError(.alreadyExists, "username 'bob' is taken", field: "username"))
        #expect(refusal("bobby", "Bob@Example.COM") == ServiceError(.alreadyExists, "this email already has an account", field: "email"))
        for username in ["ab", String(repeating: "b", count: 33)] {
            #expect(refusal(username, "x@example.com") == .invalid("username", "must be 3 to 32 characters"))
        }
        for username in ["bob smith", "bøb", "bob-smith", "bob@home"] {
            #expect(refusal(username, "x@example.com") == .invalid("username", "may hold only a-z, 0-9, _ and ."))
        }
        for email in ["bob", "bob@example", "a@b@c.de", "bob @example.com", "@example.com", "bob@.com", "bob@example."] {
            #expect(refusal("robert", email) == .invalid("email", "must be an email address such as name@example.com"), "\(email)")
        }
        #expect(refusal("robert", String(repeating: "r", count: 243) + "@example.com") == .invalid("email", "must be at most 254 characters"))
        #expect(refusal("robert", "robert@example.com", name: " \n ") == .invalid("name", "must not be empty"))
        #expect(refusal("robert", "robert@example.com", name: String(repeating: "n", count: 101)) == .invalid("name", "must be at most 100 characters"))
        #expect(try f.register("b_o.b2") == 2)
    }

    @Test func wrongPasswordAndUnknownUserGetTheSameAnswer() throws {
        let f = try SocialFixture()
        try f.register("frank")
        #expect(throws: wrongCredentials) { try f.login("frank", "Wrong-passw0rd") }
        #expect(throws: wrongCredentials) { try f.login("nobody", "Wrong-passw0rd") }
        #expect(throws: wrongCredentials) { try f.login("", "") }
        #expect(try f.login("frank").user.username == "frank")
    }

    @Test func failedLoginsAreThrottledThenLocked() throws {
        let f = try SocialFixture()
        try f.register("carol")
        func tooSoon(_ wait: String) -> ServiceError { ServiceError(.rateLimited, "too many failed logins; try again in \(wait)", field: "username") }
        for _ in 0..<5 { #expect(throws: wrongCredentials) { try f.login("carol", "Wrong-passw0rd") } }
        // Five failures: the next attempt waits a second, whatever its password and case.
        #expect(throws: tooSoon("1 second")) { try f.login("CAROL") }
        f.clock.advance(0.4)
        #expect(throws: tooSoon("1 second")) { try f.login("carol") }
        f.clock.advance(0.6)
        #expect(throws: wrongCredentials) { try f.login("carol", "Wrong-passw0rd") }
        // Each further failure doubles the wait.
        for wait in [2, 4, 8, 16] {
            #expect(throws: tooSoon("\(wait) seconds")) { try f.login("carol") }
            f.clock.advance(TimeInterval(wait))
            #expect(throws: wrongCredentials) { try f.login("Carol", "Wrong-passw0rd") }
        }
        // Ten failures: locked for 15 minutes, even for the right password.
        let locked = ServiceError(.rateLimited, "too many failed logins: locked for 15 minutes; try again in 900 seconds", field: "username")
        #expect(throws: locked) { try f.login("carol") }
        f.clock.advance(899)
        #expect(throws: ServiceError(.rateLimited, "too many failed logins: locked for 15 minutes; try again in 1 second", field: "username")) {
            try f.login("carol")
        }
        f.clock.advance(1)
        #expect(try f.login("carol").user.username == "carol")
        // A success starts the count over.
        for _ in 0..<5 { #expect(throws: wrongCredentials) { try f.login("carol", "Wrong-passw0rd") } }
        #expect(throws: tooSoon("1 second")) { try f.login("carol") }

        // A day without failures forgets them.
        f.clock.advance(86_400)
        for _ in 0..<5 { #expect(throws: wrongCredentials) { try f.login("carol", "Wrong-passw0rd") } }
        #expect(throws: tooSoon("1 second")) { try f.login("carol") }

        // Unknown usernames are answered at once, never throttled and never stored: a flood
        // of made-up names costs no hash and no row.
        for index in 0..<20 { #expect(throws: wrongCredentials) { try f.login(index < 10 ? "nobody" : "nobody\(index)", "Wrong-passw0rd") } }
        let stored = try Database(path: f.databasePath).queryOne("SELECT count(*) AS n FROM login_failures WHERE username LIKE 'nobody%'")
        #expect(try stored?.decode("n", as: Int64.self) == 0)
    }

    /// Others' failed logins lock a username everywhere but at the addresses its owner logged
    /// in from lately; the owner's own failures there lock only there.
    @Test func othersFailuresDoNotLockTheOwnerOutWhereTheyLogIn() throws {
        let f = try SocialFixture()
        try f.register("olga")
        let home = "198.51.100.7", office = "2001:db8:5:6::/64"
        func tooSoon(_ wait: String) -> ServiceError { ServiceError(.rateLimited, "too many failed logins; try again in \(wait)", field: "username") }
        #expect(try f.login("olga", from: home).user.username == "olga")
        #expect(try f.login("olga", from: office).user.username == "olga")
        // Ten failures from addresses olga never used lock the username for such addresses.
        for index in 0..<10 {
            if index >= 5 { f.clock.advance(16) }
            #expect(throws: wrongCredentials) { try f.login("olga", "Wrong-passw0rd", from: "203.0.113.\(index)") }
        }
        #expect(throws: ServiceError.self) { try f.login("olga", from: "203.0.113.99") }
        #expect(throws: ServiceError.self) { try f.login("olga") }
        // At home and at the office olga still logs in.
        #expect(try f.login("olga", from: home).user.username == "olga")
        #expect(try f.login("olga", from: office).user.username == "olga")
        // Her own failures at home slow home only.
        for _ in 0..<5 { #expect(throws: wrongCredentials) { try f.login("olga", "Wrong-passw0rd", from: home) } }
        #expect(throws: tooSoon("1 second")) { try f.login("olga", from: home) }
        #expect(try f.login("olga", from: office).user.username == "olga")
        // An address is known for 90 days after the last login from it.
        f.clock.advance(91 * 86_400)
        for index in 0..<5 { #expect(throws: wrongCredentials) { try f.login("olga", "Wrong-passw0rd", from: "203.0.113.\(index)") } }
        #expect(throws: tooSoon("1 second")) { try f.login("olga", from: office) }
    }

    @Test func forgedTruncatedAndExpiredTokensAreRefused() throws {
        let f = try SocialFixture()
        try f.register("dave")
        let token = try f.login("dave").token
        let flipped = String(token.dropLast()) + (token.hasSuffix("A") ? "B" : "A")
        for bad in ["tb1_" + String(repeating: "A", count: 43), String(token.dropLast()), flipped, token + "A", "", "hello", "tb2_" + token.dropFirst(4)] {
            #expect(throws: invalidToken) { try f.client.call("auth.validate", TokenBody(token: bad), as: TokenOwner.self) }
        }
        #expect(f.error("auth.validate", "{}") == .invalid("token", "missing required field token"))
        f.clock.advance(30 * 86_400 - 1)
        #expect(try f.client.call("auth.validate", TokenBody(token: token), as: TokenOwner.self).userId == 1)
        f.clock.advance(1)
        #expect(throws: invalidToken) { try f.client.call("auth.validate", TokenBody(token: token), as: TokenOwner.self) }
    }

    @Test func rolesComeFromTheDatabaseAndOnlyAdminsChangeThem() throws {
        let f = try SocialFixture()
        let admin = try f.register("root", admin: true)
        let user = try f.register("grace")
        #expect(try f.login("root").user.role == "admin")
        // Claiming to be an admin in the envelope changes nothing: the stored role decides.
        let denied = ServiceError(.permissionDenied, "admin.set_role needs an admin")
        do {
            try f.call("admin.set_role", #"{"user_id":\#(user),"role":"admin"}"#, as: user, role: "admin")
            Issue.record("a user changed a role")
        } catch {
            #expect(error == denied)
        }
        #expect(f.error("admin.set_role", #"{"user_id":\#(user),"role":"king"}"#, as: admin) == .invalid("role", "must be user or admin"))
        #expect(f.error("admin.set_role", #"{"user_id":99,"role":"admin"}"#, as: admin) == ServiceError(.notFound, "no user with id 99", field: "user_id"))
        #expect(try f.call("admin.set_role", #"{"user_id":\#(user),"role":"admin"}"#, as: admin)["role"] as? String == "admin")
        let token = try f.login("grace").token
        #expect(try f.client.call("auth.validate", TokenBody(token: token), as: TokenOwner.self).role == "admin")
    }

    @Test func requestsThatNeedAUserRefuseCallersWithoutOne() throws {
        let f = try SocialFixture()
        try f.register("heidi")
        let needing: [(String, String)] = [
            ("auth.logout", #"{"token":"x"}"#), ("admin.set_role", #"{"user_id":1,"role":"admin"}"#), ("profile.update", #"{"bio":"hi"}"#),
            ("reviews.add", #"{"place_id":1,"rating":5}"#), ("reviews.delete", #"{"review_id":1}"#), ("social.follow", #"{"user_id":1}"#),
            ("social.unfollow", #"{"user_id":1}"#), ("social.feed", "{}"), ("social.followers", "{}"), ("social.following", "{}"),
        ]
        for (type, body) in needing {
            #expect(f.error(type, body) == ServiceError(.unauthenticated, "\(type) needs a signed-in user"), "\(type)")
            // An identity the service does not know is no identity.
            #expect(f.error(type, body, as: 42) == ServiceError(.unauthenticated, "no user with id 42"), "\(type)")
        }
        #expect(f.error("profile.get") == ServiceError(.unauthenticated, "profile.get needs a user_id or a signed-in user"))
    }

    @Test func noPasswordOrTokenInTheDatabaseFilesOrTheLogs() throws {
        let f = try SocialFixture()
        try f.register("ivan")
        let token = try f.login("ivan").token
        #expect(throws: wrongCredentials) { try f.login("ivan", "Wrong-Passw0rd-xyz") }
        #expect(throws: wrongCredentials) { try f.login("ghost", "Ghost-Passw0rd-xyz") }
        let weak = Registration(username: "judy", email: "judy@example.com", name: "Judy", password: "weak-passw0rd-xyz")
        #expect(throws: ServiceError.self) { try f.client.call("auth.register", weak, as: PublicUser.self) }
        try f.call("auth.logout", #"{"token":"\#(token)"}"#, as: 1)

        let files = [f.databasePath, f.databasePath + "-wal", f.databasePath + "-shm"].compactMap { FileManager.default.contents(atPath: $0) }
        #expect(files.count >= 2)
        let logs = Data(f.logs.text.utf8)
        #expect(f.logs.text.contains("migrated"))
        for secret in [SocialFixture.password, "Wrong-Passw0rd-xyz", "Ghost-Passw0rd-xyz", "weak-passw0rd-xyz", token] {
            for (index, bytes) in (files + [logs]).enumerated() {
                #expect(bytes.range(of: Data(secret.utf8)) == nil, "found \(secret.prefix(6))… in file \(index)")
            }
        }
    }

    @Test func theProductionCostIsArgon2idInteractiveAndUnknownUsersCostNoHash() throws {
        #expect(SocialOptions().passwordCost == .interactive)
        let f = try SocialFixture(cost: .interactive)
        try f.register("kate")
        let hash = try Database(path: f.databasePath).queryOne("SELECT password_hash FROM users WHERE username = 'kate'")?.decode("password_hash", as: String.self)
        #expect(hash?.hasPrefix("$argon2id$v=19$m=65536,t=2,p=1$") == true)

        func attempt(_ username: String) -> Duration {
            ContinuousClock().measure { #expect(throws: wrongCredentials) { try f.login(username, "Wrong-passw0rd") } }
        }
        // The fastest of three each, taken in turns, so a busy moment of the machine weighs on both alike.
        var known = Duration.seconds(1_000), unknown = Duration.seconds(1_000)
        for _ in 0..<3 {
            known = min(known, attempt("kate"))
            unknown = min(unknown, attempt("nobody"))
        }
        #expect(unknown < known / 10, "known user \(known), unknown \(unknown)")
    }

    /// However many readers the service has, it hashes one password at a time (one core):
    /// three logins sent at once to four readers, one is checked and two are refused as busy,
    /// having changed nothing.
    @Test func oneHashAtATimeWhateverTheReaders() throws {
        let f = try SocialFixture(cost: .interactive, readers: 4)
        try f.register("lena")
        let body = try JSONCoding.encoder.encode(Credentials(username: "lena", password: SocialFixture.password))
        let pending = (0..<3).map { _ in f.client.start(type: "auth.login", body: body, timeoutMilliseconds: 5_000) }
        var signedIn = 0, busy = 0
        for reply in pending {
            do {
                _ = try reply.wait()
                signedIn += 1
            } catch {
                #expect(error == ServiceError(.unavailable, "busy checking other passwords; try again in a moment"))
                busy += 1
            }
        }
        #expect(signedIn == 1 && busy == 2)
        // The refusals counted no failure.
        let failures = try Database(path: f.databasePath).queryOne("SELECT count(*) AS n FROM login_failures")
        #expect(try failures?.decode("n", as: Int64.self) == 0)
    }

    @Test func passwordCostComesFromTheEnvironment() throws {
        #expect(try SocialOptions(environment: [:]).passwordCost == .interactive)
        #expect(try SocialOptions(environment: ["TOURBUS_PASSWORD_COST": "moderate"]).passwordCost == .moderate)
        #expect(try SocialOptions(environment: ["TOURBUS_PASSWORD_COST": "minimum"]).passwordCost == .minimum)
        #expect(throws: ConfigError("TOURBUS_PASSWORD_COST must be interactive, moderate or minimum, got 'cheap'")) {
            try SocialOptions(environment: ["TOURBUS_PASSWORD_COST": "cheap"])
        }
    }
}
