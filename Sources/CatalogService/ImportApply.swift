import Bus
import Contracts
import Foundation
import ServiceKit
import Storage

// Applying an import's plan (writer thread, `catalog.import.apply`, which the service sends
// itself every 100 ms, and `CatalogOptions.importStepMilliseconds` after a step that left work).
// A plan that writes few rows is written in one transaction with its events. A big one is
// written in slices, so other writes go between them, and readers still see all of it or none
// (Protocols/import.md, "Writing"):
//
// 1. Hidden. The ids its new places and tours will have are set aside (`sqlite_sequence`), and
//    each slice writes some of those rows, without events. Every read skips ids in those
//    ranges (`HiddenImport`, read from `import_applying` by the read's own statement), so
//    readers see none of them. Then each slice makes some of its changes to places that were
//    there ready (`StagedChanges`), written nowhere a reader looks.
// 2. The last step writes those changes with their events (a few statements over all of them),
//    changes the tours that were there, sets the maps and marks the import done, in one
//    transaction: from its commit readers see all of it.
// 3. Publishing. The new rows' events go out in slices, each place and tour as it is then (one
//    changed meanwhile goes out as it is now, one deleted meanwhile not at all).
//
// A failure while hidden undoes the rows written, in slices and still hidden, and fails the
// import. So does a restart then (the plan was held in memory), but the import stays queued:
// it is read and applied again once they are gone. `import_applying` holds the state, at
// most one row, and how far the slices went is read from the rows written (a slice whose
// batch did not commit wrote none). No import is planned while another is applied or undone.

/// What reads skip: the ids of the import being written or undone, which each statement reads
/// from `import_applying` in its own snapshot (once: the subqueries do not depend on the row),
/// so a read sees all of an import or none of it, whenever the last step commits.
enum HiddenImport {
    /// ` AND column NOT BETWEEN lo AND hi` over the hidden places' ids (none: 1 and 0).
    static func places(_ column: String) -> String { filter(column, "places") }
    /// The same over the hidden tours' ids.
    static func tours(_ column: String) -> String { filter(column, "tours") }

    private static func filter(_ column: String, _ kind: String) -> String {
        " AND \(column) NOT BETWEEN (SELECT coalesce(min(\(kind)_lo), 1) FROM import_applying WHERE phase != 'publishing')"
            + " AND (SELECT coalesce(max(\(kind)_hi), 0) FROM import_applying WHERE phase != 'publishing')"
    }

    /// The tours hidden now, as the caller's transaction sees them.
    static func tours(in db: Database) throws -> ClosedRange<Int64>? {
        guard let applying = try ApplyingImport.read(db), applying.phase != .publishing else { return nil }
        return applying.tours
    }
}

/// The row of `import_applying`: the import being applied in slices, and how far it is.
struct ApplyingImport {
    enum Phase: String { case hidden, publishing, rollback }

    var importId: String
    var phase: Phase
    /// The ids set aside for the new places and tours: `first...last`, none when `last < first`.
    var firstPlace: Int64
    var lastPlace: Int64
    var firstTour: Int64
    var lastTour: Int64
    /// Publishing: the next ids whose events go out.
    var nextPlace: Int64
    var nextTour: Int64

    var places: ClosedRange<Int64>? { firstPlace <= lastPlace ? firstPlace...lastPlace : nil }
    var tours: ClosedRange<Int64>? { firstTour <= lastTour ? firstTour...lastTour : nil }

    /// The id of the plan's new place `index`.
    func newPlace(_ index: Int) -> Int64 { firstPlace + Int64(index) }

    static func read(_ db: Database) throws -> ApplyingImport? {
        guard
            let row = try db.queryOne(
                "SELECT import_id, phase, places_lo, places_hi, tours_lo, tours_hi, next_place, next_tour FROM import_applying LIMIT 1")
        else { return nil }
        return ApplyingImport(
            importId: try row.decode("import_id"), phase: Phase(rawValue: try row.decode("phase")) ?? .rollback,
            firstPlace: try row.decode("places_lo"), lastPlace: try row.decode("places_hi"),
            firstTour: try row.decode("tours_lo"), lastTour: try row.decode("tours_hi"),
            nextPlace: try row.decode("next_place"), nextTour: try row.decode("next_tour"))
    }
}

