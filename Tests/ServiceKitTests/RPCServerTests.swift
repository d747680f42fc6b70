import Bus
import Foundation
import ServiceKit
import Synchronization
import TestSupport
import Testing

/// Request and reply bodies of the test server.
struct Echo: Codable, Sendable, Equatable {
    var text: String
    var sleepMs: Int?
}

struct Sum: Codable, Sendable {
    var a: Int
    var b: Int
}

let logger = Logger(component: "bus-test", level: .error)

/// A server answering `test.echo`, `test.sum` and `test.write`, bound to `endpoint`.
func makeServer(_ context: ZMQContext, endpoint: String = "tcp://127.0.0.1:0", options: RPCServerOptions = RPCServerOptions()) throws -> RPCServer<String> {
    var table = HandlerTable<String>()
    table.on("test.echo") { (request: Echo, _, _) -> Echo in
        if let ms = request.sleepMs { usleep(UInt32(ms) * 1000) }
        return request
    }
    table.on("test.sum") { (request: Sum, _, _) -> Int in request.a + request.b }
    table.on("test.whoami", .write) { (_: Empty, context, state) -> [String] in [state, context.auth?.userId ?? "nobody"] }
    table.on("test.fail") { (_: Empty, _, _) -> Empty in throw ServiceError(.conflict, "always", field: "x") }
    return try RPCServer(context: context, bind: [endpoint], table: table, options: options, logger: logger) { kind in
        kind == .write ? "writer" : "reader"
    }
}

@Suite struct SocketTests {
    @Test func multipartRoundTripAndTenMebibytes() throws {
        let context = try ZMQContext()
        let router = try Socket(context, .router)
        let endpoint = try router.bind("tcp://127.0.0.1:0")
        #expect(endpoint.hasPrefix("tcp://127.0.0.1:") && !endpoint.hasSuffix(":0"))
        let dealer = try Socket(context, .dealer)
        try dealer.setReceiveTimeout(milliseconds: 5_000)
        try router.setReceiveTimeout(milliseconds: 5_000)
        try dealer.connect(endpoint)

        let big = Data((0..<(10 << 20)).map { UInt8(truncatingIfNeeded: $0 &* 31) })
        try dealer.send([Data("one".utf8), Data(), big])
        let received = try #require(try router.receive())
        #expect(received.count == 4)  // identity + three frames
        #expect(received[1] == Data("one".utf8))
        #expect(received[2].isEmpty)
        #expect(received[3] == big)

        try router.send([received[0], Data("back".utf8)])
        #expect(try dealer.receive() == [Data("back".utf8)])
        #expect(try dealer.receive(dontWait: true) == nil)  // EAGAIN is not an error
    }

    @Test func bindErrorsAreTyped() throws {
        let context = try ZMQContext()
        let a = try Socket(context, .router)
        let endpoint = try a.bind("tcp://127.0.0.1:0")
        let b = try Socket(context, .router)
        #expect(throws: ZMQError.self) { try b.bind(endpoint) }
        do {
            try b.bind("nonsense://x")
            Issue.record("bind should fail")
        } catch {
            #expect(error.errno != 0 && !error.message.isEmpty)
        }
    }
}

