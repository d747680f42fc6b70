import Bus
import ContentImport
import Contracts
import Foundation
import Geo
import ServiceKit
import Storage
import Synchronization
import TourMaps
import Uploads

// Imports: a content file (our XML format, with its map images) or an OpenStreetMap extract,
// sent in chunks, read and checked in the background, then written with readers seeing all
// of it or none.
//
// 1. `catalog.import.begin`, `.append`, `.commit` (writer, short) store the chunks.
// 2. The import thread (`ImportWork`, its own connection, reads only) parses the file and
//    plans every change against the catalog as it is, collecting every error with its line
//    and column. A dry run, or a file with errors, ends there with its report.
// 3. The writer applies a plan (`catalog.import.apply`, which the service sends itself every
//    100 ms, and sooner while one is being written): a small one in one transaction, a big one
//    in slices that readers do not see until the last (ImportApply.swift). All or nothing.

/// The bounds of imports.
enum ImportRules {
    /// The document's bytes, by format.
    static func maxDocumentBytes(_ format: ImportFormat) -> Int { format == .content ? 64 << 20 : 256 << 20 }
    static let maxFiles = 200
    static let maxFileName = 255
    /// The bytes of an import's files beside the document, in all.
    static let maxImageBytes = 256 << 20
    /// The bytes of the map images one import sets, counted once per tour that stores one.
    static let maxMapBytes = 512 << 20
    /// Imports not yet done, at most; each is forgotten `lifetimeSeconds` after it began (its report too).
    static let maxOpenImports = 4
    static let lifetimeSeconds: Int64 = 86_400
    /// Imports still receiving chunks this long after they began are dropped (256 MiB at
    /// 512 KiB a chunk is 512 appends).
    static let receivingSeconds: Int64 = 600
    /// Errors listed in a report, at most.
    static let maxErrors = 1_000

    /// An external id that a place or tour an import is writing has (not shown until it is done).
    static func beingImported(_ source: String, _ externalId: String) -> ServiceError {
        ServiceError(.alreadyExists, "\(source) id \(externalId) is being imported: try again once the import is done", field: "external_ids")
    }

    static func unknown(_ id: String) -> ServiceError {
        ServiceError(.notFound, "no import '\(id.prefix(64))' (an import is forgotten a day after it began, or 10 minutes after if never committed)", field: "import_id")
    }
}

// MARK: Receiving (writer thread)

extension CatalogStore {
    func beginImport(_ request: ImportBegin) throws -> ImportStatus {
        guard let format = ImportFormat(rawValue: request.format ?? "content") else {
            throw ServiceError.invalid("format", "must be content (our XML, Protocols/import.md) or osm (OpenStreetMap XML)")
        }
        return try db.transaction {
            let now = Int64(Date().timeIntervalSince1970)
            try db.run(
                "DELETE FROM imports WHERE created_s < ? OR (state = 'receiving' AND created_s < ?)",
                now - ImportRules.lifetimeSeconds, now - ImportRules.receivingSeconds)
            let open = try db.scalarInt("SELECT COUNT(*) FROM imports WHERE state NOT IN ('done', 'failed')") ?? 0
            guard open < ImportRules.maxOpenImports else {
                throw ServiceError(.rateLimited, "\(open) imports are under way: wait for one to finish (catalog.import.status)")
            }
            let id = Chunks.newID()
            try db.run(
                "INSERT INTO imports (id, format, dry_run, state, created_s, bytes) VALUES (?, ?, ?, 'receiving', ?, 0)",
                id, format.rawValue, request.dryRun == true ? 1 : 0, now)
            return try importStatus(id)
        }
    }

