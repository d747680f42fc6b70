import CSQLite
import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// A prepared SQL statement; owns its `sqlite3_stmt` and finalizes it in deinit.
///
/// Get one from `Database.statement(_:)`. Not Sendable: it belongs to its connection's thread.
public final class Statement {
    /// The SQL text this statement was prepared from.
    public let sql: String
    /// The prepared statement, nil once finalized (its database closed first).
    private(set) var handle: OpaquePointer?
    /// The columns of the last result, kept across executions while its names still match
    /// (SQLite prepares a statement again when the schema changes, which may rename them).
    private var columnsOfLastResult: ResultColumns?
    /// Set while a `Database` helper is stepping this statement, so a nested use of the same SQL gets its own statement.
    var isInUse = false
    /// The connection's shared file, when it is not a plain one (`Database.init`).
    private let shared: SharedConnection?

    /// Prepares exactly one SQL statement on `connection`.
    ///
    /// Extra statements after the first are rejected rather than silently ignored; use `Database.execute(_:)` for scripts.
    init(connection: OpaquePointer, sql: String, persistent: Bool, shared: SharedConnection? = nil) throws(SQLiteError) {
        let (prepared, remainder) = try Statement.prepare(sql, connection: connection, persistent: persistent, shared: shared)
        self.sql = sql
        self.shared = shared
        handle = prepared
        guard prepared != nil else {
            throw SQLiteError.misuse("no SQL statement in the text", sql: sql)
        }
        guard remainder.allSatisfy({ $0.isWhitespace || $0 == ";" }) else {
            throw SQLiteError.misuse("more than one SQL statement; use execute(_:) for scripts", sql: sql)
        }
    }

    private init(sql: String, handle: OpaquePointer, shared: SharedConnection?) {
        self.sql = sql
        self.handle = handle
        self.shared = shared
    }

    /// Prepares the first statement of `sql`: its handle (nil for none) and the text after it.
    private static func prepare(
        _ sql: String, connection: OpaquePointer, persistent: Bool, shared: SharedConnection?
    ) throws(SQLiteError) -> (OpaquePointer?, String) {
        var prepared: OpaquePointer?
        var remainder = ""
        let flags = persistent ? UInt32(SQLITE_PREPARE_PERSISTENT) : 0
        let prepare = {
            sql.withCString { text in
                var tail: UnsafePointer<CChar>?
                let resultCode = sqlite3_prepare_v3(connection, text, -1, flags, &prepared, &tail)
                if let tail { remainder = String(cString: tail) }
                return resultCode
            }
        }
        let resultCode = shared?.file.gate.pass(prepare) ?? prepare()
        guard resultCode == SQLITE_OK else {
            throw SQLiteError(resultCode: resultCode, connection: connection, sql: sql)
        }
        return (prepared, remainder)
    }

    /// Runs a script one statement at a time (each prepared once the one before it has run, as
    /// `sqlite3_exec` does), so that each commit in it is finished before the next statement.
    static func runScript(_ sql: String, connection: OpaquePointer, shared: SharedConnection?) throws(SQLiteError) {
        var rest = sql
        for _ in 0..<100_000 {
            let (prepared, remainder) = try prepare(rest, connection: connection, persistent: false, shared: shared)
            if let prepared {
                let statement = Statement(sql: rest, handle: prepared, shared: shared)
                while try statement.step() {}
            }
            guard !remainder.allSatisfy({ $0.isWhitespace || $0 == ";" }) else { return }
            rest = remainder
        }
        throw SQLiteError.misuse("a script of more than 100,000 statements", sql: nil)
    }

    deinit {
        // sqlite3_finalize only repeats the last step's error, which was already thrown.
        let handle = handle
        if let shared {
            shared.file.gate.pass {
                let connection = handle.flatMap(sqlite3_db_handle)
                _ = sqlite3_finalize(handle)
                shared.settle(connection)
            }
        } else {
            _ = sqlite3_finalize(handle)
        }
    }

    /// Finalizes now; later use throws SQLITE_MISUSE. Called by `Database` before it closes
    /// (inside the gate, for a shared file).
    func finalize() {
        _ = sqlite3_finalize(handle)  // See deinit.
        handle = nil
    }

    /// The live handle, or a misuse error if the statement was finalized.
    private func liveHandle() throws(SQLiteError) -> OpaquePointer {
        guard let handle else {
            throw SQLiteError.misuse("statement used after its database was closed", sql: sql)
        }
        return handle
    }

