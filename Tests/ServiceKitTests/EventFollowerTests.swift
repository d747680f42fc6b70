import Bus
import Foundation
@testable import ServiceCore
@testable import ServiceKit
import Storage
import Synchronization
import Testing
import TestSupport

private let quiet = Logger(component: "follower-test", level: .error)

/// What a follower's callbacks saw, in order.
final class FollowerRecord: Sendable {
    enum Entry: Equatable {
        case event(String, Int64)
        case gap(EventGap)
    }

    private let entries = Mutex<[Entry]>([])

    var all: [Entry] { entries.withLock { $0 } }
    var gaps: [EventGap] { all.compactMap { if case .gap(let gap) = $0 { gap } else { nil } } }
    var events: [String] { all.compactMap { if case .event(let type, let seq) = $0 { "\(type) \(seq)" } else { nil } } }

    func add(_ entry: Entry) { entries.withLock { $0.append(entry) } }

    /// Waits (at most 5 s) until `condition` holds of what was seen.
    func wait(_ condition: ([Entry]) -> Bool) -> Bool {
        for _ in 0..<500 {
            if condition(all) { return true }
            usleep(10_000)
        }
        return condition(all)
    }

    func follower(_ context: ZMQContext, endpoints: [String], topics: [String] = [], silenceMilliseconds: Int = 3_000) throws -> EventFollower {
        var options = EventFollowerOptions(source: "social", publishEndpoints: endpoints, topics: topics)
        options.silenceMilliseconds = silenceMilliseconds
        return try EventFollower(context: context, options: options, logger: quiet,
                                 onEvent: { self.add(.event($0.header.type, $0.header.seq)) }, onGap: { self.add(.gap($0)) })
    }
}

/// A stand-in publisher: a PUB socket on loopback that the test drives by hand.
final class FakePublisher {
    let socket: Socket
    let endpoint: String
    var epoch = "epoch-1"

    init(_ context: ZMQContext) throws {
        socket = try Socket(context, .pub)
        endpoint = try socket.bind("tcp://127.0.0.1:0")
    }

    func send(_ type: String, seq: Int64, body: String = "{}") throws {
        let envelope = EnvelopeCoding.event(seq: seq, type: type, ts: Logger.timestamp(), epoch: epoch, body: Data(body.utf8))
        _ = try socket.send([Data(type.utf8), envelope])
    }