    func appendImport(_ request: ImportAppend) throws -> ImportStatus {
        let chunk = try Chunks.decode(request.chunk)
        let file = request.file ?? ""
        if !file.isEmpty {
            guard file.utf8.count <= ImportRules.maxFileName, !file.contains("/"), !file.contains("\\"), file != ".", file != "..",
                file.unicodeScalars.allSatisfy({ $0.value >= 0x20 && $0.value != 0x7F })
            else {
                throw ServiceError.invalid("file", "must be a plain file name (no path) of at most \(ImportRules.maxFileName) bytes")
            }
        }
        return try db.transaction {
            let status = try importStatus(request.importId)
            guard status.state == "receiving" else {
                throw ServiceError(.conflict, "import \(request.importId) is \(status.state), no longer receiving", field: "import_id")
            }
            let held =
                try db.scalarInt(
                    "SELECT coalesce(sum(length(data)), 0) FROM import_chunks WHERE import_id = ? AND file = ?",
                    request.importId, file) ?? 0
            if let offset = request.offset, Int64(offset) != held {
                throw ServiceError(.conflict, "\(file.isEmpty ? "the document" : file) holds \(held) bytes, not \(offset)", field: "offset")
            }
            let limit = file.isEmpty ? ImportRules.maxDocumentBytes(status.format) : TourMapRules.jpeg.maxBytes
            guard Int(held) + chunk.count <= limit else {
                throw ServiceError(.tooLarge, "\(file.isEmpty ? "the document" : file) may have at most \(limit) bytes", field: "chunk")
            }
            if !file.isEmpty {
                let images =
                    try db.scalarInt(
                        "SELECT coalesce(sum(length(data)), 0) FROM import_chunks WHERE import_id = ? AND file != ''",
                        request.importId) ?? 0
                guard Int(images) + chunk.count <= ImportRules.maxImageBytes else {
                    throw ServiceError(.tooLarge, "the files beside the document may hold at most \(ImportRules.maxImageBytes) bytes in all", field: "chunk")
                }
            }
            if held == 0, !file.isEmpty {
                let files = try db.scalarInt("SELECT COUNT(DISTINCT file) FROM import_chunks WHERE import_id = ? AND file != ''", request.importId) ?? 0
                guard files < ImportRules.maxFiles else { throw ServiceError(.tooLarge, "at most \(ImportRules.maxFiles) files beside the document", field: "file") }
            }
            let seq = try db.scalarInt("SELECT count(*) FROM import_chunks WHERE import_id = ? AND file = ?", request.importId, file) ?? 0
            try db.run("INSERT INTO import_chunks (import_id, file, seq, data) VALUES (?, ?, ?, ?)", request.importId, file, seq, chunk)
            try db.run("UPDATE imports SET bytes = bytes + ? WHERE id = ?", chunk.count, request.importId)
            return try importStatus(request.importId)
        }
    }

    /// Queues a received import for the import thread.
    func commitImport(_ id: String) throws -> ImportStatus {
        try db.transaction {
            let status = try importStatus(id)
            guard status.state == "receiving" else { throw ServiceError(.conflict, "import \(id) is \(status.state) already", field: "import_id") }
            guard try db.scalarInt("SELECT 1 FROM import_chunks WHERE import_id = ? AND file = '' LIMIT 1", id) != nil else {
                throw ServiceError.invalid("import_id", "import \(id) has no document: append it first")
            }
            try db.run("UPDATE imports SET state = 'queued' WHERE id = ?", id)
            return try importStatus(id)
        }
    }

    func importStatus(_ id: String) throws -> ImportStatus {
        try Self.importStatus(id, in: db, plans: importPlans)
    }

    static func importStatus(_ id: String, in db: Database, plans: ImportPlans?) throws -> ImportStatus {
        guard id.utf8.count <= 64, let row = try db.queryOne("SELECT format, dry_run, state, bytes, report FROM imports WHERE id = ?", id) else {
            throw ImportRules.unknown(id)
        }
        var state: String = try row.decode("state")
        // Planned or applied: the phase (an import written in slices is done once readers see it).
        if let phase = plans?.phase(id) { state = phase }
        return ImportStatus(
            importId: id, format: ImportFormat(rawValue: try row.decode("format")) ?? .content, dryRun: try row.decode("dry_run", as: Int.self) != 0,
            state: state, bytes: try row.decode("bytes"),
            report: try row.decode("report", as: String?.self).map { try JSONCoding.decoder.decode(ImportReport.self, from: Data($0.utf8)) })
    }
}

// MARK: Planning (the import thread)

/// Plans waiting for the writer, and which import the import thread is on: shared by the
/// service's threads.
final class ImportPlans: Sendable {
    private let state = Mutex<(plans: [String: ImportPlan], phases: [String: String], applying: ImportPlan?)>(([:], [:], nil))

