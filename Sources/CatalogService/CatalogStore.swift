import Bus
import Contracts
import Foundation
import ServiceKit
import Storage

/// The catalog's tables and the queries over them, on one worker thread's connection.
public final class CatalogStore: ServiceState {
    public let worker: ServiceWorker
    var db: Database { worker.db }

    /// The categories a place may have; loaded once per thread (they change only by migration).
    let categories: [Category]
    let categoryIds: Set<String>

    /// The catalog's own options.
    let options: CatalogOptions
    /// Wakes the thread that cuts map tiles.
    let tileCutter: BackgroundSignal
    /// Wakes the thread that reads imports.
    let importer: BackgroundSignal
    /// Imports read and planned, waiting for the writer (nil: a store that applies none).
    let importPlans: ImportPlans?
    /// Users erased a moment ago (`social.user.deleted`), whose late `tours.locate` is refused.
    let erased: RecentlyErased
    /// Image checks on reader threads, one at a time (and never on all readers), shared by
    /// the catalog's threads.
    let decoding: ReaderGate

    init(
        worker: ServiceWorker, options: CatalogOptions = CatalogOptions(), tileCutter: BackgroundSignal = BackgroundSignal(),
        importer: BackgroundSignal = BackgroundSignal(), importPlans: ImportPlans? = nil, erased: RecentlyErased? = nil,
        decoding: ReaderGate = ReaderGate(most: 1)
    ) throws {
        self.worker = worker
        self.decoding = decoding
        self.options = options
        self.tileCutter = tileCutter
        self.importer = importer
        self.importPlans = importPlans
        self.erased = erased ?? RecentlyErased(windowMilliseconds: options.erasedUserWindowMs)
        categories = try worker.db.query("SELECT id, name FROM categories ORDER BY id").map { row throws(RowError) in
            Category(id: try row.decode("id"), name: try row.decode("name"), count: nil)
        }
        categoryIds = Set(categories.map(\.id))
    }

    static let columns = """
        id, name, category, lat, lon, address, phone, website, price_level, description,
        opening_hours, photos, popularity, external_ids, created_at, updated_at, version, timezone, name_i18n, description_i18n,
        opening_hours_text, seasons, hosted_photos
        """

    // MARK: Reads

    func get(_ id: Int64) throws -> Place { try Self.place(id, in: db, filter: HiddenImport.places("id")) }

    /// Place `id` as `db` has it (any connection: the import planner reads with its own, and
    /// sees the rows an import is writing), or `not_found`.
    static func place(_ id: Int64, in db: Database, filter: String = "") throws -> Place {
        guard let row = try db.queryOne("SELECT \(columns) FROM places WHERE id = ?\(filter)", id) else {
            throw ServiceError(.notFound, "no place with id \(id)", field: "id")
        }
        return try place(row)
    }

    /// Place `id` as the JSON that `catalog.get` answers, or `not_found`: its stored `json`
    /// column, as it is. A row written before `catalog/3` has none yet; its JSON is made from
    /// its columns and stored for the next read (unless the place changed meanwhile).
    func json(_ id: Int64) throws -> Data {
        var found = false
        var stored = Data()
        // A NULL column reads as no bytes, and no place's JSON is empty.
        try db.forEachStep("SELECT json FROM places WHERE id = ?\(HiddenImport.places("id"))", [id]) { statement in
            found = true
            stored = statement.withUTF8(0) { Data($0) }
        }
        guard found else { throw ServiceError(.notFound, "no place with id \(id)", field: "id") }
        guard stored.isEmpty else { return stored }
        let place = try get(id)
        let body = try PlaceJSON.encode(place)
        do {
            try db.run(
                "UPDATE places SET json = ? WHERE id = ? AND version = ? AND (json IS NULL OR json = '')",
                String(decoding: body, as: UTF8.self), id, place.version)
        } catch let error as SQLiteError where error.isNotReplicated {
            // A replica that does not lead stores nothing: its leader's next read will.
        } catch {
            // Storing it only saves later reads the work: the answer stands without it.
            worker.logger.warn("could not store a place's JSON", ["id": id, "error": error])
        }
        return body
    }

