import Bus
import Contracts
import Foundation
import KeyFiles
import Sealing
import ServiceKit
import Storage

// A user's devices: each holds an X25519 key pair made on it, whose public key social keeps
// and publishes (`social.device.*`), so the catalog seals downloads to that device only.

/// The rules of devices.
enum DeviceRules {
    /// The most devices one user has registered at once.
    static let maxDevices = 5
    /// An X25519 public key in standard base64 with its padding: 44 characters.
    static let publicKeyTextBytes = 44

    /// The key's bytes and its text, which must be canonical base64, or `invalid_argument` (field `public_key`):
    /// the text is bounded before it is decoded, and the key must be a point libsodium can
    /// seal to (not all zero, not of small order).
    static func publicKey(_ text: String) throws -> (text: String, bytes: [UInt8]) {
        guard text.utf8.count == publicKeyTextBytes, let data = Data(canonicalBase64: text), data.count == Sodium.boxPublicKeyBytes else {
            throw ServiceError.invalid("public_key", "must be an X25519 public key: 32 bytes in standard base64 (44 characters)")
        }
        let bytes = Array(data)
        guard try Sodium.isUsableBoxPublicKey(bytes) else {
            throw ServiceError.invalid("public_key", "is not a usable X25519 public key (all zero or of small order); make a key pair with crypto_box_keypair")
        }
        return (data.base64EncodedString(), bytes)
    }

    /// The devices' table, in a migration domain of its own.
    static let migrations: [Migration] = [
        Migration(
            domain: "devices", version: 1,
            sql: """
                CREATE TABLE devices (
                    id         INTEGER PRIMARY KEY AUTOINCREMENT,
                    user_id    INTEGER NOT NULL REFERENCES users(id) ON DELETE CASCADE,
                    device_id  TEXT NOT NULL,
                    public_key TEXT NOT NULL,
                    created_at TEXT NOT NULL,
                    UNIQUE (user_id, device_id)
                );
                """)
    ]
}

/// Devices and their public keys, published for the catalog.
final class DeviceStore: SocialFeature {
    let shared: SocialShared

    init(_ shared: SocialShared) { self.shared = shared }

    /// `devices.register`: adds the device, publishing `social.device.registered`. The same
    /// device with the same key again changes nothing and publishes nothing; with another key
    /// it is `conflict` (field `public_key`) until the device is revoked. A sixth device is
    /// `conflict` (field `device_id`).
    func register(_ request: DeviceRegistration, caller: Caller) throws -> DeviceInfo {
        try DeviceChange.checkDeviceId(request.deviceId)
        let key = try DeviceRules.publicKey(request.publicKey)
        return try db.transaction {
            if let existing = try device(request.deviceId, of: caller.id) {
                guard existing.publicKey == key.text else {
                    throw ServiceError(
                        .conflict, "device \(request.deviceId) is registered with another key; revoke it (devices.revoke) to register a new key",
                        field: "public_key")
                }
                return existing
            }
            let count = try db.scalarInt("SELECT count(*) FROM devices WHERE user_id = ?", caller.id) ?? 0
            guard count < DeviceRules.maxDevices else {
                throw ServiceError(.conflict, "you have \(DeviceRules.maxDevices) devices, the most; revoke one (devices.revoke) first", field: "device_id")
            }
            let now = timestamp()
            try db.run("INSERT INTO devices (user_id, device_id, public_key, created_at) VALUES (?, ?, ?, ?)", caller.id, request.deviceId, key.text, now)
            try worker.emit(SocialEvents.deviceRegistered, DeviceChange(userId: caller.id, deviceId: request.deviceId, publicKey: key.text))
            return DeviceInfo(deviceId: request.deviceId, publicKey: key.text, createdAt: now)
        }
    }

    /// `devices.list`: the caller's devices, oldest first.
    func list(of user: Int64) throws -> DeviceList {
        let devices = try db.query("SELECT device_id, public_key, created_at FROM devices WHERE user_id = ? ORDER BY id", user).map(Self.device)
        return DeviceList(devices: devices, max: DeviceRules.maxDevices)
    }

    /// `devices.revoke`: removes the device, publishing `social.device.revoked`; `not_found`
    /// (field `device_id`) when the caller has no such device.
    func revoke(_ request: DeviceRef, caller: Caller) throws -> DeviceRevoked {
        try DeviceChange.checkDeviceId(request.deviceId)
        return try db.transaction {
            guard let existing = try device(request.deviceId, of: caller.id) else {
                throw ServiceError(.notFound, "you have no device \(request.deviceId)", field: "device_id")
            }
            try db.run("DELETE FROM devices WHERE user_id = ? AND device_id = ?", caller.id, request.deviceId)
            try worker.emit(SocialEvents.deviceRevoked, DeviceChange(userId: caller.id, deviceId: request.deviceId, publicKey: existing.publicKey))
            return DeviceRevoked(deviceId: request.deviceId, revoked: true)
        }
    }

    /// One snapshot page of devices after row id `after`, as `social.device.registered` events.
    func snapshot(after: Int64, limit: Int) throws -> SnapshotPart {
        let rows = try db.query("SELECT id, user_id, device_id, public_key FROM devices WHERE id > ? ORDER BY id LIMIT ?", after, limit)
        let events = try rows.map { row in
            (
                type: SocialEvents.deviceRegistered,
                body: try JSONCoding.encoder.encode(
                    DeviceChange(userId: try row.decode("user_id"), deviceId: try row.decode("device_id"), publicKey: try row.decode("public_key")))
            )
        }
        return (events, try rows.map { row throws(RowError) in try row.decode("id") })
    }

    private func device(_ id: String, of user: Int64) throws -> DeviceInfo? {
        try db.queryOne("SELECT device_id, public_key, created_at FROM devices WHERE user_id = ? AND device_id = ?", user, id).map(Self.device)
    }

    private static func device(_ row: Row) throws -> DeviceInfo {
        DeviceInfo(deviceId: try row.decode("device_id"), publicKey: try row.decode("public_key"), createdAt: try row.decode("created_at"))
    }

    /// The devices of user `id`: part of erasing an account, in its transaction (no event:
    /// `social.user.deleted` tells the catalog).
    func erase(of id: Int64) throws {
        try db.run("DELETE FROM devices WHERE user_id = ?", id)
    }
}
