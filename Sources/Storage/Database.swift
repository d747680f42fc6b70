import CSQLite

#if canImport(Glibc)
    import Glibc
#endif

/// How a top-level transaction takes its locks (see SQLite's BEGIN).
public enum TransactionKind: String, Sendable {
    /// Locks are taken on first read or write.
    case deferred = "DEFERRED"
    /// The write lock is taken at BEGIN, so a later write cannot fail with SQLITE_BUSY mid-transaction.
    case immediate = "IMMEDIATE"
    /// Like immediate; in WAL mode the two are the same.
    case exclusive = "EXCLUSIVE"
}

/// One SQLite connection; owns its `sqlite3*` and closes it in deinit.
///
/// Opened with SQLITE_OPEN_NOMUTEX: a connection and its statements belong to one thread, so this is not Sendable.
public final class Database {
    /// The file path given at open, or ":memory:".
    public let path: String
    private let connection: OpaquePointer
    /// Prepared statements by SQL text, reused across calls.
    private var statementCache: [String: Statement] = [:]
    /// How many `transaction` calls are running; above zero, nested calls use savepoints.
    private var transactionDepth = 0
    /// The VFS, gate and commit step of a file that is not a plain file (a replicated one).
    let shared: SharedConnection?
    /// What the busy handler of a shared file's connection needs (kept alive with the connection).
    private let busyWait: BusyWait?

    /// Opens (creating unless `readOnly`) the database at `path`; ":memory:" gives a private in-memory database.
    ///
    /// Turns on extended result codes, the busy timeout and foreign keys, and registers the
    /// `nearest_first` R*Tree query (`NearestFirst`); for writable files also
    /// WAL journaling (verified) and synchronous=NORMAL, which is durable enough with WAL and much faster.
    ///
    /// With `shared`, `path` names the file in that VFS; every call runs inside its gate, the
    /// connection never checkpoints on its own (the replicas decide when), and each write it
    /// commits is finished by `shared.committed` before the statement returns.
    public init(path: String, readOnly: Bool = false, busyTimeoutMilliseconds: Int32 = 5000, shared: SharedFile? = nil) throws(SQLiteError) {
        var opened: OpaquePointer?
        let flags = (readOnly ? SQLITE_OPEN_READONLY : SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE) | SQLITE_OPEN_NOMUTEX
        let resultCode = shared?.gate.pass { sqlite3_open_v2(path, &opened, flags, shared?.vfs) } ?? sqlite3_open_v2(path, &opened, flags, nil)
        guard resultCode == SQLITE_OK, let opened else {
            let error = SQLiteError(resultCode: resultCode == SQLITE_OK ? SQLITE_NOMEM : resultCode, connection: opened)
            _ = sqlite3_close_v2(opened)  // A failed open still allocates a handle (or NULL, which is a no-op).
            throw error
        }
        self.path = path
        self.connection = opened
        self.shared = shared.map(SharedConnection.init)
        busyWait = shared.map { BusyWait(gate: $0.gate, timeoutMilliseconds: busyTimeoutMilliseconds) }
        // From here deinit closes the connection if a setting below throws.
        try check(sqlite3_extended_result_codes(connection, 1), connection)
        if let busyWait, let shared {
            // As dqlite opens its own: the page size first, no syncs (the VFS is memory), WAL (the
            // only mode it holds). The switch to WAL writes the file's header in place, the same on
            // every replica: made locally, not replicated.
            let local = "PRAGMA page_size = 4096; PRAGMA synchronous = OFF; PRAGMA journal_mode = WAL"
            try check(shared.gate.pass { sqlite3_exec(connection, local, nil, nil, nil) }, connection, sql: local)
            try check(sqlite3_busy_handler(connection, waitOutsideGate, Unmanaged.passUnretained(busyWait).toOpaque()), connection)
            try check(tourbus_sqlite_no_checkpoint_on_close(connection), connection)
            try execute("PRAGMA wal_autocheckpoint = 0")
        } else {
            try check(sqlite3_busy_timeout(connection, busyTimeoutMilliseconds), connection)
        }
        try execute("PRAGMA foreign_keys = ON")
        try check(NearestFirst.register(on: connection), connection)
        let isMemory = path.isEmpty || path == ":memory:"
        // A shared file is in WAL mode already (above).
        if !readOnly && !isMemory && shared == nil {
            let mode = try queryOne("PRAGMA journal_mode = WAL")?.string(0)
            guard mode?.lowercased() == "wal" else {
                throw SQLiteError(
                    extendedCode: SQLITE_ERROR,
                    message: "could not enable WAL; journal_mode is \(mode ?? "unknown")", sql: "PRAGMA journal_mode = WAL")
            }
            try execute("PRAGMA synchronous = NORMAL")
        }
    }

