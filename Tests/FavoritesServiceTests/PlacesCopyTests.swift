import Bus
import Contracts
import Foundation
import ServiceCore
import ServiceKit
import Storage
import Testing
import TestSupport
@testable import FavoritesService

/// The copy of the catalog's places that favorites keeps, driven event by event on its own
/// database file, as the subscriber drives it.
@Suite struct PlacesCopyTests {
    let folder = TemporaryFolder("places-copy")
    let db: Database

    init() throws {
        db = try Database(path: folder.path + "/favorites.sqlite")
        // A deletion reads the visited lists and who is discoverable (`favorites.unvisited`).
        try db.migrate(OutboxSchema.migrations + Places.migrations + Lists.migrations + Visits.migrations)
    }

    func apply(_ type: String, _ body: String, seq: Int64 = 1) throws {
        let event = try ReceivedEvent(envelope: EnvelopeCoding.event(seq: seq, type: type, ts: "2026-12-01T00:00:00.000Z", epoch: "e", body: Data(body.utf8)))
        try db.transaction { try Places.catalogApplier.apply(event, EventScope(db: db)) }
    }

    func upsert(_ id: Int, _ name: String, version: Int, lat: Double = -33.86, lon: Double = 151.21) throws {
        try apply(CatalogEvents.upserted, #"{"id":\#(id),"name":"\#(name)","category":"cafe","lat":\#(lat),"lon":\#(lon),"address":"1 \#(name) St","opening_hours":[],"photos":[],"popularity":0,"external_ids":{},"created_at":"x","updated_at":"x","version":\#(version)}"#)
    }

    func names() throws -> [String] { try db.query("SELECT name FROM places ORDER BY id").decode("name", as: String.self) }
    func geoCount() throws -> Int64 { try db.scalarInt("SELECT count(*) FROM places_geo") ?? -1 }

    @Test func aLaterVersionReplacesAnEarlierOneAndNeverTheOtherWay() throws {
        try upsert(1, "First", version: 2)
        try upsert(1, "Older", version: 1)
        #expect(try names() == ["First"])
        try upsert(1, "Moved", version: 3, lat: -33.9, lon: 151.0)
        #expect(try names() == ["Moved"])
        let box = try db.queryOne("SELECT min_lat, min_lon FROM places_geo WHERE id = 1")
        #expect(try box?.decode("min_lat", as: Int64.self) == -339_000_000 && box?.decode("min_lon", as: Int64.self) == 1_510_000_000)
    }

    @Test func aDeletedPlaceStaysDeletedWhateverArrivesLate() throws {
        try upsert(1, "Cafe", version: 1)
        try apply(CatalogEvents.deleted, #"{"id":1}"#)
        #expect(try names().isEmpty && geoCount() == 0)
        // A catalog.get answer fetched before the deletion, stored after it.
        try Places.upsert(PlaceSummary(id: 1, name: "Cafe", category: "cafe", lat: -33.86, lon: 151.21), version: 1, db)
        try upsert(1, "Cafe", version: 2)
        #expect(try names().isEmpty && geoCount() == 0)
    }

    @Test func aRebuildKeepsTheSnapshotsPlacesAndSweepsTheRest() throws {
        try upsert(1, "Kept", version: 1)
        try upsert(2, "Deleted meanwhile", version: 1)
        try upsert(3, "Updated meanwhile", version: 1)
        // What the subscriber does with a snapshot: reset, the snapshot's items, then the sweep.
        try db.transaction { try Places.catalogApplier.reset(db) }
        #expect(try names() == ["Kept", "Deleted meanwhile", "Updated meanwhile"], "a reset alone removes nothing")
        try upsert(1, "Kept", version: 1)
        try upsert(3, "Updated", version: 2)
        try db.transaction { try Places.catalogApplier.finishBulk?(db) }
        #expect(try names() == ["Kept", "Updated"] && geoCount() == 2)
        #expect(try db.scalarInt("SELECT count(*) FROM places_gone WHERE id = 2") == 1)
        // The sweep at a later start finds nothing stale.
        try db.transaction { try Places.catalogApplier.finishBulk?(db) }
        #expect(try names() == ["Kept", "Updated"])
    }
}