/// How much one step of `catalog.import.apply` writes: rows (a place, or a tour's stop) until
/// either bound is reached.
struct ImportSlice {
    private let deadline: UInt64
    private var rowsLeft: Int
    private var taken = false

    init(rows: Int, milliseconds: Int) {
        deadline = monotonicNanos() + UInt64(milliseconds) * 1_000_000
        rowsLeft = rows
    }

    /// Whether `rows` more fit (the slice's first take always does, so every step moves on).
    mutating func take(_ rows: Int = 1) -> Bool {
        guard !taken || (rowsLeft >= rows && monotonicNanos() < deadline) else { return false }
        taken = true
        rowsLeft -= rows
        return true
    }
}

extension CatalogStore {
    /// `catalog.import.apply`: one step of the import being applied, or of the oldest plan
    /// waiting; `more` while an import is being applied (the next step comes sooner).
    func applyImport() throws -> PeriodicWork {
        try sweepChunks()
        try step()
        return PeriodicWork(more: try ApplyingImport.read(db) != nil)
    }

    /// Deletes a few chunks (512 KiB each at most) of the files of imports that ended: each
    /// step of the writer stays short, however big the file was.
    private func sweepChunks() throws {
        try db.run(
            """
            DELETE FROM import_chunks WHERE rowid IN (
                SELECT c.rowid FROM import_chunks c JOIN imports i ON i.id = c.import_id WHERE i.state IN ('done', 'failed') LIMIT 8)
            """)
    }

    private func step() throws {
        guard let importPlans else { return }
        var slice = ImportSlice(rows: options.importSliceRows, milliseconds: options.importSliceMilliseconds)
        guard let applying = try ApplyingImport.read(db) else {
            if let lost = importPlans.release() {
                // Its start did not commit: nothing of it was written.
                try fail(lost.importId, lost.report, "the import could not be started: import it again")
                importPlans.finished(lost.importId)
            }
            guard var plan = importPlans.take() else { return }
            if plan.rows <= options.importAtOnceRows {
                try applyAtOnce(&plan)
            } else {
                try begin(plan)
                if let applying = try ApplyingImport.read(db) { try writeHidden(plan, applying, from: (0, 0, 0), slice: &slice) }
            }
            return
        }
        switch applying.phase {
        case .hidden:
            guard let plan = importPlans.held(), plan.importId == applying.importId else {
                // The plan lived in memory: the catalog restarted while writing it (or a last
                // step failed to commit). What was written is undone, and the import, still
                // queued, is read and applied again.
                try db.run("UPDATE import_applying SET phase = 'rollback' WHERE import_id = ?", applying.importId)
                importPlans.finished(applying.importId)
                return
            }
            let written = try self.written(applying)
            if written.places == plan.creates.count, written.tours == plan.newTours.count, written.changes == plan.updates.count {
                try complete(plan, applying)
            } else {
                try writeHidden(plan, applying, from: written, slice: &slice)
            }
        case .publishing:
            // Every reader sees it: it is done (and its staged changes are written).
            importPlans.finished(applying.importId)
            try StagedChanges.clear(db)
            try publish(applying, slice: &slice)
        case .rollback: try undo(applying, slice: &slice)
        }
    }

    /// A small plan: all of it in one transaction with its events, or none of it (a place
    /// changed since it was planned fails the import).
    private func applyAtOnce(_ plan: inout ImportPlan) throws {
        do {
            var wroteMaps = false
            try db.transaction {
                var ids: [Int64] = []
                for var place in plan.creates {
                    try insert(&place)
                    ids.append(place.id)
                }
                try StagedChanges.clear(db)
                for (rank, (place, base)) in plan.updates.enumerated() {
                    try stage(place, over: try current(of: place.id, plannedAt: base), rank: rank)
                }
                try writeStagedChanges()
                var tourIds: [Int64] = []
                var changed: Set<Int64> = []
                for planned in plan.tours {
                    if planned.current == nil {
                        var tour = planned.tour
                        tour.stops = planned.stops.map { $0.id { ids[$0] } }
                        tourIds.append(try insertTour(&tour).id)
                    } else {
                        tourIds.append(try changeTour(planned, changed: &changed) { ids[$0] })
                    }
                }
                try republishMovedStarts(except: changed)
                wroteMaps = try writeMaps(plan, tourIds: tourIds)
                try writeOSMSets(plan)
                plan.report.elapsedMs = Int((monotonicNanos() - plan.started) / 1_000_000)
                try ImportPlanner.finish(plan.importId, state: "done", report: plan.report, db: db)
            }
            if wroteMaps { worker.wakeAfterCommit(tileCutter) }
        } catch {
            try fail(plan.importId, plan.report, Self.message(error))
        }
        importPlans?.finished(plan.importId)
    }

