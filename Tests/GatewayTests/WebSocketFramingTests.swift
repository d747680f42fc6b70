import Bus
import Contracts
import Foundation
@testable import Gateway
import Testing

/// WebSockets (RFC 6455) on a `ClientSession`, upgraded from HTTP, driven by hand.
@Suite struct WebSocketFramingTests {
    static let upgrade = "GET /rpc HTTP/1.1\r\nHost: t\r\nUpgrade: websocket\r\nConnection: keep-alive, Upgrade\r\nSec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n\r\n"

    /// A client's frame: masked unless told otherwise.
    static func frame(_ opcode: UInt8, _ payload: [UInt8], fin: Bool = true, masked: Bool = true, rsv: UInt8 = 0) -> [UInt8] {
        let mask: [UInt8] = [0x37, 0xFA, 0x21, 0x3D]
        var out: [UInt8] = [(fin ? 0x80 : 0) | rsv << 4 | opcode]
        let flag: UInt8 = masked ? 0x80 : 0
        switch payload.count {
        case ..<126: out.append(flag | UInt8(payload.count))
        case ..<65_536: out += [flag | 126, UInt8(payload.count >> 8), UInt8(payload.count & 0xFF)]
        default: out += [flag | 127] + (0..<8).reversed().map { UInt8(truncatingIfNeeded: payload.count >> ($0 * 8)) }
        }
        guard masked else { return out + payload }
        return out + mask + payload.enumerated().map { $0.element ^ mask[$0.offset & 3] }
    }

    static func text(_ text: String, fin: Bool = true) -> [UInt8] { frame(1, Array(text.utf8), fin: fin) }

    /// The server's frames in `bytes`: opcode and payload each (they are never masked).
    static func frames(_ bytes: [UInt8]) -> [(opcode: UInt8, payload: [UInt8])] {
        var out: [(UInt8, [UInt8])] = []
        var at = 0
        while at + 2 <= bytes.count {
            #expect(bytes[at + 1] & 0x80 == 0, "a server's frames are not masked")
            var length = Int(bytes[at + 1] & 0x7F)
            var start = at + 2
            if length == 126 {
                length = Int(bytes[at + 2]) << 8 | Int(bytes[at + 3])
                start += 2
            } else if length == 127 {
                length = bytes[(at + 2)..<(at + 10)].reduce(0) { $0 << 8 | Int($1) }
                start += 8
            }
            guard start + length <= bytes.count else { break }
            out.append((bytes[at] & 0x0F, Array(bytes[start..<(start + length)])))
            at = start + length
        }
        #expect(at == bytes.count, "whole frames only")
        return out
    }

    /// A harness whose connection was upgraded.
    static func upgraded(_ harness: SessionHarness = SessionHarness()) throws -> SessionHarness {
        let answer = harness.send(upgrade)
        try #require(answer.hasPrefix("HTTP/1.1 101 Switching Protocols\r\n"), "\(answer)")
        return harness
    }

    /// Sends bytes; the frames written back.
    static func exchange(_ harness: SessionHarness, _ bytes: [UInt8]) -> [(opcode: UInt8, payload: [UInt8])] {
        harness.session.receive(bytes, now: harness.now)
        return frames(harness.drainBytes())
    }

    static func closeCode(_ frames: [(opcode: UInt8, payload: [UInt8])]) -> UInt16? {
        guard let close = frames.last, close.opcode == 8, close.payload.count >= 2 else { return nil }
        return UInt16(close.payload[0]) << 8 | UInt16(close.payload[1])
    }

    @Test func theHandshakeFollowsRFC6455() throws {
        let harness = SessionHarness()
        let answer = harness.send(WebSocketFramingTests.upgrade)
        // RFC 6455 §1.3's own example key and answer.
        #expect(answer == "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Accept: s3pPLMBiTxaQ9kYGzzhZRbK+xOo=\r\n\r\n")
    }