    /// Rewinds the statement so it can run again; bindings are kept.
    ///
    /// sqlite3_reset's return code only repeats the last step's error, already thrown by `step()`.
    public func reset() {
        let handle = handle
        if let shared {
            shared.file.gate.pass {
                _ = sqlite3_reset(handle)
                shared.settle(handle.flatMap(sqlite3_db_handle))
            }
        } else {
            _ = sqlite3_reset(handle)
        }
    }

    /// Resets, clears old bindings, and binds `values` to parameters 1...n.
    ///
    /// Throws `.range` if the count differs from the statement's parameter count.
    public func bind(_ values: [(any SQLBindable)?]) throws(SQLiteError) {
        let statement = try liveHandle()
        reset()
        _ = sqlite3_clear_bindings(statement)  // Always returns SQLITE_OK.
        let expected = Int(sqlite3_bind_parameter_count(statement))
        guard values.count == expected else {
            throw SQLiteError(
                extendedCode: SQLITE_RANGE,
                message: "statement expects \(expected) parameters, got \(values.count)", sql: sql)
        }
        for (offset, value) in values.enumerated() {
            try bind(value?.sqlValue ?? .null, at: Int32(offset + 1), statement)
        }
    }

    /// Binds one value to a 1-based parameter index.
    private func bind(_ value: SQLValue, at index: Int32, _ statement: OpaquePointer) throws(SQLiteError) {
        let resultCode: Int32
        switch value {
        case .null:
            resultCode = sqlite3_bind_null(statement, index)
        case .integer(let number):
            resultCode = sqlite3_bind_int64(statement, index, number)
        case .real(let number):
            resultCode = sqlite3_bind_double(statement, index, number)
        case .text(let text):
            var utf8 = text.utf8CString  // NUL-terminated; the length below excludes the NUL.
            resultCode = utf8.withUnsafeMutableBufferPointer { buffer in
                sqlite3_bind_text64(
                    statement, index, buffer.baseAddress, sqlite3_uint64(buffer.count - 1),
                    tourbus_sqlite_transient(), UInt8(SQLITE_UTF8))
            }
        case .blob(let bytes) where bytes.isEmpty:
            // A NULL pointer would bind NULL; an empty blob must stay a blob.
            resultCode = sqlite3_bind_zeroblob(statement, index, 0)
        case .blob(let bytes):
            resultCode = bytes.withUnsafeBytes { buffer in
                sqlite3_bind_blob64(
                    statement, index, buffer.baseAddress, sqlite3_uint64(buffer.count),
                    tourbus_sqlite_transient())
            }
        }
        try check(resultCode, sqlite3_db_handle(statement), sql: sql)
    }

    /// Runs to the next result row: true if a row is available in `row`, false when done.
    public func step() throws(SQLiteError) -> Bool {
        let statement = try liveHandle()
        guard let shared else { return try Statement.result(of: sqlite3_step(statement), statement, sql: sql) }
        let file = shared.file
        file.gate.enter()
        defer { file.gate.leave() }
        let connection = sqlite3_db_handle(statement)!
        shared.mayBegin(connection)
        let wasWriting = sqlite3_txn_state(connection, nil) == SQLITE_TXN_WRITE
        // A statement that may begin a write transaction (BEGIN IMMEDIATE, a first write, one
        // in a transaction of its own) asks first: a replica that is not the leader refuses.
        let startsWriting = !wasWriting && sqlite3_stmt_readonly(statement) == 0
        if startsWriting {
            do { try file.mayWrite() } catch {
                shared.settle(connection)
                throw error
            }
        }
        let code = sqlite3_step(statement)
        // Once the write lock is taken (after any wait for it, which leaves the gate), what the
        // transaction saw is what had been applied: nothing is applied while the step holds the gate.
        if startsWriting && (sqlite3_txn_state(connection, nil) == SQLITE_TXN_WRITE || sqlite3_get_autocommit(connection) != 0) {
            shared.writeBegan = file.began()
        }
        let ended = sqlite3_get_autocommit(connection) != 0
        let began = shared.writeBegan
        if ended { shared.writeBegan = nil }
        // Settled before the commit waits for the replicas: this connection holds no transaction then.
        shared.settle(connection)
        let row = try Statement.result(of: code, statement, sql: sql)
        guard wasWriting || startsWriting, ended else { return row }
        if row {
            guard sqlite3_txn_state(connection, nil) == SQLITE_TXN_WRITE else { return row }
            // A write in a transaction of its own that returns rows would commit at its reset,
            // where no error can be reported: undone now, and refused.
            sqlite3_interrupt(connection)
            _ = sqlite3_step(statement)
            _ = sqlite3_reset(statement)
            shared.settle(connection)
            throw SQLiteError.misuse("on a replicated database, a statement that writes and returns rows runs inside a transaction", sql: sql)
        }
        guard let began else { return row }
        try file.committed(String(cString: sqlite3_db_filename(connection, "main")), began)
        return row
    }

