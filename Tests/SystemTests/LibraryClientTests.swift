import Foundation
import Geo
import Sealing
import Testing
import TestSupport
import TourMaps
#if canImport(Glibc)
import Glibc
#endif

/// PyNaCl, libsodium's Python binding, in the virtual environment of redis-py (`./deploy/local/test`).
enum PyNaCl {
    /// The script that registers devices, downloads, opens and verifies packages through the gateway.
    static let script = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("Resources/pynacl_library_client.py").path
    static var isInstalled: Bool {
        guard RedisPy.isInstalled, let run = try? BoundedRun(RedisPy.python, ["-c", "import nacl, redis"], timeout: 30) else { return false }
        return run.succeeded
    }
}

/// Downloads bound to a device, with the real executables through the gateway: an independent
/// client (PyNaCl) opens and verifies what the catalog sealed and signed, and `tourbus keys
/// --signing` makes the key the catalog checks at start.
@Suite(.serialized) struct LibraryClientTests {
    /// A tour of three Sydney stops with a 1600×1200 map, made by the admin; its id once the tiles are cut.
    func tourWithMap(_ suite: SuiteFixture) throws -> Int {
        let admin = try suite.adminConnection()
        let stops = [Coordinate(uncheckedLatitude: -33.8568, longitude: 151.2153), Coordinate(uncheckedLatitude: -33.8642, longitude: 151.2166),
                     Coordinate(uncheckedLatitude: -33.8688, longitude: 151.2174)]
        let ids = stops.enumerated().map { i, stop in
            admin.rpc("catalog.create", #"{"name":"Stop \#(i)","name_i18n":{"en":"Stop \#(i)","ru":"Остановка \#(i)"},"category":"attraction","lat":\#(stop.latitude),"lon":\#(stop.longitude)}"#)
                .field("id", Int.self) ?? 0
        }
        let tour = try #require(admin.rpc("tours.create", #"{"name":"Harbour walk","stops":\#(ids)}"#).field("id", Int.self))
        let map = try MapCanvas.draw(stops: stops, width: 1600, height: 1200)
        let upload = admin.rpc("tours.map.upload.begin").field("upload_id", String.self) ?? ""
        var offset = 0
        while offset < map.jpeg.count {
            let chunk = map.jpeg.subdata(in: offset..<min(map.jpeg.count, offset + 384 * 1024))
            #expect(admin.rpc("tours.map.upload.append", #"{"upload_id":"\#(upload)","chunk":"\#(chunk.base64EncodedString())"}"#).succeeded)
            offset += chunk.count
        }
        #expect(admin.rpc("tours.map.upload.commit", #"{"upload_id":"\#(upload)"}"#).field("width", Int.self) == 1600)
        let points = "[" + map.controlPoints.map { #"{"x":\#($0.x),"y":\#($0.y),"lat":\#($0.coordinate.latitude),"lon":\#($0.coordinate.longitude)}"# }.joined(separator: ",") + "]"
        #expect(admin.rpc("tours.map.set", #"{"tour_id":\#(tour),"upload_id":"\#(upload)","points":\#(points)}"#).succeeded)
        var ready = false
        for _ in 0..<600 where !ready {
            ready = admin.rpc("tours.map.get", #"{"tour_id":\#(tour)}"#).field("tiles_ready", Bool.self) == true
            if !ready { usleep(50_000) }
        }
        #expect(ready)
        return tour
    }

    @Test(.enabled(if: PyNaCl.isInstalled || RedisPy.inCI, "needs PyNaCl and redis-py in .build/pyenv, which ./deploy/local/test makes"))
    func pyNaClOpensAndVerifiesTheCatalogsPackagesThroughTheGateway() throws {
        try #require(PyNaCl.isInstalled, "CI=true but \(RedisPy.python) cannot import nacl and redis: ./deploy/local/test should have made it")
        let suite = try SuiteFixture()
        // The catalog again, following social's device events and holding a signing key.
        let keyFile = "\(suite.folder)/catalog.sign.key"
        try SigningKey.generate().write(keyFile: keyFile, name: "catalog")
        suite.stopCatalog()
        try suite.startCatalog(followingSocial: true, extraArguments: ["--signing-key", keyFile])
        let tour = try tourWithMap(suite)

        let plan: [String: Any] = ["host": "127.0.0.1", "port": Int(suite.port), "tour_id": tour,
                                   "users": [["username": "pyann", "password": "Py-Pass-1"], ["username": "pyben", "password": "Py-Pass-2"]]]
        let planText = String(decoding: try JSONSerialization.data(withJSONObject: plan), as: UTF8.self)
        let run = try BoundedRun(RedisPy.python, [PyNaCl.script, planText], environment: ["PYTHONDONTWRITEBYTECODE": "1"], timeout: 120)
        try #require(run.succeeded, "the script \(run.ending): \(run.digest)")
        let summary = json(run.output.split(separator: "\n").last { $0.hasPrefix("{") }.map(String.init))
        let steps = try #require(summary["steps"] as? [String: Any], "no summary: \(run.digest)")
        func error(_ step: String) -> (code: String?, field: String?) {
            let e = steps[step] as? [String: Any]
            return (e?["code"] as? String, e?["field"] as? String)
        }
        #expect(steps["login"] is NSNull)
        #expect((steps["register"] as? [String: Any])?["device_id"] as? String == "py-phone")
        #expect((steps["register_again"] as? [String: Any])?["created_at"] as? String == (steps["register"] as? [String: Any])?["created_at"] as? String)
        #expect(error("register_other_key") == ("conflict", "public_key"))
        let badKeys = (steps["bad_keys"] as? [[String: Any]])?.map { "\($0["code"] ?? "") \($0["field"] ?? "")" }
        #expect(badKeys == Array(repeating: "invalid_argument public_key", count: 4), "\(steps["bad_keys"] ?? "nothing")")

        let add = try #require(steps["add"] as? [String: Any], "library.add: \(steps["add_error"] ?? "nothing")")
        #expect((add["pieces"] as? Int ?? 0) > 1, "a map of 1600x1200 takes more than one piece: \(add)")
        #expect(add["tiles_complete"] as? Bool == true && (add["tiles"] as? Int ?? 0) > 20)
        for check in ["bytes_match", "digest_match", "signing_key_match", "verified", "opened", "resp_piece_match", "resp_verified", "resp_opened"] {
            #expect(steps[check] as? Bool == true, "\(check): \(steps[check] ?? "nothing")")
        }
        for check in ["other_device_opens", "tampered_verifies", "tampered_opens", "forged_user_verifies"] {
            #expect(steps[check] as? Bool == false, "\(check): \(steps[check] ?? "nothing")")
        }
        let content = try #require(steps["content"] as? [String: Any])
        #expect(content["format"] as? String == "tourbus.package.v1" && content["device_id"] as? String == "py-phone" && content["tour_id"] as? Int == tour)
        #expect(content["issued_at_match"] as? Bool == true && content["tour_name"] as? String == "Harbour walk")
        #expect((content["places"] as? [Int])?.count == 3 && content["tiles"] as? Int == add["tiles"] as? Int)
        #expect((content["name_i18n"] as? [String: String])?["ru"] == "Остановка 0")

        #expect(error("intruder_add") == ("not_found", "device_id"))
        #expect(error("intruder_piece") == ("not_found", "package_id"))
        #expect(error("intruder_revoke") == ("not_found", "device_id"))
        #expect(error("anonymous_add").code == "unauthenticated")
        #expect((steps["revoke"] as? [String: Any])?["revoked"] as? Bool == true)
        #expect(error("after_revoke") == ("not_found", "device_id"))
        #expect(((steps["list"] as? [String: Any])?["tours"] as? [[String: Any]])?.map { $0["tour_id"] as? Int } == [tour])
    }

    @Test func signingKeysAreMadeOnceAndTheCatalogRefusesLooseOrBadOnes() throws {
        let scratch = TemporaryFolder("signing")
        let tourbus = try ChildProcess.executable("tourbus").path
        let made = try BoundedRun(tourbus, ["keys", "--signing", "--out", scratch.path, "server"], timeout: 30)
        #expect(made.succeeded, "\(made.digest)")
        let file = scratch.path + "/server.sign.key"
        var info = stat()
        #expect(stat(file, &info) == 0 && info.st_mode & 0o777 == 0o600)
        let key = try SigningKey(keyFile: file)
        #expect(made.output.contains("public: \(key.publicKeyBase64)"))
        let again = try BoundedRun(tourbus, ["keys", "--signing", "--out", scratch.path, "server"], timeout: 30)
        #expect(again.exit == .status(1) && again.errors.contains("never overwritten"), "\(again.digest)")
        #expect(try SigningKey(keyFile: file) == key)
        #expect(try BoundedRun(tourbus, ["keys", "--signing", "--out", scratch.path, "../x"], timeout: 30).exit == .status(2))

        let catalog = try ChildProcess.executable("tourbus-catalog").path
        func start(_ keyFile: String) throws -> BoundedRun {
            try BoundedRun(catalog, ["--signing-key", keyFile, "--data-dir", scratch.path + "/data"], timeout: 30)
        }
        _ = chmod(file, 0o644)
        let loose = try start(file)
        #expect(loose.exit == .status(2) && loose.errors.contains("chmod 600"), "\(loose.digest)")
        let bad = scratch.path + "/bad.sign.key"
        _ = FileManager.default.createFile(atPath: bad, contents: Data("public: AAAA\nsecret: not-a-key\n".utf8), attributes: [.posixPermissions: 0o600])
        let refused = try start(bad)
        #expect(refused.exit == .status(2) && refused.errors.contains("no 'secret:' line with a 32-byte key"), "\(refused.digest)")
        let missing = try start(scratch.path + "/none.sign.key")
        #expect(missing.exit == .status(2) && missing.errors.contains("tourbus keys --signing"), "\(missing.digest)")
        // The suite file's services.catalog.signing_key is read the same way (and the flag comes first).
        let suite = scratch.path + "/suite.json"
        try Data(#"{"services":{"catalog":{"signing_key":"\#(file)"}}}"#.utf8).write(to: URL(fileURLWithPath: suite))
        let fromSuite = try BoundedRun(catalog, ["--config", suite, "--data-dir", scratch.path + "/data"], timeout: 30)
        #expect(fromSuite.exit == .status(2) && fromSuite.errors.contains("chmod 600 \(file)"), "\(fromSuite.digest)")
        let flagFirst = try BoundedRun(catalog, ["--config", suite, "--signing-key", bad, "--data-dir", scratch.path + "/data"], timeout: 30)
        #expect(flagFirst.exit == .status(2) && flagFirst.errors.contains(bad), "\(flagFirst.digest)")
    }
}
