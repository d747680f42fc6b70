import Foundation
import Geo
import Testing
import TestSupport
import TourMaps

/// The traveller's web app (`web/`), served by the gateway, in Debian's chromium driven by
/// Playwright: one test per flow, each at 375 px and 1280 px, against a real suite holding
/// the Sydney demo's places. Any console error, and any failed request but the background
/// tiles', fails the flow. Screenshots are kept in .build/screens.
@Suite(.serialized) struct WebAppTests {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
    static let script = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("Resources/web_flows.py").path
    static let screens = root.appendingPathComponent(".build/screens").path
    /// The tiles' server: a port nothing listens on, so every tile fails at once.
    static let tiles = "http://127.0.0.1:9"
    static var browserReady: Bool {
        FileManager.default.isExecutableFile(atPath: "/usr/bin/chromium") && FileManager.default.fileExists(atPath: "/usr/share/javascript/leaflet/leaflet.js")
            && RedisPy.isInstalled
    }

    /// A suite serving the app, with the demo's places (and search's index of them).
    static func suite(gatewayArguments: [String] = [], withTour: Bool = false) throws -> SuiteFixture {
        let suite = try SuiteFixture(
            gatewayArguments: ["--web-dir", root.appendingPathComponent("web").path, "--map-tiles", "\(tiles)/{z}/{x}/{y}.png"] + gatewayArguments,
            catalogArguments: ["--strings-dir", root.appendingPathComponent("i18n").path, "--default-timezone", "Australia/Sydney"],
            everything: true)
        let admin = try suite.adminConnection()
        let places = try #require(
            try JSONSerialization.jsonObject(with: Data(contentsOf: root.appendingPathComponent("deploy/demo/places.json"))) as? [[String: Any]])
        // As batches of 100 creates, one line each.
        for start in stride(from: 0, to: places.count, by: 100) {
            let batch = try places[start..<min(places.count, start + 100)].enumerated().map { i, place in
                let params = String(decoding: try JSONSerialization.data(withJSONObject: place), as: UTF8.self)
                return #"{"jsonrpc":"2.0","id":\#(start + i),"method":"catalog.create","params":\#(params)}"#
            }
            let reply = admin.call("[" + batch.joined(separator: ",") + "]") ?? ""
            #expect(!reply.contains(#""error""#), "creating the demo's places: \(reply.prefix(300))")
        }
        // Search applies the catalog's events in order: once it has the last place, it has them all (bounded: 10 s).
        let last = try #require(places.last?["name"] as? String)
        var indexed = false
        for _ in 0..<100 where !indexed {
            let reply = admin.rpc("search.text", #"{"q":"\#(last)","limit":5}"#)
            indexed = reply.line.contains(last)
            if !indexed { usleep(100_000) }
        }
        #expect(indexed, "search indexed the demo's places")
        // Place 1 has a hosted photo, the demo's drawing of it, as `tourbus up` gives it.
        let drawing = try PlaceDrawing.jpeg(category: "attraction", seed: "syd-001", width: 640, height: 420)
        let upload = admin.rpc("tours.map.upload.begin").field("upload_id", String.self) ?? ""
        #expect(admin.rpc("tours.map.upload.append", #"{"upload_id":"\#(upload)","chunk":"\#(drawing.base64EncodedString())"}"#).succeeded)
        #expect(admin.rpc("tours.map.upload.commit", #"{"upload_id":"\#(upload)"}"#).succeeded)
        #expect(admin.rpc("catalog.photo.add", #"{"place_id":1,"upload_id":"\#(upload)","attribution":"A drawing by the Tourbus demo, not a photograph"}"#).succeeded)
        if withTour { try tour(admin, places) }
        return suite
    }

    /// Tour 1: the demo's first three places, with a map of its own drawn over them, its tiles cut.
    static func tour(_ admin: GatewayConnection, _ places: [[String: Any]]) throws {
        let stops = places.prefix(3).map { Coordinate(uncheckedLatitude: $0["lat"] as? Double ?? 0, longitude: $0["lon"] as? Double ?? 0) }
        let tour = admin.rpc("tours.create", #"{"name":"Harbour walk","description":"Three stops by the water.","stops":[1,2,3]}"#).field("id", Int.self) ?? 0
        #expect(tour == 1)
        let map = try MapCanvas.draw(stops: stops, width: 900, height: 700)
        let upload = admin.rpc("tours.map.upload.begin").field("upload_id", String.self) ?? ""
        #expect(admin.rpc("tours.map.upload.append", #"{"upload_id":"\#(upload)","chunk":"\#(map.jpeg.base64EncodedString())"}"#).succeeded)
        #expect(admin.rpc("tours.map.upload.commit", #"{"upload_id":"\#(upload)"}"#).succeeded)
        let points = "[" + map.controlPoints.map { #"{"x":\#($0.x),"y":\#($0.y),"lat":\#($0.coordinate.latitude),"lon":\#($0.coordinate.longitude)}"# }.joined(separator: ",") + "]"
        #expect(admin.rpc("tours.map.set", #"{"tour_id":\#(tour),"upload_id":"\#(upload)","points":\#(points)}"#).succeeded)
        var ready = false
        for _ in 0..<200 where !ready {
            ready = admin.rpc("tours.map.get", #"{"tour_id":\#(tour)}"#).field("tiles_ready", Bool.self) == true
            if !ready { usleep(50_000) }
        }
        #expect(ready, "the tour map's tiles are cut")
    }

    /// Runs one flow of web_flows.py against `suite` (or `base`, a proxy in front of it): its problems and measures.
    static func run(_ flow: String, on suite: SuiteFixture, base: String? = nil, shots: String? = nil) throws -> (problems: [String], measures: [String: Any]) {
        try FileManager.default.createDirectory(atPath: screens, withIntermediateDirectories: true)
        let plan: [String: Any] = [
            "base": base ?? "http://127.0.0.1:\(suite.port)", "flow": flow, "screens": screens, "tiles": tiles, "shots": shots ?? flow,
        ]
        let run = try BoundedRun(RedisPy.python, [script, String(decoding: try JSONSerialization.data(withJSONObject: plan), as: UTF8.self)],
                                 environment: ["PYTHONDONTWRITEBYTECODE": "1"], timeout: 240)
        try #require(run.succeeded, "web_flows.py \(flow) \(run.ending): \(run.digest)")
        let summary = json(run.output.split(separator: "\n").last { $0.hasPrefix("{") }.map(String.init))
        let problems = try #require(summary["problems"] as? [String], "no summary: \(run.digest)")
        return (problems, summary["measures"] as? [String: Any] ?? [:])
    }

    static let enabled = browserReady || RedisPy.inCI

    @Test(.enabled(if: enabled, "needs Debian's chromium and libjs-leaflet, and Playwright in .build/pyenv: ./deploy/local/test installs them"),
          arguments: ["welcome", "browse", "search", "place", "favorites", "account", "keyboard", "text_only", "alerts", "group", "tour"])
    func flowWorksInChromium(_ flow: String) throws {
        try #require(WebAppTests.browserReady, "CI=true but chromium, libjs-leaflet or Playwright is missing: ./deploy/local/test should have installed them")
        let (problems, measures) = try WebAppTests.run(flow, on: try WebAppTests.suite(withTour: flow == "tour"))
        #expect(problems.isEmpty, "\(flow): \(problems)")
        if !measures.isEmpty { print("web app \(flow): \(measures)") }
    }
}