    func phase(_ id: String) -> String? { state.withLock { $0.phases[id] } }

    /// Whether a plan waits for the writer or is being applied (not yet seen by every reader).
    var applying: Bool { state.withLock { $0.phases.values.contains("applying") } }

    /// Marks import `id` as being planned, unless it is being planned or applied already.
    func claim(_ id: String) -> Bool {
        state.withLock { state in
            guard state.phases[id] == nil else { return false }
            state.phases[id] = "planning"
            return true
        }
    }

    func put(_ plan: ImportPlan) {
        state.withLock {
            $0.plans[plan.importId] = plan
            $0.phases[plan.importId] = "applying"
        }
    }

    /// The oldest plan waiting, taken.
    func take() -> ImportPlan? {
        state.withLock { state in
            guard let id = state.plans.keys.min() else { return nil }
            return state.plans.removeValue(forKey: id)
        }
    }

    func finished(_ id: String) { state.withLock { _ = $0.phases.removeValue(forKey: id) } }

    /// The plan being written in slices (the writer's), and how far it is.
    func hold(_ plan: ImportPlan) { state.withLock { $0.applying = plan } }
    func held() -> ImportPlan? { state.withLock { $0.applying } }
    /// Forgets the plan being written in slices; answers it.
    func release() -> ImportPlan? {
        state.withLock { state in
            defer { state.applying = nil }
            return state.applying
        }
    }
}

/// A place an import names: one the catalog has, or one the plan creates (its index).
enum PlannedPlace: Sendable, Equatable {
    case existing(Int64)
    case new(Int)
}

/// Every change an import makes, planned against the catalog as it was read.
struct ImportPlan: Sendable {
    var importId: String
    var creates: [Place] = []
    /// Each changed place, and the version it was planned over (changed meanwhile: the import fails).
    var updates: [(place: Place, baseVersion: Int64)] = []
    struct PlannedTour: Sendable {
        var tour: Tour
        var stops: [PlannedPlace]
        /// The tour it replaces, when it exists.
        var current: Tour?
    }
    var tours: [PlannedTour] = []
    /// A tour's map: by the tour's index in `tours` when that tour is new.
    struct PlannedMap: Sendable {
        var tour: Int
        var jpeg: Data
        var points: [MapSet.Point]
        var georeference: MapGeoreference
    }
    var maps: [PlannedMap] = []
    /// An OSM import's street network, kept when the import is written (StreetSets.swift).
    var streets: PlannedStreets?
    /// Its addresses, kept when the import is written (AddressSets.swift).
    var addresses: PlannedAddresses?
    /// The bytes of the maps' images, counted once per tour (each stores its own).
    var mapBytes = 0
    var report = ImportReport()
    var started: UInt64 = monotonicNanos()
    /// The indexes in `tours` of the new ones.
    var newTours: [Int] { tours.indices.filter { tours[$0].current == nil } }
    /// The rows it writes: its new places, a row per stop of its new tours, and the places it
    /// changes. A plan of more is written in slices.
    var rows: Int { creates.count + updates.count + newTours.reduce(0) { $0 + tours[$1].stops.count } }
}

/// Reads an import's file and plans it, with its own connection (reads only, but for the
/// import's own row when it ends here: a refused file or a dry run).
struct ImportPlanner {
    let db: Database
    let categories: Set<String>
    let maxRMSMeters: Double
    let mapping: OSMMapping
    /// The zone a place with seasons and none of its own is given (the catalog's `--default-timezone`).
    var defaultZone: String? = nil

