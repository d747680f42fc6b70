import Bus
import Foundation
import ServiceCore
import ServiceKit
import Storage
import Testing
import TestSupport

/// A service with one handler that answers any body with `{}`.
private final class EchoState: ServiceState {
    let worker: ServiceWorker
    init(worker: ServiceWorker) { self.worker = worker }
}

@Suite struct StrictInputTests {
    @Test func eventsMustBeStrictAndShallow() throws {
        let good = EnvelopeCoding.event(seq: 1, type: "t.x", ts: "2026-01-01T00:00:00.000Z", epoch: "e", body: Data(#"{"a":[1]}"#.utf8))
        #expect(try ReceivedEvent(envelope: good).header.seq == 1)

        let trailing = EnvelopeCoding.event(seq: 2, type: "t.x", ts: "2026-01-01T00:00:00.000Z", epoch: "e", body: Data(#"{"a":1,}"#.utf8))
        #expect(EventHeader.scan(trailing) != nil)  // the span reader alone would have taken it
        #expect(throws: ServiceError(.invalidArgument, "malformed event envelope: trailing comma at byte \(trailing.count - 2)")) {
            try ReceivedEvent(envelope: trailing)
        }
        let deep = EnvelopeCoding.event(seq: 3, type: "t.x", ts: "2026-01-01T00:00:00.000Z", epoch: "e",
                                        body: Data((String(repeating: "[", count: 100_000) + String(repeating: "]", count: 100_000)).utf8))
        #expect(throws: ServiceError.self) { try ReceivedEvent(envelope: deep) }
        #expect(throws: ServiceError.self) { try ReceivedEvent(envelope: good, maxJSONDepth: 2) }
        #expect(try ReceivedEvent(envelope: good, maxJSONDepth: 3).header.seq == 1)
    }

    @Test func theRuntimeTakesTheDepthLimitFromTheConfig() throws {
        let scratch = TemporaryFolder("strict")
        defer { withExtendedLifetime(scratch) {} }
        var handlers = HandlerTable<EchoState>()
        handlers.onRaw("echo.any") { _, _ in Response(body: Data("{}".utf8)) }
        let definition = ServiceDefinition(name: "echo", migrations: [], handlers: handlers) { EchoState(worker: $0) }
        var config = ServiceConfig(service: "echo")
        config.dataDirectory = scratch.path
        config.maxJSONDepth = 3
        let context = try ZMQContext()
        let runtime = try ServiceRuntime(definition: definition, config: config, context: context,
                                         logger: Logger(component: "strict-test", level: .error))
        defer { runtime.stop() }

        let raw = try Socket(context, .dealer)
        try raw.setReceiveTimeout(milliseconds: 5_000)
        try raw.connect(runtime.endpoints.rpc[0])
        func ask(_ body: String) throws -> ReplyHeader? {
            try raw.send([Data(#"{"v":1,"id":"r","type":"echo.any","body":\#(body)}"#.utf8)])
            return try raw.receive().flatMap { try JSONDecoder().decode(ReplyHeader.self, from: $0[0]) }
        }
        #expect(try ask(#"{"a":[1]}"#)?.ok == true)
        let refused = try ask(#"{"a":[[1]]}"#)
        #expect(refused?.error?.code == .invalidArgument)
        #expect(refused?.error?.message.hasPrefix("malformed envelope: nesting deeper than 3 levels") == true)
    }
}
