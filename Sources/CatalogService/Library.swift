import Bus
import Contracts
import Foundation
import KeyFiles
import Sealing
import ServiceCore
import ServiceKit
import Storage
import Uploads

// Downloads bound to a device: `library.add` packs a tour with its places, their texts and
// the map's tiles, seals it to one of the user's devices (whose public keys the catalog learns
// from social's `social.device.*` events) and signs it with the server's Ed25519 key. The
// sealed package is kept for a while and fetched in bounded pieces. Protocols/library.md.

/// What a package holds once opened (JSON; Protocols/library.md, *The package*).
private struct PackageContent: Encodable {
    var format: String
    var userId: Int64
    var deviceId: String
    var tourId: Int64
    var issuedAt: String
    var tour: Tour
    var places: [Place]
    var map: TourMapInfo?
    var tiles: [PackageTile]
    var tilesComplete: Bool

    enum CodingKeys: String, CodingKey {
        case format, tour, places, map, tiles
        case userId = "user_id"
        case deviceId = "device_id"
        case tourId = "tour_id"
        case issuedAt = "issued_at"
        case tilesComplete = "tiles_complete"
    }
}

/// One map tile of a package: its JPEG in base64.
private struct PackageTile: Encodable {
    var z: Int
    var x: Int
    var y: Int
    var jpeg: String
}

/// The rules of the library.
enum LibraryRules {
    static let format = "tourbus.package.v1"
    /// The most tours one library holds.
    static let maxTours = 100
    /// Bytes of a package piece: 256 KiB, about 342 KiB in base64, far under every reply limit.
    static let pieceBytes = 256 * 1_024
    /// Sealed packages kept per user (the oldest goes first), and for how long.
    static let keptPackages = 4
    static let keptMilliseconds: Int64 = 86_400_000
    /// The most packages one user may have made in `addWindowMilliseconds` (counted among the
    /// kept ones, so at most `keptPackages`): building, sealing and signing a package with its
    /// tiles is the catalog's dearest write, and its writer is shared by everyone.
    static let addsPerWindow = 4
    static let addWindowMilliseconds: Int64 = 10_000
    /// A package id: 32 lower-case hex digits (`Chunks.newID`, as uploads and imports are named).
    static let packageIdBytes = 32

    /// The bytes the signature covers: six lines, each ending in `\n` (Protocols/library.md).
    static func signedBytes(digest: String, user: Int64, device: String, tour: Int64, issuedAt: String) -> [UInt8] {
        Array("\(format)\ndigest:\(digest)\nuser:\(user)\ndevice:\(device)\ntour:\(tour)\nissued_at:\(issuedAt)\n".utf8)
    }

    /// `unavailable` when the catalog was started without a signing key.
    static func key(_ options: CatalogOptions) throws(ServiceError) -> SigningKey {
        guard let key = options.signingKey else {
            throw ServiceError(.unavailable, "this catalog has no signing key, so it makes no packages (start it with --signing-key FILE)")
        }
        return key
    }

    /// The library's tables: social's devices as the catalog knows them, each user's tours and
    /// their places, hidden places, and sealed packages waiting to be fetched.
    static let migrations: [Migration] = [
        Migration(
            domain: "library", version: 1,
            sql: """
                CREATE TABLE library_devices (
                    user_id    INTEGER NOT NULL,
                    device_id  TEXT NOT NULL,
                    public_key TEXT NOT NULL,
                    PRIMARY KEY (user_id, device_id)
                );
                CREATE TABLE library_tours (
                    user_id  INTEGER NOT NULL,
                    tour_id  INTEGER NOT NULL,
                    added_at TEXT NOT NULL,
                    PRIMARY KEY (user_id, tour_id)
                );
                CREATE TABLE library_places (
                    user_id  INTEGER NOT NULL,
                    tour_id  INTEGER NOT NULL,
                    place_id INTEGER NOT NULL,
                    position INTEGER NOT NULL,
                    PRIMARY KEY (user_id, tour_id, place_id)
                );
                CREATE INDEX library_places_by_place ON library_places(user_id, place_id);
                CREATE TABLE library_hidden (
                    user_id  INTEGER NOT NULL,
                    place_id INTEGER NOT NULL,
                    PRIMARY KEY (user_id, place_id)
                );
                CREATE TABLE library_packages (
                    id         TEXT PRIMARY KEY,
                    user_id    INTEGER NOT NULL,
                    device_id  TEXT NOT NULL,
                    tour_id    INTEGER NOT NULL,
                    created_ms INTEGER NOT NULL,
                    bytes      INTEGER NOT NULL
                );
                CREATE INDEX library_packages_by_user ON library_packages(user_id, created_ms);
                CREATE TABLE library_package_pieces (
                    package_id TEXT NOT NULL REFERENCES library_packages(id) ON DELETE CASCADE,
                    piece      INTEGER NOT NULL,
                    bytes      BLOB NOT NULL,
                    PRIMARY KEY (package_id, piece)
                );
                """)
    ]

