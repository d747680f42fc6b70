import Bus
import Contracts
import Foundation
import Geo
import ServiceKit
import Storage

/// Settings, position reports judged by `AlertRules`, the inbox.
extension NotifyStore {
    /// What a user who never set anything has: alerts on, 500 m, UTC, no timers.
    static let defaultSettings = SettingsJSON(alerts: true, radiusM: 500, timezone: "UTC", appTimerMin: nil, idleTimerMin: nil)
    /// The timers are 1 minute to 24 hours.
    static let timerRange = 1...1_440
    /// A time zone name is at most this many bytes (the longest IANA name is 32).
    static let maxTimezoneBytes = 64
    /// `notify.ack` takes at most this many ids.
    static let maxAckIds = 100

    // MARK: Settings

    /// The user's settings, or the defaults.
    func settingsJSON(of user: Int64) throws -> SettingsJSON {
        guard let row = try db.queryOne("SELECT alerts, radius_m, timezone, app_timer_min, idle_timer_min FROM settings WHERE user_id = ?", user) else {
            return Self.defaultSettings
        }
        return SettingsJSON(
            alerts: try row.decode("alerts"), radiusM: try row.decode("radius_m"), timezone: try row.decode("timezone"),
            appTimerMin: try row.decode("app_timer_min"), idleTimerMin: try row.decode("idle_timer_min"))
    }

    /// `notify.settings.set`: what is given replaces what is stored, each value checked.
    func setSettings(_ change: SettingsChange, caller: Caller) throws -> SettingsJSON {
        var settings = try settingsJSON(of: caller.id)
        if let alerts = change.alerts { settings.alerts = alerts }
        if let radius = change.radiusM { settings.radiusM = try AlertSettings(alerts: settings.alerts, radiusM: radius).radiusM }
        if let timezone = change.timezone {
            // An IANA name (Area/Place, Etc/GMT-10, UTC, US/Eastern…) that Foundation knows as
            // itself: not only ICU's list of current names, which leaves out Asia/Kolkata.
            guard timezone.utf8.count <= Self.maxTimezoneBytes, !timezone.contains(".."),
                timezone.utf8.allSatisfy({ (0x41...0x5A).contains($0) || (0x61...0x7A).contains($0) || (0x30...0x39).contains($0) || "/_-+".utf8.contains($0) }),
                timezone == "UTC" || TimeZone(identifier: timezone)?.identifier == timezone
            else {
                throw ServiceError.invalid("timezone", "must be an IANA time zone name such as Australia/Sydney, or UTC")
            }
            settings.timezone = timezone
        }
        settings.appTimerMin = change.appTimerMin.applied(to: settings.appTimerMin)
        settings.idleTimerMin = change.idleTimerMin.applied(to: settings.idleTimerMin)
        for (name, value) in [("app_timer_min", settings.appTimerMin), ("idle_timer_min", settings.idleTimerMin)] {
            if let value, !Self.timerRange.contains(value) {
                throw ServiceError.invalid(name, "must be \(Self.timerRange.lowerBound) to \(Self.timerRange.upperBound) minutes")
            }
        }
        try db.run(
            """
            INSERT INTO settings (user_id, alerts, radius_m, timezone, app_timer_min, idle_timer_min) VALUES (?, ?, ?, ?, ?, ?)
            ON CONFLICT (user_id) DO UPDATE SET alerts = excluded.alerts, radius_m = excluded.radius_m, timezone = excluded.timezone,
                app_timer_min = excluded.app_timer_min, idle_timer_min = excluded.idle_timer_min
            """, caller.id, settings.alerts, settings.radiusM, settings.timezone, settings.appTimerMin, settings.idleTimerMin)
        return settings
    }

    // MARK: Reports

    /// A report's `at` (or an import's `created_at`): an RFC 3339 time, read strictly, in
    /// milliseconds since 1970 (`RFC3339`); nil when absent.
    static func milliseconds(at text: String?, field: String = "at") throws(ServiceError) -> Int64? {
        guard let text else { return nil }
        return try RFC3339.milliseconds(text, field: field)
    }

