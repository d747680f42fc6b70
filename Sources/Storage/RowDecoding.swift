import CSQLite
import Foundation

/// A row that could not be read as asked: a column missing (or named twice), NULL where a
/// value is required, or holding another storage class than the type takes.
///
/// Not a `SQLiteError` on purpose: it is a bug in our SQL or schema, not a database condition,
/// so a service logs it (naming the column and the SQL) and answers `internal`.
public struct RowError: Error, Sendable, Equatable, CustomStringConvertible {
    /// What was wrong with the column.
    public enum Problem: Sendable, Equatable {
        /// No result column has this name; `available` lists the ones there are.
        case missing(available: [String])
        /// Two result columns have this name, so it does not say which is meant.
        case ambiguous
        /// The column holds NULL, but the type read (`expected`) does not allow it.
        case null(expected: String)
        /// The column holds a value of storage class `found`, not one of `expected`.
        case wrongType(expected: String, found: String)
    }

    /// The column name as asked for.
    public let column: String
    /// What was wrong.
    public let problem: Problem
    /// The SQL of the statement the row came from, when known.
    public let sql: String?

    /// Builds an error from its parts.
    public init(column: String, problem: Problem, sql: String?) {
        self.column = column
        self.problem = problem
        self.sql = sql
    }

    /// The column, the problem and the SQL on one line, for logs.
    public var description: String {
        var text: String
        switch problem {
        case .missing(let available):
            text = "row has no column '\(column)' (columns: \(available.joined(separator: ", ")))"
        case .ambiguous:
            text = "row has more than one column named '\(column)'"
        case .null(let expected):
            text = "column '\(column)' is NULL, expected \(expected)"
        case .wrongType(let expected, let found):
            text = "column '\(column)' holds \(found), expected \(expected)"
        }
        if let sql { text += " [SQL: \(sql)]" }
        return text
    }
}

/// The result columns of one execution of a statement: their names in order, and a lookup
/// from name to position built once, so rows are read by name without a search per row.
///
/// Names match exactly first, then ignoring case, as SQL does. Shared by every `Row`
/// of the execution.
public final class ResultColumns: Sendable {
    /// The names, in column order (as `sqlite3_column_name` gives them: the `AS` name, else
    /// the column's own name for a plain column, else the expression's text).
    public let names: [String]
    /// The SQL the columns come from, named in errors.
    public let sql: String?
    /// Name → position; a name that appears twice maps to nil (ambiguous).
    private let exact: [String: Int?]
    /// Lowercased name → position, likewise.
    private let folded: [String: Int?]

    /// Indexes `names`; `sql` is quoted by errors.
    public init(names: [String], sql: String? = nil) {
        self.names = names
        self.sql = sql
        var exact: [String: Int?] = [:]
        var folded: [String: Int?] = [:]
        for (index, name) in names.enumerated() {
            exact[name] = exact[name] == nil ? index : .some(nil)
            let lower = name.lowercased()
            folded[lower] = folded[lower] == nil ? index : .some(nil)
        }
        self.exact = exact
        self.folded = folded
    }

    /// The column called `name`, or a `RowError` saying it is missing or ambiguous.
    public func column(_ name: String) throws(RowError) -> Column {
        let found = exact[name] ?? folded[name.lowercased()]
        switch found {
        case .some(.some(let index)): return Column(index: index)
        case .some(.none): throw RowError(column: name, problem: .ambiguous, sql: sql)
        case .none: throw RowError(column: name, problem: .missing(available: names), sql: sql)
        }
    }

    /// The error for the value `found` in column `index` where `expected` was needed.
    @usableFromInline
    func mismatch(at index: Int, _ found: SQLValue, expected: String) -> RowError {
        guard names.indices.contains(index) else { return RowError(column: "#\(index)", problem: .missing(available: names), sql: sql) }
        return RowError(
            column: names[index],
            problem: found == .null
                ? .null(expected: expected)
                : .wrongType(expected: expected, found: found.storageClassName), sql: sql)
    }
}

/// A result column found by name once (`ResultColumns.column(_:)`, `Statement.column(_:)`),
/// for reading many rows by position with `Statement.int64(_:)` and friends or
/// `Row.decode(_:as:)`. Only a position, so it costs nothing to copy; errors take the
/// column's name from the result it is read from.
public struct Column: Sendable, Hashable {
    /// The 0-based position in the result.
    public let index: Int
}

extension SQLValue {
    /// SQLite's name of the storage class: INTEGER, REAL, TEXT, BLOB or NULL.
    public var storageClassName: String {
        switch self {
        case .null: "NULL"
        case .integer: "INTEGER"
        case .real: "REAL"
        case .text: "TEXT"
        case .blob: "BLOB"
        }
    }
}

/// A Swift type a column can be read as, strictly: only the storage classes that hold it
/// without loss are taken (no TEXT read as a number, no REAL cut to an integer).
///
/// An `Optional` of such a type also reads NULL, as nil.
public protocol SQLColumnDecodable {
    /// The value as this type, or nil if its storage class is not one this type takes.
    static func fromColumn(_ value: SQLValue) -> Self?
    /// What this type takes, for errors, e.g. "INTEGER".
    static var columnExpectation: String { get }
}

extension Int64: SQLColumnDecodable {
    @inlinable public static func fromColumn(_ value: SQLValue) -> Int64? {
        if case .integer(let number) = value { number } else { nil }
    }
    @inlinable public static var columnExpectation: String { "INTEGER" }
}

extension Int: SQLColumnDecodable {
    @inlinable public static func fromColumn(_ value: SQLValue) -> Int? {
        if case .integer(let number) = value { Int(exactly: number) } else { nil }
    }
    @inlinable public static var columnExpectation: String { "INTEGER" }
}

