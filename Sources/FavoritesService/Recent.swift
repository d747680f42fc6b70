import Bus
import Contracts
import Foundation
import ServiceKit
import Storage

/// Each user's recent searches (issue 16): the last `maxPerUser` different `search.text`
/// searches they made signed in, learned from search's `search.performed` events (one stream
/// per search replica), newest first (`search.recent`), emptied on request
/// (`search.recent.clear`) and erased with the user (`social.user.deleted`).
///
/// Two searches are the same (a **duplicate**) when their `q`, trimmed, with each run of white
/// space made one space, in Unicode NFC and lower case, is the same text (`key`): a repeat
/// replaces the older one, so it moves to the top with its latest spelling and point.
///
/// The list is favorites' own record, not a copy of search's state: a rebuild of the stream
/// forgets nothing (`reset` does nothing), and applying an event again changes nothing,
/// because a search is stored only when it is newer than the one of the same key, and only when
/// newer than the user's `recent_forgotten.before` (when they last cleared), so a replay cannot
/// bring back what was cleared. An erased user leaves no row at all: their searches still in
/// search's outbox are redacted there, and one heard within 10 minutes of the erasure
/// (`RecentlyErased`) is not stored.
enum Recent {
    /// Searches kept per user.
    static let maxPerUser = 50
    /// Page sizes of `search.recent`: all of them by default.

    static let migrations: [Migration] = [
        // Times are milliseconds since 1970 (`at`: when search answered).
        Migration(
            domain: "recent", version: 1,
            sql: """
                CREATE TABLE recent_searches (
                    id       INTEGER PRIMARY KEY,
                    user_id  INTEGER NOT NULL,
                    key      TEXT NOT NULL,
                    q        TEXT NOT NULL,
                    near_lat REAL,
                    near_lon REAL,
                    at       INTEGER NOT NULL,
                    UNIQUE (user_id, key)
                );
                CREATE INDEX recent_searches_newest ON recent_searches(user_id, at, id);
                -- Searches of a user made at or before `before` (their last clear) are not stored.
                CREATE TABLE recent_forgotten (
                    user_id INTEGER PRIMARY KEY,
                    before  INTEGER NOT NULL
                );
                """)
    ]

    static func register(_ table: inout HandlerTable<FavoritesStore>) {
        table.on(Methods.Search.recent) { (request: RecentRequest, caller, _, store) -> RecentPage in
            try store.recentSearches(caller: caller, limit: try PageLimit.recentSearches.validated(request.limit))
        }
        table.on(Methods.Search.recentClear) { (_: Empty, caller, _, store) -> RecentCleared in
            try store.clearRecentSearches(caller: caller)
        }
    }

    /// What search's `search.performed` teaches: the user's recent searches, except those of a
    /// user erased a moment ago (`erased`, by `clock`).
    static func searchApplier(clock: @escaping @Sendable () -> Int64, erased: RecentlyErased) -> EventApplier {
        EventApplier(
            apply: { event, scope in
                guard event.header.type == SearchEvents.performed else { return }
                let search = try event.body(SearchPerformed.self)
                guard (try? erased.refuse(search.userId, now: clock())) != nil else { return }
                try remember(search, scope.db)
            },
            // Nothing to forget: the list is favorites' own (see above); a rebuild re-applies
            // what search's outbox still holds, which changes nothing already stored.
            reset: { _ in },
            types: [SearchEvents.performed])
    }

    /// The text shown and the key that says two searches are the same: `q` trimmed, with each
    /// run of white space one space; the key is that in NFC and lower case. The text shown is
    /// not normalized, since NFC may lengthen a text (past the 800 bytes `search.text` takes,
    /// which sending it again would then be refused for); it is never longer than `q`.
    static func normalized(_ q: String) -> (shown: String, key: String) {
        let shown = q.split(whereSeparator: \.isWhitespace).joined(separator: " ")
        return (shown, shown.precomposedStringWithCanonicalMapping.lowercased())
    }

