import Bus
import ServiceCore
import Testing
import TestSupport

/// A fake piece of a service: it records its start and its stop in a shared log.
private final class RecordingPiece: Sendable {
    let name: String
    let log: Locked<[String]>

    init(_ name: String, log: Locked<[String]>, failing: Bool = false) throws {
        self.name = name
        self.log = log
        guard !failing else {
            log.withLock { $0.append("failed \(name)") }
            throw ConfigError("\(name) could not start")
        }
        log.withLock { $0.append("started \(name)") }
    }

    func stop() { log.withLock { $0.append("stopped \(name)") } }
}

@Suite struct LifecycleTests {
    @Test func piecesStopInTheReverseOfTheirStartOrder() throws {
        let log = Locked<[String]>([])
        let lifecycle = Lifecycle()
        for name in ["clients", "relay", "subscriber"] {
            _ = try lifecycle.start(name, stop: { $0.stop() }) { try RecordingPiece(name, log: log) }
        }
        lifecycle.onStop("connections") { log.withLock { $0.append("stopped connections") } }
        _ = try lifecycle.start("server", stop: { $0.stop() }) { try RecordingPiece("server", log: log) }
        #expect(lifecycle.started == ["clients", "relay", "subscriber", "connections", "server"])

        #expect(lifecycle.stop())
        #expect(log.value == ["started clients", "started relay", "started subscriber", "started server",
                              "stopped server", "stopped connections", "stopped subscriber", "stopped relay", "stopped clients"])
        // Once only.
        #expect(!lifecycle.stop())
        #expect(log.value.count == 9)
    }

    @Test func aPieceThatFailsToStartIsNotStoppedAndTheOthersStopInReverse() throws {
        let log = Locked<[String]>([])
        let lifecycle = Lifecycle()
        _ = try lifecycle.start("clients", stop: { $0.stop() }) { try RecordingPiece("clients", log: log) }
        _ = try lifecycle.start("relay", stop: { $0.stop() }) { try RecordingPiece("relay", log: log) }
        #expect(throws: ConfigError("server could not start")) {
            _ = try lifecycle.start("server", stop: { $0.stop() }) { try RecordingPiece("server", log: log, failing: true) }
        }
        #expect(lifecycle.started == ["clients", "relay"])
        lifecycle.stop()
        #expect(log.value == ["started clients", "started relay", "failed server", "stopped relay", "stopped clients"])
    }
}
