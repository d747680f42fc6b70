import Bus
import Foundation
import Gateway
import ServiceCore
import Synchronization
import Testing
import TestSupport

/// The operators' metrics port, from a scraper's side and an attacker's: only `GET /metrics`
/// is answered, and no client (slow, oversized, many at once, not reading) stalls the others.
@Suite struct MetricsServerTests {
    let logger = Logger(component: "metrics-test", level: .error)

    /// A server on a loopback port of its own whose body counts the scrapes it served.
    private func server(_ limits: MetricsServerLimits = MetricsServerLimits(), body: @escaping @Sendable () -> String = { "up 1\n" }) throws -> MetricsServer {
        try MetricsServer(listen: "127.0.0.1:0", limits: limits, logger: logger, render: body)
    }

    @Test func answersGetMetricsOnlyAndClosesEachConnection() throws {
        let scrapes = Mutex(0)
        let metrics = try server { "# TYPE up gauge\nup \(scrapes.withLock { $0 += 1; return $0 })\n" }
        defer { metrics.stop() }
        #expect(metrics.endpoint.hasPrefix("127.0.0.1:") && !metrics.endpoint.hasSuffix(":0"))

        let ok = try HTTPProbe.request(metrics.endpoint)
        #expect(ok.status == 200)
        #expect(ok.headers.contains("Content-Type: text/plain; version=0.0.4"))
        #expect(ok.body == "# TYPE up gauge\nup 1\n")
        #expect(try HTTPProbe.request(metrics.endpoint, path: "/metrics?x=1").body.hasSuffix("up 2\n"))
        #expect(try HTTPProbe.request(metrics.endpoint, path: "/").status == 404)
        #expect(try HTTPProbe.request(metrics.endpoint, path: "/metrics/x").status == 404)
        let post = try HTTPProbe.request(metrics.endpoint, method: "POST")
        #expect(post.status == 405 && post.headers.contains("Allow: GET"))
        #expect(try HTTPProbe.request(metrics.endpoint, method: "DELETE").status == 405)
        // HEAD: the headers of a scrape without its body (and no render is wasted on other paths).
        let head = try HTTPProbe.request(metrics.endpoint, method: "HEAD")
        #expect(head.status == 200 && head.body.isEmpty)
        #expect(scrapes.withLock { $0 } == 3)

        let garbage = try HTTPProbe(metrics.endpoint)
        garbage.send("\u{1}\u{2} nonsense\r\n\r\n")
        #expect(String(decoding: garbage.readAll().bytes, as: UTF8.self).hasPrefix("HTTP/1.1 400 "))
    }

    @Test func anOversizedHeadIsRefusedWithoutReadingOn() throws {
        let metrics = try server()
        defer { metrics.stop() }
        // Headers that never end: answered 431 once past 8 KiB, and closed.
        let endless = try HTTPProbe(metrics.endpoint)
        endless.send("GET /metrics HTTP/1.1\r\n" + String(repeating: "X-Pad: \(String(repeating: "a", count: 100))\r\n", count: 200))
        let answer = endless.readAll()
        #expect(String(decoding: answer.bytes, as: UTF8.self).hasPrefix("HTTP/1.1 431 "))
        #expect(answer.closed)
        // A complete head just over the bound is refused too; one just under it is served.
        let padding = { (bytes: Int) in "GET /metrics HTTP/1.1\r\nX-Pad: \(String(repeating: "b", count: bytes))\r\n\r\n" }
        let over = try HTTPProbe(metrics.endpoint)
        over.send(padding(8 << 10))
        #expect(String(decoding: over.readAll().bytes, as: UTF8.self).hasPrefix("HTTP/1.1 431 "))
        let under = try HTTPProbe(metrics.endpoint)
        under.send(padding((8 << 10) - 100))
        #expect(String(decoding: under.readAll().bytes, as: UTF8.self).hasPrefix("HTTP/1.1 200 "))
    }

