import Bus
import Contracts
import Foundation
import Geo
import ServiceKit
import Storage

/// The form, and annotations: submit, get, delete, nearby and viewport.
extension NotifyStore {
    /// Cursors of the annotation lists are at most this many characters.
    static let maxCursorBytes = 128

    static func noAnnotation(_ id: Int64) -> ServiceError {
        ServiceError(.notFound, "no live annotation with id \(id)", field: "id")
    }

    // MARK: Form

    /// The form in force, or nil before one is set; parsed once per version on each thread.
    func currentForm() throws -> AnnotationForm? {
        guard let row = try db.queryOne("SELECT version, json FROM form WHERE id = 1") else { return nil }
        let version = try row.decode("version", as: Int.self)
        if let cachedForm, cachedForm.version == version { return cachedForm }
        let form = try AnnotationForm(json: Data(try row.decode("json", as: String.self).utf8))
        cachedForm = form
        return form
    }

    /// Stores `json` as the form when there is none (at start, `--form`).
    func storeInitialForm(_ json: Data) throws {
        let form = try AnnotationForm(json: json)
        try db.transaction {
            try db.run(
                "INSERT OR IGNORE INTO form (id, version, json, updated_at_ms) VALUES (1, ?, ?, ?)",
                form.version, String(decoding: json, as: UTF8.self), now)
        }
    }

    /// `annotations.form`: the view at the position `near` (anywhere without it) in `lang`.
    func formView(_ request: FormRequest) throws -> FormView {
        let position = request.near?.coordinate
        guard let form = try currentForm() else { throw ServiceError(.notFound, "no form has been set yet") }
        return form.view(at: position, language: request.lang)
    }

    /// `annotations.form.set {form}` (admins): the form's JSON as sent, checked by
    /// `AnnotationForm` (its params already held to `FormReplacement`); its version must be
    /// greater than the current one, else `conflict`.
    func setForm(_ context: RequestContext) throws -> FormSet {
        let body = context.bodyJSON
        guard let member = JSONSpan.member("form", in: body) else { throw ServiceError.invalid("form", "is missing") }
        let json = body.subdata(in: member)
        let form: AnnotationForm
        do {
            form = try AnnotationForm(json: json)
        } catch {
            throw ServiceError(.invalidArgument, error.message, field: error.path.isEmpty ? "form" : "form.\(error.path)")
        }
        if let current = try db.scalarInt("SELECT version FROM form WHERE id = 1"), Int64(form.version) <= current {
            throw ServiceError(.conflict, "the version must be greater than the current one, \(current)", field: "form.version")
        }
        try db.run(
            """
            INSERT INTO form (id, version, json, updated_at_ms) VALUES (1, ?, ?, ?)
            ON CONFLICT (id) DO UPDATE SET version = excluded.version, json = excluded.json, updated_at_ms = excluded.updated_at_ms
            """, form.version, String(decoding: json, as: UTF8.self), now)
        return FormSet(version: form.version)
    }

    // MARK: Annotations

    /// `annotations.submit`: checks the values with the form at the position and the text,
    /// stores the annotation, and starts it *waiting* for each user whose suppression zone
    /// covers it (R3).
    func submit(_ request: SubmitRequest, caller: Caller) throws -> AnnotationJSON {
        let point = try Self.coordinate(request.lat, request.lon)
        try SubmitRequest.textRule.check(request.text)
        guard let form = try currentForm() else {
            throw ServiceError(.unavailable, "no form has been set yet; an admin sets one with annotations.form.set")
        }
        try form.validate(values: request.values, at: point)
        let now = self.now
        func count(since: Int64, upTo limit: Int) throws -> Int {
            Int(
                try db.scalarInt(
                    "SELECT COUNT(*) FROM (SELECT 1 FROM annotations WHERE user_id = ? AND created_at_ms >= ? LIMIT ?)",
                    caller.id, since, Int64(limit)) ?? 0)
        }
        guard try count(since: now - 59_999, upTo: options.submitsPerMinute) < options.submitsPerMinute else {
            throw ServiceError(.rateLimited, "at most \(options.submitsPerMinute) annotations a minute; try again in a moment")
        }
        guard try count(since: AlertRules.purgeHorizon(now: now), upTo: options.liveAnnotationsPerUser) < options.liveAnnotationsPerUser else {
            throw ServiceError(.rateLimited, "at most \(options.liveAnnotationsPerUser) of your annotations live at once; they expire after 12 h")
        }
        return try insert(by: caller.id, at: point, values: request.values, text: request.text, createdAt: now).wire()
    }

