import Bus
import Contracts
import Foundation
import Geo
import ServiceKit
import Storage

/// `annotations.sync` over the change log, and the purge (R6) that keeps every table to 12 h.
extension NotifyStore {
    /// How long the change log keeps a change: a sync cursor older than this is refused.
    static let changeRetentionMs: Int64 = 24 * 3_600_000
    /// Rows one purge deletes from each table at most (the rest go at the next).
    static let purgeBatch = 5_000
    /// How often the service purges (it also does at start).
    static let purgeIntervalMilliseconds = 60_000
    /// Changes one sync page reads at most.
    static let maxSyncChanges = 1_000

    static let syncCursor = IDCursor(tag: "s", maxLength: maxCursorBytes, minimum: 0)
    /// A first sync under way: the change it started at and the last annotation id listed.
    static let firstSyncTag = "f"

    /// Records a change of annotation `id` at `point` for `annotations.sync`.
    func recordChange(_ id: Int64, at point: Coordinate, deleted: Bool) throws {
        try Self.recordChange(id, at: point, deleted: deleted, now: now, db)
    }

    /// Records a change in `db` at `now` (for the erasure, which runs on the subscriber's connection).
    static func recordChange(_ id: Int64, at point: Coordinate, deleted: Bool, now: Int64, _ db: Database) throws {
        try db.run(
            "INSERT INTO changes (annotation_id, lat, lon, deleted, at_ms) VALUES (?, ?, ?, ?, ?)",
            id, point.latitude, point.longitude, deleted ? 1 : 0, now)
    }

    /// The purge of R6, whether or not the service ran when things expired: annotations
    /// created more than 12 h ago go (with their places in the R*Tree and their pairs, each
    /// recorded as deleted for sync), and so do inbox entries older than 12 h, zones that can
    /// cover nothing live any more, and changes older than `changeRetentionMs`. At most
    /// `purgeBatch` rows of each a time; how many annotations went.
    func purge() throws -> Purged {
        let now = self.now
        let horizon = AlertRules.purgeHorizon(now: now)
        var expired: [(id: Int64, point: Coordinate)] = []
        try db.forEachRow(
            "SELECT id, lat, lon FROM annotations WHERE created_at_ms < ? ORDER BY created_at_ms LIMIT ?",
            [horizon, Int64(Self.purgeBatch)]
        ) { row in
            expired.append((try row.decode("id"), Coordinate(uncheckedLatitude: try row.decode("lat"), longitude: try row.decode("lon"))))
        }
        for (id, point) in expired {
            try db.run("DELETE FROM pairs WHERE annotation_id = ?", id)
            try db.run("DELETE FROM annotations_geo WHERE id = ?", id)
            try db.run("DELETE FROM annotations WHERE id = ?", id)
            try recordChange(id, at: point, deleted: true)
        }
        try db.run("DELETE FROM inbox WHERE id IN (SELECT id FROM inbox WHERE created_at_ms < ? LIMIT ?)", horizon, Int64(Self.purgeBatch))
        // A zone covers annotations created within 2 h of it, and those live 12 h.
        let zoneHorizon = AlertRules.shifted(horizon, by: -AlertRules.suppressionWindowMs)
        var zones: [Int64] = []
        try db.forEachRow("SELECT id FROM zones WHERE at_ms < ? LIMIT ?", [zoneHorizon, Int64(Self.purgeBatch)]) { zones.append(try $0.decode("id")) }
        for id in zones {
            try db.run("DELETE FROM zones_geo WHERE id = ?", id)
            try db.run("DELETE FROM zones WHERE id = ?", id)
        }
        if let last = try db.scalarInt(
            "SELECT MAX(seq) FROM (SELECT seq FROM changes WHERE at_ms < ? ORDER BY seq LIMIT ?)",
            now - Self.changeRetentionMs, Int64(Self.purgeBatch))
        {
            try db.run("DELETE FROM changes WHERE seq <= ?", last)
            try db.run("INSERT INTO trimmed (id, through) VALUES (1, ?) ON CONFLICT (id) DO UPDATE SET through = MAX(through, excluded.through)", last)
        }
        return Purged(annotations: expired.count)
    }