    /// One step of the import thread: plans the oldest queued import; true when it did one.
    static func step(_ db: Database, plans: ImportPlans, options: CatalogOptions) throws -> Bool {
        // One being applied, or undone, goes first: the next is planned against what it made.
        if plans.applying { return false }
        if let applying = try ApplyingImport.read(db), applying.phase != .publishing { return false }
        guard
            let row = try db.queryOne(
                """
                SELECT id, format, dry_run FROM imports WHERE state = 'queued' ORDER BY created_s, id LIMIT 1
                """)
        else { return false }
        let id: String = try row.decode("id")
        // A plan of this import waits for the writer already; or the writer just applied it,
        // after the row above was read (the phase is cleared only once the import's state is
        // written): read again once it is claimed, so it is never planned twice.
        guard plans.claim(id) else { return false }
        guard try db.scalarInt("SELECT 1 FROM imports WHERE id = ? AND state = 'queued'", id) != nil else {
            plans.finished(id)
            return false
        }
        var plan = ImportPlan(importId: id)
        do {
            let categories = Set(try db.query("SELECT id FROM categories").map { row throws(RowError) in try row.decode("id", as: String.self) })
            let planner = ImportPlanner(
                db: db, categories: categories, maxRMSMeters: options.mapMaxRMSMeters, mapping: try OSMMapping.standard(),
                defaultZone: options.defaultTimezone)
            let format = ImportFormat(rawValue: try row.decode("format")) ?? .content
            let document = try planner.bytes(id, file: "")
            switch format {
            case .content: try planner.planContent(document, importId: id, into: &plan)
            case .osm: try planner.planOSM(document, into: &plan)
            }
        } catch {
            // Whatever stopped the reading (SQLite too) ends this import, not the thread.
            plan.report.errors.append(ImportIssue(message: (error as? ServiceError)?.message ?? "\(error)"))
        }
        plan.report.elapsedMs = Int((monotonicNanos() - plan.started) / 1_000_000)
        let dryRun = try row.decode("dry_run", as: Int.self) != 0
        if !plan.report.errors.isEmpty || dryRun {
            try finish(id, state: plan.report.errors.isEmpty ? "done" : "failed", report: plan.report, db: db)
            plans.finished(id)
        } else {
            plans.put(plan)
        }
        return true
    }

    /// Records an import's end: its state and report. Its file's chunks are deleted by the
    /// writer's next steps, a few at a time (`CatalogStore.sweepChunks`), not here: a 64 MiB
    /// file would hold the catalog's writers while all of it went.
    static func finish(_ id: String, state: String, report: ImportReport, db: Database) throws {
        try db.run(
            "UPDATE imports SET state = ?, report = ? WHERE id = ?", state, String(decoding: try JSONCoding.encoder.encode(report), as: UTF8.self), id)
    }

    /// The bytes of one of an import's files ("" the document).
    func bytes(_ id: String, file: String) throws -> Data {
        try Chunks.joined(db, "SELECT data FROM import_chunks WHERE import_id = ? AND file = ? ORDER BY seq", [id, file])
    }

    private func placeId(source: String, id: String) throws -> Int64? {
        try db.scalarInt("SELECT place_id FROM place_external_ids WHERE source = ? AND external_id = ?", source, id)
    }

    /// An error of the report at an element's position (at most `ImportRules.maxErrors`).
    private func issue(_ message: String, at position: XMLPosition?, file: String? = nil, into plan: inout ImportPlan) {
        guard plan.report.errors.count < ImportRules.maxErrors else { return }
        plan.report.errors.append(ImportIssue(file: file, line: position?.line, column: position?.column, message: message))
    }

    /// Plans a place the file describes as `incoming` (id 0), whose fields the format carries:
    /// created, or merged over the place `existing` names (fields the format does not carry
    /// kept), unchanged when it equals it. Answers how the plan names it, or nil when refused.
    private func plan(_ incoming: Place, existing: Int64?, carries: (inout Place, Place) -> Void, into plan: inout ImportPlan) throws
        -> Result<PlannedPlace, ServiceError>
    {
        if let existing {
            let current = try CatalogStore.place(existing, in: db)
            var merged = current
            carries(&merged, incoming)
            merged.externalIds.merge(incoming.externalIds) { _, new in new }
            merged = PlaceRules.normalized(merged, defaultZone: defaultZone)
            do throws(ServiceError) {
                try PlaceRules.validate(merged, categories: categories)
            } catch {
                return .failure(error)
            }
            if merged == current {
                plan.report.places.unchanged += 1
            } else {
                plan.updates.append((merged, current.version))
                plan.report.places.updated += 1
            }
            return .success(.existing(existing))
        }
        let place = PlaceRules.normalized(incoming, defaultZone: defaultZone)
        do throws(ServiceError) {
            try PlaceRules.validate(place, categories: categories)
        } catch {
            return .failure(error)
        }
        plan.creates.append(place)
        plan.report.places.created += 1
        return .success(.new(plan.creates.count - 1))
    }

