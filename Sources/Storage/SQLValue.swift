import Foundation

/// One SQLite value in any of its five storage classes.
public enum SQLValue: Sendable, Hashable {
    case null
    case integer(Int64)
    case real(Double)
    case text(String)
    case blob([UInt8])

    /// The value as an integer: integers, and reals that hold a whole number exactly.
    public var integerValue: Int64? {
        switch self {
        case .integer(let value): value
        case .real(let value): Int64(exactly: value)
        default: nil
        }
    }

    /// The value as a double: reals, and integers widened.
    public var realValue: Double? {
        switch self {
        case .real(let value): value
        case .integer(let value): Double(value)
        default: nil
        }
    }

    /// The value as text, only if it is stored as text.
    public var textValue: String? {
        if case .text(let value) = self { value } else { nil }
    }

    /// The value as bytes, only if it is stored as a blob.
    public var blobValue: [UInt8]? {
        if case .blob(let value) = self { value } else { nil }
    }
}

/// A Swift value that can be bound to a statement parameter.
public protocol SQLBindable {
    /// The value as SQLite will store it.
    var sqlValue: SQLValue { get }
}

extension SQLValue: SQLBindable {
    public var sqlValue: SQLValue { self }
}

extension Int: SQLBindable {
    public var sqlValue: SQLValue { .integer(Int64(self)) }
}

extension Int64: SQLBindable {
    public var sqlValue: SQLValue { .integer(self) }
}

extension Int32: SQLBindable {
    public var sqlValue: SQLValue { .integer(Int64(self)) }
}

extension Double: SQLBindable {
    public var sqlValue: SQLValue { .real(self) }
}

/// Stored as the integer 0 or 1, SQLite's own convention.
extension Bool: SQLBindable {
    public var sqlValue: SQLValue { .integer(self ? 1 : 0) }
}

extension String: SQLBindable {
    public var sqlValue: SQLValue { .text(self) }
}

extension Array: SQLBindable where Element == UInt8 {
    public var sqlValue: SQLValue { .blob(self) }
}

extension Data: SQLBindable {
    public var sqlValue: SQLValue { .blob([UInt8](self)) }
}

/// `nil` binds as NULL.
extension Optional: SQLBindable where Wrapped: SQLBindable {
    public var sqlValue: SQLValue { self?.sqlValue ?? .null }
}

/// A copy of one result row: column names and values, detached from the statement.
///
/// Read it by name with `decode(_:as:)`, which throws a `RowError` naming the column for a
/// missing column, a NULL where a value is required, or a value of another storage class.
/// The older accessors (`int`, `string`, …) are lenient: they return nil (or `.null`) for a
/// missing column or a value of another storage class.
public struct Row: Sendable, Hashable {
    /// The result columns (names and their lookup), shared by the rows of one execution.
    public let columns: ResultColumns
    /// The values, in column order.
    public let values: [SQLValue]

    /// The result column names, in order.
    public var columnNames: [String] { columns.names }

    /// Pairs names with values; both arrays must have the same length.
    public init(columnNames: [String], values: [SQLValue]) {
        self.init(columns: ResultColumns(names: columnNames), values: values)
    }

    /// Pairs a statement's columns with one row's values, in the same order.
    public init(columns: ResultColumns, values: [SQLValue]) {
        self.columns = columns
        self.values = values
    }

    /// Rows are equal when their column names and values are.
    public static func == (lhs: Row, rhs: Row) -> Bool {
        lhs.columnNames == rhs.columnNames && lhs.values == rhs.values
    }

    public func hash(into hasher: inout Hasher) {
        hasher.combine(columnNames)
        hasher.combine(values)
    }

    /// The number of columns.
    public var count: Int { values.count }

    /// The index of a column by name; exact match first, then case-insensitive as SQLite does.
    public func index(of name: String) -> Int? {
        columnNames.firstIndex(of: name)
            ?? columnNames.firstIndex { $0.caseInsensitiveCompare(name) == .orderedSame }
    }

    /// The value at a column index, `.null` if out of range.
    public func value(_ index: Int) -> SQLValue {
        values.indices.contains(index) ? values[index] : .null
    }

    /// The value of a named column, `.null` if there is no such column.
    public func value(_ name: String) -> SQLValue {
        index(of: name).map(value) ?? .null
    }

    // Lenient reads (nil for a missing column, NULL or another type) for Storage's own
    // metadata queries and its tests; every other module reads with `decode`, which names
    // the column when it is missing or holds the wrong type.

    /// True if the column holds NULL (or does not exist).
    func isNull(_ index: Int) -> Bool { value(index) == .null }
    /// True if the named column holds NULL (or does not exist).
    func isNull(_ name: String) -> Bool { value(name) == .null }

    /// The integer at a column index (a real holding a whole number also converts).
    func int(_ index: Int) -> Int64? { value(index).integerValue }
    /// The integer in a named column.
    func int(_ name: String) -> Int64? { value(name).integerValue }

    /// The floating-point value at a column index (integers widen).
    func double(_ index: Int) -> Double? { value(index).realValue }
    /// The floating-point value in a named column.
    func double(_ name: String) -> Double? { value(name).realValue }

    /// The text at a column index.
    func string(_ index: Int) -> String? { value(index).textValue }
    /// The text in a named column.
    func string(_ name: String) -> String? { value(name).textValue }

    /// The bytes at a column index.
    func blob(_ index: Int) -> [UInt8]? { value(index).blobValue }
    /// The bytes in a named column.
    func blob(_ name: String) -> [UInt8]? { value(name).blobValue }

    /// The bytes at a column index as `Data`.
    func data(_ index: Int) -> Data? { blob(index).map { Data($0) } }
    /// The bytes in a named column as `Data`.
    func data(_ name: String) -> Data? { blob(name).map { Data($0) } }

    /// The integer at a column index read as a flag: nonzero is true.
    public func bool(_ index: Int) -> Bool? { int(index).map { $0 != 0 } }
    /// The integer in a named column read as a flag: nonzero is true.
    public func bool(_ name: String) -> Bool? { int(name).map { $0 != 0 } }
}
