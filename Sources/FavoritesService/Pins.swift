import Bus
import Contracts
import Foundation
import Geo
import ServiceKit
import Storage

/// Pins: each user's own points on the map (`pins.add`, `.list`, `.update`, `.delete`), each
/// shown with the nearest place of the catalog copy within 100 m, looked up when read so it
/// follows the catalog (a place deleted or moved away is no longer shown).
///
/// Every query reads only the caller's pins, through `pins_by_user`, never the pins of other
/// users: a user has at most `maxPerUser`, so a box or a distance sort costs at most that many
/// index entries however many pins other people keep in the same city. (An R*Tree over every
/// user's pins would read all of theirs in the box; no query of one user needs it.)
enum Pins {
    /// Pins one user keeps at most (issue 13).
    static let maxPerUser = 1_000
    /// A pin shows the nearest place of the catalog copy within this many metres.
    static let placeRadiusM = 100.0
    /// Page sizes of `pins.list`.
    /// Cursors are at most this many bytes.
    static let maxCursorBytes = 128
    /// The cursor of a page in id order (newest first, or inside a box): the last id.
    static let idCursor = IDCursor(tag: "p", maxLength: maxCursorBytes, minimum: 1)

    static let migrations: [Migration] = [
        // Times are milliseconds since 1970. `pins_by_user` holds the points too, so a list
        // sorts or filters the caller's pins from the index alone and reads whole only its page.
        Migration(
            domain: "pins", version: 1,
            sql: """
                CREATE TABLE pins (
                    id         INTEGER PRIMARY KEY AUTOINCREMENT,
                    user_id    INTEGER NOT NULL,
                    lat        REAL NOT NULL,
                    lon        REAL NOT NULL,
                    title      TEXT,
                    note       TEXT,
                    created_at INTEGER NOT NULL,
                    updated_at INTEGER NOT NULL
                );
                CREATE INDEX pins_by_user ON pins(user_id, id, lat, lon);
                """)
    ]

    static func register(_ table: inout HandlerTable<FavoritesStore>) {
        table.on(Methods.Pins.add) { (request: PinAdd, caller, _, store) -> PinJSON in
            try store.addPin(request, caller: caller)
        }
        table.on(Methods.Pins.list) { (request: PinListRequest, caller, _, store) -> PinPage in
            try store.listPins(request, caller: caller)
        }
        table.on(Methods.Pins.update) { (request: PinUpdate, caller, _, store) -> PinJSON in
            try store.updatePin(request, caller: caller)
        }
        table.on(Methods.Pins.delete) { (request: PinRef, caller, _, store) -> PinDeleted in
            try store.deletePin(request.id, caller: caller)
        }
    }

    /// Deletes every pin of user `id` (`social.user.deleted`).
    static func erase(user id: Int64, _ db: Database) throws {
        try db.run("DELETE FROM pins WHERE user_id = ?", id)
    }

    /// A point from a request's latitude and longitude, `invalid_argument` naming the one at
    /// fault as `prefix` + `lat` or `lon`.
    static func coordinate(_ lat: Double, _ lon: Double, prefix: String = "") throws(ServiceError) -> Coordinate {
        do {
            return try Coordinate(latitude: lat, longitude: lon)
        } catch {
            throw ServiceError.invalid(prefix + error.field, error.description)
        }
    }

    /// `not_found` for a pin that does not exist or is another user's: the same answer, so
    /// no one learns which ids others hold.
    static func noPin(_ id: Int64) -> ServiceError { ServiceError(.notFound, "no pin with id \(id)", field: "id") }
}

/// One stored pin, as read back from `pins`.
struct StoredPin {
    let id: Int64
    let point: Coordinate
    let title: String?
    let note: String?
    let createdAt: Int64
    let updatedAt: Int64

    static let columns = "id, lat, lon, title, note, created_at, updated_at"

    init(row: Row) throws {
        id = try row.decode("id")
        point = Coordinate(uncheckedLatitude: try row.decode("lat"), longitude: try row.decode("lon"))
        title = try row.decode("title", as: String?.self)
        note = try row.decode("note", as: String?.self)
        createdAt = try row.decode("created_at")
        updatedAt = try row.decode("updated_at")
    }
}

