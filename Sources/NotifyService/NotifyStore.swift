import Bus
import Contracts
import Foundation
import Geo
import ServiceKit
import Storage

/// One stored annotation, as read back from the `annotations` table.
struct StoredAnnotation {
    let id: Int64
    let userId: Int64
    let point: Coordinate
    let values: [String: String]
    let text: String?
    let createdAt: Int64

    /// What the alert rules need of it.
    var rules: AlertAnnotation { AlertAnnotation(id: id, authorId: userId, point: point, createdAt: createdAt) }

    /// As clients get it, with `distance_m` when it is an alert.
    func wire(distanceM: Double? = nil) -> AnnotationJSON {
        AnnotationJSON(
            id: id, lat: point.latitude, lon: point.longitude, values: values, text: text, userId: userId,
            createdAt: Logger.timestamp(NotifyStore.date(createdAt)),
            expiresAt: Logger.timestamp(NotifyStore.date(AlertRules.expiresAt(createdAt: createdAt))), distanceM: distanceM)
    }
}

/// The notify service's tables and the queries over them, on one worker thread's connection.
/// Annotations, settings and alerts each add their part in their own file.
public final class NotifyStore: ServiceState, AdmitsCallers {
    public let worker: ServiceWorker
    let options: NotifyOptions
    var db: Database { worker.db }
    /// The form last read, by version, so a thread parses a stored form once.
    var cachedForm: AnnotationForm?
    /// Users erased a moment ago, whose late requests are refused (shared by all threads).
    let erased: RecentlyErased

    init(worker: ServiceWorker, options: NotifyOptions, erased: RecentlyErased) {
        self.worker = worker
        self.options = options
        self.erased = erased
    }

    /// The service clock, in milliseconds since 1970.
    var now: Int64 { options.clock() }

    /// A time in milliseconds as a `Date`.
    static func date(_ ms: Int64) -> Date { Date(timeIntervalSince1970: Double(ms) / 1000) }

    /// Refuses (`unauthenticated`) a caller whose user was erased a moment ago: a request
    /// signed in before the deletion, arriving after it (in a write, this runs in its
    /// transaction, so it cannot make a row of the user again). Notify keeps no users of its own.
    public func admit(_ caller: Caller) throws -> Caller {
        try erased.refuse(caller.id, now: now)
        return caller
    }

    /// A point from a request's `lat` and `lon`: `invalid_argument` naming the one out of range.
    static func coordinate(_ lat: Double, _ lon: Double) throws(ServiceError) -> Coordinate {
        do {
            return try Coordinate(latitude: lat, longitude: lon)
        } catch {
            throw error.serviceError
        }
    }

    // MARK: Geometry

    /// The R*Tree holds degrees times this, as 32-bit integers (as SearchService does).
    static let scale = 1e7

    /// The R*Tree's integer cell of a point.
    static func cell(_ point: Coordinate) -> (lat: Int64, lon: Int64) {
        (Int64((point.latitude * scale).rounded()), Int64((point.longitude * scale).rounded()))
    }

    static let annotationColumns = "a.id, a.user_id, a.lat, a.lon, a.values_json, a.text, a.created_at_ms"

    /// An annotation from a row of `annotationColumns`.
    static func annotation(_ row: Row) throws -> StoredAnnotation {
        let valuesJSON = try row.decode("values_json", as: String.self)
        let values = try JSONCoding.decoder.decode([String: String].self, from: Data(valuesJSON.utf8))
        return StoredAnnotation(
            id: try row.decode("id"), userId: try row.decode("user_id"),
            point: Coordinate(uncheckedLatitude: try row.decode("lat"), longitude: try row.decode("lon")),
            values: values, text: try row.decode("text", as: String?.self), createdAt: try row.decode("created_at_ms"))
    }

    /// Each row of `columns` (`a.` the annotation, and its `lat` and `lon` among them) of a
    /// live annotation (not purged at `now`) whose point lies in `box`, edges included, with
    /// that point; an annotation on the 180th meridian may come twice.
    private func forEachLive(in box: BoundingBox, now: Int64, columns: String, _ take: (Row, Coordinate) throws -> Void) throws {
        for area in box.indexAreas {
            let bounds: [(any SQLBindable)?] = [
                Int64((area.south * Self.scale).rounded(.down)), Int64((area.north * Self.scale).rounded(.up)),
                Int64((area.west * Self.scale).rounded(.down)), Int64((area.east * Self.scale).rounded(.up)),
            ]
            try db.forEachRow(
                """
                SELECT \(columns) FROM annotations_geo g JOIN annotations a ON a.id = g.id
                WHERE g.min_lat >= ? AND g.max_lat <= ? AND g.min_lon >= ? AND g.max_lon <= ? AND a.created_at_ms >= ?
                """, bounds + [AlertRules.purgeHorizon(now: now)]
            ) { row in
                let point = Coordinate(uncheckedLatitude: try row.decode("lat"), longitude: try row.decode("lon"))
                if box.contains(point) { try take(row, point) }
            }
        }
    }

