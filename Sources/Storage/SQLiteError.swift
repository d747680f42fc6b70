import CSQLite

/// An error reported by SQLite, carrying its result codes, message and the SQL involved.
///
/// Catch by primary code: `catch let e as SQLiteError where e.code == .constraint`.
public struct SQLiteError: Error, Sendable, CustomStringConvertible {
    /// A primary SQLite result code (the low byte of any result code).
    public struct Code: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
        /// The numeric primary result code, e.g. 19 for SQLITE_CONSTRAINT.
        public let rawValue: Int32

        /// Wraps a numeric result code; extended codes are reduced to their primary code.
        public init(rawValue: Int32) { self.rawValue = rawValue & 0xff }

        /// SQLite's English name for the code, e.g. "constraint failed".
        public var description: String { String(cString: sqlite3_errstr(rawValue)) }

        /// Generic error, e.g. an SQL syntax error or a missing table.
        public static let error = Code(rawValue: SQLITE_ERROR)
        /// An internal SQLite logic error.
        public static let `internal` = Code(rawValue: SQLITE_INTERNAL)
        /// Access permission denied.
        public static let permission = Code(rawValue: SQLITE_PERM)
        /// An operation was aborted, e.g. by a callback.
        public static let abort = Code(rawValue: SQLITE_ABORT)
        /// The database file is locked by another connection.
        public static let busy = Code(rawValue: SQLITE_BUSY)
        /// A table is locked by this same connection.
        public static let locked = Code(rawValue: SQLITE_LOCKED)
        /// A memory allocation failed.
        public static let noMemory = Code(rawValue: SQLITE_NOMEM)
        /// An attempt to write to a read-only database.
        public static let readonly = Code(rawValue: SQLITE_READONLY)
        /// The operation was interrupted.
        public static let interrupt = Code(rawValue: SQLITE_INTERRUPT)
        /// A disk I/O error.
        public static let ioError = Code(rawValue: SQLITE_IOERR)
        /// The database file is malformed.
        public static let corrupt = Code(rawValue: SQLITE_CORRUPT)
        /// The database or disk is full.
        public static let full = Code(rawValue: SQLITE_FULL)
        /// The database file could not be opened.
        public static let cantOpen = Code(rawValue: SQLITE_CANTOPEN)
        /// The schema changed during the operation.
        public static let schema = Code(rawValue: SQLITE_SCHEMA)
        /// A string or blob exceeds the size limit.
        public static let tooBig = Code(rawValue: SQLITE_TOOBIG)
        /// A constraint (UNIQUE, PRIMARY KEY, FOREIGN KEY, NOT NULL, CHECK) failed.
        public static let constraint = Code(rawValue: SQLITE_CONSTRAINT)
        /// A datatype mismatch, e.g. a non-integer rowid.
        public static let mismatch = Code(rawValue: SQLITE_MISMATCH)
        /// The API was used incorrectly (by us or the caller).
        public static let misuse = Code(rawValue: SQLITE_MISUSE)
        /// Authorization denied.
        public static let authorization = Code(rawValue: SQLITE_AUTH)
        /// A parameter index out of range, or the wrong number of parameters.
        public static let range = Code(rawValue: SQLITE_RANGE)
        /// The file is not a database.
        public static let notADatabase = Code(rawValue: SQLITE_NOTADB)
    }

    /// The primary result code.
    public let code: Code
    /// The extended result code (equals the primary code when SQLite gave no detail).
    public let extendedCode: Int32
    /// SQLite's message (sqlite3_errmsg or sqlite3_errstr), or ours for API misuse.
    public let message: String
    /// The SQL being prepared or run, when there was one.
    public let sql: String?
    /// A write a replicated database did not take (this replica is not the leader, or the
    /// commit did not reach a majority): `message` says why, and names the leader when known.
    public let isNotReplicated: Bool

    /// Builds an error from its parts.
    public init(extendedCode: Int32, message: String, sql: String? = nil) {
        self.code = Code(rawValue: extendedCode)
        self.extendedCode = extendedCode
        self.message = message
        self.sql = sql
        isNotReplicated = false
    }

    private init(notReplicated message: String) {
        code = .busy
        extendedCode = SQLITE_BUSY
        self.message = message
        sql = nil
        isNotReplicated = true
    }

    /// A write a replicated database refused or could not commit (a busy error: try again,
    /// perhaps at the leader the message names).
    public static func notReplicated(_ message: String) -> SQLiteError { SQLiteError(notReplicated: message) }

    /// Builds an error from a failed return code, reading the message from the connection when there is one.
    init(resultCode: Int32, connection: OpaquePointer?, sql: String? = nil) {
        var extended = resultCode
        var message = String(cString: sqlite3_errstr(resultCode))
        if let connection {
            // The connection's last error is about this call only if its primary code matches.
            let connectionCode = sqlite3_extended_errcode(connection)
            if connectionCode & 0xff == resultCode & 0xff {
                extended = max(resultCode, connectionCode)
                message = String(cString: sqlite3_errmsg(connection))
            }
        }
        self.init(extendedCode: extended, message: message, sql: sql)
    }

    /// A misuse of this wrapper's API, reported like SQLite's own SQLITE_MISUSE.
    static func misuse(_ message: String, sql: String? = nil) -> SQLiteError {
        SQLiteError(extendedCode: SQLITE_MISUSE, message: message, sql: sql)
    }

    // Swift cannot import the extended-code macros (they are expressions), so they are spelled out as in sqlite3.h.
    private static let constraintForeignKey = SQLITE_CONSTRAINT | (3 << 8)
    private static let constraintPrimaryKey = SQLITE_CONSTRAINT | (6 << 8)
    private static let constraintUnique = SQLITE_CONSTRAINT | (8 << 8)

    /// True for a UNIQUE or PRIMARY KEY constraint violation.
    public var isUniqueViolation: Bool {
        extendedCode == Self.constraintUnique || extendedCode == Self.constraintPrimaryKey
    }

    /// True for a FOREIGN KEY constraint violation.
    public var isForeignKeyViolation: Bool { extendedCode == Self.constraintForeignKey }

    /// The codes, message and SQL on one line, for logs.
    public var description: String {
        var text = "SQLite error \(extendedCode) (\(code)): \(message)"
        if let sql { text += " [SQL: \(sql)]" }
        return text
    }
}

/// Throws a `SQLiteError` unless `resultCode` is SQLITE_OK.
@inline(__always)
func check(_ resultCode: Int32, _ connection: OpaquePointer?, sql: String? = nil) throws(SQLiteError) {
    guard resultCode == SQLITE_OK else {
        throw SQLiteError(resultCode: resultCode, connection: connection, sql: sql)
    }
}