    /// Sets aside the ids of a big plan's new places and tours, and hides them.
    private func begin(_ plan: ImportPlan) throws {
        try db.transaction {
            try StagedChanges.clear(db)
            let places = try reserve("places", count: plan.creates.count)
            let tours = try reserve("tours", count: plan.newTours.count)
            let applying = ApplyingImport(
                importId: plan.importId, phase: .hidden, firstPlace: places.lowerBound, lastPlace: places.upperBound - 1,
                firstTour: tours.lowerBound, lastTour: tours.upperBound - 1, nextPlace: places.lowerBound, nextTour: tours.lowerBound)
            try db.run(
                """
                INSERT INTO import_applying (import_id, phase, places_lo, places_hi, tours_lo, tours_hi, next_place, next_tour)
                VALUES (?, 'hidden', ?, ?, ?, ?, ?, ?)
                """, plan.importId, applying.firstPlace, applying.lastPlace, applying.firstTour, applying.lastTour, applying.nextPlace,
                applying.nextTour)
        }
        importPlans?.hold(plan)
    }

    /// The next `count` ids of an AUTOINCREMENT table, which no other write will take.
    private func reserve(_ table: String, count: Int) throws -> Range<Int64> {
        let first = try nextId(table)
        let end = first + Int64(count)
        try db.run("UPDATE sqlite_sequence SET seq = ? WHERE name = ?", end - 1, table)
        if db.changes == 0 { try db.run("INSERT INTO sqlite_sequence (name, seq) VALUES (?, ?)", table, end - 1) }
        return first..<end
    }

    /// How many of the plan's new places and tours are written, and of its changes made ready,
    /// as committed (each in the plan's order; a slice whose batch did not commit wrote none).
    private func written(_ applying: ApplyingImport) throws -> Written {
        func count(_ table: String, _ range: ClosedRange<Int64>?) throws -> Int {
            guard let range else { return 0 }
            let last = try db.scalarInt("SELECT max(id) FROM \(table) WHERE id BETWEEN ? AND ?", range.lowerBound, range.upperBound)
            return Int((last ?? range.lowerBound - 1) - range.lowerBound + 1)
        }
        return Written(places: try count("places", applying.places), tours: try count("tours", applying.tours), changes: try StagedChanges.count(db))
    }

    private typealias Written = (places: Int, tours: Int, changes: Int)

    /// Writes the next slice of a big plan's new places, then of its new tours, without events;
    /// then makes the next slice of its changes ready.
    private func writeHidden(_ plan: ImportPlan, _ applying: ApplyingImport, from written: Written, slice: inout ImportSlice) throws {
        let newTours = plan.newTours
        do {
            try db.transaction {
                var (created, toursCreated, staged) = written
                while created < plan.creates.count, slice.take() {
                    var place = plan.creates[created]
                    try insert(&place, hiddenId: applying.newPlace(created))
                    created += 1
                }
                while created == plan.creates.count, toursCreated < newTours.count {
                    let planned = plan.tours[newTours[toursCreated]]
                    guard slice.take(planned.stops.count) else { break }
                    var tour = planned.tour
                    tour.stops = planned.stops.map { $0.id(newPlace: applying.newPlace) }
                    try insertTour(&tour, hiddenId: applying.firstTour + Int64(toursCreated))
                    toursCreated += 1
                }
                while toursCreated == newTours.count, staged < plan.updates.count, slice.take() {
                    let (place, base) = plan.updates[staged]
                    try stage(place, over: try current(of: place.id, plannedAt: base), rank: staged)
                    staged += 1
                }
            }
        } catch {
            try rollBack(plan.importId, report: plan.report, Self.message(error))
        }
    }

