import Bus
import Contracts
import Foundation
import ServiceKit
import Storage

/// Each place's counts for search's popularity: `saves`, the users with it in their
/// `favorites` list, and `visits_30d`, the users who marked it visited in the last 30 days,
/// published as `favorites.place.counted` through the outbox.
///
/// Bursts are coalesced: a change of an item only marks its place due (`counts_due`, by a
/// trigger, so every way an item changes is caught), and the periodic `favorites.counts.flush`
/// (every `countsFlushIntervalMs`, one second by default) recounts what is due and publishes
/// the counts that differ from those last published (`place_counts`). So 1,000 toggles of
/// one place within a second are at most a few events. A visit leaves the 30-day window
/// without any write: `place_counts.recount_at` says when the oldest counted visit leaves it,
/// and the flush recounts those places too.
enum Counts {
    /// How long a visit counts.
    static let visitWindowMs: Int64 = 30 * 86_400_000
    /// The most places one flush recounts; the rest wait for the next.
    static let flushBatch = 2_000

    static func register(_ table: inout HandlerTable<FavoritesStore>) {
        table.on(Methods.Favorites.countsFlush) {
            (_: Empty, _, store) -> Flushed in
            try store.flushCounts()
        }
    }
}

extension FavoritesStore {
    /// Recounts the places due (and those whose visits left the window), publishes the counts
    /// that changed, and drops idempotency records past their window.
    func flushCounts() throws -> Flushed {
        let now = self.now
        try db.run("DELETE FROM toggle_requests WHERE at <= ?", now - options.toggleRecordMs)
        try db.run("INSERT OR IGNORE INTO counts_due (place_id) SELECT place_id FROM place_counts WHERE recount_at <= ?", now)
        let due = try db.query("SELECT place_id FROM counts_due ORDER BY place_id LIMIT ?", Counts.flushBatch).decode("place_id", as: Int64.self)
        var published = 0
        let since = now - Counts.visitWindowMs
        for id in due {
            let saves = Int(
                try db.scalarInt(
                    """
                    SELECT count(*) FROM items i JOIN lists l ON l.id = i.list_id WHERE i.place_id = ? AND l.builtin = 1 AND l.name = ?
                    """, id, Lists.defaultList) ?? 0)
            let visits = try db.queryOne(
                """
                SELECT count(*) AS visits, min(i.visited_at) AS oldest FROM items i JOIN lists l ON l.id = i.list_id
                WHERE i.place_id = ? AND l.builtin = 1 AND l.name = ? AND i.visited_at > ?
                """, id, Lists.visited, since)
            let visitCount = Int(try visits?.decode("visits", as: Int64.self) ?? 0)
            let recountAt = try visits?.decode("oldest", as: Int64?.self).map { $0 + Counts.visitWindowMs }
            let last = try db.queryOne("SELECT saves, visits_30d FROM place_counts WHERE place_id = ?", id)
            let lastSaves = Int(try last?.decode("saves", as: Int64.self) ?? 0)
            let lastVisits = Int(try last?.decode("visits_30d", as: Int64.self) ?? 0)
            if saves != lastSaves || visitCount != lastVisits {
                try worker.emit(FavoritesEvents.counted, PlaceCounted(placeId: id, saves: saves, visits30d: visitCount))
                published += 1
            }
            if saves == 0 && visitCount == 0 {
                try db.run("DELETE FROM place_counts WHERE place_id = ?", id)
            } else {
                try db.run(
                    "INSERT OR REPLACE INTO place_counts (place_id, saves, visits_30d, recount_at) VALUES (?, ?, ?, ?)",
                    id, saves, visitCount, recountAt)
            }
            try db.run("DELETE FROM counts_due WHERE place_id = ?", id)
        }
        return Flushed(recounted: due.count, published: published)
    }

    /// `sys.snapshot`: the counted event of every place with saves or recent visits, as last
    /// published, by place id; then (keys from `v`) the visits of discoverable users (`visitsSnapshot`).
    func countsSnapshot(after: String?, limit: Int) throws -> SnapshotPage {
        if let after, after.hasPrefix("v") { return try visitsSnapshot(after: String(after.dropFirst()), limit: limit) }
        let rows = try db.query(
            "SELECT place_id, saves, visits_30d FROM place_counts WHERE place_id > ? ORDER BY place_id LIMIT ?",
            try SnapshotKey.id(after: after), limit)
        var ids: [Int64] = []
        var events: [(type: String, body: Data)] = []
        for row in rows {
            let counted = PlaceCounted(
                placeId: try row.decode("place_id"), saves: Int(try row.decode("saves", as: Int64.self)),
                visits30d: Int(try row.decode("visits_30d", as: Int64.self)))
            ids.append(counted.placeId)
            events.append((FavoritesEvents.counted, try JSONCoding.encoder.encode(counted)))
        }
        return SnapshotPage(events: events, next: SnapshotKey.next(after: ids, limit: limit) ?? "v0:0")
    }
}
