import Bus
import Foundation
import Geo
import Testing
import TestSupport
import TourMaps

/// `tourbus import` against the real executables: a directory with our XML and a map image,
/// and the real Helsinki OpenStreetMap extract, found through the gateway's search afterwards.
@Suite(.serialized) struct ImportSuiteTests {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
    static let helsinki = root.appendingPathComponent(".build/osm/helsinki.osm").path
    static let helsinkiCounts = root.appendingPathComponent(".build/osm/helsinki-counts.json").path
    static let haveHelsinki = FileManager.default.fileExists(atPath: helsinki) && FileManager.default.fileExists(atPath: helsinkiCounts)

    static func report(_ run: BoundedRun) -> [String: Any] {
        ((try? JSONSerialization.jsonObject(with: Data(run.output.utf8))) as? [String: Any])?["report"] as? [String: Any] ?? [:]
    }

    static func counts(_ report: [String: Any], _ kind: String) -> [Int] {
        let counts = report[kind] as? [String: Int] ?? [:]
        return [counts["created"] ?? -1, counts["updated"] ?? -1, counts["unchanged"] ?? -1]
    }

    /// Polls search.text through the gateway (bounded: 15 s) until `q`'s first hit is named `name`.
    static func found(_ c: GatewayConnection, _ q: String, _ name: String) -> Bool {
        for _ in 0..<150 {
            let reply = json(c.rpc("search.text", #"{"q":"\#(q)","limit":5}"#).line)
            let hits = (reply["result"] as? [String: Any])?["hits"] as? [[String: Any]] ?? []
            if hits.contains(where: { $0["name"] as? String == name }) { return true }
            usleep(100_000)
        }
        return false
    }

    @Test func aDirectoryWithItsMapImageIsImportedOnceAndFound() throws {
        let suite = try SuiteFixture(withSearch: true)
        let tourbus = try ChildProcess.executable("tourbus").path
        let folder = TemporaryFolder("import")
        let stops = [Coordinate(uncheckedLatitude: -33.8568, longitude: 151.2153), Coordinate(uncheckedLatitude: -33.8523, longitude: 151.2108)]
        let map = try MapCanvas.draw(stops: stops, width: 800, height: 600)
        try map.jpeg.write(to: URL(fileURLWithPath: folder.file("harbour.jpg")))
        let points = map.controlPoints.map { #"<point x="\#($0.x)" y="\#($0.y)" lat="\#($0.coordinate.latitude)" lon="\#($0.coordinate.longitude)"/>"# }
        let xml = """
            <content xmlns="urn:tourbus:content:1" source="guide-co">
              <poi id="opera" category="attraction" lat="-33.8568" lon="151.2153"><name lang="en">Sydney Opera House</name></poi>
              <poi id="bridge" category="attraction" lat="-33.8523" lon="151.2108"><name lang="en">Harbour Bridge</name></poi>
              <tour id="harbour"><name lang="en">Harbour stroll</name><stop ref="opera"/><stop ref="bridge"/>
                <map file="harbour.jpg">\(points.joined())</map></tour>
            </content>
            """
        try xml.write(toFile: folder.file("walks.xml"), atomically: true, encoding: .utf8)

        let dry = try BoundedRun(tourbus, ["import", folder.path, "--dry-run", "--service", suite.catalogEndpoint], timeout: 60)
        #expect(dry.exit == .status(0) && Self.counts(Self.report(dry), "places") == [2, 0, 0], "\(dry.output) \(dry.errors)")
        let first = try BoundedRun(tourbus, ["import", folder.path, "--service", suite.catalogEndpoint], timeout: 60)
        #expect(first.exit == .status(0), "\(first.output) \(first.errors)")
        #expect(Self.counts(Self.report(first), "places") == [2, 0, 0] && Self.counts(Self.report(first), "maps") == [1, 0, 0])
        let again = try BoundedRun(tourbus, ["import", folder.path, "--service", suite.catalogEndpoint], timeout: 60)
        #expect(Self.counts(Self.report(again), "places") == [0, 0, 2] && Self.counts(Self.report(again), "tours") == [0, 0, 1])

        let c = try GatewayConnection(port: suite.port)
        #expect(Self.found(c, "harbour stroll", "Harbour stroll"))

        // The same files in a zip (deflated, in a folder of the archive): our own reader, the same import.
        let zip = folder.file("walks.zip")
        let zipped = try BoundedRun("/usr/bin/python3", ["-c", """
            import sys, zipfile
            with zipfile.ZipFile(sys.argv[1], "w", zipfile.ZIP_DEFLATED) as z:
                z.write(sys.argv[2], "walks/walks.xml"); z.write(sys.argv[3], "walks/harbour.jpg")
            """, zip, folder.file("walks.xml"), folder.file("harbour.jpg")], timeout: 30)
        #expect(zipped.exit == .status(0), "\(zipped.errors)")
        let fromZip = try BoundedRun(tourbus, ["import", zip, "--service", suite.catalogEndpoint], timeout: 60)
        #expect(fromZip.exit == .status(0) && Self.counts(Self.report(fromZip), "places") == [0, 0, 2]
                && Self.counts(Self.report(fromZip), "maps") == [0, 0, 1], "\(fromZip.output) \(fromZip.errors)")
        // A hostile archive is refused before anything is sent.
        let evil = folder.file("evil.zip")
        _ = try BoundedRun("/usr/bin/python3", ["-c", """
            import sys, zipfile
            with zipfile.ZipFile(sys.argv[1], "w") as z: z.writestr("../walks.xml", "<content/>")
            """, evil], timeout: 30)
        let refusedZip = try BoundedRun(tourbus, ["import", evil, "--service", suite.catalogEndpoint], timeout: 60)
        #expect(refusedZip.exit == .status(2) && refusedZip.errors.contains(".."), "\(refusedZip.errors)")

        // A file the catalog refuses: exit 1, the report on stderr, nothing written.
        try xml.replacingOccurrences(of: #"lat="-33.8523""#, with: #"lat="-95""#).write(toFile: folder.file("walks.xml"), atomically: true, encoding: .utf8)
        let refused = try BoundedRun(tourbus, ["import", folder.path, "--service", suite.catalogEndpoint], timeout: 60)
        #expect(refused.exit == .status(1) && refused.errors.contains(#""line":3"#), "\(refused.errors)")
    }

    @Test func filesArePresentInCI() {
        if ProcessInfo.processInfo.environment["CI"] == "true" {
            #expect(Self.haveHelsinki, "run deploy/local/helsinki-osm (deploy/local/test does) to make \(Self.helsinki)")
        }
    }

    /// The issue's test: counts by category against an independent count, a second run that
    /// changes nothing, and well-known places found by search.
    @Test(.enabled(if: haveHelsinki, "deploy/local/helsinki-osm has not made .build/osm/helsinki.osm"))
    func theHelsinkiExtractIsImportedCountedAndFound() throws {
        let suite = try SuiteFixture(catalogArguments: ["--strings-dir", Self.root.appendingPathComponent("i18n").path], withSearch: true)
        let tourbus = try ChildProcess.executable("tourbus").path
        let first = try BoundedRun(tourbus, ["import", Self.helsinki, "--format", "osm", "--service", suite.catalogEndpoint], timeout: 300)
        #expect(first.exit == .status(0), "\(first.errors)")
        let report = Self.report(first)
        let expected = try #require(try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: Self.helsinkiCounts))) as? [String: Any])
        let byCategory = try #require(expected["categories"] as? [String: Int])
        let created = Self.counts(report, "places")[0]
        // Every place the independent count finds, but those a rule of the catalog refuses (skipped).
        #expect(created + (report["skipped"] as? Int ?? 0) - (expected["ways_missing_nodes"] as? Int ?? 0) == byCategory.values.reduce(0, +),
                "\(report) vs \(byCategory)")
        let c = try GatewayConnection(port: suite.port)
        let categories = (json(c.rpc("catalog.categories").line)["result"] as? [String: Any])?["categories"] as? [[String: Any]] ?? []
        let counted = Dictionary(uniqueKeysWithValues: categories.compactMap { row in (row["id"] as? String).map { ($0, row["count"] as? Int ?? 0) } })
        for (category, count) in byCategory {
            #expect(abs((counted[category] ?? 0) - count) <= (report["skipped"] as? Int ?? 0), "\(category): \(counted[category] ?? 0) vs \(count)")
        }
        let again = try BoundedRun(tourbus, ["import", Self.helsinki, "--format", "osm", "--service", suite.catalogEndpoint], timeout: 300)
        #expect(Self.counts(Self.report(again), "places") == [0, 0, created], "\(again.output)")
        for (q, name) in [("ateneum", "Ateneum"), ("kiasma", "Kiasma"), ("stockmann", "Stockmann")] {
            #expect(Self.found(c, q, name), "\(name)")
        }

        // Issue 33 through the gateway: the import's streets route, and its addresses are found.
        // From the railway station's square to Senaatintori, on foot.
        let walk = #"{"from":{"lat":60.1710,"lon":24.9414},"to":{"lat":60.1694,"lon":24.9522},"mode":"walking"}"#
        var routed: [String: Any] = [:]
        for _ in 0..<300 {
            routed = (json(c.rpc("directions.get", walk).line)["result"] as? [String: Any]) ?? [:]
            if routed["status"] as? String == "routed" { break }
            usleep(100_000)
        }
        #expect(routed["status"] as? String == "routed", "\(routed)")
        let metres = routed["distance_m"] as? Double ?? 0
        #expect(metres > 600 && metres < 1_200 && routed["polyline"] is String, "\(routed)")
        // Its steps in German, from the catalog's strings (i18n/de.json).
        let german = json(c.rpc("directions.get", walk.dropLast() + #","lang":"de-DE"}"#).line)["result"] as? [String: Any] ?? [:]
        let instructions = (german["steps"] as? [[String: Any]] ?? []).compactMap { $0["instruction"] as? String }
        #expect(german["lang"] as? String == "de" && instructions.last == "Sie haben Ihr Ziel erreicht", "\(instructions)")
        #expect(instructions.first?.hasSuffix("starten") == true && instructions.dropFirst().dropLast().allSatisfy { $0.contains("abbiegen") || $0.contains("weiter") || $0.contains("Wenden") }, "\(instructions)")
        var address: [String: Any] = [:]
        for _ in 0..<300 {
            let hits = (json(c.rpc("geo.search", #"{"q":"Mannerheimintie 13 Helsinki","limit":1}"#).line)["result"] as? [String: Any])?["hits"]
            address = (hits as? [[String: Any]])?.first ?? [:]
            if !address.isEmpty { break }
            usleep(100_000)
        }
        #expect(address["label"] as? String == "Mannerheimintie 13A, 00100 Helsinki" && address["kind"] as? String == "house", "\(address)")
        let reverse = json(c.rpc("geo.reverse", #"{"lat":60.1703,"lon":24.9410}"#).line)["result"] as? [String: Any]
        let nearest = reverse?["address"] as? [String: Any] ?? [:]
        #expect(nearest["kind"] as? String == "house" && nearest["city"] as? String == "Helsinki" && (nearest["distance_m"] as? Double ?? 999) < 100, "\(nearest)")
    }
}
