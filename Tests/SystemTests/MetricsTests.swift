import Bus
import CatalogService
import Contracts
import Foundation
import Testing
import TestSupport
#if canImport(Glibc)
import Glibc
#endif

/// Debian's `promtool` (package `prometheus`), which `./deploy/local/test` installs.
enum Promtool {
    static let path = ["/usr/bin/promtool", "/usr/local/bin/promtool"].first { FileManager.default.isExecutableFile(atPath: $0) }
    /// The Prometheus server of the same package.
    static let prometheus = ["/usr/bin/prometheus", "/usr/local/bin/prometheus"].first { FileManager.default.isExecutableFile(atPath: $0) }
    /// CI sets CI=true: there a missing promtool is a failure, not a reason to skip.
    static var inCI: Bool { ProcessInfo.processInfo.environment["CI"] == "true" }

    /// `promtool check metrics` on `text`: nil when it passes, else what it said.
    static func problems(_ text: String) throws -> String? {
        guard let path else { return nil }
        let process = Process()
        process.executableURL = URL(fileURLWithPath: path)
        process.arguments = ["check", "metrics"]
        let input = Pipe(), output = Pipe()
        process.standardInput = input
        process.standardOutput = output
        process.standardError = output
        try process.run()
        input.fileHandleForWriting.write(Data(text.utf8))
        try input.fileHandleForWriting.close()
        let said = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        return process.terminationStatus == 0 && said.isEmpty ? nil : "promtool exit \(process.terminationStatus): \(said)"
    }
}

/// The operators' metrics port of real executables: a catalog, a search that follows it and a
/// gateway in front of both, each scraped over HTTP, the text checked by `promtool`, and the
/// counters checked against the requests the test made.
@Suite(.serialized) struct MetricsTests {
    let scratch = TemporaryFolder("metrics")

    /// Scrapes `process`'s metrics port (from its ready line) and checks the text with promtool.
    func scrape(_ process: ChildProcess) throws -> String {
        let endpoint = try #require(process.endpoints["metrics"] as? String, "no metrics in the ready line of \(process.name)")
        let answer = try HTTPProbe.request(endpoint)
        #expect(answer.status == 200)
        if let problems = try Promtool.problems(answer.body) { Issue.record("\(process.name): \(problems)\n\(answer.body)") }
        return answer.body
    }

    /// The value of the sample written exactly `series` (name and labels), if there is one.
    func value(_ text: String, _ series: String) -> String? {
        text.split(separator: "\n").first { $0.hasPrefix(series + " ") }.map { String($0.dropFirst(series.count + 1)) }
    }