    /// `notify.location`: judges the report (`AlertRules.judge`) on what it needs — the live
    /// annotations within `radius_m + 500` m, those of the user's pairs that are not armed,
    /// the user's latest judged report — then, in this write's transaction, stores the pair
    /// changes, the new zones, the judged report and one inbox entry per alert, and sends one
    /// push (`notify.alert`) once that commits. A stale report changes nothing.
    func report(_ request: LocationRequest, caller: Caller) throws -> AlertList {
        let point = try Self.coordinate(request.lat, request.lon)
        let now = self.now
        let report = try AlertReport(userId: caller.id, point: point, at: try Self.milliseconds(at: request.at), now: now)
        let stored = try settingsJSON(of: caller.id)
        let settings = try AlertSettings(alerts: stored.alerts, radiusM: stored.radiusM)
        var judgedAt: Int64 = 0
        let last = try db.queryOne("SELECT at_ms, number, judged_at_ms FROM judged WHERE user_id = ?", caller.id).map { row in
            judgedAt = try row.decode("judged_at_ms")
            return JudgedReport(at: try row.decode("at_ms"), number: try row.decode("number"))
        }
        if let last, report.at < last.at { return AlertList(alerts: [], more: nil, stale: true) }
        // A report reads every annotation within reach: one user's are judged at most this often.
        guard last == nil || now - judgedAt >= options.reportIntervalMs else {
            throw ServiceError(.rateLimited, "at most one report every \(options.reportIntervalMs) ms; try again in a moment")
        }

        // A metre more than the rules reach: the rules check each exactly, and a pre-filter whose
        // rounding left out an annotation at the bound would change what they decide.
        var annotations = try alertAnnotations(near: point, radius: Double(settings.radiusM) + AlertRules.suppressionRadiusM + 1, now: now)
        var pairs: [AlertPair] = []
        try db.forEachRow(
            """
            SELECT p.annotation_id, p.state, p.disarmed_by, a.id, a.user_id, a.lat, a.lon, a.created_at_ms
            FROM pairs p JOIN annotations a ON a.id = p.annotation_id WHERE p.user_id = ? AND a.created_at_ms >= ?
            """, [caller.id, AlertRules.purgeHorizon(now: now)]
        ) { row in
            guard let state = AlertPairState(rawValue: try row.decode("state", as: String.self)) else { return }
            let id: Int64 = try row.decode("annotation_id")
            pairs.append(AlertPair(annotationId: id, state: state, disarmedBy: try row.decode("disarmed_by")))
            annotations[id] = AlertAnnotation(
                id: id, authorId: try row.decode("user_id"),
                point: Coordinate(uncheckedLatitude: try row.decode("lat"), longitude: try row.decode("lon")),
                createdAt: try row.decode("created_at_ms"))
        }
        let judgement = AlertRules.judge(report, settings: settings, lastJudged: last, annotations: annotations.values.sorted { $0.id < $1.id }, pairs: pairs)
        guard !judgement.stale else { return AlertList(alerts: [], more: nil, stale: true) }

        let number = judgement.judged.number
        for change in judgement.pairChanges {
            if change.to == .armed {
                try db.run("DELETE FROM pairs WHERE user_id = ? AND annotation_id = ?", caller.id, change.annotationId)
            } else {
                try db.run(
                    "INSERT OR REPLACE INTO pairs (user_id, annotation_id, state, disarmed_by) VALUES (?, ?, ?, ?)",
                    caller.id, change.annotationId, change.to.rawValue, number)
            }
        }
        for zone in judgement.newZones {
            try db.run(
                "INSERT INTO zones (user_id, lat, lon, at_ms, report) VALUES (?, ?, ?, ?, ?)",
                zone.userId, zone.center.latitude, zone.center.longitude, zone.at, zone.report)
            let cell = Self.cell(zone.center)
            try db.run(
                "INSERT INTO zones_geo (id, min_lat, max_lat, min_lon, max_lon) VALUES (?, ?, ?, ?, ?)",
                db.lastInsertRowID, cell.lat, cell.lat, cell.lon, cell.lon)
        }
        try db.run(
            "INSERT OR REPLACE INTO judged (user_id, at_ms, number, judged_at_ms) VALUES (?, ?, ?, ?)",
            caller.id, judgement.judged.at, number, now)

        // Each alert encoded once: for the inbox, and for its size in the push's budget.
        var wires: [(alert: AnnotationJSON, json: Data)] = []
        for alert in judgement.alerts {
            // Only what alerted is read whole.
            guard let annotation = try liveAnnotation(alert.annotationId, now: now) else { continue }
            let wire = annotation.wire(distanceM: alert.distanceM)
            let json = try JSONCoding.encoder.encode(wire)
            try db.run(
                "INSERT INTO inbox (user_id, annotation_id, at_ms, alert_json, created_at_ms) VALUES (?, ?, ?, ?, ?)",
                caller.id, alert.annotationId, report.at, String(decoding: json, as: UTF8.self), now)
            wires.append((wire, json))
        }
        guard !wires.isEmpty else { return AlertList(alerts: [], more: nil, stale: false) }
        // R5: at most `pushLimit` alerts, and at most `pushBudgetBytes` of them; `more` counts the rest.
        var page = PageFiller<AnnotationJSON>(limit: AlertRules.pushLimit, budget: options.pushBudgetBytes)
        for wire in wires {
            guard page.add(wire.alert, size: wire.json.count) else { break }
        }
        let more = wires.count - page.items.count
        let body = AlertList(alerts: page.items, more: more > 0 ? more : nil, stale: nil)
        // Not to the connection that reported: it has the alerts in its answer.
        worker.push(
            Push(
                Pushes.notifyAlert, id: "\(caller.id)-\(number)", userId: caller.id, origin: caller.origin,
                body: try Pushes.notifyAlert.encode(body)))
        return AlertList(alerts: body.alerts, more: body.more, stale: false)
    }

