import Bus
import Foundation
import Geo
import Testing
import TestSupport
import TourMaps

/// Tour maps through the gateway with the real executables: an admin uploads and places a map,
/// and any client reads its tiles, raw over RESP and as base64 over JSON-RPC.
@Suite(.serialized) struct TourMapSuiteTests {
    @Test func tilesAreRawBytesOverRESPAndBase64OverJSONRPC() throws {
        let suite = try SuiteFixture()
        let admin = try suite.adminConnection()
        let stops = [Coordinate(uncheckedLatitude: -33.8568, longitude: 151.2153), Coordinate(uncheckedLatitude: -33.8642, longitude: 151.2166),
                     Coordinate(uncheckedLatitude: -33.8688, longitude: 151.2174)]
        let ids = stops.enumerated().map { i, stop in
            admin.rpc("catalog.create", #"{"name":"Stop \#(i)","category":"attraction","lat":\#(stop.latitude),"lon":\#(stop.longitude)}"#).field("id", Int.self) ?? 0
        }
        let tour = admin.rpc("tours.create", #"{"name":"Walk","stops":\#(ids)}"#).field("id", Int.self) ?? 0
        #expect(tour > 0)
        let map = try MapCanvas.draw(stops: stops, width: 700, height: 500)
        let upload = admin.rpc("tours.map.upload.begin").field("upload_id", String.self) ?? ""
        // Chunks of at most 512 KiB, in order; this map takes one.
        #expect(admin.rpc("tours.map.upload.append", #"{"upload_id":"\#(upload)","chunk":"\#(map.jpeg.base64EncodedString())"}"#).succeeded)
        #expect(admin.rpc("tours.map.upload.commit", #"{"upload_id":"\#(upload)"}"#).field("width", Int.self) == 700)
        let points = "[" + map.controlPoints.map { #"{"x":\#($0.x),"y":\#($0.y),"lat":\#($0.coordinate.latitude),"lon":\#($0.coordinate.longitude)}"# }.joined(separator: ",") + "]"
        #expect(admin.rpc("tours.map.set", #"{"tour_id":\#(tour),"upload_id":"\#(upload)","points":\#(points)}"#).succeeded)

        // Anyone reads the map; a user may not place one.
        let visitor = try GatewayConnection(port: suite.port)
        var ready = false
        for _ in 0..<200 where !ready {
            ready = visitor.rpc("tours.map.get", #"{"tour_id":\#(tour)}"#).field("tiles_ready", Bool.self) == true
            if !ready { usleep(50_000) }
        }
        #expect(ready)
        #expect(errorCode(visitor.rpc("tours.map.upload.begin").line) != nil)

        let base64 = visitor.rpc("tours.map.tile", #"{"tour_id":\#(tour),"z":2,"x":2,"y":1}"#)
        #expect(base64.succeeded, "\(base64.line)")
        let fromJSON = try #require(json(base64.line)["result"] as? String, "\(base64.line)").flatMap { Data(base64Encoded: $0) }
        let tile = try #require(fromJSON)
        #expect(try JPEGImage.check(tile).width == 256)
        // A connection speaks the framing of its first byte: RESP on a new one.
        let redis = try GatewayConnection(port: suite.port)
        redis.send(GatewayConnection.resp(["tours.map.tile", #"{"tour_id":\#(tour),"z":2,"x":2,"y":1}"#]))
        #expect(redis.respBytes() == Array(tile))
    }
}