    @Test func aHandshakeMissingAPartIsRefused() {
        let cases: [(String, Int, String)] = [
            ("GET /rpc HTTP/1.1\r\nHost: t\r\n\r\n", 426, "Upgrade"),
            (WebSocketFramingTests.upgrade.replacingOccurrences(of: "Version: 13", with: "Version: 8"), 426, "Sec-WebSocket-Version"),
            (WebSocketFramingTests.upgrade.replacingOccurrences(of: "dGhlIHNhbXBsZSBub25jZQ==", with: "c2hvcnQ="), 400, "Sec-WebSocket-Key"),
            // The same 16 bytes with the unused bits of the last letter set: not the key's base64.
            (WebSocketFramingTests.upgrade.replacingOccurrences(of: "dGhlIHNhbXBsZSBub25jZQ==", with: "dGhlIHNhbXBsZSBub25jZR=="), 400, "Sec-WebSocket-Key"),
            (WebSocketFramingTests.upgrade.replacingOccurrences(of: "Host: t\r\n", with: "Host: t\r\nOrigin: https://evil.example\r\n"), 403, "Origin"),
        ]
        for (request, status, field) in cases {
            let harness = SessionHarness()
            let all = HTTPFramingTests.responses(harness.send(request))
            #expect(all.map(\.status) == [status], "\(field)")
            #expect(all.first?.body.contains(#""field":"\#(field)""#) == true)
            if field == "Sec-WebSocket-Version" { #expect(all.first?.headers["sec-websocket-version"] == "13") }
        }
    }

    @Test func messagesAreCallsAndRepliesAreTextFrames() throws {
        let harness = try WebSocketFramingTests.upgraded()
        var frames = WebSocketFramingTests.exchange(harness, WebSocketFramingTests.text(#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#))
        #expect(frames.map(\.opcode) == [1])
        #expect(frames.first.map { String(decoding: $0.payload, as: UTF8.self) } == #"{"jsonrpc":"2.0","id":1,"result":"pong"}"#)
        // A batch is one message and one frame; a message over several lines is one request.
        let batch = "[{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"ping\"},\n {\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"x.y\",\"params\":{\"a\":1}}]"
        frames = WebSocketFramingTests.exchange(harness, WebSocketFramingTests.text(batch))
        #expect(frames.map { String(decoding: $0.payload, as: UTF8.self) } == [#"[{"jsonrpc":"2.0","id":2,"result":"pong"},{"jsonrpc":"2.0","id":3,"result":{"a":1}}]"#])
        frames = WebSocketFramingTests.exchange(harness, WebSocketFramingTests.text("  "))
        #expect(frames.first.map { String(decoding: $0.payload, as: UTF8.self).contains("-32700") } == true)
        frames = WebSocketFramingTests.exchange(harness, WebSocketFramingTests.text(#"{"jsonrpc":"2.0","method":"ping"}"#))
        #expect(frames.isEmpty, "a notification gets no answer")
    }

    @Test func framesSentRightAfterTheHandshakeAreTheWebSockets() throws {
        let harness = SessionHarness()
        harness.session.receive(Array(WebSocketFramingTests.upgrade.utf8) + WebSocketFramingTests.text(#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#), now: harness.now)
        let out = harness.drainBytes()
        let headEnd = try #require(out.indices.first { out[$0...].starts(with: Array("\r\n\r\n".utf8)) })
        #expect(WebSocketFramingTests.frames(Array(out[(headEnd + 4)...])).map(\.opcode) == [1])
    }

    @Test func theUpgradeWaitsForTheResponsesOwed() throws {
        let harness = SessionHarness(answer: { call in call.method == "ping" ? .pong : nil })
        let slow = HTTPFramingTests.post(#"{"jsonrpc":"2.0","id":1,"method":"catalog.get","params":{}}"#)
        #expect(harness.send(slow + WebSocketFramingTests.upgrade).isEmpty)
        #expect(harness.answerKept() == 1)
        let out = harness.drain()
        #expect(out.hasPrefix("HTTP/1.1 200 OK"))
        #expect(out.contains("HTTP/1.1 101 Switching Protocols"))
    }

    @Test func fragmentsMakeOneMessageAndPingsGetPongsBetweenThem() throws {
        let harness = try WebSocketFramingTests.upgraded()
        let message = Array(#"{"jsonrpc":"2.0","id":7,"method":"ping"}"#.utf8)
        var bytes = WebSocketFramingTests.frame(1, Array(message[..<10]), fin: false)
        bytes += WebSocketFramingTests.frame(9, Array("are you there".utf8))
        bytes += WebSocketFramingTests.frame(0, Array(message[10..<20]), fin: false)
        bytes += WebSocketFramingTests.frame(10, [])
        bytes += WebSocketFramingTests.frame(0, Array(message[20...]), fin: true)
        let frames = WebSocketFramingTests.exchange(harness, bytes)
        #expect(frames.map(\.opcode) == [10, 1])
        #expect(frames.first?.payload == Array("are you there".utf8))
        #expect(frames.last.map { String(decoding: $0.payload, as: UTF8.self) } == #"{"jsonrpc":"2.0","id":7,"result":"pong"}"#)
    }

    @Test func aFrameArrivingInPiecesIsReadOnceWhole() throws {
        let harness = try WebSocketFramingTests.upgraded()
        let bytes = WebSocketFramingTests.text(#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#)
        var frames: [(opcode: UInt8, payload: [UInt8])] = []
        for byte in bytes { frames += WebSocketFramingTests.exchange(harness, [byte]) }
        #expect(frames.map(\.opcode) == [1])
    }

    @Test func brokenFramesCloseWithTheCodeThatSaysWhy() throws {
        let big = 1 << 20
        let cases: [(String, [UInt8], UInt16)] = [
            ("unmasked", WebSocketFramingTests.frame(1, Array("{}".utf8), masked: false), 1002),
            ("reserved bits", WebSocketFramingTests.frame(1, Array("{}".utf8), rsv: 4), 1002),
            ("unknown opcode", WebSocketFramingTests.frame(3, []), 1002),
            ("fragmented ping", WebSocketFramingTests.frame(9, [], fin: false), 1002),
            ("long ping", WebSocketFramingTests.frame(9, Array(repeating: 1, count: 126)), 1002),
            ("continuation alone", WebSocketFramingTests.frame(0, Array("{}".utf8)), 1002),
            ("new message mid-message", WebSocketFramingTests.text("[", fin: false) + WebSocketFramingTests.text("{}"), 1002),
            ("binary", WebSocketFramingTests.frame(2, [1, 2, 3]), 1003),
            ("invalid UTF-8", WebSocketFramingTests.frame(1, [0x22, 0xC3, 0x28, 0x22]), 1007),
            ("overlong UTF-8", WebSocketFramingTests.frame(1, [0x22, 0xC0, 0xAF, 0x22]), 1007),
            ("surrogate in UTF-8", WebSocketFramingTests.frame(1, [0x22, 0xED, 0xA0, 0x80, 0x22]), 1007),
            // Refused at its head, before a byte of its payload is taken.
            ("frame over the message bound", Array(WebSocketFramingTests.frame(1, Array(repeating: 0x20, count: big + 1)).prefix(14)), 1009),
            ("fragments over the bound", WebSocketFramingTests.text(String(repeating: " ", count: big - 10), fin: false) + WebSocketFramingTests.frame(0, Array(repeating: 0x20, count: 20)), 1009),
            ("length with its top bit", [0x81, 0xFF, 0x80, 0, 0, 0, 0, 0, 0, 1, 1, 2, 3, 4], 1002),
            ("close with one byte", WebSocketFramingTests.frame(8, [3]), 1002),
            ("close with a reserved code", WebSocketFramingTests.frame(8, [0x03, 0xED]), 1002),
        ]
        for (name, bytes, code) in cases {
            let harness = try WebSocketFramingTests.upgraded()
            let frames = WebSocketFramingTests.exchange(harness, bytes + WebSocketFramingTests.text(#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#))
            #expect(WebSocketFramingTests.closeCode(frames) == code, "\(name): \(frames.map(\.opcode))")
            #expect(!frames.dropLast().contains { $0.opcode == 1 }, "\(name): nothing after it is read")
            #expect(harness.session.isFinished, "\(name)")
        }
    }

    @Test func aCloseIsAnsweredOnceTheRepliesOwedAreWritten() throws {
        let harness = try WebSocketFramingTests.upgraded(SessionHarness(answer: { _ in nil }))
        let call = WebSocketFramingTests.text(#"{"jsonrpc":"2.0","id":1,"method":"catalog.get","params":{}}"#)
        var frames = WebSocketFramingTests.exchange(harness, call + WebSocketFramingTests.frame(8, [0x03, 0xE8] + Array("bye".utf8)) + call)
        #expect(frames.isEmpty)
        #expect(harness.answerKept() == 1, "the call after the close is not read")
        frames = WebSocketFramingTests.frames(harness.drainBytes())
        #expect(frames.map(\.opcode) == [1, 8])
        #expect(WebSocketFramingTests.closeCode(frames) == 1000)
        #expect(harness.session.isFinished)
    }

    /// A WebSocket of user 5, signed in with auth.resume and subscribed to notify.alert (the
    /// subscription's answer not taken yet).
    static func subscribed() throws -> SessionHarness {
        let harness = try WebSocketFramingTests.upgraded(SessionHarness(user: 5))
        _ = WebSocketFramingTests.exchange(harness, WebSocketFramingTests.text(#"{"jsonrpc":"2.0","id":1,"method":"auth.resume","params":{"token":"abc"}}"#))
        harness.deliverAll()
        _ = WebSocketFramingTests.exchange(harness, WebSocketFramingTests.text(#"{"jsonrpc":"2.0","id":2,"method":"subscribe","params":{"topics":["notify.alert"]}}"#))
        harness.deliverOutcomes()
        return harness
    }

    @Test func aSignInHoldsForTheWebSocketAndPushesArriveAsNotifications() throws {
        let harness = try WebSocketFramingTests.subscribed()
        let subscribed = WebSocketFramingTests.frames(harness.drainBytes())
        #expect(subscribed.map { String(decoding: $0.payload, as: UTF8.self) } == [#"{"jsonrpc":"2.0","id":2,"result":{"topics":["notify.alert"]}}"#])
        harness.session.push(Push(topic: "notify.alert", id: "p1", userId: 5, body: Data(#"{"a":1}"#.utf8)))
        let pushed = WebSocketFramingTests.frames(harness.drainBytes())
        #expect(pushed.map { String(decoding: $0.payload, as: UTF8.self) } == [#"{"jsonrpc":"2.0","method":"push","params":{"topic":"notify.alert","id":"p1","body":{"a":1}}}"#])
        _ = WebSocketFramingTests.exchange(harness, WebSocketFramingTests.text(#"{"jsonrpc":"2.0","id":3,"method":"catalog.get","params":{}}"#))
        #expect(harness.tokens.withLock { $0 }.last == "abc", "the WebSocket's later calls go as the user it signed in")
    }

    @Test func aWebSocketThatNeverReadsItsPushesIsClosed() throws {
        let harness = try WebSocketFramingTests.subscribed()
        _ = harness.drainBytes()
        let body = Data(("{\"pad\":\"" + String(repeating: "x", count: 4_000) + "\"}").utf8)
        // Nothing is taken from the output: the client reads nothing.
        for i in 0..<2_000 where harness.session.expired(now: harness.now) == nil {
            harness.session.push(Push(topic: "notify.alert", id: "p\(i)", userId: 5, body: body))
        }
        #expect(harness.session.expired(now: harness.now) == .unreadPushes)
    }
}

@Suite struct WebSocketBoundsTests {
    @Test func pingsDoNotKeepAnUnfinishedMessageAlive() throws {
        let harness = try WebSocketFramingTests.upgraded()
        _ = WebSocketFramingTests.exchange(harness, WebSocketFramingTests.text("[", fin: false))
        var ended: ClientSession.Ending?
        for _ in 0..<40 where ended == nil {
            harness.advance(milliseconds: 1_000)
            #expect(WebSocketFramingTests.exchange(harness, WebSocketFramingTests.frame(9, [1])).map(\.opcode) == [10])
            ended = harness.session.expired(now: harness.now)
        }
        #expect(ended == .requestTimeout)
    }

    @Test func aMessageInManyFragmentsIsOneMessage() throws {
        let harness = try WebSocketFramingTests.upgraded()
        let text = #"{"jsonrpc":"2.0","id":1,"method":"x.y","params":{"pad":""# + String(repeating: "a", count: 20_000) + #""}}"#
        var bytes = WebSocketFramingTests.frame(1, Array(text.utf8.prefix(1)), fin: false)
        for byte in text.utf8.dropFirst().dropLast() { bytes += WebSocketFramingTests.frame(0, [byte], fin: false) }
        bytes += WebSocketFramingTests.frame(0, Array(text.utf8.suffix(1)), fin: true)
        let frames = WebSocketFramingTests.exchange(harness, bytes)
        #expect(frames.count == 1 && String(decoding: frames[0].payload, as: UTF8.self).contains(String(repeating: "a", count: 20_000)))
    }

    @Test func aHandshakeOverHTTP10IsRefused() {
        let harness = SessionHarness()
        let all = HTTPFramingTests.responses(harness.send(WebSocketFramingTests.upgrade.replacingOccurrences(of: "HTTP/1.1", with: "HTTP/1.0")))
        #expect(all.map(\.status) == [400])
    }
}

@Suite struct OutputBoundTests {
    /// Replies answered at once (the OpenRPC document is one) do not pile up past the bound
    /// however many are pipelined: calls after the bound wait for the client to read.
    @Test func repliesAnsweredAtOnceStopAtTheBound() {
        let limits = GatewayLimits()
        // The size of the OpenRPC document: the first read of a connection admits 16 calls.
        let big = Data(("\"" + String(repeating: "x", count: 280_000) + "\"").utf8)
        let harness = SessionHarness(limits: limits, answer: { _ in .result(big) })
        let line = #"{"jsonrpc":"2.0","id":1,"method":"rpc.discover"}"# + "\n"
        harness.session.receive(Array(String(repeating: line, count: 100).utf8), now: harness.now)
        #expect(harness.session.pendingOutput <= limits.maxPendingOutputBytes + 280_100, "\(harness.session.pendingOutput) bytes held")
        // As the client reads, the rest are answered, all of them.
        var answered = 0
        for _ in 0..<200 {
            let out = harness.drain()
            if out.isEmpty { break }
            answered += out.split(separator: "\n").count
        }
        #expect(answered == 100)
    }
}

@Suite struct SlowReaderClockTests {
    /// A connection that owed nothing for a minute is not slow the moment it owes something:
    /// its 5 s start when its replies do.
    @Test func theGraceStartsWhenTheRepliesDo() {
        var limits = GatewayLimits()
        limits.maxPendingOutputBytes = 64 << 10
        let big = Data(("\"" + String(repeating: "x", count: 20_000) + "\"").utf8)
        let harness = SessionHarness(limits: limits, answer: { _ in .result(big) })
        #expect(harness.send(#"{"jsonrpc":"2.0","id":1,"method":"x.y"}"# + "\n").count > 20_000)
        harness.advance(milliseconds: 60_000)
        let line = #"{"jsonrpc":"2.0","id":1,"method":"x.y"}"# + "\n"
        harness.session.receive(Array(String(repeating: line, count: 20).utf8), now: harness.now)
        #expect(harness.session.pendingOutput > 0)
        harness.advance(milliseconds: 1_000)
        #expect(harness.session.expired(now: harness.now) == nil, "not slow yet: its replies came a second ago")
        harness.advance(milliseconds: 5_000)
        #expect(harness.session.expired(now: harness.now) == .slowReader)
    }
}
