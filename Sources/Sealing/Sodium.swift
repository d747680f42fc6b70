import CSodium
import Foundation

/// A libsodium call that failed: which one and what it returned.
public struct SodiumError: Error, Sendable, CustomStringConvertible {
    /// The C function.
    public let call: String
    /// Its return code.
    public let code: Int32

    public init(call: String, code: Int32) {
        self.call = call
        self.code = code
    }

    public var description: String { "\(call) failed (returned \(code))" }
}

/// The libsodium calls more than one module makes (social, the catalog, the CLI), each
/// return code checked: random bytes, BLAKE2b, sealed boxes to an X25519 key, Ed25519 signatures.
public enum Sodium {
    /// `sodium_init()`, run once per process (0: done now, 1: done before, -1: failed).
    private static let initialized = sodium_init()

    /// Throws unless libsodium is initialised; every other call here starts with it.
    public static func ready() throws(SodiumError) {
        guard initialized >= 0 else { throw SodiumError(call: "sodium_init", code: initialized) }
    }

    /// `count` bytes from the operating system's secure random generator.
    public static func randomBytes(_ count: Int) throws(SodiumError) -> [UInt8] {
        try ready()
        var bytes = [UInt8](repeating: 0, count: count)
        randombytes_buf(&bytes, count)
        return bytes
    }

    /// BLAKE2b with a 32-byte output and no key (`crypto_generichash`).
    public static func blake2b256(_ input: [UInt8]) throws(SodiumError) -> [UInt8] {
        try ready()
        var digest = [UInt8](repeating: 0, count: 32)
        let code = crypto_generichash(&digest, 32, input, UInt64(input.count), nil, 0)
        guard code == 0 else { throw SodiumError(call: "crypto_generichash", code: code) }
        return digest
    }

    /// BLAKE2b-256 of `input`, in lower-case hex.
    public static func blake2b256Hex(_ input: [UInt8]) throws(SodiumError) -> String {
        hex(try blake2b256(input))
    }

    /// Lower-case hex of `bytes`.
    public static func hex(_ bytes: [UInt8]) -> String {
        let digits = Array("0123456789abcdef".utf8)
        var text = [UInt8]()
        text.reserveCapacity(bytes.count * 2)
        for byte in bytes {
            text.append(digits[Int(byte >> 4)])
            text.append(digits[Int(byte & 0x0f)])
        }
        return String(decoding: text, as: UTF8.self)
    }

    // MARK: X25519 and sealed boxes

    /// Bytes of an X25519 public key (`crypto_box_PUBLICKEYBYTES`).
    public static let boxPublicKeyBytes = 32
    /// What `seal` adds to a message: an ephemeral public key and a MAC (`crypto_box_SEALBYTES`, 48).
    public static let sealOverheadBytes = 48

    /// Whether `key` is a usable X25519 public key: 32 bytes whose product with a clamped
    /// scalar is not the all-zero point (`crypto_scalarmult` refuses that), which turns away
    /// the all-zero key and every other point of small order.
    public static func isUsableBoxPublicKey(_ key: [UInt8]) throws(SodiumError) -> Bool {
        try ready()
        guard key.count == boxPublicKeyBytes else { return false }
        // Any scalar does: clamping makes it a multiple of the cofactor 8, so a point of
        // small order always lands on zero.
        let scalar = [UInt8](repeating: 0x55, count: 32)
        var product = [UInt8](repeating: 0, count: 32)
        return crypto_scalarmult(&product, scalar, key) == 0
    }

    /// A new X25519 key pair (`crypto_box_keypair`), as a device makes one.
    public static func boxKeyPair() throws(SodiumError) -> (publicKey: [UInt8], secretKey: [UInt8]) {
        try ready()
        var publicKey = [UInt8](repeating: 0, count: 32)
        var secretKey = [UInt8](repeating: 0, count: 32)
        let code = crypto_box_keypair(&publicKey, &secretKey)
        guard code == 0 else { throw SodiumError(call: "crypto_box_keypair", code: code) }
        return (publicKey, secretKey)
    }

    /// `message` sealed to `publicKey` (`crypto_box_seal`): an ephemeral key pair's public key,
    /// then the box; only the holder of the matching secret key opens it.
    public static func seal(_ message: [UInt8], to publicKey: [UInt8]) throws(SodiumError) -> [UInt8] {
        try ready()
        guard publicKey.count == boxPublicKeyBytes else { throw SodiumError(call: "crypto_box_seal", code: -1) }
        var sealed = [UInt8](repeating: 0, count: message.count + sealOverheadBytes)
        let code = crypto_box_seal(&sealed, message, UInt64(message.count), publicKey)
        guard code == 0 else { throw SodiumError(call: "crypto_box_seal", code: code) }
        return sealed
    }

    /// Opens a sealed box with the recipient's key pair (`crypto_box_seal_open`); nil when it
    /// was not sealed to this key or was changed.
    public static func open(_ sealed: [UInt8], publicKey: [UInt8], secretKey: [UInt8]) throws(SodiumError) -> [UInt8]? {
        try ready()
        guard sealed.count >= sealOverheadBytes, publicKey.count == 32, secretKey.count == 32 else { return nil }
        var message = [UInt8](repeating: 0, count: sealed.count - sealOverheadBytes)
        return crypto_box_seal_open(&message, sealed, UInt64(sealed.count), publicKey, secretKey) == 0 ? message : nil
    }

    // MARK: Ed25519

    /// Bytes of an Ed25519 signature (`crypto_sign_BYTES`).
    public static let signatureBytes = 64

    /// Whether `signature` is `publicKey`'s over `message` (`crypto_sign_verify_detached`).
    public static func verify(_ signature: [UInt8], of message: [UInt8], publicKey: [UInt8]) throws(SodiumError) -> Bool {
        try ready()
        guard signature.count == signatureBytes, publicKey.count == 32 else { return false }
        return crypto_sign_verify_detached(signature, message, UInt64(message.count), publicKey) == 0
    }
}