    /// What the library takes from social's events: the devices packages are sealed to, and a
    /// deleted user's library erased (`social.user.deleted`). Before a rebuild from social's
    /// snapshot (which lists every device) it forgets the devices.
    static let socialEvents = EventHandlers(
        [
            SocialEvents.deviceRegistered: { event, scope in
                let device = try event.body(DeviceChange.self)
                try scope.db.run(
                    "INSERT OR REPLACE INTO library_devices (user_id, device_id, public_key) VALUES (?, ?, ?)",
                    device.userId, device.deviceId, device.publicKey)
            },
            SocialEvents.deviceRevoked: { event, scope in
                let device = try event.body(DeviceChange.self)
                try scope.db.run("DELETE FROM library_devices WHERE user_id = ? AND device_id = ?", device.userId, device.deviceId)
                try scope.db.run("DELETE FROM library_packages WHERE user_id = ? AND device_id = ?", device.userId, device.deviceId)
            },
            SocialEvents.userDeleted: { event, scope in
                let user = try event.body(UserDeleted.self).userId
                // Packages' pieces go with them (ON DELETE CASCADE).
                for table in ["library_devices", "library_tours", "library_places", "library_hidden", "library_packages"] {
                    try scope.db.run("DELETE FROM \(table) WHERE user_id = ?", user)
                }
            },
        ], reset: { db in try db.run("DELETE FROM library_devices") })
}

extension CatalogStore {
    // MARK: The library (library.add builds on a reader and writes in its own short transaction; the rest on the writer; reads anywhere)