    /// Places by ascending id after `after`, optionally of one category.
    func list(category: String?, after: Int64, limit: Int) throws -> [Place] {
        let hidden = HiddenImport.places("id")
        let rows =
            if let category {
                try db.query("SELECT \(Self.columns) FROM places WHERE category = ? AND id > ?\(hidden) ORDER BY id LIMIT ?", category, after, limit)
            } else {
                try db.query("SELECT \(Self.columns) FROM places WHERE id > ?\(hidden) ORDER BY id LIMIT ?", after, limit)
            }
        return try rows.map(Self.place)
    }

    func categoryCounts() throws -> [Category] {
        let counts = Dictionary(
            uniqueKeysWithValues: try db.query("SELECT category, COUNT(*) AS count FROM places WHERE 1\(HiddenImport.places("id")) GROUP BY category").map {
                row throws(RowError) in (try row.decode("category", as: String.self), try row.decode("count", as: Int.self))
            })
        // Tours are the itineraries: the category counts them with any place filed under it.
        let tours = try tourCount()
        return categories.map { Category(id: $0.id, name: $0.name, count: (counts[$0.id] ?? 0) + ($0.id == "itinerary" ? tours : 0)) }
    }

    // MARK: Writes (writer thread only; each in one transaction with its event)

    /// Adds a place; answers its JSON, which is also stored and published.
    func create(_ input: PlaceInput) throws -> Data {
        let now = Logger.timestamp()
        var place = Place(
            id: 0, name: try LanguageTexts.name(input.name, input.nameI18n), category: input.category, lat: input.lat, lon: input.lon, address: input.address,
            phone: input.phone, website: input.website, priceLevel: input.priceLevel, description: input.description,
            openingHours: input.openingHours ?? [], photos: input.photos ?? [], popularity: input.popularity ?? 0,
            externalIds: input.externalIds ?? [:], createdAt: now, updatedAt: now, version: 1, timezone: input.timezone,
            nameI18n: input.nameI18n, descriptionI18n: input.descriptionI18n, openingHoursText: input.openingHoursText,
            seasons: input.seasons)
        place = PlaceRules.normalized(place, defaultZone: options.defaultTimezone)
        try PlaceRules.validate(place, categories: categoryIds)
        return try db.transaction { try insert(&place) }
    }

    /// Writes a new, valid place (its id assigned here), claims its external ids and publishes
    /// it, in the caller's transaction; answers its JSON. An import writing in slices gives the
    /// id it set aside, `hiddenId`, and the place is not published yet.
    @discardableResult
    func insert(_ place: inout Place, hiddenId: Int64? = nil) throws -> Data {
        // Taken before the row is written: it is part of the JSON, which is written with the row.
        place.id = try hiddenId ?? nextId("places")
        let body = try PlaceJSON.encode(place)
        try db.run(Self.insertStatement, [place.id] + Self.values(place) + [place.createdAt, place.updatedAt, String(decoding: body, as: UTF8.self)])
        try claimExternalIds(place.externalIds, of: place.id)
        if hiddenId == nil { try worker.emit(CatalogEvents.upserted, json: body) }
        return body
    }

    /// The id AUTOINCREMENT would give next in `table` (`places` or `tours`): one more than the
    /// largest ever used.
    func nextId(_ table: String) throws -> Int64 {
        try db.scalarInt(
            "SELECT max(coalesce((SELECT seq FROM sqlite_sequence WHERE name = ?), 0), coalesce((SELECT max(id) FROM \(table)), 0)) + 1", table)
            ?? 1
    }

    /// Changes the fields `update` names; answers the place's JSON after the change, which is
    /// also stored and published (an update that changes nothing answers the place as it is).
    func update(_ update: PlaceUpdate) throws -> Data {
        try db.transaction {
            let current = try get(update.id)
            if let expected = update.expectedVersion, expected != current.version {
                throw ServiceError(.conflict, "place \(update.id) is at version \(current.version), not \(expected)", field: "expected_version")
            }
            var place = PlaceRules.normalized(try update.applied(to: current), defaultZone: options.defaultTimezone)
            try PlaceRules.validate(place, categories: categoryIds)
            // An update that changes nothing writes nothing and publishes nothing.
            if place == current { return try json(update.id) }
            return try store(&place, over: current)
        }
    }

