import Bus
import Contracts
import Foundation
import Geo
import ServiceKit
import Storage

// People at a place (issue 17): users who opted in (`profile.update {"discoverable": true}`)
// and who are at a place now or marked it visited. Their visits are a copy of favorites'
// (`favorites.visited`, `favorites.unvisited`), kept here only while they are discoverable.

/// The rules of people at a place.
enum PeopleRules {
    // A circle's radii are `PeopleAtRequest.radii`: the smallest, with the grid, is what stops
    // shrinking circles from pinning anyone down.
    /// The side of a grid cell of positions, in degrees of latitude and of longitude
    /// (about 111 m, and less east-west away from the equator).
    static let gridDegrees = 0.001
    /// How far a position may be from the centre of its cell, at most, in metres (with room).
    static let cellReachMeters = 100.0
    /// `social.people_at` calls one user makes a minute, at most.
    static let callsPerMinute = 30
    /// How near a place one must be to be "there now".
    static let placeRadiusMeters = 200.0
    /// How recent a position must be to be "there now": 10 minutes.
    static let liveSeconds: Int64 = 600
    /// Page sizes: 50 at most, the default too.
    /// The most of a user's visits social keeps (the latest), as favorites publishes at most
    /// that many when they become discoverable.
    static let maxVisitsPerUser = 1_000
    /// The most visits, and positions, one request reads however many fall in the circle: a
    /// bound on its time.
    static let maxRowsRead = 10_000
    /// The R*Tree holds degrees times this, as 32-bit integers.
    static let scale = 1e7
    /// How often one user may turn `discoverable` on or off: each time on, favorites publishes
    /// up to 1,000 visits, and each time off it redacts its outbox, so a loop must not.
    static let discoverableChangesPerHour = 10

    /// Where the request looks: a place, or a circle, checked field by field.
    enum Target {
        case place(Int64)
        case circle(Coordinate, radiusMeters: Double)
    }

    static func target(_ request: PeopleAtRequest) throws(ServiceError) -> Target {
        let circle = request.near != nil || request.radiusM != nil
        if let place = request.placeId {
            guard !circle else { throw .invalid("place_id", "give place_id, or near and radius_m, not both") }
            return .place(place)
        }
        guard circle else { throw .invalid("place_id", "give place_id, or near and radius_m") }
        guard let near = request.near else { throw .invalid("near", "missing required field near") }
        guard let radius = request.radiusM else { throw .invalid("radius_m", "missing required field radius_m") }
        // The point and the radius are in range: the params' rules held them.
        return .circle(near.coordinate, radiusMeters: radius)
    }

    /// The centre of the grid cell `point` falls in: people_at matches positions by their
    /// cell, never placing anyone more precisely than a cell (about 111 m north-south).
    static func snapped(_ point: Coordinate) -> Coordinate {
        func snap(_ degrees: Double, _ bound: Double) -> Double {
            min(bound, max(-bound, ((degrees / gridDegrees).rounded(.down) + 0.5) * gridDegrees))
        }
        return Coordinate(uncheckedLatitude: snap(point.latitude, 90), longitude: snap(point.longitude, 180))
    }

    /// Social's part of discoverability, in a migration domain of its own: the profile's flag
    /// and the copy of discoverable users' visits, with their places' points (`visits_geo`).
    static let migrations: [Migration] = [
        Migration(
            domain: "people", version: 1,
            sql: """
                ALTER TABLE users ADD COLUMN discoverable INTEGER NOT NULL DEFAULT 0 CHECK (discoverable IN (0, 1));
                CREATE INDEX users_discoverable ON users(id) WHERE discoverable = 1;
                CREATE TABLE visits (
                    id         INTEGER PRIMARY KEY,
                    user_id    INTEGER NOT NULL REFERENCES users(id) ON DELETE CASCADE,
                    place_id   INTEGER NOT NULL,
                    lat        REAL NOT NULL,
                    lon        REAL NOT NULL,
                    visited_ms INTEGER NOT NULL,
                    UNIQUE (user_id, place_id)
                );
                CREATE INDEX visits_by_place ON visits(place_id, visited_ms);
                CREATE INDEX visits_by_user ON visits(user_id, visited_ms);
                CREATE VIRTUAL TABLE visits_geo USING rtree_i32(id, min_lat, max_lat, min_lon, max_lon);
                -- However a visit goes (unvisited, its user no longer discoverable or deleted), its point goes.
                CREATE TRIGGER visits_geo_delete AFTER DELETE ON visits BEGIN
                    DELETE FROM visits_geo WHERE id = old.id;
                END;
                """)
    ]

