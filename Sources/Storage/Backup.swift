import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// Why a backup or a restore of a SQLite file was refused or failed.
public enum BackupError: Error, Sendable, CustomStringConvertible, Equatable {
    /// The path given is not one a backup or restore takes (relative, too long, no such folder…).
    case badPath(String)
    /// The target exists already: a backup never overwrites anything.
    case exists(String)
    /// The database to restore onto is open in another connection (its service is running).
    case inUse(String)
    /// The copy to restore is not a sound SQLite database.
    case notADatabase(String)
    /// A file operation failed: what was being done and the system's message.
    case io(String)

    public var description: String {
        switch self {
        case .badPath(let m), .exists(let m), .inUse(let m), .notADatabase(let m), .io(let m): m
        }
    }
}

/// Consistent copies of a service's SQLite file, made by the service on one of its own
/// connections, and putting such a copy back while the service is stopped.
///
/// A backup is `VACUUM INTO` a file beside the target (`<to>.partial`), synced, then linked to
/// its name (`link(2)`, which never replaces a file) and synced in its folder: a file at the
/// target's name is always whole. The copy is read in one read transaction, so it is the
/// database as of one commit, and in WAL mode the service's writer goes on meanwhile. A
/// replicated database (in dqlite's VFS, in memory) is first copied into a plain in-memory one
/// (`copySharedIntoMemory`), as of the last commit this replica applied, and written from there.
public enum DatabaseBackup {
    /// The longest path accepted, in UTF-8 bytes.
    public static let maxPathBytes = 4_095

    /// Checks that `path` names a new file a backup may write: absolute, at most
    /// `maxPathBytes` UTF-8 bytes, no NUL, in a folder that exists, and not there yet.
    public static func checkTarget(_ path: String) throws(BackupError) {
        guard path.utf8.count <= maxPathBytes else { throw .badPath("the path is \(path.utf8.count) bytes long; at most \(maxPathBytes)") }
        guard !path.utf8.contains(0) else { throw .badPath("the path contains a NUL byte") }
        guard path.hasPrefix("/") else { throw .badPath("'\(path)' is not an absolute path") }
        guard !path.hasSuffix("/") else { throw .badPath("'\(path)' names a folder, not a file") }
        let folder = (path as NSString).deletingLastPathComponent
        var isFolder: ObjCBool = false
        guard FileManager.default.fileExists(atPath: folder, isDirectory: &isFolder), isFolder.boolValue else {
            throw .badPath("the folder \(folder) does not exist")
        }
        if exists(path) { throw .exists("\(path) exists already; a backup never overwrites a file") }
    }

    /// Copies the database of `db` (the `main` schema, as of one commit) to the new file `path`
    /// (checked by `checkTarget`) and returns its size in bytes. `db` must not be in a transaction.
    public static func write(from db: Database, to path: String) throws -> Int64 {
        try checkTarget(path)
        let partial = path + ".partial"
        if exists(partial) { throw BackupError.exists("\(partial) exists: a backup to \(path) is under way or was cut short; remove it to try again") }
        // VACUUM INTO writes through the database's own VFS: for a replicated one, into its
        // memory; and a long read there would hold up the replicas' commits.
        let source = db.shared == nil ? db : try db.copySharedIntoMemory()
        do {
            try source.run("VACUUM INTO ?", partial)
            try sync(partial)
            // link(2) fails with EEXIST rather than replace a file that appeared meanwhile.
            guard link(partial, path) == 0 else {
                let code = errno
                if code == EEXIST { throw BackupError.exists("\(path) exists already; a backup never overwrites a file") }
                throw BackupError.io("linking \(partial) to \(path): \(String(cString: strerror(code)))")
            }
        } catch {
            unlink(partial)
            throw error
        }
        unlink(partial)
        try sync((path as NSString).deletingLastPathComponent)
        let size = (try? FileManager.default.attributesOfItem(atPath: path)[.size] as? NSNumber)?.int64Value
        return size ?? 0
    }

    /// What a restore put back.
    public struct Restored: Sendable, Equatable {
        /// The epoch the restored outbox has now, nil when the copy has no outbox.
        public var epoch: String?
        /// The epoch the copy had.
        public var previousEpoch: String?
        /// The outbox head of the copy (its last event), nil when it has no outbox.
        public var head: Int64?
        /// The restored file's size in bytes.
        public var bytes: Int64
    }

