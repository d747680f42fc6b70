import Bus
import ContentImport
import Contracts
import Foundation
import ServiceKit
import Storage

// The addresses of OSM imports (Protocols/catalog.md, "Addresses"): an import that is not a
// dry run keeps what its file holds of houses, streets, areas and postcodes as one set, which
// replaces the sets at least half of whose elements it has. Each change goes
// out as events in the import's own transaction: `catalog.addresses.removed` for each set
// replaced, then the new set's addresses in batches; `sys.snapshot` pages them after the tours.

/// The addresses an import planned, waiting for the import to be written.
struct PlannedAddresses: Sendable {
    var addresses: [OSMAddress]

    init?(_ addresses: [OSMAddress]) {
        guard !addresses.isEmpty else { return nil }
        self.addresses = addresses
    }
}

enum AddressSets {
    static let migrations: [Migration] = [
        Migration(
            domain: "addresses", version: 1,
            sql: """
                CREATE TABLE address_sets (
                    id         INTEGER PRIMARY KEY AUTOINCREMENT,
                    import_id  TEXT NOT NULL,
                    created_at TEXT NOT NULL
                );
                CREATE TABLE addresses (
                    id          INTEGER PRIMARY KEY AUTOINCREMENT,
                    set_id      INTEGER NOT NULL REFERENCES address_sets(id),
                    kind        TEXT NOT NULL,
                    osm         TEXT,
                    housenumber TEXT,
                    street      TEXT,
                    postcode    TEXT,
                    area        TEXT,
                    city        TEXT,
                    names       TEXT,
                    lat         REAL NOT NULL,
                    lon         REAL NOT NULL
                );
                CREATE INDEX addresses_by_set ON addresses(set_id);
                """)
    ]

    /// Keeps an import's addresses, in the import's own transaction, with their events. The new
    /// set replaces each set at least half of whose elements (by OpenStreetMap id) it has: the
    /// same extract again, a newer one, or a larger one around it; an import elsewhere, or of a
    /// few elements that span the world, replaces nothing.
    static func write(_ planned: PlannedAddresses, importId: String, db: Database, worker: ServiceWorker) throws {
        try db.run("CREATE TEMP TABLE IF NOT EXISTS incoming_osm (osm TEXT PRIMARY KEY)")
        try db.run("DELETE FROM temp.incoming_osm")
        for osm in Set(planned.addresses.compactMap(\.osm)) { try db.run("INSERT INTO temp.incoming_osm (osm) VALUES (?)", osm) }
        let replaced = try db.query(
            """
            SELECT set_id FROM addresses WHERE osm IS NOT NULL GROUP BY set_id
            HAVING 2 * sum(osm IN (SELECT osm FROM temp.incoming_osm)) >= count(*) ORDER BY set_id
            """
        ).map { row throws -> Int64 in try row.decode("set_id") }
        try db.run("DELETE FROM temp.incoming_osm")
        for id in replaced {
            try db.run("DELETE FROM addresses WHERE set_id = ?", id)
            try db.run("DELETE FROM address_sets WHERE id = ?", id)
            try worker.emit(AddressEvents.removed, AddressSetRemoved(setId: id))
        }
        try db.run("INSERT INTO address_sets (import_id, created_at) VALUES (?, ?)", importId, Logger.timestamp())
        let setId = try db.scalarInt("SELECT last_insert_rowid()") ?? 0
        let total = planned.addresses.count
        var batch: [Address] = []
        for address in planned.addresses {
            let names = address.names.isEmpty ? nil : String(decoding: try JSONCoding.encoder.encode(address.names), as: UTF8.self)
            try db.run(
                """
                INSERT INTO addresses (set_id, kind, osm, housenumber, street, postcode, area, city, names, lat, lon)
                VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
                """,
                setId, address.kind.rawValue, address.osm, address.housenumber, address.street, address.postcode, address.area, address.city, names,
                address.lat, address.lon)
            let id = try db.scalarInt("SELECT last_insert_rowid()") ?? 0
            batch.append(
                Address(
                    id: id, kind: Address.Kind(rawValue: address.kind.rawValue) ?? .house, osm: address.osm, housenumber: address.housenumber,
                    street: address.street, postcode: address.postcode, area: address.area, city: address.city,
                    names: address.names.isEmpty ? nil : address.names, lat: address.lat, lon: address.lon))
            if batch.count == AddressBatch.maxAddresses {
                try worker.emit(AddressEvents.upserted, AddressBatch(setId: setId, total: total, addresses: batch))
                batch = []
            }
        }
        if !batch.isEmpty { try worker.emit(AddressEvents.upserted, AddressBatch(setId: setId, total: total, addresses: batch)) }
    }

    /// Address events of one snapshot page, at most: a page stays far below a reply's 4 MiB.
    static let snapshotEvents = 4

    /// One snapshot page of addresses after the id `after`: up to `limit` (and
    /// `snapshotEvents`) events of up to `AddressBatch.maxAddresses` each (a batch holds one
    /// set's); nil `next` at the end.
    static func snapshot(_ db: Database, after: Int64, limit requested: Int) throws -> (events: [(type: String, body: Data)], next: Int64?) {
        let limit = min(max(requested, 1), snapshotEvents)
        let wanted = limit * AddressBatch.maxAddresses
        let rows = try db.query(
            "SELECT id, set_id, kind, osm, housenumber, street, postcode, area, city, names, lat, lon FROM addresses WHERE id > ? ORDER BY id LIMIT ?",
            after, wanted)
        var events: [(type: String, body: Data)] = []
        var batch = AddressBatch(setId: 0, total: 0, addresses: [])
        var totals: [Int64: Int] = [:]
        func flush() throws {
            guard !batch.addresses.isEmpty else { return }
            events.append((AddressEvents.upserted, try JSONCoding.encoder.encode(batch)))
            batch.addresses = []
        }
        var last: Int64 = after
        for row in rows {
            let setId: Int64 = try row.decode("set_id")
            // A page ends at `limit` events: the rest waits for the next page.
            if setId != batch.setId || batch.addresses.count == AddressBatch.maxAddresses {
                try flush()
                if events.count == limit { return (events, last) }
                batch.setId = setId
                if totals[setId] == nil { totals[setId] = try db.scalarInt("SELECT count(*) FROM addresses WHERE set_id = ?", setId).map(Int.init) ?? 0 }
                batch.total = totals[setId] ?? 0
            }
            let names = try row.decode("names", as: String?.self).map { try JSONCoding.decoder.decode([String: String].self, from: Data($0.utf8)) }
            let id: Int64 = try row.decode("id")
            batch.addresses.append(
                Address(
                    id: id, kind: Address.Kind(rawValue: try row.decode("kind")) ?? .house, osm: try row.decode("osm"),
                    housenumber: try row.decode("housenumber"), street: try row.decode("street"), postcode: try row.decode("postcode"),
                    area: try row.decode("area"), city: try row.decode("city"), names: names, lat: try row.decode("lat"), lon: try row.decode("lon")))
            last = id
        }
        try flush()
        return (events, rows.count == wanted ? last : nil)
    }
}