    // MARK: Inbox

    static let inboxCursor = IDCursor(tag: "i", maxLength: maxCursorBytes, minimum: 0)

    /// `notify.inbox`: the caller's entries not yet acknowledged, oldest first.
    func inbox(_ request: InboxRequest, caller: Caller) throws -> InboxPage {
        let limit = try NotifyService.limit(request.limit)
        let after = try request.cursor.map { cursor throws(ServiceError) in try Self.inboxCursor.decode(cursor) } ?? 0
        var page = PageFiller<InboxEntry>(limit: limit, budget: options.pageBudgetBytes)
        var more = false
        struct PageIsFull: Error {}
        do {
            // R6: entries older than 12 h are gone, whether the purge took them yet or not.
            try db.forEachRow(
                "SELECT id, at_ms, alert_json FROM inbox WHERE user_id = ? AND id > ? AND created_at_ms >= ? ORDER BY id LIMIT ?",
                [caller.id, after, AlertRules.purgeHorizon(now: now), limit + 1]
            ) { row in
                guard !page.isFull else {
                    more = true
                    throw PageIsFull()
                }
                let alert = try JSONCoding.decoder.decode(AnnotationJSON.self, from: Data(try row.decode("alert_json", as: String.self).utf8))
                let entry = InboxEntry(id: try row.decode("id"), at: Logger.timestamp(Self.date(try row.decode("at_ms"))), alert: alert)
                if !page.add(entry, size: try JSONCoding.encoder.encode(entry).count) && page.items.last?.id != entry.id {
                    more = true  // left out for its size
                    throw PageIsFull()
                }
            }
        } catch is PageIsFull {
            // The rest stays unread.
        }
        let next = more ? page.items.last.map { Self.inboxCursor.encode($0.id) } : nil
        return InboxPage(entries: page.items, nextCursor: next)
    }

    /// `notify.ack {ids}`: forgets those of the caller's entries (1 to 100 ids); others' ids
    /// and unknown ones are passed over.
    func ack(_ ids: [Int64], caller: Caller) throws -> Acked {
        guard (1...Self.maxAckIds).contains(ids.count) else { throw ServiceError.invalid("ids", "must hold 1 to \(Self.maxAckIds) ids") }
        var acked = 0
        for id in Set(ids) {
            try db.run("DELETE FROM inbox WHERE id = ? AND user_id = ?", id, caller.id)
            acked += db.changes
        }
        return Acked(acked: acked)
    }
}