extension FavoritesStore {
    /// The caller's pin `id`, or `not_found` (also when it is another user's).
    func ownPin(_ id: Int64, caller: Caller) throws -> StoredPin {
        guard id > 0 else { throw ServiceError.invalid("id", "must be a positive pin id") }
        guard let row = try db.queryOne("SELECT \(StoredPin.columns) FROM pins WHERE id = ? AND user_id = ?", id, caller.id) else {
            throw Pins.noPin(id)
        }
        return try StoredPin(row: row)
    }

    /// A pin as clients get it, with the nearest place within 100 m as the copy has it now,
    /// and `distance_m` from the point of a `near` list.
    func pinJSON(_ pin: StoredPin, distanceM: Double? = nil) throws -> PinJSON {
        let place = try nearestPlace(to: pin.point, within: Pins.placeRadiusM).map { PinPlace(card: $0.card, distanceM: $0.distanceM) }
        return PinJSON(
            id: pin.id, lat: pin.point.latitude, lon: pin.point.longitude, title: pin.title, note: pin.note,
            createdAt: Self.timestamp(pin.createdAt), updatedAt: Self.timestamp(pin.updatedAt), place: place, distanceM: distanceM)
    }

    /// `pins.add`: checks the point and the texts, refuses a pin past `Pins.maxPerUser`
    /// (`conflict` on `pins`, as a full list is refused: the state, not the request, is at fault),
    /// stores it and tells the caller's other connections.
    func addPin(_ request: PinAdd, caller: Caller) throws -> PinJSON {
        let point = try Pins.coordinate(request.lat, request.lon)
        try PinAdd.titleRule.check(request.title)
        try PinAdd.noteRule.check(request.note)
        try refuseErased(caller.id)
        let held = try db.scalarInt("SELECT COUNT(*) FROM pins WHERE user_id = ?", caller.id) ?? 0
        guard held < Pins.maxPerUser else {
            throw ServiceError(.conflict, "at most \(Pins.maxPerUser) pins per user; delete one to add another")
        }
        let now = self.now
        try db.run(
            "INSERT INTO pins (user_id, lat, lon, title, note, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?)",
            caller.id, point.latitude, point.longitude, request.title, request.note, now, now)
        let id = db.lastInsertRowID
        try pushChanged(FavoritesChange(change: .pinAdded, pinId: id), caller: caller)
        return try pinJSON(try ownPin(id, caller: caller))
    }

    /// `pins.update`: what is absent stays, `null` clears a title or a note; `lat` and `lon`
    /// move the pin together.
    func updatePin(_ request: PinUpdate, caller: Caller) throws -> PinJSON {
        let pin = try ownPin(request.id, caller: caller)
        var point = pin.point
        switch (request.lat, request.lon) {
        case (.absent, .absent): break
        case (.absent, _): throw ServiceError.invalid("lat", "lat and lon come together")
        case (_, .absent): throw ServiceError.invalid("lon", "lat and lon come together")
        default:
            point = try Pins.coordinate(
                try request.lat.applied(to: point.latitude, field: "lat"),
                try request.lon.applied(to: point.longitude, field: "lon"))
        }
        let title = request.title.applied(to: pin.title)
        let note = request.note.applied(to: pin.note)
        try PinAdd.titleRule.check(title)
        try PinAdd.noteRule.check(note)
        try db.run(
            "UPDATE pins SET lat = ?, lon = ?, title = ?, note = ?, updated_at = ? WHERE id = ?",
            point.latitude, point.longitude, title, note, now, pin.id)
        try pushChanged(FavoritesChange(change: .pinUpdated, pinId: pin.id), caller: caller)
        return try pinJSON(try ownPin(pin.id, caller: caller))
    }