    // MARK: The content format

    func planContent(_ bytes: Data, importId: String, into plan: inout ImportPlan) throws {
        var images = MapImages()
        let document: ContentDocument
        do throws(ContentErrors) {
            document = try ContentDocument.parse(bytes)
        } catch {
            for error in error.errors { issue(error.message, at: error.position, into: &plan) }
            return
        }
        let source = document.source
        let now = Logger.timestamp()
        var pois: [String: PlannedPlace] = [:]
        for poi in document.pois {
            let names = Dictionary(poi.names.map { ($0.lang, $0.text) }, uniquingKeysWith: { first, _ in first })
            let descriptions = Dictionary(poi.descriptions.map { ($0.lang, $0.text) }, uniquingKeysWith: { first, _ in first })
            let incoming = Place(
                id: 0, name: poi.names.preferred ?? "", category: poi.category, lat: poi.lat, lon: poi.lon, address: poi.address,
                phone: poi.phone, website: poi.website, priceLevel: poi.price, description: poi.descriptions.preferred,
                photos: poi.photos.map { Photo(url: $0.url, attribution: $0.attribution) }, externalIds: [source: poi.id],
                createdAt: now, updatedAt: now, nameI18n: names, descriptionI18n: descriptions.isEmpty ? nil : descriptions,
                seasons: poi.seasons.isEmpty ? nil : poi.seasons.map { Season(from: $0.from, to: $0.to) })
            let result = try self.plan(
                incoming, existing: try placeId(source: source, id: poi.id),
                carries: { place, file in
                    // The fields the format carries are the file's; the rest (popularity, hours, time zone …) stay.
                    (place.name, place.nameI18n, place.category, place.lat, place.lon) = (file.name, file.nameI18n, file.category, file.lat, file.lon)
                    (place.address, place.phone, place.website, place.priceLevel) = (file.address, file.phone, file.website, file.priceLevel)
                    (place.description, place.descriptionI18n, place.photos, place.seasons) = (file.description, file.descriptionI18n, file.photos, file.seasons)
                }, into: &plan)
            switch result {
            case .success(let planned): pois[poi.id] = planned
            case .failure(let error): issue("poi '\(poi.id)': \(error.field.map { "\($0): " } ?? "")\(error.message)", at: poi.position, into: &plan)
            }
        }
        for tour in document.tours {
            var stops: [PlannedPlace] = []
            for stop in tour.stops {
                if let planned = pois[stop.ref] {
                    stops.append(planned)
                } else if let id = try placeId(source: source, id: stop.ref) {
                    stops.append(.existing(id))
                } else if document.pois.contains(where: { $0.id == stop.ref }) {
                    continue  // Its POI was refused, with its own error.
                } else {
                    issue(
                        "tour '\(tour.id)': stop ref '\(stop.ref)' names no poi of this file nor of an earlier import from source '\(source)'",
                        at: stop.position, into: &plan)
                }
            }
            let names = Dictionary(tour.names.map { ($0.lang, $0.text) }, uniquingKeysWith: { first, _ in first })
            let descriptions = Dictionary(tour.descriptions.map { ($0.lang, $0.text) }, uniquingKeysWith: { first, _ in first })
            let currentId = try db.scalarInt("SELECT tour_id FROM tour_external_ids WHERE source = ? AND external_id = ?", source, tour.id)
            let current = try currentId.flatMap { try CatalogStore.tours(where: "t.id = ?", [$0], limit: 1, in: db).first }
            var incoming = current ?? Tour(id: 0, name: "", stops: [], createdAt: now, updatedAt: now)
            incoming.name = PlaceRules.trimmed(tour.names.preferred ?? "")
            incoming.nameI18n = names
            incoming.description = tour.descriptions.preferred
            incoming.descriptionI18n = descriptions
            incoming.externalIds[source] = tour.id
            // Validated with its stops as ids: a new place stands in as minus one more than its
            // index in the plan, a number no place has, the same at each of its stops.
            let placeholders = stops.map { stop in
                switch stop {
                case .existing(let id): id
                case .new(let index): -Int64(index) - 1
                }
            }
            incoming.stops = placeholders
            let placeholder = incoming
            do throws(ServiceError) {
                try TourRules.validate(placeholder)
            } catch {
                issue("tour '\(tour.id)': \(error.field.map { "\($0): " } ?? "")\(error.message)", at: tour.position, into: &plan)
                continue
            }
            let index = plan.tours.count
            let changed =
                current.map { current in
                    stops.contains { if case .new = $0 { true } else { false } } || current.name != incoming.name
                        || current.nameI18n != incoming.nameI18n || current.description != incoming.description
                        || current.descriptionI18n != incoming.descriptionI18n || current.stops != incoming.stops
                        || current.externalIds != incoming.externalIds
                } ?? true
            if changed {
                plan.tours.append(ImportPlan.PlannedTour(tour: incoming, stops: stops, current: current))
                if current == nil { plan.report.tours.created += 1 } else { plan.report.tours.updated += 1 }
            } else {
                plan.report.tours.unchanged += 1
            }
            guard let map = tour.map else { continue }
            try planMap(map, tour: tour, current: current?.id, index: changed ? index : nil, importId: importId, images: &images, into: &plan)
        }
    }