/// REAL, or INTEGER widened, as SQLite itself reads a REAL column holding a whole number.
extension Double: SQLColumnDecodable {
    @inlinable public static func fromColumn(_ value: SQLValue) -> Double? {
        switch value {
        case .real(let number): number
        case .integer(let number): Double(number)
        default: nil
        }
    }
    @inlinable public static var columnExpectation: String { "REAL" }
}

/// INTEGER 0 or 1, SQLite's own convention.
extension Bool: SQLColumnDecodable {
    @inlinable public static func fromColumn(_ value: SQLValue) -> Bool? {
        switch value {
        case .integer(0): false
        case .integer(1): true
        default: nil
        }
    }
    @inlinable public static var columnExpectation: String { "INTEGER 0 or 1" }
}

extension String: SQLColumnDecodable {
    @inlinable public static func fromColumn(_ value: SQLValue) -> String? { value.textValue }
    @inlinable public static var columnExpectation: String { "TEXT" }
}

extension Array: SQLColumnDecodable where Element == UInt8 {
    @inlinable public static func fromColumn(_ value: SQLValue) -> [UInt8]? { value.blobValue }
    @inlinable public static var columnExpectation: String { "BLOB" }
}

extension Data: SQLColumnDecodable {
    @inlinable public static func fromColumn(_ value: SQLValue) -> Data? { value.blobValue.map { Data($0) } }
    @inlinable public static var columnExpectation: String { "BLOB" }
}

/// NULL reads as nil; anything else as `Wrapped` would read it.
extension Optional: SQLColumnDecodable where Wrapped: SQLColumnDecodable {
    @inlinable public static func fromColumn(_ value: SQLValue) -> Wrapped?? {
        value == .null ? .some(nil) : Wrapped.fromColumn(value).map { .some($0) }
    }
    @inlinable public static var columnExpectation: String { Wrapped.columnExpectation + " or NULL" }
}

extension Row {
    /// The named column as `type`, strictly: throws a `RowError` naming the column (and the
    /// SQL) if there is no such column, if it is NULL and `type` is not optional, or if it
    /// holds another storage class. Read a nullable column as an optional: `as: String?.self`.
    @inlinable
    public func decode<T: SQLColumnDecodable>(_ name: String, as type: T.Type = T.self) throws(RowError) -> T {
        try decode(columns.column(name), as: type)
    }

    /// A column found once with `columns.column(_:)`, as `type`, strictly (see `decode(_:as:)`).
    @inlinable
    public func decode<T: SQLColumnDecodable>(_ column: Column, as type: T.Type = T.self) throws(RowError) -> T {
        let value = self.value(column.index)
        guard let decoded = T.fromColumn(value) else { throw columns.mismatch(at: column.index, value, expected: T.columnExpectation) }
        return decoded
    }
}

extension Statement {
    /// The current result's column called `name`, found once, for reading rows in a loop.
    public func column(_ name: String) throws(RowError) -> Column {
        try columns.column(name)
    }

    /// An INTEGER column of the current row, without making a `Row`; throws if it holds anything else.
    public func int64(_ column: Column) throws(RowError) -> Int64 {
        let handle = handle
        let index = Int32(column.index)
        guard sqlite3_column_type(handle, index) == SQLITE_INTEGER else { throw mismatch(column, expected: "INTEGER") }
        return sqlite3_column_int64(handle, index)
    }

    /// A REAL (or INTEGER) column of the current row, without making a `Row`; throws on NULL or anything else.
    public func double(_ column: Column) throws(RowError) -> Double {
        let handle = handle
        let index = Int32(column.index)
        let type = sqlite3_column_type(handle, index)
        guard type == SQLITE_FLOAT || type == SQLITE_INTEGER else { throw mismatch(column, expected: "REAL") }
        return sqlite3_column_double(handle, index)
    }

    /// A nullable REAL (or INTEGER) column of the current row: nil for NULL; throws on anything else.
    public func optionalDouble(_ column: Column) throws(RowError) -> Double? {
        let handle = handle
        let index = Int32(column.index)
        switch sqlite3_column_type(handle, index) {
        case SQLITE_NULL: return nil
        case SQLITE_FLOAT, SQLITE_INTEGER: return sqlite3_column_double(handle, index)
        default: throw mismatch(column, expected: "REAL or NULL")
        }
    }

    /// A column of the current row as `type`, strictly (see `Row.decode(_:as:)`).
    @inlinable
    public func decode<T: SQLColumnDecodable>(_ column: Column, as type: T.Type = T.self) throws(RowError) -> T {
        let value = value(column.index)
        guard let decoded = T.fromColumn(value) else { throw columns.mismatch(at: column.index, value, expected: T.columnExpectation) }
        return decoded
    }

    /// The error for the current row's value in `column` where `expected` was needed.
    private func mismatch(_ column: Column, expected: String) -> RowError {
        columns.mismatch(at: column.index, value(column.index), expected: expected)
    }

    /// Throws unless the column holds TEXT in the current row, so that `withUTF8` can then lend it unchecked.
    public func requireText(_ column: Column) throws(RowError) {
        guard sqlite3_column_type(handle, Int32(column.index)) == SQLITE_TEXT else { throw mismatch(column, expected: "TEXT") }
    }
}

extension Array where Element == Row {
    /// The named column of each row as `type`, strictly (see `Row.decode(_:as:)`); the name is
    /// looked up once for rows that share their columns, as the rows of one query do.
    @inlinable
    public func decode<T: SQLColumnDecodable>(_ name: String, as type: T.Type = T.self) throws(RowError) -> [T] {
        guard let first else { return [] }
        let column = try first.columns.column(name)
        return try map { row throws(RowError) in
            try row.columns === first.columns ? row.decode(column, as: type) : row.decode(name, as: type)
        }
    }
}