    /// The bounds of `visits_geo` that hold every point of `area`: south, north, west, east,
    /// in the R*Tree's integers, rounded outwards.
    static func indexBounds(_ area: BoundingBox) -> [(any SQLBindable)?] {
        [
            Int64((area.south * scale).rounded(.down)), Int64((area.north * scale).rounded(.up)),
            Int64((area.west * scale).rounded(.down)), Int64((area.east * scale).rounded(.up)),
        ]
    }

    /// Keeps social's copy in step with favorites' visits. A visit of a user who is not
    /// discoverable here (favorites had not heard yet that they stopped) is ignored. A rebuild
    /// from favorites' snapshot (every discoverable user's latest visits) starts from nothing.
    static let favoritesApplier = EventApplier(
        apply: { event, scope in
            switch event.header.type {
            case FavoritesEvents.visited: try keep(try event.body(PlaceVisited.self), scope.db)
            case FavoritesEvents.unvisited:
                let gone = try event.body(PlaceUnvisited.self)
                try scope.db.run("DELETE FROM visits WHERE user_id = ? AND place_id = ?", gone.userId, gone.placeId)
            default: break
            }
        },
        reset: { db in
            try db.run("DELETE FROM visits_geo")
            try db.run("DELETE FROM visits")
        },
        types: [FavoritesEvents.visited, FavoritesEvents.unvisited])

    /// Stores (or moves) a visit of a discoverable user, and keeps only their latest
    /// `maxVisitsPerUser`. A body out of range is a `ServiceError`: skipped, as it can never apply.
    static func keep(_ visit: PlaceVisited, _ db: Database) throws {
        guard try db.queryOne("SELECT 1 FROM users WHERE id = ? AND discoverable = 1", visit.userId) != nil else { return }
        let point = try Coordinate(latitude: visit.lat, longitude: visit.lon)
        let at = try RFC3339.milliseconds(visit.at, field: "at")
        try db.run(
            """
            INSERT INTO visits (user_id, place_id, lat, lon, visited_ms) VALUES (?, ?, ?, ?, ?)
            ON CONFLICT(user_id, place_id) DO UPDATE SET lat = excluded.lat, lon = excluded.lon, visited_ms = excluded.visited_ms
            """, visit.userId, visit.placeId, point.latitude, point.longitude, at)
        guard let id = try db.scalarInt("SELECT id FROM visits WHERE user_id = ? AND place_id = ?", visit.userId, visit.placeId) else { return }
        let lat = Int64((point.latitude * scale).rounded())
        let lon = Int64((point.longitude * scale).rounded())
        try db.run("INSERT OR REPLACE INTO visits_geo (id, min_lat, max_lat, min_lon, max_lon) VALUES (?, ?, ?, ?, ?)", id, lat, lat, lon, lon)
        try db.run(
            """
            DELETE FROM visits WHERE id IN (
                SELECT id FROM visits WHERE user_id = ? ORDER BY visited_ms DESC, place_id DESC LIMIT -1 OFFSET ?)
            """, visit.userId, maxVisitsPerUser)
    }
}

/// People at a place: who is discoverable, social's copy of their visits, and who is where.
final class PeopleStore: SocialFeature {
    let shared: SocialShared
    let groups: GroupStore
    /// The `social.people_at` calls of each user, counted across all threads.
    let calls: SharedRateWindow<Int64>
    /// Each user's changes of `discoverable` in the last hour (on the writer thread, whose handlers alone use it).
    private var discoverableChanges = RateWindow<Int64>(limit: PeopleRules.discoverableChangesPerHour, windowMs: 3_600_000)

