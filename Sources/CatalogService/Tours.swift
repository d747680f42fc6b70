import Bus
import Contracts
import Foundation
import Geo
import ServiceKit
import Storage

// Tours: ordered routes of the catalog's places, published as `catalog.tour.*` events.

/// The rules every stored tour satisfies; each failure names its field.
enum TourRules {
    static let maxStops = 500
    /// `tours.list near`: the radius when none is given, and the largest.

    /// Puts `tour`'s `name` and `description` in `lang` (`LanguageTexts.localized`) and says
    /// where they came from; nil (and `tour` unchanged) without a preference.
    static func localize(_ tour: inout Tour, _ lang: LanguagePreference?) -> TextLanguages? {
        guard lang != nil else { return nil }
        let name = LanguageTexts.localized(tour.nameI18n, lang, own: tour.name)
        let description = LanguageTexts.localized(tour.descriptionI18n, lang, own: tour.description)
        tour.name = name.text ?? tour.name
        tour.description = description.text
        return TextLanguages(name: name.tag, description: description.tag)
    }

    static func validate(_ t: Tour) throws(ServiceError) {
        guard !t.name.isEmpty else { throw .invalid("name", "must not be empty") }
        try PlaceTexts.name.check(t.name)
        try PlaceTexts.description.check(t.description)
        try LanguageTexts.check(t.nameI18n, field: "name_i18n", rule: PlaceTexts.name)
        try LanguageTexts.check(t.descriptionI18n, field: "description_i18n", rule: PlaceTexts.description)
        guard !t.stops.isEmpty, t.stops.count <= maxStops else { throw .invalid("stops", "must hold 1 to \(maxStops) place ids") }
        var seen = Set<Int64>()
        for (i, id) in t.stops.enumerated() where !seen.insert(id).inserted {
            throw .invalid("stops[\(i)]", "place \(id) is already a stop of this tour")
        }
        try PlaceRules.externalIds(t.externalIds)
    }
}

extension CatalogStore {
    /// Page sizes and cursors of `tours.list`.
    static let tourIdCursor = IDCursor(tag: "t", maxLength: 64, minimum: 0)

    // MARK: Tour reads

    /// Tour `id`, or `not_found`.
    /// The tour `id`, or `not_found` naming `field` (the request's member that gave the id).
    func tour(_ id: Int64, field: String = "id") throws -> Tour {
        guard let tour = try tours(where: "t.id = ?", [id], limit: 1).first else {
            throw ServiceError(.notFound, "no tour with id \(id)", field: field)
        }
        return tour
    }

    /// Tours matching a condition on `tours t`, but those an import is writing.
    private func tours(where condition: String, _ args: [SQLBindable?], limit: Int) throws -> [Tour] {
        try Self.tours(where: "(\(condition))\(HiddenImport.tours("t.id"))", args, limit: limit, in: db)
    }

    /// Tours matching a condition on `tours t`, by ascending id, with their stops (any connection).
    static func tours(where condition: String, _ args: [SQLBindable?], limit: Int, in db: Database) throws -> [Tour] {
        let rows = try db.query(
            """
            SELECT t.id, t.name, t.name_i18n, t.description, t.description_i18n, t.external_ids, t.created_at, t.updated_at, t.version
            FROM tours t WHERE \(condition) ORDER BY t.id LIMIT ?
            """, args + [limit])
        return try rows.map { row in
            func json(_ column: String) throws -> [String: String] {
                try JSONCoding.decoder.decode([String: String].self, from: Data(row.decode(column, as: String.self).utf8))
            }
            let id: Int64 = try row.decode("id")
            let stops = try db.query(
                """
                SELECT s.place_id, p.lat, p.lon FROM tour_stops s JOIN places p ON p.id = s.place_id
                WHERE s.tour_id = ? ORDER BY s.position
                """, id)
            let first = stops.first
            return try Tour(
                id: id, name: row.decode("name"), nameI18n: json("name_i18n"), description: row.decode("description"),
                descriptionI18n: json("description_i18n"), stops: stops.map { row throws(RowError) in try row.decode("place_id") },
                lat: first?.decode("lat"), lon: first?.decode("lon"), externalIds: json("external_ids"),
                createdAt: row.decode("created_at"), updatedAt: row.decode("updated_at"), version: row.decode("version"))
        }
    }

