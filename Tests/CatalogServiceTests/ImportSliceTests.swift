import Bus
@testable import CatalogService
import Contracts
import Foundation
import Storage
import Testing
import TestSupport

/// A big import is written in slices that readers do not see: every read shows all of it or
/// none, other writes go between the slices, its events follow, and a failure or a restart
/// midway leaves nothing of it (ImportApply.swift). The slices are made tiny here (4 rows a
/// step, a step every 100 ms), so an import of 40 places and 2 tours takes about 3 s.
@Suite struct ImportSliceTests {
    static let count = 40

    static var sliced: CatalogOptions {
        var options = CatalogOptions()
        options.importAtOnceRows = 10
        options.importSliceRows = 4
        options.importStepMilliseconds = 100
        return options
    }

    /// `count` museums in a row east of Sydney's centre, and two tours over them.
    static let file = content()

    /// `file`, its museums named `named`, those of `moving` moved `east` degrees, its two walks
    /// named `walks`.
    static func content(named: String = "Slice", moving: Set<Int> = [], east: Double = 0, walks: [String] = ["Slice walk 0", "Slice walk 1"]) -> String {
        let pois = (0..<count).map { i in
            let lon = String(format: "%.4f", 151.2000 + Double(i) * 0.0005 + (moving.contains(i) ? east : 0))
            return #"<poi id="p\#(i)" category="museum" lat="-33.8600" lon="\#(lon)"><name lang="en">\#(named) \#(i)</name></poi>"#
        }
        let tours = [(0..<20), (20..<count)].enumerated().map { n, stops in
            #"<tour id="t\#(n)"><name lang="en">\#(walks[n])</name>\#(stops.map { #"<stop ref="p\#($0)"/>"# }.joined())</tour>"#
        }
        return """
            <?xml version="1.0" encoding="UTF-8"?>
            <content xmlns="urn:tourbus:content:1" source="slices">
            \((pois + tours).joined(separator: "\n"))
            </content>
            """
    }

    /// What the readers show of the import, each read in turn: all of it (true), none (false),
    /// or a part (nil).
    struct Seen: Equatable, CustomStringConvertible {
        var reads: [String: Bool?] = [:]
        var order: [Bool?] = []

        mutating func read(_ name: String, _ value: Int, all: Int) {
            let shown: Bool? = value == 0 ? false : value == all ? true : nil
            reads[name] = shown
            order.append(shown)
        }

        var none: Bool { order.allSatisfy { $0 == false } }
        var all: Bool { order.allSatisfy { $0 == true } }
        var description: String { reads.sorted { $0.key < $1.key }.map { "\($0.key) \($0.value.map(String.init) ?? "part")" }.joined(separator: ", ") }
    }

