import Bus
import Foundation
import ServiceCore
import ServiceKit
import Storage
import Synchronization
import Testing
import TestSupport

private let quiet = Logger(component: "cache-test", level: .error) { _ in }


/// A real publisher whose outbox the test writes by hand: a `ServiceRuntime` with no handlers
/// (its relay, `sys.replay` and heartbeats every 20 ms, which also publish what was appended).
private final class OutboxPublisher {

    let folder = TemporaryFolder("cache")
    let runtime: ServiceRuntime<WorkerState>
    private let db: Database

    /// Starts on a fresh database (so a new epoch) holding `history` (event types) already,
    /// bound to `endpoints` when given (a publisher replaced on the same endpoints).
    init(_ context: ZMQContext, history: [String] = [], endpoints: BoundEndpoints? = nil, database: String? = nil) throws {
        var config = ServiceConfig(service: "items")
        config.dataDirectory = folder.path
        config.databasePath = database
        config.heartbeatMilliseconds = 20
        if let endpoints {
            config.bind = endpoints.rpc
            config.publish = endpoints.publish
        }
        db = try Database(path: config.resolvedDatabasePath)
        _ = try db.migrate(OutboxSchema.migrations)
        for type in history { try Self.append(type, to: db) }
        let definition = ServiceDefinition<WorkerState>(name: "items", migrations: [], handlers: HandlerTable(), publishes: true,
                                                  makeState: { WorkerState(worker: $0) })
        runtime = try ServiceRuntime(definition: definition, config: config, context: context, logger: quiet)
    }

    deinit { runtime.stop() }

    var epoch: String { get throws { try Outbox(database: db).epoch() } }

    /// A consistent copy of its database as it is now (its epoch and head included), in `folder`.
    func copy(into folder: TemporaryFolder) throws -> String {
        let path = folder.path + "/copy.sqlite"
        try db.execute("VACUUM INTO '\(path)'")
        return path
    }

    /// Appends an event of `type` (body `{}`), which the relay publishes at its next heartbeat; returns its seq.
    @discardableResult
    func append(_ type: String) throws -> Int64 { try Self.append(type, to: db) }

    @discardableResult
    private static func append(_ type: String, to db: Database) throws -> Int64 {
        try db.transaction { try Outbox(database: db).append(type: type, body: Data("{}".utf8)) }
    }
}

/// What a cache subscriber's store did, in order, and the live events it saw.
private final class CacheRecord: Sendable {
    enum Entry: Equatable {
        case applied(Int64)
        case forgotAll
    }

    let entries = Locked<[Entry]>([])
    /// The seqs of the live events the subscriber looked at (`EventStreamOptions.dropLiveEvent`).
    let live = Locked<[Int64]>([])
    /// A live event to discard, as a lossy network would.
    let drop = Locked<Int64?>(nil)

    /// Follows the publisher at `endpoints` into a `MemoryCursorStore` that applies
    /// `item.upserted` only.
    func subscribe(_ context: ZMQContext, to endpoints: BoundEndpoints) throws -> EventSubscriber {
        var options = EventStreamOptions(source: "item", publishEndpoints: endpoints.publish, rpcEndpoints: endpoints.rpc)
        options.retryMilliseconds = 50
        options.dropLiveEvent = { seq in
            self.live.withLock { $0.append(seq) }
            return seq == self.drop.value
        }
        return try EventSubscriber(context: context, options: options, logger: quiet) {
            MemoryCursorStore(source: "item", logger: quiet, types: ["item.upserted"],
                              apply: { event in self.entries.withLock { $0.append(.applied(event.header.seq)) } },
                              forgetAll: { self.entries.withLock { $0.append(.forgotAll) } })
        }
    }

    /// Appends noise until the subscriber sees one live (its SUB socket joined), for at most
    /// 10 s; returns the last seq appended, or nil if none was seen live.
    func joinLive(_ publisher: OutboxPublisher) throws -> Int64? {
        for _ in 0..<20 {
            let seq = try publisher.append("item.noise")
            if eventually(seconds: 0.5, every: 0.01, { !live.value.isEmpty }) { return seq }
        }
        return nil
    }
}

