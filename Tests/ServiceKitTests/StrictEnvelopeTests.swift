import Bus
import Foundation
import ServiceKit
import Synchronization
import Testing

/// A DEALER socket that sends raw frames to a server and reads its raw replies.
private final class RawDealer {
    let socket: Socket

    init(_ context: ZMQContext, endpoint: String) throws {
        socket = try Socket(context, .dealer)
        try socket.setReceiveTimeout(milliseconds: 5_000)
        try socket.connect(endpoint)
    }

    /// Sends one envelope and returns the reply's head (nil on timeout).
    func ask(_ envelope: Data) throws -> ReplyHeader? {
        try socket.send([envelope])
        guard let reply = try socket.receive() else { return nil }
        return try JSONDecoder().decode(ReplyHeader.self, from: reply[0])
    }
}

private func repeated(_ text: String, _ count: Int) -> String { String(repeating: text, count: count) }

@Suite struct StrictEnvelopeTests {
    @Test func aRefusalOfAKnownTypeCountsUnderItsTypeAndAnUnknownOneUnderUnknown() throws {
        let context = try ZMQContext()
        let server = try makeServer(context)
        let raw = try RawDealer(context, endpoint: server.endpoints[0])
        let refused = try #require(try raw.ask(Data(#"{"v":1,"id":"z","type":"test.sum","deadline_ms":0,"body":{"a":1,"b":2}}"#.utf8)))
        #expect(refused.error?.code == .deadlineExceeded)
        _ = try raw.ask(Data(#"{"v":1,"id":"u","type":"test.nothing","body":{}}"#.utf8))
        let methods = server.stats.methodMetrics()
        #expect(methods["test.sum"]?.errors[.deadlineExceeded] == 1)
        #expect(methods[MethodMetrics.unknown]?.errors[.notFound] == 1)
    }

    @Test func hostileEnvelopesGetInvalidArgumentAndTheServerKeepsServing() throws {
        let context = try ZMQContext()
        let server = try makeServer(context)
        let raw = try RawDealer(context, endpoint: server.endpoints[0])

        // 100 000 levels: refused at the 64th bracket of the body (the envelope is level 1).
        let head = #"{"v":1,"id":"deep","type":"test.sum","body":"#
        let deep = try #require(try raw.ask(Data((head + repeated("[", 100_000) + repeated("]", 100_000) + "}").utf8)))
        #expect(deep.ok == false && deep.id == nil)
        #expect(deep.error == ServiceError(.invalidArgument, "malformed envelope: nesting deeper than 64 levels at byte \(head.utf8.count + 64)"))
        let unclosed = try #require(try raw.ask(Data((head + repeated("[", 100_000)).utf8)))
        #expect(unclosed.error?.code == .invalidArgument)

        // JSONDecoder alone takes a trailing comma (so this test fails without the check); the server does not.
        let trailing = Data(#"{"v":1,"id":"tc","type":"test.sum","body":{"a":1,"b":2,}}"#.utf8)
        #expect((try? JSONCoding.decoder.decode(RequestHeader.self, from: trailing)) != nil)
        let refused = try #require(try raw.ask(trailing))
        #expect(refused.error == ServiceError(.invalidArgument, "malformed envelope: trailing comma at byte 55"))

        // Malformed and past the size limit is too_large, as before the check.
        let huge = try #require(try raw.ask(Data(repeated("[", 2 << 20).utf8)))
        #expect(huge.error?.code == .tooLarge)
        // Past the size limit is refused before it is read (a bad version, a malformed body, a
        // key written with escapes: nothing is walked), its id echoed when its first bytes hold it.
        let big = try #require(try raw.ask(Data((#"{"v":2,"id":"big","\u0074ype":"test.sum","body":[1,,"# + repeated("7", 2 << 20)).utf8)))
        #expect(big.error?.code == .tooLarge && big.id == "big")

        // A header number no Swift type holds is named, as a body's decoder names it.
        let infinite = try #require(try raw.ask(Data(#"{"v":1e999,"id":"n","type":"test.sum","body":{}}"#.utf8)))
        #expect(infinite.error == ServiceError(.invalidArgument, "malformed envelope: invalid_argument: v: number 1e999 is out of range"))

        // Still serving.
        let sum = Data(#"{"v":1,"id":"ok","type":"test.sum","body":{"a":1,"b":2}}"#.utf8)
        let answered = try #require(try raw.ask(sum))
        #expect(answered.ok && answered.id == "ok")
        let stats = server.stats.snapshot()
        #expect(stats.errorsByCode["invalid_argument"] == 4 && stats.errorsByCode["too_large"] == 2)
    }

    @Test func theDepthLimitIsAnOption() throws {
        let context = try ZMQContext()
        var options = RPCServerOptions()
        options.maxJSONDepth = 3
        let server = try makeServer(context, options: options)
        let raw = try RawDealer(context, endpoint: server.endpoints[0])
        // Envelope, body, one array: three levels.
        let fits = try #require(try raw.ask(Data(#"{"v":1,"id":"a","type":"test.echo","body":{"text":"x","extra":[1]}}"#.utf8)))
        #expect(fits.ok)
        let over = try #require(try raw.ask(Data(#"{"v":1,"id":"b","type":"test.echo","body":{"text":"x","extra":[[1]]}}"#.utf8)))
        #expect(over.error?.code == .invalidArgument && over.error?.message.hasPrefix("malformed envelope: nesting deeper than 3 levels") == true)
    }

    @Test func oversizedRepliesBecomeTooLargeForThatRequestOnly() throws {
        let context = try ZMQContext()
        var options = RPCServerOptions()
        options.maxReplyBytes = 1_000
        let server = try makeServer(context, options: options)
        let client = try RPCClient(context: context, endpoints: server.endpoints, logger: logger)
        do {
            _ = try client.call("test.echo", Echo(text: repeated("x", 2_000)), as: Echo.self)
            Issue.record("a 2 kB reply passed a 1 000-byte limit")
        } catch {
            #expect(error.code == .tooLarge)
            let size = try #require(error.message.firstMatch(of: /^reply of (\d+) bytes exceeds the limit of 1000; ask for a smaller page$/))
            #expect((Int(size.1) ?? 0) > 2_000)
        }
        #expect(try client.call("test.echo", Echo(text: "small"), as: Echo.self) == Echo(text: "small"))
        #expect(server.stats.snapshot().errorsByCode["too_large"] == 1)
        #expect(RPCServerOptions().maxReplyBytes == 4 << 20 && RPCServerOptions().maxJSONDepth == 64)
    }

    /// A peer that answers each request with the next of `replies` (`ID` replaced by the request's id).
    /// It keeps its socket open until `finished` is signalled, so the last reply is not lost with it.
    private func fakeServer(_ context: ZMQContext, finished: DispatchSemaphore, replies: [String]) throws -> (endpoint: String, thread: WorkerThread) {
        let startup = StartupReport()
        let thread = WorkerThread(name: "fake-peer") {
            do {
                let router = try Socket(context, .router)
                try router.setReceiveTimeout(milliseconds: 10_000)
                startup.succeeded([try router.bind("tcp://127.0.0.1:0")])
                for reply in replies {
                    guard let frames = try router.receive(), frames.count == 2,
                          let id = JSONSpan.plainString("id", in: frames[1]) else { return }
                    try router.send([frames[0], Data(reply.replacingOccurrences(of: "ID", with: id).utf8)])
                }
                finished.wait()
            } catch {
                startup.failed(error)
            }
        }
        let endpoint = try #require(try startup.wait().get().first)
        return (endpoint, thread)
    }

    @Test func malformedRepliesFailTheirRequestWithInternal() throws {
        let context = try ZMQContext()
        let deepBody = repeated("[", 100_000) + repeated("]", 100_000)
        let finished = DispatchSemaphore(value: 0)
        let (endpoint, thread) = try fakeServer(context, finished: finished, replies: [
            #"{"v":1,"id":"ID","ok":true,"body":{"a":1,}}"#,
            #"{"v":1,"id":"ID","ok":true,"body":"# + deepBody + "}",
            #"{"v":1,"id":"ID","ok":false,"error":{"code":"conflict","message":"no",}}"#,
            #"{"v":1,"id":"ID","ok":true,"body":3}"#,
        ])
        defer {
            finished.signal()
            thread.join()
        }
        let client = try RPCClient(context: context, endpoints: [endpoint], logger: logger)
        for expected in ["malformed reply: trailing comma at byte ", "malformed reply: nesting deeper than 64 levels at byte ",
                         "malformed reply: trailing comma at byte "] {
            do {
                _ = try client.call("test.sum", Sum(a: 1, b: 2), as: Int.self, timeoutMilliseconds: 5_000)
                Issue.record("a malformed reply was taken")
            } catch {
                #expect(error.code == .internal && error.message.hasPrefix(expected), "\(error)")
            }
        }
        #expect(try client.call("test.sum", Sum(a: 1, b: 2), as: Int.self, timeoutMilliseconds: 5_000) == 3)
    }
}
