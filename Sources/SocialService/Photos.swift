import Bus
import Contracts
import Foundation
import ServiceKit
import Storage
import TourMaps
import Uploads

// Profile photos: a JPEG uploaded in chunks as tour maps are (`ChunkedUploads`), checked by
// libjpeg-turbo, kept as two centre-cropped squares (512 and 96 pixels) in `photos`.

/// What photo uploads share across the service's threads: the commits' own gate (at most one
/// decode at a time, never one of the slots the password hashes need), each user's commits of
/// the last hour, and the uploads begun from each client address in the last 10 minutes (in
/// memory: a restart only lets them start afresh).
final class PhotoDecoding: Sendable {
    let gate = ReaderGate(most: 1)
    private let commits = SharedRateWindow<Int64>(limit: PhotoRules.commitsPerHour, windowMs: 3_600_000)
    private let begins = SharedRateWindow<String>(limit: PhotoRules.beginsPerWindow, windowMs: PhotoRules.beginWindowMs)

    /// Counts one more upload begun from client address `client` (a caller on the bus with
    /// none: its user) at `nowMs`, or `rate_limited` past `PhotoRules.beginsPerWindow` in 10
    /// minutes. Counted by address, as accounts are cheap to make and addresses are not.
    func admitBegin(client: String?, user: Int64, nowMs: Int64) throws(ServiceError) {
        try begins.admit(client.map { "c " + $0 } ?? "u \(user)", now: nowMs, refusal: PhotoRules.tooManyBegins)
    }

    init() {}

    /// Counts one more commit of `user` at `nowMs`, or `rate_limited` when they made
    /// `PhotoRules.commitsPerHour` in the last hour.
    func admit(_ user: Int64, nowMs: Int64) throws(ServiceError) {
        try commits.admit(user, now: nowMs, refusal: PhotoRules.tooManyCommits)
    }
}

/// The bounds of photo uploads and the versions kept.
enum PhotoRules {
    /// A photo's JPEG: at most 10 MiB (10,485,760 bytes), 40 megapixels and 64 scans, not
    /// CMYK, at most 4:1, a progressive one at most 8 megapixels (libjpeg keeps its 48 MB of
    /// coefficients at 4:4:4), and at most 4,194,304 pixels (4096×1024, 12 MB) as decoded
    /// (which 4:1 already ensures at the scale squares decode at).
    static let jpeg = JPEGLimits(
        maxBytes: 10 * 1_024 * 1_024, maxAspectRatio: 4, maxProgressivePixels: 8_000_000,
        maxDecodedPixels: 4_096 * 1_024)
    /// Commits (each a decode) one user may make in any hour.
    static let commitsPerHour = 10
    static let tooManyCommits = ServiceError(.rateLimited, "at most \(commitsPerHour) photo commits an hour: try again later")
    /// Begins (attempts, refused ones too) from one client address in any 10 minutes (an upload's
    /// life): what bounds how fast many accounts can take slots from one another
    /// (`PhotoStore.reclaimSlot`), whatever number of accounts they use.
    static let beginsPerWindow = 20
    static let beginWindowMs: Int64 = 600_000
    static let tooManyBegins = ServiceError(.rateLimited, "at most \(beginsPerWindow) photo uploads begun from your address in 10 minutes: try again later")
    /// Seconds an upload must have gone without a chunk of `activeChunkBytes` or more before a
    /// full set of slots gives it to another user: one in progress keeps its slot, and holding
    /// one costs a sender 13 KB a second, not a byte now and then.
    static let idleBeforeReclaim: Int64 = 5
    static let activeChunkBytes = 65_536
    /// The sides of the squares kept, largest first.
    static let sizes = [512, 96]
    /// The JPEG quality of the kept versions (4:2:0, as photos are).
    static let quality = 85
    /// At most 3 uploads open per user and 64 in all, each up to 10 MiB and expiring 10
    /// minutes after it begins.
    static let uploads = ChunkedUploads(
        table: "photo_uploads", chunkTable: "photo_upload_chunks", ownerColumn: "user_id",
        maxBytes: jpeg.maxBytes, maxOpen: 64, maxOpenPerOwner: 3,
        noun: "a photo", usedBy: Methods.Profile.photoUploadCommit.name, lifetimeSeconds: 600)
    /// A commit that finds the one photo decode under way.
    static let busy = ServiceError(.unavailable, "busy with another photo; try again in a moment")

