import Bus
import Contracts
import Foundation
import Storage
import TourMaps

/// The bookkeeping of JPEG uploads in chunks (tour maps in the catalog, profile photos in
/// social): begin under a random id, append base64 chunks of at most `Chunks.maxBytes` with an
/// optional offset that guards retries, then the service commits the bytes its own way.
///
/// The service owns two tables, named here, in its own schema:
/// `uploads` (`id TEXT PRIMARY KEY, created_s INTEGER, bytes INTEGER, chunks INTEGER,
/// committed INTEGER`, and the owner's column when uploads have one) and `chunkTable`
/// (`upload_id` referencing it `ON DELETE CASCADE`, `seq`, `data`). Every call runs on the
/// caller's connection, in the caller's transaction where it writes. Times are whole seconds
/// since 1970 from the caller's clock; an upload lives `lifetimeSeconds` after it began.
/// Uploads with an owner are the owner's alone: another owner's id is just an unknown one.
public struct ChunkedUploads: Sendable {
    /// How long an upload lives after it begins unless told otherwise: an hour.
    public static let defaultLifetimeSeconds: Int64 = 3_600

    /// What an upload holds so far.
    public struct Upload: Sendable, Equatable {
        /// Bytes appended.
        public var bytes: Int
        /// Chunks appended (the next one's `seq`).
        public var chunks: Int
        /// Whether the service marked it committed (it takes no more chunks).
        public var committed: Bool
    }

    /// The uploads table.
    public let table: String
    /// The table of their chunks.
    public let chunkTable: String
    /// The column of `table` naming the owner, or nil when uploads have none.
    public let ownerColumn: String?
    /// At most this many bytes in one upload (`too_large`, field `chunk`).
    public let maxBytes: Int
    /// At most this many uploads open at once, of everyone (`rate_limited`).
    public let maxOpen: Int
    /// At most this many uploads open at once of one owner (`rate_limited`), when they have owners.
    public let maxOpenPerOwner: Int
    /// What the file is, in messages: "a map image", "a photo".
    public let noun: String
    /// The request that uses an upload up, in messages: "tours.map.set".
    public let usedBy: String
    /// How long an upload lives after it begins, in seconds (whole minutes or hours).
    public let lifetimeSeconds: Int64

    public init(
        table: String, chunkTable: String, ownerColumn: String? = nil, maxBytes: Int, maxOpen: Int,
        maxOpenPerOwner: Int = .max, noun: String, usedBy: String, lifetimeSeconds: Int64 = Self.defaultLifetimeSeconds
    ) {
        self.table = table
        self.chunkTable = chunkTable
        self.ownerColumn = ownerColumn
        self.maxBytes = maxBytes
        self.maxOpen = maxOpen
        self.maxOpenPerOwner = maxOpenPerOwner
        self.noun = noun
        self.usedBy = usedBy
        self.lifetimeSeconds = lifetimeSeconds
    }

    /// The lifetime in words: "an hour", "10 minutes".
    var lifetime: String {
        switch lifetimeSeconds {
        case 3_600: "an hour"
        case let seconds where seconds % 3_600 == 0: "\(seconds / 3_600) hours"
        case 60: "a minute"
        default: "\(lifetimeSeconds / 60) minutes"
        }
    }

    /// `not_found` for an upload id that is not one of ours (or expired, or another owner's).
    public func unknown(_ id: String) -> ServiceError {
        ServiceError(.notFound, "no upload '\(id.prefix(64))' (uploads expire \(lifetime) after they begin)", field: "upload_id")
    }

    /// The uploads open at `now`, after deleting the expired ones.
    public func openCount(_ db: Database, now: Int64) throws -> Int {
        try db.run("DELETE FROM \(table) WHERE created_s < ?", now - lifetimeSeconds)
        return Int(try db.scalarInt("SELECT COUNT(*) FROM \(table)") ?? 0)
    }

