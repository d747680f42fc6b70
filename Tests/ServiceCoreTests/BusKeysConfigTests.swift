import Bus
import Foundation
import Gateway
import ServiceCore
import Testing
import TestSupport

/// How a process learns its CURVE keys: its key file, and the suite file's `curve.keys`; and
/// every mistake in them refused before anything starts, saying what to do.
@Suite struct BusKeysConfigTests {
    let folder = TemporaryFolder("bus-keys")
    let catalog = try! CurveKeyPair.generate()
    let search = try! CurveKeyPair.generate()
    let gateway = try! CurveKeyPair.generate()

    func z85(_ pair: CurveKeyPair) -> String { (try? CurveKeyPair.z85(pair.publicKey)) ?? "" }

    func keyFile(_ name: String, _ pair: CurveKeyPair) throws -> String {
        let path = folder.path + "/\(name)-\(UUID().uuidString).key"
        try pair.write(keyFile: path, name: name)
        return path
    }

    func suiteFile(keys: [String: [String]]?, catalogKeyFile: String? = nil) throws -> String {
        var object: [String: Any] = ["services": [
            "catalog": ["bind": ["tcp://*:7101"], "publish": ["tcp://*:7111"]].merging(catalogKeyFile.map { ["curve_key": $0] } ?? [:]) { a, _ in a },
            "search": ["bind": ["tcp://*:7102"]],
        ]]
        if let keys { object["curve"] = ["keys": keys] }
        let path = folder.path + "/suite-\(UUID().uuidString).json"
        try JSONSerialization.data(withJSONObject: object).write(to: URL(fileURLWithPath: path))
        return path
    }

    var listed: [String: [String]] { ["catalog": [z85(catalog)], "search": [z85(search)], "gateway": [z85(gateway)]] }

    @Test func aSecuredSuiteGivesEachProcessItsPairAndItsPeersKeys() throws {
        let file = try suiteFile(keys: listed, catalogKeyFile: try keyFile("catalog", catalog))
        // The key file from the service's own section.
        let config = try ServiceConfig.load(service: "catalog", arguments: ["--config", file], environment: [:])
        let keys = try #require(config.bus)
        #expect(keys.pair == catalog)
        #expect(Set(keys.allowed) == Set([catalog, search, gateway].map(\.publicKey)))
        #expect(config.common.curve(for: "search") == CurveClientKeys(catalog, serverKey: search.publicKey))
        #expect(keys.clientOfSelf.serverKey == catalog.publicKey)
        // From the environment and from the flag, which beats it.
        let searchFile = try keyFile("search", search)
        let fromEnvironment = try ServiceConfig.load(service: "search", arguments: ["--config", file], environment: ["TOURBUS_CURVE_KEY": searchFile])
        #expect(fromEnvironment.bus?.pair == search)
        let fromFlag = try GatewayConfig.load(arguments: ["--config", file, "--curve-key", try keyFile("gateway", gateway)],
                                              environment: ["TOURBUS_CURVE_KEY": searchFile])
        #expect(fromFlag.common.bus?.pair == gateway)
        #expect(fromFlag.common.curve(for: "catalog")?.serverKey == catalog.publicKey)
        // No curve section and no key file: plain links, as before.
        let plain = try ServiceConfig.load(service: "catalog", arguments: ["--config", try suiteFile(keys: nil)], environment: [:])
        #expect(plain.bus == nil && plain.common.curve(for: "search") == nil)
    }

    @Test func aClientMayRunOnEitherOfItsListedKeysDuringARotation() throws {
        let next = try CurveKeyPair.generate()
        var keys = listed
        keys["gateway"] = [z85(next), z85(gateway)]
        let file = try suiteFile(keys: keys)
        for pair in [gateway, next] {
            let config = try GatewayConfig.load(arguments: ["--config", file, "--curve-key", try keyFile("gateway", pair)], environment: [:])
            #expect(config.common.bus?.pair == pair)
            #expect(config.common.bus?.allowed.contains(gateway.publicKey) == true && config.common.bus?.allowed.contains(next.publicKey) == true)
        }
    }

    func refusal(_ arguments: [String], service: String = "catalog", environment: [String: String] = [:]) -> String {
        do {
            _ = try ServiceConfig.load(service: service, arguments: arguments, environment: environment)
            return "loaded"
        } catch {
            return error.message
        }
    }

