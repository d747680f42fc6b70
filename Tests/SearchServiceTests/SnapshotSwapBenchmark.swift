import Bus
import Foundation
@testable import SearchService
import ServiceKit
import Storage
import Testing
import TestSupport

/// How long a rebuild of the search index holds the database's write lock: staged and swapped
/// (as the subscriber does now) against one transaction around the whole rebuild (as before,
/// not counting the round trips to the catalog that transaction also waited for).
///
/// Off unless `TOURBUS_SWAP_BENCH` is set (to the number of places; 100000 if empty):
/// `TOURBUS_SWAP_BENCH=100000 swift test --skip-build --filter SnapshotSwapBenchmark`
@Suite(.enabled(if: ProcessInfo.processInfo.environment["TOURBUS_SWAP_BENCH"] != nil))
struct SnapshotSwapBenchmark {
    @Test func swapAgainstOneTransaction() throws {
        let count = Int(ProcessInfo.processInfo.environment["TOURBUS_SWAP_BENCH"] ?? "") ?? 100_000
        let pageSize = 1_000
        let path = NSTemporaryDirectory() + "tourbus-swap-\(UUID().uuidString).sqlite"
        defer { for suffix in ["", "-wal", "-shm"] { try? FileManager.default.removeItem(atPath: path + suffix) } }
        try Database(path: path).migrate(CursorSchema.migrations + SearchSchema.migrations)

        var rng = SplitMix64(seed: 7)
        let categories = ["cafe", "park", "museum", "bar", "restaurant"]
        let pages: [[Data]] = try stride(from: 0, to: count, by: pageSize).map { start in
            try (start..<min(count, start + pageSize)).map { i in
                let id = Int64(i + 1)
                let place = IndexedPlace(id: id, name: "Place \(id) on Street \(UInt64.random(in: 1...9_999, using: &rng))",
                                         category: categories[i % categories.count],
                                         lat: Double.random(in: -60...70, using: &rng), lon: Double.random(in: -180...180, using: &rng),
                                         address: "\(i % 300) Some Road", priceLevel: i % 5, popularity: Double(i % 100),
                                         openingHours: nil)
                let body = try JSONCoding.encoder.encode(place)
                return EnvelopeCoding.event(seq: 1, type: "catalog.place.upserted", ts: "t", epoch: "e", body: body)
            }
        }
        let options = SubscriptionOptions(source: "catalog", publishEndpoints: [], rpcEndpoints: [], databasePath: path)
        let store = try SQLiteCursorStore(options: options, applier: SearchIndex.catalogApplier, logger: Logger(component: "bench", level: .error))
        let db = store.db
        let applier = SearchIndex.catalogApplier
        func seconds(_ body: () throws -> Void) rethrows -> Double {
            let start = monotonicNanos()
            try body()
            return Double(monotonicNanos() - start) / 1e9
        }
        func ms(_ s: Double) -> String { String(format: "%.0f ms", s * 1_000) }

        // The old copy, as a rebuild finds it.
        _ = try store.apply(try pages.flatMap { try $0.map { data throws(ServiceError) in try ReceivedEvent(envelope: data) } },
                            advancingTo: EventCursor(epoch: "e", seq: 1))

        // Before: one transaction from the first page to the cursor (round trips not counted),
        // each item read from its page and applied inside it.
        let whole = try seconds {
            try db.transaction {
                try applier.startBulk?(db)
                try applier.reset(db)
                let scope = EventScope(db: db)
                for page in pages { for data in page { try applier.apply(try ReceivedEvent(envelope: data), scope) } }
                try CursorStore(database: db).set(source: "catalog", EventCursor(epoch: "e", seq: 1))
            }
        }
        let finishBefore = try seconds { try store.finishBulk() }

        // Now: each page read (no transaction open), staged in a transaction of its own, then one swap.
        var longestPage = 0.0, staging = 0.0
        try store.discardSnapshot()
        let reading = try seconds {
            for page in pages {
                let events = try page.map { data throws(ServiceError) in try ReceivedEvent(envelope: data) }
                let held = try seconds { try store.stageSnapshot(events) }
                staging += held
                longestPage = max(longestPage, held)
            }
        } - staging
        var applied = 0
        let swap = try seconds { applied = try store.swapSnapshot(cursor: EventCursor(epoch: "e", seq: 1)) }
        let finishAfter = try seconds { try store.finishBulk() }
        #expect(applied == count)
        #expect(try db.scalarInt("SELECT count(*) FROM places") == Int64(count))
        #expect(try db.scalarInt("SELECT count(*) FROM event_staging") == 0)

        print("""
            snapshot rebuild of \(count) places, pages of \(pageSize):
              before: one transaction (without round trips) \(ms(whole)); then finishBulk \(ms(finishBefore))
              now: pages read with no transaction open \(ms(reading)); staging \(pages.count) transactions, \(ms(staging)) in all, \
            the longest \(ms(longestPage)); \
            swap \(ms(swap)); then finishBulk \(ms(finishAfter))
            """)
    }
}