    /// `library.add`: packs tour `tour_id` for the caller's device `device_id`, seals, signs
    /// and keeps it, and adds the tour (with its places) to the caller's library. It runs on a
    /// reader: the package is built from one snapshot and sealed outside the write lock, then
    /// kept in a short transaction that checks the limits again.
    func addToLibrary(_ request: LibraryAdd, user: Int64) throws -> PackageManifest {
        try DeviceChange.checkDeviceId(request.deviceId)
        let key = try LibraryRules.key(options)
        guard
            let deviceKey = try db.queryOne("SELECT public_key FROM library_devices WHERE user_id = ? AND device_id = ?", user, request.deviceId)?
                .decode("public_key", as: String.self), let publicKey = Data(canonicalBase64: deviceKey)
        else {
            throw ServiceError(
                .notFound, "you have no registered device \(request.deviceId) (never registered, or revoked; one registered a moment ago may take a moment to reach the catalog)",
                field: "device_id")
        }
        let nowMs = options.clock()
        try checkAddRate(user: user, nowMs: nowMs)
        let issuedAt = Logger.timestamp(Date(timeIntervalSince1970: Double(nowMs) / 1000))
        // Built and sealed from one snapshot, outside the write lock: a package of an 8 MiB
        // map is read, encoded and sealed while other writes go on.
        let built = try db.transaction(.deferred) { () throws -> (tour: Tour, content: PackageContent, sealed: [UInt8]) in
            let tour = try self.tour(request.tourId, field: "tour_id")
            try checkLibraryRoom(user: user, tour: tour.id)
            let hidden = Set(try db.query("SELECT place_id FROM library_hidden WHERE user_id = ?", user).map { row throws(RowError) in try row.decode("place_id", as: Int64.self) })
            let places = try tour.stops.filter { !hidden.contains($0) }.map { try get($0) }
            var content = PackageContent(
                format: LibraryRules.format, userId: user, deviceId: request.deviceId, tourId: tour.id, issuedAt: issuedAt,
                tour: tour, places: places, map: nil, tiles: [], tilesComplete: true)
            if try db.scalarInt("SELECT tiles_ready FROM tour_maps WHERE tour_id = ?", tour.id) == 1 {
                content.map = try mapInfo(tour.id)
                (content.tiles, content.tilesComplete) = try packageTiles(tour.id, budget: options.packageMaxBytes - JSONCoding.encoder.encode(content).count)
            } else if try db.scalarInt("SELECT 1 FROM tour_maps WHERE tour_id = ?", tour.id) != nil {
                content.map = try mapInfo(tour.id)
                content.tilesComplete = false
            }
            let plain = try JSONCoding.encoder.encode(content)
            guard plain.count <= options.packageMaxBytes else {
                throw ServiceError(.tooLarge, "tour \(tour.id)'s places take more than \(options.packageMaxBytes) bytes without any tile", field: "tour_id")
            }
            return (tour, content, try Sodium.seal(Array(plain), to: Array(publicKey)))
        }
        let (tour, content, sealed) = built
        let digest = try Sodium.blake2b256Hex(sealed)
        let signature = try key.sign(LibraryRules.signedBytes(digest: digest, user: user, device: request.deviceId, tour: tour.id, issuedAt: issuedAt))
        let packageId = Chunks.newID()
        // Then written in a short transaction of its own, where the limits are checked again.
        return try db.transaction(.immediate) {
            try checkAddRate(user: user, nowMs: nowMs)
            try checkLibraryRoom(user: user, tour: tour.id)
            try db.run("DELETE FROM library_packages WHERE user_id = ? AND created_ms < ?", user, nowMs - LibraryRules.keptMilliseconds)
            try db.run(
                "INSERT INTO library_packages (id, user_id, device_id, tour_id, created_ms, bytes) VALUES (?, ?, ?, ?, ?, ?)",
                packageId, user, request.deviceId, tour.id, nowMs, sealed.count)
            // Kept in pieces, so each library.package reads one piece's bytes only.
            for (piece, start) in stride(from: 0, to: sealed.count, by: LibraryRules.pieceBytes).enumerated() {
                try db.run(
                    "INSERT INTO library_package_pieces (package_id, piece, bytes) VALUES (?, ?, ?)",
                    packageId, piece, Data(sealed[start..<min(sealed.count, start + LibraryRules.pieceBytes)]))
            }
            try db.run(
                """
                DELETE FROM library_packages WHERE user_id = ? AND id NOT IN
                    (SELECT id FROM library_packages WHERE user_id = ? ORDER BY created_ms DESC, rowid DESC LIMIT ?)
                """, user, user, LibraryRules.keptPackages)
            try db.run("INSERT OR REPLACE INTO library_tours (user_id, tour_id, added_at) VALUES (?, ?, ?)", user, tour.id, issuedAt)
            try db.run("DELETE FROM library_places WHERE user_id = ? AND tour_id = ?", user, tour.id)
            for (position, place) in tour.stops.enumerated() {
                try db.run("INSERT OR IGNORE INTO library_places (user_id, tour_id, place_id, position) VALUES (?, ?, ?, ?)", user, tour.id, place, position)
            }
            let pieces = max(1, (sealed.count + LibraryRules.pieceBytes - 1) / LibraryRules.pieceBytes)
            return PackageManifest(
                packageId: packageId, format: LibraryRules.format, userId: user, deviceId: request.deviceId, tourId: tour.id, issuedAt: issuedAt,
                bytes: sealed.count, digest: digest, signature: Data(signature).base64EncodedString(), signingKey: key.publicKeyBase64,
                pieceBytes: LibraryRules.pieceBytes, pieces: pieces, places: content.places.map(\.id), tiles: content.tiles.count,
                tilesComplete: content.tilesComplete)
        }
    }