    /// `pins.delete`: the caller's pin, or `not_found`.
    func deletePin(_ id: Int64, caller: Caller) throws -> PinDeleted {
        let pin = try ownPin(id, caller: caller)
        try db.run("DELETE FROM pins WHERE id = ?", pin.id)
        try pushChanged(FavoritesChange(change: .pinDeleted, pinId: pin.id), caller: caller)
        return PinDeleted(id: pin.id)
    }

    /// `pins.list`: the caller's pins near a point (nearest first, then by id; within
    /// `radius_m` when given), inside a box (newest first), or all newest first. The order is
    /// made from the index alone; only the page's pins are read whole, and a page stops at
    /// `limit` pins or at `options.pageBudgetBytes`.
    func listPins(_ request: PinListRequest, caller: Caller) throws -> PinPage {
        guard request.near == nil || request.bbox == nil else { throw ServiceError.invalid("bbox", "near and bbox do not go together") }
        guard request.radiusM == nil || request.near != nil else { throw ServiceError.invalid("radius_m", "needs near") }
        let bbox = try request.bbox?.boundingBox(field: "bbox")
        let limit = try PageLimit.pins.validated(request.limit)
        if let cursor = request.cursor, cursor.utf8.count > Pins.maxCursorBytes { throw OpaqueCursor.invalid }
        var points: [(id: Int64, point: Coordinate)] = []
        try db.forEachRow("SELECT id, lat, lon FROM pins WHERE user_id = ? ORDER BY id DESC", [caller.id]) { row in
            points.append((try row.decode("id"), Coordinate(uncheckedLatitude: try row.decode("lat"), longitude: try row.decode("lon"))))
        }
        let ordered: [(id: Int64, distanceM: Double?)]
        let cursorOf: (Int64, Double?) -> String
        if let near = request.near {
            let center = near.coordinate  // in range: the params' rules held it, and the radius
            let after = try request.cursor.map { cursor throws(ServiceError) in try Self.nearCursor(cursor) }
            let radius = request.radiusM ?? .infinity
            var measured: [(id: Int64, distanceM: Double)] = []
            for (id, point) in points {
                let distance = center.distance(to: point)
                guard distance <= radius else { continue }
                if let after, distance < after.distanceM || (distance == after.distanceM && id <= after.id) { continue }
                measured.append((id, distance))
            }
            measured.sort { a, b in a.distanceM != b.distanceM ? a.distanceM < b.distanceM : a.id < b.id }
            ordered = measured.map { (id: $0.id, distanceM: $0.distanceM) }
            cursorOf = { id, distance in OpaqueCursor.encode("n_\((distance ?? 0).bitPattern)_\(id)") }
        } else {
            let after = try request.cursor.map { cursor throws(ServiceError) in try Pins.idCursor.decode(cursor) } ?? .max
            ordered = points.filter { $0.id < after && bbox?.contains($0.point) != false }.map { (id: $0.id, distanceM: nil) }
            cursorOf = { id, _ in Pins.idCursor.encode(id) }
        }
        var page = PageFiller<PinJSON>(limit: limit, budget: options.pageBudgetBytes)
        for found in ordered.prefix(limit) {
            let pin = try pinJSON(try ownPin(found.id, caller: caller), distanceM: found.distanceM)
            guard page.add(pin, size: try JSONCoding.encoder.encode(pin).count) else { break }
        }
        let next = page.items.count < ordered.count ? page.items.last.map { cursorOf($0.id, $0.distanceM) } : nil
        return PinPage(pins: page.items, nextCursor: next)
    }

    /// The distance and id a `near` cursor holds: `invalid_argument` on `cursor` for any other.
    static func nearCursor(_ cursor: String) throws(ServiceError) -> (distanceM: Double, id: Int64) {
        let parts = try OpaqueCursor.decode(cursor, maxLength: Pins.maxCursorBytes).split(separator: "_")
        guard parts.count == 3, parts[0] == "n", let bits = UInt64(parts[1]), let id = Int64(parts[2]), id > 0,
            Double(bitPattern: bits).isFinite, Double(bitPattern: bits) >= 0
        else { throw OpaqueCursor.invalid }
        return (Double(bitPattern: bits), id)
    }
}