    /// Plans a tour's map from a file of the import: checked, fitted, and unchanged when the
    /// tour (`current`, when it exists) has the same image placed by the same points. `index`
    /// is the tour's place in the plan when the plan writes it.
    private func planMap(
        _ map: ContentMap, tour: ContentTour, current: Int64?, index: Int?, importId: String,
        images: inout MapImages, into plan: inout ImportPlan
    ) throws {
        let jpeg = try images.image(map.file) { try bytes(importId, file: map.file) }
        guard !jpeg.isEmpty else {
            issue("tour '\(tour.id)': its map file '\(map.file)' is not in the import", at: map.position, into: &plan)
            return
        }
        let points = map.points.map { MapSet.Point(x: $0.x, y: $0.y, lat: $0.lat, lon: $0.lon) }
        if let current, let row = try db.queryOne("SELECT jpeg, points FROM tour_maps WHERE tour_id = ?", current),
            try row.decode("jpeg", as: Data.self) == jpeg,
            try JSONCoding.decoder.decode([MapSet.Point].self, from: Data(try row.decode("points", as: String.self).utf8)) == points
        {
            plan.report.maps.unchanged += 1
            return
        }
        let image: JPEGImage
        do throws(JPEGError) {
            image = try JPEGImage.check(jpeg, limits: TourMapRules.jpeg)
        } catch {
            issue("tour '\(tour.id)': \(error.description)", at: map.position, file: map.file, into: &plan)
            return
        }
        let controls = map.points.map { ControlPoint(x: $0.x, y: $0.y, coordinate: Coordinate(uncheckedLatitude: $0.lat, longitude: $0.lon)) }
        let georeference: MapGeoreference
        do throws(AffineFitError) {
            georeference = try MapGeoreference.fit(controls, width: image.width, height: image.height, limits: AffineFitLimits(maxRMSMeters: maxRMSMeters))
        } catch {
            issue("tour '\(tour.id)': \(error.description)", at: map.position, into: &plan)
            return
        }
        let tourIndex: Int
        if let index {
            tourIndex = index
        } else if let current, let tour = try CatalogStore.tours(where: "t.id = ?", [current], limit: 1, in: db).first {
            // The tour itself is unchanged: its map is set on it as it is.
            tourIndex = plan.tours.count
            plan.tours.append(ImportPlan.PlannedTour(tour: tour, stops: tour.stops.map { .existing($0) }, current: tour))
        } else {
            return
        }
        // Each tour stores its map's image: tours sharing one image cost its bytes each.
        plan.mapBytes += jpeg.count
        guard plan.mapBytes <= ImportRules.maxMapBytes else {
            issue("tour '\(tour.id)': the maps this import sets hold more than \(ImportRules.maxMapBytes) bytes in all", at: map.position, into: &plan)
            return
        }
        plan.maps.append(ImportPlan.PlannedMap(tour: tourIndex, jpeg: jpeg, points: points, georeference: georeference))
        plan.report.maps.created += 1
    }

