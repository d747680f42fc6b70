import Bus
@testable import CatalogService
import Contracts
import Foundation
import Storage
import Testing
import TourMaps

/// Photos the catalog hosts, over its real sockets: an admin's upload kept in two sizes that
/// fit within 1280 and 320 pixels, listed in the place, served by `catalog.photo`, deleted,
/// and every refusal from the sender's side.
@Suite struct PlacePhotoTests {
    /// A `width`×`height` JPEG: the demo's drawing of a park (16 to 4096 pixels a side).
    static func jpeg(width: Int, height: Int) throws -> Data {
        try PlaceDrawing.jpeg(category: "park", seed: "\(width)x\(height)", width: width, height: height)
    }

    /// `catalog.photo`'s reply and its JPEG, checked.
    static func photo(_ catalog: CatalogFixture, place: Int64, photo: Int64, size: Int) throws -> (reply: [String: Any], image: JPEGImage) {
        let reply = try catalog.client.request(type: "catalog.photo", body: Data(#"{"place_id":\#(place),"photo_id":\#(photo),"size":\#(size)}"#.utf8))
        let body = try #require(try JSONSerialization.jsonObject(with: reply.bodyJSON) as? [String: Any])
        return (body, try JPEGImage.check(try #require(reply.attachments.first)))
    }

    static func error(_ body: () throws -> Any) -> ServiceError? {
        do {
            _ = try body()
            return nil
        } catch {
            return error as? ServiceError
        }
    }

    @Test func aPhotoIsKeptInTwoSizesListedInItsPlaceAndDeleted() throws {
        let catalog = try CatalogFixture()
        let place = try catalog.create("Opera Bar", category: "bar")
        let upload = try TourMapTests.upload(catalog, try Self.jpeg(width: 1600, height: 900))
        let added = try catalog.raw(
            "catalog.photo.add", #"{"place_id":\#(place.id),"upload_id":"\#(upload)","attribution":" A drawing ","caption":"The bar at dusk"}"#)
        let hosted = try #require(added["hosted_photos"] as? [[String: Any]])
        #expect(hosted.count == 1 && added["version"] as? Int == 2)
        let first = try #require(hosted.first)
        let id = try #require(first["id"] as? Int64)
        #expect(first["width"] as? Int == 1280 && first["height"] as? Int == 720)
        #expect(first["attribution"] as? String == "A drawing" && first["caption"] as? String == "The bar at dusk")
        // What catalog.get answers is what was stored and published.
        let got = try catalog.client.call("catalog.get", PlaceID(id: place.id), as: Place.self)
        #expect(got.hostedPhotos == [HostedPhoto(id: id, width: 1280, height: 720, attribution: "A drawing", caption: "The bar at dusk")])

        let large = try Self.photo(catalog, place: place.id, photo: id, size: 1280)
        #expect(large.image.width == 1280 && large.image.height == 720)
        #expect(large.reply["width"] as? Int == 1280 && large.reply["content_type"] as? String == "image/jpeg")
        let small = try Self.photo(catalog, place: place.id, photo: id, size: 320)
        #expect(small.image.width == 320 && small.image.height == 180 && small.reply["height"] as? Int == 180)

        // The upload was used up.
        #expect(Self.error { try catalog.raw("catalog.photo.add", #"{"place_id":\#(place.id),"upload_id":"\#(upload)"}"#) }?.field == "upload_id")

        let deleted = try catalog.raw("catalog.photo.delete", #"{"place_id":\#(place.id),"photo_id":\#(id)}"#)
        #expect(deleted["hosted_photos"] == nil && deleted["version"] as? Int == 3)
        #expect(Self.error { try Self.photo(catalog, place: place.id, photo: id, size: 320) }?.code == .notFound)
        #expect(Self.error { try catalog.raw("catalog.photo.delete", #"{"place_id":\#(place.id),"photo_id":\#(id)}"#) }?.field == "photo_id")
    }

    @Test func aSmallPhotoIsNeverEnlargedAndATallOneKeepsItsShape() throws {
        let catalog = try CatalogFixture()
        let place = try catalog.create("Gelato", category: "cafe")
        let small = try catalog.raw("catalog.photo.add", #"{"place_id":\#(place.id),"upload_id":"\#(try TourMapTests.upload(catalog, try Self.jpeg(width: 300, height: 200)))"}"#)
        let tall = try catalog.raw("catalog.photo.add", #"{"place_id":\#(place.id),"upload_id":"\#(try TourMapTests.upload(catalog, try Self.jpeg(width: 1000, height: 2000)))"}"#)
        let hosted = try #require(tall["hosted_photos"] as? [[String: Any]])
        #expect(hosted.map { "\($0["width"] ?? 0)x\($0["height"] ?? 0)" } == ["300x200", "640x1280"])
        #expect((small["hosted_photos"] as? [[String: Any]])?.count == 1)
        let ids = hosted.compactMap { $0["id"] as? Int64 }
        #expect(try Self.photo(catalog, place: place.id, photo: ids[0], size: 320).image.width == 300)
        let tallSmall = try Self.photo(catalog, place: place.id, photo: ids[1], size: 320).image
        #expect(tallSmall.width == 160 && tallSmall.height == 320)
        // A photo is found only under its own place; deleting the place takes its photos.
        let other = try catalog.create("Elsewhere")
        #expect(Self.error { try Self.photo(catalog, place: other.id, photo: ids[0], size: 320) }?.field == "photo_id")
        try catalog.raw("catalog.delete", #"{"id":\#(place.id)}"#)
        #expect(Self.error { try Self.photo(catalog, place: place.id, photo: ids[0], size: 320) }?.code == .notFound)
        #expect(try Database(path: catalog.config.resolvedDatabasePath).scalarInt("SELECT count(*) FROM place_photos") == 0)
    }

    @Test func refusalsNameTheirField() throws {
        let catalog = try CatalogFixture()
        let place = try catalog.create("Refusals")
        let jpeg = try Self.jpeg(width: 64, height: 48)
        func refusal(_ method: String, _ body: String) -> ServiceError? { Self.error { try catalog.raw(method, body) } }

        // An upload not committed yet, none at all, and no such place.
        let begun = try #require(try catalog.raw("tours.map.upload.begin", "{}")["upload_id"] as? String)
        try catalog.raw("tours.map.upload.append", #"{"upload_id":"\#(begun)","offset":0,"chunk":"\#(jpeg.base64EncodedString())"}"#)
        let uncommitted = refusal("catalog.photo.add", #"{"place_id":\#(place.id),"upload_id":"\#(begun)"}"#)
        #expect(uncommitted?.code == .conflict && uncommitted?.field == "upload_id")
        #expect(refusal("catalog.photo.add", #"{"place_id":\#(place.id),"upload_id":"nope"}"#)?.field == "upload_id")
        let upload = try TourMapTests.upload(catalog, jpeg)
        let noPlace = refusal("catalog.photo.add", #"{"place_id":999,"upload_id":"\#(upload)"}"#)
        #expect(noPlace?.code == .notFound && noPlace?.field == "place_id")
        // Texts as a place's: one line each, at most 300 characters.
        #expect(refusal("catalog.photo.add", #"{"place_id":\#(place.id),"upload_id":"\#(upload)","caption":"two\nlines"}"#)?.field == "caption")
        let long = String(repeating: "é", count: 301)
        #expect(refusal("catalog.photo.add", #"{"place_id":\#(place.id),"upload_id":"\#(upload)","attribution":"\#(long)"}"#)?.field == "attribution")
        #expect(refusal("catalog.photo.add", #"{"place_id":\#(place.id),"upload_id":"\#(upload)","captoin":"x"}"#)?.field == "captoin")
        // A strip wider than 8:1 is a map's business, not a photo's (the map upload took it).
        let strip = try TourMapTests.upload(catalog, try Self.jpeg(width: 1800, height: 200))
        #expect(refusal("catalog.photo.add", #"{"place_id":\#(place.id),"upload_id":"\#(strip)"}"#)?.field == "upload_id")
        // A refused image takes its upload with it: it could never be used, and would hold one
        // of the 16 open uploads for an hour. So does a commit refused. (The next begin deletes them.)
        #expect(refusal("catalog.photo.add", #"{"place_id":\#(place.id),"upload_id":"\#(strip)"}"#)?.code == .notFound)
        let broken = try #require(try catalog.raw("tours.map.upload.begin", "{}")["upload_id"] as? String)
        try catalog.raw("tours.map.upload.append", #"{"upload_id":"\#(broken)","offset":0,"chunk":"\#(jpeg.prefix(jpeg.count / 2).base64EncodedString())"}"#)
        #expect(refusal("tours.map.upload.commit", #"{"upload_id":"\#(broken)"}"#)?.code == .invalidArgument)
        #expect(refusal("tours.map.upload.commit", #"{"upload_id":"\#(broken)"}"#)?.code == .notFound)
        // Sizes: only 1280 and 320, and delete takes none.
        // Texts of nothing but spaces are left out.
        let added = try catalog.raw("catalog.photo.add", #"{"place_id":\#(place.id),"upload_id":"\#(upload)","caption":"   ","attribution":""}"#)
        let first = try #require((added["hosted_photos"] as? [[String: Any]])?.first)
        #expect(first["caption"] == nil && first["attribution"] == nil, "\(first)")
        let id = try #require(first["id"] as? Int64)
        #expect(refusal("catalog.photo", #"{"place_id":\#(place.id),"photo_id":\#(id),"size":512}"#)?.field == "size")
        #expect(refusal("catalog.photo", #"{"place_id":\#(place.id),"photo_id":\#(id)}"#)?.field == "size")
        #expect(refusal("catalog.photo.delete", #"{"place_id":\#(place.id),"photo_id":\#(id),"size":320}"#)?.field == "size")
    }

    /// Refused images hold no slot of the 16 open uploads: 20 refused in a row, and the next begins.
    @Test func refusedUploadsDoNotFillTheOpenSlots() throws {
        let catalog = try CatalogFixture()
        for _ in 0..<(TourMapRules.maxOpenUploads + 4) {
            let id = try #require(try catalog.raw("tours.map.upload.begin", "{}")["upload_id"] as? String)
            try catalog.raw("tours.map.upload.append", #"{"upload_id":"\#(id)","chunk":"\#(Data("<svg/>".utf8).base64EncodedString())"}"#)
            #expect(Self.error { try catalog.raw("tours.map.upload.commit", #"{"upload_id":"\#(id)"}"#) }?.code == .invalidArgument)
        }
        #expect(try catalog.raw("tours.map.upload.begin", "{}")["upload_id"] is String)
    }

    @Test func aPlaceHoldsAtMostTwentyPhotos() throws {
        let catalog = try CatalogFixture()
        let place = try catalog.create("Busy")
        let jpeg = try Self.jpeg(width: 32, height: 32)
        for _ in 0..<PlacePhotoRules.maxPerPlace {
            try catalog.raw("catalog.photo.add", #"{"place_id":\#(place.id),"upload_id":"\#(try TourMapTests.upload(catalog, jpeg))"}"#)
        }
        let upload = try TourMapTests.upload(catalog, jpeg)
        let refused = Self.error { try catalog.raw("catalog.photo.add", #"{"place_id":\#(place.id),"upload_id":"\#(upload)"}"#) }
        #expect(refused?.code == .invalidArgument && refused?.field == "place_id")
        #expect(try catalog.client.call("catalog.get", PlaceID(id: place.id), as: Place.self).hostedPhotos?.count == PlacePhotoRules.maxPerPlace)
    }
}
