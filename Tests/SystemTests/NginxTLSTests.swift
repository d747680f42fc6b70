import Foundation
import Testing
import TestSupport

/// Debian's nginx with deploy/nginx/tourbus.conf and a self-signed certificate (openssl) in
/// front of a real suite: the web app's sign-in, search and a live alert in chromium over https, and a
/// WebSocket over wss that signs in and hears a push.
@Suite(.serialized) struct NginxTLSTests {
    static var ready: Bool { FileManager.default.isExecutableFile(atPath: "/usr/sbin/nginx") && FileManager.default.isExecutableFile(atPath: "/usr/bin/openssl") && WebAppTests.browserReady }

    /// nginx running the shipped configuration, with test ports, certificate and gateway.
    final class Proxy {
        let folder: URL
        let process: Process
        let httpsPort: Int
        let httpPort: Int

        init(gateway port: UInt16) throws {
            folder = FileManager.default.temporaryDirectory.appendingPathComponent("nginx-\(UUID().uuidString)")
            try FileManager.default.createDirectory(at: folder.appendingPathComponent("tmp"), withIntermediateDirectories: true)
            try FileManager.default.setAttributes([.posixPermissions: 0o777], ofItemAtPath: folder.appendingPathComponent("tmp").path)
            let cert = folder.appendingPathComponent("cert.pem").path
            let key = folder.appendingPathComponent("key.pem").path
            let openssl = try BoundedRun(
                "/usr/bin/openssl",
                ["req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", key, "-out", cert, "-days", "2", "-subj", "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1"],
                timeout: 30)
            try #require(openssl.succeeded, "openssl: \(openssl.digest)")
            httpsPort = Int(try HTTPProbe.freePort())
            httpPort = Int(try HTTPProbe.freePort())
            var site = try String(contentsOf: WebAppTests.root.appendingPathComponent("deploy/nginx/tourbus.conf"), encoding: .utf8)
            for (shipped, here) in [
                ("server 127.0.0.1:7700;", "server 127.0.0.1:\(port);"), ("listen 443 ssl;", "listen 127.0.0.1:\(httpsPort) ssl;"),
                ("listen 80;", "listen 127.0.0.1:\(httpPort);"), ("listen [::]:443 ssl;", ""), ("listen [::]:80;", ""),
                ("/etc/ssl/tourbus/fullchain.pem", cert), ("/etc/ssl/tourbus/privkey.pem", key), ("server_name guide.example.org;", "server_name 127.0.0.1;"),
            ] {
                #expect(site.contains(shipped), "deploy/nginx/tourbus.conf no longer holds \(shipped)")
                site = site.replacingOccurrences(of: shipped, with: here)
            }
            try site.write(to: folder.appendingPathComponent("tourbus.conf"), atomically: true, encoding: .utf8)
            let tmp = folder.appendingPathComponent("tmp").path
            let main = """
                pid \(folder.path)/nginx.pid;
                error_log \(folder.path)/error.log;
                events { worker_connections 256; }
                http {
                    access_log off;
                    client_body_temp_path \(tmp)/body;
                    proxy_temp_path \(tmp)/proxy;
                    fastcgi_temp_path \(tmp)/fastcgi;
                    uwsgi_temp_path \(tmp)/uwsgi;
                    scgi_temp_path \(tmp)/scgi;
                    include \(folder.path)/tourbus.conf;
                }
                """
            try main.write(to: folder.appendingPathComponent("nginx.conf"), atomically: true, encoding: .utf8)
            process = Process()
            process.executableURL = URL(fileURLWithPath: "/usr/sbin/nginx")
            process.arguments = ["-p", folder.path, "-c", folder.appendingPathComponent("nginx.conf").path, "-g", "daemon off;"]
            try process.run()
            // Listening within 5 s.
            var up = false
            for _ in 0..<50 where !up {
                up = (try? GatewayConnection(port: UInt16(httpPort), timeoutMilliseconds: 200)) != nil
                if !up { usleep(100_000) }
            }
            try #require(up, "nginx did not start: \((try? String(contentsOf: folder.appendingPathComponent("error.log"), encoding: .utf8)) ?? "")")
        }

        deinit {
            process.terminate()
            process.waitUntilExit()
            try? FileManager.default.removeItem(at: folder)
        }
    }

    static func proxiedSuite() throws -> (SuiteFixture, Proxy) {
        let suite = try WebAppTests.suite(gatewayArguments: ["--trusted-proxy", "127.0.0.1"])
        return (suite, try Proxy(gateway: suite.port))
    }

    @Test(.enabled(if: ready || RedisPy.inCI, "needs Debian's nginx, openssl, chromium and Playwright: ./deploy/local/test installs them"),
          arguments: ["account", "search", "alerts"])
    func aFlowWorksOverHTTPS(_ flow: String) throws {
        try #require(NginxTLSTests.ready, "CI=true but nginx, openssl or the browser is missing")
        let (suite, proxy) = try NginxTLSTests.proxiedSuite()
        let (problems, _) = try WebAppTests.run(flow, on: suite, base: "https://127.0.0.1:\(proxy.httpsPort)", shots: "https-\(flow)")
        #expect(problems.isEmpty, "\(flow) over https: \(problems)")
    }

    @Test(.enabled(if: ready || RedisPy.inCI, "needs Debian's nginx and openssl: ./deploy/local/test installs them"))
    func aWebSocketOverWSSSignsInAndHearsItsPushes() throws {
        try #require(NginxTLSTests.ready, "CI=true but nginx or openssl is missing")
        let suite = try SuiteFixture(gatewayArguments: ["--trusted-proxy", "127.0.0.1"])
        let proxy = try Proxy(gateway: suite.port)
        let (aliceId, aliceToken) = PushDeliveryTests.signIn("alice", on: try GatewayConnection(port: suite.port))
        let (_, bobToken) = PushDeliveryTests.signIn("bob", on: try GatewayConnection(port: suite.port))
        let steps = try HTTPSuiteTests.webSocketSteps(base: "https://127.0.0.1:\(proxy.httpsPort)", token: aliceToken, senderToken: bobToken, to: "user:\(aliceId)")
        HTTPSuiteTests.expectAWorkingWebSocket(steps, userId: aliceId)
        // Plain http is sent to https.
        let plain = try GatewayConnection(port: UInt16(proxy.httpPort))
        plain.send("GET /#/ HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
        let redirect = try #require(plain.httpResponse())
        #expect(redirect.status == 301 && redirect.headers["location"]?.hasPrefix("https://127.0.0.1") == true)
    }
}
