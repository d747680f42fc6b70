import Bus
import ContentImport
import Contracts
import Foundation
import ServiceCore
import ServiceKit
import Storage

// The street networks of OSM imports (Protocols/routing.md): an import that is not a dry run
// keeps its streets, encoded, as one set; a newer set replaces the sets whose bounds lie
// within its own (the same extract imported again, or a larger one); others stay beside it
// (another city). Search fetches them, in chunks, to build its routes.

/// A street network an import planned, encoded, waiting for the import to be written.
struct PlannedStreets: Sendable {
    var bytes: [UInt8]
    var nodes: Int
    var ways: Int
    var bounds: (south: Double, west: Double, north: Double, east: Double)

    init?(_ streets: OSMStreets?) {
        guard let streets, !streets.ways.isEmpty, let bounds = streets.bounds else { return nil }
        self.bytes = streets.encoded()
        self.nodes = streets.nodes.count
        self.ways = streets.ways.count
        self.bounds = bounds
    }
}

enum StreetSets {
    static let migrations: [Migration] = [
        Migration(
            domain: "streets", version: 1,
            sql: """
                CREATE TABLE street_sets (
                    id         INTEGER PRIMARY KEY AUTOINCREMENT,
                    import_id  TEXT NOT NULL,
                    checksum   TEXT NOT NULL,
                    nodes      INTEGER NOT NULL,
                    ways       INTEGER NOT NULL,
                    south      REAL NOT NULL,
                    west       REAL NOT NULL,
                    north      REAL NOT NULL,
                    east       REAL NOT NULL,
                    created_at TEXT NOT NULL,
                    bytes      BLOB NOT NULL
                );
                """)
    ]

    /// Keeps an import's streets, in the import's own transaction, and tells search.
    static func write(_ planned: PlannedStreets, importId: String, db: Database, worker: ServiceWorker) throws {
        let b = planned.bounds
        let replaced = try db.query(
            "SELECT id FROM street_sets WHERE south >= ? AND north <= ? AND west >= ? AND east <= ? ORDER BY id", b.south, b.north, b.west, b.east
        ).map { row throws -> Int64 in try row.decode("id") }
        for id in replaced { try db.run("DELETE FROM street_sets WHERE id = ?", id) }
        try db.run(
            """
            INSERT INTO street_sets (import_id, checksum, nodes, ways, south, west, north, east, created_at, bytes)
            VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
            """,
            importId, StreetSetInfo.checksum(planned.bytes), planned.nodes, planned.ways, b.south, b.west, b.north, b.east, Logger.timestamp(),
            Data(planned.bytes))
        let id = try db.scalarInt("SELECT last_insert_rowid()") ?? 0
        try worker.emit(StreetEvents.changed, StreetSetsChanged(setId: id, removed: replaced))
    }

    static func list(_ db: Database) throws -> StreetSetList {
        let rows = try db.query(
            "SELECT id, checksum, length(bytes) AS size, nodes, ways, south, west, north, east, created_at FROM street_sets ORDER BY id")
        return StreetSetList(
            sets: try rows.map { row in
                StreetSetInfo(
                    id: try row.decode("id"), checksum: try row.decode("checksum"), bytes: try row.decode("size"), nodes: try row.decode("nodes"),
                    ways: try row.decode("ways"), south: try row.decode("south"), west: try row.decode("west"), north: try row.decode("north"),
                    east: try row.decode("east"), createdAt: try row.decode("created_at"))
            })
    }

    static func chunk(_ request: StreetChunkRequest, _ db: Database) throws -> StreetChunk {
        guard let total = try db.scalarInt("SELECT length(bytes) FROM street_sets WHERE id = ?", request.setId) else {
            throw ServiceError(.notFound, "no street network \(request.setId) (a newer import replaced it: list them again)", field: "set_id")
        }
        guard request.offset >= 0, Int64(request.offset) <= total else {
            throw ServiceError.invalid("offset", "must be 0 to \(total), the network's bytes")
        }
        var data = Data()
        try db.forEachStep("SELECT substr(bytes, ?, ?) FROM street_sets WHERE id = ?", [request.offset + 1, StreetChunk.maxBytes, request.setId]) {
            data = $0.blob(0) ?? Data()
        }
        return StreetChunk(setId: request.setId, offset: request.offset, total: Int(total), data: data.base64EncodedString())
    }
}
