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

    /// The index `outbox_by_user`, of the rows by the user their body names (`user_id`), as
    /// migration `version` of `domain`: a service that erases a user's events
    /// (`Outbox.redact`) adds it, so the erasure reads that user's rows, not the whole outbox,
    /// inside its transaction.
    public static func userIndex(domain: String, version: Int) -> Migration {
        Migration(
            domain: domain, version: version,
            sql: "CREATE INDEX outbox_by_user ON outbox(\(Outbox.namedUser)) WHERE \(Outbox.isJSON);")
    }
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

    /// Appends one event of `type` per row of `table`, its body `body` (an expression over the
    /// row), in the order of `orderedBy`, with one statement; answers how many. Like
    /// `append(type:body:ts:)`, inside the caller's transaction.
    @discardableResult
    public func append(type: String, bodies body: String, from table: String, orderedBy order: String) throws(SQLiteError) -> Int {
        guard database.isInTransaction else {
            throw SQLiteError.misuse("Outbox.append must run inside the transaction that makes the state change")
        }
        try database.run(
            "INSERT INTO outbox(type, ts, body) SELECT ?, strftime('%Y-%m-%dT%H:%M:%fZ', 'now'), \(body) FROM \(table) ORDER BY \(order)", type)
        return database.changes
    }

    /// The user a body names, and the condition for naming one: the expression and condition of
    /// `outbox_by_user`, which a query repeats word for word (SQLite uses an index on an
    /// expression only then).
    static let namedUser = "json_extract(CAST(body AS TEXT), '$.user_id')"
    static let isJSON = "json_valid(CAST(body AS TEXT))"

    /// The statement of `redact(user:types:as:)`, for `types` many types (0: any type).
    public static func redaction(types: Int) -> String {
        let typed = types == 0 ? "" : " AND type IN (\(Array(repeating: "?", count: types).joined(separator: ", ")))"
        return "UPDATE outbox SET type = ?, body = CAST('{}' AS BLOB) WHERE \(isJSON) AND \(namedUser) = ?\(typed)"
    }

    /// Blanks the events still stored that name user `id` (as `user_id`) and are of one of
    /// `types` (empty: of any type): each becomes `redactedType` with body `{}`, its seq kept,
    /// so replays stay gap-free and followers ignore it. Reads that user's rows through
    /// `outbox_by_user` (`OutboxSchema.userIndex`), which the database must have. Returns how
    /// many were blanked.
    @discardableResult
    public func redact(user id: Int64, types: [String] = [], as redactedType: String) throws(SQLiteError) -> Int {
        let arguments: [(any SQLBindable)?] = [redactedType, id] + types.map { $0 }
        try database.run(Self.redaction(types: types.count), arguments)
        return database.changes
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

    /// This machine's boot, from the Linux kernel (`/proc/sys/kernel/random/boot_id`), or nil
    /// where there is none: what tells a start after the machine went down from a restart.
    public static func currentBootID() -> String? {
        guard let text = try? String(contentsOfFile: "/proc/sys/kernel/random/boot_id", encoding: .utf8) else { return nil }
        let id = text.trimmingCharacters(in: .whitespacesAndNewlines)
        return id.isEmpty ? nil : id
    }

    /// Marks a run of the publisher beginning, on machine boot `bootID`, and answers whether
    /// that began a new epoch. The head may have gone back only when the machine went down
    /// (a power loss) while the last run had not stopped cleanly: commits are synced with WAL
    /// at checkpoints, not each one (`synchronous = NORMAL`), so the last ones before a power
    /// loss can be lost after subscribers heard them, and their seqs would name other events.
    /// So a run that began on another boot and did not end (`endRun`) makes a new epoch;
    /// a `kill -9` (the same boot: every commit is in the operating system's cache) does not,
    /// nor a machine that stopped its services before going down. The marks themselves are
    /// synced, so that a run's mark is never lost while what it published survives.
    @discardableResult
    public func beginRun(bootID: String? = Outbox.currentBootID()) throws -> Bool {
        _ = try epoch()
        return try synced {
            try database.transaction {
                let meta = Dictionary(
                    try database.query("SELECT key, value FROM outbox_meta WHERE key IN ('boot', 'running')").compactMap { row in
                        row.string(0).flatMap { key in row.string(1).map { (key, $0) } }
                    }, uniquingKeysWith: { first, _ in first })
                let wentDown = meta["running"] == "1" && bootID != nil && meta["boot"] != nil && meta["boot"] != bootID
                if wentDown {
                    try database.run("UPDATE outbox_meta SET value = ? WHERE key = 'epoch'", UUID().uuidString.lowercased())
                }
                try database.run("INSERT OR REPLACE INTO outbox_meta(key, value) VALUES('running', '1')")
                if let bootID { try database.run("INSERT OR REPLACE INTO outbox_meta(key, value) VALUES('boot', ?)", bootID) }
                return wentDown
            }
        }
    }

    /// Marks the run ended cleanly: everything committed is published, and the next start on
    /// another boot keeps the epoch.
    public func endRun() throws {
        try synced {
            try database.run("INSERT OR REPLACE INTO outbox_meta(key, value) VALUES('running', '0')")
        }
    }

    /// Runs `body` with every commit synced to disk (`synchronous = FULL`), then back to NORMAL.
    private func synced<Result>(_ body: () throws -> Result) throws -> Result {
        try database.execute("PRAGMA synchronous = FULL")
        defer { try? database.execute("PRAGMA synchronous = NORMAL") }
        return try body()
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
