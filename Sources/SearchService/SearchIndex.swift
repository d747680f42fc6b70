import Bus
import Foundation
import ServiceKit
import Storage

/// The search service's own tables, built from other services' events. Never edit a shipped
/// migration: add the next one.
enum SearchSchema {
    static let migrations: [Migration] = [
        Migration(domain: "search", version: 1, sql: """
            CREATE TABLE places (
                id            INTEGER PRIMARY KEY,
                name          TEXT NOT NULL,
                category      TEXT NOT NULL,
                address       TEXT,
                lat           REAL NOT NULL,
                lon           REAL NOT NULL,
                price_level   INTEGER,
                popularity    REAL NOT NULL DEFAULT 0,
                opening_hours TEXT NOT NULL DEFAULT '[]'
            );
            CREATE INDEX places_by_category ON places(category);
            -- Integer R*Tree of coordinates in units of 1e-7 degree: exact, unlike the float one.
            CREATE VIRTUAL TABLE places_geo USING rtree_i32(id, min_lat, max_lat, min_lon, max_lon);
            -- Ratings come from the social service and may arrive before their place.
            CREATE TABLE ratings (
                place_id INTEGER PRIMARY KEY,
                average  REAL NOT NULL,
                count    INTEGER NOT NULL
            );
            -- Words of every place, folded for case and diacritics, with prefix indexes for
            -- autocomplete; its vocabulary feeds typo tolerance.
            CREATE VIRTUAL TABLE places_text USING fts5(
                name, category, address, description,
                tokenize = 'unicode61 remove_diacritics 2', prefix = '1 2 3'
            );
            CREATE VIRTUAL TABLE places_vocab USING fts5vocab(places_text, row);
            """),
        Migration(domain: "search", version: 2, sql: "ALTER TABLE places ADD COLUMN timezone TEXT"),
    ]
}

/// The fields of a catalog place that search keeps (its own reading of `catalog.place.upserted`).
struct IndexedPlace: Codable, Sendable, Equatable {
    var id: Int64
    var name: String
    var category: String
    var lat: Double
    var lon: Double
    var address: String?
    var priceLevel: Int?
    var popularity: Double?
    var openingHours: [OpeningPeriod]?
    var description: String?
    var timezone: String?

    struct OpeningPeriod: Codable, Sendable, Equatable {
        var day: Int
        var open: String
        var close: String
    }

    enum CodingKeys: String, CodingKey {
        case id, name, category, lat, lon, address, popularity, description, timezone
        case priceLevel = "price_level"
        case openingHours = "opening_hours"
    }
}

/// `social.rating.updated`: a place's review average and count.
public struct RatingUpdated: Codable, Sendable, Equatable {
    public var placeId: Int64
    public var average: Double
    public var count: Int

    public init(placeId: Int64, average: Double, count: Int) {
        self.placeId = placeId
        self.average = average
        self.count = count
    }

    enum CodingKeys: String, CodingKey {
        case placeId = "place_id"
        case average, count
    }
}

/// Applies events to the index; every change is idempotent (the same event twice changes nothing).
enum SearchIndex {
    static let scale = 1e7

    static func upsert(_ place: IndexedPlace, _ db: Database) throws {
        let hours = String(decoding: try JSONCoding.encoder.encode(place.openingHours ?? []), as: UTF8.self)
        try db.run("""
            INSERT INTO places (id, name, category, address, lat, lon, price_level, popularity, opening_hours, timezone)
            VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
            ON CONFLICT(id) DO UPDATE SET name = excluded.name, category = excluded.category, address = excluded.address,
                lat = excluded.lat, lon = excluded.lon, price_level = excluded.price_level,
                popularity = excluded.popularity, opening_hours = excluded.opening_hours, timezone = excluded.timezone
            """, place.id, place.name, place.category, place.address, place.lat, place.lon, place.priceLevel,
                   place.popularity ?? 0, hours, place.timezone)
        let lat = Int64((place.lat * scale).rounded()), lon = Int64((place.lon * scale).rounded())
        try db.run("INSERT OR REPLACE INTO places_geo (id, min_lat, max_lat, min_lon, max_lon) VALUES (?, ?, ?, ?, ?)",
                   place.id, lat, lat, lon, lon)
        try db.run("DELETE FROM places_text WHERE rowid = ?", place.id)
        try db.run("INSERT INTO places_text (rowid, name, category, address, description) VALUES (?, ?, ?, ?, ?)",
                   place.id, place.name, place.category, place.address, place.description)
    }

    static func delete(_ id: Int64, _ db: Database) throws {
        try db.run("DELETE FROM places WHERE id = ?", id)
        try db.run("DELETE FROM places_geo WHERE id = ?", id)
        try db.run("DELETE FROM places_text WHERE rowid = ?", id)
    }

    static func rating(_ update: RatingUpdated, _ db: Database) throws {
        if update.count <= 0 {
            try db.run("DELETE FROM ratings WHERE place_id = ?", update.placeId)
        } else {
            try db.run("INSERT OR REPLACE INTO ratings (place_id, average, count) VALUES (?, ?, ?)",
                       update.placeId, update.average, update.count)
        }
    }

    struct Deleted: Decodable { var id: Int64 }

    /// Keeps the index in step with the catalog.
    static let catalogApplier = EventApplier(
        apply: { event, db in
            switch event.header.type {
            case "catalog.place.upserted": try upsert(try event.body(IndexedPlace.self), db)
            case "catalog.place.deleted": try delete(try event.body(Deleted.self).id, db)
            default: break
            }
        },
        reset: { db in
            try db.run("DELETE FROM places")
            try db.run("DELETE FROM places_geo")
            try db.run("DELETE FROM places_text")
        })

    /// Keeps ratings in step with the social service.
    static let socialApplier = EventApplier(
        apply: { event, db in
            if event.header.type == "social.rating.updated" { try rating(try event.body(RatingUpdated.self), db) }
        },
        reset: { db in try db.run("DELETE FROM ratings") })
}