@Suite(.serialized) struct CacheSubscriberTests {
    @Test func startsAtTheHeadAndAppliesOnlyLiveEventsOfItsTypes() throws {
        let context = try ZMQContext()
        let publisher = try OutboxPublisher(context, history: ["item.upserted", "item.upserted", "item.noise"])
        let record = CacheRecord()
        let subscriber = try record.subscribe(context, to: publisher.runtime.endpoints)
        defer { subscriber.stop() }
        #expect(eventually { subscriber.status.epoch != nil })
        // The history before the head is not applied: the cache forgets all and starts there.
        #expect(record.entries.value == [.forgotAll])
        #expect(subscriber.status.epoch == (try publisher.epoch) && subscriber.status.seq == 3 && subscriber.status.snapshots == 0)

        try publisher.append("item.upserted")
        try publisher.append("item.noise")
        try publisher.append("item.upserted")
        #expect(subscriber.waitFor(seq: 6, timeout: 10))
        #expect(record.entries.value == [.forgotAll, .applied(4), .applied(6)])
    }

    @Test func aDroppedLiveEventIsReplayedNotForgotten() throws {
        let context = try ZMQContext()
        let publisher = try OutboxPublisher(context, history: ["item.upserted"])
        let record = CacheRecord()
        let subscriber = try record.subscribe(context, to: publisher.runtime.endpoints)
        defer { subscriber.stop() }
        #expect(eventually { subscriber.status.seq == 1 })
        let joined = try #require(try record.joinLive(publisher))
        #expect(subscriber.waitFor(seq: joined, timeout: 10))
        // The first of these is dropped on the way; the second shows the gap.
        record.drop.withLock { $0 = joined + 1 }
        for _ in 0..<3 { try publisher.append("item.upserted") }
        #expect(subscriber.waitFor(seq: joined + 3, timeout: 10))
        #expect(record.live.value.contains(joined + 1))  // it came live, and was dropped
        #expect(record.entries.value == [.forgotAll, .applied(joined + 1), .applied(joined + 2), .applied(joined + 3)])
        #expect(subscriber.status.replays >= 2)  // the start, then the gap
    }

    @Test func aPublisherWhoseHistoryWentBackInTheSameEpochIsForgottenNotSkipped() throws {
        // A power loss (synchronous=NORMAL) or a restored copy that kept its epoch: the head
        // goes back, and the next seqs are new events the subscriber must not take as applied.
        let context = try ZMQContext()
        let record = CacheRecord()
        let aside = TemporaryFolder("items-copy")
        let subscriber: EventSubscriber
        let endpoints: BoundEndpoints
        let copy: String
        do {
            let old = try OutboxPublisher(context, history: ["item.upserted"])
            endpoints = old.runtime.endpoints
            subscriber = try record.subscribe(context, to: endpoints)
            #expect(eventually { subscriber.status.seq == 1 })
            copy = try old.copy(into: aside)
            try old.append("item.upserted")
            try old.append("item.upserted")
            #expect(subscriber.waitFor(seq: 3, timeout: 10))
        }
        defer { subscriber.stop() }
        let back = try OutboxPublisher(context, endpoints: endpoints, database: copy)
        #expect(eventually { record.entries.value.last == .forgotAll })
        #expect(eventually { subscriber.status.seq == 1 })
        try back.append("item.upserted")
        #expect(eventually { record.entries.value.last == .applied(2) }, "\(record.entries.value)")
    }

    @Test func aPublisherWithANewEpochIsForgottenAndFollowedFromItsHead() throws {
        let context = try ZMQContext()
        let record = CacheRecord()
        let subscriber: EventSubscriber
        let endpoints: BoundEndpoints
        do {
            let old = try OutboxPublisher(context, history: ["item.upserted"])
            endpoints = old.runtime.endpoints
            subscriber = try record.subscribe(context, to: endpoints)
            #expect(eventually { subscriber.status.seq == 1 })
            try old.append("item.upserted")
            #expect(subscriber.waitFor(seq: 2, timeout: 10))
            #expect(record.entries.value == [.forgotAll, .applied(2)])
        }
        defer { subscriber.stop() }
        // A fresh database on the same endpoints: its history is another, and not applied.
        let fresh = try OutboxPublisher(context, history: ["item.upserted", "item.upserted", "item.upserted"], endpoints: endpoints)
        let epoch = try fresh.epoch
        #expect(eventually { subscriber.status.epoch == epoch })
        #expect(subscriber.status.seq == 3)
        #expect(record.entries.value == [.forgotAll, .applied(2), .forgotAll])
        try fresh.append("item.upserted")
        #expect(subscriber.waitFor(seq: 4, timeout: 10))
        #expect(record.entries.value == [.forgotAll, .applied(2), .forgotAll, .applied(4)])
    }
}
