import Bus
import Contracts
import Foundation
import Storage
import TourMaps
import Uploads

// Place photos the catalog hosts: a JPEG an admin uploaded (`tours.map.upload.*`), checked and
// kept in two sizes that fit within 1280 and 320 pixels, served by `catalog.photo` and as plain
// GETs through the gateway. A place lists them in `hosted_photos`.

/// The bounds of hosted photos and the versions kept.
enum PlacePhotoRules {
    /// A photo's JPEG: as a profile photo's (10 MiB, 40 megapixels, 64 scans, a progressive one
    /// at most 8 megapixels), at most 8:1 (a panorama), and at most 16,777,216 pixels as decoded
    /// (48 MB) at the scale its 1280-pixel version decodes at.
    static let jpeg = JPEGLimits(
        maxBytes: 10 * 1_024 * 1_024, maxAspectRatio: 8, maxProgressivePixels: 8_000_000, maxDecodedPixels: 4_096 * 4_096)
    /// Hosted photos one place may have.
    static let maxPerPlace = 20
    /// The JPEG quality of the kept versions (4:2:0, as photos are).
    static let quality = 85
}

extension CatalogStore {
    /// `catalog.photo.add`: decodes committed upload `upload_id` into its two sizes and adds
    /// it to the place's `hosted_photos`; the upload is used up, and so is one whose image is
    /// refused. Answers the place's JSON, which is also published. It runs on a reader, not
    /// the writer: the place and the upload are read, the image decoded and encoded outside
    /// any transaction (one image at a time: `decoding`), and the photo stored in a short
    /// transaction of its own, where the place and the upload are read again.
    func addPhoto(_ request: PlacePhotoAdd) throws -> Data {
        try PlaceTexts.photoAttribution.check(request.attribution)
        try PlaceTexts.photoCaption.check(request.caption)
        /// The place, with room for one more photo, and the committed upload's size.
        func ready() throws -> (place: Place, bytes: Int) {
            let current = try place(request.placeId, field: "place_id")
            guard (current.hostedPhotos?.count ?? 0) < PlacePhotoRules.maxPerPlace else {
                throw ServiceError.invalid("place_id", "place \(request.placeId) has \(PlacePhotoRules.maxPerPlace) hosted photos already: delete one first")
            }
            let upload = try openUpload(request.uploadId)
            guard upload.committed else {
                throw ServiceError(.conflict, "commit upload \(request.uploadId) first (tours.map.upload.commit)", field: "upload_id")
            }
            return (current, upload.bytes)
        }
        let (read, jpeg) = try db.transaction(.deferred) { (try ready(), try TourMapRules.uploads.bytes(db, request.uploadId)) }
        let versions: [(jpeg: Data, width: Int, height: Int)]
        do {
            versions = try decoding.run(
                readers: worker.config.readers, refusal: TourMapRules.busyDecoding
            ) { try JPEGImage.fitted(of: jpeg, limits: PlacePhotoRules.jpeg, longest: HostedPhoto.sizes, quality: PlacePhotoRules.quality) }
        } catch let error as JPEGError {
            // Refused for good: the upload goes, in a transaction of its own.
            try db.transaction(.immediate) { try TourMapRules.uploads.delete(db, request.uploadId) }
            throw ChunkedUploads.refusal(error, image: "the photo")
        }
        guard versions.count == 2, let large = versions.first, let small = versions.last else {
            throw ServiceError(.internal, "the photo was cut into \(versions.count) sizes, not 2")
        }
        return try db.transaction(.immediate) {
            let (current, bytes) = try ready()
            guard bytes == read.bytes else {
                throw ServiceError(.conflict, "upload \(request.uploadId) changed while it was read: add it again", field: "upload_id")
            }
            try db.run(
                """
                INSERT INTO place_photos (place_id, width, height, jpeg_1280, small_width, small_height, jpeg_320, created_at)
                VALUES (?, ?, ?, ?, ?, ?, ?, ?)
                """, request.placeId, large.width, large.height, large.jpeg, small.width, small.height, small.jpeg, Logger.timestamp())
            let photo = HostedPhoto(
                id: db.lastInsertRowID, width: large.width, height: large.height,
                attribution: Self.text(request.attribution), caption: Self.text(request.caption))
            try TourMapRules.uploads.delete(db, request.uploadId)
            var changed = current
            changed.hostedPhotos = (current.hostedPhotos ?? []) + [photo]
            return try store(&changed, over: current)
        }
    }

    /// A photo's text trimmed, or nil when nothing is left of it.
    private static func text(_ value: String?) -> String? {
        value.map(PlaceRules.trimmed).flatMap { $0.isEmpty ? nil : $0 }
    }

    /// `catalog.photo`: one size of a hosted photo, with its reply.
    func photo(_ request: PlacePhotoRef) throws -> (reply: PlacePhotoReply, jpeg: Data) {
        guard let size = request.size else { throw ServiceError(.invalidArgument, "missing required field size", field: "size") }
        guard HostedPhoto.sizes.contains(size) else { throw ServiceError.invalid("size", "must be 1280 or 320") }
        let (width, height) = size == HostedPhoto.sizes[0] ? ("width", "height") : ("small_width", "small_height")
        guard
            let row = try db.queryOne(
                "SELECT \(width) AS w, \(height) AS h, jpeg_\(size) AS jpeg FROM place_photos WHERE id = ? AND place_id = ?",
                request.photoId, request.placeId)
        else { throw Self.noPhoto(request) }
        let jpeg: Data = try row.decode("jpeg")
        let reply = PlacePhotoReply(
            placeId: request.placeId, photoId: request.photoId, size: size, width: try row.decode("w"), height: try row.decode("h"), bytes: jpeg.count)
        return (reply, jpeg)
    }

    /// `catalog.photo.delete`: removes a hosted photo from its place; answers the place's JSON.
    func deletePhoto(_ request: PlacePhotoRef) throws -> Data {
        guard request.size == nil else { throw ServiceError.invalid("size", "catalog.photo.delete deletes every size: leave size out") }
        return try db.transaction {
            let current = try place(request.placeId, field: "place_id")
            try db.run("DELETE FROM place_photos WHERE id = ? AND place_id = ?", request.photoId, request.placeId)
            guard db.changes == 1 else { throw Self.noPhoto(request) }
            var changed = current
            let kept = (current.hostedPhotos ?? []).filter { $0.id != request.photoId }
            changed.hostedPhotos = kept.isEmpty ? nil : kept
            return try store(&changed, over: current)
        }
    }

    /// Place `id`, or `not_found` naming `field`.
    private func place(_ id: Int64, field: String) throws -> Place {
        do {
            return try get(id)
        } catch let error as ServiceError where error.code == .notFound {
            throw ServiceError(.notFound, "no place with id \(id)", field: field)
        }
    }

    private static func noPhoto(_ request: PlacePhotoRef) -> ServiceError {
        ServiceError(.notFound, "place \(request.placeId) has no hosted photo \(request.photoId)", field: "photo_id")
    }
}