    /// `tours.get`: the tour and its stops' places, texts in `lang` where they have them.
    func tourDetail(_ request: TourGet) throws -> TourDetail {
        let lang = try LanguagePreference.read(request.lang)
        var tour = try tour(request.id)
        let places = try db.query(
            """
            SELECT p.id, p.name, p.name_i18n, p.category, p.lat, p.lon FROM tour_stops s JOIN places p ON p.id = s.place_id
            WHERE s.tour_id = ? ORDER BY s.position
            """, tour.id
        ).map { row in
            let names = try row.decode("name_i18n", as: String?.self).map { try JSONCoding.decoder.decode([String: String].self, from: Data($0.utf8)) }
            let name = LanguageTexts.localized(names, lang, own: nil)
            return TourStop(
                id: try row.decode("id"), name: try name.text ?? row.decode("name"),
                category: try row.decode("category"), lat: try row.decode("lat"), lon: try row.decode("lon"),
                lang: lang.map { _ in TextLanguages(name: name.tag) })
        }
        let texts = TourRules.localize(&tour, lang)
        return TourDetail(tour: tour, places: places, lang: texts)
    }

    /// `tours.list`: by id after the cursor, or, near a point, the tours with a stop within the
    /// radius by the distance to their nearest stop (ties by id).
    func listTours(_ request: TourList) throws -> TourPage {
        let limit = try PageLimit.tours.validated(request.limit)
        let lang = try LanguagePreference.read(request.lang)
        guard request.radiusM == nil || request.near != nil else { throw ServiceError.invalid("radius_m", "needs near") }
        guard let near = request.near else {
            let after = try request.cursor.map(Self.tourIdCursor.decode) ?? 0
            let tours = try tours(where: "t.id > ?", [after], limit: limit)
            let next = tours.count == limit ? tours.last.map { Self.tourIdCursor.encode($0.id) } : nil
            return TourPage(tours: tours.map { TourListItem(tour: $0, distanceM: nil).localized(lang) }, nextCursor: next)
        }
        // The point and the radius are in range: the params' rules held them.
        let reading = ToursNear(
            center: near.coordinate, radius: request.radiusM ?? TourList.defaultRadius, after: try request.cursor.map(TourDistanceCursor.decode),
            limit: limit, budget: options.toursNearReadBudget, hidden: try HiddenImport.tours(in: db))
        let (page, next) = try reading.page(db)
        var items: [TourListItem] = []
        for entry in page { items.append(TourListItem(tour: try tour(entry.id), distanceM: entry.distance).localized(lang)) }
        return TourPage(tours: items, nextCursor: next?.encoded)
    }

    /// How many tours there are (the demo's "itinerary" category counts them).
    func tourCount() throws -> Int {
        Int(try db.scalarInt("SELECT COUNT(*) FROM tours WHERE 1\(HiddenImport.tours("id"))") ?? 0)
    }

    // MARK: Tour writes (writer thread only; each in one transaction with its event)

    func createTour(_ input: TourInput) throws -> Tour {
        let now = Logger.timestamp()
        let names = input.nameI18n ?? [:]
        var tour = Tour(
            id: 0, name: try LanguageTexts.name(input.name, names), nameI18n: names, description: input.description,
            descriptionI18n: input.descriptionI18n ?? [:], stops: input.stops, externalIds: input.externalIds ?? [:],
            createdAt: now, updatedAt: now)
        try TourRules.validate(tour)
        return try db.transaction { try insertTour(&tour) }
    }

    /// Writes a new, valid tour (its id assigned here) whose stops exist, claims its external
    /// ids and publishes it, in the caller's transaction; answers it as stored. An import writing
    /// in slices gives the id it set aside, `hiddenId`: its stops may be the import's places,
    /// and the tour is not published yet (nor read back: it answers `tour`).
    @discardableResult
    func insertTour(_ tour: inout Tour, hiddenId: Int64? = nil) throws -> Tour {
        try checkStopsExist(tour.stops, seeingHidden: hiddenId != nil)
        try db.run(
            """
            INSERT INTO tours (id, name, name_i18n, description, description_i18n, external_ids, created_at, updated_at, version)
            VALUES (?, ?, ?, ?, ?, ?, ?, ?, 1)
            """, hiddenId, tour.name, PlaceJSON.text(tour.nameI18n), tour.description, PlaceJSON.text(tour.descriptionI18n),
            PlaceJSON.text(tour.externalIds), tour.createdAt, tour.updatedAt)
        tour.id = db.lastInsertRowID
        try writeStops(tour)
        try claimTourExternalIds(tour)
        if hiddenId != nil { return tour }
        let stored = try self.tour(tour.id)
        try worker.emit(TourEvents.upserted, stored)
        return stored
    }