    /// Begins an upload of `owner` (nil when uploads have none) and answers its id, after
    /// deleting the expired ones; `rate_limited` when too many are open.
    public func begin(_ db: Database, owner: Int64?, now: Int64) throws -> String {
        let open = try openCount(db, now: now)
        guard open < maxOpen else {
            throw ServiceError(.rateLimited, "\(open) uploads are open: use them with \(usedBy), or wait \(lifetime) for them to expire")
        }
        if let ownerColumn, let owner {
            let mine = try db.scalarInt("SELECT COUNT(*) FROM \(table) WHERE \(ownerColumn) = ?", owner) ?? 0
            guard mine < maxOpenPerOwner else {
                throw ServiceError(.rateLimited, "you have \(mine) uploads open, the most: use one with \(usedBy), or wait \(lifetime) for them to expire")
            }
        }
        let id = Chunks.newID()
        if let ownerColumn, let owner {
            try db.run("INSERT INTO \(table) (id, \(ownerColumn), created_s, bytes, chunks, committed) VALUES (?, ?, ?, 0, 0, 0)", id, owner, now)
        } else {
            try db.run("INSERT INTO \(table) (id, created_s, bytes, chunks, committed) VALUES (?, ?, 0, 0, 0)", id, now)
        }
        return id
    }

    /// The upload `id` of `owner`, not expired, or `not_found`.
    public func open(_ db: Database, _ id: String, owner: Int64?, now: Int64) throws -> Upload {
        var sql = "SELECT bytes, chunks, committed FROM \(table) WHERE id = ? AND created_s >= ?"
        var arguments: [(any SQLBindable)?] = [id, now - lifetimeSeconds]
        if let ownerColumn, let owner {
            sql += " AND \(ownerColumn) = ?"
            arguments.append(owner)
        }
        guard id.utf8.count <= 64, let row = try db.queryOne(sql, arguments) else { throw unknown(id) }
        return Upload(bytes: try row.decode("bytes"), chunks: try row.decode("chunks"), committed: try row.decode("committed", as: Int.self) != 0)
    }

    /// Appends `chunk` (decoded by `Chunks.decode`) to upload `id` and answers the bytes it
    /// holds now. A committed upload is `conflict`; so is an `offset` that is not the bytes it
    /// holds already (a retried append is refused, not doubled); past `maxBytes`, `too_large`.
    public func append(_ db: Database, _ id: String, owner: Int64?, chunk: Data, offset: Int?, now: Int64) throws -> Int {
        let upload = try open(db, id, owner: owner, now: now)
        guard !upload.committed else { throw ServiceError(.conflict, "upload \(id) is committed already", field: "upload_id") }
        if let offset, offset != upload.bytes {
            throw ServiceError(.conflict, "upload \(id) holds \(upload.bytes) bytes, not \(offset)", field: "offset")
        }
        guard upload.bytes + chunk.count <= maxBytes else {
            throw ServiceError(.tooLarge, "\(noun) may have at most \(maxBytes) bytes", field: "chunk")
        }
        try db.run("INSERT INTO \(chunkTable) (upload_id, seq, data) VALUES (?, ?, ?)", id, upload.chunks, chunk)
        try db.run("UPDATE \(table) SET bytes = bytes + ?, chunks = chunks + 1 WHERE id = ?", chunk.count, id)
        return upload.bytes + chunk.count
    }

    /// Deletes upload `id` and its chunks (used, refused, or a commit that failed).
    public func delete(_ db: Database, _ id: String) throws {
        try db.run("DELETE FROM \(table) WHERE id = ?", id)
    }

    /// The bytes of upload `id`, its chunks in order.
    public func bytes(_ db: Database, _ id: String) throws -> Data {
        try Chunks.joined(db, "SELECT data FROM \(chunkTable) WHERE upload_id = ? ORDER BY seq", [id])
    }

    /// What a refused JPEG answers, calling it `image` ("the map image"): too large
    /// (`too_large`), a failure of libjpeg-turbo itself (`internal`), or not an image we take
    /// (`invalid_argument`), each with libjpeg-turbo's words and field `upload_id`.
    public static func refusal(_ error: JPEGError, image: String) -> ServiceError {
        switch error {
        case .tooManyBytes, .tooManyPixels, .tooManyProgressivePixels, .tooManyDecodedPixels: ServiceError(.tooLarge, error.description(of: image), field: "upload_id")
        case .library: ServiceError(.internal, error.description(of: image))
        default: ServiceError.invalid("upload_id", error.description(of: image))
        }
    }
}
