/// One schema change: a SQL script identified by a domain (e.g. "outbox") and a version within it.
public struct Migration: Sendable, Equatable {
    /// The owner of the schema change, so separate modules version their tables independently.
    public let domain: String
    /// Positive and unique within the domain; migrations apply in ascending version order.
    public let version: Int
    /// The script to run; may hold several statements.
    public let sql: String

    /// Describes a migration.
    public init(domain: String, version: Int, sql: String) {
        self.domain = domain
        self.version = version
        self.sql = sql
    }
}

/// A list of migrations that cannot be applied as given.
public enum MigrationError: Error, Sendable, Equatable, CustomStringConvertible {
    /// A version that is zero or negative.
    case invalidVersion(domain: String, version: Int)
    /// Two migrations with the same domain and version.
    case duplicateVersion(domain: String, version: Int)

    /// Which migration is wrong and why.
    public var description: String {
        switch self {
        case .invalidVersion(let domain, let version): "migration \(domain) v\(version): version must be positive"
        case .duplicateVersion(let domain, let version): "migration \(domain) v\(version): version appears twice"
        }
    }
}

extension Database {
    /// Applies the migrations not yet recorded in `schema_migrations` and returns them, in the order applied.
    ///
    /// Each runs in its own transaction together with its record, so a failing script leaves no trace
    /// and stops the run (earlier ones stay applied). Domains run in order of first appearance, versions
    /// ascending within each. Throws `MigrationError` for a bad list, `SQLiteError` for a failing script.
    @discardableResult
    public func migrate(_ migrations: [Migration]) throws -> [Migration] {
        let ordered = try Self.validatedOrder(migrations)
        try execute(
            """
            CREATE TABLE IF NOT EXISTS schema_migrations(
                domain TEXT NOT NULL,
                version INTEGER NOT NULL,
                applied_at TEXT NOT NULL,
                PRIMARY KEY(domain, version))
            """)
        let isApplied = "SELECT 1 FROM schema_migrations WHERE domain = ? AND version = ?"
        var applied: [Migration] = []
        for migration in ordered where try queryOne(isApplied, migration.domain, migration.version) == nil {
            let didApply = try transaction(.immediate) {
                // Checked again under the write lock: another process may have applied it meanwhile.
                guard try queryOne(isApplied, migration.domain, migration.version) == nil else { return false }
                try execute(migration.sql)
                try run(
                    """
                    INSERT INTO schema_migrations(domain, version, applied_at)
                    VALUES(?, ?, strftime('%Y-%m-%dT%H:%M:%fZ', 'now'))
                    """, migration.domain, migration.version)
                return true
            }
            if didApply { applied.append(migration) }
        }
        return applied
    }

    /// Whether every one of `migrations` is recorded as applied (a replica that does not migrate
    /// waits for this: its leader migrates).
    public func hasApplied(_ migrations: [Migration]) throws(SQLiteError) -> Bool {
        guard try scalarInt("SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = 'schema_migrations'") == 1 else { return false }
        for migration in migrations where try queryOne("SELECT 1 FROM schema_migrations WHERE domain = ? AND version = ?", migration.domain, migration.version) == nil {
            return false
        }
        return true
    }

    /// Checks versions are positive and unique per domain; returns domains in first-seen order, versions ascending.
    private static func validatedOrder(_ migrations: [Migration]) throws(MigrationError) -> [Migration] {
        var domains: [String] = []
        var byDomain: [String: [Migration]] = [:]
        for migration in migrations {
            guard migration.version > 0 else {
                throw .invalidVersion(domain: migration.domain, version: migration.version)
            }
            if byDomain[migration.domain] == nil { domains.append(migration.domain) }
            if byDomain[migration.domain, default: []].contains(where: { $0.version == migration.version }) {
                throw .duplicateVersion(domain: migration.domain, version: migration.version)
            }
            byDomain[migration.domain, default: []].append(migration)
        }
        return domains.flatMap { (byDomain[$0] ?? []).sorted { $0.version < $1.version } }
    }
}
