import Foundation
import ServiceCore
import Storage

/// Tables for subscriber cursors: how far each event source has been consumed.
public enum CursorSchema {
    /// Domain "cursor": the `event_cursor` table, one row per source; from version 2 also
    /// `event_staging`, where a snapshot's pages wait until the last one is in.
    public static let migrations: [Migration] = [
        Migration(
            domain: "cursor", version: 1,
            sql: """
                CREATE TABLE event_cursor(
                    source TEXT PRIMARY KEY,
                    epoch TEXT NOT NULL,
                    seq INTEGER NOT NULL);
                """),
        Migration(
            domain: "cursor", version: 2,
            sql: """
                CREATE TABLE event_staging(
                    source TEXT NOT NULL,
                    n INTEGER NOT NULL,
                    envelope BLOB NOT NULL,
                    PRIMARY KEY(source, n)) WITHOUT ROWID;
                """),
    ]
}

/// Cursors of one database, keyed by source name.
///
/// Needs `CursorSchema.migrations` applied. Shares the database's thread, so it is not Sendable.
public struct CursorStore {
    /// The connection holding the cursors.
    public let database: Database

    /// Wraps a connection whose schema includes `CursorSchema.migrations`.
    public init(database: Database) {
        self.database = database
    }

    /// The cursor stored for `source`, nil if none.
    ///
    /// Throws a `SQLiteError`, or a `RowError` if the stored row is not an epoch and a seq.
    public func get(source: String) throws -> EventCursor? {
        guard let row = try database.queryOne("SELECT epoch, seq FROM event_cursor WHERE source = ?", source) else { return nil }
        return try EventCursor(epoch: row.decode("epoch"), seq: row.decode("seq"))
    }

    /// Stores (inserts or replaces) the cursor for `source`.
    ///
    /// Run it in the same transaction as the effect of the event, so the effect and the
    /// advanced cursor commit together and an event is never applied twice or skipped.
    public func set(source: String, _ cursor: EventCursor) throws(SQLiteError) {
        try database.run(
            """
            INSERT INTO event_cursor(source, epoch, seq) VALUES(?, ?, ?)
            ON CONFLICT(source) DO UPDATE SET epoch = excluded.epoch, seq = excluded.seq
            """, source, cursor.epoch, cursor.seq)
    }

    /// Deletes the cursor for `source`, if any.
    public func remove(source: String) throws(SQLiteError) {
        try database.run("DELETE FROM event_cursor WHERE source = ?", source)
    }

    // MARK: Snapshot staging

    /// Appends event envelopes to the snapshot staged for `source`, after those already there.
    /// Run it in a transaction (one per page): the page is staged whole or not at all.
    public func stage(source: String, _ envelopes: [Data]) throws(SQLiteError) {
        guard !envelopes.isEmpty else { return }
        var n = try database.scalarInt("SELECT coalesce(max(n), 0) FROM event_staging WHERE source = ?", source) ?? 0
        for envelope in envelopes {
            n += 1
            try database.run("INSERT INTO event_staging(source, n, envelope) VALUES(?, ?, ?)", source, n, envelope)
        }
    }

    /// Calls `body` with each envelope staged for `source` (and its place `n`), in the order
    /// staged, after place `after` and at most `limit` of them; `body` returns false to stop.
    public func forEachStaged(source: String, after: Int64 = 0, limit: Int = .max, _ body: (_ n: Int64, Data) throws -> Bool) throws {
        try database.stepWhile(
            "SELECT n, envelope FROM event_staging WHERE source = ? AND n > ? ORDER BY n LIMIT ?", [source, after, Int64(limit)]
        ) { statement in
            try body(try statement.row.decode("n", as: Int64.self), try statement.row.decode("envelope", as: Data.self))
        }
    }

    /// How many envelopes are staged for `source`.
    public func stagedCount(source: String) throws(SQLiteError) -> Int {
        Int(try database.scalarInt("SELECT count(*) FROM event_staging WHERE source = ?", source) ?? 0)
    }

    /// Forgets the snapshot staged for `source`, if any, or its envelopes up to place `through`.
    public func clearStaging(source: String, through: Int64 = .max) throws(SQLiteError) {
        try database.run("DELETE FROM event_staging WHERE source = ? AND n <= ?", source, through)
    }
}