    /// Stores a checked annotation: its row, its place in the R*Tree, its pairs that start
    /// *waiting* (R3: every user whose suppression zone covers it), its change for sync.
    func insert(
        by user: Int64, at point: Coordinate, values: [String: String], text: String?, createdAt: Int64,
        externalId: String? = nil
    ) throws -> StoredAnnotation {
        let valuesJSON = String(decoding: try JSONCoding.encoder.encode(values), as: UTF8.self)
        try db.run(
            "INSERT INTO annotations (user_id, lat, lon, values_json, text, created_at_ms, external_id) VALUES (?, ?, ?, ?, ?, ?, ?)",
            user, point.latitude, point.longitude, valuesJSON, text, createdAt, externalId)
        let id = db.lastInsertRowID
        let cell = Self.cell(point)
        try db.run(
            "INSERT INTO annotations_geo (id, min_lat, max_lat, min_lon, max_lon) VALUES (?, ?, ?, ?, ?)",
            id, cell.lat, cell.lat, cell.lon, cell.lon)
        let annotation = StoredAnnotation(id: id, userId: user, point: point, values: values, text: text, createdAt: createdAt)
        for start in AlertRules.initialPairs(of: annotation.rules, zones: try zones(covering: annotation)) {
            try db.run(
                "INSERT OR REPLACE INTO pairs (user_id, annotation_id, state, disarmed_by) VALUES (?, ?, ?, ?)",
                start.userId, id, start.pair.state.rawValue, start.pair.disarmedBy)
        }
        try recordChange(id, at: point, deleted: false)
        return annotation
    }

    /// Annotations one `annotations.import` takes at most.
    static let maxImport = 500
    /// The bytes of an `external_id`.
    static let maxExternalIdBytes = 128

    /// `annotations.import` (admins): annotations from another system, each checked as a
    /// submission is (its field paths under `annotations[i]`), with a `created_at` within the
    /// last 12 h (RFC 3339) and an `external_id`; one already imported is left as it is. All or
    /// nothing: a refusal imports none. The author is the admin who imports.
    func importAnnotations(_ request: ImportRequest, caller: Caller) throws -> Imported {
        guard (1...Self.maxImport).contains(request.annotations.count) else {
            throw ServiceError.invalid("annotations", "must hold 1 to \(Self.maxImport) annotations")
        }
        guard let form = try currentForm() else {
            throw ServiceError(.unavailable, "no form has been set yet; an admin sets one with annotations.form.set")
        }
        let now = self.now
        var ids: [Int64] = []
        var imported = 0
        for (i, item) in request.annotations.enumerated() {
            let path = "annotations[\(i)]"
            do {
                let point = try Self.coordinate(item.lat, item.lon)
                try SubmitRequest.textRule.check(item.text)
                guard (1...Self.maxExternalIdBytes).contains(item.externalId.utf8.count),
                    !item.externalId.unicodeScalars.contains(where: { $0.properties.generalCategory == .control })
                else {
                    throw ServiceError.invalid("external_id", "must be 1 to \(Self.maxExternalIdBytes) bytes without control characters")
                }
                let createdAt = try Self.milliseconds(at: item.createdAt, field: "created_at") ?? now
                guard createdAt <= now, createdAt >= AlertRules.purgeHorizon(now: now) else {
                    throw ServiceError.invalid("created_at", "must be within the last 12 hours")
                }
                if let existing = try db.scalarInt("SELECT id FROM annotations WHERE external_id = ?", item.externalId) {
                    ids.append(existing)
                    continue
                }
                do {
                    try form.validate(values: item.values, at: point)
                } catch {
                    throw error.serviceError
                }
                ids.append(
                    try insert(
                        by: caller.id, at: point, values: item.values, text: item.text, createdAt: createdAt,
                        externalId: item.externalId
                    ).id)
                imported += 1
            } catch let error as ServiceError {
                throw ServiceError(error.code, error.message, field: error.field.map { "\(path).\($0)" } ?? path)
            }
        }
        return Imported(ids: ids, imported: imported)
    }

    /// Every zone that can cover `annotation`: within 500 m of it (by the zones' R*Tree) and
    /// made within 2 h of its `created_at`; `AlertRules` checks each exactly.
    func zones(covering annotation: StoredAnnotation) throws -> [SuppressionZone] {
        let box = try BoundingBox.around(annotation.point, radiusMeters: AlertRules.suppressionRadiusM)
        var zones: [Int64: SuppressionZone] = [:]
        for area in box.indexAreas {
            try db.forEachRow(
                """
                SELECT z.id, z.user_id, z.lat, z.lon, z.at_ms, z.report FROM zones_geo g JOIN zones z ON z.id = g.id
                WHERE g.min_lat >= ? AND g.max_lat <= ? AND g.min_lon >= ? AND g.max_lon <= ? AND z.at_ms BETWEEN ? AND ?
                """,
                [
                    Int64((area.south * Self.scale).rounded(.down)), Int64((area.north * Self.scale).rounded(.up)),
                    Int64((area.west * Self.scale).rounded(.down)), Int64((area.east * Self.scale).rounded(.up)),
                    AlertRules.shifted(annotation.createdAt, by: -AlertRules.suppressionWindowMs),
                    AlertRules.shifted(annotation.createdAt, by: AlertRules.suppressionWindowMs),
                ]
            ) { row in
                zones[try row.decode("id")] = SuppressionZone(
                    userId: try row.decode("user_id"),
                    center: Coordinate(uncheckedLatitude: try row.decode("lat"), longitude: try row.decode("lon")),
                    at: try row.decode("at_ms"), report: try row.decode("report"))
            }
        }
        return zones.keys.sorted().compactMap { zones[$0] }
    }

