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
        try db.migrate(OutboxSchema.migrations + CursorSchema.migrations + Places.migrations + Lists.migrations + Visits.migrations)
    }

    func event(_ type: String, _ body: String, seq: Int64 = 1) throws -> ReceivedEvent {
        try ReceivedEvent(envelope: EnvelopeCoding.event(seq: seq, type: type, ts: "2026-12-01T00:00:00.000Z", epoch: "e", body: Data(body.utf8)))
    }

    func apply(_ type: String, _ body: String, seq: Int64 = 1) throws {
        let event = try event(type, body, seq: seq)
        try db.transaction { try Places.catalogApplier.apply(event, EventScope(db: db)) }
    }

    func upserted(_ id: Int, _ name: String, version: Int, lat: Double = -33.86, lon: Double = 151.21) -> String {
        #"{"id":\#(id),"name":"\#(name)","category":"cafe","lat":\#(lat),"lon":\#(lon),"address":"1 \#(name) St","opening_hours":[],"photos":[],"popularity":0,"external_ids":{},"created_at":"x","updated_at":"x","version":\#(version)}"#
    }

    func upsert(_ id: Int, _ name: String, version: Int, lat: Double = -33.86, lon: Double = 151.21) throws {
        try apply(CatalogEvents.upserted, upserted(id, name, version: version, lat: lat, lon: lon))
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

    /// A rebuild from the catalog's snapshot, as the subscriber drives it: merged, it keeps the
    /// snapshot's places, removes the others the copy held as it began, and keeps a place
    /// `favorites.add` fetched with `catalog.get` meanwhile (and with it the place's list items).
    @Test func aRebuildKeepsTheSnapshotsPlacesAndWhatWasFetchedMeanwhileAndRemovesTheRest() throws {
        try upsert(1, "Kept", version: 1)
        // An edit a restore of the catalog lost: the snapshot's version 1 replaces it.
        try upsert(5, "Lost edit", version: 4)
        try upsert(2, "Deleted meanwhile", version: 1)
        try upsert(3, "Updated meanwhile", version: 1)
        let options = SubscriptionOptions(source: "catalog", publishEndpoints: [], rpcEndpoints: [], database: DatabaseFile(path: folder.path + "/favorites.sqlite"))
        let store = try SQLiteCursorStore(options: options, applier: Places.catalogApplier, logger: Logger(component: "test", level: .error))
        try store.beginSnapshot()
        try Places.upsert(PlaceSummary(id: 4, name: "Fetched", category: "cafe", lat: -33.86, lon: 151.21), version: 1, db)
        try store.stageSnapshot(
            [try event(CatalogEvents.upserted, upserted(1, "Kept", version: 1)), try event(CatalogEvents.upserted, upserted(3, "Updated", version: 2)),
             try event(CatalogEvents.upserted, upserted(5, "Restored", version: 1))])
        #expect(try store.swapSnapshot(cursor: EventCursor(epoch: "e2", seq: 8), stopping: StopFlag()) == 3)
        #expect(try names() == ["Kept", "Updated", "Fetched", "Restored"] && geoCount() == 4)
        #expect(try db.scalarInt("SELECT count(*) FROM places_gone WHERE id = 2") == 1)
        #expect(try store.loadCursor() == EventCursor(epoch: "e2", seq: 8))
    }
}
