import Bus
import Foundation
import Testing
import TestSupport
import TourMaps

/// Profile photos through the gateway with the real executables: a user uploads one, and
/// anyone reads its squares, raw over RESP and as base64 over JSON-RPC.
@Suite(.serialized) struct PhotoSuiteTests {
    @Test func photosAreRawBytesOverRESPAndBase64OverJSONRPC() throws {
        let suite = try SuiteFixture()
        let owner = try suite.adminConnection()
        let side = 700
        let image = try #require(RGBImage(width: side, height: side, pixels: (0..<(side * side * 3)).map { UInt8(($0 / 3) % side * 255 / (side - 1)) }))
        let jpeg = try image.jpeg(quality: 80)
        let upload = owner.rpc("profile.photo.upload.begin").field("upload_id", String.self) ?? ""
        #expect(owner.rpc("profile.photo.upload.append", #"{"upload_id":"\#(upload)","offset":0,"chunk":"\#(jpeg.base64EncodedString())"}"#).succeeded)
        let committed = owner.rpc("profile.photo.upload.commit", #"{"upload_id":"\#(upload)"}"#)
        #expect(committed.succeeded, "\(committed.line)")
        let ownerId = owner.rpc("profile.get").field("id", Int.self) ?? 0

        // Anyone, signed in or not, reads it; only a signed-in user uploads.
        let visitor = try GatewayConnection(port: suite.port)
        #expect(errorCode(visitor.rpc("profile.photo.upload.begin").line) != nil)
        let base64 = visitor.rpc("profile.photo", #"{"user_id":\#(ownerId),"size":96}"#)
        let decoded = try #require(json(base64.line)["result"] as? String, "\(base64.line)").flatMap { Data(base64Encoded: $0) }
        let small = try #require(decoded)
        #expect(try JPEGImage.check(small).width == 96)
        let redis = try GatewayConnection(port: suite.port)
        redis.send(GatewayConnection.resp(["profile.photo", #"{"user_id":\#(ownerId),"size":96}"#]))
        #expect(redis.respBytes() == Array(small))
        redis.send(GatewayConnection.resp(["profile.photo", #"{"user_id":\#(ownerId),"size":512}"#]))
        #expect(try JPEGImage.check(Data(try #require(redis.respBytes()))).height == 512)
    }
}
