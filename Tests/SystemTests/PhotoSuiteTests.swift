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

        // Over HTTP, a plain GET of the JPEG, with a tag that makes a second GET cheap.
        let browser = try GatewayConnection(port: suite.port)
        browser.send("GET /users/\(ownerId)/photo/96.jpg HTTP/1.1\r\nHost: t\r\n\r\n")
        let photo = try #require(browser.httpResponse())
        #expect(photo.status == 200 && photo.headers["content-type"] == "image/jpeg")
        #expect(photo.body == Array(small))
        #expect(photo.headers["cache-control"] == "public, max-age=60")
        let tag = try #require(photo.headers["etag"])
        browser.send("GET /users/\(ownerId)/photo/96.jpg HTTP/1.1\r\nHost: t\r\nIf-None-Match: \(tag)\r\n\r\n")
        let again = try #require(browser.httpResponse())
        #expect(again.status == 304 && again.body.isEmpty && again.headers["etag"] == tag)
        browser.send("GET /users/\(ownerId)/photo/512.jpg HTTP/1.1\r\nHost: t\r\nIf-None-Match: \(tag)\r\n\r\n")
        #expect(browser.httpResponse()?.status == 200, "another size has another tag")
        browser.send("GET /users/999/photo/96.jpg HTTP/1.1\r\nHost: t\r\n\r\n")
        let missing = try #require(browser.httpResponse())
        #expect(missing.status == 404 && json(missing.text)["error"] != nil)
        browser.send("GET /users/\(ownerId)/photo/97.jpg HTTP/1.1\r\nHost: t\r\n\r\n")
        #expect(browser.httpResponse()?.status == 400, "the method's own check of size")
    }
}