    /// Photos in their own migration domain: uploads (rows of chunks, as the catalog's) and
    /// each user's two squares; version 2 adds when each upload last took a chunk (`active_s`).
    static let migrations = [
        Migration(
            domain: "photos", version: 1,
            sql: """
                CREATE TABLE photo_uploads (
                    id        TEXT PRIMARY KEY,
                    user_id   INTEGER NOT NULL REFERENCES users(id) ON DELETE CASCADE,
                    created_s INTEGER NOT NULL,
                    bytes     INTEGER NOT NULL,
                    chunks    INTEGER NOT NULL,
                    committed INTEGER NOT NULL
                );
                CREATE INDEX photo_uploads_by_user ON photo_uploads(user_id);
                CREATE INDEX photo_uploads_by_age ON photo_uploads(created_s);
                CREATE TABLE photo_upload_chunks (
                    upload_id TEXT NOT NULL REFERENCES photo_uploads(id) ON DELETE CASCADE,
                    seq       INTEGER NOT NULL,
                    data      BLOB NOT NULL,
                    PRIMARY KEY (upload_id, seq)
                );
                CREATE TABLE photos (
                    user_id    INTEGER PRIMARY KEY REFERENCES users(id) ON DELETE CASCADE,
                    jpeg_512   BLOB NOT NULL,
                    jpeg_96    BLOB NOT NULL,
                    updated_at TEXT NOT NULL
                );
                """),
        Migration(
            domain: "photos", version: 2,
            sql: """
                ALTER TABLE photo_uploads ADD COLUMN active_s INTEGER NOT NULL DEFAULT 0;
                UPDATE photo_uploads SET active_s = created_s;
                """),
    ]

    /// The two squares of a photo, largest first (`JPEGImage.squares`: decoded once, at the
    /// smallest fast scale that still has 512 pixels on the shorter side, centre-cropped and
    /// resampled).
    static func versions(of data: Data) throws(JPEGError) -> [Data] {
        try JPEGImage.squares(of: data, limits: jpeg, sides: sizes, quality: quality)
    }
}

/// Profile photos: chunked uploads, decoded into two squares, and who may see them.
final class PhotoStore: SocialFeature {
    let shared: SocialShared
    let blocks: BlockStore
    /// Photo decoding's own gate and commit budget, so photos never take the password hashes' slots.
    let decoding: PhotoDecoding

    init(_ shared: SocialShared, blocks: BlockStore, decoding: PhotoDecoding) {
        self.shared = shared
        self.blocks = blocks
        self.decoding = decoding
    }

    /// Now in whole seconds, from the service's clock: uploads' ages.
    private var nowSeconds: Int64 { Int64(options.clock().timeIntervalSince1970.rounded(.down)) }

    // MARK: Uploads (begin and append on the writer thread)

    /// `profile.photo.upload.begin`: at most `PhotoRules.beginsPerWindow` attempts from one
    /// client address in 10 minutes; when every slot is open, one is taken back first (`reclaimSlot`).
    func beginUpload(caller: Caller, client: String?) throws -> PhotoUpload {
        let now = nowSeconds
        // Every attempt counts, refused or not: a closed loop of begins runs out at once.
        try decoding.admitBegin(client: client, user: caller.id, nowMs: nowMs)
        return try db.transaction {
            if try PhotoRules.uploads.openCount(db, now: now) >= PhotoRules.uploads.maxOpen { try reclaimSlot(for: caller.id, now: now) }
            let id = try PhotoRules.uploads.begin(db, owner: caller.id, now: now)
            try db.run("UPDATE photo_uploads SET active_s = ? WHERE id = ?", now, id)
            return PhotoUpload(uploadId: id, bytes: 0)
        }
    }

    /// With every slot open, the caller takes one from the user who holds the most, if they
    /// hold fewer than that user: that user's upload that has gone longest without a chunk
    /// (at least `PhotoRules.idleBeforeReclaim` seconds without a chunk of 64 KiB) is deleted,
    /// as if it had expired. So
    /// many accounts cannot keep everyone else out by holding slots: a user with none gets
    /// one while anyone holds more, and an upload in progress keeps its own.
    private func reclaimSlot(for user: Int64, now: Int64) throws {
        try db.run(
            """
            DELETE FROM photo_uploads WHERE id = (
                SELECT u.id FROM photo_uploads u
                JOIN (SELECT user_id, count(*) AS held FROM photo_uploads GROUP BY user_id) h ON h.user_id = u.user_id
                WHERE u.committed = 0 AND u.active_s <= ?
                  AND h.held > (SELECT count(*) FROM photo_uploads WHERE user_id = ?)
                ORDER BY h.held DESC, u.active_s, u.rowid LIMIT 1)
            """, now - PhotoRules.idleBeforeReclaim, user)
    }

