import Bus
import Foundation

// Signing in: what the accounts service (social) answers and the gateway reads, and the
// shape of a session token, which both check before anything else.

/// What an account may do: a user acts on their own things, an admin also writes the catalog
/// and sets roles.
public enum Role: String, Codable, Sendable, CaseIterable {
    case user, admin
}

/// A user as anyone may see them (never the email or the password hash).
public struct PublicUser: Codable, Sendable, Equatable {
    public var id: Int64
    public var username: String
    public var name: String
    public var role: String

    public init(id: Int64, username: String, name: String, role: String) {
        self.id = id
        self.username = username
        self.name = name
        self.role = role
    }
}

/// The reply of `auth.login`: the session token (shown once, never stored), when it expires, and who it signs in.
public struct LoginReply: Codable, Sendable, Equatable {
    public var token: String
    public var expiresAt: String
    public var user: PublicUser

    public init(token: String, expiresAt: String, user: PublicUser) {
        self.token = token
        self.expiresAt = expiresAt
        self.user = user
    }

    /// Who the token signs in, as `auth.validate` would answer for it.
    public var owner: TokenOwner { TokenOwner(userId: user.id, role: user.role, expiresAt: expiresAt) }

    enum CodingKeys: String, CodingKey {
        case token, user
        case expiresAt = "expires_at"
    }
}

/// The body of `auth.validate`, `auth.logout` and `auth.resume`: a session token.
public struct TokenBody: Codable, Sendable, DeclaredShape {
    public var token: String

    public init(token: String) { self.token = token }
}

/// The reply of `auth.validate` (and of `auth.resume` at the gateway): who a token signs in, until when.
public struct TokenOwner: Codable, Sendable, Equatable {
    public var userId: Int64
    public var role: String
    /// Always given by the accounts service; a reader does not need it.
    public var expiresAt: String?

    public init(userId: Int64, role: String, expiresAt: String? = nil) {
        self.userId = userId
        self.role = role
        self.expiresAt = expiresAt
    }

    enum CodingKeys: String, CodingKey {
        case role
        case userId = "user_id"
        case expiresAt = "expires_at"
    }
}

/// The format of a session token: `tb1_` and 32 random bytes in base64url without padding
/// (43 characters, 47 in all). What has another shape is no token: the accounts service
/// and the gateway refuse it without looking anything up.
public enum SessionToken {
    public static let prefix = "tb1_"
    /// The number of random bytes a token carries.
    public static let randomByteCount = 32
    /// The length of a token in bytes (all ASCII).
    public static let length = prefix.utf8.count + 43

    /// The token text for `randomByteCount` random bytes.
    public static func text(randomBytes: some Sequence<UInt8>) -> String {
        prefix + Base64URL.encode(Data(randomBytes))
    }

    /// Whether `text` has the shape of a token: the prefix and 43 base64url characters.
    public static func isWellFormed(_ text: String) -> Bool {
        text.utf8.count == length && text.hasPrefix(prefix) && text.utf8.dropFirst(prefix.utf8.count).allSatisfy(Base64URL.isAlphabet)
    }
}