    /// Writes a changed, valid place over `current` (one version on), keeps its external ids
    /// and publishes it, in the caller's transaction; a first stop that moved republishes the
    /// tours starting there. Answers its JSON.
    @discardableResult
    func store(_ place: inout Place, over current: Place) throws -> Data {
        let body = try Self.stamp(&place, over: current)
        try db.run(Self.updateStatement, Self.storedValues(place, body) + [place.id])
        if place.externalIds != current.externalIds {
            try db.run("DELETE FROM place_external_ids WHERE place_id = ?", place.id)
            try claimExternalIds(place.externalIds, of: place.id)
        }
        try worker.emit(CatalogEvents.upserted, json: body)
        // A tour starts where its first stop is: those that start here moved with it.
        if place.lat != current.lat || place.lon != current.lon { try republishTours(try tours(startingAt: place.id)) }
        return body
    }

    /// Deletes a place; it leaves every tour it was a stop of (their other stops keep their
    /// order), and each such tour is published again.
    func delete(_ id: Int64) throws {
        try db.transaction {
            let tours = try tours(withStop: id)
            // Its stops go with it (`ON DELETE CASCADE`).
            try db.run("DELETE FROM places WHERE id = ?\(HiddenImport.places("id"))", id)
            guard db.changes > 0 else { throw ServiceError(.notFound, "no place with id \(id)", field: "id") }
            try worker.emit(CatalogEvents.deleted, PlaceDeleted(id: id))
            try republishTours(tours)
        }
    }

    /// Makes `place` the version after `current`, changed now; answers its JSON.
    static func stamp(_ place: inout Place, over current: Place) throws -> Data {
        place.version = current.version + 1
        place.updatedAt = Logger.timestamp()
        return try PlaceJSON.encode(place)
    }

    /// Gives `externalIds` to place `id`, or throws `already_exists` (or "is being imported")
    /// for one another place holds.
    private func claimExternalIds(_ externalIds: [String: String], of id: Int64) throws {
        for (source, externalId) in externalIds.sorted(by: { $0.key < $1.key }) {
            if let owner = try db.queryOne(
                "SELECT place_id, (1\(HiddenImport.places("place_id"))) AS shown FROM place_external_ids WHERE source = ? AND external_id = ?", source,
                externalId)
            {
                guard try owner.decode("shown", as: Int.self) == 1 else { throw ImportRules.beingImported(source, externalId) }
                throw ServiceError(.alreadyExists, "\(source) id \(externalId) already belongs to place \(try owner.decode("place_id", as: Int64.self))", field: "external_ids")
            }
            try db.run("INSERT INTO place_external_ids (source, external_id, place_id) VALUES (?, ?, ?)", source, externalId, id)
        }
    }

    // MARK: Rows

    /// The columns of a place's fields, in the order of `values`.
    static let valueColumns = [
        "name", "category", "lat", "lon", "address", "phone", "website", "price_level", "description", "opening_hours", "photos",
        "popularity", "external_ids", "timezone", "name_i18n", "description_i18n", "opening_hours_text", "seasons", "hosted_photos",
    ]

    /// The columns a change writes, in the order of `storedValues`.
    static let storedColumns = valueColumns + ["updated_at", "version", "json"]

    /// A new place's row (made once: each insert and change is a hot path).
    private static let insertStatement = """
        INSERT INTO places (id, \(valueColumns.joined(separator: ", ")), created_at, updated_at, version, json)
        VALUES (?, \(Array(repeating: "?", count: valueColumns.count).joined(separator: ", ")), ?, ?, 1, ?)
        """

    /// A changed place's `storedColumns`, by id.
    private static let updateStatement = "UPDATE places SET \(storedColumns.map { "\($0) = ?" }.joined(separator: ", ")) WHERE id = ?"

    /// A changed place's `storedColumns`, `body` its JSON.
    static func storedValues(_ place: Place, _ body: Data) -> [SQLBindable?] {
        values(place) + [place.updatedAt, place.version, String(decoding: body, as: UTF8.self)]
    }

