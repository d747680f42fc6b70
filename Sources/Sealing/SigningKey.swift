import CSodium
import Foundation
import KeyFiles

#if canImport(Glibc)
    import Glibc
#endif

/// A signing key file that cannot be used or written, and why (with what to do about it).
public struct SigningKeyError: Error, Sendable, CustomStringConvertible {
    public let message: String
    public init(_ message: String) { self.message = message }
    public var description: String { message }
}

/// An Ed25519 key pair: the server's, which signs the packages of `library.add`.
///
/// Its file (what `tourbus keys --signing` writes and the catalog reads) is two lines,
/// `public: BASE64` (32 bytes) and `secret: BASE64` (the 32-byte seed), and `#` comments,
/// readable and writable by its owner only, as CURVE key files are.
public struct SigningKey: Sendable, Equatable {
    /// The 32-byte public key clients verify with.
    public let publicKey: [UInt8]
    /// libsodium's 64-byte secret key (the seed, then the public key).
    let secretKey: [UInt8]

    /// The pair of a 32-byte seed (`crypto_sign_seed_keypair`).
    public init(seed: [UInt8]) throws(SodiumError) {
        try Sodium.ready()
        guard seed.count == 32 else { throw SodiumError(call: "crypto_sign_seed_keypair", code: -1) }
        var publicKey = [UInt8](repeating: 0, count: 32)
        var secretKey = [UInt8](repeating: 0, count: 64)
        let code = crypto_sign_seed_keypair(&publicKey, &secretKey, seed)
        guard code == 0 else { throw SodiumError(call: "crypto_sign_seed_keypair", code: code) }
        self.publicKey = publicKey
        self.secretKey = secretKey
    }

    /// A new random pair.
    public static func generate() throws(SodiumError) -> SigningKey { try SigningKey(seed: try Sodium.randomBytes(32)) }

    /// The 32-byte seed the pair is made from.
    var seed: [UInt8] { Array(secretKey.prefix(32)) }

    /// The public key in standard base64 (44 characters).
    public var publicKeyBase64: String { Data(publicKey).base64EncodedString() }

    /// The detached signature of `message` (`crypto_sign_detached`), 64 bytes.
    public func sign(_ message: [UInt8]) throws(SodiumError) -> [UInt8] {
        try Sodium.ready()
        var signature = [UInt8](repeating: 0, count: Sodium.signatureBytes)
        var length: UInt64 = 0
        let code = crypto_sign_detached(&signature, &length, message, UInt64(message.count), secretKey)
        guard code == 0 else { throw SodiumError(call: "crypto_sign_detached", code: code) }
        return signature
    }

    /// Reads a key file, refusing one that is not a regular file, that others than its owner
    /// may read or write, or whose keys are not an Ed25519 pair.
    public init(keyFile path: String) throws(SigningKeyError) {
        func failure(_ why: String) -> SigningKeyError { SigningKeyError("signing key file \(path): \(why)") }
        let publicText: String?
        let secretText: String?
        do {
            (publicText, secretText) = try SecretKeyFile.read(path, lines: "'public: BASE64' and 'secret: BASE64' lines (tourbus keys --signing writes them)")
        } catch {
            throw failure(error.why + (error.missing ? " (make one with tourbus keys --signing --out DIR NAME)" : ""))
        }
        guard let secretText, secretText.utf8.count == 44, let seed = Data(canonicalBase64: secretText), seed.count == 32 else {
            throw failure("no 'secret:' line with a 32-byte key in base64 (44 characters)")
        }
        guard let pair = try? SigningKey(seed: Array(seed)) else { throw failure("libsodium could not make a key pair of it") }
        guard let publicText else { throw failure("no 'public:' line") }
        guard Data(canonicalBase64: publicText).map(Array.init) == pair.publicKey else {
            throw failure("its public key is not the one its secret key gives")
        }
        self = pair
    }

    /// Writes this pair as a new key file, mode 0600 from its creation; an existing file is never overwritten.
    public func write(keyFile path: String, name: String) throws(SigningKeyError) {
        do {
            try SecretKeyFile.create(
                path, comment: "Tourbus Ed25519 signing key of \(name) (tourbus keys --signing). The secret line is a secret: keep this file mode 0600.",
                publicText: publicKeyBase64, secretText: Data(seed).base64EncodedString())
        } catch {
            throw SigningKeyError("signing key file \(path): \(error.why)")
        }
    }
}
