import Foundation
import Testing
import TestSupport

/// HTTP/1.1 at the gateway's client port, through the real executables.
@Suite(.serialized) struct HTTPSuiteTests {
    @Test func aBearerTokenSignsInEachRequestAndNeverTheConnection() throws {
        let suite = try SuiteFixture()
        let c = try GatewayConnection(port: suite.port)
        let login = #"{"jsonrpc":"2.0","id":1,"method":"auth.login","params":{"username":"admin","password":"Admin-Pass-1"}}"#
        c.send(GatewayConnection.post(login))
        let signedIn = try #require(c.httpResponse())
        #expect(signedIn.status == 200)
        let token = try #require((json(signedIn.text)["result"] as? [String: Any])?["token"] as? String)

        let create = #"{"jsonrpc":"2.0","id":2,"method":"catalog.create","params":{"name":"Sydney Opera House","category":"attraction","lat":-33.8568,"lon":151.2153}}"#
        // The same connection, after a sign-in over it: still no one without the header.
        c.send(GatewayConnection.post(create))
        let anonymous = try #require(c.httpResponse())
        #expect(anonymous.status == 200)
        #expect(RPCReply(anonymous.text).errorCode == "unauthenticated")

        c.send(GatewayConnection.post(create, headers: ["Authorization: Bearer \(token)"]))
        let created = try #require(c.httpResponse())
        #expect(RPCReply(created.text).field("id", Int.self) == 1)

        // Another client's connection (a proxy's) is not signed in by the header either.
        c.send(GatewayConnection.post(create))
        #expect(RPCReply(c.httpResponse()?.text).errorCode == "unauthenticated")
    }

