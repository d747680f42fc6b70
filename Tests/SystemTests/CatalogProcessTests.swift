import Bus
import CatalogService
import Contracts
import Foundation
import Testing
import TestSupport

@Suite(.serialized) struct CatalogProcessTests {
    let scratch = TemporaryFolder("system")
    var folder: String { scratch.path }

    @Test func aBadStringsDirectoryStopsTheStartNamingTheFile() throws {
        let strings = scratch.path + "/i18n"
        try FileManager.default.createDirectory(atPath: strings, withIntermediateDirectories: true)
        try Data(#"{"nav.map":"Map"}"#.utf8).write(to: URL(fileURLWithPath: strings + "/en.json"))
        try Data(#"{"nav.karte":"Karte"}"#.utf8).write(to: URL(fileURLWithPath: strings + "/de.json"))
        let catalog = try ChildProcess.executable("tourbus-catalog").path
        let run = try BoundedRun(catalog, ["--data-dir", folder, "--bind", "tcp://127.0.0.1:0", "--strings-dir", strings], timeout: 30)
        #expect(run.exit == .status(2), "\(run.errors)")
        #expect(run.errors.contains("tourbus-catalog: --strings-dir \(strings): de.json: has key 'nav.karte', which en.json lacks"), "\(run.errors)")
        let missing = try BoundedRun(catalog, ["--data-dir", folder, "--bind", "tcp://127.0.0.1:0"], environment: ["TOURBUS_STRINGS_DIR": folder + "/none"], timeout: 30)
        #expect(missing.exit == .status(2) && missing.errors.contains("cannot be read as a directory of string files"), "\(missing.errors)")
    }

    @Test func badInputNeverTakesTheProcessDown() throws {
        let service = try ChildProcess("tourbus-catalog", folder: folder)
        let context = try ZMQContext()
        let raw = try Socket(context, .dealer)
        try raw.setReceiveTimeout(milliseconds: 5_000)
        try raw.connect(service.rpc)

        func errorCode(_ frames: [Data]) throws -> String? {
            try raw.send(frames)
            guard let reply = try raw.receive() else { return "no reply" }
            return try JSONDecoder().decode(ReplyHeader.self, from: reply[0]).error?.code.rawValue
        }
        var random = SystemRandomNumberGenerator()
        let garbage = Data((0..<4096).map { _ in UInt8.random(in: 0...255, using: &random) })
        #expect(try errorCode([garbage]) == "invalid_argument")
        #expect(try errorCode([garbage, garbage, Data()]) == "invalid_argument")
        #expect(try errorCode([Data("[1,2,3]".utf8)]) == "invalid_argument")
        #expect(try errorCode([Data(#"{"v":9,"id":"a","type":"catalog.get","body":{"id":1}}"#.utf8)]) == "invalid_argument")
        #expect(try errorCode([Data(#"{"v":1,"id":"b","type":"catalog.fly","body":{}}"#.utf8)]) == "not_found")
        let twoMiB = #"{"v":1,"id":"c","type":"catalog.create","body":{"name":"x","category":"cafe","lat":0,"lon":0,"description":""# + String(repeating: "z", count: 2 << 20) + #""}}"#
        #expect(try errorCode([Data(twoMiB.utf8)]) == "too_large")

        let client = try RPCClient(context: context, endpoints: [service.rpc], logger: Logger(component: "test", level: .error))
        let place = try client.call("catalog.create", PlaceInput(name: "Still here", category: "cafe", lat: -33.87, lon: 151.2), as: Place.self)
        #expect(place.id == 1)
        #expect(service.process.isRunning)
        #expect(service.log.contains("malformed envelope"))
        client.close()
        #expect(service.terminate() == 0)
    }

    @Test func gracefulStopKeepsDataAndRestartContinuesTheSequence() throws {
        let context = try ZMQContext()
        let logger = Logger(component: "test", level: .error)
        var service = try ChildProcess("tourbus-catalog", folder: folder)
        var client = try RPCClient(context: context, endpoints: [service.rpc], logger: logger)
        for i in 0..<3 { _ = try client.call("catalog.create", PlaceInput(name: "P\(i)", category: "park", lat: -33.9, lon: 151.1), as: Place.self) }
        struct Replay: Decodable { var epoch: String; var head: Int64 }
        let before = try client.request(type: "sys.replay", body: Data(#"{"after":0}"#.utf8)).body(Replay.self)
        client.close()
        #expect(service.terminate() == 0)
        #expect(service.log.contains("signal received") && service.log.contains("service stopped"))

        service = try ChildProcess("tourbus-catalog", folder: folder)
        client = try RPCClient(context: context, endpoints: [service.rpc], logger: logger)
        let list = try client.call("catalog.list", ListPlaces(category: "park"), as: PlacePage.self)
        #expect(list.places.map(\.place.name) == ["P0", "P1", "P2"])
        _ = try client.call("catalog.create", PlaceInput(name: "P3", category: "park", lat: -33.9, lon: 151.1), as: Place.self)
        let after = try client.request(type: "sys.replay", body: Data(#"{"after":0}"#.utf8)).body(Replay.self)
        #expect(after.epoch == before.epoch && after.head == before.head + 1)
        client.close()
        #expect(service.terminate() == 0)
    }

    @Test func badConfigurationExitsWithUsage() throws {
        let run = try BoundedRun(try ChildProcess.executable("tourbus-catalog").path, ["--frobnicate", "1"], timeout: 30)
        #expect(run.exit == .status(2), "\(run.ending)")
        #expect(run.errors.contains("unknown option --frobnicate") && run.errors.contains("usage: tourbus-catalog"))
        // The default zone of seasons must be a zone, however it is given.
        let zone = try BoundedRun(try ChildProcess.executable("tourbus-catalog").path, ["--default-timezone", "Mars/Olympus"], timeout: 30)
        #expect(zone.exit == .status(2) && zone.errors.contains("--default-timezone: 'Mars/Olympus' is not an IANA time zone name"), "\(zone.ending): \(zone.errors)")
        let byEnvironment = try BoundedRun(try ChildProcess.executable("tourbus-catalog").path, [], environment: ["TOURBUS_DEFAULT_TIMEZONE": "Mars/Olympus"], timeout: 30)
        #expect(byEnvironment.exit == .status(2) && byEnvironment.errors.contains("'Mars/Olympus' is not an IANA time zone name"), "\(byEnvironment.ending)")
        let missing = try BoundedRun(try ChildProcess.executable("tourbus-catalog").path, ["--default-timezone"], timeout: 30)
        #expect(missing.exit == .status(2) && missing.errors.contains("--default-timezone takes an IANA time zone name"), "\(missing.ending)")
    }
}