    func updateTour(_ update: TourUpdate) throws -> Tour {
        try db.transaction {
            let current = try tour(update.id)
            if let expected = update.expectedVersion, expected != current.version {
                throw ServiceError(.conflict, "tour \(update.id) is at version \(current.version), not \(expected)", field: "expected_version")
            }
            var tour = current
            tour.nameI18n = update.nameI18n.applied(to: current.nameI18n) ?? [:]
            switch update.name {
            case .value(let name): tour.name = PlaceRules.trimmed(name)
            case .null: tour.name = try LanguageTexts.name(nil, tour.nameI18n)
            case .absent: break
            }
            tour.description = update.description.applied(to: current.description)
            tour.descriptionI18n = update.descriptionI18n.applied(to: current.descriptionI18n) ?? [:]
            tour.stops = try update.stops.applied(to: current.stops, field: "stops")
            tour.externalIds = update.externalIds.applied(to: current.externalIds) ?? [:]
            try TourRules.validate(tour)
            guard tour != current else { return current }
            return try storeTour(tour, over: current)
        }
    }

    /// Writes a changed, valid tour over `current` (one version on) and publishes it, in the
    /// caller's transaction; answers it as stored. An import's last step may give it stops the
    /// import has written hidden (`seeingHidden`).
    @discardableResult
    func storeTour(_ tour: Tour, over current: Tour, seeingHidden: Bool = false) throws -> Tour {
        try checkStopsExist(tour.stops, seeingHidden: seeingHidden)
        try db.run(
            """
            UPDATE tours SET name = ?, name_i18n = ?, description = ?, description_i18n = ?, external_ids = ?,
                   updated_at = ?, version = version + 1 WHERE id = ?
            """, tour.name, PlaceJSON.text(tour.nameI18n), tour.description, PlaceJSON.text(tour.descriptionI18n),
            PlaceJSON.text(tour.externalIds), Logger.timestamp(), tour.id)
        if tour.stops != current.stops {
            try db.run("DELETE FROM tour_stops WHERE tour_id = ?", tour.id)
            try writeStops(tour)
        }
        if tour.externalIds != current.externalIds {
            try db.run("DELETE FROM tour_external_ids WHERE tour_id = ?", tour.id)
            try claimTourExternalIds(tour)
        }
        let stored = try self.tour(tour.id)
        try worker.emit(TourEvents.upserted, stored)
        return stored
    }

    func deleteTour(_ id: Int64) throws {
        try db.transaction {
            try db.run("DELETE FROM tours WHERE id = ?\(HiddenImport.tours("id"))", id)
            guard db.changes > 0 else { throw ServiceError(.notFound, "no tour with id \(id)", field: "id") }
            try worker.emit(TourEvents.deleted, TourDeleted(id: id))
        }
    }

    /// The tours that have place `id` as a stop (read before the place is deleted or moved),
    /// but those an import is writing (published when it is done, as they are then).
    func tours(withStop id: Int64) throws -> [Int64] {
        try db.query(
            "SELECT DISTINCT tour_id FROM tour_stops WHERE place_id = ?\(HiddenImport.tours("tour_id")) ORDER BY tour_id", id
        ).map { row throws(RowError) in
            try row.decode("tour_id")
        }
    }

    /// Publishes `tours` again after a change to one of their stops (a stop removed with its
    /// place, a first stop moved): each one's version grows and its event goes out, in the
    /// caller's transaction. The remaining stops keep their order (positions may have gaps).
    func republishTours(_ tours: [Int64]) throws {
        let now = Logger.timestamp()
        for id in tours {
            try db.run("UPDATE tours SET version = version + 1, updated_at = ? WHERE id = ?", now, id)
            try worker.emit(TourEvents.upserted, try tour(id))
        }
    }

