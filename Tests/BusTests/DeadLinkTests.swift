import Bus
import Foundation
import Testing

/// How the bus's clients notice a link that died (`Socket.watchForDeadLinks`), and that nothing
/// ends a live link only because libzmq stopped reading it.
@Suite struct DeadLinkTests {
    /// A subscriber that stops reading while its publisher floods it keeps its link. With ZMTP
    /// heartbeats (1 s, timeout 3 s) the engine, which cannot read the PONGs while its input is
    /// stopped, ended the link after about 3 s, and the reconnect tripped libzmq's
    /// `_input_stopped` assertion (zeromq/libzmq#3937), which aborted the process: with them,
    /// this test records the disconnect and then libzmq aborts the test run.
    @Test func aBackedUpSubscriberKeepsItsLink() throws {
        let context = try ZMQContext()
        let publisher = try Socket(context, .pub)
        try publisher.setSendHighWaterMark(10)
        let endpoint = try publisher.bind("tcp://127.0.0.1:*")
        let subscriber = try Socket(context, .sub)
        try subscriber.setReceiveHighWaterMark(1)
        try subscriber.watchForDeadLinks()
        try subscriber.subscribe("")
        let monitorEndpoint = "inproc://dead-link-test-\(UUID().uuidString)"
        try subscriber.startMonitor(monitorEndpoint, events: MonitorEvent.connectionEvents)
        let monitor = try Socket(context, .pair)
        try monitor.setReceiveTimeout(milliseconds: 100)
        try monitor.connect(monitorEndpoint)
        defer {
            subscriber.stopMonitor()
            while (try? monitor.receive(dontWait: true)) != nil {}
        }
        try subscriber.connect(endpoint)
        var events: [MonitorEvent] = []
        for _ in 0..<50 where !events.contains(where: { if case .handshakeSucceeded = $0 { true } else { false } }) {
            if let frames = try monitor.receive(), let event = MonitorEvent(frames: frames) { events.append(event) }
        }
        try #require(events.contains { if case .handshakeSucceeded = $0 { true } else { false } }, "connected: \(events)")

        // 4.5 s of 1 KiB messages, unread: the subscriber's queue fills and libzmq stops reading
        // the connection (a PUB drops what does not fit, so the sender never blocks).
        let payload = Data(count: 1_024)
        let started = Date()
        for _ in 0..<100_000 where Date().timeIntervalSince(started) < 4.5 {
            _ = try publisher.send(payload, dontWait: true)
            usleep(1_000)
        }
        events = []
        while let frames = try monitor.receive(dontWait: true), let event = MonitorEvent(frames: frames) { events.append(event) }
        #expect(!events.contains { if case .disconnected = $0 { true } else { false } }, "the link was ended: \(events)")
        // And it still delivers.
        var received = 0
        for _ in 0..<1_000 where received < 5 {
            if try subscriber.receive(dontWait: true) != nil { received += 1 } else { _ = try publisher.send(payload, dontWait: true); usleep(1_000) }
        }
        #expect(received == 5)
    }
}
