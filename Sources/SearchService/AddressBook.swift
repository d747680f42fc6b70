import Bus
import Contracts
import Foundation
import Geo
import ServiceKit
import Storage
import Synchronization

// Search's copy of the catalog's addresses (Protocols/search.md, "Addresses"): the catalog's
// address events are applied to `geo_addresses` with the place events, and a thread of its own
// builds the geocoder's index (GeoIndex.swift) from the table whenever it changed. The old
// index answers until the new one replaces it.

/// The geocoder an instance answers from, shared by its threads.
public final class AddressBook: Sendable {
    private let built = Mutex<(index: GeoIndex, fingerprint: [Int64])?>(nil)
    /// Woken after a transaction that applied address events commits.
    let signal = BackgroundSignal()
    private let applied = Atomic<Bool>(false)
    /// How often the table is looked at anyway.
    static let idleMilliseconds = 60_000

    public init() {}

    var index: GeoIndex? { built.withLock { $0?.index } }

    static let migrations: [Migration] = [
        Migration(
            domain: "addresses", version: 1,
            sql: """
                CREATE TABLE geo_addresses (
                    id          INTEGER PRIMARY KEY,
                    set_id      INTEGER NOT NULL,
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
                CREATE INDEX geo_addresses_by_set ON geo_addresses(set_id);
                CREATE TABLE geo_address_sets (
                    set_id INTEGER PRIMARY KEY,
                    total  INTEGER NOT NULL
                );
                """)
    ]

    // MARK: Events

    /// A snapshot merge's key of an address set: below every place's and tour's key.
    static func mergeKey(set: Int64) -> Int64 { Int64.min + set }
    static func isMergeKey(_ key: Int64) -> Bool { key < Int64.min / 2 }
    /// The merge keys of the sets held, as SQL (SQLite reads -9223372036854775808 as a real).
    static let mergeKeys = "SELECT set_id + (-9223372036854775807 - 1) FROM geo_address_sets"

    func apply(_ batch: AddressBatch, _ scope: EventScope) throws {
        guard batch.setId > 0 else { throw ServiceError.invalid("set_id", "must be 1 or more") }
        try scope.named(Self.mergeKey(set: batch.setId))
        try scope.db.run("INSERT OR REPLACE INTO geo_address_sets (set_id, total) VALUES (?, ?)", batch.setId, batch.total)
        for a in batch.addresses {
            let names = try a.names.map { String(decoding: try JSONCoding.encoder.encode($0), as: UTF8.self) }
            try scope.db.run(
                """
                INSERT OR REPLACE INTO geo_addresses (id, set_id, kind, osm, housenumber, street, postcode, area, city, names, lat, lon)
                VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
                """,
                a.id, batch.setId, a.kind.rawValue, a.osm, a.housenumber, a.street, a.postcode, a.area, a.city, names, a.lat, a.lon)
        }
        applied.store(true, ordering: .relaxed)
    }

    func remove(set: Int64, _ db: Database) throws {
        guard set > 0 else { throw ServiceError.invalid("set_id", "must be 1 or more") }
        try db.run("DELETE FROM geo_addresses WHERE set_id = ?", set)
        try db.run("DELETE FROM geo_address_sets WHERE set_id = ?", set)
        applied.store(true, ordering: .relaxed)
    }

    /// After a transaction of the catalog's events: a committed one that changed addresses wakes the build.
    func settled(committed: Bool) {
        if applied.exchange(false, ordering: .relaxed), committed { signal.wake() }
    }

    // MARK: Building

    /// A point off the Earth is no address (the catalog sends none; a copy does not trust it).
    static let onEarth = "WHERE lat BETWEEN -90 AND 90 AND lon BETWEEN -180 AND 180"

    func work() -> BackgroundWork {
        BackgroundWork(name: "addresses", signal: signal, idleMilliseconds: Self.idleMilliseconds) { [self] db, signal, context in
            try buildIfChanged(db, logger: context.logger)
            return false
        }
    }