    init(_ shared: SocialShared, groups: GroupStore, calls: SharedRateWindow<Int64>) {
        self.shared = shared
        self.groups = groups
        self.calls = calls
    }

    /// Sets whether the caller is discoverable, inside `updateProfile`'s transaction (on the
    /// writer, whose rate window it counts in: at most `discoverableChangesPerHour` changes, else
    /// `rate_limited`): a change publishes `social.profile.discoverable`; stopping drops the copy of their visits, and
    /// their position unless a group they share with keeps it.
    func setDiscoverable(_ on: Bool, caller: Caller) throws {
        guard let row = try db.queryOne("SELECT discoverable FROM users WHERE id = ?", caller.id),
            (try row.decode("discoverable", as: Int64.self) == 1) != on
        else { return }
        try discoverableChanges.admit(
            caller.id, now: nowMs,
            refusal: ServiceError(
                .rateLimited, "discoverable changes at most \(PeopleRules.discoverableChangesPerHour) times an hour; try again later", field: "discoverable"))
        try db.run("UPDATE users SET discoverable = ? WHERE id = ?", on ? 1 : 0, caller.id)
        if !on {
            try db.run("DELETE FROM visits WHERE user_id = ?", caller.id)
            try groups.dropPositionUnlessKept(caller.id)
        }
        try worker.emit(SocialEvents.profileDiscoverable, DiscoverableChanged(userId: caller.id, discoverable: on))
    }

    /// One snapshot page of discoverable users after user id `after`, as
    /// `social.profile.discoverable` events (`true`).
    func snapshot(after: Int64, limit: Int) throws -> SnapshotPart {
        let ids = try db.query("SELECT id FROM users WHERE discoverable = 1 AND id > ? ORDER BY id LIMIT ?", after, limit).decode("id", as: Int64.self)
        let events = try ids.map { id in
            (type: SocialEvents.profileDiscoverable, body: try JSONCoding.encoder.encode(DiscoverableChanged(userId: id, discoverable: true)))
        }
        return (events, ids)
    }