@Suite struct RPCTests {
    @Test func typedRoundTripErrorsAndAuth() throws {
        let context = try ZMQContext()
        let server = try makeServer(context)
        let client = try RPCClient(context: context, endpoints: server.endpoints, logger: logger)
        #expect(try client.call("test.echo", Echo(text: "hé"), as: Echo.self) == Echo(text: "hé"))
        #expect(try client.call("test.sum", Sum(a: 2, b: 40), as: Int.self) == 42)
        #expect(try client.call("test.whoami", Empty(), as: [String].self, auth: Auth(userId: "u7", role: "user")) == ["writer", "u7"])

        #expect(throws: ServiceError(.conflict, "always", field: "x")) { try client.call("test.fail", Empty(), as: Empty.self) }
        #expect(throws: ServiceError(.notFound, "unknown request type 'test.nope'", field: "type")) {
            try client.call("test.nope", Empty(), as: Empty.self)
        }
        do {
            _ = try client.request(type: "test.sum", body: Data(#"{"a":"x","b":1}"#.utf8))
            Issue.record("expected invalid_argument")
        } catch {
            #expect(error.code == .invalidArgument && error.field == "a")
        }
        do {
            _ = try client.request(type: "test.sum", body: Data(#"{"b":1}"#.utf8))
            Issue.record("expected invalid_argument")
        } catch {
            #expect(error.code == .invalidArgument && error.field == "a" && error.message.contains("missing"))
        }
        let stats = server.stats.snapshot()
        #expect(stats.requests == 7 && stats.errors == 4 && stats.byType["test.sum"] == 3)
    }

    @Test func thousandRequestsInFlightFromOneClient() throws {
        let context = try ZMQContext()
        let server = try makeServer(context)
        let client = try RPCClient(context: context, endpoints: server.endpoints, logger: logger)
        let results = Mutex<[Int: Int]>([:])
        let group = DispatchGroup()
        for i in 0..<1_000 {
            group.enter()
            let body = try JSONEncoder().encode(Sum(a: i, b: 1))
            client.send(type: "test.sum", body: body, timeoutMilliseconds: 20_000) { result in
                if case .success(let reply) = result, let value = try? reply.body(Int.self) {
                    results.withLock { $0[i] = value }
                }
                group.leave()
            }
        }
        #expect(group.wait(timeout: .now() + 30) == .success)
        let answered = results.withLock { $0 }
        #expect(answered.count == 1_000)
        #expect(answered.allSatisfy { $0.value == $0.key + 1 })
    }

    @Test func deadlineWithServerStoppedThenRecovery() throws {
        let context = try ZMQContext()
        var server: RPCServer<String>? = try makeServer(context)
        let endpoint = try #require(server?.endpoints.first)
        let client = try RPCClient(context: context, endpoints: [endpoint], logger: logger)
        #expect(try client.call("test.sum", Sum(a: 1, b: 1), as: Int.self) == 2)

        server?.stop()
        server = nil
        let start = Date()
        do {
            _ = try client.call("test.sum", Sum(a: 1, b: 1), as: Int.self, timeoutMilliseconds: 300)
            Issue.record("a stopped server cannot answer")
        } catch {
            #expect(error.code == .unavailable || error.code == .deadlineExceeded)
        }
        let waited = Date().timeIntervalSince(start)
        #expect(waited >= 0.25 && waited < 2.0)

        // The same endpoint comes back: the same client recovers by itself.
        server = try makeServer(context, endpoint: endpoint)
        var answer: Int?
        for _ in 0..<50 where answer == nil {
            answer = try? client.call("test.sum", Sum(a: 20, b: 22), as: Int.self, timeoutMilliseconds: 200)
        }
        #expect(answer == 42)
    }

    @Test func handlersRunOnSeveralThreadsAtOnce() throws {
        // Two requests that can only finish when both are inside a handler at the same time.
        let context = try ZMQContext()
        let inside = Mutex(0)
        let bothInside = DispatchSemaphore(value: 0)
        var table = HandlerTable<Int>()
        table.on("test.meet") { (_: Empty, _, _) -> Bool in
            if inside.withLock({ $0 += 1; return $0 }) == 2 {
                bothInside.signal()
                bothInside.signal()
            }
            // Only a second thread running this handler at the same time can release the first.
            return bothInside.wait(timeout: .now() + 3) == .success
        }
        var options = RPCServerOptions()
        options.readers = 2
        let server = try RPCServer(context: context, bind: ["tcp://127.0.0.1:0"], table: table, options: options, logger: logger) { _ in 0 }
        let client = try RPCClient(context: context, endpoints: server.endpoints, logger: logger)
        let results = Mutex<[Bool]>([])
        let group = DispatchGroup()
        for _ in 0..<2 {
            group.enter()
            DispatchQueue.global().async {
                let met = (try? client.call("test.meet", Empty(), as: Bool.self, timeoutMilliseconds: 5_000)) ?? false
                results.withLock { $0.append(met) }
                group.leave()
            }
        }
        #expect(group.wait(timeout: .now() + 10) == .success)
        #expect(results.withLock { $0 } == [true, true])
    }

    @Test func nothingListeningIsUnavailable() throws {
        let context = try ZMQContext()
        let probe = try Socket(context, .router)
        let endpoint = try probe.bind("tcp://127.0.0.1:0")
        try probe.unbind(endpoint)
        let client = try RPCClient(context: context, endpoints: [endpoint], logger: logger)
        #expect(throws: ServiceError.self) { try client.call("test.sum", Sum(a: 1, b: 1), as: Int.self, timeoutMilliseconds: 200) }
        do {
            _ = try client.call("test.sum", Sum(a: 1, b: 1), as: Int.self, timeoutMilliseconds: 200)
        } catch {
            #expect(error.code == .unavailable)
        }
    }

    @Test func lateReplyIsDroppedNotDeliveredToTheNextCaller() throws {
        let context = try ZMQContext()
        var options = RPCServerOptions()
        options.readers = 2
        let server = try makeServer(context, options: options)
        let client = try RPCClient(context: context, endpoints: server.endpoints, logger: logger)
        do {
            _ = try client.call("test.echo", Echo(text: "slow", sleepMs: 400), as: Echo.self, timeoutMilliseconds: 100)
            Issue.record("expected deadline_exceeded")
        } catch {
            #expect(error.code == .deadlineExceeded)
        }
        // The slow reply arrives while this call is in flight; it must not be taken for this one.
        #expect(try client.call("test.echo", Echo(text: "fast", sleepMs: 500), as: Echo.self, timeoutMilliseconds: 3_000) == Echo(text: "fast", sleepMs: 500))
    }

    @Test func badInputGetsErrorRepliesAndTheServerStaysUp() throws {
        let context = try ZMQContext()
        var options = RPCServerOptions()
        options.maxRequestBytes = 1 << 20
        let server = try makeServer(context, options: options)
        let raw = try Socket(context, .dealer)
        try raw.setReceiveTimeout(milliseconds: 3_000)
        try raw.connect(server.endpoints[0])

        func ask(_ frames: [Data]) throws -> ReplyHeader? {
            try raw.send(frames)
            guard let reply = try raw.receive() else { return nil }
            return try JSONDecoder().decode(ReplyHeader.self, from: reply[0])
        }
        let garbage = Data((0..<300).map { _ in UInt8.random(in: 0...255) })
        #expect(try ask([garbage])?.error?.code == .invalidArgument)
        #expect(try ask([Data("{\"v\":2,\"id\":\"a\",\"type\":\"test.sum\",\"body\":{}}".utf8)])?.error?.field == "v")
        let unknown = try ask([Data("{\"v\":1,\"id\":\"b\",\"type\":\"nope\",\"body\":{}}".utf8)])
        #expect(unknown?.error?.code == .notFound && unknown?.id == "b")
        let huge = "{\"v\":1,\"id\":\"c\",\"type\":\"test.echo\",\"body\":{\"text\":\"" + String(repeating: "x", count: 2 << 20) + "\"}}"
        let tooLarge = try ask([Data(huge.utf8)])
        #expect(tooLarge?.error?.code == .tooLarge && tooLarge?.id == "c")
        let sum = Data("{\"v\":1,\"id\":\"d\",\"type\":\"test.sum\",\"body\":{\"a\":1,\"b\":2}}".utf8)
        #expect(try ask([sum])?.ok == true)
        // REQ-style framing (empty delimiter) is answered too.
        try raw.send([Data(), sum])
        let reqReply = try #require(try raw.receive())
        #expect(reqReply.count == 2 && reqReply[0].isEmpty)
    }

    /// The client knows its requests by number; a reply naming the number another way (`P-01`
    /// for `P-1`, valid or malformed) is not that request's, and the real reply still is.
    @Test func aReplyWithTheRequestNumberWrittenAnotherWayIsNotItsReply() throws {
        let context = try ZMQContext()
        let router = try Socket(context, .router)
        let endpoint = try router.bind("tcp://127.0.0.1:0")
        try router.setReceiveTimeout(milliseconds: 5_000)
        let client = try RPCClient(context: context, endpoints: [endpoint], logger: logger)
        defer { client.close() }
        let pending = client.start(type: "test.echo", body: Data(#"{"text":"real"}"#.utf8), timeoutMilliseconds: 3_000)
        let frames = try #require(try router.receive())
        let id = try JSONDecoder().decode(RequestHeader.self, from: frames[1]).id
        let dash = try #require(id.lastIndex(of: "-"))
        for zeros in ["0", "00"] {
            let forged = String(id[...dash]) + zeros + String(id[id.index(after: dash)...])
            try router.send([frames[0], EnvelopeCoding.success(id: forged, body: Data(#"{"text":"forged"}"#.utf8))])
            try router.send([frames[0], Data(#"{"v":1,"id":"\#(forged)","ok":true,"body":[1,}"#.utf8)])
        }
        try router.send([frames[0], EnvelopeCoding.success(id: id, body: Data(#"{"text":"real"}"#.utf8))])
        #expect(try pending.wait().bodyJSON == Data(#"{"text":"real"}"#.utf8))
    }
}

@Suite struct EnvelopeTests {
    @Test func envelopesAreTheDocumentedJSON() throws {
        let success = EnvelopeCoding.success(id: "r1", body: Data("{\"x\":1}".utf8))
        #expect(String(decoding: success, as: UTF8.self) == #"{"v":1,"id":"r1","ok":true,"body":{"x":1}}"#)
        let failure = EnvelopeCoding.failure(id: nil, error: ServiceError(.notFound, "no \"place\"", field: "id"))
        let header = try JSONDecoder().decode(ReplyHeader.self, from: failure)
        #expect(header.ok == false && header.id == nil && header.error == ServiceError(.notFound, "no \"place\"", field: "id"))
        let event = EnvelopeCoding.event(seq: 7, type: "catalog.place.deleted", ts: "2026-01-01T00:00:00.000Z", epoch: "e", body: Data("{\"id\":3}".utf8))
        #expect(try JSONDecoder().decode(EventHeader.self, from: event) == EventHeader(v: 1, seq: 7, type: "catalog.place.deleted", ts: "2026-01-01T00:00:00.000Z", epoch: "e"))
        #expect(ErrorCode.allCases.map(\.rawValue) == ["invalid_argument", "not_found", "already_exists", "conflict", "unauthenticated",
                                                      "permission_denied", "rate_limited", "too_large", "unavailable", "deadline_exceeded", "internal"])
    }

    /// A request is written by hand: its `auth` is the encoder's bytes, its strings escaped as
    /// the encoder escapes them, and it reads back (by span and by decoding) as it was given.
    @Test func requestsAreTheDocumentedJSON() throws {
        let body = Data(#"{"a":[1,"x"]}"#.utf8)
        for (type, auth, client) in [("catalog.create", Auth(userId: "17", role: "admin"), "203.0.113.9"),
                                     ("a\"b\\c\n/é", Auth(userId: "u\"1\u{1}", role: "r/ö"), "2001:db8:0:7::/64"),
                                     ("notify.location", Auth(userId: "3", role: "user", origin: "k2x/17"), nil), ("sys.ping", nil, nil)] {
            let envelope = EnvelopeCoding.request(id: "g-9", type: type, auth: auth, client: client, deadlineMilliseconds: 250, body: body)
            let authJSON = try auth.map { String(decoding: try JSONCoding.encoder.encode($0), as: UTF8.self) } ?? "null"
            let typeJSON = String(decoding: try JSONCoding.encoder.encode(type), as: UTF8.self)
            let clientJSON = client.map { #","client":"\#($0)""# } ?? ""
            #expect(String(decoding: envelope, as: UTF8.self)
                    == #"{"v":1,"id":"g-9","type":\#(typeJSON),"auth":\#(authJSON)\#(clientJSON),"deadline_ms":250,"body":{"a":[1,"x"]}}"#)
            try StrictJSON.check(envelope)
            let decoded = try JSONDecoder().decode(RequestHeader.self, from: envelope)
            #expect(decoded.type == type && decoded.auth == auth && decoded.client == client && decoded.deadlineMs == 250 && decoded.id == "g-9")
            let scanned = try #require(try RequestHeader.scan(envelope))
            #expect(scanned.type == type && scanned.auth == auth && scanned.client == client && scanned.bodyRange.map { envelope.subdata(in: $0) } == body)
        }
        // A client named twice is left to the decoder, which refuses it like any repeated key.
        let twice = Data(#"{"v":1,"id":"a","type":"t","client":"1.2.3.4","client":"5.6.7.8","body":{}}"#.utf8)
        #expect(try RequestHeader.scan(twice) == nil)
    }

    @Test func eventHeadersScanLikeTheyDecode() throws {
        let event = EnvelopeCoding.event(seq: 42, type: "catalog.place.upserted", ts: "2026-01-01T00:00:00.000Z", epoch: "e-1",
                                         body: Data(#"{"seq":1,"type":"not this","body":{"epoch":"x"}}"#.utf8))
        let scanned = try #require(EventHeader.scan(event))
        #expect(scanned == (try JSONDecoder().decode(EventHeader.self, from: event)))
        #expect(scanned == EventHeader(seq: 42, type: "catalog.place.upserted", ts: "2026-01-01T00:00:00.000Z", epoch: "e-1"))
        // Anything unusual is left to the full decoder.
        #expect(EventHeader.scan(Data(#"{"v":1,"seq":1,"type":"a\"b","ts":"t","epoch":"e","body":{}}"#.utf8)) == nil)
        #expect(EventHeader.scan(Data(#"{"v":1,"type":"a","ts":"t","epoch":"e","body":{}}"#.utf8)) == nil)
        #expect(EventHeader.scan(Data("not json".utf8)) == nil)
    }

    @Test func replyHeadsReadBySpanOrByDecoding() throws {
        let success = try #require(try ReplyHeader.read(EnvelopeCoding.success(id: "c-7", body: Data(#"{"id":"other","ok":false}"#.utf8))))
        #expect(success.ok && success.id == "c-7" && success.error == nil)
        let failure = try #require(try ReplyHeader.read(EnvelopeCoding.failure(id: "c-8", error: ServiceError(.conflict, "no", field: "x"))))
        #expect(!failure.ok && failure.id == "c-8" && failure.error == ServiceError(.conflict, "no", field: "x"))
        // An escaped id is left to the decoder, which still reads it.
        #expect(try ReplyHeader.read(Data(#"{"v":1,"id":"a\"b","ok":true,"body":{}}"#.utf8))?.id == "a\"b")
        // Text that is not strict JSON is refused by the walk that reads the head, before any decoder sees it.
        #expect(throws: JSONSyntaxError.self) { try ReplyHeader.read(Data("garbage".utf8)) }
        #expect(throws: JSONSyntaxError(.tooDeep(limit: 3), at: 35)) { try ReplyHeader.read(Data(#"{"v":1,"id":"a","ok":true,"body":[[[1]]]}"#.utf8), maxDepth: 3) }
        #expect(throws: JSONSyntaxError(.trailingComma, at: 35)) { try ReplyHeader.read(Data(#"{"v":1,"id":"a","ok":true,"body":{},}"#.utf8)) }
        // The body is found in the same walk, wherever it lies among the members.
        let envelope = Data(#"{"body":{"ok":false,"id":"x"},"v":1,"ok":true,"id":"c-9"}"#.utf8)
        let bodyFirst = try #require(try ReplyHeader.read(envelope))
        let bodyRange = try #require(bodyFirst.bodyRange)
        #expect(bodyFirst.ok && bodyFirst.id == "c-9" && envelope[bodyRange] == Data(#"{"ok":false,"id":"x"}"#.utf8))
        // A repeated member is the decoder's to judge, not the first one the walk meets.
        let twice = Data(#"{"v":1,"id":"a","ok":true,"ok":false,"error":{"code":"conflict","message":"m"}}"#.utf8)
        let decoded = try? JSONDecoder().decode(ReplyHeader.self, from: twice)
        let repeated = try ReplyHeader.read(twice)
        #expect(repeated?.ok == decoded?.ok && repeated?.error == decoded?.error && repeated?.bodyRange == nil)
    }

    @Test func missingBodyReadsAsEmptyObject() throws {
        struct Optional1: Codable, Sendable { var limit: Int? }
        let decoded = try JSONCoding.decodeBody(Optional1.self, fromEnvelope: Data(#"{"v":1,"id":"x","type":"t"}"#.utf8))
        #expect(decoded.limit == nil)
    }
}

@Suite struct LoggerFieldTests {
    @Test func fieldsChosenAtRunTimeAreWrittenInOrderAndQuoted() {
        let lines = Locked<[String]>([])
        let log = Logger(component: "up", level: .info) { line in lines.withLock { $0.append(line) } }
        let exits: [(key: String, value: Any)] = [(key: "status", value: 1), (key: "signal", value: "SIGKILL")]
        for exit in exits {
            log.log(.warn, "restarted", fields: [(key: "service", value: "catalog"), exit, (key: "note", value: "a b")])
        }
        log.log(.debug, "dropped", fields: [])
        #expect(lines.value.count == 2)
        for (line, exit) in zip(lines.value, exits) {
            #expect(line.hasPrefix("ts=") && line.hasSuffix(" level=warn component=up msg=restarted service=catalog \(exit.key)=\(exit.value) note=\"a b\"\n"),
                    "\(line)")
        }
    }
}
