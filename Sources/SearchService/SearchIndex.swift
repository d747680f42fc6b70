import Bus
import Contracts
import Foundation
import ServiceKit
import Storage

/// The search service's own tables, built from other services' events. Never edit a shipped
/// migration: add the next one.
enum SearchSchema {
    static let migrations: [Migration] = [
        Migration(
            domain: "search", version: 1,
            sql: """
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
        // Words folded once, when indexed, kept on the place (FTS5 indexes them without a copy
        // of its own) so a search can check a place it reads without folding; popularity as a
        // third R*Tree dimension, so the most popular places of a box are found without reading
        // the rest; a vocabulary of our own, cheap to scan for typos. The index starts over and
        // is rebuilt from the catalog's events.
        Migration(
            domain: "search", version: 3,
            sql: """
                DROP TABLE places_vocab;
                DROP TABLE places_text;
                DROP TABLE places_geo;
                DELETE FROM places;
                ALTER TABLE places ADD COLUMN name_words TEXT NOT NULL DEFAULT '';
                ALTER TABLE places ADD COLUMN other_words TEXT NOT NULL DEFAULT '';
                -- Coordinates in units of 1e-7 degree, popularity in hundredths (capped at 2e9).
                CREATE VIRTUAL TABLE places_geo USING rtree_i32(id, min_lat, max_lat, min_lon, max_lon, min_pop, max_pop);
                CREATE VIRTUAL TABLE places_text USING fts5(
                    name_words, other_words, content = 'places', content_rowid = 'id',
                    tokenize = 'unicode61 remove_diacritics 2', prefix = '1 2 3'
                );
                -- Every folded word (but numbers) that some place has had: typo tolerance reads it.
                CREATE TABLE search_terms (term TEXT PRIMARY KEY) WITHOUT ROWID;
                DELETE FROM event_cursor WHERE source = 'catalog';
                """),
        // Places in bands of 0.001 degree of latitude (111 m), in order of longitude, with what
        // a search reads to decide on a place: a ring around a point is a few range scans of
        // this index instead of one table lookup per place.
        Migration(
            domain: "search", version: 4,
            sql: """
                ALTER TABLE places ADD COLUMN strip INTEGER GENERATED ALWAYS AS (CAST((lat + 90) * 1000 AS INTEGER)) VIRTUAL;
                \(stripIndex);
                """),
        // The most popular places first, with what a search reads to decide on a place (as
        // `places_by_strip`): a text search whose words match too many places to rank them all
        // reads its candidates down this index, a bounded number of them, without a table
        // lookup each.
        Migration(domain: "search", version: 5, sql: popularityIndex),
        // The vocabulary by length in letters (characters as Swift counts them), so a word's
        // near spellings are looked for among the words of about its length only. The index
        // starts over and is rebuilt from the catalog's events, which count the letters.
        Migration(
            domain: "search", version: 6,
            sql: """
                DROP TABLE search_terms;
                CREATE TABLE search_terms (term TEXT PRIMARY KEY, letters INTEGER NOT NULL) WITHOUT ROWID;
                CREATE INDEX search_terms_by_letters ON search_terms(letters, term);
                INSERT INTO places_text (places_text) VALUES ('delete-all');
                DELETE FROM places;
                DELETE FROM places_geo;
                DELETE FROM event_cursor WHERE source = 'catalog';
                """),
        // Each place's hit as the reply's JSON, made once when indexed (see `HitJSON`): the
        // members before `distance_m` and those after it, up to the rating. The index starts
        // over and is rebuilt from the catalog's events, which write them.
        Migration(
            domain: "search", version: 7,
            sql: """
                ALTER TABLE places ADD COLUMN hit_head TEXT NOT NULL DEFAULT '';
                ALTER TABLE places ADD COLUMN hit_tail TEXT NOT NULL DEFAULT '';
                INSERT INTO places_text (places_text) VALUES ('delete-all');
                DELETE FROM places;
                DELETE FROM places_geo;
                DELETE FROM search_terms;
                DELETE FROM event_cursor WHERE source = 'catalog';
                """),
        // Each place under each of its words and short prefixes, at its position on a Z-order
        // curve (`PlaceTerms`): a text search near a point reads the places of one word outward
        // from the point, and no others. The index starts over and is rebuilt from the
        // catalog's events, which write the rows.
        Migration(
            domain: "search", version: 8,
            sql: """
                CREATE TABLE place_terms (term TEXT NOT NULL, cell INTEGER NOT NULL, id INTEGER NOT NULL, PRIMARY KEY (term, cell, id)) WITHOUT ROWID;
                INSERT INTO places_text (places_text) VALUES ('delete-all');
                DELETE FROM places;
                DELETE FROM places_geo;
                DELETE FROM search_terms;
                DELETE FROM event_cursor WHERE source = 'catalog';
                """),
        // Popularity as search ranks it (`Popularity`): `popularity` becomes the catalog's
        // number blended with the favorites service's counts, which `place_counts` keeps (for
        // places not indexed yet too); `catalog_popularity` is the catalog's own, which hits show.
        // No counts yet, so the two start equal.
        Migration(
            domain: "search", version: 9,
            sql: """
                ALTER TABLE places ADD COLUMN catalog_popularity REAL NOT NULL DEFAULT 0;
                UPDATE places SET catalog_popularity = popularity;
                CREATE TABLE place_counts (
                    place_id   INTEGER PRIMARY KEY,
                    saves      INTEGER NOT NULL,
                    visits_30d INTEGER NOT NULL
                );
                """),
        // Tours join the index, each under minus its id (`tourEntry`), and every hit says its
        // `kind`. The index starts over and is rebuilt from the catalog's events, which write
        // the hits' new pieces.
        Migration(
            domain: "search", version: 10,
            sql: """
                INSERT INTO places_text (places_text) VALUES ('delete-all');
                DELETE FROM places;
                DELETE FROM places_geo;
                DELETE FROM search_terms;
                DELETE FROM place_terms;
                DELETE FROM event_cursor WHERE source = 'catalog';
                """),
        // `search.popular`: each place's seasons (the catalog's JSON, NULL when it has none),
        // events by ranked popularity, and each place's reviews of the last 30 days (social's
        // `reviews_30d`, 0 while unknown), which the blend counts. No place had seasons and no
        // event has come yet, so nothing is rebuilt.
        Migration(
            domain: "search", version: 11,
            sql: """
                ALTER TABLE places ADD COLUMN seasons TEXT;
                CREATE INDEX places_events ON places(popularity DESC, id) WHERE category = 'event';
                ALTER TABLE ratings ADD COLUMN reviews_30d INTEGER NOT NULL DEFAULT 0;
                """),
        // Each entry's names by language (`name_i18n`, JSON, NULL when it has none), so a search
        // with `lang` answers names in it. The index starts over and is rebuilt from the
        // catalog's events, which carry them.
        Migration(
            domain: "search", version: 12,
            sql: """
                ALTER TABLE places ADD COLUMN name_i18n TEXT;
                INSERT INTO places_text (places_text) VALUES ('delete-all');
                DELETE FROM places;
                DELETE FROM places_geo;
                DELETE FROM search_terms;
                DELETE FROM place_terms;
                DELETE FROM event_cursor WHERE source = 'catalog';
                """),
        // A user's recorded searches, so erasing them reads that user's rows, not the whole outbox.
        OutboxSchema.userIndex(domain: "search", version: 13),
    ]

    /// Built by migration 4, and again after each bulk load (keeping it up row by row while
    /// catching up on a million places costs far more than sorting them once). Changing it
    /// needs a new migration that drops and creates it.
    static let stripIndex = """
        CREATE INDEX IF NOT EXISTS places_by_strip ON places(strip, lon, lat, id, popularity, category, price_level, name_words, other_words)
        """

    /// Built by migration 5, and again after each bulk load, as `stripIndex` is.
    static let popularityIndex = """
        CREATE INDEX IF NOT EXISTS places_by_popularity ON places(popularity DESC, id, lat, lon, category, price_level, name_words, other_words)
        """

    /// The indexes a bulk load drops first and builds once at its end.
    static let bulkIndexes = [("places_by_strip", stripIndex), ("places_by_popularity", popularityIndex)]

    /// Whether `name` exists now: a bulk load may have dropped it, and then searches read without it.
    static func hasIndex(_ name: String, _ db: Database) throws -> Bool {
        try db.scalarInt("SELECT 1 FROM sqlite_master WHERE type = 'index' AND name = ?", name) != nil
    }
}

/// What search keeps of a catalog place: the catalog's `PlaceSummary`, read from
/// `catalog.place.upserted` (by spans when it can, see `init(spans:)`).
typealias IndexedPlace = PlaceSummary

extension IndexedPlace {
    /// Reads a `catalog.place.upserted` body by spans, without `Decodable`: catching up reads a
    /// million of them. Nil when the body is not plainly shaped, and then `JSONDecoder` reads
    /// it, with its errors. What it reads is what decoding the body as a `PlaceSummary` reads
    /// (tests hold the two to that).
    init?(spans json: Data) {
        guard let members = JSONSpan.members(of: json) else { return nil }
        // In strict JSON a value that starts with `n` is `null`.
        func isNull(_ range: Range<Int>) -> Bool { json[range.lowerBound] == UInt8(ascii: "n") }
        func number(_ range: Range<Int>) -> Double? { JSONNumber.finite(json[range]) }
        func integer(_ range: Range<Int>) -> Int64? { JSONNumber.integer(json[range]) }
        func text(_ range: Range<Int>) -> String?? { isNull(range) ? .some(nil) : JSONSpan.string(at: range, in: json).map { .some($0) } }
        var id: Int64?
        var name: String?
        var category: String?
        var lat: Double?
        var lon: Double?
        var place = IndexedPlace(id: 0, name: "", category: "", lat: 0, lon: 0)
        var read: UInt16 = 0
        for (key, range) in members {
            // A field given twice is left to the decoder, whose reading of it is the reference.
            if let bit = Self.memberBits[key] {
                guard read & bit == 0 else { return nil }
                read |= bit
            }
            switch key {
            case "id":
                guard let value = integer(range) else { return nil }
                id = value
            case "name":
                guard let value = JSONSpan.string(at: range, in: json) else { return nil }
                name = value
            case "category":
                guard let value = JSONSpan.string(at: range, in: json) else { return nil }
                category = value
            case "lat":
                guard let value = number(range) else { return nil }
                lat = value
            case "lon":
                guard let value = number(range) else { return nil }
                lon = value
            case "address":
                guard let value = text(range) else { return nil }
                place.address = value
            case "description":
                guard let value = text(range) else { return nil }
                place.description = value
            case "timezone":
                guard let value = text(range) else { return nil }
                place.timezone = value
            case "price_level":
                if isNull(range) { continue }
                guard let value = integer(range), let level = Int(exactly: value) else { return nil }
                place.priceLevel = level
            case "popularity":
                if isNull(range) { continue }
                guard let value = number(range) else { return nil }
                place.popularity = value
            case "name_i18n", "description_i18n":
                if isNull(range) { continue }
                guard let texts = PlaceJSON.strings(at: range, in: json) else { return nil }
                if key == "name_i18n" { place.nameI18n = texts } else { place.descriptionI18n = texts }
            case "seasons":
                if isNull(range) { continue }
                guard let seasons = PlaceInput.array(at: range, in: json, { Season(spans: $0, skippingUnknown: true) }) else { return nil }
                place.seasons = seasons
            case "opening_hours":
                if isNull(range) { continue }
                guard let elements = JSONSpan.elements(at: range, in: json) else { return nil }
                var periods: [OpeningPeriod] = []
                for element in elements {
                    guard let period = OpeningPeriod(spans: json.subdata(in: element), skippingUnknown: true) else { return nil }
                    periods.append(period)
                }
                place.openingHours = periods
            default: continue
            }
        }
        guard let id, let name, let category, let lat, let lon else { return nil }
        (place.id, place.name, place.category, place.lat, place.lon) = (id, name, category, lat, lon)
        self = place
    }

    /// One bit per member a `PlaceSummary` decodes.
    private static let memberBits: [String: UInt16] = Dictionary(
        uniqueKeysWithValues: PlaceSummary.memberNames.sorted().enumerated().map {
            ($1, UInt16(1) << UInt16($0))
        })
}

/// Applies events to the index; every change is idempotent (the same event twice changes nothing).
enum SearchIndex {
    static let scale = 1e7

    /// A popularity as the R*Tree keeps it: hundredths, capped, never decreasing as popularity grows.
    static func scaledPopularity(_ popularity: Double) -> Int64 {
        Int64(min(max(popularity, 0) * 100, 2e9).rounded(.down))
    }

    /// Letters and digits folded for case and diacritics, split into words: how the index and
    /// every query read text.
    static func words(_ text: String) -> [String] {
        if text.utf8.allSatisfy({ $0 < 0x80 }) {
            // ASCII, the common case, without Foundation's folding.
            var words: [String] = []
            var word: [UInt8] = []
            for byte in text.utf8 {
                switch byte {
                case UInt8(ascii: "A")...UInt8(ascii: "Z"): word.append(byte + 32)
                case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "0")...UInt8(ascii: "9"): word.append(byte)
                default:
                    if !word.isEmpty {
                        words.append(String(decoding: word, as: UTF8.self))
                        word.removeAll(keepingCapacity: true)
                    }
                }
            }
            if !word.isEmpty { words.append(String(decoding: word, as: UTF8.self)) }
            return words
        }
        return text.folding(options: [.caseInsensitive, .diacriticInsensitive], locale: nil)
            .split { !($0.isLetter || $0.isNumber) }
            .map(String.init)
    }

    /// The folded words a place (or tour) is found by: its names' in every language, and those
    /// of its category, address and descriptions.
    static func indexedWords(_ place: IndexedPlace) -> (name: String, other: String) {
        let descriptions = (place.descriptionI18n ?? [:]).sorted { $0.key < $1.key }.map(\.value)
        let other = ([place.category, place.address, place.description].compactMap { $0 } + descriptions).flatMap(words)
        let names = (place.nameI18n ?? [:]).sorted { $0.key < $1.key }.map(\.value)
        var seen = Set<String>()
        let name = ([place.name] + names).flatMap(words).filter { seen.insert($0).inserted }
        return (name.joined(separator: " "), other.joined(separator: " "))
    }

    /// Indexes `place` (again); returns its hit's pieces as stored.
    @discardableResult
    static func upsert(_ place: IndexedPlace, _ db: Database) throws -> HitJSON {
        let hours = PlaceJSON.text(place.openingHours ?? [])
        let (name, other) = indexedWords(place)
        let old = try db.queryOne("SELECT name_words, other_words, lat, lon FROM places WHERE id = ?", place.id).map { row throws(RowError) in
            (
                name: try row.decode("name_words", as: String.self), other: try row.decode("other_words", as: String.self),
                lat: try row.decode("lat", as: Double.self), lon: try row.decode("lon", as: Double.self)
            )
        }
        let textChanged = old?.name != name || old?.other != other
        try PlaceTerms.rewrite(place.id, from: old.map { ($0.name, $0.other, $0.lat, $0.lon) }, to: (name, other, place.lat, place.lon), db)
        if let old, textChanged {
            // FTS5 forgets a row of external content only when told the words it indexed.
            try db.run(
                "INSERT INTO places_text (places_text, rowid, name_words, other_words) VALUES ('delete', ?, ?, ?)",
                place.id, old.name, old.other)
        }
        let hit = try HitJSON(place)
        // Ranked by the catalog's popularity blended with the counts stored for it (`Popularity`).
        let ranked = try Popularity.blended(place.id, catalog: place.popularity ?? 0, db)
        try db.run(
            """
            INSERT INTO places (id, name, category, address, lat, lon, price_level, popularity, catalog_popularity, opening_hours, timezone,
                                name_words, other_words, hit_head, hit_tail, name_i18n, seasons)
            VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
            ON CONFLICT(id) DO UPDATE SET name = excluded.name, category = excluded.category, address = excluded.address,
                lat = excluded.lat, lon = excluded.lon, price_level = excluded.price_level,
                popularity = excluded.popularity, catalog_popularity = excluded.catalog_popularity,
                opening_hours = excluded.opening_hours, timezone = excluded.timezone,
                name_words = excluded.name_words, other_words = excluded.other_words, hit_head = excluded.hit_head, hit_tail = excluded.hit_tail,
                name_i18n = excluded.name_i18n, seasons = excluded.seasons
            """, place.id, place.name, place.category, place.address, place.lat, place.lon, place.priceLevel,
            ranked, place.popularity ?? 0, hours, place.timezone, name, other, hit.head, hit.tail,
            place.nameI18n.flatMap { $0.isEmpty ? nil : PlaceJSON.text($0) },
            place.seasons.flatMap { $0.isEmpty ? nil : PlaceJSON.text($0) })
        let lat = Int64((place.lat * scale).rounded())
        let lon = Int64((place.lon * scale).rounded())
        let popularity = scaledPopularity(ranked)
        try db.run(
            "INSERT OR REPLACE INTO places_geo (id, min_lat, max_lat, min_lon, max_lon, min_pop, max_pop) VALUES (?, ?, ?, ?, ?, ?, ?)",
            place.id, lat, lat, lon, lon, popularity, popularity)
        guard textChanged else { return hit }
        try db.run("INSERT INTO places_text (rowid, name_words, other_words) VALUES (?, ?, ?)", place.id, name, other)
        for term in Set((name + " " + other).split(separator: " ")) where !term.allSatisfy(\.isNumber) {
            try db.run("INSERT OR IGNORE INTO search_terms (term, letters) VALUES (?, ?)", String(term), term.count)
        }
        return hit
    }

    static func delete(_ id: Int64, _ db: Database) throws {
        guard let old = try db.queryOne("SELECT name_words, other_words, lat, lon FROM places WHERE id = ?", id) else { return }
        let (name, other) = (try old.decode("name_words", as: String.self), try old.decode("other_words", as: String.self))
        try db.run("INSERT INTO places_text (places_text, rowid, name_words, other_words) VALUES ('delete', ?, ?, ?)", id, name, other)
        try db.run("DELETE FROM places WHERE id = ?", id)
        try db.run("DELETE FROM places_geo WHERE id = ?", id)
        try PlaceTerms.rewrite(id, from: (name, other, try old.decode("lat", as: Double.self), try old.decode("lon", as: Double.self)), to: nil, db)
    }

    /// A tour as the index keeps it: a row under minus its id, of category `itinerary`, where
    /// its first stop is; nil when it has no stop.
    static func tourEntry(_ tour: Tour) -> IndexedPlace? {
        guard let lat = tour.lat, let lon = tour.lon, tour.id > 0 else { return nil }
        return IndexedPlace(
            id: -tour.id, name: tour.name, category: "itinerary", lat: lat, lon: lon, popularity: 0,
            description: tour.description, nameI18n: tour.nameI18n, descriptionI18n: tour.descriptionI18n)
    }

    /// Stores a place's rating and its reviews of the last 30 days (kept as they were when the
    /// event does not say), and ranks the place anew when those changed.
    static func rating(_ update: RatingUpdated, _ db: Database) throws {
        let before = try Popularity.counts(of: update.placeId, db).reviews30d
        if update.count <= 0 {
            try db.run("DELETE FROM ratings WHERE place_id = ?", update.placeId)
        } else {
            let reviews = update.reviews30d.map { max($0, 0) } ?? before
            try db.run(
                "INSERT OR REPLACE INTO ratings (place_id, average, count, reviews_30d) VALUES (?, ?, ?, ?)",
                update.placeId, update.average, update.count, reviews)
        }
        if try Popularity.counts(of: update.placeId, db).reviews30d != before { try Popularity.rerank(update.placeId, db) }
    }

    /// Keeps the index in step with the catalog, and `memory` with the index; keeps the copy
    /// of the catalog's addresses (AddressBook.swift).
    static func catalogApplier(memory: NearbyMemory, streets: BackgroundSignal, addresses: AddressBook) -> EventApplier {
        let changes = NearbyMemory.Changes()
        return EventApplier(
            apply: { event, scope in
                switch event.header.type {
                case CatalogEvents.upserted:
                    let fast = event.bodyBytes.flatMap(IndexedPlace.init(spans:))
                    let place = try fast ?? event.body(IndexedPlace.self)
                    try scope.named(place.id)
                    let hit = try upsert(place, scope.db)
                    changes.note(.upsert(id: place.id, latitude: place.lat, longitude: place.lon, head: hit.head, tail: hit.tail))
                case CatalogEvents.deleted:
                    let id = try event.body(PlaceDeleted.self).id
                    try delete(id, scope.db)
                    changes.note(.delete(id: id))
                case TourEvents.upserted:
                    let tour = try event.body(Tour.self)
                    try scope.named(-tour.id)
                    guard let entry = tourEntry(tour) else {
                        // A tour whose last stop was deleted has no place on the map, and is not found.
                        try delete(-tour.id, scope.db)
                        changes.note(.delete(id: -tour.id))
                        break
                    }
                    let hit = try upsert(entry, scope.db)
                    changes.note(.upsert(id: entry.id, latitude: entry.lat, longitude: entry.lon, head: hit.head, tail: hit.tail))
                case TourEvents.deleted:
                    let id = -(try event.body(TourDeleted.self).id)
                    try delete(id, scope.db)
                    changes.note(.delete(id: id))
                case StreetEvents.changed:
                    // The street networks' thread fetches what changed (StreetRoutes.swift).
                    streets.wake()
                case AddressEvents.upserted:
                    try addresses.apply(try event.body(AddressBatch.self), scope)
                case AddressEvents.removed:
                    try addresses.remove(set: try event.body(AddressSetRemoved.self).setId, scope.db)
                default: break
                }
            },
            // A rebuild applies every place again: in slices, so the deferred writer of
            // searches performed and the ratings and counts subscribers are not held for
            // seconds (events.md, "Rebuild"); the places and address sets it does not name go
            // at its end.
            merge: SnapshotMerge(
                keys: "SELECT id FROM places UNION ALL \(AddressBook.mergeKeys)",
                remove: { key, scope in
                    if AddressBook.isMergeKey(key) {
                        try addresses.remove(set: key - Int64.min, scope.db)
                        return
                    }
                    try delete(key, scope.db)
                    changes.note(.delete(id: key))
                }),
            types: [
                CatalogEvents.upserted, CatalogEvents.deleted, TourEvents.upserted, TourEvents.deleted, StreetEvents.changed, AddressEvents.upserted,
                AddressEvents.removed,
            ],
            startBulk: { db in for (name, _) in SearchSchema.bulkIndexes { try db.run("DROP INDEX IF EXISTS \(name)") } },
            finishBulk: { db in for (_, create) in SearchSchema.bulkIndexes { try db.run(create) } },
            settled: { committed in
                memory.settle(changes.take(), committed: committed)
                addresses.settled(committed: committed)
            })
    }

    /// Keeps ratings in step with the social service, and `memory` with them; erases a deleted
    /// user's recorded searches (`PerformedSearches.erase`). A rebuild from social's snapshot,
    /// which holds every rating, merges in slices; the ratings it does not name go at its end.
    static func socialApplier(memory: NearbyMemory, erased: RecentlyErased) -> EventApplier {
        let changes = NearbyMemory.Changes()
        return EventApplier(
            apply: { event, scope in
                if event.header.type == SocialEvents.userDeleted {
                    try PerformedSearches.erase(user: try event.body(UserDeleted.self).userId, erased: erased, scope.db)
                    return
                }
                guard event.header.type == SocialEvents.ratingUpdated else { return }
                let update = try event.body(RatingUpdated.self)
                try scope.named(update.placeId)
                try rating(update, scope.db)
                changes.note(
                    update.count <= 0
                        ? .unrated(placeId: update.placeId)
                        : .rating(placeId: update.placeId, average: update.average, count: Int64(update.count)))
            },
            merge: SnapshotMerge(
                keys: "SELECT place_id FROM ratings",
                remove: { id, scope in
                    // As an update to no reviews: its recent ones no longer count either.
                    try rating(RatingUpdated(placeId: id, average: 0, count: 0), scope.db)
                    changes.note(.unrated(placeId: id))
                }),
            types: [SocialEvents.ratingUpdated, SocialEvents.userDeleted],
            settled: { committed in memory.settle(changes.take(), committed: committed) })
    }
}