    /// `social.people_at`: the discoverable users other than the caller, and not in a block
    /// relation with them either way, who are at the place (within 200 m of it) or in the
    /// circle now (a position of the last 10 minutes), or who marked it (a place in the circle)
    /// visited; at most `limit` and a page's bytes.
    func peopleAt(_ request: PeopleAtRequest, caller: Caller, context: RequestContext) throws -> PeopleHere {
        let target = try PeopleRules.target(request)
        let limit = try PageLimit.peopleAt.validated(request.limit)
        try calls.admit(
            caller.id, now: nowMs,
            refusal: ServiceError(
                .rateLimited, "at most \(PeopleRules.callsPerMinute) people_at calls a minute; try again in a moment"))
        let center: Coordinate
        let radius: Double
        var visited: [Int64: Int64] = [:]  // user: their latest visit, ms
        switch target {
        case .place(let id):
            center = try shared.placePoint(id, context)
            radius = PeopleRules.placeRadiusMeters
            try db.forEachRow(
                """
                SELECT v.user_id, v.visited_ms FROM visits v JOIN users u ON u.id = v.user_id
                WHERE v.place_id = ? AND u.discoverable = 1 AND v.user_id <> ? AND \(BlockRules.apart("v.user_id"))
                ORDER BY v.visited_ms DESC LIMIT ?
                """, [id, caller.id, caller.id, caller.id, PeopleRules.maxRowsRead]
            ) { row in
                visited[try row.decode("user_id")] = try row.decode("visited_ms")
            }
        case .circle(let point, let radiusMeters):
            center = point
            radius = radiusMeters
            var read = 0
            for area in try BoundingBox.around(center, radiusMeters: radius).indexAreas where read < PeopleRules.maxRowsRead {
                try db.forEachRow(
                    """
                    SELECT v.user_id, v.lat, v.lon, v.visited_ms FROM visits_geo g JOIN visits v ON v.id = g.id JOIN users u ON u.id = v.user_id
                    WHERE g.min_lat >= ? AND g.max_lat <= ? AND g.min_lon >= ? AND g.max_lon <= ?
                      AND u.discoverable = 1 AND v.user_id <> ? AND \(BlockRules.apart("v.user_id"))
                    LIMIT ?
                    """, PeopleRules.indexBounds(area) + [caller.id, caller.id, caller.id, PeopleRules.maxRowsRead - read]
                ) { row in
                    read += 1
                    let point = Coordinate(uncheckedLatitude: try row.decode("lat"), longitude: try row.decode("lon"))
                    guard center.distance(to: point) <= radius else { return }
                    let user: Int64 = try row.decode("user_id")
                    let at: Int64 = try row.decode("visited_ms")
                    if at > visited[user] ?? .min { visited[user] = at }
                }
            }
        }
        let here = try hereNow(around: center, within: radius, caller: caller.id)
        // There now first, the latest position first; then by the latest visit; then by id.
        let ranked = Set(here.keys).union(visited.keys).sorted { a, b in
            let hereA = here[a] ?? .min
            let hereB = here[b] ?? .min
            if hereA != hereB { return hereA > hereB }
            let visitA = visited[a] ?? .min
            let visitB = visited[b] ?? .min
            return visitA != visitB ? visitA > visitB : a < b
        }
        var page = PageFiller<PersonHere>(limit: limit, budget: options.pageBudgetBytes)
        let year = currentYear
        var more = false
        var full = false
        for user in ranked {
            // One who stopped being discoverable since is left out, and is not "more".
            guard let row = try db.queryOne("SELECT username, name, birth_year FROM users WHERE id = ? AND discoverable = 1", user) else { continue }
            guard !full else {
                more = true
                break
            }
            let person = PersonHere(
                user: UserSummary(id: user, username: try row.decode("username"), name: try row.decode("name")),
                ageGroup: try row.decode("birth_year", as: Int?.self).map { ProfileRules.ageGroup(birthYear: $0, currentYear: year) },
                hereNow: here[user] != nil,
                visitedAt: visited[user].map { timestamp(Date(timeIntervalSince1970: Double($0) / 1000)) }, message: "user:\(user)")
            let before = page.items.count
            if !page.add(person, size: try JSONCoding.encoder.encode(person).count) {
                // Full: this one is on the page (the limit) or not (the bytes).
                full = true
                if page.items.count == before {
                    more = true
                    break
                }
            }
        }
        return PeopleHere(people: page.items, more: more)
    }

    /// The discoverable users (not the caller, nor in a block relation with them) whose
    /// position of the last 10 minutes is within `radius` metres of `center`, with its time (ms):
    /// the centre of its grid cell (`PeopleRules.snapped`), not the position, is what is matched.
    private func hereNow(around center: Coordinate, within radius: Double, caller: Int64) throws -> [Int64: Int64] {
        var here: [Int64: Int64] = [:]
        let since = nowMs - PeopleRules.liveSeconds * 1_000
        var read = 0
        for area in try BoundingBox.around(center, radiusMeters: radius + PeopleRules.cellReachMeters).indexAreas where read < PeopleRules.maxRowsRead {
            try db.forEachRow(
                """
                SELECT p.user_id, p.lat, p.lon, p.at_ms FROM positions p JOIN users u ON u.id = p.user_id
                WHERE p.at_ms >= ? AND p.lat BETWEEN ? AND ? AND p.lon BETWEEN ? AND ?
                  AND u.discoverable = 1 AND p.user_id <> ? AND \(BlockRules.apart("p.user_id"))
                LIMIT ?
                """, [since, area.south, area.north, area.west, area.east, caller, caller, caller, PeopleRules.maxRowsRead - read]
            ) { row in
                read += 1
                let point = PeopleRules.snapped(Coordinate(uncheckedLatitude: try row.decode("lat"), longitude: try row.decode("lon")))
                if center.distance(to: point) <= radius { here[try row.decode("user_id")] = try row.decode("at_ms") }
            }
        }
        return here
    }
}