    /// The last step of a big plan: the changes to what was there, the maps, and the import
    /// done, in one transaction; from its commit readers see the new rows, whose events follow.
    private func complete(_ plan: ImportPlan, _ applying: ApplyingImport) throws {
        var plan = plan
        do {
            var wroteMaps = false
            try db.transaction {
                try writeStagedChanges()
                var tourIds: [Int64] = []
                var created: Int64 = 0
                var changed: Set<Int64> = []
                for planned in plan.tours {
                    if planned.current == nil {
                        tourIds.append(applying.firstTour + created)
                        created += 1
                    } else {
                        tourIds.append(try changeTour(planned, changed: &changed, newPlace: applying.newPlace))
                    }
                }
                try republishMovedStarts(except: changed)
                wroteMaps = try writeMaps(plan, tourIds: tourIds)
                try writeOSMSets(plan)
                plan.report.elapsedMs = Int((monotonicNanos() - plan.started) / 1_000_000)
                try ImportPlanner.finish(plan.importId, state: "done", report: plan.report, db: db)
                try db.run("UPDATE import_applying SET phase = 'publishing' WHERE import_id = ?", plan.importId)
            }
            if wroteMaps { worker.wakeAfterCommit(tileCutter) }
        } catch {
            try rollBack(plan.importId, report: plan.report, Self.message(error))
            return
        }
        // Still "applying" to `catalog.import.status` until the next step, once it committed.
        _ = importPlans?.release()
    }

    /// Publishes the next slice of a done import's new places, then of its tours, each as it
    /// is now (one deleted meanwhile is not published); the last step forgets the import.
    private func publish(_ applying: ApplyingImport, slice: inout ImportSlice) throws {
        try db.transaction {
            var (nextPlace, nextTour) = (applying.nextPlace, applying.nextTour)
            if nextPlace <= applying.lastPlace {
                var stopped = false
                try db.stepWhile("SELECT id, json FROM places WHERE id BETWEEN ? AND ? ORDER BY id", [nextPlace, applying.lastPlace]) { row in
                    guard slice.take() else {
                        stopped = true
                        return false
                    }
                    let id = row.int64(0)
                    let stored = row.withUTF8(1) { Data($0) }
                    try worker.emit(CatalogEvents.upserted, json: stored.isEmpty ? try json(id) : stored)
                    nextPlace = id + 1
                    return true
                }
                if !stopped { nextPlace = applying.lastPlace + 1 }
            }
            if nextPlace > applying.lastPlace, nextTour <= applying.lastTour {
                let ids = try db.query("SELECT id FROM tours WHERE id BETWEEN ? AND ? ORDER BY id", nextTour, applying.lastTour).map {
                    row throws(RowError) in try row.decode("id", as: Int64.self)
                }
                nextTour = applying.lastTour + 1
                for id in ids {
                    let tour = try tour(id)
                    guard slice.take(tour.stops.count) else {
                        nextTour = id
                        break
                    }
                    try worker.emit(TourEvents.upserted, tour)
                }
            }
            if nextPlace > applying.lastPlace, nextTour > applying.lastTour {
                try db.run("DELETE FROM import_applying WHERE import_id = ?", applying.importId)
            } else {
                try db.run("UPDATE import_applying SET next_place = ?, next_tour = ? WHERE import_id = ?", nextPlace, nextTour, applying.importId)
            }
        }
    }

    /// Ends an import that failed while hidden: it is marked failed, and what it wrote is
    /// deleted by the next steps (`undo`), still hidden.
    private func rollBack(_ id: String, report: ImportReport, _ message: String) throws {
        try db.transaction {
            try db.run("UPDATE import_applying SET phase = 'rollback' WHERE import_id = ?", id)
            try StagedChanges.clear(db)
            try fail(id, report, message)
        }
        _ = importPlans?.release()
        importPlans?.finished(id)
    }

