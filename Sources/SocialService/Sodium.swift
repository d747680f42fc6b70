import Contracts
import CSodium
import Foundation

/// A libsodium call that failed: which one and what it returned.
public struct SodiumError: Error, Sendable, CustomStringConvertible {
    /// The C function.
    public let call: String
    /// Its return code.
    public let code: Int32

    public var description: String { "\(call) failed (returned \(code))" }
}

/// The few libsodium calls the social service makes, each return code checked.
enum Sodium {
    /// `sodium_init()`, run once per process (0: done now, 1: done before, -1: failed).
    private static let initialized = sodium_init()

    /// Throws unless libsodium is initialised; every other call here starts with it.
    static func ready() throws(SodiumError) {
        guard initialized >= 0 else { throw SodiumError(call: "sodium_init", code: initialized) }
    }

    /// `count` bytes from the operating system's secure random generator.
    static func randomBytes(_ count: Int) throws(SodiumError) -> [UInt8] {
        try ready()
        var bytes = [UInt8](repeating: 0, count: count)
        randombytes_buf(&bytes, count)
        return bytes
    }

    /// BLAKE2b with a 32-byte output (`crypto_generichash`), in lower-case hex.
    static func blake2b256Hex(_ input: [UInt8]) throws(SodiumError) -> String {
        try ready()
        let length = 32
        var digest = [UInt8](repeating: 0, count: length)
        let code = crypto_generichash(&digest, length, input, UInt64(input.count), nil, 0)
        guard code == 0 else { throw SodiumError(call: "crypto_generichash", code: code) }
        return digest.map { String(format: "%02x", $0) }.joined()
    }
}

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
