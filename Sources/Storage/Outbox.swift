import Foundation

/// Tables for a transactional outbox: events written in the same transaction as the state change they describe.
public enum OutboxSchema {
    /// Domain "outbox": the `outbox` table and `outbox_meta` with this outbox's `epoch`.
    ///
    /// AUTOINCREMENT keeps a seq from ever being reused, even after every row is trimmed.
    /// The epoch is a random UUID naming this outbox's history, so a subscriber can tell a
    /// recreated database (seqs starting over) from the one its cursor refers to.
    public static let migrations: [Migration] = [
        Migration(
            domain: "outbox", version: 1,
            sql: """
                CREATE TABLE outbox(
                    seq INTEGER PRIMARY KEY AUTOINCREMENT,
                    type TEXT NOT NULL,
                    ts TEXT NOT NULL,
                    body BLOB NOT NULL);
                CREATE TABLE outbox_meta(
                    key TEXT PRIMARY KEY,
                    value TEXT NOT NULL);
                INSERT INTO outbox_meta(key, value) VALUES('epoch',
                    lower(hex(randomblob(4))) || '-' || lower(hex(randomblob(2))) || '-4' ||
                    substr(lower(hex(randomblob(2))), 2) || '-' ||
                    substr('89ab', 1 + abs(random()) % 4, 1) || substr(lower(hex(randomblob(2))), 2) || '-' ||
                    lower(hex(randomblob(6))));
                """)
    ]
}

/// One stored outbox event.
public struct OutboxRecord: Sendable, Equatable {
    /// Position in the outbox: increasing, never reused.
    public let seq: Int64
    /// The event type name.
    public let type: String
    /// When the event was appended, ISO-8601 UTC with milliseconds.
    public let ts: String
    /// The encoded event.
    public let body: Data

    /// Describes a record.
    public init(seq: Int64, type: String, ts: String, body: Data) {
        self.seq = seq
        self.type = type
        self.ts = ts
        self.body = body
    }
}

/// The outbox tables of one database: append inside a service's transaction, read and trim from a relay.
///
/// Needs `OutboxSchema.migrations` applied. Shares the database's thread, so it is not Sendable.
public struct Outbox {
    /// The connection holding the outbox.
    public let database: Database

    /// Wraps a connection whose schema includes `OutboxSchema.migrations`.
    public init(database: Database) {
        self.database = database
    }

    /// Appends an event and returns its seq; `ts` defaults to now (ISO-8601 UTC, milliseconds).
    ///
    /// Must run inside the caller's `Database.transaction`, together with the state change the event
    /// describes, so both commit or neither does; outside a transaction it throws `.misuse`.
    @discardableResult
    public func append(type: String, body: Data, ts: String? = nil) throws(SQLiteError) -> Int64 {
        guard database.isInTransaction else {
            throw SQLiteError.misuse("Outbox.append must run inside the transaction that makes the state change")
        }
        try database.run(
            """
            INSERT INTO outbox(type, ts, body)
            VALUES(?, coalesce(?, strftime('%Y-%m-%dT%H:%M:%fZ', 'now')), ?)
            """, type, ts, body)
        return database.lastInsertRowID
    }

    /// The highest seq ever assigned, 0 if none; unaffected by trimming.
    public func head() throws(SQLiteError) -> Int64 {
        try database.scalarInt("SELECT seq FROM sqlite_sequence WHERE name = 'outbox'") ?? 0
    }

    /// The lowest seq still stored, nil if the outbox is empty.
    public func firstAvailable() throws(SQLiteError) -> Int64? {
        try database.scalarInt("SELECT min(seq) FROM outbox")
    }

    /// Up to `limit` records with seq greater than `after`, in seq order.
    ///
    /// Throws a `SQLiteError`, or a `RowError` for a row that is not a record.
    public func read(after seq: Int64, limit: Int) throws -> [OutboxRecord] {
        guard limit > 0 else { return [] }
        return try database.query(
            "SELECT seq, type, ts, body FROM outbox WHERE seq > ? ORDER BY seq LIMIT ?",
            seq, limit
        ).map { row throws(RowError) in
            try OutboxRecord(seq: row.decode("seq"), type: row.decode("type"), ts: row.decode("ts"), body: row.decode("body"))
        }
    }

    /// Deletes all but the newest `count` records and returns how many were deleted.
    @discardableResult
    public func trim(keepingLast count: Int) throws(SQLiteError) -> Int {
        if count <= 0 {
            try database.run("DELETE FROM outbox")
        } else {
            // With fewer than `count` rows the subquery is NULL and nothing matches.
            try database.run(
                """
                DELETE FROM outbox
                WHERE seq < (SELECT seq FROM outbox ORDER BY seq DESC LIMIT 1 OFFSET ?)
                """, count - 1)
        }
        return database.changes
    }

    /// The random id of this outbox's history; created by the migration, or here if missing.
    public func epoch() throws(SQLiteError) -> String {
        let select = "SELECT value FROM outbox_meta WHERE key = 'epoch'"
        if let epoch = try database.queryOne(select)?.string(0) { return epoch }
        try database.run(
            "INSERT OR IGNORE INTO outbox_meta(key, value) VALUES('epoch', ?)",
            UUID().uuidString.lowercased())
        guard let epoch = try database.queryOne(select)?.string(0) else {
            throw SQLiteError.misuse("outbox_meta has no epoch after creating one")
        }
        return epoch
    }
}
