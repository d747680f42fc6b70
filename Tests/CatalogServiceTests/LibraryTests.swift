import Bus
@testable import CatalogService
import Contracts
import Foundation
import Sealing
import ServiceCore
import Storage
import Testing
import TestSupport

/// A device as the phone holds it: its X25519 key pair.
struct TestDevice {
    let id: String
    let publicKey: [UInt8]
    let secretKey: [UInt8]

    init(_ id: String) throws {
        self.id = id
        (publicKey, secretKey) = try Sodium.boxKeyPair()
    }

    init(id: String, publicKey: [UInt8], secretKey: [UInt8]) {
        self.id = id
        self.publicKey = publicKey
        self.secretKey = secretKey
    }

    var publicKeyBase64: String { Data(publicKey).base64EncodedString() }
}

/// The library over real sockets: a catalog that learns devices from a fake social publisher,
/// packages sealed to one device and signed, fetched in pieces, opened and checked here with
/// libsodium (the system test does it again with PyNaCl); lists, removal, hiding; erasure.
@Suite struct LibraryTests {
    static let key = Result { try SigningKey.generate() }

    func fixture() throws -> WalkFixture { try WalkFixture(signingKey: try Self.key.get()) }

    func emit(_ f: WalkFixture, _ type: String, user: Int64, device: TestDevice) throws {
        let body = String(decoding: try JSONEncoder().encode(DeviceChange(userId: user, deviceId: device.id, publicKey: device.publicKeyBase64)), as: UTF8.self)
        _ = try f.socialClient.call("fake.emit", FakeEmit(type: type, key: "\(user)", body: body), as: Int64.self)
    }

    /// Waits until the catalog's copy holds (or, `present` false, no longer holds) the device.
    func waitForDevice(_ f: WalkFixture, user: Int64, _ device: TestDevice, present: Bool = true) throws {
        let db = try f.database()
        for _ in 0..<400 {
            let there = try db.scalarInt("SELECT 1 FROM library_devices WHERE user_id = ? AND device_id = ?", user, device.id) != nil
            if there == present { return }
            usleep(10_000)
        }
        Issue.record("device \(device.id) of \(user) never \(present ? "arrived" : "went")")
    }

    func refusal(_ f: WalkFixture, _ type: String, _ json: String, as user: String? = "1") -> ServiceError? {
        do {
            _ = try f.call(type, json, as: user)
            return nil
        } catch {
            return error
        }
    }

    struct Missing: Error { let what: String }

    /// A string field of a reply, or a thrown error naming it.
    func text(_ object: [String: Any], _ key: String) throws -> String {
        guard let value = object[key] as? String else { throw Missing(what: key) }
        return value
    }

    /// A base64 field of a reply, decoded.
    func bytes(_ object: [String: Any], _ key: String) throws -> [UInt8] {
        guard let data = Data(base64Encoded: try text(object, key)) else { throw Missing(what: key) }
        return Array(data)
    }

    /// An integer field of a reply.
    func int(_ object: [String: Any], _ key: String) throws -> Int {
        guard let value = object[key] as? Int else { throw Missing(what: key) }
        return value
    }