    deinit {
        // Statements must go before the connection. Neither call has an error worth acting on here:
        // finalize repeats an error already thrown, and close_v2 defers closing until outside statements finish.
        let connection = connection
        let statements = statementCache.values
        let close = {
            for statement in statements { statement.finalize() }
            _ = sqlite3_close_v2(connection)
        }
        if let shared {
            shared.file.gate.pass {
                close()
                shared.settle(nil)
            }
        } else {
            close()
        }
    }

    /// Applies memory settings to this connection.
    ///
    /// A shared file's connection takes the cache size only: its VFS maps nothing, and its
    /// replicas decide when to checkpoint.
    public func tune(_ tuning: DatabaseTuning) throws(SQLiteError) {
        if let cache = tuning.cacheMebibytes { try execute("PRAGMA cache_size = -\(cache * 1024)") }
        guard shared == nil else { return }
        if let map = tuning.mapMebibytes { try execute("PRAGMA mmap_size = \(map * 1_048_576)") }
        if let pages = tuning.checkpointPages { try execute("PRAGMA wal_autocheckpoint = \(pages)") }
    }

    /// A shared file's checkpoint: copies the write-ahead log into the file and empties it, only
    /// when no connection has a transaction open and `idle` (inside the gate) says nothing else
    /// holds the log either, all in one pass of the gate; whether it did. A checkpoint that copied
    /// the log without emptying it would let SQLite's next writer start the log over, which
    /// dqlite's VFS cannot hold. Replicas checkpoint on their own: no log of its own is written.
    public func checkpointShared(if idle: () -> Bool) throws(SQLiteError) -> Bool {
        guard let shared else { throw SQLiteError.misuse("checkpointShared is for a shared file") }
        let connection = connection
        return try shared.file.gate.pass { () throws(SQLiteError) -> Bool in
            guard shared.file.gate.openTransactions == 0, idle() else { return false }
            var logged: Int32 = 0
            var copied: Int32 = 0
            let code = sqlite3_wal_checkpoint_v2(connection, nil, SQLITE_CHECKPOINT_TRUNCATE, &logged, &copied)
            if code == SQLITE_BUSY { return false }
            try check(code, connection)
            return logged == 0
        }
    }

    /// A shared file's database, as of one commit, copied into a private plain in-memory one,
    /// in one pass of the gate: its pages are copied from the VFS's memory, so the other
    /// connections and the replicas' commits wait only that long. This connection must have
    /// no transaction open.
    public func copySharedIntoMemory() throws(SQLiteError) -> Database {
        guard let shared else { throw SQLiteError.misuse("copySharedIntoMemory is for a shared file") }
        let copy = try Database(path: ":memory:")
        let source = connection
        let target = copy.connection
        try shared.file.gate.pass { () throws(SQLiteError) in
            shared.mayBegin(source)
            defer { shared.settle(source) }
            guard let backup = sqlite3_backup_init(target, "main", source, "main") else {
                throw SQLiteError(resultCode: sqlite3_errcode(target), connection: target, sql: "(copying \(path) into memory)")
            }
            // Every page in one step: a step at a time would start over after each commit.
            let code = sqlite3_backup_step(backup, -1)
            let finished = sqlite3_backup_finish(backup)
            guard code == SQLITE_DONE else { throw SQLiteError(resultCode: code, connection: target, sql: "(copying \(path) into memory)") }
            try check(finished, target)
        }
        return copy
    }

    /// Inside a shared file's gate, with no transaction open: empties the WAL index every
    /// connection shares, so each rebuilds it from the log at its next read (after the file's
    /// contents were replaced under it, by a snapshot).
    public func forgetWALIndex() throws(SQLiteError) {
        var file: UnsafeMutablePointer<sqlite3_file>?
        try check(sqlite3_file_control(connection, "main", SQLITE_FCNTL_FILE_POINTER, &file), connection)
        guard let file, let methods = file.pointee.pMethods, let map = methods.pointee.xShmMap else { return }
        let regionBytes: Int32 = 32_768
        for region in Int32(0)..<1_000 {
            var memory: UnsafeMutableRawPointer?
            guard map(file, region, regionBytes, 0, &memory) == SQLITE_OK, let memory else { return }
            memset(memory, 0, Int(regionBytes))
        }
    }

    /// Runs a script of zero or more SQL statements separated by semicolons, without parameters.
    ///
    /// On a shared file each statement runs on its own, so each commit it makes is finished
    /// before the next statement begins.
    public func execute(_ sql: String) throws(SQLiteError) {
        if shared != nil {
            return try Statement.runScript(sql, connection: connection, shared: shared)
        }
        var errorText: UnsafeMutablePointer<CChar>?
        let resultCode = sqlite3_exec(connection, sql, nil, nil, &errorText)
        defer { sqlite3_free(errorText) }
        guard resultCode == SQLITE_OK else {
            var error = SQLiteError(resultCode: resultCode, connection: connection, sql: sql)
            if let errorText {
                error = SQLiteError(extendedCode: error.extendedCode, message: String(cString: errorText), sql: sql)
            }
            throw error
        }
    }

