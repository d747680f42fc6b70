/// Tables for subscriber cursors: how far each event source has been consumed.
public enum CursorSchema {
    /// Domain "cursor": the `event_cursor` table, one row per source.
    public static let migrations: [Migration] = [
        Migration(domain: "cursor", version: 1, sql: """
            CREATE TABLE event_cursor(
                source TEXT PRIMARY KEY,
                epoch TEXT NOT NULL,
                seq INTEGER NOT NULL);
            """),
    ]
}

/// A position in a source's outbox: the outbox's epoch and the last seq consumed.
public struct EventCursor: Sendable, Equatable {
    /// The source outbox's epoch; a different epoch means the source's history started over.
    public let epoch: String
    /// The last seq consumed.
    public let seq: Int64

    /// Describes a position.
    public init(epoch: String, seq: Int64) {
        self.epoch = epoch
        self.seq = seq
    }
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
        try database.run("""
            INSERT INTO event_cursor(source, epoch, seq) VALUES(?, ?, ?)
            ON CONFLICT(source) DO UPDATE SET epoch = excluded.epoch, seq = excluded.seq
            """, source, cursor.epoch, cursor.seq)
    }

    /// Deletes the cursor for `source`, if any.
    public func remove(source: String) throws(SQLiteError) {
        try database.run("DELETE FROM event_cursor WHERE source = ?", source)
    }
}