    /// `annotations.sync`: what changed since the cursor, in a box when one is given. The
    /// first call (no cursor) lists every live annotation, by id, over as many pages as it
    /// takes; after it, each call gives the changes since, in order: `changed` the annotations
    /// submitted and still live, `deleted` the ids deleted or purged (an annotation that
    /// expired shows there once the purge, every minute, has taken it). `more` says to call
    /// again at once; otherwise again in `next_poll_s`.
    func sync(_ request: SyncRequest, caller: Caller?) throws -> SyncPage {
        let box = try request.bbox?.boundingBox(field: "bbox")
        let limit = try NotifyService.limit(request.limit)
        let now = self.now
        let poll = try nextPoll(caller, now: now)
        guard let cursor = request.cursor else { return try firstSync(after: 0, head: try head(), box: box, limit: limit, poll: poll) }
        let text = try OpaqueCursor.decode(cursor, maxLength: Self.maxCursorBytes)
        if text.hasPrefix(Self.firstSyncTag) {
            let parts = text.dropFirst().split(separator: "_")
            guard parts.count == 2, let head = Int64(parts[0]), let after = Int64(parts[1]), head >= 0, after >= 0 else { throw OpaqueCursor.invalid }
            return try firstSync(after: after, head: head, box: box, limit: limit, poll: poll)
        }
        let seq = try Self.syncCursor.decode(cursor)
        if let through = try db.scalarInt("SELECT through FROM trimmed WHERE id = 1"), seq < through {
            throw ServiceError.invalid("cursor", "too old: changes before it are no longer kept; sync again without a cursor")
        }
        guard try seq <= head() else { throw OpaqueCursor.invalid }
        struct Change {
            let seq: Int64
            let id: Int64
            let point: Coordinate
            let deleted: Bool
        }
        var rows: [Change] = []
        try db.forEachRow(
            "SELECT seq, annotation_id, lat, lon, deleted FROM changes WHERE seq > ? ORDER BY seq LIMIT ?",
            [seq, Int64(Self.maxSyncChanges)]
        ) { row in
            rows.append(
                Change(
                    seq: try row.decode("seq"), id: try row.decode("annotation_id"),
                    point: Coordinate(uncheckedLatitude: try row.decode("lat"), longitude: try row.decode("lon")),
                    deleted: try row.decode("deleted", as: Int64.self) == 1))
        }
        // In order, each change once: an id's later change replaces its earlier one in the page.
        var changed: [AnnotationJSON] = []
        var deleted: [Int64] = []
        var page = PageFiller<Int64>(limit: Int.max, budget: options.pageBudgetBytes)
        var last = seq
        var stopped = false
        for change in rows {
            guard box?.contains(change.point) ?? true else {
                last = change.seq
                continue
            }
            if changed.count + deleted.count >= limit {
                stopped = true
                break
            }
            if change.deleted {
                changed.removeAll { $0.id == change.id }
                if !deleted.contains(change.id) { deleted.append(change.id) }
            } else if let live = try liveAnnotation(change.id, now: now), !changed.contains(where: { $0.id == change.id }) {
                let wire = live.wire()
                guard page.add(change.id, size: try JSONCoding.encoder.encode(wire).count) else {
                    stopped = true
                    break
                }
                deleted.removeAll { $0 == change.id }
                changed.append(wire)
            }
            // Not live: deleted by a later change, which says so, or expired, which the purge will.
            last = change.seq
        }
        let head = try head()
        let more = stopped || (rows.count == Self.maxSyncChanges && last < head)
        return SyncPage(changed: changed, deleted: deleted, cursor: Self.syncCursor.encode(last), more: more, nextPollS: poll)
    }

    /// The last change's seq (0 before any).
    func head() throws -> Int64 { try db.scalarInt("SELECT MAX(seq) FROM changes") ?? 0 }

    /// A page of a first sync: live annotations by id after `after`; once all are listed, the
    /// cursor moves to the changes after `head`, the one the listing began at.
    private func firstSync(after: Int64, head: Int64, box: BoundingBox?, limit: Int, poll: Int) throws -> SyncPage {
        var listed: [StoredAnnotation] = []
        var scanned = 0
        var lastScanned = after
        try db.forEachRow(
            "SELECT \(Self.annotationColumns) FROM annotations a WHERE a.id > ? AND a.created_at_ms >= ? ORDER BY a.id LIMIT ?",
            [after, AlertRules.purgeHorizon(now: now), Int64(Self.maxSyncChanges)]
        ) { row in
            let annotation = try Self.annotation(row)
            scanned += 1
            lastScanned = annotation.id
            if box?.contains(annotation.point) ?? true { listed.append(annotation) }
        }
        let page = try fill(listed, limit: limit) { $0.wire() }
        let tookAll = page.items.count == listed.count
        // Done once every annotation was scanned and every one listed went out; else go on
        // after the last that went out (or, past a scan of annotations all outside the box,
        // after the last scanned).
        let done = tookAll && scanned < Self.maxSyncChanges
        let next = tookAll ? lastScanned : page.items.last?.id ?? lastScanned
        let cursor = done ? Self.syncCursor.encode(head) : OpaqueCursor.encode("\(Self.firstSyncTag)\(head)_\(next)")
        return SyncPage(changed: page.items.map { $0.wire() }, deleted: [], cursor: cursor, more: !done, nextPollS: poll)
    }

    /// `next_poll_s`: the day interval from 05:00 to 23:00 in the caller's time zone (UTC for
    /// anyone not signed in), the night one from 23:00 to 05:00.
    func nextPoll(_ caller: Caller?, now: Int64) throws -> Int {
        let zone = try caller.map { try settingsJSON(of: $0.id).timezone }.flatMap(TimeZone.init(identifier:)) ?? TimeZone(identifier: "UTC")!
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = zone
        let hour = calendar.component(.hour, from: Date(timeIntervalSince1970: Double(now) / 1000))
        return (5..<23).contains(hour) ? options.dayPollSeconds : options.nightPollSeconds
    }
}
