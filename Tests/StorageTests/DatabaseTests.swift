import Foundation
import Testing
@testable import Storage

@Suite struct DatabaseTests {
    @Test func fileDatabaseOpensInWALModeWithForeignKeys() throws {
        try withTemporaryDatabasePath { path in
            let database = try Database(path: path)
            #expect(database.path == path)
            #expect(FileManager.default.fileExists(atPath: path))
            #expect(try database.queryOne("PRAGMA journal_mode")?.string(0) == "wal")
            #expect(try database.scalarInt("PRAGMA foreign_keys") == 1)
            #expect(try database.scalarInt("PRAGMA synchronous") == 1)  // NORMAL
        }
    }

    @Test func memoryDatabaseHasForeignKeysButNoWAL() throws {
        let database = try Database(path: ":memory:")
        #expect(try database.queryOne("PRAGMA journal_mode")?.string(0) == "memory")
        #expect(try database.scalarInt("PRAGMA foreign_keys") == 1)
    }

    @Test func readOnlyOpenOfMissingFileFailsWithCantOpen() throws {
        try withTemporaryDatabasePath { path in
            #expect {
                _ = try Database(path: path, readOnly: true)
            } throws: { ($0 as? SQLiteError)?.code == .cantOpen }
            #expect(!FileManager.default.fileExists(atPath: path))
        }
    }

    @Test func readOnlyConnectionRejectsWrites() throws {
        try withTemporaryDatabasePath { path in
            let writer = try Database(path: path)
            try writer.execute("CREATE TABLE t(x)")
            let reader = try Database(path: path, readOnly: true)
            #expect(try reader.scalarInt("SELECT count(*) FROM t") == 0)
            #expect {
                try reader.run("INSERT INTO t VALUES(1)")
            } throws: { ($0 as? SQLiteError)?.code == .readonly }
        }
    }

    @Test func everyValueKindRoundTrips() throws {
        let database = try Database(path: ":memory:")
        try database.execute("CREATE TABLE t(id INTEGER PRIMARY KEY, v)")  // No affinity: values keep their class.
        let largeBlob = (0..<(1 << 20)).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ 7) }
        let values: [SQLValue] = [
            .null, .integer(0), .integer(.min), .integer(.max), .real(3.25), .real(-0.5),
            .text(""), .text("héllo wörld 🌍 日本語"), .text("nul\u{0}inside"),
            .blob([]), .blob([0, 1, 255]), .blob(largeBlob),
        ]
        for value in values {
            try database.run("INSERT INTO t(v) VALUES(?)", value)
            let row = try #require(try database.queryOne("SELECT v FROM t WHERE id = ?", database.lastInsertRowID))
            #expect(row.value(0) == value)
            #expect(row.isNull(0) == (value == .null))
        }
        #expect(try database.scalarInt("SELECT count(*) FROM t WHERE typeof(v) = 'blob' AND length(v) = 0") == 1)
        #expect(try database.query("SELECT v FROM t ORDER BY id").map { $0.value(0) } == values)
    }

    @Test func swiftTypesBindAndReadBack() throws {
        let database = try Database(path: ":memory:")
        try database.execute("CREATE TABLE t(i INTEGER, i32 INTEGER, i64 INTEGER, d REAL, b INTEGER, s TEXT, bytes BLOB, data BLOB, missing TEXT)")
        let noText: String? = nil
        try database.run("INSERT INTO t VALUES(?, ?, ?, ?, ?, ?, ?, ?, ?)",
                         42, Int32(-7), Int64(1) << 40, 2.5, true, "ünï", [UInt8]([9, 8]), Data([1, 2, 3]), noText)
        #expect(database.changes == 1)
        let row = try #require(try database.queryOne("SELECT * FROM t"))
        #expect(row.count == 9)
        #expect(row.int("i") == 42)
        #expect(row.int("I32") == -7)  // Names match case-insensitively, as in SQL.
        #expect(row.int("i64") == 1 << 40)
        #expect(row.double("d") == 2.5)
        #expect(row.double("i") == 42)
        #expect(row.bool("b") == true)
        #expect(row.string("s") == "ünï")
        #expect(row.blob("bytes") == [9, 8])
        #expect(row.data("data") == Data([1, 2, 3]))
        #expect(row.isNull("missing"))
        #expect(row.string("s") != nil && row.int("s") == nil)
        #expect(row.value("no_such_column") == .null)
        #expect(row.value(99) == .null)
    }

    @Test func argumentsCanBePassedAsAnArray() throws {
        let database = try Database(path: ":memory:")
        try database.execute("CREATE TABLE t(a, b)")
        let args: [(any SQLBindable)?] = [1, "x"]
        try database.run("INSERT INTO t VALUES(?, ?)", args)
        try database.run("INSERT INTO t VALUES(?, ?)", [2, nil])
        #expect(try database.query("SELECT a, b FROM t WHERE a = ?", [2]).first?.isNull(1) == true)
        #expect(try database.queryOne("SELECT b FROM t WHERE a = ?", [1])?.string(0) == "x")
        #expect(try database.scalarInt("SELECT count(*) FROM t WHERE a IN (?, ?)", [1, 2]) == 2)
        var seen: [Int64] = []
        try database.forEachRow("SELECT a FROM t ORDER BY a") { seen.append($0.int(0) ?? -1) }
        #expect(seen == [1, 2])
    }

    @Test func statementCacheReturnsTheSameStatementForTheSameSQL() throws {
        let database = try Database(path: ":memory:")
        let first = try database.statement("SELECT 1")
        let second = try database.statement("SELECT 1")
        let other = try database.statement("SELECT 2")
        #expect(first === second)
        #expect(first !== other)
        try first.bind([])
        #expect(try first.step())
        #expect(first.row.int(0) == 1)
        #expect(try !first.step())
    }

    @Test func nestedQueriesWithTheSameSQLDoNotDisturbEachOther() throws {
        let database = try Database(path: ":memory:")
        try database.execute("CREATE TABLE t(x INTEGER); INSERT INTO t VALUES(1), (2), (3);")
        var pairs: [[Int64]] = []
        let sql = "SELECT x FROM t WHERE x >= ? ORDER BY x"
        try database.forEachRow(sql, [1]) { outer in
            guard pairs.count < 10 else { throw Boom() }  // A disturbed outer query would restart forever.
            let inner = try database.query(sql, outer.int(0)).compactMap { $0.int(0) }
            pairs.append(inner)
        }
        #expect(pairs == [[1, 2, 3], [2, 3], [3]])
    }

    @Test func wrongParameterCountThrowsRange() throws {
        let database = try Database(path: ":memory:")
        #expect {
            _ = try database.query("SELECT ?, ?", 1)
        } throws: { ($0 as? SQLiteError)?.code == .range }
    }

    @Test func statementRejectsSeveralStatements() throws {
        let database = try Database(path: ":memory:")
        #expect {
            _ = try database.statement("SELECT 1; SELECT 2")
        } throws: { ($0 as? SQLiteError)?.code == .misuse }
        _ = try database.statement("SELECT 1;  \n")
    }

    @Test func statementOutlivingItsDatabaseThrowsInsteadOfCrashing() throws {
        var database: Database? = try Database(path: ":memory:")
        let statement = try #require(try database?.statement("SELECT 1"))
        database = nil
        #expect {
            _ = try statement.step()
        } throws: { ($0 as? SQLiteError)?.code == .misuse }
    }

    @Test func executeRunsScriptsAndReportsErrors() throws {
        let database = try Database(path: ":memory:")
        try database.execute("CREATE TABLE a(x); CREATE TABLE b(y); INSERT INTO a VALUES(1);")
        #expect(try database.scalarInt("SELECT count(*) FROM a") == 1)
        #expect {
            try database.execute("INSERT INTO nowhere VALUES(1)")
        } throws: { error in
            guard let error = error as? SQLiteError else { return false }
            return error.code == .error && error.message.contains("no such table")
                && error.sql == "INSERT INTO nowhere VALUES(1)"
        }
    }

    /// Runs `body` and returns the SQLite error it throws if its primary code is `code`.
    ///
    /// The body is untyped `throws`, like most caller code, so the `as` pattern below is a real test.
    func sqliteError(_ code: SQLiteError.Code, from body: () throws -> Void) -> SQLiteError? {
        do {
            try body()
        } catch let error as SQLiteError where error.code == code {
            return error
        } catch {
            Issue.record("unexpected error \(error)")
        }
        return nil
    }

    @Test func typedErrorCodesAreCatchable() throws {
        let database = try Database(path: ":memory:")
        try database.execute("""
            CREATE TABLE parent(id INTEGER PRIMARY KEY, name TEXT UNIQUE);
            CREATE TABLE child(id INTEGER PRIMARY KEY, parent_id INTEGER NOT NULL REFERENCES parent(id));
            """)
        try database.run("INSERT INTO parent(id, name) VALUES(1, 'a')")

        let uniqueError = sqliteError(.constraint) { try database.run("INSERT INTO parent(id, name) VALUES(2, 'a')") }
        #expect(uniqueError?.isUniqueViolation == true)
        #expect(uniqueError?.message.contains("UNIQUE") == true)

        let primaryKeyError = sqliteError(.constraint) { try database.run("INSERT INTO parent(id, name) VALUES(1, 'b')") }
        #expect(primaryKeyError?.isUniqueViolation == true)

        let syntaxError = sqliteError(.error) { _ = try database.query("SELEC 1") }
        #expect(syntaxError?.message.contains("syntax error") == true)
        #expect(syntaxError?.message.contains("SELEC") == true)
        #expect(syntaxError?.sql == "SELEC 1")

        let foreignKeyError = sqliteError(.constraint) { try database.run("INSERT INTO child(parent_id) VALUES(99)") }
        #expect(foreignKeyError?.isForeignKeyViolation == true)
        #expect(foreignKeyError?.isUniqueViolation == false)
        #expect(foreignKeyError?.description.contains("FOREIGN KEY") == true)
    }

    @Test func transactionCommitsAndReturnsTheBodyResult() throws {
        let database = try Database(path: ":memory:")
        try database.execute("CREATE TABLE t(x)")
        let result = try database.transaction {
            #expect(database.isInTransaction)
            try database.run("INSERT INTO t VALUES(1)")
            return "done"
        }
        #expect(result == "done")
        #expect(!database.isInTransaction)
        #expect(try database.scalarInt("SELECT count(*) FROM t") == 1)
    }

    struct Boom: Error, Equatable {}

    @Test(arguments: [TransactionKind.deferred, .immediate, .exclusive])
    func throwingTransactionLeavesNoTrace(kind: TransactionKind) throws {
        try withTemporaryDatabasePath { path in
            let database = try Database(path: path)
            try database.execute("CREATE TABLE t(x)")
            #expect(throws: Boom()) {
                try database.transaction(kind) {
                    try database.run("INSERT INTO t VALUES(1)")
                    try database.execute("CREATE TABLE u(y)")
                    throw Boom()
                }
            }
            #expect(!database.isInTransaction)
            #expect(try database.scalarInt("SELECT count(*) FROM t") == 0)
            #expect(try database.scalarInt("SELECT count(*) FROM sqlite_master WHERE name = 'u'") == 0)
        }
    }

    @Test func innerFailureCaughtByOuterUndoesOnlyInnerWork() throws {
        let database = try Database(path: ":memory:")
        try database.execute("CREATE TABLE t(x)")
        try database.transaction {
            try database.run("INSERT INTO t VALUES('outer before')")
            do {
                try database.transaction {
                    try database.run("INSERT INTO t VALUES('inner')")
                    try database.transaction { try database.run("INSERT INTO t VALUES('innermost')") }
                    throw Boom()
                }
                Issue.record("inner transaction should have thrown")
            } catch is Boom {}
            try database.transaction { try database.run("INSERT INTO t VALUES('sibling')") }
            try database.run("INSERT INTO t VALUES('outer after')")
        }
        let values = try database.query("SELECT x FROM t ORDER BY rowid").compactMap { $0.string(0) }
        #expect(values == ["outer before", "sibling", "outer after"])
    }

    /// SQLite may roll a transaction back on its own (after SQLITE_FULL, an I/O error): a
    /// savepoint opened after that would be a transaction of its own, committed on release.
    /// So an inner call throws instead of running, and nothing of it is written.
    @Test func anInnerCallAfterSQLiteRolledBackTheOuterOneWritesNothing() throws {
        let database = try Database(path: ":memory:")
        try database.execute("CREATE TABLE t(x)")
        var innerRan = false
        let error = sqliteError(.abort) {
            try database.transaction {
                try database.run("INSERT INTO t VALUES(1)")
                try database.execute("ROLLBACK")  // as SQLite does by itself after some errors
                _ = sqliteError(.abort) {
                    try database.transaction {
                        innerRan = true
                        try database.run("INSERT INTO t VALUES(2)")
                    }
                }
                try database.transaction { try database.run("INSERT INTO t VALUES(3)") }
            }
        }
        #expect(error != nil)
        #expect(!innerRan)
        #expect(try database.scalarInt("SELECT count(*) FROM t") == 0)
        #expect(!database.isInTransaction)
    }

    @Test func innerFailureNotCaughtUndoesEverything() throws {
        let database = try Database(path: ":memory:")
        try database.execute("CREATE TABLE t(x)")
        #expect(throws: Boom()) {
            try database.transaction {
                try database.run("INSERT INTO t VALUES(1)")
                try database.transaction {
                    try database.run("INSERT INTO t VALUES(2)")
                    throw Boom()
                }
            }
        }
        #expect(try database.scalarInt("SELECT count(*) FROM t") == 0)
        #expect(!database.isInTransaction)
    }

    @Test func readerOnSameWALFileSeesOnlyCommittedRows() throws {
        try withTemporaryDatabasePath { path in
            let writer = try Database(path: path)
            try writer.execute("CREATE TABLE t(x)")
            let reader = try Database(path: path)
            try writer.transaction {
                try writer.run("INSERT INTO t VALUES(1)")
                #expect(try writer.scalarInt("SELECT count(*) FROM t") == 1)
                #expect(try reader.scalarInt("SELECT count(*) FROM t") == 0)
            }
            #expect(try reader.scalarInt("SELECT count(*) FROM t") == 1)
        }
    }
}