    /// Deletes the next slice of a failed import's rows, tours first; the step that finds none
    /// left forgets the import (its ids are never shown, nor used again).
    private func undo(_ applying: ApplyingImport, slice: inout ImportSlice) throws {
        try db.transaction {
            var deleted = 0
            if let tours = applying.tours {
                let ids = try db.query("SELECT id FROM tours WHERE id BETWEEN ? AND ? ORDER BY id LIMIT 100", tours.lowerBound, tours.upperBound).map {
                    row throws(RowError) in try row.decode("id", as: Int64.self)
                }
                // A tour at a time: each takes its stops with it (at most 500).
                for id in ids {
                    guard slice.take(TourRules.maxStops) else { break }
                    try db.run("DELETE FROM tours WHERE id = ?", id)
                    deleted += 1
                }
            }
            if deleted == 0, let places = applying.places {
                let batch = 500
                while slice.take(batch) {
                    try db.run(
                        "DELETE FROM places WHERE id IN (SELECT id FROM places WHERE id BETWEEN ? AND ? LIMIT ?)", places.lowerBound, places.upperBound, batch)
                    deleted += db.changes
                    if db.changes < batch { break }
                }
            }
            if deleted == 0 { try db.run("DELETE FROM import_applying WHERE import_id = ?", applying.importId) }
        }
    }

    /// Place `id` as it is, which must be the version the import was planned over.
    private func current(of id: Int64, plannedAt base: Int64) throws -> Place {
        let current: Place
        do {
            current = try get(id)
        } catch let error as ServiceError where error.code == .notFound {
            throw Self.changedMeanwhile(id, nil, base)
        }
        guard current.version == base else { throw Self.changedMeanwhile(id, current.version, base) }
        return current
    }

    /// Place `id` is at `version` (nil: deleted), not at `base`, which the import was planned over.
    private static func changedMeanwhile(_ id: Int64, _ version: Int64?, _ base: Int64) -> ServiceError {
        guard let version else { return ServiceError(.conflict, "place \(id) was deleted while the import was read: import again") }
        return ServiceError(.conflict, "place \(id) changed while the import was read (version \(version), not \(base)): import again")
    }

    /// Makes a change to a place that was there ready (`StagedChanges`), as `store` would write
    /// it. An import finds such a place by one of its external ids and merges its own over
    /// them, so the change keeps them all (`store` would give up and claim any that differ).
    private func stage(_ place: Place, over current: Place, rank: Int) throws {
        guard place.externalIds == current.externalIds else {
            throw ServiceError(.internal, "the import changes the external ids of place \(place.id)")
        }
        var changed = place
        let body = try Self.stamp(&changed, over: current)
        let moved = changed.lat != current.lat || changed.lon != current.lon
        try db.run(
            StagedChanges.insert, [rank, place.id, current.version] + Self.storedValues(changed, body) + [moved, moved || changed.category != current.category])
    }

    /// The last step's changes to places that were there, made ready (by the slices, or just
    /// before by a small import): each must still be at the version it was made ready over.
    /// Written with their events by a few statements over all of them.
    private func writeStagedChanges() throws {
        if let stale = try db.queryOne(
            "SELECT c.id, c.base, p.version FROM \(StagedChanges.table) c LEFT JOIN places p ON p.id = c.id WHERE p.version IS NOT c.base ORDER BY c.rank LIMIT 1")
        {
            throw Self.changedMeanwhile(try stale.decode("id"), try stale.decode("version", as: Int64?.self), try stale.decode("base"))
        }
        // A change that keeps the category and position leaves those columns alone, and so the
        // category's index and the tour stops' positions (a third less to write at 45,000 changes).
        for (columns, reindexed) in [(Self.storedColumns.filter { !StagedChanges.indexed.contains($0) }, 0), (Self.storedColumns, 1)] {
            try db.run(
                "UPDATE places SET \(columns.map { "\($0) = c.\($0)" }.joined(separator: ", ")) FROM \(StagedChanges.table) c WHERE places.id = c.id AND c.reindexed = ?",
                reindexed)
        }
        try worker.emit(CatalogEvents.upserted, bodies: "CAST(json AS BLOB)", from: StagedChanges.table, orderedBy: "rank")
    }

