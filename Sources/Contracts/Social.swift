import Bus
import Foundation

// The social service's events. Declared once here; the social service publishes these types
// and its followers (search, favorites, notify, the gateway) decode the same ones.

/// Event types the social service publishes.
public enum SocialEvents {
    /// Body: `RatingUpdated`.
    public static let ratingUpdated = "social.rating.updated"
    /// Body: `SessionEnded`.
    public static let sessionEnded = "social.session.ended"
    /// Body: `RoleChange` (the user and the role they have now), the same shape as `admin.set_role`'s params.
    public static let roleChanged = "social.role.changed"
    /// Body: `UserDeleted`. The account is gone (`auth.delete`): every service that keeps data
    /// of this user erases it, and gateways end the user's sessions as for `sessionEnded`.
    public static let userDeleted = "social.user.deleted"
    /// Body: `DeviceChange`. A user registered a device (`devices.register`): the catalog
    /// seals that user's downloads to its public key from now on.
    public static let deviceRegistered = "social.device.registered"
    /// Body: `DeviceChange`. A user revoked a device (`devices.revoke`): it gets no new download.
    public static let deviceRevoked = "social.device.revoked"
    /// Body: `DiscoverableChanged`. A user opted in to (or out of) being listed by
    /// `social.people_at` (`profile.update {"discoverable"}`): favorites publishes their
    /// visits (`favorites.visited`) only while they are discoverable. Social's snapshot
    /// holds one, `true`, for each discoverable user.
    public static let profileDiscoverable = "social.profile.discoverable"
}

/// Body of `social.profile.discoverable`: whether a user is listed by `social.people_at` now.
public struct DiscoverableChanged: Codable, Sendable, Equatable {
    public var userId: Int64
    public var discoverable: Bool

    public init(userId: Int64, discoverable: Bool) {
        self.userId = userId
        self.discoverable = discoverable
    }

    enum CodingKeys: String, CodingKey {
        case discoverable
        case userId = "user_id"
    }
}

/// Body of `social.device.registered` and `social.device.revoked`: a user's device and its
/// X25519 public key (32 bytes, standard base64). `device_id` is 1 to 64 bytes of
/// `A-Z a-z 0-9 . _ -`, unique per user.
public struct DeviceChange: Codable, Sendable, Equatable {
    public var userId: Int64
    public var deviceId: String
    public var publicKey: String

    public init(userId: Int64, deviceId: String, publicKey: String) {
        self.userId = userId
        self.deviceId = deviceId
        self.publicKey = publicKey
    }

    enum CodingKeys: String, CodingKey {
        case userId = "user_id"
        case deviceId = "device_id"
        case publicKey = "public_key"
    }
}

/// Body of `social.user.deleted`: the id of an account that no longer exists.
public struct UserDeleted: Codable, Sendable, Equatable {
    public var userId: Int64

    public init(userId: Int64) { self.userId = userId }

    enum CodingKeys: String, CodingKey { case userId = "user_id" }
}

/// Body of `social.rating.updated`: a place's average rating and review count after a change
/// (`count` 0 and `average` 0 when its last review is gone), and how many of its reviews were
/// written (or last replaced) in the last 30 days. Social publishes the event again when one
/// of those leaves the window.
public struct RatingUpdated: Codable, Sendable, Equatable {
    public var placeId: Int64
    public var average: Double
    public var count: Int
    /// Reviews of the last 30 days; nil (absent from the JSON) when unknown, as from a
    /// publisher older than this member.
    public var reviews30d: Int?

    public init(placeId: Int64, average: Double, count: Int, reviews30d: Int? = nil) {
        self.placeId = placeId
        self.average = average
        self.count = count
        self.reviews30d = reviews30d
    }

    enum CodingKeys: String, CodingKey {
        case average, count
        case placeId = "place_id"
        case reviews30d = "reviews_30d"
    }
}

/// Body of `social.session.ended`: a session of this user ended before its time (logged out).
///
/// Which session is not said: no token, nor its hash, goes on the bus. A follower that keeps
/// validated tokens (the gateway) forgets the ones it holds for this user.
public struct SessionEnded: Codable, Sendable, Equatable {
    public var userId: Int64

    public init(userId: Int64) { self.userId = userId }

    enum CodingKeys: String, CodingKey { case userId = "user_id" }
}

/// `admin.set_role`'s params, and the body of `social.role.changed`: a user and their role.
public struct RoleChange: Codable, Sendable, Equatable, DeclaredShape {
    public var userId: Int64
    public var role: String

    public init(userId: Int64, role: String) {
        self.userId = userId
        self.role = role
    }

    enum CodingKeys: String, CodingKey {
        case role
        case userId = "user_id"
    }
}

extension DeviceChange {
    /// The most bytes of a `device_id`.
    public static let maxDeviceIdBytes = 64

    /// `invalid_argument` (field `device_id`) unless `id` is 1 to 64 bytes of `A-Z a-z 0-9 . _ -`:
    /// checked wherever a device id comes in (social's `devices.*`, the catalog's `library.add`).
    public static func checkDeviceId(_ id: String) throws(ServiceError) {
        let bytes = id.utf8
        guard !bytes.isEmpty, bytes.count <= maxDeviceIdBytes else {
            throw .invalid("device_id", "must be 1 to \(maxDeviceIdBytes) bytes")
        }
        guard
            bytes.allSatisfy({ byte in
                (UInt8(ascii: "A")...UInt8(ascii: "Z")).contains(byte) || (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(byte)
                    || (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte) || byte == UInt8(ascii: ".") || byte == UInt8(ascii: "_") || byte == UInt8(ascii: "-")
            })
        else {
            throw .invalid("device_id", "may hold only A-Z, a-z, 0-9, '.', '_' and '-'")
        }
    }
}
