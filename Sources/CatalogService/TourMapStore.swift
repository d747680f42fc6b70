import Bus
import Contracts
import Foundation
import Geo
import Sealing
import ServiceKit
import Storage
import TourMaps
import Uploads

// Tour maps: a JPEG uploaded in chunks, tied to the Earth by control points, and delivered to
// phones as 256×256 tiles that a background thread cuts once the map is set.

/// The catalog's own options (`tourbus-catalog` flags).
public struct CatalogOptions: Sendable {
    /// `tours.map.set` refuses control points whose RMS residual is over this (`--map-max-rms-m`).
    public var mapMaxRMSMeters = 25.0
    /// The time in milliseconds since 1970: when a walker was located (`tours.locate`'s
    /// headings). Tests move it by hand.
    public var clock: @Sendable () -> Int64 = { Int64((Date().timeIntervalSince1970 * 1000).rounded(.down)) }
    /// How long an erased user's `tours.locate` is refused after `social.user.deleted`: far
    /// longer than a gateway caches a token (2 s) or a request may wait (its deadline).
    public var erasedUserWindowMs: Int64 = 600_000
    /// The server's Ed25519 key, which signs `library.add`'s packages (`--signing-key FILE`);
    /// without one the library makes no packages (`unavailable`).
    public var signingKey: SigningKey?
    /// The most bytes of a package's JSON before sealing (8 MiB): map tile levels go in whole,
    /// coarsest first, while they fit; the rest stays on `tours.map.tile`.
    public var packageMaxBytes = 8 * 1_024 * 1_024
    /// The interface strings `strings.get` answers (`--strings-dir`); nil: it answers `unavailable`.
    public var strings: InterfaceStrings? = nil
    /// The IANA zone a place with seasons and no `timezone` of its own is given when written
    /// (`--default-timezone`, `TOURBUS_DEFAULT_TIMEZONE`; UTC by default).
    public var defaultTimezone = "UTC"
    /// Stops one `tours.list near` page reads, at most (`ToursNear`).
    public var toursNearReadBudget = ToursNear.readBudget
    /// An import writing more rows than this (new places, new tours' stops, and changed places)
    /// is written in slices that readers do not see until the last (ImportApply.swift); a
    /// smaller one at once.
    public var importAtOnceRows = 2_000
    /// One slice: at most this many rows, and it stops once it has taken this long; the next
    /// comes this long after it (the writer is the others' in between).
    public var importSliceRows = 5_000
    public var importSliceMilliseconds = 10
    public var importStepMilliseconds = 15

    public init() {}
}

/// The bounds of uploads and maps.
enum TourMapRules {
    static let jpeg = JPEGLimits()
    /// An image check (a map's or a place photo's) that finds another under way.
    static let busyDecoding = ServiceError(.unavailable, "busy checking another image; try again in a moment")
    /// Uploads begun and not yet used (by `tours.map.set` or `catalog.photo.add`), at most; each
    /// expires an hour after it begins.
    static let maxOpenUploads = 16
    /// Tiles written per transaction by the builder, so the writer never waits long.
    static let tilesPerTransaction = 32
    /// Uploads of map images and place photos, in `map_uploads` and `map_upload_chunks`; no
    /// owner (admins upload).
    static let uploads = ChunkedUploads(
        table: "map_uploads", chunkTable: "map_upload_chunks", maxBytes: jpeg.maxBytes,
        maxOpen: maxOpenUploads, noun: "an image", usedBy: "\(Methods.Tours.mapSet.name) or \(Methods.Catalog.photoAdd.name)")
}

extension CatalogStore {
    // MARK: Uploads (begun and appended on the writer; checked on a reader)

    private var nowSeconds: Int64 { Int64(Date().timeIntervalSince1970) }

    func beginUpload() throws -> MapUpload {
        try db.transaction {
            let begun = try TourMapRules.uploads.begin(db, owner: nil, now: nowSeconds)
            return MapUpload(uploadId: begun, bytes: 0)
        }
    }

    func appendUpload(_ request: UploadChunk) throws -> MapUpload {
        let chunk = try Chunks.decode(request.chunk)
        return try db.transaction {
            let bytes = try TourMapRules.uploads.append(db, request.uploadId, owner: nil, chunk: chunk, offset: request.offset, now: nowSeconds)
            return MapUpload(uploadId: request.uploadId, bytes: bytes)
        }
    }

