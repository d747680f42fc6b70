import Foundation
import Testing
import TestSupport

/// Protocols/routing.md's examples, replayed through the gateway of a suite of the real
/// executables after `tourbus import` of its fixture. `TOURBUS_WRITE_TRANSCRIPTS=1` writes the
/// replies the suite gives into the page instead (then read them before keeping them).
@Suite struct RoutingTranscriptTests {
    @Test func routingDocumentMatchesTheRunningSuite() throws {
        let blocks = try gatewayTranscriptBlocks("routing.md")
        let fixture = try #require(blocks.first { $0.kind == "fixture" })
        #expect(blocks.filter { $0.kind == "jsonrpc" }.count >= 4)
        let suite = try SuiteFixture(catalogArguments: ["--strings-dir", packageRoot.appendingPathComponent("i18n").path], withSearch: true)
        let folder = TemporaryFolder("routing")
        try fixture.lines.map(\.text).joined(separator: "\n").write(toFile: folder.file("fixture.osm"), atomically: true, encoding: .utf8)
        let tourbus = try ChildProcess.executable("tourbus").path
        let imported = try BoundedRun(tourbus, ["import", folder.file("fixture.osm"), "--format", "osm", "--service", suite.catalogEndpoint], timeout: 60)
        #expect(imported.exit == .status(0), "\(imported.errors)")

        // Search builds its routes and its geocoder on threads of their own: wait (at most 30 s) for both.
        let c = try GatewayConnection(port: suite.port)
        var ready = false
        for _ in 0..<300 where !ready {
            let route = json(c.rpc("directions.get", #"{"from":{"lat":60.17,"lon":24.95},"to":{"lat":60.1709,"lon":24.9518}}"#).line)
            let found = json(c.rpc("geo.search", #"{"q":"Liisankatu 12"}"#).line)
            ready =
                (route["result"] as? [String: Any])?["status"] as? String == "routed"
                && !(((found["result"] as? [String: Any])?["hits"] as? [Any]) ?? []).isEmpty
            if !ready { usleep(100_000) }
        }
        #expect(ready, "search never routed on the fixture or found its addresses")

        let writing = ProcessInfo.processInfo.environment["TOURBUS_WRITE_TRANSCRIPTS"] == "1"
        var written: [Int: String] = [:]
        for block in blocks where block.kind == "jsonrpc" {
            let connection = try GatewayConnection(port: suite.port)
            for (number, line) in block.lines {
                let text = String(line.dropFirst(2))
                if line.hasPrefix("> ") {
                    connection.send(text + "\n")
                    continue
                }
                let actual = connection.line() ?? "(nothing)"
                if writing {
                    written[number] = "< " + actual
                } else {
                    #expect(sameJSON(text, actual), "routing.md line \(number): got \(actual)")
                }
            }
        }
        if writing {
            let page = protocolsFolder().appendingPathComponent("routing.md")
            var lines = try String(contentsOf: page, encoding: .utf8).components(separatedBy: "\n")
            for (number, line) in written { lines[number - 1] = line }
            try lines.joined(separator: "\n").write(to: page, atomically: true, encoding: .utf8)
        }
    }
}