    @Test func pipelinedRequestsAreAnsweredInOrderOverOneConnection() throws {
        let suite = try SuiteFixture()
        let c = try GatewayConnection(port: suite.port)
        let requests = (1...20).map { i in
            i % 5 == 0 ? "GET /openrpc.json HTTP/1.1\r\nHost: t\r\n\r\n" : GatewayConnection.post(#"{"jsonrpc":"2.0","id":\#(i),"method":"catalog.get","params":{"id":\#(i)}}"#)
        }
        c.send(requests.joined())
        for i in 1...20 {
            let response = try #require(c.httpResponse(), "response \(i)")
            if i % 5 == 0 {
                #expect(json(response.text)["openrpc"] as? String != nil)
            } else {
                #expect(json(response.text)["id"] as? Int == i)
                #expect(RPCReply(response.text).errorCode == "not_found")
            }
        }
    }

    @Test func theOpenRPCDocumentIsTheSameOverHTTPAndTheLineProtocol() throws {
        let suite = try SuiteFixture()
        let http = try GatewayConnection(port: suite.port)
        http.send("GET /openrpc.json HTTP/1.1\r\nHost: t\r\n\r\n")
        let document = try #require(http.httpResponse())
        #expect(document.status == 200 && document.headers["content-type"] == "application/json")
        let line = try GatewayConnection(port: suite.port).call(#"{"jsonrpc":"2.0","id":1,"method":"rpc.discover"}"#)
        let result = try #require((try JSONSerialization.jsonObject(with: Data((line ?? "").utf8)) as? [String: Any])?["result"])
        let viaLine = try JSONSerialization.data(withJSONObject: result, options: [.sortedKeys])
        let viaHTTP = try JSONSerialization.data(withJSONObject: try JSONSerialization.jsonObject(with: Data(document.body)), options: [.sortedKeys])
        #expect(viaLine == viaHTTP)
    }

    @Test func smugglingIsRefusedAndTheConnectionClosed() throws {
        let suite = try SuiteFixture()
        // A second request hidden in a body, under two ways of framing it.
        let hidden = "GET /openrpc.json HTTP/1.1\r\nHost: t\r\n\r\n"
        let attacks = [
            "POST /rpc HTTP/1.1\r\nHost: t\r\nContent-Type: application/json\r\nContent-Length: \(hidden.utf8.count + 5)\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n" + hidden,
            "POST /rpc HTTP/1.1\r\nHost: t\r\nContent-Type: application/json\r\nContent-Length: 0\r\nContent-Length: \(hidden.utf8.count)\r\n\r\n" + hidden,
            "POST /rpc HTTP/1.1\r\nHost: t\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked, identity\r\n\r\n0\r\n\r\n" + hidden,
        ]
        for attack in attacks {
            let c = try GatewayConnection(port: suite.port)
            c.send(attack)
            let refused = try #require(c.httpResponse())
            #expect(refused.status == 400 || refused.status == 501, "\(attack.prefix(120)): \(refused.status)")
            #expect(refused.headers["connection"] == "close")
            #expect(c.isClosedByPeer(), "nothing after the refusal is read")
        }
    }

    @Test func aSlowHeadIsClosedAtTheRequestTimeout() throws {
        let suite = try SuiteFixture(gatewayArguments: ["--request-timeout-ms", "400"])
        let c = try GatewayConnection(port: suite.port)
        c.send("POST /rpc HTTP/1.1\r\n")
        // A header line every 100 ms never finishes the head.
        var closed = false
        for _ in 0..<30 where !closed {
            usleep(100_000)
            c.send("X-Slow: 1\r\n")
            var probe = [UInt8](repeating: 0, count: 1)
            closed = probe.withUnsafeMutableBytes { recv(c.fd, $0.baseAddress, 1, Int32(MSG_DONTWAIT)) } == 0
        }
        #expect(closed)
    }

    @Test func aConnectionOverTheAddressCapIsToldSoInHTTP() throws {
        let suite = try SuiteFixture(gatewayArguments: ["--max-connections-per-address", "1"])
        // From an address of its own: the fixture's readiness probe came from 127.0.0.1, and a
        // gateway under load may not yet have seen it close.
        let first = try GatewayConnection(port: suite.port, from: "127.0.0.2")
        first.send(GatewayConnection.post(#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#))
        #expect(first.httpResponse()?.status == 200)
        let second = try GatewayConnection(port: suite.port, from: "127.0.0.2")
        second.send(GatewayConnection.post(#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#))
        let refused = try #require(second.httpResponse())
        #expect(refused.status == 503)
        #expect(json(refused.text)["error"] != nil)
        #expect(refused.text.contains("too many connections from your address"))
        withExtendedLifetime(first) {}
    }

    /// Protocols/http.md's `http` blocks, replayed in file order against one fresh suite, each
    /// block on a connection of its own. `<token>` in a request stands for the last token a
    /// response gave.
    @Test func theHTTPDocumentMatchesTheRunningSuite() throws {
        let blocks = try gatewayTranscriptBlocks("http.md").filter { $0.kind == "http" }
        #expect(blocks.count >= 8)
        let suite = try SuiteFixture()
        var token = ""
        for block in blocks {
            let c = try GatewayConnection(port: suite.port)
            var lines = block.lines[...]
            while !lines.isEmpty {
                let sent = lines.prefix { $0.text.hasPrefix(">") }
                lines = lines.dropFirst(sent.count)
                let expected = lines.prefix { $0.text.hasPrefix("<") }
                lines = lines.dropFirst(expected.count)
                for request in HTTPTranscript.messages(sent.map { String($0.text.dropFirst(2)) }) {
                    // A chunked body (the smuggling example's) is not what its length says.
                    let chunked = request.head.contains { $0.lowercased().hasPrefix("transfer-encoding:") }
                    let declared = chunked ? nil : request.head.first { $0.lowercased().hasPrefix("content-length:") }.flatMap { Int($0.dropFirst(15).trimmingCharacters(in: .whitespaces)) }
                    #expect(declared == nil || declared == request.body.utf8.count, "http.md line \(sent.first?.number ?? 0): Content-Length \(declared ?? 0), body \(request.body.utf8.count) bytes")
                    let head = request.head.map { $0.replacingOccurrences(of: "<token>", with: token) }
                    c.send(head.joined(separator: "\r\n") + "\r\n\r\n" + request.body)
                }
                for response in HTTPTranscript.messages(expected.map { String($0.text.dropFirst(2)) }) {
                    let at = "http.md line \(expected.first?.number ?? 0)"
                    let isHead = response.head.contains { $0.hasPrefix("Content-Length:") } && response.body.isEmpty
                    guard let actual = c.httpResponse(head: isHead) else {
                        Issue.record("\(at): no response")
                        break
                    }
                    #expect(actual.statusLine == response.head.first, "\(at): got \(actual.statusLine)")
                    let headers = Array(response.head.dropFirst())
                    let matches = headers.count == actual.headerLines.count
                        && zip(headers, actual.headerLines).allSatisfy { expected, got in
                            expected == got || (expected.hasSuffix(": <any>") && got.hasPrefix(expected.dropLast(5)))
                        }
                    #expect(matches, "\(at): got headers \(actual.headerLines)")
                    if response.body.hasPrefix("{") || response.body.hasPrefix("[") {
                        #expect(sameJSON(response.body, actual.text), "\(at): got \(actual.text)")
                    } else {
                        #expect(response.body == actual.text, "\(at): got \(actual.text)")
                    }
                    if let given = (json(actual.text)["result"] as? [String: Any])?["token"] as? String { token = given }
                }
            }
        }
    }

    @Test(.enabled(if: RedisPy.isInstalled || RedisPy.inCI, "needs PyPI websockets in .build/pyenv, which ./deploy/local/test makes"))
    func anIndependentWebSocketClientSignsInCallsAndHearsItsPushes() throws {
        let suite = try SuiteFixture()
        let alice = try GatewayConnection(port: suite.port)
        let (aliceId, aliceToken) = PushDeliveryTests.signIn("alice", on: alice)
        let (_, bobToken) = PushDeliveryTests.signIn("bob", on: try GatewayConnection(port: suite.port))
        let steps = try HTTPSuiteTests.webSocketSteps(base: "http://127.0.0.1:\(suite.port)", token: aliceToken, senderToken: bobToken, to: "user:\(aliceId)")
        HTTPSuiteTests.expectAWorkingWebSocket(steps, userId: aliceId)
    }

    /// Runs websockets_client.py against `base`: each step's answer.
    static func webSocketSteps(base: String, token: String, senderToken: String, to: String) throws -> [String: Any] {
        let plan: [String: Any] = ["base": base, "token": token, "sender": ["token": senderToken], "to": to]
        let script = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("Resources/websockets_client.py").path
        let run = try BoundedRun(RedisPy.python, [script, String(decoding: try JSONSerialization.data(withJSONObject: plan), as: UTF8.self)],
                                 environment: ["PYTHONDONTWRITEBYTECODE": "1"], timeout: 60)
        try #require(run.succeeded, "the script \(run.ending): \(run.digest)")
        let summary = json(run.output.split(separator: "\n").last { $0.hasPrefix("{") }.map(String.init))
        return try #require(summary["steps"] as? [String: Any], "no summary: \(run.digest)")
    }

    /// What websockets_client.py's steps show of a gateway that works: signed in by auth.resume,
    /// subscribed, a fragmented message read, a chat push heard, a foreign origin refused.
    static func expectAWorkingWebSocket(_ steps: [String: Any], userId aliceId: Int64) {
        func result(_ name: String) -> Any? { (steps[name] as? [String: Any])?["result"] }
        #expect(result("ping") as? String == "pong", "\(steps["ping"] ?? "nothing")")
        #expect((result("resume") as? [String: Any])?["user_id"] as? Int64 == aliceId, "\(steps["resume"] ?? "nothing")")
        #expect((result("subscribe") as? [String: Any])?["topics"] as? [String] == ["chat.message"], "\(steps["subscribe"] ?? "nothing")")
        #expect(result("fragmented") as? String == "pong", "\(steps["fragmented"] ?? "nothing")")
        #expect(steps["pong"] is NSNull || (steps["pong"] as? Bool) != nil, "\(steps["pong"] ?? "nothing")")
        let chat = steps["chat"] as? [String: Any]
        let push = chat?["push"] as? [String: Any]
        #expect(push?["method"] as? String == "push", "\(chat ?? [:])")
        #expect((push?["params"] as? [String: Any])?["topic"] as? String == "chat.message")
        #expect(steps["extensions"] as? [String] == [], "no compression is agreed")
        #expect(steps["close_code"] as? Int == 1000)
        #expect((steps["foreign_origin"] as? [String: Any])?["status"] as? Int == 403, "\(steps["foreign_origin"] ?? "nothing")")
        #expect(steps["session"] == nil || steps["session"] is NSNull, "\(steps["session"] ?? "")")
    }

    /// Behind a trusted proxy (127.0.0.1 here) each client is counted under the address it names;
    /// any other peer's X-Forwarded-For is ignored, from 80 attacking addresses as from one.
    @Test func forgedForwardedForHeadersAreIgnoredAndATrustedProxysClientsAreCountedApart() throws {
        let suite = try SuiteFixture(gatewayArguments: ["--trusted-proxy", "127.0.0.1", "--logins-per-minute-per-address", "2"])
        let request = #"{"jsonrpc":"2.0","id":1,"method":"auth.login","params":{"username":"admin","password":"Admin-Pass-1"}}"#
        func login(from source: String, as client: String) throws -> String? {
            let c = try GatewayConnection(port: suite.port, from: source)
            c.send(GatewayConnection.post(request, headers: ["X-Forwarded-For: \(client)"]))
            let reply = RPCReply(c.httpResponse()?.text)
            return reply.succeeded ? "ok" : reply.errorCode
        }
        // 80 attackers each claim to be the victim, and others, through the header.
        for n in 2..<82 {
            let attacker = "127.0.0.\(n)"
            let outcomes = try (0..<3).map { try login(from: attacker, as: $0 == 0 ? "198.51.100.200" : "198.51.100.\($0)") }
            #expect(outcomes == ["ok", "ok", "rate_limited"], "\(attacker): its own logins, counted under its own address: \(outcomes)")
        }
        // The victim, through the proxy, has its whole share.
        #expect(try login(from: "127.0.0.1", as: "198.51.100.200") == "ok")
        #expect(try login(from: "127.0.0.1", as: "198.51.100.200") == "ok")
        #expect(try login(from: "127.0.0.1", as: "198.51.100.200") == "rate_limited")
        // Other clients of the proxy are apart from it and from each other.
        for n in 1...40 { #expect(try login(from: "127.0.0.1", as: "203.0.113.\(n)") == "ok") }
    }

    @Test func aProxyHeaderCountsATrustedProxysConnectionUnderItsClient() throws {
        let suite = try SuiteFixture(gatewayArguments: ["--trusted-proxy", "127.0.0.1", "--max-connections-per-address", "2"])
        func proxied(_ client: [UInt8], from source: String) throws -> GatewayConnection {
            let c = try GatewayConnection(port: suite.port, from: source)
            let addresses = client + [127, 0, 0, 1, 0x13, 0x88, 0x1E, 0x14]
            c.send(ProxyV2.signature + [0x21, 0x11, 0, UInt8(addresses.count)] + addresses)
            return c
        }
        let client: [UInt8] = [198, 51, 100, 7]
        let held = try (0..<2).map { _ in try proxied(client, from: "127.0.0.1") }
        for c in held { #expect(c.call(#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#) == #"{"jsonrpc":"2.0","id":1,"result":"pong"}"#) }
        let third = try proxied(client, from: "127.0.0.1")
        third.send(#"{"jsonrpc":"2.0","id":1,"method":"ping"}"# + "\n")
        #expect(third.isClosedByPeer(), "a third connection of one client is over its share")
        let other = try proxied([198, 51, 100, 8], from: "127.0.0.1")
        #expect(other.call(#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#) == #"{"jsonrpc":"2.0","id":1,"result":"pong"}"#, "another client has its own")
        // From a peer that is not trusted, the header is bytes of the stream, never an address.
        let untrusted = try proxied([198, 51, 100, 9], from: "127.0.0.2")
        untrusted.send(#"{"jsonrpc":"2.0","id":1,"method":"ping"}"# + "\n")
        #expect(untrusted.line()?.hasPrefix("-") == true, "read as RESP")
    }
}

/// The PROXY protocol v2's signature, as a proxy sends it.
enum ProxyV2 {
    static let signature: [UInt8] = [0x0D, 0x0A, 0x0D, 0x0A, 0x00, 0x0D, 0x0A, 0x51, 0x55, 0x49, 0x54, 0x0A]
}

/// HTTP messages as Protocols/http.md writes them: a head, an empty line, a body of the lines
/// up to the next message's first line (`METHOD target HTTP/1.1`, `HTTP/1.1 status`).
enum HTTPTranscript {
    static func messages(_ lines: [String]) -> [(head: [String], body: String)] {
        func starts(_ line: String) -> Bool { line.hasPrefix("HTTP/1.1 ") || line.wholeMatch(of: /[A-Z]+ \S+ HTTP\/1\.[01]/) != nil }
        var messages: [(head: [String], body: String)] = []
        var rest = lines[...]
        while let first = rest.first, starts(first) {
            let head = rest.prefix { !$0.isEmpty }
            rest = rest.dropFirst(head.count + 1)
            let body = rest.prefix { !starts($0) }
            rest = rest.dropFirst(body.count)
            messages.append((Array(head), body.joined(separator: "\n")))
        }
        return messages
    }
}