    /// The live annotations' points within `range` metres of `center`, nearest first (the
    /// index's `nearest_first`; the R*Tree is read first, as `CROSS JOIN` makes SQLite do),
    /// each handed to `take` until it answers false.
    func livePointsNearestFirst(
        _ center: Coordinate, range: (from: Double, to: Double), now: Int64, _ take: (Int64, Coordinate) throws -> Bool
    ) throws {
        try db.stepWhile(
            """
            SELECT a.id, a.lat, a.lon FROM annotations_geo g CROSS JOIN annotations a ON a.id = g.id
            WHERE g.id MATCH nearest_first(?, ?, ?, ?, ?) AND a.created_at_ms >= ?
            """, [center.latitude, center.longitude, Self.scale, range.from, range.to, AlertRules.purgeHorizon(now: now)]
        ) { row in try take(row.int64(0), Coordinate(uncheckedLatitude: row.double(1), longitude: row.double(2))) }
    }

    /// The live annotations whose point lies in `box`, edges included, by id.
    func liveAnnotations(in box: BoundingBox, now: Int64) throws -> [StoredAnnotation] {
        var found: [Int64: StoredAnnotation] = [:]
        try forEachLive(in: box, now: now, columns: Self.annotationColumns) { row, _ in
            let annotation = try Self.annotation(row)
            found[annotation.id] = annotation
        }
        return found.values.sorted { $0.id < $1.id }
    }

    /// The live annotations within `radius` metres of `center`, by id.
    func liveAnnotations(near center: Coordinate, radius: Double, now: Int64) throws -> [StoredAnnotation] {
        let box = try BoundingBox.around(center, radiusMeters: radius)
        return try liveAnnotations(in: box, now: now).filter { center.distance(to: $0.point) <= radius }
    }

    /// The ids and points of the live annotations in `box` (nothing else read: a page of a list
    /// reads whole only the annotations it shows).
    func livePoints(in box: BoundingBox, now: Int64) throws -> [Int64: Coordinate] {
        var found: [Int64: Coordinate] = [:]
        try forEachLive(in: box, now: now, columns: "a.id, a.lat, a.lon") { row, point in found[try row.decode("id")] = point }
        return found
    }

    /// What the alert rules need of the live annotations within `radius` metres of `center`
    /// (no values or text read: a report may have thousands in reach).
    func alertAnnotations(near center: Coordinate, radius: Double, now: Int64) throws -> [Int64: AlertAnnotation] {
        let box = try BoundingBox.around(center, radiusMeters: radius)
        var found: [Int64: AlertAnnotation] = [:]
        try forEachLive(in: box, now: now, columns: "a.id, a.user_id, a.lat, a.lon, a.created_at_ms") { row, point in
            guard center.distance(to: point) <= radius else { return }
            let id: Int64 = try row.decode("id")
            found[id] = AlertAnnotation(id: id, authorId: try row.decode("user_id"), point: point, createdAt: try row.decode("created_at_ms"))
        }
        return found
    }

    /// The live annotation `id`, or nil.
    func liveAnnotation(_ id: Int64, now: Int64) throws -> StoredAnnotation? {
        try db.queryOne(
            "SELECT \(Self.annotationColumns) FROM annotations a WHERE a.id = ? AND a.created_at_ms >= ?",
            id, AlertRules.purgeHorizon(now: now)
        ).map(Self.annotation)
    }
}