    /// Each read once, in turn: `catalog.list`, the category counts, `tours.list`, `tours.list
    /// near`, and `catalog.get`, `tours.get` of the last ids the import takes.
    static func seen(_ catalog: CatalogFixture, lastPlace: Int64, lastTour: Int64) throws -> Seen {
        var seen = Seen()
        seen.read("listed", try catalog.allPlaces().filter { $0.name.hasPrefix("Slice ") }.count, all: count)
        let categories = try #require(try catalog.raw("catalog.categories", "{}")["categories"] as? [[String: Any]])
        seen.read("museums", categories.first { $0["id"] as? String == "museum" }?["count"] as? Int ?? -1, all: count)
        let tours = try #require(try catalog.raw("tours.list", "{}")["tours"] as? [[String: Any]])
        seen.read("tours", tours.filter { ($0["name"] as? String)?.hasPrefix("Slice walk") == true }.count, all: 2)
        let near = try #require(try catalog.raw("tours.list", #"{"near":{"lat":-33.86,"lon":151.21},"radius_m":5000}"#)["tours"] as? [[String: Any]])
        seen.read("near", near.count, all: 2)
        seen.read("last place", (try? catalog.raw("catalog.get", #"{"id":\#(lastPlace)}"#)) == nil ? 0 : 1, all: 1)
        seen.read("last tour", (try? catalog.raw("tours.get", #"{"id":\#(lastTour)}"#)) == nil ? 0 : 1, all: 1)
        return seen
    }

    /// Rows the import has written, read from the database file itself.
    static func written(_ catalog: CatalogFixture, after place: Int64) throws -> Int {
        let db = try Database(path: catalog.config.resolvedDatabasePath)
        return Int(try db.scalarInt("SELECT COUNT(*) FROM places WHERE id > ?", place) ?? -1)
    }

    static func begin(_ catalog: CatalogFixture, _ file: String = file) throws -> String {
        let id = try #require(try catalog.raw("catalog.import.begin", #"{"format":"content"}"#)["import_id"] as? String)
        try catalog.raw("catalog.import.append", #"{"import_id":"\#(id)","offset":0,"chunk":"\#(Data(file.utf8).base64EncodedString())"}"#)
        try catalog.raw("catalog.import.commit", #"{"import_id":"\#(id)"}"#)
        return id
    }

    static func status(_ catalog: CatalogFixture, _ id: String) throws -> (state: String, report: [String: Any]) {
        let status = try catalog.raw("catalog.import.status", #"{"import_id":"\#(id)"}"#)
        return (status["state"] as? String ?? "", status["report"] as? [String: Any] ?? [:])
    }

    /// Whether the import being written in slices, read from the database file itself, is `id`.
    static func applying(_ catalog: CatalogFixture, _ id: String) throws -> Bool {
        let db = try Database(path: catalog.config.resolvedDatabasePath)
        return try db.scalarInt("SELECT 1 FROM import_applying WHERE import_id = ? AND phase = 'hidden'", id) != nil
    }

    /// The catalog of `file` imported and published, its museums at ids after `base`.
    static func imported(_ options: CatalogOptions = sliced) throws -> (catalog: CatalogFixture, base: Int64) {
        let catalog = try CatalogFixture(options: options)
        let base = try catalog.create("Before").id
        let first = try Self.watch(catalog, try Self.begin(catalog), base: base)
        #expect(first.state == "done", "\(first.report)")
        // Its events go out; the next import is then written from a catalog at rest.
        let db = try Database(path: catalog.config.resolvedDatabasePath)
        for _ in 0..<300 where try db.scalarInt("SELECT count(*) FROM import_applying") != 0 { usleep(20_000) }
        return (catalog, base)
    }

    static func head(_ catalog: CatalogFixture) throws -> Int {
        ((try catalog.raw("sys.stats", "{}")["outbox"] as? [String: Any])?["head"] as? Int) ?? -1
    }

    /// Reads while the import is written, until it ends (bounded: 30 s). Taken in the order
    /// they were made, the reads show none of it, then all of it, and never a part. Answers
    /// its end, and how many rounds of reads showed none while some was written.
    static func watch(
        _ catalog: CatalogFixture, _ id: String, base: Int64, last: (place: Int64, tour: Int64) = (Int64(count), 2), during: (Int) throws -> Void = { _ in }
    ) throws -> (state: String, report: [String: Any], hiddenSeen: Int) {
        var hiddenSeen = 0
        var shownAll = false
        for round in 0..<600 {
            try during(round)
            let written = try Self.written(catalog, after: base)
            let seen = try Self.seen(catalog, lastPlace: base + last.place, lastTour: last.tour)
            for shown in seen.order {
                #expect(shown != nil && !(shownAll && shown == false), "round \(round): \(seen), \(written) rows written")
                shownAll = shownAll || shown == true
            }
            if seen.none, written > 0, written < count { hiddenSeen += 1 }
            let status = try Self.status(catalog, id)
            if status.state == "done" || status.state == "failed" { return (status.state, status.report, hiddenSeen) }
            usleep(20_000)
        }
        Issue.record("import \(id) did not end in 30 s")
        return ("", [:], hiddenSeen)
    }

    @Test func readersSeeABigImportWhollyOrNotAtAllWhileOtherWritesGoBetweenItsSlices() throws {
        let catalog = try CatalogFixture(options: Self.sliced)
        let base = try catalog.create("Before").id
        let headBefore = try Self.head(catalog)
        let id = try Self.begin(catalog)
        var between: Place?
        let end = try Self.watch(catalog, id, base: base) { _ in
            guard between == nil, try Self.written(catalog, after: base) > 0 else { return }
            // A write while the import is hidden goes through at once, above the ids it set aside.
            between = try catalog.create("Between")
            #expect(try catalog.raw("catalog.get", #"{"id":\#(between!.id)}"#)["name"] as? String == "Between")
            // A place it wrote can be neither deleted nor named by its external id meanwhile.
            #expect(throws: ServiceError(.notFound, "no place with id \(base + 1)", field: "id")) {
                try catalog.raw("catalog.delete", #"{"id":\#(base + 1)}"#)
            }
            #expect(throws: ServiceError(.alreadyExists, "slices id p0 is being imported: try again once the import is done", field: "external_ids")) {
                try catalog.raw("catalog.create", #"{"name":"Taker","category":"cafe","lat":-33.86,"lon":151.2,"external_ids":{"slices":"p0"}}"#)
            }
        }
        #expect(end.state == "done", "\(end.report)")
        #expect(ImportTests.counts(end.report, "places") == [Self.count, 0, 0] && ImportTests.counts(end.report, "tours") == [2, 0, 0])
        #expect(end.hiddenSeen > 0, "no read happened while part of the import was written")
        #expect(try between.map(\.id) ?? 0 > base + Int64(Self.count))
        #expect(try Self.seen(catalog, lastPlace: base + Int64(Self.count), lastTour: 2).all)

        // The events follow, in slices: one per place and tour, besides "Between".
        var head = 0
        for _ in 0..<300 where head < headBefore + Self.count + 3 {
            head = try Self.head(catalog)
            usleep(20_000)
        }
        #expect(head == headBefore + Self.count + 3)
        let db = try Database(path: catalog.config.resolvedDatabasePath)
        let published = try db.query("SELECT type, body FROM outbox WHERE seq > ? ORDER BY seq", headBefore).map { row throws(RowError) in
            (try row.decode("type", as: String.self), try row.decode("body", as: Data.self))
        }
        let places = published.filter { $0.0 == CatalogEvents.upserted }.compactMap { try? JSONCoding.decoder.decode(Place.self, from: $0.1) }
        #expect(Set(places.map(\.name)) == Set((0..<Self.count).map { "Slice \($0)" } + ["Between"]))
        #expect(published.filter { $0.0 == TourEvents.upserted }.count == 2)
        #expect(published.last?.0 == TourEvents.upserted, "the tours go out after their places")
        // Then the file's chunks go, a few a step, and no event goes out again.
        for _ in 0..<300 where try db.scalarInt("SELECT count(*) FROM import_applying") != 0 { usleep(20_000) }
        for _ in 0..<300 where try db.scalarInt("SELECT count(*) FROM import_chunks WHERE import_id = ?", id) != 0 { usleep(20_000) }
        #expect(try db.scalarInt("SELECT count(*) FROM import_chunks WHERE import_id = ?", id) == 0)
        #expect(try Self.head(catalog) == headBefore + Self.count + 3)
    }

    @Test func anImportThatFailsMidwayLeavesNothingAndNeverShowedAnything() throws {
        let catalog = try CatalogFixture(options: Self.sliced)
        let base = try catalog.create("Before").id
        let id = try Self.begin(catalog)
        var claimed = false
        let end = try Self.watch(catalog, id, base: base) { _ in
            // Once the import is being written, another place takes its last place's id.
            if !claimed, try Self.written(catalog, after: base) > 0 {
                try catalog.raw(
                    "catalog.create", #"{"name":"Claimer","category":"cafe","lat":-33.86,"lon":151.2,"external_ids":{"slices":"p\#(Self.count - 1)"}}"#)
                claimed = true
            }
        }
        #expect(end.state == "failed")
        let errors = (end.report["errors"] as? [[String: Any]] ?? []).compactMap { $0["message"] as? String }
        #expect(errors.contains { $0.contains("slices id p\(Self.count - 1) already belongs to place") }, "\(errors)")
        // What it wrote is deleted (still hidden), and only the place that won is left.
        for _ in 0..<300 where try Self.written(catalog, after: base) > 1 { usleep(20_000) }
        #expect(try Self.written(catalog, after: base) == 1)
        #expect(try Self.seen(catalog, lastPlace: base + Int64(Self.count), lastTour: 2).none)
        #expect(try catalog.allPlaces().map(\.name).sorted() == ["Before", "Claimer"])
    }

    @Test func aRestartMidwayUndoesWhatWasWrittenAndAppliesTheImportAgain() throws {
        let first = try CatalogFixture(options: Self.sliced)
        let base = try first.create("Before").id
        let id = try Self.begin(first)
        for _ in 0..<500 where try Self.written(first, after: base) < 8 { usleep(10_000) }
        let written = try Self.written(first, after: base)
        #expect(written >= 8 && written < Self.count)
        first.stop()

        let again = try CatalogFixture(options: Self.sliced, folder: first.folder)
        // The new ids are set aside after the first run's, which are never used again.
        let end = try Self.watch(again, id, base: base, last: (2 * Int64(Self.count), 4))
        #expect(end.state == "done", "\(end.report)")
        let places = try again.allPlaces().filter { $0.name.hasPrefix("Slice ") }
        #expect(places.count == Self.count && places.allSatisfy { $0.id > base + Int64(Self.count) })
        #expect(try Self.written(again, after: base) == Self.count)
    }

    /// Changes to places that were there, many of them: made ready in slices while other writes
    /// go between, shown all at once by the last step, their events in the plan's order, and
    /// the tour starting at a place that moved published again.
    @Test func changesToManyPlacesAreMadeReadyInSlicesAndShownAllAtOnce() throws {
        let (catalog, base) = try Self.imported()
        let headBefore = try Self.head(catalog)
        let id = try Self.begin(catalog, Self.content(named: "Changed", moving: [0], east: 0.0001))
        var between: Place?
        var order: [Bool?] = []
        for round in 0..<600 {
            let changed = try catalog.allPlaces().filter { $0.name.hasPrefix("Changed ") }.count
            order.append(changed == 0 ? false : changed == Self.count ? true : nil)
            #expect(order.last != nil && !(order.contains(true) && order.last == false), "round \(round): \(changed) changed places shown")
            if between == nil, changed == 0, try Self.applying(catalog, id) { between = try catalog.create("Between") }
            let state = try Self.status(catalog, id).state
            if state == "done" || state == "failed" { break }
            usleep(20_000)
        }
        let end = try Self.status(catalog, id)
        #expect(end.state == "done", "\(end.report)")
        #expect(ImportTests.counts(end.report, "places") == [0, Self.count, 0] && ImportTests.counts(end.report, "tours") == [0, 0, 2])
        #expect(between != nil, "no read saw the import being made ready")
        #expect(try catalog.allPlaces().filter { $0.name.hasPrefix("Changed ") }.count == Self.count)

        let db = try Database(path: catalog.config.resolvedDatabasePath)
        let published = try db.query("SELECT type, body FROM outbox WHERE seq > ? ORDER BY seq", headBefore).map { row throws(RowError) in
            (try row.decode("type", as: String.self), try row.decode("body", as: Data.self))
        }
        let names = published.filter { $0.0 == CatalogEvents.upserted }.compactMap { try? JSONCoding.decoder.decode(Place.self, from: $0.1).name }
        #expect(names == ["Between"] + (0..<Self.count).map { "Changed \($0)" }, "the write went between the slices, before the changes")
        let tours = published.filter { $0.0 == TourEvents.upserted }.compactMap { try? JSONCoding.decoder.decode(Tour.self, from: $0.1) }
        #expect(tours.map(\.name) == ["Slice walk 0"], "the walk starting at the place that moved, after it")
        #expect(published.last?.0 == TourEvents.upserted)
        let moved = try #require(try catalog.allPlaces().first { $0.name == "Changed 0" })
        #expect(moved.version == 2 && abs(moved.lon - 151.2001) < 1e-9)
    }

    /// An edit to a place the import changes, or its deletion, once its changes are being made
    /// ready, fails the import at its last step: the edit stays, and none of the import's
    /// changes is shown.
    @Test(arguments: [false, true]) func anEditToAPlaceTheImportChangesFailsItAndStays(deleting: Bool) throws {
        let (catalog, base) = try Self.imported()
        let id = try Self.begin(catalog, Self.content(named: "Changed"))
        var edited = false
        for _ in 0..<600 {
            #expect(try catalog.allPlaces().filter { $0.name.hasPrefix("Changed ") }.isEmpty)
            if !edited, try Self.applying(catalog, id) {
                if deleting {
                    try catalog.raw("catalog.delete", #"{"id":\#(base + 1)}"#)
                } else {
                    try catalog.raw("catalog.update", #"{"id":\#(base + 1),"name":"Edited"}"#)
                }
                edited = true
            }
            let state = try Self.status(catalog, id).state
            if state == "done" || state == "failed" { break }
            usleep(20_000)
        }
        let end = try Self.status(catalog, id)
        #expect(end.state == "failed")
        let errors = (end.report["errors"] as? [[String: Any]] ?? []).compactMap { $0["message"] as? String }
        let changed = deleting ? "was deleted while the import was read" : "changed while the import was read (version 2, not 1)"
        #expect(errors == ["place \(base + 1) \(changed): import again"], "\(errors)")
        let names = try catalog.allPlaces().map(\.name)
        #expect(names.contains("Edited") != deleting && !names.contains("Slice 0") && !names.contains { $0.hasPrefix("Changed ") })
    }

    /// An import that moves the first stops of both walks and renames one of them, in slices
    /// and at once: the renamed walk goes out once, as changed, and the other once again for
    /// its moved start. (Published first, that one's new version read as an edit made while
    /// the import was read, and the import always failed.)
    @Test(arguments: [true, false]) func anImportMovingATourStartAndChangingTheTourIsApplied(sliced: Bool) throws {
        let (catalog, _) = try Self.imported(sliced ? Self.sliced : CatalogOptions())
        let headBefore = try Self.head(catalog)
        let id = try Self.begin(catalog, Self.content(moving: [0, 20], east: 0.0001, walks: ["Slice walk 0", "Renamed walk 1"]))
        for _ in 0..<600 where !["done", "failed"].contains(try Self.status(catalog, id).state) { usleep(20_000) }
        let end = try Self.status(catalog, id)
        #expect(end.state == "done", "\(end.report)")
        #expect(ImportTests.counts(end.report, "places") == [0, 2, Self.count - 2] && ImportTests.counts(end.report, "tours") == [0, 1, 1])
        let db = try Database(path: catalog.config.resolvedDatabasePath)
        let tours = try db.query("SELECT body FROM outbox WHERE seq > ? AND type = ? ORDER BY seq", headBefore, TourEvents.upserted).map {
            row throws(RowError) in try row.decode("body", as: Data.self)
        }.compactMap { try? JSONCoding.decoder.decode(Tour.self, from: $0).name }
        #expect(tours == ["Renamed walk 1", "Slice walk 0"])
    }
}