    /// `annotations.delete`: its author or an admin deletes a live annotation, with its pairs.
    func delete(_ id: Int64, caller: Caller) throws {
        guard let found = try liveAnnotation(id, now: now) else { throw Self.noAnnotation(id) }
        guard found.userId == caller.id || caller.isAdmin else {
            throw ServiceError(.permissionDenied, "only its author or an admin deletes an annotation")
        }
        try db.run("DELETE FROM pairs WHERE annotation_id = ?", id)
        try db.run("DELETE FROM annotations_geo WHERE id = ?", id)
        try db.run("DELETE FROM annotations WHERE id = ?", id)
        try recordChange(id, at: found.point, deleted: true)
    }

    /// `annotations.nearby`: live annotations within `radius_m` (1 m to 50 km), nearest
    /// first, then by id; the cursor holds the last one's distance and id. Read nearest first
    /// (`NearestPage`), at most `nearbyReadBudget` points a page.
    func nearby(_ request: NearbyRequest) throws -> AnnotationPage {
        let center = request.near.coordinate
        let limit = try NotifyService.limit(request.limit)
        var after: (distance: Double, id: Int64)?
        if let cursor = request.cursor {
            let text = try OpaqueCursor.decode(cursor, maxLength: Self.maxCursorBytes)
            let parts = text.split(separator: "_")
            // Only a cursor this service writes (one page, one cursor).
            guard parts.count == 3, parts[0] == "n", let bits = UInt64(parts[1]), let id = Int64(parts[2]),
                Double(bitPattern: bits).isFinite, Double(bitPattern: bits) >= 0, Self.nearbyCursor(Double(bitPattern: bits), id) == cursor
            else { throw OpaqueCursor.invalid }
            after = (Double(bitPattern: bits), id)
        }
        // Points only, nearest first; then only the page's annotations are read whole.
        let now = self.now
        let walk = NearestPage(center: center, radius: request.radiusM, after: after, limit: limit, budget: options.nearbyReadBudget, slack: NearestFirst.slack)
        let (ordered, walked) = try walk.page { take in try livePointsNearestFirst(center, range: walk.range, now: now, take) }
        let candidates = try ordered.compactMap { found in try liveAnnotation(found.id, now: now).map { ($0, found.distance) } }
        let page = try fill(candidates, limit: limit) { $0.0.wire() }
        var next = walked.map { Self.nearbyCursor($0.distance, $0.id) }
        if page.items.count < candidates.count, let last = page.items.last {
            // Cut short by size: the next page starts after its last.
            next = Self.nearbyCursor(last.1, last.0.id)
        }
        return AnnotationPage(annotations: page.items.map { $0.0.wire() }, nextCursor: next)
    }

    static func nearbyCursor(_ distance: Double, _ id: Int64) -> String { OpaqueCursor.encode("n_\(distance.bitPattern)_\(id)") }

    /// `annotations.viewport`: live annotations inside the box (edges included; `west > east`
    /// crosses the 180th meridian), by id; the cursor holds the last id.
    func viewport(_ request: ViewportRequest) throws -> AnnotationPage {
        let box = try request.bbox.boundingBox(field: "bbox")
        let limit = try NotifyService.limit(request.limit)
        let after = try request.cursor.map { cursor throws(ServiceError) in try Self.viewportCursor.decode(cursor) } ?? 0
        // Points only, then only the page's annotations are read whole.
        let ids = try livePoints(in: box, now: now).keys.filter { $0 > after }.sorted()
        let now = self.now
        let ordered = try ids.prefix(limit).compactMap { try liveAnnotation($0, now: now) }
        let page = try fill(ordered, limit: limit) { $0.wire() }
        let next = page.items.count < ids.count ? page.items.last.map { Self.viewportCursor.encode($0.id) } : nil
        return AnnotationPage(annotations: page.items.map { $0.wire() }, nextCursor: next)
    }

    static let viewportCursor = IDCursor(tag: "v", maxLength: maxCursorBytes, minimum: 0)

    /// The first items of `ordered` that fit a page of `limit` items and the page budget.
    func fill<Item, Wire: Encodable>(_ ordered: [Item], limit: Int, wire: (Item) -> Wire) throws -> PageFiller<Item> {
        var page = PageFiller<Item>(limit: limit, budget: options.pageBudgetBytes)
        for item in ordered {
            guard page.add(item, size: try JSONCoding.encoder.encode(wire(item)).count) else { break }
        }
        return page
    }
}