    /// The sealed bytes of a package, fetched piece by piece.
    func fetch(_ f: WalkFixture, _ manifest: [String: Any], as user: String = "1") throws -> [UInt8] {
        let id = try text(manifest, "package_id"), pieces = try int(manifest, "pieces")
        var sealed: [UInt8] = []
        for piece in 0..<pieces {
            let reply = try f.call("library.package", #"{"package_id":"\#(id)","piece":\#(piece)}"#, as: user)
            #expect(reply["offset"] as? Int == sealed.count)
            sealed += try bytes(reply, "data")
        }
        return sealed
    }

    /// Whether the manifest's signature covers these sealed bytes (the client's check).
    func verifies(_ manifest: [String: Any], _ sealed: [UInt8], key: SigningKey? = nil) throws -> Bool {
        let signed = LibraryRules.signedBytes(digest: try Sodium.blake2b256Hex(sealed), user: Int64(try int(manifest, "user_id")),
                                              device: try text(manifest, "device_id"), tour: Int64(try int(manifest, "tour_id")),
                                              issuedAt: try text(manifest, "issued_at"))
        let signature = try bytes(manifest, "signature")
        return try Sodium.verify(signature, of: signed, publicKey: try key?.publicKey ?? Self.key.get().publicKey)
    }

    @Test func aPackageOpensOnItsDeviceOnlyAndItsSignatureCoversIt() throws {
        let f = try fixture()
        let phone = try TestDevice("phone-1"), other = try TestDevice("phone-2")
        try emit(f, SocialEvents.deviceRegistered, user: 1, device: phone)
        try waitForDevice(f, user: 1, phone)
        _ = try f.drawMap()
        for _ in 0..<400 where try f.call("tours.map.get", #"{"tour_id":\#(f.tour)}"#)["tiles_ready"] as? Bool != true { usleep(10_000) }

        let manifest = try f.call("library.add", #"{"tour_id":\#(f.tour),"device_id":"phone-1"}"#)
        let publicKey = try Self.key.get().publicKeyBase64
        #expect(manifest["format"] as? String == "tourbus.package.v1" && manifest["signing_key"] as? String == publicKey)
        #expect(ids(manifest["places"]) == f.places && (manifest["tiles"] as? Int ?? 0) > 0 && manifest["tiles_complete"] as? Bool == true)
        let sealed = try fetch(f, manifest)
        let digest = Sodium.hex(try Sodium.blake2b256(sealed))
        #expect(sealed.count == manifest["bytes"] as? Int && digest == manifest["digest"] as? String)
        #expect(try verifies(manifest, sealed))
        let opened = try #require(try Sodium.open(sealed, publicKey: phone.publicKey, secretKey: phone.secretKey))
        let content = try #require(try JSONSerialization.jsonObject(with: Data(opened)) as? [String: Any])
        #expect(content["user_id"] as? Int == 1 && content["device_id"] as? String == "phone-1" && content["tour_id"] as? Int == Int(f.tour))
        #expect(content["issued_at"] as? String == manifest["issued_at"] as? String)
        #expect((content["places"] as? [[String: Any]])?.compactMap { $0["name"] as? String } == ["Stop 0", "Stop 1", "Stop 2"])
        #expect((content["tour"] as? [String: Any])?["name"] as? String == "Walk")
        let tiles = try #require(content["tiles"] as? [[String: Any]])
        #expect(tiles.count == manifest["tiles"] as? Int)
        let first = try #require(tiles.first)
        let jpeg = Data(try bytes(first, "jpeg"))
        let served = try f.catalog.client.request(type: "tours.map.tile", body: Data(#"{"tour_id":\#(f.tour),"z":\#(first["z"] as? Int ?? -1),"x":\#(first["x"] as? Int ?? -1),"y":\#(first["y"] as? Int ?? -1)}"#.utf8))
        #expect(served.attachments.first == jpeg)

        // Another device's key opens nothing; a changed byte fails the signature and the box.
        #expect(try Sodium.open(sealed, publicKey: other.publicKey, secretKey: other.secretKey) == nil)
        var tampered = sealed
        tampered[tampered.count / 2] ^= 1
        #expect(try !verifies(manifest, tampered))
        #expect(try Sodium.open(tampered, publicKey: phone.publicKey, secretKey: phone.secretKey) == nil)
        var forged = manifest
        forged["user_id"] = 2
        #expect(try !verifies(forged, sealed))
    }

    @Test func onlyTheCallersOwnRegisteredDeviceGetsAPackage() throws {
        let f = try fixture()
        let phone = try TestDevice("phone-1")
        try emit(f, SocialEvents.deviceRegistered, user: 1, device: phone)
        try waitForDevice(f, user: 1, phone)
        let manifest = try f.call("library.add", #"{"tour_id":\#(f.tour),"device_id":"phone-1"}"#)
        let packageId = try #require(manifest["package_id"] as? String)
        // Another user names Ann's device: not theirs. Nor is her package.
        #expect(refusal(f, "library.add", #"{"tour_id":\#(f.tour),"device_id":"phone-1"}"#, as: "2").map { $0.code == .notFound && $0.field == "device_id" } == true)
        #expect(refusal(f, "library.package", #"{"package_id":"\#(packageId)","piece":0}"#, as: "2").map { $0.code == .notFound && $0.field == "package_id" } == true)
        #expect(refusal(f, "library.add", #"{"tour_id":\#(f.tour),"device_id":"phone-1"}"#, as: nil)?.code == .unauthenticated)
        #expect(refusal(f, "library.add", #"{"tour_id":999,"device_id":"phone-1"}"#).map { $0.code == .notFound && $0.field == "tour_id" } == true)
        // Bounds, from the attacker's side.
        for bad in ["", String(repeating: "a", count: 65), "a b", "../x", "caf\u{e9}"] {
            #expect(refusal(f, "library.add", #"{"tour_id":\#(f.tour),"device_id":\#(String(decoding: try JSONEncoder().encode(bad), as: UTF8.self))}"#)?.field == "device_id", "\(bad)")
        }
        for bad in ["", "x", String(repeating: "g", count: 32), String(repeating: "a", count: 10_000), packageId.uppercased()] {
            #expect(refusal(f, "library.package", #"{"package_id":"\#(bad)","piece":0}"#)?.field == "package_id", "\(bad.prefix(40))")
        }
        for piece in [-1, manifest["pieces"] as? Int ?? 0, Int(Int32.max)] {
            #expect(refusal(f, "library.package", #"{"package_id":"\#(packageId)","piece":\#(piece)}"#)?.field == "piece")
        }

        // A revoked device gets no new package, and its packages go.
        try emit(f, SocialEvents.deviceRevoked, user: 1, device: phone)
        try waitForDevice(f, user: 1, phone, present: false)
        #expect(refusal(f, "library.add", #"{"tour_id":\#(f.tour),"device_id":"phone-1"}"#).map { $0.code == .notFound && $0.field == "device_id" } == true)
        #expect(refusal(f, "library.package", #"{"package_id":"\#(packageId)","piece":0}"#)?.code == .notFound)
    }

    /// One user's downloads are bounded in time (a package is the catalog's dearest write, on
    /// the writer everyone shares): the fifth within 10 s is `rate_limited` before any work, and
    /// one more may come once the first of them is 10 s old. Another user is not held up.
    @Test func aUserMakesAtMostFourPackagesInTenSeconds() throws {
        let f = try fixture()
        let phone = try TestDevice("phone-1"), tablet = try TestDevice("tablet-2")
        try emit(f, SocialEvents.deviceRegistered, user: 1, device: phone)
        try emit(f, SocialEvents.deviceRegistered, user: 2, device: tablet)
        try waitForDevice(f, user: 1, phone)
        try waitForDevice(f, user: 2, tablet)
        let add = #"{"tour_id":\#(f.tour),"device_id":"phone-1"}"#
        for _ in 0..<LibraryRules.addsPerWindow { #expect(try f.call("library.add", add)["package_id"] != nil) }
        let limited = refusal(f, "library.add", add)
        #expect(limited?.code == .rateLimited && limited?.field == "tour_id", "\(String(describing: limited))")
        #expect(try f.call("library.add", #"{"tour_id":\#(f.tour),"device_id":"tablet-2"}"#, as: "2")["package_id"] != nil)
        f.advance(LibraryRules.addWindowMilliseconds - 1)
        #expect(refusal(f, "library.add", add)?.code == .rateLimited)
        f.advance(1)
        #expect(try f.call("library.add", add)["package_id"] != nil)
    }

    @Test func removingATourKeepsThePlacesAnotherHoldsAndHiddenPlacesStayOut() throws {
        let f = try fixture()
        let phone = try TestDevice("phone-1")
        try emit(f, SocialEvents.deviceRegistered, user: 1, device: phone)
        try waitForDevice(f, user: 1, phone)
        // A second tour shares the last stop of the first.
        let extra = try f.catalog.create("Extra", lat: -33.87, lon: 151.2).id
        let second = try f.catalog.client.call("tours.create", TourInput(name: "Second", stops: [f.places[2], extra]), as: Tour.self).id
        _ = try f.call("library.add", #"{"tour_id":\#(f.tour),"device_id":"phone-1"}"#)
        _ = try f.call("library.add", #"{"tour_id":\#(second),"device_id":"phone-1"}"#)
        var list = try f.call("library.list", "{}")
        #expect(ids(list["places"]) == (f.places + [extra]).sorted())
        #expect((list["tours"] as? [[String: Any]])?.compactMap { $0["tour_id"] as? Int } == [Int(f.tour), Int(second)])
        list = try f.call("library.remove", #"{"tour_id":\#(f.tour)}"#)
        #expect(ids(list["places"]) == [f.places[2], extra].sorted())
        #expect(refusal(f, "library.remove", #"{"tour_id":\#(f.tour)}"#).map { $0.code == .notFound && $0.field == "tour_id" } == true)
        // Hiding a place takes it out of the list and of new packages.
        list = try f.call("library.hide", #"{"place_id":\#(f.places[2])}"#)
        #expect(ids(list["places"]) == [extra] && ids(list["hidden"]) == [f.places[2]])
        #expect(refusal(f, "library.hide", #"{"place_id":\#(f.places[2])}"#)?.field == "place_id")
        #expect(refusal(f, "library.hide", #"{"place_id":\#(f.places[0])}"#)?.field == "place_id")
        let manifest = try f.call("library.add", #"{"tour_id":\#(second),"device_id":"phone-1"}"#)
        #expect(ids(manifest["places"]) == [extra])
        let opened = try #require(try Sodium.open(try fetch(f, manifest), publicKey: phone.publicKey, secretKey: phone.secretKey))
        let content = try #require(try JSONSerialization.jsonObject(with: Data(opened)) as? [String: Any])
        #expect((content["places"] as? [[String: Any]])?.compactMap { $0["id"] as? Int } == [Int(extra)])
        // Another user's library is their own.
        #expect(ids(try f.call("library.list", "{}", as: "2")["places"]) == [])
    }

    @Test func aDeletedUsersLibraryAndDevicesAreErased() throws {
        let f = try fixture()
        let phone = try TestDevice("phone-1")
        for user: Int64 in [7, 8] { try emit(f, SocialEvents.deviceRegistered, user: user, device: phone) }
        try waitForDevice(f, user: 8, phone)
        for user in ["7", "8"] { _ = try f.call("library.add", #"{"tour_id":\#(f.tour),"device_id":"phone-1"}"#, as: user) }
        _ = try f.call("library.hide", #"{"place_id":\#(f.places[0])}"#, as: "7")
        _ = try f.socialClient.call("fake.emit", FakeEmit(type: SocialEvents.userDeleted, key: "7", body: #"{"user_id":7}"#), as: Int64.self)
        try waitForDevice(f, user: 7, phone, present: false)
        let db = try f.database()
        for table in ["library_devices", "library_tours", "library_places", "library_hidden", "library_packages"] {
            #expect(try db.scalarInt("SELECT count(*) FROM \(table) WHERE user_id = 7") == 0, "\(table)")
        }
        #expect(try db.scalarInt("SELECT count(*) FROM library_tours WHERE user_id = 8") == 1)
        // A package's pieces go with it; user 8's stay.
        #expect(try db.scalarInt("SELECT count(*) FROM library_package_pieces WHERE package_id NOT IN (SELECT id FROM library_packages)") == 0)
        #expect(try db.scalarInt("SELECT count(*) FROM library_package_pieces") ?? 0 > 0)
    }

    /// Replays Protocols/library.md against a catalog with the key of the seed 01 02 … 20 and
    /// user 1's `phone-1`, whose key is X25519's of the secret 01 01 … 01.
    @Test func libraryTranscriptMatchesTheService() throws {
        let exchanges = try serviceTranscript("library.md")
        #expect(exchanges.count >= 10)
        let f = try WalkFixture(signingKey: try SigningKey(seed: Array(1...32)))
        let publicKey = Array(try #require(Data(base64Encoded: "pOCSkrZRwni5dyxWn1+puxPZBrRqtoyd+dwrRAn4ogk=")))
        let phone = TestDevice(id: "phone-1", publicKey: publicKey, secretKey: [UInt8](repeating: 1, count: 32))
        try emit(f, SocialEvents.deviceRegistered, user: 1, device: phone)
        try waitForDevice(f, user: 1, phone)
        var sealedTo: [UInt8]?
        for exchange in exchanges {
            let actual = try replay(exchange, on: f.catalog.client)
            let mismatch = try transcriptMismatch(exchange, actual, file: "library.md")
            #expect(mismatch == nil, "\(mismatch ?? "")")
            if exchange.type == "library.add", let manifest = actual["body"] as? [String: Any], let id = manifest["package_id"] as? String {
                let piece = try f.call("library.package", #"{"package_id":"\#(id)","piece":0}"#)
                sealedTo = try Sodium.open(try bytes(piece, "data"), publicKey: phone.publicKey, secretKey: phone.secretKey)
                #expect(try verifies(manifest, try bytes(piece, "data"), key: try SigningKey(seed: Array(1...32))))
            }
        }
        // The documented key pair is the one the transcript's package opens with.
        #expect(sealedTo != nil)
    }

    /// Tile levels go in whole, coarsest first, while the content fits its bound; a tour whose
    /// places alone do not fit is `too_large`.
    @Test func levelsThatDoNotFitAreLeftToToursMapTile() throws {
        let phone = try TestDevice("phone-1")
        var contents: [Int: [String: Any]] = [:]
        for bound in [20_000, 8 * 1_024 * 1_024] {
            let f = try WalkFixture(signingKey: try Self.key.get(), packageMaxBytes: bound)
            try emit(f, SocialEvents.deviceRegistered, user: 1, device: phone)
            try waitForDevice(f, user: 1, phone)
            _ = try f.drawMap()
            for _ in 0..<400 where try f.call("tours.map.get", #"{"tour_id":\#(f.tour)}"#)["tiles_ready"] as? Bool != true { usleep(10_000) }
            let manifest = try f.call("library.add", #"{"tour_id":\#(f.tour),"device_id":"phone-1"}"#)
            let opened = try #require(try Sodium.open(try fetch(f, manifest), publicKey: phone.publicKey, secretKey: phone.secretKey))
            #expect(opened.count <= bound)
            contents[bound] = try #require(try JSONSerialization.jsonObject(with: Data(opened)) as? [String: Any])
            if bound == 20_000 {
                let tooSmall = try WalkFixture(signingKey: try Self.key.get(), packageMaxBytes: 500)
                try emit(tooSmall, SocialEvents.deviceRegistered, user: 1, device: phone)
                try waitForDevice(tooSmall, user: 1, phone)
                #expect(refusal(tooSmall, "library.add", #"{"tour_id":\#(tooSmall.tour),"device_id":"phone-1"}"#).map { $0.code == .tooLarge && $0.field == "tour_id" } == true)
            }
        }
        let small = try #require(contents[20_000]), whole = try #require(contents[8 * 1_024 * 1_024])
        #expect(small["tiles_complete"] as? Bool == false && whole["tiles_complete"] as? Bool == true)
        let levels = { (content: [String: Any]) in Set(((content["tiles"] as? [[String: Any]]) ?? []).compactMap { $0["z"] as? Int }) }
        let maxZ = try #require(levels(whole).max())
        // Some levels, from 0 up without a gap, but not the finest.
        #expect(!levels(small).isEmpty && levels(small) == Set(0...(levels(small).max() ?? 0)) && !levels(small).contains(maxZ), "\(levels(small))")
        #expect(levels(whole) == Set(0...maxZ))
    }

    @Test func theKeyIsPublishedAndACatalogWithoutOneMakesNoPackage() throws {
        let f = try fixture()
        let publicKey = try Self.key.get().publicKeyBase64
        #expect(try f.call("library.key", "{}", as: nil)["public_key"] as? String == publicKey)
        let bare = try WalkFixture()
        #expect(refusal(bare, "library.key", "{}")?.code == .unavailable)
        #expect(refusal(bare, "library.add", #"{"tour_id":\#(bare.tour),"device_id":"x"}"#)?.code == .unavailable)
    }
}
