import Bus
import Contracts
import Foundation
import ServiceKit
import Storage

/// The visits of discoverable users, on the bus for social's `social.people_at` (issue 17).
///
/// Favorites keeps the users whose profile is discoverable (`discoverable`), learned from
/// social's `social.profile.discoverable`, and publishes `favorites.visited` whenever one of
/// them marks a place visited (`favorites.visited.add`, or a save into the `visited` list) and
/// `favorites.unvisited` when the visit goes (unmarked, removed, the place deleted). A user who
/// becomes discoverable has their latest `latestOnOptIn` visits published at once; one who stops
/// has nothing more published (social drops its copy itself), and their visit events still in
/// the outbox are redacted. Nothing of any other user's visits ever goes on the bus.
enum Visits {
    /// How many of a user's visits, newest first, go on the bus when they become discoverable,
    /// and in the snapshot.
    static let latestOnOptIn = 1_000

    static let migrations: [Migration] = [
        // `stale`: marked by a rebuild from social's snapshot (`reset`), cleared by each of its
        // events, and what is still marked after it goes (`finishBulk`): users who stopped
        // being discoverable while favorites could not follow.
        Migration(
            domain: "discoverable", version: 1,
            sql: """
                CREATE TABLE discoverable (
                    user_id INTEGER PRIMARY KEY,
                    stale   INTEGER NOT NULL DEFAULT 0 CHECK (stale IN (0, 1))
                );
                """),
        // A user's visit events, so erasing them reads that user's rows, not the whole outbox.
        OutboxSchema.userIndex(domain: "discoverable", version: 2),
    ]

    /// Whether user `id` is discoverable, as social last said.
    static func isDiscoverable(_ id: Int64, _ db: Database) throws -> Bool {
        try db.queryOne("SELECT 1 FROM discoverable WHERE user_id = ?", id) != nil
    }

    /// The `favorites.visited` body of user `user`'s visit of `place` at `at` (ms), with the
    /// place's point from the copy; nil unless the user is discoverable and the place known.
    static func visited(user: Int64, place: Int64, at: Int64, _ db: Database) throws -> PlaceVisited? {
        guard try isDiscoverable(user, db), let row = try db.queryOne("SELECT lat, lon FROM places WHERE id = ?", place) else { return nil }
        return PlaceVisited(userId: user, placeId: place, lat: try row.decode("lat"), lon: try row.decode("lon"), at: FavoritesStore.timestamp(at))
    }

    /// The latest `limit` visits of user `user` after the newest `offset`, newest first (by
    /// `visited_at`, then place id), as `favorites.visited` bodies.
    static func latest(of user: Int64, offset: Int = 0, limit: Int, _ db: Database) throws -> [PlaceVisited] {
        try db.query(
            """
            SELECT i.place_id, i.visited_at, p.lat, p.lon FROM lists l JOIN items i ON i.list_id = l.id JOIN places p ON p.id = i.place_id
            WHERE l.user_id = ? AND l.builtin = 1 AND l.name = ? AND i.visited_at IS NOT NULL
            ORDER BY i.visited_at DESC, i.place_id DESC LIMIT ? OFFSET ?
            """, user, Lists.visited, limit, offset
        ).map { row in
            PlaceVisited(
                userId: user, placeId: try row.decode("place_id"), lat: try row.decode("lat"), lon: try row.decode("lon"),
                at: FavoritesStore.timestamp(try row.decode("visited_at")))
        }
    }

    /// The `favorites.unvisited` bodies of every discoverable user who has place `id` visited:
    /// call before the place goes.
    static func unvisitedOnDeletion(of place: Int64, _ db: Database) throws -> [PlaceUnvisited] {
        try db.query(
            """
            SELECT l.user_id FROM items i JOIN lists l ON l.id = i.list_id JOIN discoverable d ON d.user_id = l.user_id
            WHERE i.place_id = ? AND l.builtin = 1 AND l.name = ? ORDER BY l.user_id
            """, place, Lists.visited
        ).map { row in PlaceUnvisited(userId: try row.decode("user_id"), placeId: place) }
    }

    /// The `favorites.visited` bodies of every discoverable user who has place `id` visited,
    /// with its point as the copy holds it now: after the catalog moved it.
    static func moved(_ place: Int64, _ db: Database) throws -> [PlaceVisited] {
        try db.query(
            """
            SELECT l.user_id, i.visited_at, p.lat, p.lon FROM items i JOIN lists l ON l.id = i.list_id
            JOIN discoverable d ON d.user_id = l.user_id JOIN places p ON p.id = i.place_id
            WHERE i.place_id = ? AND l.builtin = 1 AND l.name = ? AND i.visited_at IS NOT NULL ORDER BY l.user_id
            """, place, Lists.visited
        ).map { row in
            PlaceVisited(
                userId: try row.decode("user_id"), placeId: place, lat: try row.decode("lat"), lon: try row.decode("lon"),
                at: FavoritesStore.timestamp(try row.decode("visited_at")))
        }
    }