    @Test(.enabled(if: Promtool.path != nil || Promtool.inCI, "needs promtool (Debian prometheus), which ./deploy/local/test installs"))
    func servicesAndGatewayCountWhatTheyAnswer() throws {
        try #require(Promtool.path != nil, "CI=true but promtool is missing: ./deploy/local/test should have installed it")
        let folder = scratch.path
        let metrics = ["--metrics-listen", "127.0.0.1:0"]
        let catalog = try ChildProcess("tourbus-catalog", folder: folder, arguments: metrics)
        let catalogEvents = try #require((catalog.endpoints["publish"] as? [String])?.first)
        let search = try ChildProcess("tourbus-search", folder: folder + "/search",
                                      arguments: metrics + ["--peer", "catalog=\(catalog.rpc)", "--peer-pub", "catalog=\(catalogEvents)"])
        let gateway = try ChildProcess("tourbus-gateway", folder: folder,
                                       arguments: metrics + ["--listen", "127.0.0.1:0", "--peer", "catalog=\(catalog.rpc)", "--peer", "search=\(search.rpc)"])
        let port = try #require(UInt16((gateway.endpoints["listen"] as? String)?.split(separator: ":").last ?? ""))

        // Two places, written on the bus (no gateway sign-in needed there): the outbox head is 2.
        let context = try ZMQContext()
        let client = try RPCClient(context: context, endpoints: [catalog.rpc], logger: Logger(component: "test", level: .error))
        defer { client.close() }
        for i in 0..<2 { _ = try client.call("catalog.create", PlaceInput(name: "Place \(i)", category: "park", lat: -33.9, lon: 151.1 + Double(i) / 100), as: Place.self) }

        // Wait (bounded) until the gateway has learned search's methods, so search.* have labels of their own.
        let connection = try GatewayConnection(port: port)
        for _ in 0..<100 where !(connection.call(#"{"jsonrpc":"2.0","id":0,"method":"help"}"#) ?? "").contains("search.nearby") { usleep(50_000) }
        for id in 1...3 { #expect(connection.rpc("catalog.get", #"{"id":\#(id == 3 ? 1 : id)}"#).succeeded, "catalog.get \(id)") }
        #expect(connection.rpc("catalog.get", #"{"id":999}"#).errorCode == "not_found")
        #expect(connection.rpc("search.nearby", #"{"near":{"lat":-33.9,"lon":151.1},"radius_m":5000}"#).succeeded)
        // Methods no table lists count as one label, wherever they come from: the gateway
        // answers undeclared ones itself, and a service those sent to it on the bus.
        #expect(connection.rpc("no.such.method").errorCode == "not_found")
        #expect(connection.rpc("search.invented").errorCode == "not_found")
        let searchClient = try RPCClient(context: context, endpoints: [search.rpc], logger: Logger(component: "test", level: .error))
        defer { searchClient.close() }
        #expect(throws: ServiceError.self) { try searchClient.request(type: "search.invented", body: Data("{}".utf8), timeoutMilliseconds: 5_000) }

        let fromCatalog = try scrape(catalog)
        #expect(value(fromCatalog, #"tourbus_requests_total{service="catalog",method="catalog.get"}"#) == "4")
        #expect(value(fromCatalog, #"tourbus_requests_total{service="catalog",method="catalog.create"}"#) == "2")
        #expect(value(fromCatalog, #"tourbus_request_errors_total{service="catalog",method="catalog.get",code="not_found"}"#) == "1")
        #expect(value(fromCatalog, #"tourbus_request_duration_seconds_count{service="catalog",method="catalog.get"}"#) == "4")
        #expect(value(fromCatalog, #"tourbus_request_duration_seconds_bucket{service="catalog",method="catalog.get",le="+Inf"}"#) == "4")
        #expect(value(fromCatalog, #"tourbus_outbox_head{service="catalog"}"#) == "2")

        // Search follows the catalog: wait (bounded) until it has applied both events.
        var fromSearch = ""
        for _ in 0..<100 {
            fromSearch = try scrape(search)
            if value(fromSearch, #"tourbus_subscriber_cursor{service="search",source="catalog"}"#) == "2" { break }
            usleep(50_000)
        }
        #expect(value(fromSearch, #"tourbus_subscriber_cursor{service="search",source="catalog"}"#) == "2")
        #expect(value(fromSearch, #"tourbus_subscriber_head{service="search",source="catalog"}"#) == "2")
        #expect(value(fromSearch, #"tourbus_subscriber_lag{service="search",source="catalog"}"#) == "0")
        #expect(value(fromSearch, #"tourbus_requests_total{service="search",method="search.nearby"}"#) == "1")
        #expect(value(fromSearch, #"tourbus_requests_total{service="search",method="unknown"}"#) == "1")
        #expect(value(fromSearch, #"tourbus_request_errors_total{service="search",method="unknown",code="not_found"}"#) == "1")

        let fromGateway = try scrape(gateway)
        #expect(value(fromGateway, #"tourbus_requests_total{service="gateway",method="catalog.get"}"#) == "4")
        #expect(value(fromGateway, #"tourbus_request_errors_total{service="gateway",method="catalog.get",code="not_found"}"#) == "1")
        #expect(value(fromGateway, #"tourbus_request_duration_seconds_count{service="gateway",method="catalog.get"}"#) == "4")
        #expect(value(fromGateway, #"tourbus_requests_total{service="gateway",method="search.nearby"}"#) == "1")
        #expect(value(fromGateway, #"tourbus_requests_total{service="gateway",method="unknown"}"#) == "2")
        #expect(!fromGateway.contains("no.such.method") && !fromGateway.contains("search.invented"))
        #expect(value(fromGateway, #"tourbus_gateway_connections{service="gateway"}"#) == "1")
        #expect(value(fromGateway, #"tourbus_gateway_pushes_delivered_total{service="gateway"}"#) == "0")
        #expect(value(fromGateway, #"tourbus_gateway_pushes_dropped_total{service="gateway"}"#) == "0")

        // The metrics port is not a client port: the line protocol is not spoken there.
        let lineOnMetrics = try HTTPProbe(try #require(gateway.endpoints["metrics"] as? String))
        lineOnMetrics.send(#"{"jsonrpc":"2.0","id":1,"method":"catalog.get","params":{"id":1}}"# + "\n\n")
        #expect(String(decoding: lineOnMetrics.readAll().bytes, as: UTF8.self).hasPrefix("HTTP/1.1 400 "))
    }

    @Test(.enabled(if: Promtool.path != nil || Promtool.inCI, "needs promtool (Debian prometheus), which ./deploy/local/test installs"))
    func theGatewayCountsPushesAndFollowsTheAccountsService() throws {
        try #require(Promtool.path != nil, "CI=true but promtool is missing: ./deploy/local/test should have installed it")
        let suite = try SuiteFixture(gatewayArguments: ["--metrics-listen", "127.0.0.1:0"], everything: true)
        let admin = try suite.adminConnection()
        let place = FavoritesSuiteTests.place(admin, "Opera Bar", lat: -33.8568, lon: 151.2153)
        let (phone, _) = try FavoritesSuiteTests.signedIn(suite, "alice")
        let tablet = try GatewayConnection(port: suite.port, timeoutMilliseconds: 2_000)
        #expect(tablet.rpc("auth.login", #"{"username":"alice","password":"User-Pass-1"}"#).succeeded)
        #expect(tablet.rpc("subscribe", #"{"topics":["favorites.changed"]}"#).succeeded)
        #expect(phone.rpc("favorites.toggle", #"{"place_id":\#(place)}"#).succeeded)
        #expect(tablet.line()?.contains(#""topic":"favorites.changed""#) == true)

        // The admin's, the phone's and the tablet's (the fixture's own may take a moment to close).
        var text = ""
        for _ in 0..<40 {
            text = try scrape(suite.gateway)
            if value(text, #"tourbus_gateway_connections{service="gateway"}"#) == "3" { break }
            usleep(50_000)
        }
        #expect(value(text, #"tourbus_gateway_pushes_delivered_total{service="gateway"}"#) == "1")
        #expect(value(text, #"tourbus_gateway_pushes_dropped_total{service="gateway"}"#) == "0")
        #expect(value(text, #"tourbus_gateway_connections{service="gateway"}"#) == "3")
        #expect(value(text, #"tourbus_requests_total{service="gateway",method="favorites.toggle"}"#) == "1")
        #expect(value(text, #"tourbus_requests_total{service="gateway",method="auth.login"}"#) == "3")
        // The gateway follows social's events (sign-outs, roles): its cursor is social's head, or on its way.
        #expect(value(text, #"tourbus_subscriber_lag{service="gateway",source="social"}"#).flatMap { Int($0) } != nil)
        #expect(value(text, #"tourbus_subscriber_head{service="gateway",source="social"}"#).flatMap { Int($0) } != nil)
    }

    @Test(.enabled(if: Promtool.prometheus != nil || Promtool.inCI, "needs the prometheus server (Debian prometheus), which ./deploy/local/test installs"))
    func aRealPrometheusScrapesAServiceAndTheGateway() throws {
        let prometheusPath = try #require(Promtool.prometheus, "CI=true but prometheus is missing: ./deploy/local/test should have installed it")
        let folder = scratch.path
        let metrics = ["--metrics-listen", "127.0.0.1:0"]
        let catalog = try ChildProcess("tourbus-catalog", folder: folder, arguments: metrics)
        let gateway = try ChildProcess("tourbus-gateway", folder: folder, arguments: metrics + ["--listen", "127.0.0.1:0", "--peer", "catalog=\(catalog.rpc)"])
        let port = try #require(UInt16((gateway.endpoints["listen"] as? String)?.split(separator: ":").last ?? ""))
        let connection = try GatewayConnection(port: port)
        for _ in 0..<3 { #expect(connection.rpc("catalog.get", #"{"id":1}"#).errorCode == "not_found") }

        let targets = [catalog, gateway].compactMap { $0.endpoints["metrics"] as? String }.map { "\"\($0)\"" }.joined(separator: ",")
        try Data("global:\n  scrape_interval: 1s\nscrape_configs:\n  - job_name: tourbus\n    static_configs:\n      - targets: [\(targets)]\n".utf8)
            .write(to: URL(fileURLWithPath: folder + "/prometheus.yml"))
        let web = "127.0.0.1:\(try HTTPProbe.freePort())"
        let prometheus = Process()
        prometheus.executableURL = URL(fileURLWithPath: prometheusPath)
        prometheus.arguments = ["--config.file=\(folder)/prometheus.yml", "--storage.tsdb.path=\(folder)/tsdb", "--web.listen-address=\(web)"]
        let log = folder + "/prometheus.log"
        _ = FileManager.default.createFile(atPath: log, contents: nil)
        prometheus.standardOutput = try FileHandle(forWritingTo: URL(fileURLWithPath: log))
        prometheus.standardError = prometheus.standardOutput
        try prometheus.run()
        defer {
            prometheus.terminate()
            for _ in 0..<100 where prometheus.isRunning { usleep(50_000) }
            if prometheus.isRunning { kill(prometheus.processIdentifier, SIGKILL) }
        }
        // Both targets up, and the three calls counted by each (bounded: 30 s, Prometheus starts and scrapes each second).
        func query(_ expression: String) -> String {
            let encoded = expression.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? ""
            return (try? HTTPProbe.request(web, path: "/api/v1/query?query=\(encoded)", timeoutMilliseconds: 2_000).body) ?? ""
        }
        let up = "count(up == 1)", counted = #"sum(tourbus_requests_total{method="catalog.get"})"#
        var seen = ("", "")
        for _ in 0..<120 {
            seen = (query(up), query(counted))
            if seen.0.contains(#","2"]"#) && seen.1.contains(#","6"]"#) { break }
            usleep(250_000)
        }
        #expect(seen.0.contains(#","2"]"#), "up: \(seen.0)\n\(String(decoding: FileManager.default.contents(atPath: log) ?? Data(), as: UTF8.self).suffix(2_000))")
        #expect(seen.1.contains(#","6"]"#), "catalog.get on the catalog and the gateway: \(seen.1)")
    }

    @Test(.enabled(if: Promtool.path != nil || Promtool.inCI, "needs promtool (Debian prometheus), which ./deploy/local/test installs"))
    func curveDecisionsAreCounted() throws {
        let folder = scratch.path
        let catalogPair = try CurveKeyPair.generate(), operatorPair = try CurveKeyPair.generate(), stranger = try CurveKeyPair.generate()
        try catalogPair.write(keyFile: folder + "/catalog.key", name: "catalog")
        let listed = ["catalog": [try CurveKeyPair.z85(catalogPair.publicKey)], "operator": [try CurveKeyPair.z85(operatorPair.publicKey)]]
        try JSONSerialization.data(withJSONObject: ["curve": ["keys": listed]]).write(to: URL(fileURLWithPath: folder + "/suite.json"))
        let catalog = try ChildProcess("tourbus-catalog", folder: folder, arguments: [
            "--config", folder + "/suite.json", "--curve-key", folder + "/catalog.key", "--metrics-listen", "127.0.0.1:0"])

        let context = try ZMQContext()
        let logger = Logger(component: "test", level: .error)
        var options = RPCClientOptions()
        options.curve = CurveClientKeys(operatorPair, serverKey: catalogPair.publicKey)
        let admitted = try RPCClient(context: context, endpoints: [catalog.rpc], options: options, logger: logger)
        defer { admitted.close() }
        _ = try admitted.request(type: "sys.ping", body: Data("{}".utf8), timeoutMilliseconds: 5_000)
        options.curve = CurveClientKeys(stranger, serverKey: catalogPair.publicKey)
        let refused = try RPCClient(context: context, endpoints: [catalog.rpc], options: options, logger: logger)
        defer { refused.close() }
        #expect(throws: (any Error).self) { try refused.request(type: "sys.ping", body: Data("{}".utf8), timeoutMilliseconds: 500) }

        let text = try scrape(catalog)
        #expect(value(text, #"tourbus_curve_handshakes_total{service="catalog",decision="admitted"}"#).flatMap { Int($0) }.map { $0 >= 1 } == true)
        #expect(value(text, #"tourbus_curve_handshakes_total{service="catalog",decision="refused"}"#).flatMap { Int($0) }.map { $0 >= 1 } == true)
        #expect(value(text, #"tourbus_requests_total{service="catalog",method="sys.ping"}"#) == "1")
    }
}