    /// Returns the cached prepared statement for `sql`, reset and ready to bind; prepares and caches it on first use.
    ///
    /// If that statement is being stepped by a `forEachRow` on this connection, a separate uncached one is returned.
    public func statement(_ sql: String) throws(SQLiteError) -> Statement {
        if let cached = statementCache[sql] {
            guard !cached.isInUse else { return try Statement(connection: connection, sql: sql, persistent: false, shared: shared) }
            cached.reset()
            return cached
        }
        let statement = try Statement(connection: connection, sql: sql, persistent: true, shared: shared)
        statementCache[sql] = statement
        return statement
    }

    /// Finalizes all cached statements, e.g. after running many one-off SQL texts.
    public func clearStatementCache() {
        let idle = statementCache.values.filter { !$0.isInUse }
        if let shared {
            shared.file.gate.pass { for statement in idle { statement.finalize() } }
        } else {
            for statement in idle { statement.finalize() }
        }
        statementCache = statementCache.filter { $0.value.isInUse }
    }

    /// Binds `args` to the statement for `sql`, hands it to `body`, then resets it for the next caller.
    private func withStatement<Result>(
        _ sql: String, _ args: [(any SQLBindable)?], _ body: (Statement) throws(SQLiteError) -> Result
    ) throws(SQLiteError) -> Result {
        let statement = try statement(sql)
        statement.isInUse = true
        defer {
            statement.isInUse = false
            statement.reset()  // Ends any read so WAL snapshots and locks are not held.
        }
        try statement.bind(args)
        return try body(statement)
    }

    /// Runs one statement with parameters, discarding any rows.
    public func run(_ sql: String, _ args: (any SQLBindable)?...) throws(SQLiteError) {
        try run(sql, args)
    }

    /// Runs one statement with an array of parameters, discarding any rows.
    public func run(_ sql: String, _ args: [(any SQLBindable)?]) throws(SQLiteError) {
        try withStatement(sql, args) { statement throws(SQLiteError) in
            while try statement.step() {}
        }
    }

    /// Runs a query and returns all rows.
    public func query(_ sql: String, _ args: (any SQLBindable)?...) throws(SQLiteError) -> [Row] {
        try query(sql, args)
    }

    /// Runs a query with an array of parameters and returns all rows.
    public func query(_ sql: String, _ args: [(any SQLBindable)?]) throws(SQLiteError) -> [Row] {
        try withStatement(sql, args) { statement throws(SQLiteError) in
            var rows: [Row] = []
            while try statement.step() { rows.append(statement.row) }
            return rows
        }
    }

    /// Runs a query and returns its first row, or nil if there is none.
    public func queryOne(_ sql: String, _ args: (any SQLBindable)?...) throws(SQLiteError) -> Row? {
        try queryOne(sql, args)
    }

    /// Runs a query with an array of parameters and returns its first row, or nil.
    public func queryOne(_ sql: String, _ args: [(any SQLBindable)?]) throws(SQLiteError) -> Row? {
        try withStatement(sql, args) { statement throws(SQLiteError) in
            try statement.step() ? statement.row : nil
        }
    }

    /// Runs a query and returns the integer in the first column of the first row, or nil.
    public func scalarInt(_ sql: String, _ args: (any SQLBindable)?...) throws(SQLiteError) -> Int64? {
        try queryOne(sql, args)?.int(0)
    }

    /// Runs a query with an array of parameters and returns the first column of the first row as an integer, or nil.
    public func scalarInt(_ sql: String, _ args: [(any SQLBindable)?]) throws(SQLiteError) -> Int64? {
        try queryOne(sql, args)?.int(0)
    }

    /// Runs a query and calls `body` for each row as it is read, without collecting them.
    ///
    /// Throws what `body` throws (stopping the query) or a `SQLiteError`.
    public func forEachRow(_ sql: String, _ args: [(any SQLBindable)?] = [], _ body: (Row) throws -> Void) throws {
        try forEachStep(sql, args) { try body($0.row) }
    }

    /// Runs a query and calls `body` with the statement at each row, for reading columns
    /// without copying them (`Statement.int64`, `double`, `withUTF8`).
    public func forEachStep(_ sql: String, _ args: [(any SQLBindable)?] = [], _ body: (Statement) throws -> Void) throws {
        try stepWhile(sql, args) { statement in
            try body(statement)
            return true
        }
    }

    /// Like `forEachStep`, but stops reading (the rest of the rows are never computed) once
    /// `body` returns false.
    public func stepWhile(_ sql: String, _ args: [(any SQLBindable)?] = [], _ body: (Statement) throws -> Bool) throws {
        let statement = try statement(sql)
        statement.isInUse = true
        defer {
            statement.isInUse = false
            statement.reset()
        }
        try statement.bind(args)
        while try statement.step(), try body(statement) {}
    }