    private static func values(_ p: Place) -> [SQLBindable?] {
        [
            p.name, p.category, p.lat, p.lon, p.address, p.phone, p.website, p.priceLevel, p.description,
            PlaceJSON.text(p.openingHours), PlaceJSON.text(p.photos), p.popularity, PlaceJSON.text(p.externalIds), p.timezone,
            p.nameI18n.map(PlaceJSON.text), p.descriptionI18n.map(PlaceJSON.text), p.openingHoursText, p.seasons.map(PlaceJSON.text),
            p.hostedPhotos.map(PlaceJSON.text),
        ]
    }

    /// A place from a row of `columns`; the JSON columns hold its opening hours, photos, external
    /// ids, texts by language and hosted photos (NULL when it has none).
    static func place(_ row: Row) throws -> Place {
        func json<T: Decodable>(_ column: String, _ type: T.Type) throws -> T {
            try JSONCoding.decoder.decode(type, from: Data(row.decode(column, as: String.self).utf8))
        }
        func texts(_ column: String) throws -> [String: String]? {
            try row.decode(column, as: String?.self).map { try JSONCoding.decoder.decode([String: String].self, from: Data($0.utf8)) }
        }
        return try Place(
            id: row.decode("id"), name: row.decode("name"), category: row.decode("category"),
            lat: row.decode("lat"), lon: row.decode("lon"), address: row.decode("address"), phone: row.decode("phone"),
            website: row.decode("website"), priceLevel: row.decode("price_level"), description: row.decode("description"),
            openingHours: json("opening_hours", [OpeningPeriod].self), photos: json("photos", [Photo].self),
            popularity: row.decode("popularity"), externalIds: json("external_ids", [String: String].self),
            createdAt: row.decode("created_at"), updatedAt: row.decode("updated_at"), version: row.decode("version"),
            timezone: row.decode("timezone"), nameI18n: texts("name_i18n"), descriptionI18n: texts("description_i18n"),
            openingHoursText: row.decode("opening_hours_text"),
            seasons: row.decode("seasons", as: String?.self).map { try JSONCoding.decoder.decode([Season].self, from: Data($0.utf8)) },
            hostedPhotos: row.decode("hosted_photos", as: String?.self).map { try JSONCoding.decoder.decode([HostedPhoto].self, from: Data($0.utf8)) })
    }

    /// One snapshot page: places after the id in `after`, as `catalog.place.upserted` events,
    /// then tours (keys `t` and an id), as `catalog.tour.upserted` events, then addresses (keys
    /// `a` and an id), as `catalog.addresses.upserted` events. Places come first, so a follower
    /// has a tour's stops before the tour.
    func snapshot(after: String?, limit: Int) throws -> SnapshotPage {
        if let after, after.hasPrefix("a") {
            let page = try AddressSets.snapshot(db, after: try SnapshotKey.id(after: String(after.dropFirst())), limit: limit)
            return SnapshotPage(events: page.events, next: page.next.map { "a\($0)" })
        }
        if let after, after.hasPrefix("t") {
            let page = try tourSnapshot(after: try SnapshotKey.id(after: String(after.dropFirst())), limit: limit)
            return SnapshotPage(events: page.events, next: SnapshotKey.next(after: page.ids, limit: limit).map { "t" + $0 } ?? "a0")
        }
        let places = try list(category: nil, after: try SnapshotKey.id(after: after), limit: limit)
        let events = try places.map { (type: CatalogEvents.upserted, body: try PlaceJSON.encode($0)) }
        return SnapshotPage(events: events, next: SnapshotKey.next(after: places.map(\.id), limit: limit) ?? "t0")
    }
}

