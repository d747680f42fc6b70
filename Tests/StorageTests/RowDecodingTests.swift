import Foundation
import Storage
import Testing

/// Rows read by column name: a missing column, a NULL where a value is required, or a value of
/// another storage class is a `RowError` naming the column and the SQL, never a default.
@Suite struct RowDecodingTests {
    static let select = "SELECT i, d, whole, flag, s, bytes, absent, digits FROM t"

    func database() throws -> Database {
        let database = try Database(path: ":memory:")
        try database.execute("""
            CREATE TABLE t(i INTEGER, d REAL, whole REAL, flag INTEGER, s TEXT, bytes BLOB, absent TEXT, digits TEXT);
            INSERT INTO t VALUES (42, 2.5, 3, 1, 'ünï', x'0908', NULL, '42');
            """)
        return database
    }

    @Test func readsEachTypeByName() throws {
        let row = try #require(try database().queryOne(Self.select))
        #expect(try row.decode("i", as: Int64.self) == 42)
        #expect(try row.decode("i", as: Int.self) == 42)
        #expect(try row.decode("I", as: Int64.self) == 42)  // Names match ignoring case, as in SQL.
        #expect(try row.decode("d", as: Double.self) == 2.5)
        #expect(try row.decode("whole", as: Double.self) == 3)
        #expect(try row.decode("i", as: Double.self) == 42)  // An INTEGER widens to a Double.
        #expect(try row.decode("flag", as: Bool.self))
        #expect(try row.decode("s", as: String.self) == "ünï")
        #expect(try row.decode("bytes", as: [UInt8].self) == [9, 8])
        #expect(try row.decode("bytes", as: Data.self) == Data([9, 8]))
        #expect(try row.decode("absent", as: String?.self) == nil)
        #expect(try row.decode("s", as: String?.self) == "ünï")
        let inferred: Int64? = try row.decode("i")
        #expect(inferred == 42)
    }

    @Test func aMissingColumnIsNamedWithTheColumnsThereAre() throws {
        let row = try #require(try database().queryOne(Self.select))
        let error = try #require(throws: RowError.self) { try row.decode("price", as: Int64.self) }
        #expect(error.column == "price")
        #expect(error.problem == .missing(available: ["i", "d", "whole", "flag", "s", "bytes", "absent", "digits"]))
        #expect(error.sql == Self.select)
        #expect(error.description.contains("'price'") && error.description.contains(Self.select))
        // An optional reads NULL as nil, but a missing column is still an error.
        #expect(throws: RowError.self) { try row.decode("price", as: Int64?.self) }
    }

    @Test func aWrongTypeIsNamedAndNotCoerced() throws {
        let row = try #require(try database().queryOne(Self.select))
        let text = try #require(throws: RowError.self) { try row.decode("digits", as: Int64.self) }
        #expect(text.column == "digits")
        #expect(text.problem == .wrongType(expected: "INTEGER", found: "TEXT"))
        #expect(text.description.contains("'digits'") && text.description.contains("TEXT"))
        // Nor is a REAL cut to an integer, a number read as text, or text as a blob.
        let real = try #require(throws: RowError.self) { try row.decode("d", as: Int64.self) }
        #expect(real.problem == .wrongType(expected: "INTEGER", found: "REAL"))
        let number = try #require(throws: RowError.self) { try row.decode("i", as: String?.self) }
        #expect(number.problem == .wrongType(expected: "TEXT or NULL", found: "INTEGER"))
        #expect(throws: RowError.self) { try row.decode("s", as: [UInt8].self) }
        #expect(throws: RowError.self) { try row.decode("i", as: Bool.self) }  // 42 is no flag.
    }

    @Test func aNullInANonOptionalIsNamed() throws {
        let row = try #require(try database().queryOne(Self.select))
        let error = try #require(throws: RowError.self) { try row.decode("absent", as: String.self) }
        #expect(error.column == "absent")
        #expect(error.problem == .null(expected: "TEXT"))
        #expect(error.description.contains("'absent' is NULL"))
    }

