import CSodium
import Contracts
import Foundation
import Sealing

// Social's own libsodium calls (argon2id passwords, session tokens); the shared ones are in Sealing.

/// How much work and memory one password hash costs (argon2id, libsodium's named limits).
public enum PasswordCost: String, Sendable, CaseIterable {
    /// `OPSLIMIT_INTERACTIVE`/`MEMLIMIT_INTERACTIVE` (2 passes, 64 MiB): the production default.
    case interactive
    /// `OPSLIMIT_MODERATE`/`MEMLIMIT_MODERATE` (3 passes, 256 MiB), for hosts that can afford it.
    case moderate
    /// The least argon2id allows (1 pass, 8 KiB): for tests only, it protects nothing.
    case minimum

    var opsLimit: UInt64 {
        switch self {
        case .interactive: UInt64(crypto_pwhash_opslimit_interactive())
        case .moderate: UInt64(crypto_pwhash_opslimit_moderate())
        case .minimum: UInt64(crypto_pwhash_opslimit_min())
        }
    }

    var memoryLimit: Int {
        switch self {
        case .interactive: crypto_pwhash_memlimit_interactive()
        case .moderate: crypto_pwhash_memlimit_moderate()
        case .minimum: crypto_pwhash_memlimit_min()
        }
    }
}

/// A password hash in libsodium's string form (`$argon2id$v=19$m=65536,t=2,p=1$salt$hash`),
/// which carries its own salt and cost, so hashes made at another cost still verify.
struct PasswordHash: Sendable, Equatable {
    let encoded: String

    init(encoded: String) { self.encoded = encoded }

    /// Hashes `password` with a fresh random salt (`crypto_pwhash_str`). Slow by design.
    init(hashing password: String, cost: PasswordCost) throws(SodiumError) {
        try Sodium.ready()
        var output = [CChar](repeating: 0, count: crypto_pwhash_strbytes())
        let code = password.withCString { crypto_pwhash_str(&output, $0, UInt64(password.utf8.count), cost.opsLimit, cost.memoryLimit) }
        guard code == 0 else { throw SodiumError(call: "crypto_pwhash_str", code: code) }
        encoded = String(decoding: output.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    /// Whether `password` is the one hashed (`crypto_pwhash_str_verify`; a malformed hash matches nothing).
    func matches(_ password: String) throws(SodiumError) -> Bool {
        try Sodium.ready()
        return password.withCString { crypto_pwhash_str_verify(encoded, $0, UInt64(password.utf8.count)) } == 0
    }
}

/// A new session token (`SessionToken`'s format) with what the service stores of it: only
/// its BLAKE2b-256 hash, so a copy of the database signs no one in.
struct HashedToken {
    /// The token as the client holds it.
    let text: String
    /// What the service stores: `storedHash(of: text)`.
    let hash: String

    /// A new random token.
    static func generate() throws(SodiumError) -> HashedToken {
        let text = SessionToken.text(randomBytes: try Sodium.randomBytes(SessionToken.randomByteCount))
        return HashedToken(text: text, hash: try Sodium.blake2b256Hex(Array(text.utf8)))
    }

    /// The stored form of a token: the hex BLAKE2b-256 of its text; nil when `text` does not
    /// have a token's shape (then no session can match it).
    static func storedHash(of text: String) throws(SodiumError) -> String? {
        guard SessionToken.isWellFormed(text) else { return nil }
        return try Sodium.blake2b256Hex(Array(text.utf8))
    }
}