    @Test func aSlowClientIsCutOffAndDoesNotDelayScrapes() throws {
        var limits = MetricsServerLimits()
        limits.timeoutMilliseconds = 1_500
        // A large body, for a client that asks and never reads.
        let body = String(repeating: "# padding line of a large exposition\n", count: 30_000)
        let metrics = try server(limits) { body }
        defer { metrics.stop() }

        let slowloris = try HTTPProbe(metrics.endpoint, timeoutMilliseconds: 3_000)
        slowloris.send("GET /metr")
        let nonReader = try HTTPProbe(metrics.endpoint, timeoutMilliseconds: 3_000)
        nonReader.send("GET /metrics HTTP/1.1\r\n\r\n")

        // Meanwhile a scrape is served at once.
        let started = Date()
        let scrape = try HTTPProbe.request(metrics.endpoint)
        #expect(scrape.status == 200 && scrape.body.utf8.count == body.utf8.count)
        #expect(Date().timeIntervalSince(started) < 1)

        // The slow client is closed after its time, without having sent a whole head.
        let cut = Date()
        slowloris.send("ics HT")
        let heard = slowloris.readAll()
        #expect(heard.closed && heard.bytes.isEmpty)
        #expect(Date().timeIntervalSince(cut) < 2.5)
        // The one that does not read gets no more than the kernel's buffers hold, then a close.
        usleep(300_000)
        let partial = nonReader.readAll()
        #expect(partial.closed)
        #expect(partial.bytes.count < body.utf8.count)
    }

    @Test func manyConnectionsCannotLockAScraperOut() throws {
        var limits = MetricsServerLimits()
        limits.timeoutMilliseconds = 10_000  // idle connections are not timed out during the test
        let metrics = try server(limits)
        defer { metrics.stop() }
        // Twenty idle connections, each with half a head: the server keeps at most eight,
        // closing the oldest as new ones come.
        var idle: [HTTPProbe] = []
        for _ in 0..<20 {
            let probe = try HTTPProbe(metrics.endpoint, timeoutMilliseconds: 300)
            probe.send("GET /")
            idle.append(probe)
            usleep(5_000)
        }
        let started = Date()
        let scrape = try HTTPProbe.request(metrics.endpoint)
        #expect(scrape.status == 200 && scrape.body == "up 1\n")
        #expect(Date().timeIntervalSince(started) < 1)
        let closed = idle.filter { $0.isClosedByPeer() }.count
        // 21 came, 8 may stay: the first 13 were closed (the scrape's own came and went).
        #expect(closed >= 13)
        #expect(!idle.last!.isClosedByPeer())
    }

    @Test func listenMustBeHostAndPort() throws {
        for bad in ["7700", ":7700", "localhost", "127.0.0.1:x", "127.0.0.1:70000"] {
            #expect(throws: ConfigError.self) { try MetricsServer.split(bad) }
        }
        #expect(try MetricsServer.split("[::1]:9100") == ("::1", 9100))
        let error = #expect(throws: ConfigError.self) { try ServiceConfig.load(service: "catalog", arguments: ["--metrics-listen", "9100"], environment: [:]) }
        #expect(error?.message == "--metrics-listen takes HOST:PORT, got '9100'")
    }

    @Test func metricsListenComesFromFlagEnvironmentOrFile() throws {
        let folder = TemporaryFolder("metrics-config")
        let file = folder.path + "/suite.json"
        try Data(#"{"services":{"catalog":{"metrics_listen":"127.0.0.1:9101"},"gateway":{"metrics_listen":"127.0.0.1:9109"}}}"#.utf8)
            .write(to: URL(fileURLWithPath: file))
        #expect(try ServiceConfig.load(service: "catalog", arguments: [], environment: [:]).metricsListen == nil)
        #expect(try ServiceConfig.load(service: "catalog", arguments: ["--config", file], environment: [:]).metricsListen == "127.0.0.1:9101")
        #expect(try GatewayConfig.load(arguments: ["--config", file], environment: [:]).metricsListen == "127.0.0.1:9109")
        #expect(try ServiceConfig.load(service: "catalog", arguments: ["--config", file], environment: ["TOURBUS_METRICS_LISTEN": "0.0.0.0:9200"])
            .metricsListen == "0.0.0.0:9200")
        #expect(try ServiceConfig.load(service: "catalog", arguments: ["--config", file, "--metrics-listen", "127.0.0.1:0"],
                                       environment: ["TOURBUS_METRICS_LISTEN": "0.0.0.0:9200"]).metricsListen == "127.0.0.1:0")
    }
}
