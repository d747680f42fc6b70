import Bus
@testable import CatalogService
import Contracts
import Foundation
import Geo
import Testing
import TestSupport
import TourMaps
import Uploads

/// Tour maps in the catalog alone, over its real sockets: an upload in chunks, the fit of its
/// control points, tiles cut in the background, and every refusal from the sender's side.
@Suite struct TourMapTests {
    static let stops = [Coordinate(uncheckedLatitude: -33.8568, longitude: 151.2153), Coordinate(uncheckedLatitude: -33.8642, longitude: 151.2166),
                        Coordinate(uncheckedLatitude: -33.8688, longitude: 151.2174)]

    /// Uploads `jpeg` in chunks of `chunk` bytes and commits it; answers the upload id.
    static func upload(_ catalog: CatalogFixture, _ jpeg: Data, chunk: Int = 100_000) throws -> String {
        let begun = try catalog.raw("tours.map.upload.begin", "{}")
        let id = try #require(begun["upload_id"] as? String)
        var offset = 0
        while offset < jpeg.count {
            let piece = jpeg[offset..<min(jpeg.count, offset + chunk)]
            try catalog.raw("tours.map.upload.append", #"{"upload_id":"\#(id)","offset":\#(offset),"chunk":"\#(Data(piece).base64EncodedString())"}"#)
            offset += piece.count
        }
        try catalog.raw("tours.map.upload.commit", #"{"upload_id":"\#(id)"}"#)
        return id
    }

    static func pointsJSON(_ points: [ControlPoint]) -> String {
        "[" + points.map { #"{"x":\#($0.x),"y":\#($0.y),"lat":\#($0.coordinate.latitude),"lon":\#($0.coordinate.longitude)}"# }.joined(separator: ",") + "]"
    }

    /// Checking an upload decodes its image on a reader, not the writer: a write sent just
    /// after the commit of a large map is answered first (on the writer, it waited for the
    /// whole decode).
    @Test func aMapsCheckLeavesTheWriterFree() throws {
        let catalog = try CatalogFixture()
        let jpeg = try #require(RGBImage(width: 7_000, height: 5_000, pixels: [UInt8](repeating: 120, count: 7_000 * 5_000 * 3))).jpeg(progressive: true)
        let begun = try catalog.raw("tours.map.upload.begin", "{}")
        let id = try #require(begun["upload_id"] as? String)
        var offset = 0
        while offset < jpeg.count {
            let piece = jpeg[offset..<min(jpeg.count, offset + 400_000)]
            try catalog.raw("tours.map.upload.append", #"{"upload_id":"\#(id)","offset":\#(offset),"chunk":"\#(Data(piece).base64EncodedString())"}"#)
            offset += piece.count
        }
        let order = Locked<[String]>([])
        let group = DispatchGroup()
        group.enter()
        catalog.client.send(type: "tours.map.upload.commit", body: Data(#"{"upload_id":"\#(id)"}"#.utf8), timeoutMilliseconds: 30_000) { result in
            if case .success = result { order.withLock { $0.append("commit") } }
            group.leave()
        }
        usleep(20_000)
        group.enter()
        let create = try JSONCoding.encoder.encode(PlaceInput(name: "Meanwhile", category: "restaurant", lat: -33.86, lon: 151.21))
        catalog.client.send(type: "catalog.create", body: create, timeoutMilliseconds: 30_000) { result in
            if case .success = result { order.withLock { $0.append("create") } }
            group.leave()
        }
        #expect(group.wait(timeout: .now() + 60) == .success)
        #expect(order.withLock { $0 } == ["create", "commit"])
    }

    @Test func aMapIsUploadedPlacedAndCutIntoTiles() throws {
        let catalog = try CatalogFixture()
        let places = try Self.stops.enumerated().map { try catalog.create("Stop \($0.offset)", lat: $0.element.latitude, lon: $0.element.longitude) }
        let tour = try catalog.client.call("tours.create", TourInput(name: "Walk", stops: places.map(\.id)), as: Tour.self)
        let map = try MapCanvas.draw(stops: Self.stops, width: 900, height: 700)
        let upload = try Self.upload(catalog, map.jpeg, chunk: 40_000)

        let set = try catalog.raw("tours.map.set", #"{"tour_id":\#(tour.id),"upload_id":"\#(upload)","points":\#(Self.pointsJSON(map.controlPoints))}"#)
        #expect(set["width"] as? Int == 900 && set["height"] as? Int == 700 && set["bytes"] as? Int == map.jpeg.count)
        #expect((set["rms_m"] as? Double).map { $0 < 0.5 } == true, "\(set)")
        #expect((set["residuals_m"] as? [Double])?.count == map.controlPoints.count)
        #expect((set["world_file"] as? String)?.split(separator: "\n").count == 6)
        // The transform puts each stop's drawn pixel on the stop (within a metre or so).
        let t = try #require(set["transform"] as? [String: Double])
        for (stop, pixel) in zip(Self.stops, map.stopPixels) {
            let (i, j) = (pixel.x - 0.5, pixel.y - 0.5)
            let lon = t["a"]! * i + t["b"]! * j + t["c"]!, lat = t["d"]! * i + t["e"]! * j + t["f"]!
            #expect(Coordinate(uncheckedLatitude: lat, longitude: lon).distance(to: stop) < 3, "\(lat), \(lon)")
        }
        let levels = try #require(set["levels"] as? [[String: Any]])
        // 900×700 → 4×3 tiles at full size, then 2×2, then one.
        #expect(levels.map { "\($0["columns"] ?? 0)x\($0["rows"] ?? 0)" } == ["1x1", "2x2", "4x3"])

        // The background thread cuts the tiles; until then a tile is `unavailable`.
        var ready = false
        for _ in 0..<200 where !ready {
            ready = try catalog.raw("tours.map.get", #"{"tour_id":\#(tour.id)}"#)["tiles_ready"] as? Bool == true
            if !ready { usleep(50_000) }
        }
        #expect(ready)
        let reply = try catalog.client.request(type: "tours.map.tile", body: Data(#"{"tour_id":\#(tour.id),"z":2,"x":3,"y":2}"#.utf8))
        let tile = try #require(reply.attachments.first)
        #expect(try JPEGImage.check(tile).width == 256)
        let described = try #require(try JSONSerialization.jsonObject(with: reply.bodyJSON) as? [String: Any])
        #expect(described["content_type"] as? String == "image/jpeg" && described["bytes"] as? Int == tile.count)
        #expect(throws: ServiceError.self) { try catalog.raw("tours.map.tile", #"{"tour_id":\#(tour.id),"z":2,"x":4,"y":0}"#) }
        #expect(throws: ServiceError.self) { try catalog.raw("tours.map.tile", #"{"tour_id":\#(tour.id),"z":3,"x":0,"y":0}"#) }

        // An upload is checked once: a second commit would decode the image on the writer again.
        let again = try Self.upload(catalog, map.jpeg, chunk: 400_000)
        #expect(throws: ServiceError.self) { try catalog.raw("tours.map.upload.commit", #"{"upload_id":"\#(again)"}"#) }
        // The upload was used up; deleting the tour takes its map.
        #expect(throws: ServiceError.self) { try catalog.raw("tours.map.upload.commit", #"{"upload_id":"\#(upload)"}"#) }
        try catalog.raw("tours.delete", #"{"id":\#(tour.id)}"#)
        #expect(throws: ServiceError.self) { try catalog.raw("tours.map.get", #"{"tour_id":\#(tour.id)}"#) }
    }

    @Test func badImagesAndBadPointsAreRefusedWithTheirReason() throws {
        let catalog = try CatalogFixture()
        let place = try catalog.create("Stop", lat: -33.86, lon: 151.21)
        let tour = try catalog.client.call("tours.create", TourInput(name: "Walk", stops: [place.id]), as: Tour.self)
        func refusal(_ type: String, _ json: String) -> ServiceError? {
            do {
                try catalog.raw(type, json)
                return nil
            } catch {
                return error
            }
        }
        // Not a JPEG: refused at commit, naming what it is not.
        let begun = try catalog.raw("tours.map.upload.begin", "{}")
        let id = try #require(begun["upload_id"] as? String)
        try catalog.raw("tours.map.upload.append", #"{"upload_id":"\#(id)","chunk":"\#(Data("<svg/>".utf8).base64EncodedString())"}"#)
        #expect(refusal("tours.map.upload.commit", #"{"upload_id":"\#(id)"}"#)?.message.contains("not a JPEG") == true)
        // A refused upload is gone: it could never be used.
        #expect(refusal("tours.map.upload.append", #"{"upload_id":"\#(id)","chunk":"AAAA"}"#)?.code == .notFound)
        // A retried append (same offset) is refused, not doubled.
        let open = try #require(try catalog.raw("tours.map.upload.begin", "{}")["upload_id"] as? String)
        try catalog.raw("tours.map.upload.append", #"{"upload_id":"\#(open)","offset":0,"chunk":"AAAA"}"#)
        #expect(refusal("tours.map.upload.append", #"{"upload_id":"\#(open)","offset":0,"chunk":"AAAA"}"#)?.code == .conflict)
        // A chunk over 512 KiB, and text that is not base64.
        let big = Data(count: Chunks.maxBytes + 1).base64EncodedString()
        let oversized = refusal("tours.map.upload.append", #"{"upload_id":"\#(open)","chunk":"\#(big)"}"#)
        #expect(oversized?.field == "chunk", "\(String(describing: oversized))")
        #expect(refusal("tours.map.upload.append", #"{"upload_id":"\#(open)","chunk":"***"}"#)?.field == "chunk")
        #expect(refusal("tours.map.upload.append", #"{"upload_id":"nope","chunk":"AAAA"}"#)?.code == .notFound)

        // Points: collinear, too few, outside the image, and a fit over the bound.
        let map = try MapCanvas.draw(stops: Self.stops, width: 600, height: 400)
        let good = map.controlPoints
        func set(_ points: [ControlPoint]) throws -> ServiceError? {
            let upload = try Self.upload(catalog, map.jpeg)
            return refusal("tours.map.set", #"{"tour_id":\#(tour.id),"upload_id":"\#(upload)","points":\#(Self.pointsJSON(points))}"#)
        }
        let line = (0..<3).map { i in ControlPoint(x: Double(100 * i), y: Double(100 * i), coordinate: good[i].coordinate) }
        #expect(try set(line)?.message.contains("on one line") == true)
        #expect(try set(Array(good.prefix(2)))?.message.contains("between 3 and 100") == true)
        #expect(try set([ControlPoint(x: 601, y: 0, coordinate: good[0].coordinate)] + good.dropFirst())?.message.contains("outside") == true)
        // One corner placed a kilometre off: the residuals are reported.
        var off = good
        off[0] = ControlPoint(x: off[0].x, y: off[0].y, coordinate: off[0].coordinate.destination(bearingDegrees: 90, distanceMeters: 1_000))
        let far = try set(off)
        #expect(far?.field == "points" && far?.message.contains("RMS residual") == true, "\(String(describing: far))")
        #expect(try set(good) == nil)
    }

    @Test func uploadsAreBoundedInNumberAndSize() throws {
        let catalog = try CatalogFixture()
        var ids: [String] = []
        for _ in 0..<TourMapRules.maxOpenUploads { ids.append(try #require(try catalog.raw("tours.map.upload.begin", "{}")["upload_id"] as? String)) }
        #expect(throws: ServiceError.self) { try catalog.raw("tours.map.upload.begin", "{}") }
        // 30 MB at most, however it is cut: 60 chunks of 512 KiB, then one byte more.
        let chunk = Data(repeating: 0xFF, count: Chunks.maxBytes).base64EncodedString()
        for _ in 0..<(TourMapRules.jpeg.maxBytes / Chunks.maxBytes) {
            try catalog.raw("tours.map.upload.append", #"{"upload_id":"\#(ids[0])","chunk":"\#(chunk)"}"#)
        }
        #expect(throws: ServiceError(.tooLarge, "an image may have at most \(TourMapRules.jpeg.maxBytes) bytes", field: "chunk")) {
            try catalog.raw("tours.map.upload.append", #"{"upload_id":"\#(ids[0])","chunk":"AA=="}"#)
        }
    }
}
