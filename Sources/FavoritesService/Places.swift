import Bus
import Contracts
import Foundation
import Geo
import ServiceKit
import Storage

extension PlaceCard {
    /// Columns of `places p LEFT JOIN ratings r ON r.place_id = p.id` that `init(row:)` reads.
    static let columns = "p.id, p.name, p.category, p.address, p.lat, p.lon, r.average, r.count"
    /// The join `columns` read from.
    static let from = "places p LEFT JOIN ratings r ON r.place_id = p.id"

    init(row: Row) throws {
        self.init(
            id: try row.decode("id"), name: try row.decode("name"), category: try row.decode("category"),
            address: try row.decode("address", as: String?.self), lat: try row.decode("lat"), lon: try row.decode("lon"),
            rating: try row.decode("average", as: Double?.self), ratingCount: try row.decode("count", as: Int64?.self).map(Int.init))
    }
}

/// The copy of the catalog's places that favorites keeps (`places`, `places_geo`), fed by
/// `catalog.place.*` events, and social's ratings (`ratings`), fed by `social.rating.updated`.
///
/// Rows of `places` are never replaced (`INSERT OR REPLACE` would delete the row first, and
/// with it, by `ON DELETE CASCADE`, every list item of the place): they are upserted. A place
/// the catalog deleted is remembered in `places_gone` (catalog ids are never reused), so a
/// `catalog.get` answer that raced with the deletion cannot bring it back.
enum Places {
    /// The R*Tree holds degrees times this, as 32-bit integers.
    static let scale = 1e7

    static let migrations: [Migration] = [
        Migration(
            domain: "places", version: 1,
            sql: """
                CREATE TABLE places (
                    id       INTEGER PRIMARY KEY,
                    name     TEXT NOT NULL,
                    category TEXT NOT NULL,
                    address  TEXT,
                    lat      REAL NOT NULL,
                    lon      REAL NOT NULL,
                    version  INTEGER NOT NULL,
                    stale    INTEGER NOT NULL DEFAULT 0 CHECK (stale IN (0, 1))
                );
                CREATE INDEX places_stale ON places(stale) WHERE stale = 1;
                CREATE VIRTUAL TABLE places_geo USING rtree_i32(id, min_lat, max_lat, min_lon, max_lon);
                CREATE TABLE places_gone (id INTEGER PRIMARY KEY);
                CREATE TABLE ratings (
                    place_id INTEGER PRIMARY KEY,
                    average  REAL NOT NULL,
                    count    INTEGER NOT NULL
                );
                """),
        // A rebuild merges the catalog's snapshot (`catalogApplier`): no place is marked stale.
        Migration(domain: "places", version: 2, sql: "DROP INDEX places_stale; ALTER TABLE places DROP COLUMN stale;"),
    ]

    /// Stores `place` (from an event, or `catalog.get`) unless the copy has a later version or
    /// the catalog deleted it. A rebuild's snapshot item is stored `overwriting` a later
    /// version: the catalog was restored to before it.
    static func upsert(_ place: PlaceSummary, version: Int64, overwriting: Bool = false, _ db: Database) throws {
        guard try db.queryOne("SELECT 1 FROM places_gone WHERE id = ?", place.id) == nil else { return }
        try db.run(
            """
            INSERT INTO places (id, name, category, address, lat, lon, version) VALUES (?, ?, ?, ?, ?, ?, ?)
            ON CONFLICT(id) DO UPDATE SET name = excluded.name, category = excluded.category, address = excluded.address,
                lat = excluded.lat, lon = excluded.lon, version = excluded.version
            WHERE excluded.version >= places.version OR ?
            """, place.id, place.name, place.category, place.address, place.lat, place.lon, version, overwriting)
        guard db.changes > 0 else { return }
        let lat = Int64((place.lat * scale).rounded())
        let lon = Int64((place.lon * scale).rounded())
        try db.run("INSERT OR REPLACE INTO places_geo (id, min_lat, max_lat, min_lon, max_lon) VALUES (?, ?, ?, ?, ?)", place.id, lat, lat, lon, lon)
    }

    /// Forgets a place the catalog deleted: its list items go with it (`ON DELETE CASCADE`),
    /// each discoverable user's visit of it with a `favorites.unvisited` (by `emit`).
    static func delete(_ id: Int64, _ db: Database, emit: (PlaceUnvisited) throws -> Void) throws {
        for gone in try Visits.unvisitedOnDeletion(of: id, db) { try emit(gone) }
        try db.run("DELETE FROM places WHERE id = ?", id)
        try db.run("DELETE FROM places_geo WHERE id = ?", id)
        try db.run("INSERT OR IGNORE INTO places_gone (id) VALUES (?)", id)
    }