    func heartbeat(_ head: Int64) throws { try send("sys.heartbeat", seq: head, body: #"{"head":\#(head)}"#) }

    /// Sends heartbeats at `head` until the follower has seen one (a SUB joins late).
    func join(_ record: FollowerRecord, head: Int64) throws -> Bool {
        for _ in 0..<200 {
            try heartbeat(head)
            if record.gaps.contains(where: { if case .started = $0 { true } else { false } }) { return true }
            usleep(10_000)
        }
        return false
    }
}

@Suite struct EventStreamTrackerTests {
    func event(_ type: String, _ seq: Int64, epoch: String = "e1") throws -> ReceivedEvent {
        try ReceivedEvent(envelope: EnvelopeCoding.event(seq: seq, type: type, ts: "t", epoch: epoch, body: Data("{}".utf8)))
    }

    @Test func eachMessageIsCheckedAgainstTheLastSeq() throws {
        var tracker = EventStreamTracker(topics: ["social.session.", "social.role."])
        #expect(tracker.receive(try event("sys.heartbeat", 4)) == .init(gap: .started(epoch: "e1", seq: 4), deliver: false))
        #expect(tracker.receive(try event("social.session.ended", 5)) == .init(gap: nil, deliver: true))
        #expect(tracker.receive(try event("social.rating.updated", 6)) == .init(gap: nil, deliver: false))
        #expect(tracker.receive(try event("sys.heartbeat", 6)) == .init(gap: nil, deliver: false))
        #expect(tracker.receive(try event("social.role.changed", 9)) == .init(gap: .skipped(expected: 7, received: 9), deliver: true))
        #expect(tracker.receive(try event("sys.heartbeat", 11)) == .init(gap: .behind(seq: 9, head: 11), deliver: false))
        #expect(tracker.receive(try event("social.role.changed", 12)) == .init(gap: nil, deliver: true))
        #expect(tracker.receive(try event("sys.heartbeat", 3)) == .init(gap: .rewound(seq: 12, received: 3), deliver: false))
        #expect(tracker.receive(try event("social.session.ended", 2)) == .init(gap: .rewound(seq: 3, received: 2), deliver: true))
        #expect(tracker.receive(try event("social.session.ended", 1, epoch: "e2")) == .init(gap: .newEpoch("e2"), deliver: true))
        #expect(tracker.receive(try event("social.session.ended", 2, epoch: "e2")) == .init(gap: nil, deliver: true))
        #expect(tracker.epoch == "e2" && tracker.seq == 2)
        // The first message may be an event; no topics means every type.
        var all = EventStreamTracker(topics: [])
        #expect(all.receive(try event("social.rating.updated", 8)) == .init(gap: .started(epoch: "e1", seq: 8), deliver: true))
    }
}

@Suite struct EventFollowerTests {
    @Test func followsARealRelayAndDeliversOnlyItsTopics() throws {
        let scratch = TemporaryFolder("follower")
        let folder = scratch.path
        let path = folder + "/social.sqlite"
        let db = try Database(path: path)
        _ = try db.migrate(OutboxSchema.migrations)
        let outbox = Outbox(database: db)
        func append(_ type: String, _ body: String) throws { _ = try db.transaction { try outbox.append(type: type, body: Data(body.utf8)) } }
        try append("social.rating.updated", "{}")  // before the relay: head 1
        let context = try ZMQContext()
        let relay = try OutboxRelay(context: context, bind: ["tcp://127.0.0.1:0"], databasePath: path, heartbeatMilliseconds: 20,
                                    retention: 1_000, logger: quiet)
        defer { relay.stop() }
        let record = FollowerRecord()
        let follower = try record.follower(context, endpoints: relay.endpoints, topics: ["social.session.", "social.role."])
        #expect(record.wait { !$0.isEmpty })
        #expect(record.gaps == [.started(epoch: try outbox.epoch(), seq: 1)])

        for (type, body) in [("social.session.ended", #"{"user_id":1}"#), ("social.rating.updated", "{}"), ("social.role.changed", #"{"role":"admin","user_id":2}"#)] {
            try append(type, body)
        }
        relay.wakeup.signal()
        #expect(record.wait { $0.count == 3 })
        #expect(record.events == ["social.session.ended 2", "social.role.changed 4"])
        #expect(record.gaps.count == 1)
        let status = follower.status, epoch = try outbox.epoch()
        #expect(status.seq == 4 && status.delivered == 2 && status.gaps == 1 && status.following && status.epoch == epoch)

        // stop() joins: it returns (woken, not waiting out a poll), and no callback runs after it.
        follower.stop()
        let seen = record.all.count
        try append("social.session.ended", #"{"user_id":3}"#)
        relay.wakeup.signal()
        usleep(200_000)
        #expect(record.all.count == seen)
        follower.stop()  // twice is fine
    }

    @Test func aDroppedEventIsAGapAndTheNextIsStillDelivered() throws {
        let context = try ZMQContext()
        let publisher = try FakePublisher(context)
        let record = FollowerRecord()
        let follower = try record.follower(context, endpoints: [publisher.endpoint])
        defer { follower.stop() }
        #expect(try publisher.join(record, head: 10))
        try publisher.send("social.session.ended", seq: 11)
        try publisher.send("social.session.ended", seq: 13)  // 12 was lost
        #expect(record.wait { $0.count >= 4 })
        #expect(record.all.count == 4)
        #expect(Array(record.all.suffix(3)) == [.event("social.session.ended", 11), .gap(.skipped(expected: 12, received: 13)),
                                                .event("social.session.ended", 13)])
    }

    @Test func aHeartbeatAheadOrANewEpochIsAGap() throws {
        let context = try ZMQContext()
        let publisher = try FakePublisher(context)
        let record = FollowerRecord()
        let follower = try record.follower(context, endpoints: [publisher.endpoint])
        defer { follower.stop() }
        #expect(try publisher.join(record, head: 0))
        try publisher.send("social.role.changed", seq: 1)
        try publisher.heartbeat(1)
        try publisher.heartbeat(3)  // events 2 and 3 never came
        #expect(record.wait { $0.last == .gap(.behind(seq: 1, head: 3)) })
        #expect(record.all == [.gap(.started(epoch: "epoch-1", seq: 0)), .event("social.role.changed", 1), .gap(.behind(seq: 1, head: 3))])
        publisher.epoch = "epoch-2"
        try publisher.heartbeat(0)
        #expect(record.wait { $0.last == .gap(.newEpoch("epoch-2")) })
        #expect(follower.status.epoch == "epoch-2" && follower.status.seq == 0)
        #expect(record.gaps.count == 3)
    }

    @Test func silenceIsAGapOnceAndHearingAgainResumes() throws {
        let context = try ZMQContext()
        let publisher = try FakePublisher(context)
        let record = FollowerRecord()
        let follower = try record.follower(context, endpoints: [publisher.endpoint], silenceMilliseconds: 150)
        defer { follower.stop() }
        #expect(try publisher.join(record, head: 5))
        #expect(record.wait { $0.last == .gap(.silence(milliseconds: 150)) })
        #expect(!follower.status.following)
        usleep(400_000)
        // After the start, one silence however long it lasts.
        let sinceStart = record.gaps.drop { if case .started = $0 { false } else { true } }
        #expect(Array(sinceStart.dropFirst()) == [.silence(milliseconds: 150)])
        // The publisher is back at the same head: nothing was missed since the silence was reported.
        try publisher.heartbeat(5)
        #expect(record.wait { _ in follower.status.following })
        try publisher.heartbeat(6)
        #expect(record.wait { $0.last == .gap(.behind(seq: 5, head: 6)) })
    }

    @Test func aPublisherThatNeverAnswersIsASilence() throws {
        let context = try ZMQContext()
        let record = FollowerRecord()
        let follower = try record.follower(context, endpoints: ["tcp://127.0.0.1:1"], silenceMilliseconds: 100)
        #expect(record.wait { $0 == [.gap(.silence(milliseconds: 100))] })
        #expect(!follower.status.following && follower.status.epoch == nil)
        // Stopping does not hang (a bound for a hang, not a timing).
        let stopped = DispatchSemaphore(value: 0)
        Thread { follower.stop(); stopped.signal() }.start()
        #expect(stopped.wait(timeout: .now() + 10) == .success)
        #expect(throws: ZMQError.self) { try record.follower(context, endpoints: ["not an endpoint"]) }
    }
}