    /// `rate_limited` (field `tour_id`) past `addsPerWindow` packages in the window.
    private func checkAddRate(user: Int64, nowMs: Int64) throws {
        let recent =
            try db.scalarInt(
                "SELECT count(*) FROM library_packages WHERE user_id = ? AND created_ms > ?",
                user, nowMs - LibraryRules.addWindowMilliseconds) ?? 0
        guard recent < LibraryRules.addsPerWindow else {
            throw ServiceError(
                .rateLimited, "at most \(LibraryRules.addsPerWindow) downloads in \(LibraryRules.addWindowMilliseconds / 1000) s; try again in a few seconds",
                field: "tour_id")
        }
    }

    /// `conflict` (field `tour_id`) when the library is full and does not hold `tour` yet.
    private func checkLibraryRoom(user: Int64, tour: Int64) throws {
        let inLibrary = try db.scalarInt("SELECT 1 FROM library_tours WHERE user_id = ? AND tour_id = ?", user, tour) != nil
        if !inLibrary, (try db.scalarInt("SELECT count(*) FROM library_tours WHERE user_id = ?", user) ?? 0) >= LibraryRules.maxTours {
            throw ServiceError(.conflict, "your library holds \(LibraryRules.maxTours) tours, the most; remove one (library.remove) first", field: "tour_id")
        }
    }

    /// The tiles of tour `id`'s map, whole levels coarsest first, while their JSON fits in
    /// `budget` bytes; and whether every level fitted.
    private func packageTiles(_ id: Int64, budget: Int) throws -> ([PackageTile], Bool) {
        var tiles: [PackageTile] = []
        var used = 0
        let levels = try db.query("SELECT DISTINCT z FROM tour_map_tiles WHERE tour_id = ? ORDER BY z", id).map { row throws(RowError) in try row.decode("z", as: Int.self) }
        for z in levels {
            var level: [PackageTile] = []
            var size = 0
            try db.forEachStep("SELECT x, y, jpeg FROM tour_map_tiles WHERE tour_id = ? AND z = ? ORDER BY y, x", [id, z]) { step in
                let jpeg = step.blob(2).base64EncodedString()
                size += jpeg.utf8.count + 48
                level.append(PackageTile(z: z, x: Int(step.int64(0)), y: Int(step.int64(1)), jpeg: jpeg))
            }
            guard used + size <= budget else { return (tiles, false) }
            used += size
            tiles += level
        }
        return (tiles, true)
    }

    /// `library.package`: piece `piece` of one of the caller's packages; `not_found` (field
    /// `package_id`) for another user's, an expired one, or one of a revoked device.
    func packagePiece(_ request: LibraryPieceRequest, user: Int64) throws -> PackagePiece {
        guard request.packageId.utf8.count == LibraryRules.packageIdBytes, request.packageId.utf8.allSatisfy({ (48...57).contains($0) || (97...102).contains($0) }) else {
            throw ServiceError.invalid("package_id", "must be the \(LibraryRules.packageIdBytes) hex digits library.add gave")
        }
        guard
            let row = try db.queryOne(
                "SELECT bytes FROM library_packages WHERE id = ? AND user_id = ? AND created_ms >= ?",
                request.packageId, user, options.clock() - LibraryRules.keptMilliseconds)
        else {
            throw ServiceError(
                .notFound, "you have no package \(request.packageId) (expired, replaced by newer ones, or its device was revoked): call library.add again",
                field: "package_id")
        }
        let bytes: Int = try row.decode("bytes")
        let pieces = max(1, (bytes + LibraryRules.pieceBytes - 1) / LibraryRules.pieceBytes)
        guard (0..<pieces).contains(request.piece) else { throw ServiceError.invalid("piece", "must be 0 to \(pieces - 1)") }
        let offset = request.piece * LibraryRules.pieceBytes
        var data: Data?
        try db.forEachStep("SELECT bytes FROM library_package_pieces WHERE package_id = ? AND piece = ?", [request.packageId, request.piece]) {
            data = $0.blob(0)
        }
        // Deleted between the two reads (a newer package, a revocation): gone, as above.
        guard let data else {
            throw ServiceError(.notFound, "you have no package \(request.packageId) any more: call library.add again", field: "package_id")
        }
        return PackagePiece(packageId: request.packageId, piece: request.piece, offset: offset, data: data.base64EncodedString())
    }