    /// The rowid of the most recent successful INSERT on this connection.
    public var lastInsertRowID: Int64 { sqlite3_last_insert_rowid(connection) }

    /// Rows changed by the most recent INSERT, UPDATE or DELETE on this connection.
    public var changes: Int { Int(sqlite3_changes64(connection)) }

    /// True while a transaction is open on this connection (SQLite is not in autocommit mode).
    public var isInTransaction: Bool { sqlite3_get_autocommit(connection) == 0 }

    /// Runs `body` in a transaction: commits if it returns, rolls back and rethrows its error if it throws.
    ///
    /// A call inside another transaction uses a savepoint instead, so if the inner body throws and the outer
    /// body catches that error, only the inner work is undone. `kind` applies to the outermost call only.
    ///
    /// When SQLite has rolled back the outer transaction on its own (after SQLITE_FULL, an I/O
    /// error), an inner call throws `SQLITE_ABORT` instead of running: a savepoint opened then
    /// would begin a transaction of its own and commit on release, outside the outer one.
    public func transaction<Result>(_ kind: TransactionKind = .immediate, _ body: () throws -> Result) throws -> Result {
        if transactionDepth > 0 && !isInTransaction {
            throw SQLiteError(extendedCode: SQLITE_ABORT, message: "the enclosing transaction was rolled back", sql: nil)
        }
        let nested = transactionDepth > 0 || isInTransaction
        let savepoint = "storage_savepoint_\(transactionDepth + 1)"
        // Prepared once and cached, like any statement: a write runs four of these (its
        // savepoint and the handler's within a group commit), and sqlite3_exec parses each anew.
        try run(nested ? "SAVEPOINT \(savepoint)" : "BEGIN \(kind.rawValue)")
        transactionDepth += 1
        defer { transactionDepth -= 1 }

        let result: Result
        do {
            result = try body()
        } catch {
            rollBack(nested: nested, savepoint: savepoint)
            throw error
        }
        do {
            try run(nested ? "RELEASE \(savepoint)" : "COMMIT")
        } catch {
            rollBack(nested: nested, savepoint: savepoint)
            throw error
        }
        return result
    }

    /// Undoes a failed transaction or savepoint, keeping the caller's original error as the one thrown.
    ///
    /// Errors here are ignored on purpose: SQLite may already have rolled back (e.g. after SQLITE_FULL),
    /// and the body's error says more than "no transaction is active".
    private func rollBack(nested: Bool, savepoint: String) {
        guard isInTransaction else { return }
        if nested {
            try? execute("ROLLBACK TO \(savepoint)")
            try? execute("RELEASE \(savepoint)")
        } else {
            try? execute("ROLLBACK")
        }
    }
}

/// How much memory a connection may use for a large file read at random.
public struct DatabaseTuning: Sendable, Equatable {
    /// The page cache, in MiB (SQLite's default is 2 MiB).
    public var cacheMebibytes: Int?
    /// How much of the file is read through a memory map instead of read calls, in MiB
    /// (SQLite's default is none). Mapped pages are the kernel's page cache, shared and
    /// reclaimable, but they count in the process's resident size.
    public var mapMebibytes: Int?
    /// How many pages the write-ahead log may hold before a commit copies them into the file
    /// (SQLite's default is 1,000): fewer, larger checkpoints for a connection writing much.
    public var checkpointPages: Int?

    public init(cacheMebibytes: Int? = nil, mapMebibytes: Int? = nil, checkpointPages: Int? = nil) {
        self.cacheMebibytes = cacheMebibytes
        self.mapMebibytes = mapMebibytes
        self.checkpointPages = checkpointPages
    }
}

/// The busy handler's view of a shared file's connection: the gate to leave while it waits.
private final class BusyWait {
    let gate: SQLiteGate
    let timeoutMilliseconds: Int32
    init(gate: SQLiteGate, timeoutMilliseconds: Int32) {
        self.gate = gate
        self.timeoutMilliseconds = timeoutMilliseconds
    }
}

/// SQLite's busy handler for a shared file's connection: leaves the gate for a millisecond and
/// asks again, until the connection's busy timeout has passed. (The lock it waits for is
/// released by a call that needs the gate: a commit being applied.)
private func waitOutsideGate(_ context: UnsafeMutableRawPointer?, _ attempts: Int32) -> Int32 {
    guard let context else { return 0 }
    let wait = Unmanaged<BusyWait>.fromOpaque(context).takeUnretainedValue()
    guard attempts < wait.timeoutMilliseconds else { return 0 }
    wait.gate.leave()
    usleep(1000)
    wait.gate.enter()
    return 1
}