    @Test func aNameTwiceIsAmbiguous() throws {
        let row = try #require(try database().queryOne("SELECT 1 AS a, 2 AS a, 3 AS b"))
        let error = try #require(throws: RowError.self) { try row.decode("a", as: Int64.self) }
        #expect(error.problem == .ambiguous)
        #expect(try row.decode("b", as: Int64.self) == 3)
    }

    @Test func namesComeFromSQLite() throws {
        let database = try database()
        // A qualified column is named by the column, an aliased one by its alias.
        let row = try #require(try database.queryOne("SELECT t.i, count(*) AS n FROM t"))
        #expect(row.columnNames == ["i", "n"])
        #expect(try row.decode("n", as: Int64.self) == 1)
    }

    @Test func rowsOfOneQueryShareTheirColumns() throws {
        let database = try Database(path: ":memory:")
        try database.execute("CREATE TABLE t(x INTEGER); INSERT INTO t VALUES (1), (2), (NULL);")
        let rows = try database.query("SELECT x FROM t ORDER BY rowid")
        #expect(rows[0].columns === rows[2].columns)
        #expect(try rows.decode("x", as: Int64?.self) == [1, 2, nil])
        let error = try #require(throws: RowError.self) { try rows.decode("x", as: Int64.self) }
        #expect(error.problem == .null(expected: "INTEGER"))
        #expect(try database.query("SELECT x FROM t WHERE 0").decode("x", as: Int64.self).isEmpty)
    }

    @Test func aCachedStatementKeepsItsColumnsUntilTheSchemaRenamesThem() throws {
        let database = try Database(path: ":memory:")
        try database.execute("CREATE TABLE t(x INTEGER); INSERT INTO t VALUES (1);")
        let first = try #require(try database.queryOne("SELECT * FROM t"))
        let again = try #require(try database.queryOne("SELECT * FROM t"))
        #expect(first.columns === again.columns)  // the lookup is built once, not per query
        // SQLite prepares the cached statement again for the new schema: the lookup follows.
        try database.execute("ALTER TABLE t ADD COLUMN y TEXT DEFAULT 'new'")
        let after = try #require(try database.queryOne("SELECT * FROM t"))
        #expect(after.columns !== first.columns)
        #expect(try after.decode("y", as: String.self) == "new")
        #expect(try after.decode("x", as: Int64.self) == 1)
    }

    @Test func aStatementReadsColumnsFoundOnceAndChecksEachRow() throws {
        let database = try database()
        try database.execute("INSERT INTO t (i, d, s) VALUES ('forty', NULL, x'07')")
        var seen: [String] = []
        var failures: [RowError] = []
        try database.forEachStep("SELECT i, d, s FROM t ORDER BY rowid") { statement in
            let i = try statement.column("i"), d = try statement.column("d"), s = try statement.column("s")
            do {
                let number = try statement.int64(i)
                let real = try statement.optionalDouble(d)
                try statement.requireText(s)
                seen.append("\(number) \(real ?? 0) \(try statement.double(d))")
            } catch let error as RowError {
                failures.append(error)
            }
        }
        #expect(seen == ["42 2.5 2.5"])
        #expect(failures.map(\.column) == ["i"])
        #expect(failures.first?.problem == .wrongType(expected: "INTEGER", found: "TEXT"))
        try database.forEachStep("SELECT d, s FROM t WHERE d IS NULL") { statement in
            #expect(try statement.optionalDouble(statement.column("d")) == nil)
            let null = try #require(throws: RowError.self) { try statement.double(statement.column("d")) }
            #expect(null.problem == .null(expected: "REAL"))
            let number = try #require(throws: RowError.self) { try statement.requireText(statement.column("s")) }
            #expect(number.problem == .wrongType(expected: "TEXT", found: "BLOB"))
            let missing = try #require(throws: RowError.self) { try statement.column("i") }
            #expect(missing.problem == .missing(available: ["d", "s"]))
            #expect(missing.sql == "SELECT d, s FROM t WHERE d IS NULL")
        }
    }
}
