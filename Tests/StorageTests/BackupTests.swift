import Foundation
import Storage
import Testing

/// `DatabaseBackup` on real files: a backup is the database as of one commit and never
/// overwrites anything; a restore refuses a database in use and gives the outbox a new epoch.
@Suite struct BackupTests {
    /// A database with the outbox and an `items` table, each item written with its event.
    func openItems(_ path: String) throws -> Database {
        let db = try Database(path: path)
        try db.migrate(OutboxSchema.migrations + [Migration(domain: "items", version: 1, sql: "CREATE TABLE items (name TEXT PRIMARY KEY)")])
        return db
    }

    func put(_ db: Database, _ names: [String]) throws {
        for name in names {
            try db.transaction {
                try db.run("INSERT INTO items (name) VALUES (?)", name)
                try Outbox(database: db).append(type: "item.put", body: Data(name.utf8))
            }
        }
    }

    func names(_ path: String) throws -> [String] {
        try Database(path: path, readOnly: true).query("SELECT name FROM items ORDER BY name").map { try $0.decode("name") as String }
    }

    @Test func aBackupHoldsWhatWasCommittedBeforeItAndNothingAfter() throws {
        try withTemporaryDirectory { folder in
            let db = try openItems(folder.appendingPathComponent("live.sqlite").path)
            try put(db, ["a", "b"])
            let copy = folder.appendingPathComponent("copy.sqlite").path
            let bytes = try DatabaseBackup.write(from: db, to: copy)
            try put(db, ["c"])
            #expect(try bytes > 0 && bytes == (FileManager.default.attributesOfItem(atPath: copy)[.size] as? NSNumber)?.int64Value)
            #expect(try names(copy) == ["a", "b"])
            #expect(try Outbox(database: Database(path: copy, readOnly: true)).head() == 2)
            #expect(!FileManager.default.fileExists(atPath: copy + ".partial"))
        }
    }

    @Test func aBackupRefusesPathsItDoesNotTakeAndNeverOverwrites() throws {
        try withTemporaryDirectory { folder in
            let db = try openItems(folder.appendingPathComponent("live.sqlite").path)
            let existing = folder.appendingPathComponent("existing.sqlite").path
            try Data("keep me".utf8).write(to: URL(fileURLWithPath: existing))
            func refusal(_ path: String) -> BackupError? {
                do {
                    _ = try DatabaseBackup.write(from: db, to: path)
                    return nil
                } catch {
                    return error as? BackupError
                }
            }
            guard case .exists? = refusal(existing) else { Issue.record("an existing file was not refused"); return }
            #expect(try Data(contentsOf: URL(fileURLWithPath: existing)) == Data("keep me".utf8))
            guard case .badPath(let relative)? = refusal("copy.sqlite") else { Issue.record("a relative path was not refused"); return }
            #expect(relative.contains("not an absolute path"))
            guard case .badPath(let missing)? = refusal(folder.path + "/no-such-folder/copy.sqlite") else { Issue.record("a missing folder was not refused"); return }
            #expect(missing.contains("does not exist"))
            // 4,096 bytes of 2-byte characters: 2,048 characters, yet over the byte limit.
            let long = folder.path + "/" + String(repeating: "é", count: 2_048)
            guard case .badPath(let tooLong)? = refusal(long) else { Issue.record("a path over 4,095 bytes was not refused"); return }
            #expect(tooLong.contains("at most 4095"))
            guard case .badPath? = refusal(folder.path + "/a\u{0}b") else { Issue.record("a NUL byte was not refused"); return }
            // Nothing was left behind by the refusals.
            #expect(try FileManager.default.contentsOfDirectory(atPath: folder.path).sorted() == ["existing.sqlite", "live.sqlite", "live.sqlite-shm", "live.sqlite-wal"])
        }
    }

    @Test func aRestoreGivesTheOutboxANewEpochAndReplacesTheDatabaseWhole() throws {
        try withTemporaryDirectory { folder in
            let live = folder.appendingPathComponent("live.sqlite").path
            let copy = folder.appendingPathComponent("copy.sqlite").path
            var epoch = ""
            do {
                let db = try openItems(live)
                try put(db, ["a", "b"])
                epoch = try Outbox(database: db).epoch()
                _ = try DatabaseBackup.write(from: db, to: copy)
                try put(db, ["c", "d"])
            }
            let restored = try DatabaseBackup.restore(from: copy, onto: live)
            #expect(restored.previousEpoch == epoch && restored.head == 2)
            let now = try #require(restored.epoch)
            #expect(now != epoch && now.utf8.count == 36)
            #expect(try names(live) == ["a", "b"])
            let outbox = Outbox(database: try Database(path: live))
            #expect(try outbox.epoch() == now && outbox.head() == 2)
            // The copy itself is left as it was.
            #expect(try Outbox(database: Database(path: copy, readOnly: true)).epoch() == epoch)
            #expect(!FileManager.default.fileExists(atPath: live + ".restoring"))
        }
    }

    @Test func aRestoreRefusesADatabaseThatIsOpenAndLeavesItAsItWas() throws {
        try withTemporaryDirectory { folder in
            let live = folder.appendingPathComponent("live.sqlite").path
            let copy = folder.appendingPathComponent("copy.sqlite").path
            let db = try openItems(live)
            try put(db, ["a"])
            _ = try DatabaseBackup.write(from: db, to: copy)
            try put(db, ["b"])
            // `db` stays open, idle, as a running service's connections are.
            #expect {
                _ = try DatabaseBackup.restore(from: copy, onto: live)
            } throws: { error in
                guard case .inUse(let message)? = error as? BackupError else { return false }
                return message.contains("stop the service first")
            }
            #expect(try db.query("SELECT name FROM items ORDER BY name").map { try $0.decode("name") as String } == ["a", "b"])
            try put(db, ["c"])
            #expect(!FileManager.default.fileExists(atPath: live + ".restoring"))
        }
    }

    @Test func aRestoreRefusesAFileThatIsNotADatabase() throws {
        try withTemporaryDirectory { folder in
            let live = folder.appendingPathComponent("live.sqlite").path
            let junk = folder.appendingPathComponent("junk.sqlite").path
            do {
                let db = try openItems(live)
                try put(db, ["a"])
            }
            try Data(repeating: 0x41, count: 8_192).write(to: URL(fileURLWithPath: junk))
            #expect {
                _ = try DatabaseBackup.restore(from: junk, onto: live)
            } throws: { error in
                guard case .notADatabase? = error as? BackupError else { return false }
                return true
            }
            #expect(try names(live) == ["a"])
            #expect(!FileManager.default.fileExists(atPath: live + ".restoring"))
        }
    }
}