    /// What visits take from social's events: who is discoverable (`apply`); before a rebuild
    /// from social's snapshot, which holds each discoverable user, every one is stale (`reset`)
    /// and those it does not name are forgotten after it (`finishBulk`).
    static let socialEvents = EventHandlers(
        [
            SocialEvents.profileDiscoverable: { event, scope in try apply(try event.body(DiscoverableChanged.self), scope) }
        ], reset: reset, finishBulk: finishBulk)

    /// Applies `social.profile.discoverable`: a user who becomes discoverable has their latest
    /// visits published; again (or in a rebuild) nothing is published twice. One who stops is
    /// forgotten, and nothing is published.
    static func apply(_ change: DiscoverableChanged, _ scope: EventScope) throws {
        let db = scope.db
        guard change.discoverable else {
            try erase(user: change.userId, db)
            return
        }
        if try isDiscoverable(change.userId, db) {
            try db.run("UPDATE discoverable SET stale = 0 WHERE user_id = ?", change.userId)
            return
        }
        try db.run("INSERT INTO discoverable (user_id, stale) VALUES (?, 0)", change.userId)
        for visit in try latest(of: change.userId, limit: latestOnOptIn, db) { try scope.emit(FavoritesEvents.visited, visit) }
    }

    /// Forgets that user `id` is discoverable (they stopped, or were deleted), and redacts
    /// their visit events still in the outbox: `favorites.redacted`, body `{}`, the seqs kept
    /// (replays stay gap-free), so their past visits are no longer on the bus.
    static func erase(user id: Int64, _ db: Database) throws {
        try db.run("DELETE FROM discoverable WHERE user_id = ?", id)
        try Outbox(database: db).redact(user: id, types: [FavoritesEvents.visited, FavoritesEvents.unvisited], as: FavoritesEvents.redacted)
    }

    /// Before a rebuild from social's snapshot: every user is stale until the snapshot says again.
    static func reset(_ db: Database) throws {
        try db.run("UPDATE discoverable SET stale = 1")
    }

    /// After it: the users the snapshot did not name are no longer discoverable (`erase`).
    static func finishBulk(_ db: Database) throws {
        for id in try db.query("SELECT user_id FROM discoverable WHERE stale = 1").decode("user_id", as: Int64.self) { try erase(user: id, db) }
    }
}

extension FavoritesStore {
    /// Publishes `favorites.visited` when the caller is discoverable: call in the transaction
    /// that marked the visit.
    func publishVisit(user: Int64, place: Int64, at: Int64) throws {
        guard let visit = try Visits.visited(user: user, place: place, at: at, db) else { return }
        try worker.emit(FavoritesEvents.visited, visit)
    }

    /// Publishes `favorites.unvisited` when the caller is discoverable: call in the transaction
    /// that took the place out of the `visited` list.
    func publishUnvisit(user: Int64, place: Int64) throws {
        guard try Visits.isDiscoverable(user, db) else { return }
        try worker.emit(FavoritesEvents.unvisited, PlaceUnvisited(userId: user, placeId: place))
    }

    /// The visits part of `sys.snapshot` (keys `v<user>:<offset>`): the latest
    /// `Visits.latestOnOptIn` visits of each discoverable user, by user id, as `favorites.visited`.
    /// A page looks at `limit` users at most, so discoverable users without visits cannot make
    /// one request read them all: it may end with fewer events, or none, and a next key.
    func visitsSnapshot(after key: String, limit: Int) throws -> SnapshotPage {
        let parts = key.split(separator: ":", omittingEmptySubsequences: false)
        guard parts.count == 2, var user = Int64(parts[0]), var offset = Int(parts[1]), user >= 0, (0...Visits.latestOnOptIn).contains(offset) else {
            throw ServiceError.invalid("after", "not a snapshot key from this service")
        }
        var events: [(type: String, body: Data)] = []
        var users = 0
        while events.count < limit {
            // User 0 (none yet) or one whose visits are all sent: on to the next discoverable user.
            if user == 0 || offset >= Visits.latestOnOptIn {
                guard users < limit else { return SnapshotPage(events: events, next: "v\(user):\(Visits.latestOnOptIn)") }
                users += 1
                guard let next = try db.scalarInt("SELECT user_id FROM discoverable WHERE user_id > ? ORDER BY user_id LIMIT 1", user) else {
                    return SnapshotPage(events: events, next: nil)
                }
                user = next
                offset = 0
            }
            let want = min(limit - events.count, Visits.latestOnOptIn - offset)
            let visits = try Visits.latest(of: user, offset: offset, limit: want, db)
            for visit in visits { events.append((FavoritesEvents.visited, try JSONCoding.encoder.encode(visit))) }
            offset = visits.count < want ? Visits.latestOnOptIn : offset + visits.count
        }
        return SnapshotPage(events: events, next: "v\(user):\(offset)")
    }
}