    /// A step's result code as `step()` returns it, or its error.
    private static func result(of resultCode: Int32, _ statement: OpaquePointer, sql: String) throws(SQLiteError) -> Bool {
        switch resultCode {
        case SQLITE_ROW: return true
        case SQLITE_DONE: return false
        default: throw SQLiteError(resultCode: resultCode, connection: sqlite3_db_handle(statement), sql: sql)
        }
    }

    /// The number of result columns (0 for statements that return no data).
    public var columnCount: Int { Int(sqlite3_column_count(handle)) }

    /// The result column names, in order.
    public var columnNames: [String] { columns.names }

    /// The result columns, with their lookup by name, shared by the rows of a result. Built
    /// from `sqlite3_column_name` once, and kept for later executions as long as those names
    /// still match (checked without allocating), so a cached statement does not build its
    /// lookup again for every query.
    public var columns: ResultColumns {
        if let last = columnsOfLastResult, namesMatch(last.names) { return last }
        let names = (0..<Int32(columnCount)).map { column in
            sqlite3_column_name(handle, column).map { String(cString: $0) } ?? ""
        }
        let columns = ResultColumns(names: names, sql: sql)
        columnsOfLastResult = columns
        return columns
    }

    /// Whether the statement's result columns are named `names`, in order.
    private func namesMatch(_ names: [String]) -> Bool {
        guard names.count == columnCount else { return false }
        for (index, name) in names.enumerated() {
            guard let text = sqlite3_column_name(handle, Int32(index)) else { return false }
            let length = strlen(text)
            guard name.utf8.count == length else { return false }
            let same =
                name.utf8.withContiguousStorageIfAvailable { bytes in
                    guard let base = bytes.baseAddress else { return length == 0 }
                    return memcmp(base, text, length) == 0
                } ?? name.utf8.elementsEqual(UnsafeRawBufferPointer(start: text, count: length))
            guard same else { return false }
        }
        return true
    }

    /// The value in a column of the current row; valid only after `step()` returned true.
    public func value(_ column: Int) -> SQLValue {
        guard let handle, column >= 0, column < columnCount else { return .null }
        let index = Int32(column)
        switch sqlite3_column_type(handle, index) {
        case SQLITE_INTEGER:
            return .integer(sqlite3_column_int64(handle, index))
        case SQLITE_FLOAT:
            return .real(sqlite3_column_double(handle, index))
        case SQLITE_TEXT:
            let start = sqlite3_column_text(handle, index)  // Read before the length, as SQLite advises.
            let length = Int(sqlite3_column_bytes(handle, index))
            return .text(String(decoding: UnsafeBufferPointer(start: start, count: start == nil ? 0 : length), as: UTF8.self))
        case SQLITE_BLOB:
            let start = sqlite3_column_blob(handle, index)
            let length = Int(sqlite3_column_bytes(handle, index))
            return .blob([UInt8](UnsafeRawBufferPointer(start: start, count: start == nil ? 0 : length)))
        default:
            return .null
        }
    }

    /// A column of the current row as an integer (0 for NULL), without making a `Row`.
    public func int64(_ column: Int) -> Int64 { sqlite3_column_int64(handle, Int32(column)) }

    /// A column of the current row as a double (0 for NULL), without making a `Row`.
    public func double(_ column: Int) -> Double { sqlite3_column_double(handle, Int32(column)) }

    /// A column of the current row as UTF-8 bytes (empty for NULL), lent to `body` without a
    /// copy: the bytes are valid only inside it.
    public func withUTF8<Result>(_ column: Int, _ body: (UnsafeBufferPointer<UInt8>) throws -> Result) rethrows -> Result {
        let start = sqlite3_column_text(handle, Int32(column))  // Read before the length, as SQLite advises.
        let length = Int(sqlite3_column_bytes(handle, Int32(column)))
        return try body(UnsafeBufferPointer(start: start, count: start == nil ? 0 : length))
    }

    /// A BLOB column of the current row, copied (empty for NULL): a map image or tile, read
    /// without the copy a `Row` would make of it first.
    public func blob(_ column: Int) -> Data {
        guard let start = sqlite3_column_blob(handle, Int32(column)) else { return Data() }  // Before the length, as SQLite advises.
        return Data(bytes: start, count: Int(sqlite3_column_bytes(handle, Int32(column))))
    }

    /// A copy of the current row; valid only after `step()` returned true.
    public var row: Row {
        Row(columns: columns, values: (0..<columnCount).map(value))
    }
}