    /// Tours whose first stop is place `id`: their start moves with it (those an import is
    /// writing are published when it is done).
    func tours(startingAt id: Int64) throws -> [Int64] { try tours(startingAtAnyOf: "?", [id]) }

    /// Tours whose first stop is one of `places` (SQL: a list of ids, or a query of them), each
    /// once, in id order.
    func tours(startingAtAnyOf places: String, _ arguments: [SQLBindable?] = []) throws -> [Int64] {
        try db.query(
            """
            SELECT DISTINCT s.tour_id FROM tour_stops s
            WHERE s.place_id IN (\(places)) AND s.position = (SELECT min(position) FROM tour_stops WHERE tour_id = s.tour_id)\(HiddenImport.tours("s.tour_id"))
            ORDER BY s.tour_id
            """, arguments
        ).map { row throws(RowError) in try row.decode("tour_id") }
    }

    /// One tour per snapshot page entry: tours after the id in `after`, as `catalog.tour.upserted` events.
    func tourSnapshot(after: Int64, limit: Int) throws -> (events: [(type: String, body: Data)], ids: [Int64]) {
        let tours = try tours(where: "t.id > ?", [after], limit: limit)
        return (try tours.map { (type: TourEvents.upserted, body: try JSONCoding.encoder.encode($0)) }, tours.map(\.id))
    }

    /// Refuses stops that are no place (or one an import is writing, unless `seeingHidden`).
    private func checkStopsExist(_ stops: [Int64], seeingHidden: Bool) throws {
        let hidden = seeingHidden ? "" : HiddenImport.places("id")
        let found = Set(
            try db.query("SELECT id FROM places WHERE id IN (SELECT value FROM json_each(?))\(hidden)", "[" + stops.map(String.init).joined(separator: ",") + "]").map {
                row throws(RowError) in try row.decode("id", as: Int64.self)
            })
        if let (i, missing) = stops.enumerated().first(where: { !found.contains($0.element) }) {
            throw ServiceError.invalid("stops[\(i)]", "no place with id \(missing)")
        }
    }

    private func writeStops(_ tour: Tour) throws {
        for (position, place) in tour.stops.enumerated() {
            try db.run("INSERT INTO tour_stops (tour_id, position, place_id) VALUES (?, ?, ?)", tour.id, position, place)
        }
    }

    private func claimTourExternalIds(_ tour: Tour) throws {
        for (source, externalId) in tour.externalIds.sorted(by: { $0.key < $1.key }) {
            if let owner = try db.queryOne(
                "SELECT tour_id, (1\(HiddenImport.tours("tour_id"))) AS shown FROM tour_external_ids WHERE source = ? AND external_id = ?", source, externalId)
            {
                guard try owner.decode("shown", as: Int.self) == 1 else { throw ImportRules.beingImported(source, externalId) }
                throw ServiceError(.alreadyExists, "\(source) id \(externalId) already belongs to tour \(try owner.decode("tour_id", as: Int64.self))", field: "external_ids")
            }
            try db.run("INSERT INTO tour_external_ids (source, external_id, tour_id) VALUES (?, ?, ?)", source, externalId, tour.id)
        }
    }
}

/// Where a `tours.list near` page ended: the distance and id of its last tour.
struct TourDistanceCursor {
    var distance: Double
    var id: Int64

    var encoded: String { OpaqueCursor.encode("d\(String(distance.bitPattern, radix: 16)):\(id)") }

    static func decode(_ cursor: String) throws(ServiceError) -> TourDistanceCursor {
        let text = try OpaqueCursor.decode(cursor, maxLength: 100)
        let parts = text.dropFirst().split(separator: ":")
        // Only a cursor this encoder writes: a finite distance not below 0, the hex and the id
        // as it writes them (so one page has one cursor).
        guard text.hasPrefix("d"), parts.count == 2, let bits = UInt64(parts[0], radix: 16), let id = Int64(parts[1]),
            Double(bitPattern: bits).isFinite, Double(bitPattern: bits) >= 0,
            TourDistanceCursor(distance: Double(bitPattern: bits), id: id).encoded == cursor
        else { throw OpaqueCursor.invalid }
        return TourDistanceCursor(distance: Double(bitPattern: bits), id: id)
    }
}