    @Test func mistakesAreRefusedSayingWhatToDo() throws {
        let catalogKey = try keyFile("catalog", catalog)
        // Keys listed, but no key file for this process.
        #expect(refusal(["--config", try suiteFile(keys: listed)]).contains("catalog needs its key file: --curve-key FILE, TOURBUS_CURVE_KEY or services.catalog.curve_key"))
        // A key file, but nothing listed to admit.
        #expect(refusal(["--config", try suiteFile(keys: nil), "--curve-key", catalogKey]).contains("needs the suite file's curve.keys"))
        #expect(refusal(["--curve-key", catalogKey]).contains("needs the suite file's curve.keys"))
        // The key file holds another process's key.
        #expect(refusal(["--config", try suiteFile(keys: listed), "--curve-key", try keyFile("search", search)]).contains("curve.keys.catalog does not list catalog's public key \(z85(search))"))
        // A service's own key must come first: its clients connect with the first.
        var second = listed
        second["catalog"] = [z85(search), z85(catalog)]
        #expect(refusal(["--config", try suiteFile(keys: second), "--curve-key", catalogKey]).contains("must list catalog's own key \(z85(catalog)) first"))
        // A peer without a key, an empty list, and a key that is not Z85.
        var missing = listed
        missing["search"] = nil
        #expect(refusal(["--config", try suiteFile(keys: missing), "--curve-key", catalogKey]).contains("curve.keys lists no key for peer search"))
        var empty = listed
        empty["gateway"] = []
        #expect(refusal(["--config", try suiteFile(keys: empty), "--curve-key", catalogKey]).contains("curve.keys.gateway lists no key"))
        var bad = listed
        bad["gateway"] = ["not a key"]
        #expect(refusal(["--config", try suiteFile(keys: bad), "--curve-key", catalogKey]).contains("'not a key' is not a 40-character Z85 public key"))
        // A key file others may read.
        chmod(catalogKey, 0o640)
        #expect(refusal(["--config", try suiteFile(keys: listed), "--curve-key", catalogKey]).contains("mode 640"))
    }

    @Test func aNameGivenTwiceOrAnOddFileIsRefused() throws {
        let catalogKey = try keyFile("catalog", catalog)
        // A stranger's key listed under operator before the real one: a decoder keeps one of the two, unseen.
        let twice = folder.path + "/twice.json"
        try Data(#"{"curve":{"keys":{"operator":["\#(z85(search))"],"catalog":["\#(z85(catalog))"],"operator":["\#(z85(gateway))"]}}}"#.utf8)
            .write(to: URL(fileURLWithPath: twice))
        #expect(refusal(["--config", twice, "--curve-key", catalogKey]).contains("curve.keys.operator is given twice"))
        let services = folder.path + "/services.json"
        try Data(#"{"services":{"catalog":{"bind":["tcp://*:1"]},"catalog":{"bind":["tcp://*:2"]}}}"#.utf8).write(to: URL(fileURLWithPath: services))
        #expect(refusal(["--config", services]).contains("services.catalog is given twice"))
        let top = folder.path + "/top.json"
        try Data(#"{"curve":{"keys":{}},"curve":{"keys":{}}}"#.utf8).write(to: URL(fileURLWithPath: top))
        #expect(refusal(["--config", top]).contains("curve is given twice"))
        // Not a regular file, and too big.
        #expect(refusal(["--config", "/dev/zero"]).contains("not a regular file"))
        let big = folder.path + "/big.json"
        try Data(("{\"pad\":\"" + String(repeating: "x", count: 1 << 20) + "\"}").utf8).write(to: URL(fileURLWithPath: big))
        #expect(refusal(["--config", big]).contains("larger than 1048576 bytes"))
        // A key file with two secret lines.
        let two = folder.path + "/two.key"
        _ = FileManager.default.createFile(atPath: two, contents: Data("secret: \(try CurveKeyPair.z85(catalog.secretKey))\nsecret: \(try CurveKeyPair.z85(search.secretKey))\n".utf8),
                                           attributes: [.posixPermissions: 0o600])
        #expect(refusal(["--config", try suiteFile(keys: listed), "--curve-key", two]).contains("two 'secret:' lines"))
    }
}