/// The notify service's schema, in order. Never edit a shipped migration: add the next one.
///
/// Times are integer milliseconds since 1970 (`_ms`), so every bound of the alert rules is
/// exact. The R*Trees hold degrees times 10^7 as 32-bit integers.
enum NotifySchema {
    static let migrations: [Migration] = [
        Migration(
            domain: "notify", version: 1,
            sql: """
                CREATE TABLE form (
                    id            INTEGER PRIMARY KEY CHECK (id = 1),
                    version       INTEGER NOT NULL,
                    json          TEXT NOT NULL,
                    updated_at_ms INTEGER NOT NULL
                );
                CREATE TABLE annotations (
                    id            INTEGER PRIMARY KEY AUTOINCREMENT,
                    user_id       INTEGER NOT NULL,
                    lat           REAL NOT NULL,
                    lon           REAL NOT NULL,
                    values_json   TEXT NOT NULL,
                    text          TEXT,
                    created_at_ms INTEGER NOT NULL
                );
                CREATE INDEX annotations_by_time ON annotations(created_at_ms);
                CREATE VIRTUAL TABLE annotations_geo USING rtree_i32(id, min_lat, max_lat, min_lon, max_lon);
                CREATE TABLE settings (
                    user_id        INTEGER PRIMARY KEY,
                    alerts         INTEGER NOT NULL,
                    radius_m       INTEGER NOT NULL,
                    timezone       TEXT NOT NULL,
                    app_timer_min  INTEGER,
                    idle_timer_min INTEGER
                );
                CREATE TABLE judged (
                    user_id INTEGER PRIMARY KEY,
                    at_ms   INTEGER NOT NULL,
                    number  INTEGER NOT NULL
                );
                CREATE TABLE pairs (
                    user_id       INTEGER NOT NULL,
                    annotation_id INTEGER NOT NULL REFERENCES annotations(id) ON DELETE CASCADE,
                    state         TEXT NOT NULL CHECK (state IN ('seen', 'waiting')),
                    disarmed_by   INTEGER NOT NULL,
                    PRIMARY KEY (user_id, annotation_id)
                );
                CREATE INDEX pairs_by_annotation ON pairs(annotation_id);
                CREATE TABLE zones (
                    id      INTEGER PRIMARY KEY AUTOINCREMENT,
                    user_id INTEGER NOT NULL,
                    lat     REAL NOT NULL,
                    lon     REAL NOT NULL,
                    at_ms   INTEGER NOT NULL,
                    report  INTEGER NOT NULL
                );
                CREATE INDEX zones_by_time ON zones(at_ms);
                CREATE VIRTUAL TABLE zones_geo USING rtree_i32(id, min_lat, max_lat, min_lon, max_lon);
                CREATE TABLE inbox (
                    id            INTEGER PRIMARY KEY AUTOINCREMENT,
                    user_id       INTEGER NOT NULL,
                    annotation_id INTEGER NOT NULL,
                    at_ms         INTEGER NOT NULL,
                    alert_json    TEXT NOT NULL,
                    created_at_ms INTEGER NOT NULL
                );
                CREATE INDEX inbox_by_user ON inbox(user_id, id);
                CREATE INDEX inbox_by_time ON inbox(created_at_ms);
                """),
        // What changed, for annotations.sync: each submit, deletion and purge in order, where
        // it was (a sync of a box hears of deletions in it), kept `NotifyStore.changeRetentionMs`.
        Migration(
            domain: "notify", version: 2,
            sql: """
                CREATE TABLE changes (
                    seq           INTEGER PRIMARY KEY AUTOINCREMENT,
                    annotation_id INTEGER NOT NULL,
                    lat           REAL NOT NULL,
                    lon           REAL NOT NULL,
                    deleted       INTEGER NOT NULL CHECK (deleted IN (0, 1)),
                    at_ms         INTEGER NOT NULL
                );
                CREATE INDEX changes_by_time ON changes(at_ms);
                CREATE TABLE trimmed (
                    id      INTEGER PRIMARY KEY CHECK (id = 1),
                    through INTEGER NOT NULL
                );
                INSERT INTO changes (annotation_id, lat, lon, deleted, at_ms) SELECT id, lat, lon, 0, created_at_ms FROM annotations ORDER BY id;
                """),
        // Annotations imported from another system keep its id, so a second import of one changes nothing.
        Migration(
            domain: "notify", version: 3,
            sql: """
                ALTER TABLE annotations ADD COLUMN external_id TEXT;
                CREATE UNIQUE INDEX annotations_by_external_id ON annotations(external_id) WHERE external_id IS NOT NULL;
                """),
        // What one user may do: annotations counted by author and time, reports by when they were judged.
        Migration(
            domain: "notify", version: 4,
            sql: """
                CREATE INDEX annotations_by_user ON annotations(user_id, created_at_ms);
                ALTER TABLE judged ADD COLUMN judged_at_ms INTEGER NOT NULL DEFAULT 0;
                """),
    ]
}
