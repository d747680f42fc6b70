import Bus
import CatalogService
import Contracts
import Foundation
import ServiceCore
import ServiceKit
import Storage
import Testing

/// Events from the catalog reach a subscriber exactly once in effect, whatever happens between them.
@Suite(.serialized) struct ReliabilityTests {
    /// A mirror that followed the catalog through its first ten places, then stopped.
    func mirrorThatSawTenPlaces(of catalog: CatalogFixture) throws -> PlaceMirror {
        let mirror = try PlaceMirror()
        let subscriber = try mirror.subscribe(to: catalog)
        try catalog.createMany(10, prefix: "early")
        #expect(subscriber.waitFor(seq: 10, timeout: 10))
        subscriber.stop()
        #expect(try mirror.rows().count == 10)
        return mirror
    }

    @Test func subscriberStoppedWhileThousandPlacesAreWrittenCatchesUpExactly() throws {
        let catalog = try CatalogFixture(heartbeatMs: 100)
        let mirror = try mirrorThatSawTenPlaces(of: catalog)
        try catalog.createMany(1_000, prefix: "while stopped")
        let subscriber = try mirror.subscribe(to: catalog)
        #expect(subscriber.waitFor(seq: 1_010, timeout: 30))
        let places = try catalog.allPlaces()
        #expect(places.count == 1_010)
        #expect(try mirror.rows() == rows(of: places))
        #expect(subscriber.status.snapshots == 0 && subscriber.status.replays >= 1 && subscriber.status.applied == 1_000)
    }

    @Test func aLongBacklogIsAppliedAsABulkLoad() throws {
        let catalog = try CatalogFixture(heartbeatMs: 100)
        let mirror = try mirrorThatSawTenPlaces(of: catalog)
        #expect(try mirror.bulkLog() == ["finish"])  // each start finishes what a crash may have left
        try catalog.createMany(600, prefix: "while stopped")
        let subscriber = try mirror.subscribe(to: catalog, bulkThreshold: 500)
        #expect(subscriber.waitFor(seq: 610, timeout: 30))
        for _ in 0..<1_000 where subscriber.status.bulk { usleep(10_000) }  // the bulk load's last step follows the last event
        #expect(try mirror.rows() == rows(of: try catalog.allPlaces()))
        #expect(try mirror.bulkLog() == ["finish", "finish", "start", "finish"] && !subscriber.status.bulk)
        // A short backlog is applied event by event.
        subscriber.stop()
        try catalog.createMany(100, prefix: "short")
        let again = try mirror.subscribe(to: catalog, bulkThreshold: 500)
        #expect(again.waitFor(seq: 710, timeout: 30))
        again.stop()
        #expect(try mirror.bulkLog() == ["finish", "finish", "start", "finish", "finish"])
    }

    @Test func aBulkLoadOutlivesAFailedBatch() throws {
        let catalog = try CatalogFixture(heartbeatMs: 100)
        let mirror = try mirrorThatSawTenPlaces(of: catalog)
        try catalog.createMany(600, prefix: "while stopped")
        PlaceMirror.failOnce.withLock { $0 = 50 }  // in the first batch: the backlog stays over the threshold
        let subscriber = try mirror.subscribe(to: catalog, bulkThreshold: 500)
        #expect(subscriber.waitFor(seq: 610, timeout: 30))
        for _ in 0..<1_000 where subscriber.status.bulk { usleep(10_000) }
        #expect(try mirror.rows() == rows(of: try catalog.allPlaces()))
        // One bulk load from start to catching up, though a batch failed and was retried.
        #expect(try mirror.bulkLog() == ["finish", "finish", "start", "finish"])
        #expect(PlaceMirror.failOnce.withLock { $0 } == nil)
    }

    @Test func subscriberBehindATrimmedOutboxRebuildsFromSnapshot() throws {
        let catalog = try CatalogFixture(retention: 50, heartbeatMs: 20)
        let mirror = try mirrorThatSawTenPlaces(of: catalog)

        // While it is away: deletions of places it has, and a thousand new ones.
        for id in 1...5 { _ = try catalog.client.call("catalog.delete", PlaceID(id: Int64(id)), as: PlaceDeleted.self) }
        try catalog.createMany(995, prefix: "while stopped")
        // Wait until the relay has trimmed past the subscriber's cursor.
        var first = 0
        for _ in 0..<300 where first <= 11 {
            let stats = try catalog.raw("sys.stats", "{}")
            first = (stats["outbox"] as? [String: Any])?["first"] as? Int ?? 0
            usleep(20_000)
        }
        #expect(first > 11)

        let subscriber = try mirror.subscribe(to: catalog)
        #expect(subscriber.waitFor(seq: 1_010, timeout: 30))
        let places = try catalog.allPlaces()
        #expect(places.count == 1_000)
        #expect(try mirror.rows() == rows(of: places))
        #expect(subscriber.status.snapshots >= 1)
    }

    @Test func subscriberThatLosesEveryThirdLiveEventStillMatches() throws {
        let catalog = try CatalogFixture(heartbeatMs: 50)
        let mirror = try PlaceMirror()
        let subscriber = try mirror.subscribe(to: catalog) { seq in seq % 3 == 0 }
        // Let the subscription connect so events really flow live.
        usleep(200_000)
        try catalog.createMany(1_000, prefix: "lossy")
        #expect(subscriber.waitFor(seq: 1_000, timeout: 30))
        let places = try catalog.allPlaces()
        #expect(places.count == 1_000)
        #expect(try mirror.rows() == rows(of: places))
        #expect(subscriber.status.replays >= 2)  // the start-up catch-up, then the gaps
    }

    @Test func publisherWithANewHistoryIsRebuiltFromSnapshot() throws {
        let mirror = try PlaceMirror()
        do {
            let old = try CatalogFixture()
            try old.createMany(5, prefix: "old")
            let subscriber = try mirror.subscribe(to: old)
            #expect(subscriber.waitFor(seq: 5, timeout: 10))
            subscriber.stop()
        }
        // The catalog's database is replaced (a restore, a new deployment): sequence numbers
        // restart under a new epoch and the old cursor means nothing there.
        let fresh = try CatalogFixture()
        try fresh.createMany(3, prefix: "new")
        let subscriber = try mirror.subscribe(to: fresh)
        #expect(subscriber.waitFor(seq: 3, timeout: 10))
        var rebuilt = false
        for _ in 0..<200 where !rebuilt {
            rebuilt = try mirror.rows() == rows(of: try fresh.allPlaces())
            if !rebuilt { usleep(20_000) }
        }
        #expect(rebuilt)
        #expect(subscriber.status.snapshots == 1)
    }

    @Test func applyingTheSameEventsTwiceChangesNothing() throws {
        let catalog = try CatalogFixture()
        let mirror = try PlaceMirror()
        try catalog.createMany(20, prefix: "twice")
        let subscriber = try mirror.subscribe(to: catalog)
        #expect(subscriber.waitFor(seq: 20, timeout: 10))
        subscriber.stop()
        let before = try mirror.rows()
        // Replay everything from the start into the same database by hand: the cursor would
        // skip it, so apply the events directly, twice.
        let replay = try catalog.client.request(type: "sys.replay", body: Data(#"{"after":0,"limit":100}"#.utf8))
        let db = try Database(path: mirror.path)
        for _ in 0..<2 {
            for frame in replay.attachments { try PlaceMirror.applier.apply(try ReceivedEvent(envelope: frame), EventScope(db: db)) }
        }
        #expect(try mirror.rows() == before)
    }
}