    /// Stores one search unless it is forgotten or not newer than the one of its key; keeps
    /// the user's newest `maxPerUser`. A body out of bounds is a `ServiceError` (the event is skipped).
    static func remember(_ search: SearchPerformed, _ db: Database) throws {
        guard search.userId > 0 else { throw ServiceError.invalid("user_id", "must be a positive user id") }
        guard search.q.utf8.count <= SearchPerformed.maxQueryBytes else {
            throw ServiceError.invalid("q", "must be at most \(SearchPerformed.maxQueryBytes) UTF-8 bytes")
        }
        let at = try RFC3339.milliseconds(search.at, field: "at")
        if let near = search.near {
            guard (-90...90).contains(near.lat), (-180...180).contains(near.lon) else {
                throw ServiceError.invalid("near", "must be a point: lat -90 to 90, lon -180 to 180")
            }
        }
        let (shown, key) = normalized(search.q)
        guard !shown.isEmpty else { return }
        if let before = try db.scalarInt("SELECT before FROM recent_forgotten WHERE user_id = ?", search.userId), at <= before { return }
        if let row = try db.queryOne("SELECT id, at FROM recent_searches WHERE user_id = ? AND key = ?", search.userId, key) {
            guard try row.decode("at", as: Int64.self) < at else { return }
            try db.run("DELETE FROM recent_searches WHERE id = ?", try row.decode("id", as: Int64.self))
        }
        try db.run(
            "INSERT INTO recent_searches (user_id, key, q, near_lat, near_lon, at) VALUES (?, ?, ?, ?, ?, ?)",
            search.userId, key, shown, search.near?.lat, search.near?.lon, at)
        try db.run(
            """
            DELETE FROM recent_searches WHERE id IN (
                SELECT id FROM recent_searches WHERE user_id = ? ORDER BY at DESC, id DESC LIMIT -1 OFFSET ?)
            """, search.userId, maxPerUser)
    }

    /// Forgets every recent search of user `id`, and every one made at or before `before`
    /// that arrives later (a replica's stream that was behind, a replay).
    static func forget(user id: Int64, before: Int64, _ db: Database) throws -> Int {
        try db.run("DELETE FROM recent_searches WHERE user_id = ?", id)
        let deleted = db.changes
        try db.run(
            """
            INSERT INTO recent_forgotten (user_id, before) VALUES (?, ?)
            ON CONFLICT(user_id) DO UPDATE SET before = max(before, excluded.before)
            """, id, before)
        return deleted
    }

    /// Erases user `id`'s recent searches and their last clear (`social.user.deleted`); the
    /// caller notes them in `RecentlyErased` first.
    static func erase(user id: Int64, _ db: Database) throws {
        try db.run("DELETE FROM recent_searches WHERE user_id = ?", id)
        try db.run("DELETE FROM recent_forgotten WHERE user_id = ?", id)
    }
}

extension FavoritesStore {
    func recentSearches(caller: Caller, limit: Int) throws -> RecentPage {
        let rows = try db.query(
            "SELECT q, near_lat, near_lon, at FROM recent_searches WHERE user_id = ? ORDER BY at DESC, id DESC LIMIT ?",
            caller.id, limit)
        return RecentPage(
            searches: try rows.map { row in
                let lat = try row.decode("near_lat", as: Double?.self)
                let lon = try row.decode("near_lon", as: Double?.self)
                return RecentSearch(
                    q: try row.decode("q"), near: lat.flatMap { lat in lon.map { SearchPerformed.Point(lat: lat, lon: $0) } },
                    at: FavoritesStore.timestamp(try row.decode("at")))
            })
    }

    /// Forgets the caller's recent searches, and any made until now that arrive later.
    func clearRecentSearches(caller: Caller) throws -> RecentCleared {
        RecentCleared(cleared: try Recent.forget(user: caller.id, before: now, db))
    }
}
