import Bus
import Contracts
import Foundation
import Sealing
import ServiceCore
import SocialService
import Testing

/// Devices over real sockets: registration with the key's checks, the limit of 5, listing,
/// revocation, the events the catalog learns them from, the snapshot, and erasure.
@Suite struct DeviceTests {
    static func newKey() throws -> String { Data(try Sodium.boxKeyPair().publicKey).base64EncodedString() }

    func register(_ f: SocialFixture, _ device: String, _ key: String, as user: Int64) throws(ServiceError) -> [String: Any] {
        try f.call("devices.register", #"{"device_id":"\#(device)","public_key":"\#(key)"}"#, as: user)
    }

    func deviceEvents(_ f: SocialFixture) throws -> [String] {
        try f.events().filter { $0.header.type.hasPrefix("social.device.") }.map { event in
            let body = try event.body(DeviceChange.self)
            return "\(event.header.type) \(body.userId) \(body.deviceId)"
        }
    }

    @Test func registerListRevokePublishEachChangeOnce() throws {
        let f = try SocialFixture()
        let ann = try f.register("ann")
        let key = try Self.newKey()
        let reply = try register(f, "phone-1", key, as: ann)
        #expect(reply["device_id"] as? String == "phone-1" && reply["public_key"] as? String == key)
        // The same device with the same key: idempotent, nothing more published.
        #expect(try register(f, "phone-1", key, as: ann)["created_at"] as? String == reply["created_at"] as? String)
        // Another key for a registered device: conflict until it is revoked.
        let other = try Self.newKey()
        #expect(f.error("devices.register", #"{"device_id":"phone-1","public_key":"\#(other)"}"#, as: ann)
            .map { $0.code == .conflict && $0.field == "public_key" } == true)
        let list = try f.call("devices.list", as: ann)
        #expect((list["devices"] as? [[String: Any]])?.map { $0["device_id"] as? String } == ["phone-1"])
        #expect(list["max"] as? Int == 5)
        #expect(try f.call("devices.revoke", #"{"device_id":"phone-1"}"#, as: ann)["revoked"] as? Bool == true)
        #expect(f.error("devices.revoke", #"{"device_id":"phone-1"}"#, as: ann) == ServiceError(.notFound, "you have no device phone-1", field: "device_id"))
        // Revoked, it may come back with a new key.
        _ = try register(f, "phone-1", other, as: ann)
        #expect(try deviceEvents(f) == [
            "social.device.registered \(ann) phone-1", "social.device.revoked \(ann) phone-1", "social.device.registered \(ann) phone-1",
        ])
        let last = try f.events().last { $0.header.type == SocialEvents.deviceRegistered }
        #expect(try last?.body(DeviceChange.self) == DeviceChange(userId: ann, deviceId: "phone-1", publicKey: other))
    }

    @Test func aSixthDeviceIsRefusedAndDevicesAreEachUsersOwn() throws {
        let f = try SocialFixture()
        let ann = try f.register("ann"), ben = try f.register("ben")
        for i in 1...5 { _ = try register(f, "d\(i)", try Self.newKey(), as: ann) }
        let sixth = f.error("devices.register", #"{"device_id":"d6","public_key":"\#(try Self.newKey())"}"#, as: ann)
        #expect(sixth == ServiceError(.conflict, "you have 5 devices, the most; revoke one (devices.revoke) first", field: "device_id"))
        // Ben's devices are his own: the same id is another device, Ann's list is not his,
        // and he cannot revoke hers.
        _ = try register(f, "d1", try Self.newKey(), as: ben)
        #expect((try f.call("devices.list", as: ben)["devices"] as? [Any])?.count == 1)
        #expect(f.error("devices.revoke", #"{"device_id":"d2"}"#, as: ben)?.code == .notFound)
        #expect((try f.call("devices.list", as: ann)["devices"] as? [Any])?.count == 5)
        // Anonymous callers have no devices.
        #expect(f.error("devices.list")?.code == .unauthenticated)
        #expect(f.error("devices.register", #"{"device_id":"x","public_key":"\#(try Self.newKey())"}"#)?.code == .unauthenticated)
        // Revoking one makes room.
        _ = try f.call("devices.revoke", #"{"device_id":"d3"}"#, as: ann)
        _ = try register(f, "d6", try Self.newKey(), as: ann)
    }

    @Test func badDeviceIdsAndKeysAreRefusedNamingTheField() throws {
        let f = try SocialFixture()
        let ann = try f.register("ann")
        let key = try Self.newKey()
        for bad in ["", String(repeating: "a", count: 65), "a b", "caf\u{e9}", "a/b", "a\\n"] {
            #expect(f.error("devices.register", #"{"device_id":\#(try json(bad)),"public_key":"\#(key)"}"#, as: ann)?.field == "device_id", "\(bad)")
        }
        _ = try register(f, String(repeating: "A", count: 64), key, as: ann)
        let zero = Data(count: 32).base64EncodedString()
        var one = [UInt8](repeating: 0, count: 32); one[0] = 1
        // A point of order 8 on Curve25519.
        let order8: [UInt8] = [0xe0, 0xeb, 0x7a, 0x7c, 0x3b, 0x41, 0xb8, 0xae, 0x16, 0x56, 0xe3, 0xfa, 0xf1, 0x9f, 0xc4, 0x6a,
                               0xda, 0x09, 0x8d, 0xeb, 0x9c, 0x32, 0xb1, 0xfd, 0x86, 0x62, 0x05, 0x16, 0x5f, 0x49, 0xb8, 0x00]
        for bad in [zero, Data(one).base64EncodedString(), Data(order8).base64EncodedString(), "not base64 at all, but 44 characters long!!",
                    Data(count: 31).base64EncodedString(), Data(count: 33).base64EncodedString(), String(repeating: "A", count: 100_000),
                    String(key.dropLast())] {
            let error = f.error("devices.register", #"{"device_id":"x","public_key":"\#(bad)"}"#, as: ann)
            #expect(error.map { $0.code == .invalidArgument && $0.field == "public_key" } == true, "\(bad.prefix(50))")
        }
        #expect(try deviceEvents(f).count == 1)
    }

    @Test func theSnapshotListsDevicesAndDeletingTheAccountErasesThem() throws {
        let f = try SocialFixture()
        let ann = try f.register("ann"), ben = try f.register("ben")
        try f.review(1, 4, by: ann)
        let annKey = try Self.newKey()
        _ = try register(f, "tablet", annKey, as: ann)
        let benKey = try Self.newKey()
        _ = try register(f, "phone", benKey, as: ben)
        // Ratings first, then devices under keys "d…".
        let first = try f.client.request(type: "sys.snapshot", body: Data("{}".utf8))
        #expect(try first.attachments.map { try ReceivedEvent(envelope: $0).header.type } == [SocialEvents.ratingUpdated])
        #expect(try JSONDecoder().decode(SnapshotReply.self, from: first.bodyJSON).next == "d0")
        let devices = try f.client.request(type: "sys.snapshot", body: Data(#"{"after":"d0"}"#.utf8))
        #expect(try devices.attachments.map { try ReceivedEvent(envelope: $0).body(DeviceChange.self) }
            == [DeviceChange(userId: ann, deviceId: "tablet", publicKey: annKey), DeviceChange(userId: ben, deviceId: "phone", publicKey: benKey)])
        // Then the discoverable users (none here), under keys "p…".
        #expect(try JSONDecoder().decode(SnapshotReply.self, from: devices.bodyJSON).next == "p0")

        try f.call("auth.delete", #"{"password":"\#(SocialFixture.password)"}"#, as: ann)
        let after = try f.client.request(type: "sys.snapshot", body: Data(#"{"after":"d0"}"#.utf8))
        #expect(try after.attachments.map { try ReceivedEvent(envelope: $0).body(DeviceChange.self).userId } == [ben])
        // Ann's device events are redacted: her public key is on the bus no more.
        let outbox = try f.client.request(type: "sys.replay", body: Data(#"{"after":0}"#.utf8)).attachments.reduce(Data(), +)
        #expect(outbox.range(of: Data(annKey.utf8)) == nil)
        #expect(try f.events().last?.header.type == SocialEvents.userDeleted)
    }
}