    // MARK: OpenStreetMap

    func planOSM(_ bytes: Data, into plan: inout ImportPlan) throws {
        let document: OSMDocument
        do throws(OSMError) {
            document = try OSMDocument(bytes: [UInt8](bytes), mapping: mapping, maxBytes: ImportRules.maxDocumentBytes(.osm), streets: true)
        } catch {
            if case .xml(let xml) = error { issue(xml.message, at: xml.position, into: &plan) } else { issue(error.description, at: nil, into: &plan) }
            return
        }
        let now = Logger.timestamp()
        var skipped = document.counts.waysMissingNodes + document.counts.invalidElements
        var dropped = 0
        var seen = Set<String>()
        for osm in document.places {
            // Two places of one id would claim one external id twice: the writing would fail
            // on it, so the planning does, dry run or not.
            guard seen.insert(osm.externalID).inserted else {
                issue("OSM element \(osm.externalID) is given twice", at: nil, into: &plan)
                continue
            }
            var incoming = Place(
                id: 0, name: osm.name, category: osm.category, lat: osm.lat, lon: osm.lon, address: osm.address, phone: osm.phone,
                website: osm.website, description: osm.description,
                openingHours: osm.openingHours.map { OpeningPeriod(day: $0.day, open: $0.open, close: $0.close) },
                externalIds: ["osm": osm.externalID], createdAt: now, updatedAt: now,
                nameI18n: osm.localizedNames.isEmpty ? nil : osm.localizedNames, openingHoursText: osm.openingHoursText)
            // OpenStreetMap's optional fields are as mappers typed them: one that breaks a rule is
            // left out (and counted), not the place.
            dropped += Self.dropInvalidOptionals(&incoming, categories: categories)
            let result = try self.plan(
                incoming, existing: try placeId(source: "osm", id: osm.externalID),
                carries: { place, file in
                    (place.name, place.nameI18n, place.category, place.lat, place.lon) = (file.name, file.nameI18n, file.category, file.lat, file.lon)
                    (place.address, place.phone, place.website, place.description) = (file.address, file.phone, file.website, file.description)
                    (place.openingHours, place.openingHoursText) = (file.openingHours, file.openingHoursText)
                }, into: &plan)
            if case .failure = result { skipped += 1 }
        }
        plan.report.skipped = skipped
        plan.report.droppedFields = dropped
        plan.streets = PlannedStreets(document.streets)
        plan.addresses = PlannedAddresses(document.addresses)
    }

    /// Clears each optional field of `place` that breaks its rule; answers how many.
    static func dropInvalidOptionals(_ place: inout Place, categories: Set<String>) -> Int {
        var dropped = 0
        func keep<Value>(_ field: WritableKeyPath<Place, Value?>) {
            var only = place
            // Checked alone: the place with this one optional field and none of the others.
            for other in [\Place.address, \Place.phone, \Place.website, \Place.description, \Place.openingHoursText] as [WritableKeyPath<Place, String?>] {
                only[keyPath: other] = nil
            }
            only.nameI18n = nil
            only.openingHours = []
            only[keyPath: field] = place[keyPath: field]
            guard place[keyPath: field] != nil, (try? PlaceRules.validate(PlaceRules.normalized(only), categories: categories)) == nil else { return }
            place[keyPath: field] = nil
            dropped += 1
        }
        keep(\.address)
        keep(\.phone)
        keep(\.website)
        keep(\.description)
        keep(\.openingHoursText)
        keep(\.nameI18n)
        if !place.openingHours.isEmpty {
            var only = place
            (only.address, only.phone, only.website, only.description, only.openingHoursText, only.nameI18n) = (nil, nil, nil, nil, nil, nil)
            if (try? PlaceRules.validate(PlaceRules.normalized(only), categories: categories)) == nil {
                place.openingHours = []
                dropped += 1
            }
        }
        return dropped
    }
}

/// The map images of one import, read once each however many tours name them (`Data` shares
/// its bytes between the tours' plans).
struct MapImages {
    private var read: [String: Data] = [:]

    mutating func image(_ file: String, _ load: () throws -> Data) rethrows -> Data {
        if let image = read[file] { return image }
        let image = try load()
        read[file] = image
        return image
    }
}