    /// Checks the whole image (libjpeg-turbo decodes it once) and marks the upload ready for
    /// `tours.map.set`; an image refused takes its upload with it (it can never be used).
    ///
    /// It runs on a reader, not the writer: the bytes are read, the image decoded (up to a few
    /// seconds for a large progressive one) outside any transaction, one at a time
    /// (`decoding`: a second check meanwhile is `unavailable`), and only then is the upload
    /// marked, in its own short transaction, if it is still the one checked.
    func commitUpload(_ id: String) throws -> MapUpload {
        let (upload, bytes) = try db.transaction(.deferred) {
            let upload = try openUpload(id)
            // Checked once: each check decodes the image.
            guard !upload.committed else { throw ServiceError(.conflict, "upload \(id) is committed already", field: "upload_id") }
            return (upload, try uploadBytes(id))
        }
        let image: JPEGImage
        do {
            image = try decoding.run(
                readers: worker.config.readers, refusal: TourMapRules.busyDecoding
            ) { try JPEGImage.check(bytes, limits: TourMapRules.jpeg) }
        } catch let error as JPEGError {
            // Refused for good: the upload goes, in a transaction of its own (no group commit to undo it).
            try db.transaction(.immediate) { try TourMapRules.uploads.delete(db, id) }
            throw ChunkedUploads.refusal(error, image: "the map image")
        }
        return try db.transaction(.immediate) {
            let now = try openUpload(id)
            guard !now.committed else { throw ServiceError(.conflict, "upload \(id) is committed already", field: "upload_id") }
            guard now.bytes == upload.bytes else { throw ServiceError(.conflict, "upload \(id) changed while it was checked: commit again", field: "upload_id") }
            try db.run("UPDATE map_uploads SET committed = 1, width = ?, height = ? WHERE id = ?", image.width, image.height, id)
            return MapUpload(uploadId: id, bytes: upload.bytes, width: image.width, height: image.height)
        }
    }

    /// Upload `id`, not expired (a refused one is deleted), or `not_found`.
    func openUpload(_ id: String) throws -> ChunkedUploads.Upload {
        return try TourMapRules.uploads.open(db, id, owner: nil, now: nowSeconds)
    }

    private func uploadBytes(_ id: String) throws -> Data { try TourMapRules.uploads.bytes(db, id) }

    // MARK: Maps

    /// Makes a committed upload tour `tourId`'s map (replacing any it had), placed by the fit
    /// of `points`; its tiles are cut in the background (`tiles_ready` says when).
    func setMap(_ request: MapSet, maxRMSMeters: Double) throws -> TourMapInfo {
        guard request.points.count <= 100 else { throw ServiceError.invalid("points", "at most 100 control points") }
        let points: [ControlPoint] = try request.points.enumerated().map { i, point in
            do {
                return ControlPoint(x: point.x, y: point.y, coordinate: try Coordinate(latitude: point.lat, longitude: point.lon))
            } catch {
                throw ServiceError.invalid("points[\(i)]", "\(error)")
            }
        }
        return try db.transaction {
            _ = try tour(request.tourId, field: "tour_id")
            let upload = try openUpload(request.uploadId)
            guard upload.committed, let row = try db.queryOne("SELECT width, height FROM map_uploads WHERE id = ?", request.uploadId) else {
                throw ServiceError(.conflict, "commit upload \(request.uploadId) first (tours.map.upload.commit)", field: "upload_id")
            }
            let (width, height) = (try row.decode("width", as: Int.self), try row.decode("height", as: Int.self))
            let georeference: MapGeoreference
            do throws(AffineFitError) {
                georeference = try MapGeoreference.fit(points, width: width, height: height, limits: AffineFitLimits(maxRMSMeters: maxRMSMeters))
            } catch {
                throw ServiceError.invalid("points", error.description)
            }
            try writeMap(tourId: request.tourId, jpeg: try uploadBytes(request.uploadId), points: request.points, georeference: georeference)
            try db.run("DELETE FROM map_uploads WHERE id = ?", request.uploadId)
            return try mapInfo(request.tourId)
        }
    }

    /// Makes `jpeg` (checked) tour `tourId`'s map, placed by `georeference`, in the caller's
    /// transaction: its old tiles go, and the tile cutter (once woken) cuts the new ones.
    func writeMap(tourId: Int64, jpeg: Data, points: [MapSet.Point], georeference: MapGeoreference) throws {
        let generation = (try db.scalarInt("SELECT generation FROM tour_maps WHERE tour_id = ?", tourId) ?? 0) + 1
        try db.run("DELETE FROM tour_map_tiles WHERE tour_id = ?", tourId)
        try db.run(
            """
            INSERT OR REPLACE INTO tour_maps (tour_id, generation, jpeg, width, height, points, georeference, tiles_ready, updated_at)
            VALUES (?, ?, ?, ?, ?, ?, ?, 0, ?)
            """, tourId, generation, jpeg, georeference.width, georeference.height,
            String(decoding: try JSONCoding.encoder.encode(points), as: UTF8.self),
            String(decoding: try JSONCoding.encoder.encode(georeference), as: UTF8.self), Logger.timestamp())
    }