    /// Publishes again the tours that start at a place the import moved (their start moved
    /// with it), but for those it changed itself, `changed`, which went out as changed. Run
    /// after the tours are changed: a republished tour is one version on, which their check
    /// of the version planned over would take for an edit.
    private func republishMovedStarts(except changed: Set<Int64>) throws {
        try republishTours(try tours(startingAtAnyOf: "SELECT id FROM \(StagedChanges.table) WHERE moved").filter { !changed.contains($0) })
    }

    /// A planned change to a tour that was there; answers its id, and adds it to `changed` when
    /// it was written (with its event).
    private func changeTour(_ planned: ImportPlan.PlannedTour, changed: inout Set<Int64>, newPlace: (Int) -> Int64) throws -> Int64 {
        guard let current = planned.current else { return 0 }
        var tour = planned.tour
        tour.stops = planned.stops.map { $0.id(newPlace: newPlace) }
        let now = try self.tour(current.id)
        guard now.version == current.version else {
            throw ServiceError(.conflict, "tour \(current.id) changed while the import was read: import again")
        }
        guard tour != now else { return now.id }
        changed.insert(now.id)
        return try storeTour(tour, over: now, seeingHidden: true).id
    }

    private func writeMaps(_ plan: ImportPlan, tourIds: [Int64]) throws -> Bool {
        for map in plan.maps {
            try writeMap(tourId: tourIds[map.tour], jpeg: map.jpeg, points: map.points, georeference: map.georeference)
        }
        return !plan.maps.isEmpty
    }

    private func fail(_ id: String, _ report: ImportReport, _ message: String) throws {
        var report = report
        report.errors.append(ImportIssue(message: message))
        try ImportPlanner.finish(id, state: "failed", report: report, db: db)
    }

    private static func message(_ error: any Error) -> String { (error as? ServiceError)?.message ?? "\(error)" }
}

extension PlannedPlace {
    /// The place's id, given the ids of the plan's new places.
    func id(newPlace: (Int) -> Int64) -> Int64 {
        switch self {
        case .existing(let id): id
        case .new(let index): newPlace(index)
        }
    }
}

/// A big import's changes to places that were there, made ready by its slices: a row each, as
/// the change writes it, in a temporary table of the writer's connection (gone when the process
/// is, as the plan held in memory is: a restart undoes the import and applies it again).
enum StagedChanges {
    static let table = "temp.import_changes"

    /// Empties the table.
    static func clear(_ db: Database) throws {
        try create(db)
        try db.run("DELETE FROM \(table)")
    }

    /// How many are ready (ranks 0 up).
    static func count(_ db: Database) throws -> Int {
        try create(db)
        return Int(try db.scalarInt("SELECT coalesce(max(rank) + 1, 0) FROM \(table)") ?? 0)
    }

    /// Creates the table if this connection has none yet.
    private static func create(_ db: Database) throws {
        try db.run(
            """
            CREATE TEMP TABLE IF NOT EXISTS import_changes (
                rank INTEGER PRIMARY KEY, id INTEGER NOT NULL UNIQUE, base INTEGER NOT NULL,
                \(CatalogStore.storedColumns.joined(separator: ", ")), moved INTEGER NOT NULL, reindexed INTEGER NOT NULL)
            """)
    }

    /// The statement that adds one: its rank in the plan, place id, the version it changes, its
    /// `CatalogStore.storedColumns`, whether it moved, and whether one of `indexed` changes.
    static let insert = """
        INSERT INTO \(table) (rank, id, base, \(CatalogStore.storedColumns.joined(separator: ", ")), moved, reindexed)
        VALUES (\(Array(repeating: "?", count: CatalogStore.storedColumns.count + 5).joined(separator: ", ")))
        """

    /// The columns an index or a trigger of `places` reads.
    static let indexed: Set<String> = ["category", "lat", "lon"]
}

extension CatalogStore {
    /// An OSM import's street network and addresses, kept in the import's last transaction.
    fileprivate func writeOSMSets(_ plan: ImportPlan) throws {
        if let streets = plan.streets { try StreetSets.write(streets, importId: plan.importId, db: db, worker: worker) }
        if let addresses = plan.addresses { try AddressSets.write(addresses, importId: plan.importId, db: db, worker: worker) }
    }
}