    /// Builds the index anew when the table is not what it was built from, and holds every set
    /// whole: while a new set's batches are still coming (after those of the sets it replaced
    /// went), the old index answers.
    func buildIfChanged(_ db: Database, logger: Logger) throws {
        let partial =
            try db.scalarInt(
                """
                SELECT count(*) FROM geo_address_sets s
                WHERE s.total > (SELECT count(*) FROM geo_addresses a WHERE a.set_id = s.set_id)
                """) ?? 0
        guard partial == 0 else { return }
        guard let row = try db.queryOne("SELECT count(*) AS n, coalesce(max(id), 0) AS top, coalesce(sum(set_id), 0) AS sets FROM geo_addresses")
        else { return }
        let fingerprint: [Int64] = [try row.decode("n"), try row.decode("top"), try row.decode("sets")]
        guard built.withLock({ $0?.fingerprint }) != fingerprint else { return }
        let started = monotonicNanos()
        var entries: [Address] = []
        for row in try db.query("SELECT id, kind, osm, housenumber, street, postcode, area, city, names, lat, lon FROM geo_addresses \(Self.onEarth) ORDER BY id") {
            let names = try row.decode("names", as: String?.self).map { try JSONCoding.decoder.decode([String: String].self, from: Data($0.utf8)) }
            entries.append(
                Address(
                    id: try row.decode("id"), kind: Address.Kind(rawValue: try row.decode("kind")) ?? .house, osm: try row.decode("osm"),
                    housenumber: try row.decode("housenumber"), street: try row.decode("street"), postcode: try row.decode("postcode"),
                    area: try row.decode("area"), city: try row.decode("city"), names: names, lat: try row.decode("lat"), lon: try row.decode("lon")))
        }
        let index = GeoIndex(entries)
        built.withLock { $0 = (index, fingerprint) }
        logger.info("addresses indexed", ["entries": entries.count, "words": index.vocabulary.count, "ms": (monotonicNanos() - started) / 1_000_000])
    }

    // MARK: Queries

    /// `geo.search`.
    func search(_ query: GeoSearchQuery) throws -> GeoHits {
        let limit = try PageLimit.geoHits.validated(query.limit)
        // The text is read first: a query of punctuation is refused whether addresses are loaded or not.
        let words = try GeoIndex.queryWords(query.q)
        guard let index else { return GeoHits(hits: []) }
        let found = index.search(words, unfinished: GeoIndex.endsInWord(query.q), near: query.near?.coordinate, limit: limit)
        return GeoHits(hits: found.map { hit($0.entry, distance: $0.distance, index: index, lang: query.lang) })
    }

    /// `geo.reverse`.
    func reverse(_ query: GeoReverseQuery) throws -> GeoReverse {
        let point = Coordinate(uncheckedLatitude: query.lat, longitude: query.lon)
        guard let index, let nearest = index.nearest(point) else {
            throw ServiceError(.notFound, "no house address lies within \(Int(GeoIndex.reverseReach / 1000)) km", field: "lat")
        }
        return GeoReverse(address: hit(nearest.entry, distance: nearest.distance, index: index, lang: query.lang))
    }

    private func hit(_ entry: Address, distance: Double?, index: GeoIndex, lang: LanguagePreference?) -> GeoHit {
        // Only the languages asked: the `en` a chain ends with is not asked for unless it is all.
        func local(_ name: String?) -> String? {
            guard let lang, let name, let names = index.localNames[GeoIndex.nameKey(name, city: entry.city)] else { return nil }
            let asked = lang.chain.count > 1 ? lang.chain.dropLast() : lang.chain[...]
            return asked.lazy.compactMap { names[$0] }.first
        }
        let street = local(entry.street)
        let area = local(entry.area)
        return GeoHit(
            kind: entry.kind, label: entry.label(street: street, area: area), lat: entry.lat, lon: entry.lon, housenumber: entry.housenumber,
            street: street ?? entry.street, postcode: entry.postcode, area: area ?? entry.area, city: entry.city, osm: entry.osm,
            distanceM: distance.map { ($0 * 10).rounded() / 10 })
    }
}