    /// `tours.map.get`: the map's size, control points, fit and tiles, or `not_found`.
    func mapInfo(_ tourId: Int64) throws -> TourMapInfo {
        guard
            let row = try db.queryOne(
                """
                SELECT width, height, length(jpeg) AS bytes, points, georeference, tiles_ready FROM tour_maps WHERE tour_id = ?
                """, tourId)
        else {
            throw ServiceError(.notFound, "tour \(tourId) has no map", field: "tour_id")
        }
        let georeference = try georeference(row)
        let (width, height): (Int, Int) = (try row.decode("width"), try row.decode("height"))
        return TourMapInfo(
            tourId: tourId, width: width, height: height, bytes: try row.decode("bytes"),
            points: try JSONCoding.decoder.decode([MapSet.Point].self, from: Data(try row.decode("points", as: String.self).utf8)),
            residualsM: georeference.residualsMeters, rmsM: georeference.rmsMeters, transform: MapTransform(georeference.pixelIndexToDegrees),
            worldFile: georeference.worldFile, tileSize: TilePyramid.tileSize,
            levels: TilePyramid.levels(width: width, height: height).map {
                TourMapInfo.Level(z: $0.z, width: $0.width, height: $0.height, columns: $0.columns, rows: $0.rows)
            },
            tilesReady: try row.decode("tiles_ready", as: Int.self) != 0)
    }

    /// The fit stored with a map (as `MapGeoreference.fit` made it).
    func georeference(_ row: Row) throws -> MapGeoreference {
        try JSONCoding.decoder.decode(MapGeoreference.self, from: Data(try row.decode("georeference", as: String.self).utf8))
    }

    /// `tours.map.tile`: one tile's JPEG, once the tiles are cut.
    func mapTile(_ request: MapTileRequest) throws -> Data {
        guard let z = request.z, let x = request.x, let y = request.y else {
            throw ServiceError.invalid(request.z == nil ? "z" : request.x == nil ? "x" : "y", "give z, x and y")
        }
        guard let ready = try db.scalarInt("SELECT tiles_ready FROM tour_maps WHERE tour_id = ?", request.tourId) else {
            throw ServiceError(.notFound, "tour \(request.tourId) has no map", field: "tour_id")
        }
        guard ready != 0 else {
            throw ServiceError(.unavailable, "the map's tiles are still being cut: tiles_ready in tours.map.get says when they are")
        }
        var tile: Data?
        try db.forEachStep("SELECT jpeg FROM tour_map_tiles WHERE tour_id = ? AND z = ? AND x = ? AND y = ?", [request.tourId, z, x, y]) {
            tile = $0.blob(0)
        }
        guard let tile else { throw ServiceError(.notFound, "tour \(request.tourId)'s map has no tile z=\(z) x=\(x) y=\(y)", field: "z") }
        return tile
    }
}

/// Cuts the tiles of maps that have none yet, one map per step, on the catalog's background
/// thread: a map decoded once, its tiles written a few per transaction, marked ready at the end.
/// A map replaced meanwhile (a new generation) is left for its own turn.
enum TileCutter {
    static func step(_ db: Database, _ signal: BackgroundSignal) throws -> Bool {
        // The map set longest ago first: one set again and again waits behind the others.
        guard let row = try db.queryOne("SELECT tour_id, generation FROM tour_maps WHERE tiles_ready = 0 ORDER BY updated_at, tour_id LIMIT 1") else {
            return false
        }
        let (tourId, generation): (Int64, Int64) = (try row.decode("tour_id"), try row.decode("generation"))
        var jpeg = Data()
        try db.forEachStep("SELECT jpeg FROM tour_maps WHERE tour_id = ? AND generation = ?", [tourId, generation]) {
            jpeg = $0.blob(0)
        }
        func current() throws -> Bool {
            try db.scalarInt("SELECT 1 FROM tour_maps WHERE tour_id = ? AND generation = ?", tourId, generation) != nil
        }
        let pyramid = try TilePyramid(jpeg: jpeg, limits: TourMapRules.jpeg)
        var batch: [MapTile] = []
        func flush() throws -> Bool {
            let written = try db.transaction { () -> Bool in
                guard try current() else { return false }
                for tile in batch {
                    try db.run(
                        "INSERT OR REPLACE INTO tour_map_tiles (tour_id, generation, z, x, y, jpeg) VALUES (?, ?, ?, ?, ?, ?)",
                        tourId, generation, tile.z, tile.x, tile.y, tile.jpeg)
                }
                return true
            }
            batch.removeAll(keepingCapacity: true)
            return written
        }
        while let tile = try pyramid.nextTile() {
            if signal.isStopping { return false }
            batch.append(tile)
            if batch.count == TourMapRules.tilesPerTransaction, try !flush() { return true }
        }
        guard try flush() else { return true }
        try db.run("UPDATE tour_maps SET tiles_ready = 1 WHERE tour_id = ? AND generation = ?", tourId, generation)
        return true
    }
}

extension MapTransform {
    init(_ affine: Affine2D) {
        self.init(a: affine.a, b: affine.b, c: affine.c, d: affine.d, e: affine.e, f: affine.f)
    }
}
