import Bus
import Contracts
import Foundation
import ServiceKit
import Storage

/// A place's popularity as search ranks it: the catalog's `popularity` blended with how many
/// travellers save the place and visited it lately (the favorites service's counts) and how
/// many reviewed it lately (social's `reviews_30d`).
///
/// `places.popularity` holds the blend, so every ranking that reads it (the R*Tree's popularity
/// dimension, `places_by_popularity`, the probes of text and map searches) follows the counts;
/// `places.catalog_popularity` holds the catalog's own number, which hits show. The counts live
/// in `place_counts`, apart from the places, so counts that come before their place (or outlive
/// a catalog rebuild) are blended when it is indexed.
enum Popularity {
    /// What one more save adds, at most (the first one): 2·ln 2 ≈ 1.39.
    static let savesWeight = 2.0
    /// What one more recent visit adds, at most (the first one): ln 2 ≈ 0.69.
    static let visitsWeight = 1.0
    /// What one more review of the last 30 days adds, at most (the first one): 1.5·ln 2 ≈ 1.04.
    static let reviewsWeight = 1.5

    /// The blend (Protocols/search.md states it):
    /// `catalog + 2·ln(1 + saves) + ln(1 + visits_30d) + 1.5·ln(1 + reviews_30d)`, counts below 0
    /// read as 0. Monotonic in each input, and each count's share grows as its logarithm, so
    /// many travellers lift a place and one traveller barely does.
    static func blended(catalog: Double, saves: Int, visits30d: Int, reviews30d: Int = 0) -> Double {
        catalog + savesWeight * log1p(Double(max(saves, 0))) + visitsWeight * log1p(Double(max(visits30d, 0)))
            + reviewsWeight * log1p(Double(max(reviews30d, 0)))
    }

    /// The counts stored for `placeId` (favorites' and social's), zero when none are.
    static func counts(of placeId: Int64, _ db: Database) throws -> (saves: Int, visits30d: Int, reviews30d: Int) {
        // Subqueries without FROM give their one row, NULL where a table has none for the place.
        guard
            let row = try db.queryOne(
                """
                SELECT (SELECT saves FROM place_counts WHERE place_id = ?) AS saves,
                       (SELECT visits_30d FROM place_counts WHERE place_id = ?) AS visits_30d,
                       (SELECT reviews_30d FROM ratings WHERE place_id = ?) AS reviews_30d
                """, placeId, placeId, placeId)
        else { return (0, 0, 0) }
        return (
            try row.decode("saves", as: Int?.self) ?? 0, try row.decode("visits_30d", as: Int?.self) ?? 0,
            try row.decode("reviews_30d", as: Int?.self) ?? 0
        )
    }

    /// The blend of `placeId`'s stored counts with the catalog's `catalog` popularity.
    static func blended(_ placeId: Int64, catalog: Double, _ db: Database) throws -> Double {
        let (saves, visits, reviews) = try counts(of: placeId, db)
        return blended(catalog: catalog, saves: saves, visits30d: visits, reviews30d: reviews)
    }

    /// Ranks an indexed place anew from its stored counts (nothing when it is not indexed yet:
    /// its upsert blends them).
    static func rerank(_ placeId: Int64, _ db: Database) throws {
        guard let row = try db.queryOne("SELECT catalog_popularity FROM places WHERE id = ?", placeId) else { return }
        try rank(placeId, as: try blended(placeId, catalog: try row.decode("catalog_popularity", as: Double.self), db), db)
    }

    /// Sets an indexed place's ranked popularity, in the table and in the R*Tree alike.
    static func rank(_ placeId: Int64, as popularity: Double, _ db: Database) throws {
        try db.run("UPDATE places SET popularity = ? WHERE id = ?", popularity, placeId)
        let scaled = SearchIndex.scaledPopularity(popularity)
        try db.run("UPDATE places_geo SET min_pop = ?, max_pop = ? WHERE id = ?", scaled, scaled, placeId)
    }

    /// Stores a place's counts (none when both are 0 or less) and ranks the place anew when it
    /// is indexed; a place not indexed yet is blended when its upsert comes.
    static func counted(_ event: PlaceCounted, _ db: Database) throws {
        if event.saves <= 0 && event.visits30d <= 0 {
            try db.run("DELETE FROM place_counts WHERE place_id = ?", event.placeId)
        } else {
            try db.run(
                "INSERT OR REPLACE INTO place_counts (place_id, saves, visits_30d) VALUES (?, ?, ?)",
                event.placeId, max(event.saves, 0), max(event.visits30d, 0))
        }
        try rerank(event.placeId, db)
    }

    /// Keeps the counts in step with the favorites service. Memory needs no note: it answers
    /// nearest first only, and its hits show the catalog's popularity. A rebuild from the
    /// favorites service's snapshot, which holds every count, merges in slices; the places it
    /// does not name lose their counts at its end, and are ranked without them.
    static func favoritesApplier() -> EventApplier {
        EventApplier(
            apply: { event, scope in
                guard event.header.type == FavoritesEvents.counted else { return }
                let counts = try event.body(PlaceCounted.self)
                try scope.named(counts.placeId)
                try counted(counts, scope.db)
            },
            merge: SnapshotMerge(
                keys: "SELECT place_id FROM place_counts",
                remove: { id, scope in try counted(PlaceCounted(placeId: id, saves: 0, visits30d: 0), scope.db) }),
            types: [FavoritesEvents.counted])
    }
}