/// The catalog's schema, in order. Never edit a shipped migration: add the next one.
enum CatalogSchema {
    static let migrations: [Migration] = [
        Migration(
            domain: "catalog", version: 1,
            sql: """
                CREATE TABLE categories (
                    id   TEXT PRIMARY KEY,
                    name TEXT NOT NULL
                );
                INSERT INTO categories (id, name) VALUES
                    ('restaurant', 'Restaurants'), ('cafe', 'Cafés'), ('bar', 'Bars and pubs'), ('hotel', 'Hotels'),
                    ('hostel', 'Hostels'), ('attraction', 'Attractions'), ('museum', 'Museums and galleries'),
                    ('park', 'Parks and gardens'), ('beach', 'Beaches'), ('viewpoint', 'Viewpoints'),
                    ('shopping', 'Shopping'), ('market', 'Markets'), ('theatre', 'Theatres and venues'),
                    ('nightlife', 'Nightlife'), ('transport', 'Transport'), ('itinerary', 'Itineraries');
                CREATE TABLE places (
                    id            INTEGER PRIMARY KEY AUTOINCREMENT,
                    name          TEXT NOT NULL,
                    category      TEXT NOT NULL REFERENCES categories(id),
                    lat           REAL NOT NULL CHECK (lat BETWEEN -90 AND 90),
                    lon           REAL NOT NULL CHECK (lon BETWEEN -180 AND 180),
                    address       TEXT,
                    phone         TEXT,
                    website       TEXT,
                    price_level   INTEGER CHECK (price_level BETWEEN 0 AND 4),
                    description   TEXT,
                    opening_hours TEXT NOT NULL DEFAULT '[]',
                    photos        TEXT NOT NULL DEFAULT '[]',
                    popularity    REAL NOT NULL DEFAULT 0,
                    external_ids  TEXT NOT NULL DEFAULT '{}',
                    created_at    TEXT NOT NULL,
                    updated_at    TEXT NOT NULL,
                    version       INTEGER NOT NULL DEFAULT 1
                );
                CREATE INDEX places_by_category ON places(category, id);
                CREATE TABLE place_external_ids (
                    source      TEXT NOT NULL,
                    external_id TEXT NOT NULL,
                    place_id    INTEGER NOT NULL REFERENCES places(id) ON DELETE CASCADE,
                    PRIMARY KEY (source, external_id)
                );
                CREATE INDEX place_external_ids_by_place ON place_external_ids(place_id);
                """),
        Migration(domain: "catalog", version: 2, sql: "ALTER TABLE places ADD COLUMN timezone TEXT"),
        // The place as the JSON replies and events carry (`JSONCoding.encoder` of its `Place`),
        // written with every change of its fields; NULL for rows written before, until first read.
        // A later migration that changes how a place reads must set it back to NULL.
        Migration(domain: "catalog", version: 3, sql: "ALTER TABLE places ADD COLUMN json TEXT"),
        // Tours: ordered routes of places, each place stored once however many tours share it.
        // Deleting a place removes its stops; deleting a tour leaves its places.
        Migration(
            domain: "catalog", version: 4,
            sql: """
                CREATE TABLE tours (
                    id               INTEGER PRIMARY KEY AUTOINCREMENT,
                    name             TEXT NOT NULL,
                    name_i18n        TEXT NOT NULL DEFAULT '{}',
                    description      TEXT,
                    description_i18n TEXT NOT NULL DEFAULT '{}',
                    external_ids     TEXT NOT NULL DEFAULT '{}',
                    created_at       TEXT NOT NULL,
                    updated_at       TEXT NOT NULL,
                    version          INTEGER NOT NULL DEFAULT 1
                );
                CREATE TABLE tour_stops (
                    tour_id  INTEGER NOT NULL REFERENCES tours(id) ON DELETE CASCADE,
                    position INTEGER NOT NULL,
                    place_id INTEGER NOT NULL REFERENCES places(id) ON DELETE CASCADE,
                    PRIMARY KEY (tour_id, position),
                    UNIQUE (tour_id, place_id)
                );
                CREATE INDEX tour_stops_by_place ON tour_stops(place_id);
                CREATE TABLE tour_external_ids (
                    source      TEXT NOT NULL,
                    external_id TEXT NOT NULL,
                    tour_id     INTEGER NOT NULL REFERENCES tours(id) ON DELETE CASCADE,
                    PRIMARY KEY (source, external_id)
                );
                CREATE INDEX tour_external_ids_by_tour ON tour_external_ids(tour_id);
                """),
        // A place's name and description in other languages (JSON objects, NULL when it has
        // none). Its stored JSON stays right: a place without them shows none.
        Migration(
            domain: "catalog", version: 5,
            sql: """
                ALTER TABLE places ADD COLUMN name_i18n TEXT;
                ALTER TABLE places ADD COLUMN description_i18n TEXT;
                """),
        // Tour maps: uploads in chunks, a map per tour (its JPEG, control points and fit), and
        // its tiles, cut in the background. `generation` grows with every map set for a tour, so
        // tiles cut from an older image are never taken for the new one's.
        Migration(
            domain: "catalog", version: 6,
            sql: """
                CREATE TABLE map_uploads (
                    id        TEXT PRIMARY KEY,
                    created_s INTEGER NOT NULL,
                    bytes     INTEGER NOT NULL,
                    chunks    INTEGER NOT NULL,
                    committed INTEGER NOT NULL,
                    width     INTEGER,
                    height    INTEGER
                );
                CREATE TABLE map_upload_chunks (
                    upload_id TEXT NOT NULL REFERENCES map_uploads(id) ON DELETE CASCADE,
                    seq       INTEGER NOT NULL,
                    data      BLOB NOT NULL,
                    PRIMARY KEY (upload_id, seq)
                );
                CREATE TABLE tour_maps (
                    tour_id      INTEGER PRIMARY KEY REFERENCES tours(id) ON DELETE CASCADE,
                    generation   INTEGER NOT NULL,
                    jpeg         BLOB NOT NULL,
                    width        INTEGER NOT NULL,
                    height       INTEGER NOT NULL,
                    points       TEXT NOT NULL,
                    georeference TEXT NOT NULL,
                    tiles_ready  INTEGER NOT NULL,
                    updated_at   TEXT NOT NULL
                );
                CREATE INDEX tour_maps_to_cut ON tour_maps(tiles_ready, tour_id);
                CREATE TABLE tour_map_tiles (
                    tour_id    INTEGER NOT NULL REFERENCES tour_maps(tour_id) ON DELETE CASCADE,
                    generation INTEGER NOT NULL,
                    z INTEGER NOT NULL, x INTEGER NOT NULL, y INTEGER NOT NULL,
                    jpeg       BLOB NOT NULL,
                    PRIMARY KEY (tour_id, z, x, y)
                );
                """),
        // Walking tours: per user and tour (one row at most), the visited place ids in tour
        // order (JSON) and the last position kept for headings. Deleting a tour deletes its rows;
        // `social.user.deleted` deletes a user's.
        Migration(
            domain: "catalog", version: 7,
            sql: """
                CREATE TABLE tour_progress (
                    user_id  INTEGER NOT NULL,
                    tour_id  INTEGER NOT NULL REFERENCES tours(id) ON DELETE CASCADE,
                    visited  TEXT NOT NULL,
                    last_lat REAL NOT NULL,
                    last_lon REAL NOT NULL,
                    last_ms  INTEGER NOT NULL,
                    PRIMARY KEY (user_id, tour_id)
                );
                CREATE INDEX tour_progress_by_tour ON tour_progress(tour_id);
                """),
        // Imports: the chunks received (the document under file '', map images under their
        // names) until the import is read, and its state and report for a day. And opening
        // hours kept as a source wrote them when they are not plain weekly periods.
        Migration(
            domain: "catalog", version: 8,
            sql: """
                CREATE TABLE imports (
                    id        TEXT PRIMARY KEY,
                    format    TEXT NOT NULL,
                    dry_run   INTEGER NOT NULL,
                    state     TEXT NOT NULL,
                    created_s INTEGER NOT NULL,
                    bytes     INTEGER NOT NULL,
                    report    TEXT
                );
                CREATE TABLE import_chunks (
                    import_id TEXT NOT NULL REFERENCES imports(id) ON DELETE CASCADE,
                    file      TEXT NOT NULL,
                    seq       INTEGER NOT NULL,
                    data      BLOB NOT NULL,
                    PRIMARY KEY (import_id, file, seq)
                );
                ALTER TABLE places ADD COLUMN opening_hours_text TEXT;
                """),
        // Events, and when a place is on (`seasons`, a JSON array; NULL when it has none). No
        // place has seasons yet, so the stored JSON stays right.
        Migration(
            domain: "catalog", version: 9,
            sql: """
                INSERT INTO categories (id, name) VALUES ('event', 'Events');
                ALTER TABLE places ADD COLUMN seasons TEXT;
                """),
        // Photos the catalog hosts (PlacePhotos.swift): two sizes each, listed in the place's hosted_photos.
        Migration(
            domain: "catalog", version: 10,
            sql: """
                CREATE TABLE place_photos (
                    id           INTEGER PRIMARY KEY AUTOINCREMENT,
                    place_id     INTEGER NOT NULL REFERENCES places(id) ON DELETE CASCADE,
                    width        INTEGER NOT NULL,
                    height       INTEGER NOT NULL,
                    jpeg_1280    BLOB NOT NULL,
                    small_width  INTEGER NOT NULL,
                    small_height INTEGER NOT NULL,
                    jpeg_320     BLOB NOT NULL,
                    created_at   TEXT NOT NULL
                );
                CREATE INDEX place_photos_by_place ON place_photos(place_id, id);
                ALTER TABLE places ADD COLUMN hosted_photos TEXT;
                """),
        // Where each tour stop is (TourStopIndex.swift), kept by triggers through every write
        // of stops and places, so `tours.list near` reads the stops near a point and no others.
        Migration(
            domain: "catalog", version: 11,
            sql: """
                CREATE VIRTUAL TABLE tour_stops_geo USING rtree(id, min_lat, max_lat, min_lon, max_lon, +tour_id INTEGER, +lat REAL, +lon REAL);
                INSERT INTO tour_stops_geo (id, min_lat, max_lat, min_lon, max_lon, tour_id, lat, lon)
                    SELECT s.rowid, p.lat, p.lat, p.lon, p.lon, s.tour_id, p.lat, p.lon FROM tour_stops s JOIN places p ON p.id = s.place_id;
                CREATE TRIGGER tour_stops_geo_added AFTER INSERT ON tour_stops BEGIN
                    INSERT INTO tour_stops_geo (id, min_lat, max_lat, min_lon, max_lon, tour_id, lat, lon)
                        SELECT new.rowid, p.lat, p.lat, p.lon, p.lon, new.tour_id, p.lat, p.lon FROM places p WHERE p.id = new.place_id;
                END;
                CREATE TRIGGER tour_stops_geo_removed AFTER DELETE ON tour_stops BEGIN
                    DELETE FROM tour_stops_geo WHERE id = old.rowid;
                END;
                CREATE TRIGGER tour_stops_geo_changed AFTER UPDATE OF tour_id, place_id ON tour_stops BEGIN
                    DELETE FROM tour_stops_geo WHERE id = old.rowid;
                    INSERT INTO tour_stops_geo (id, min_lat, max_lat, min_lon, max_lon, tour_id, lat, lon)
                        SELECT new.rowid, p.lat, p.lat, p.lon, p.lon, new.tour_id, p.lat, p.lon FROM places p WHERE p.id = new.place_id;
                END;
                CREATE TRIGGER tour_stops_geo_moved AFTER UPDATE OF lat, lon ON places
                WHEN new.lat IS NOT old.lat OR new.lon IS NOT old.lon BEGIN
                    UPDATE tour_stops_geo SET min_lat = new.lat, max_lat = new.lat, min_lon = new.lon, max_lon = new.lon, lat = new.lat, lon = new.lon
                    WHERE id IN (SELECT rowid FROM tour_stops WHERE place_id = new.id);
                END;
                """),
        // The import being written in slices (ImportApply.swift): the ids set aside for its new
        // places and tours (`lo` to `hi`, none when hi < lo), which reads skip until it is done,
        // and how far its events have gone out.
        Migration(
            domain: "catalog", version: 12,
            sql: """
                CREATE TABLE import_applying (
                    import_id  TEXT PRIMARY KEY,
                    phase      TEXT NOT NULL CHECK (phase IN ('hidden', 'publishing', 'rollback')),
                    places_lo  INTEGER NOT NULL,
                    places_hi  INTEGER NOT NULL,
                    tours_lo   INTEGER NOT NULL,
                    tours_hi   INTEGER NOT NULL,
                    next_place INTEGER NOT NULL,
                    next_tour  INTEGER NOT NULL
                );
                """),
    ]
}