    /// Puts the copy `source` in place of the database `target`, whose service must be stopped.
    ///
    /// The copy is written beside the target (`<target>.restoring`), checked
    /// (`PRAGMA quick_check`), given a new outbox epoch when it has an outbox (so every
    /// subscriber sees the publisher's history changed and rebuilds from its snapshot), and
    /// synced. Then, holding SQLite's exclusive lock on the old database — which fails at once
    /// while any other connection has it open, as a running service's do — it is renamed over
    /// the target, the old WAL and shared-memory files are removed, and the folder is synced.
    /// A failure before the rename leaves the old database as it was. A replica's database
    /// (a `.raft` folder beside it) is refused.
    public static func restore(from source: String, onto target: String) throws -> Restored {
        guard exists(source) else { throw BackupError.badPath("\(source) does not exist") }
        let folder = (target as NSString).deletingLastPathComponent
        var isFolder: ObjCBool = false
        guard FileManager.default.fileExists(atPath: folder.isEmpty ? "." : folder, isDirectory: &isFolder), isFolder.boolValue else {
            throw BackupError.badPath("the folder \(folder) does not exist")
        }
        let raft = (target as NSString).deletingPathExtension + ".raft"
        if exists(raft) {
            throw BackupError.inUse(
                "\(target) belongs to a replica of a replicated service: it is rebuilt from its Raft log (\(raft)), not read from a file; "
                    + "a replicated service is not restored from a backup yet (a backup restores onto a service with a plain file)")
        }
        let staged = target + ".restoring"
        for leftover in [staged, staged + "-wal", staged + "-shm", staged + "-journal"] { unlink(leftover) }
        var restored: Restored
        do {
            do {
                try FileManager.default.copyItem(atPath: source, toPath: staged)
            } catch {
                throw BackupError.io("copying \(source) to \(staged): \(error.localizedDescription)")
            }
            restored = try stamp(staged)
            try sync(staged)
        } catch {
            for leftover in [staged, staged + "-wal", staged + "-shm"] { unlink(leftover) }
            throw error
        }
        // The lock is held until the new file is in place: no service opens the old one meanwhile.
        var lock: Database?
        if exists(target) {
            do {
                lock = try exclusiveLock(target)
            } catch {
                unlink(staged)
                throw error
            }
        }
        // The restored file belongs to whom the old one did, with its mode: a restore run as root
        // must not leave a service running as its own user unable to write its database.
        var old = stat()
        if stat(target, &old) == 0 {
            guard chown(staged, old.st_uid, old.st_gid) == 0, chmod(staged, old.st_mode & 0o7777) == 0 else {
                let message = String(cString: strerror(errno))
                unlink(staged)
                throw BackupError.io("giving \(staged) the owner and mode of \(target): \(message)")
            }
        }
        guard rename(staged, target) == 0 else {
            let message = String(cString: strerror(errno))
            unlink(staged)
            throw BackupError.io("renaming \(staged) to \(target): \(message)")
        }
        unlink(target + "-wal")
        unlink(target + "-shm")
        unlink(target + "-journal")
        // Only now may another connection open the file (and it finds the new one).
        withExtendedLifetime(lock) {}
        try sync(folder.isEmpty ? "." : folder)
        restored.bytes = (try? FileManager.default.attributesOfItem(atPath: target)[.size] as? NSNumber)?.int64Value ?? 0
        return restored
    }

    /// Checks the staged copy and gives its outbox a new epoch; leaves it as one file (its WAL
    /// checkpointed and removed when the connection closes).
    private static func stamp(_ path: String) throws -> Restored {
        let db: Database
        do {
            db = try Database(path: path)
            let check = try db.queryOne("PRAGMA quick_check")?.string(0)
            guard check == "ok" else { throw BackupError.notADatabase("the copy fails SQLite's quick_check: \(check ?? "no answer")") }
        } catch let error as SQLiteError where error.code == .notADatabase || error.code == .corrupt {
            throw BackupError.notADatabase("the copy is not a sound SQLite database: \(error.message)")
        }
        let hasOutbox = try db.scalarInt("SELECT count(*) FROM sqlite_schema WHERE type = 'table' AND name IN ('outbox', 'outbox_meta')") == 2
        guard hasOutbox else { return Restored(epoch: nil, previousEpoch: nil, head: nil, bytes: 0) }
        let outbox = Outbox(database: db)
        let previous = try outbox.epoch()
        let epoch = UUID().uuidString.lowercased()
        try db.transaction {
            try db.run("UPDATE outbox_meta SET value = ? WHERE key = 'epoch'", epoch)
        }
        return Restored(epoch: try outbox.epoch(), previousEpoch: previous, head: try outbox.head(), bytes: 0)
    }

    /// Opens `path` and takes SQLite's exclusive lock on it (leaving WAL mode, which SQLite
    /// allows only to the one connection that has the file open); `inUse` when another has.
    private static func exclusiveLock(_ path: String) throws -> Database {
        do {
            let db = try Database(path: path, busyTimeoutMilliseconds: 0)
            try db.execute("PRAGMA locking_mode = EXCLUSIVE")
            let mode = try db.queryOne("PRAGMA journal_mode = DELETE")?.string(0)
            guard mode?.lowercased() == "delete" else { throw BackupError.inUse("\(path) is in use (its journal mode stays \(mode ?? "unknown")); stop its service first") }
            try db.execute("BEGIN EXCLUSIVE")
            return db
        } catch let error as SQLiteError where error.code == .busy || error.code == .locked {
            throw BackupError.inUse("\(path) is in use by another process (is its service running?); stop the service first")
        }
    }

    private static func exists(_ path: String) -> Bool {
        var status = stat()
        return lstat(path, &status) == 0
    }

    /// fsync(2)s a file or folder.
    private static func sync(_ path: String) throws(BackupError) {
        let fd = open(path, O_RDONLY)
        guard fd >= 0 else { throw .io("opening \(path) to sync it: \(String(cString: strerror(errno)))") }
        defer { close(fd) }
        guard fsync(fd) == 0 else { throw .io("syncing \(path): \(String(cString: strerror(errno)))") }
    }
}