    /// Keeps the copy in step with the catalog. A rebuild merges the catalog's snapshot in
    /// slices (`SnapshotMerge`), so `favorites.add` is never held for all of it. The places
    /// the copy held as the rebuild began and the snapshot does not name go at its end: places
    /// deleted while favorites could not follow, which leave every list as a live deletion
    /// does. A place fetched with `catalog.get` meanwhile stays, and so do its list items.
    static let catalogApplier = EventApplier(
        apply: { event, scope in
            switch event.header.type {
            case CatalogEvents.upserted:
                struct Versioned: Decodable { var version: Int64 }
                let place = try event.body(PlaceSummary.self)
                try scope.named(place.id)
                let before = try scope.db.queryOne("SELECT lat, lon FROM places WHERE id = ?", place.id)
                try upsert(place, version: try event.body(Versioned.self).version, overwriting: scope.merging, scope.db)
                // A place that moved: its discoverable visitors' visits go out again with the new point.
                if let before, try before.decode("lat", as: Double.self) != place.lat || before.decode("lon", as: Double.self) != place.lon {
                    for visit in try Visits.moved(place.id, scope.db) { try scope.emit(FavoritesEvents.visited, visit) }
                }
            case CatalogEvents.deleted:
                try delete(try event.body(PlaceDeleted.self).id, scope.db) { try scope.emit(FavoritesEvents.unvisited, $0) }
            default: break
            }
        },
        merge: SnapshotMerge(
            keys: "SELECT id FROM places",
            remove: { id, scope in try delete(id, scope.db) { try scope.emit(FavoritesEvents.unvisited, $0) } }),
        types: [CatalogEvents.upserted, CatalogEvents.deleted])

    /// Keeps ratings in step with social (`social.rating.updated`). Social's snapshot holds
    /// every rating, so a rebuild forgets them first.
    static let ratingEvents = EventHandlers(
        [
            SocialEvents.ratingUpdated: { event, scope in
                let update = try event.body(RatingUpdated.self)
                if update.count <= 0 {
                    try scope.db.run("DELETE FROM ratings WHERE place_id = ?", update.placeId)
                } else {
                    try scope.db.run(
                        "INSERT OR REPLACE INTO ratings (place_id, average, count) VALUES (?, ?, ?)",
                        update.placeId, update.average, update.count)
                }
            }
        ], reset: { db in try db.run("DELETE FROM ratings") })
}

extension FavoritesStore {
    /// The card of place `id` from the copy, or nil.
    func card(_ id: Int64) throws -> PlaceCard? {
        try db.queryOne("SELECT \(PlaceCard.columns) FROM \(PlaceCard.from) WHERE p.id = ?", id).map(PlaceCard.init(row:))
    }

    /// Makes sure place `id` is in the copy, asking the catalog (`catalog.get`) on a miss so
    /// a place created a moment ago can be saved at once; `not_found` naming `field` when the
    /// catalog has no such place, `unavailable` when it does not answer in time or when the
    /// other lookups under way leave only one reader (`lookups`, a `ReaderGate`: a lookup holds
    /// a reader for up to a second, so unknown ids sent in a loop while the catalog is slow
    /// must never take every reader and stall every user's lists).
    ///
    /// Call it before the write transaction: it may wait on the catalog.
    func ensurePlace(_ id: Int64, field: String = "place_id", context: RequestContext) throws {
        guard id > 0 else { throw ServiceError.invalid(field, "must be a positive place id") }
        if try db.queryOne("SELECT 1 FROM places WHERE id = ?", id) != nil { return }
        struct Fetched: Decodable {
            var version: Int64
        }
        let reply = try lookups.run(
            readers: worker.config.readers,
            refusal: ServiceError(.unavailable, "favorites is asking the catalog about other places; try again")
        ) { () throws -> Reply in
            try worker.catalogPlace(id, field: field, context: context)
        }
        let place = try reply.body(PlaceSummary.self)
        guard place.id == id else { throw ServiceError(.internal, "the catalog answered another place") }
        try db.transaction(.immediate) { try Places.upsert(place, version: try reply.body(Fetched.self).version, db) }
        guard try db.queryOne("SELECT 1 FROM places WHERE id = ?", id) != nil else {
            throw ServiceError(.notFound, "no place with id \(id)", field: field)
        }
    }

    /// The place of the copy nearest to `point` within `meters`, or nil.
    func nearestPlace(to point: Coordinate, within meters: Double) throws -> (card: PlaceCard, distanceM: Double)? {
        let box = try BoundingBox.around(point, radiusMeters: meters)
        var best: (card: PlaceCard, distanceM: Double)?
        for area in box.indexAreas {
            try db.forEachRow(
                """
                SELECT \(PlaceCard.columns) FROM places_geo g JOIN places p ON p.id = g.id LEFT JOIN ratings r ON r.place_id = p.id
                WHERE g.min_lat >= ? AND g.max_lat <= ? AND g.min_lon >= ? AND g.max_lon <= ?
                """,
                [
                    Int64((area.south * Places.scale).rounded(.down)), Int64((area.north * Places.scale).rounded(.up)),
                    Int64((area.west * Places.scale).rounded(.down)), Int64((area.east * Places.scale).rounded(.up)),
                ]
            ) { row in
                let card = try PlaceCard(row: row)
                let distance = point.distance(to: Coordinate(uncheckedLatitude: card.lat, longitude: card.lon))
                if distance <= meters, distance < best?.distanceM ?? .infinity || (distance == best?.distanceM && card.id < best?.card.id ?? 0) {
                    best = (card, distance)
                }
            }
        }
        return best
    }
}