    /// `library.list`: the caller's tours and the places they hold.
    func library(of user: Int64) throws -> LibraryContents {
        let hidden = try db.query("SELECT place_id FROM library_hidden WHERE user_id = ? ORDER BY place_id", user)
            .map { row throws(RowError) in try row.decode("place_id", as: Int64.self) }
        let hiddenSet = Set(hidden)
        let tours = try db.query(
            """
            SELECT l.tour_id, l.added_at, t.name FROM library_tours l LEFT JOIN tours t ON t.id = l.tour_id
            WHERE l.user_id = ? ORDER BY l.tour_id
            """, user
        ).map { row in
            let id: Int64 = try row.decode("tour_id")
            let places = try db.query("SELECT place_id FROM library_places WHERE user_id = ? AND tour_id = ? ORDER BY position", user, id)
                .map { row throws(RowError) in try row.decode("place_id", as: Int64.self) }.filter { !hiddenSet.contains($0) }
            return LibraryTour(tourId: id, name: try row.decode("name"), addedAt: try row.decode("added_at"), places: places)
        }
        let places = try db.query("SELECT DISTINCT place_id FROM library_places WHERE user_id = ? ORDER BY place_id", user)
            .map { row throws(RowError) in try row.decode("place_id", as: Int64.self) }.filter { !hiddenSet.contains($0) }
        return LibraryContents(tours: tours, places: places, hidden: hidden)
    }

    /// `library.remove`: takes a tour out of the caller's library with its packages; places
    /// another of its tours holds stay. `not_found` (field `tour_id`) when it is not there.
    func removeFromLibrary(_ request: LibraryTourRef, user: Int64) throws -> LibraryContents {
        try db.transaction {
            guard try db.scalarInt("SELECT 1 FROM library_tours WHERE user_id = ? AND tour_id = ?", user, request.tourId) != nil else {
                throw ServiceError(.notFound, "tour \(request.tourId) is not in your library", field: "tour_id")
            }
            try db.run("DELETE FROM library_tours WHERE user_id = ? AND tour_id = ?", user, request.tourId)
            try db.run("DELETE FROM library_places WHERE user_id = ? AND tour_id = ?", user, request.tourId)
            try db.run("DELETE FROM library_packages WHERE user_id = ? AND tour_id = ?", user, request.tourId)
            // A hidden place no tour of the library holds any more is forgotten.
            try db.run("DELETE FROM library_hidden WHERE user_id = ? AND place_id NOT IN (SELECT place_id FROM library_places WHERE user_id = ?)", user, user)
            return try library(of: user)
        }
    }

    /// `library.hide`: removes a place from the caller's library: lists and new packages leave
    /// it out. `not_found` (field `place_id`) unless the library holds it.
    func hideInLibrary(_ request: LibraryPlaceRef, user: Int64) throws -> LibraryContents {
        try db.transaction {
            guard try db.scalarInt("SELECT 1 FROM library_places WHERE user_id = ? AND place_id = ?", user, request.placeId) != nil,
                try db.scalarInt("SELECT 1 FROM library_hidden WHERE user_id = ? AND place_id = ?", user, request.placeId) == nil
            else {
                throw ServiceError(.notFound, "place \(request.placeId) is not in your library", field: "place_id")
            }
            try db.run("INSERT INTO library_hidden (user_id, place_id) VALUES (?, ?)", user, request.placeId)
            return try library(of: user)
        }
    }
}
