import Foundation
import Testing
@testable import Storage

@Suite struct MigrationTests {
    let shop = [
        Migration(domain: "shop", version: 2, sql: "ALTER TABLE item ADD COLUMN price INTEGER"),
        Migration(domain: "shop", version: 1, sql: "CREATE TABLE item(id INTEGER PRIMARY KEY, name TEXT)"),
    ]

    @Test func migrationsApplyOnceInVersionOrder() throws {
        try withTemporaryDatabasePath { path in
            let database = try Database(path: path)
            let applied = try database.migrate(shop)
            #expect(applied.map(\.version) == [1, 2])
            #expect(try database.migrate(shop).isEmpty)
            try database.run("INSERT INTO item(name, price) VALUES('tea', 3)")

            let records = try database.query("SELECT domain, version, applied_at FROM schema_migrations ORDER BY version")
            #expect(records.map { $0.string("domain") } == ["shop", "shop"])
            #expect(records.map { $0.int("version") } == [1, 2])
            #expect(records.allSatisfy { $0.string("applied_at")?.hasSuffix("Z") == true })

            let reopened = try Database(path: path)
            #expect(try reopened.migrate(shop).isEmpty)
        }
    }

    @Test func domainsAreIndependent() throws {
        let database = try Database(path: ":memory:")
        try database.migrate(shop)
        let other = [Migration(domain: "other", version: 1, sql: "CREATE TABLE note(text TEXT)")]
        #expect(try database.migrate(other) == other)
        #expect(try database.migrate(shop + other).isEmpty)
        #expect(try database.scalarInt("SELECT count(*) FROM schema_migrations WHERE domain = 'other'") == 1)
    }

    @Test func failingMigrationLeavesNoTraceAndThrows() throws {
        let database = try Database(path: ":memory:")
        let migrations = [
            Migration(domain: "bad", version: 1, sql: "CREATE TABLE good(x)"),
            Migration(domain: "bad", version: 2, sql: "CREATE TABLE partial(x); CREATE TABL broken(y);"),
            Migration(domain: "bad", version: 3, sql: "CREATE TABLE later(x)"),
        ]
        #expect {
            try database.migrate(migrations)
        } throws: { error in
            guard let error = error as? SQLiteError else { return false }
            return error.code == .error && error.message.contains("syntax error")
        }
        let tables = try database.query("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name")
            .compactMap { $0.string(0) }
        #expect(tables == ["good", "schema_migrations"])
        #expect(try database.query("SELECT version FROM schema_migrations WHERE domain = 'bad'").map { $0.int(0) } == [1])
        #expect(!database.isInTransaction)
    }

    @Test func invalidAndDuplicateVersionsAreRejectedBeforeAnythingRuns() throws {
        let database = try Database(path: ":memory:")
        #expect(throws: MigrationError.invalidVersion(domain: "d", version: 0)) {
            try database.migrate([Migration(domain: "d", version: 0, sql: "CREATE TABLE x(a)")])
        }
        #expect(throws: MigrationError.duplicateVersion(domain: "d", version: 1)) {
            try database.migrate([
                Migration(domain: "d", version: 1, sql: "CREATE TABLE x(a)"),
                Migration(domain: "d", version: 1, sql: "CREATE TABLE y(a)"),
            ])
        }
        #expect(try database.scalarInt("SELECT count(*) FROM sqlite_master WHERE name IN ('x', 'y')") == 0)
        // The same version in different domains is fine.
        try database.migrate([
            Migration(domain: "d", version: 1, sql: "CREATE TABLE x(a)"),
            Migration(domain: "e", version: 1, sql: "CREATE TABLE y(a)"),
        ])
    }
}