    func appendUpload(_ request: UploadChunk, caller: Caller) throws -> PhotoUpload {
        let chunk = try Chunks.decode(request.chunk)
        let now = nowSeconds
        return try db.transaction {
            let bytes = try PhotoRules.uploads.append(db, request.uploadId, owner: caller.id, chunk: chunk, offset: request.offset, now: now)
            if chunk.count >= PhotoRules.activeChunkBytes { try db.run("UPDATE photo_uploads SET active_s = ? WHERE id = ?", now, request.uploadId) }
            return PhotoUpload(uploadId: request.uploadId, bytes: bytes)
        }
    }

    /// Makes upload `id` the caller's photo, on a reader thread: a short transaction marks the
    /// upload committed (a second commit meanwhile is `conflict`) and counts the commit in the
    /// caller's hourly budget, the JPEG is checked, decoded and cut into its two squares with
    /// no transaction open, and a second short transaction stores them (replacing the earlier
    /// photo) and deletes the upload. Any failure after the mark deletes the upload too. One
    /// photo decodes at a time (`PhotoDecoding.gate`, apart from the password hashes' gate).
    func commit(_ id: String, caller: Caller) throws -> PhotoUpload {
        try decoding.gate.run(readers: worker.config.readers, refusal: PhotoRules.busy) {
            let held = try db.transaction {
                let upload = try PhotoRules.uploads.open(db, id, owner: caller.id, now: nowSeconds)
                guard !upload.committed else { throw ServiceError(.conflict, "upload \(id) is committed already", field: "upload_id") }
                try decoding.admit(caller.id, nowMs: nowMs)
                try db.run("UPDATE photo_uploads SET committed = 1 WHERE id = ?", id)
                return upload.bytes
            }
            do {
                return try storePhoto(id, bytes: held, caller: caller)
            } catch {
                try? db.transaction { try PhotoRules.uploads.delete(db, id) }
                if let error = error as? JPEGError { throw ChunkedUploads.refusal(error, image: "the photo") }
                throw error
            }
        }
    }

    /// Decodes the marked upload `id` into its squares and stores them as the caller's photo.
    private func storePhoto(_ id: String, bytes held: Int, caller: Caller) throws -> PhotoUpload {
        let versions = try PhotoRules.versions(of: try PhotoRules.uploads.bytes(db, id))
        guard versions.count == 2, let large = versions.first, let small = versions.last else {
            throw ServiceError(.internal, "the photo was cut into \(versions.count) squares, not 2")
        }
        return try db.transaction {
            // The account may have been deleted, or the upload expired, during the decode.
            try requireCaller(caller)
            try db.run("DELETE FROM photo_uploads WHERE id = ? AND user_id = ?", id, caller.id)
            guard db.changes == 1 else { throw PhotoRules.uploads.unknown(id) }
            let now = timestamp()
            try db.run(
                "INSERT OR REPLACE INTO photos (user_id, jpeg_512, jpeg_96, updated_at) VALUES (?, ?, ?, ?)",
                caller.id, large, small, now)
            return PhotoUpload(uploadId: id, bytes: held, photo: PhotoStamp(updatedAt: now))
        }
    }

    // MARK: Photos

    /// `profile.photo`: one size of user `id`'s photo as `viewer` may see it: `not_found`
    /// (field `user_id`) when there is no such user or the profile is hidden from the viewer,
    /// and when the user has no photo.
    func photo(_ request: PhotoRequest, viewer: Int64?) throws -> (reply: PhotoReply, jpeg: Data) {
        guard let index = PhotoRules.sizes.firstIndex(of: request.size) else { throw ServiceError.invalid("size", "must be 512 or 96") }
        guard let id = request.userId ?? viewer else { throw ServiceError(.unauthenticated, "profile.photo needs a user_id or a signed-in user") }
        try blocks.requireVisibleUser(id, viewer: viewer)
        let column = "jpeg_\(PhotoRules.sizes[index])"
        guard let row = try db.queryOne("SELECT \(column), updated_at FROM photos WHERE user_id = ?", id) else {
            throw ServiceError(.notFound, "user \(id) has no photo", field: "user_id")
        }
        let jpeg: Data = try row.decode(column)
        return (PhotoReply(userId: id, size: request.size, bytes: jpeg.count, updatedAt: try row.decode("updated_at")), jpeg)
    }

    /// `profile.photo.delete`: removes both squares of the caller's photo.
    func delete(caller: Caller) throws -> PhotoDeleted {
        try db.run("DELETE FROM photos WHERE user_id = ?", caller.id)
        return PhotoDeleted(deleted: db.changes == 1)
    }

    /// The photo and open photo uploads (with their chunks) of user `id`: part of erasing an
    /// account, in its transaction.
    func erase(of id: Int64) throws {
        try db.run("DELETE FROM photos WHERE user_id = ?", id)
        try db.run("DELETE FROM photo_uploads WHERE user_id = ?", id)
    }
}
