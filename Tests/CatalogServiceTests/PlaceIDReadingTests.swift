import Bus
@testable import CatalogService
import Contracts
import Foundation
import ServiceKit
import Testing

/// `catalog.get` and `catalog.delete` read a plain `{"id":N}` by span and leave any other body
/// to the checked decoder (its shape, then the decoder): either way the answer, or the error, is the checked decoder's.
@Suite struct PlaceIDReadingTests {
    static let placeIDShape = Schema.object(ObjectSchema([.init("id", .integer(IntegerBounds()), required: true)]))

    static func envelope(_ body: String?) -> Data {
        Data(#"{"v":1,"id":"t-1","type":"catalog.get"\#(body.map { ",\"body\":\($0)" } ?? "")}"#.utf8)
    }

    static func decoded(_ envelope: Data) -> Result<Int64, ServiceError> {
        Result { () throws(ServiceError) in
            for body in RequestContext.bodies(scannedBody: nil, envelope: envelope) { try SchemaCheck.check(body, against: placeIDShape) }
            return try JSONCoding.decodeBody(PlaceID.self, fromEnvelope: envelope).id
        }
    }

    /// The body as the server's header scan finds it, or nil when the scan leaves the header to the decoder.
    static func scannedBody(_ envelope: Data) -> Data? {
        (try? RequestHeader.scan(envelope))??.bodyRange.map { envelope.subdata(in: $0) }
    }

    /// N read by span from the scanned body, or nil.
    static func plainID(_ envelope: Data) -> Int64? { scannedBody(envelope).flatMap(PlaceID.plainID(body:)) }

    static func read(_ envelope: Data) -> Result<Int64, ServiceError> {
        Result { () throws(ServiceError) in try PlaceID.read(scannedBody: scannedBody(envelope), envelope: envelope).id }
    }

    @Test(arguments: [
        #"{"id":5}"#, #"{ "id" : 5 }"#, "{\n\t\"id\":\r\n 12 }", #"{"id":0}"#, #"{"id":-3}"#, #"{"id":-0}"#,
        #"{"id":9223372036854775807}"#, #"{"id":-9223372036854775808}"#, #"{"\u0069d":7}"#,
    ])
    func aPlainBodyIsReadBySpanAsTheDecoderReadsIt(body: String) throws {
        let envelope = Self.envelope(body)
        #expect(Self.plainID(envelope) != nil)
        #expect(Self.read(envelope) == Self.decoded(envelope))
        #expect(try Self.read(envelope).get() == Self.decoded(envelope).get())
    }

    @Test(arguments: [
        nil, "null", "{}", #"{"name":"x"}"#, #"{"id":"5"}"#, #"{"id":null}"#, #"{"id":true}"#, #"{"id":[5]}"#, #"{"id":{"id":5}}"#,
        #"{"id":5.5}"#, #"{"id":5.0}"#, #"{"id":5e0}"#, #"{"id":1e999}"#, #"{"id":9223372036854775808}"#,
        #"{"id":-9223372036854775809}"#, #"{"id":123456789012345678901234567890}"#, #"{"id":5,"extra":1}"#,
        #"{"extra":{"id":1},"id":5}"#, #"{"id":5,"id":6}"#, #"[5]"#, #""id""#, "5",
    ])
    func anyOtherBodyGoesToTheDecoder(body: String?) throws {
        let envelope = Self.envelope(body)
        #expect(Self.plainID(envelope) == nil)
        #expect(Self.read(envelope) == Self.decoded(envelope))
    }

    @Test func aRepeatedBodyGoesToTheDecoder() {
        let envelope = Data(#"{"v":1,"id":"t-1","type":"catalog.get","body":{"id":5},"body":{"id":6}}"#.utf8)
        #expect(Self.plainID(envelope) == nil)
        #expect(Self.read(envelope) == Self.decoded(envelope))
    }

    @Test func theServiceAnswersBothWaysAlike() throws {
        let catalog = try CatalogFixture()
        let place = try catalog.create("Harbour Café")
        let plain = try catalog.client.request(type: "catalog.get", body: Data(#"{"id":\#(place.id)}"#.utf8)).bodyJSON
        #expect(throws: ServiceError(.invalidArgument, "unknown parameter 'extra'", field: "extra")) {
            try catalog.client.request(type: "catalog.get", body: Data(#"{"id":\#(place.id),"extra":[1]}"#.utf8))
        }
        #expect(try catalog.client.request(type: "catalog.get", body: Data(#"{ "id" : \#(place.id) , "lang" : null }"#.utf8)).bodyJSON == plain)
        for (body, error) in [
            ("{}", ServiceError(.invalidArgument, "missing required field id", field: "id")),
            (#"{"id":"1"}"#, ServiceError(.invalidArgument, "expected an integer", field: "id")),
            (#"{"id":1e999}"#, ServiceError(.invalidArgument, "number 1e999 is out of range", field: "id")),
            (#"{"id":99}"#, ServiceError(.notFound, "no place with id 99", field: "id")),
        ] {
            for type in ["catalog.get", "catalog.delete"] {
                #expect(throws: error) { try catalog.raw(type, body) }
            }
        }
        #expect(try catalog.raw("catalog.delete", #"{"id":\#(place.id)}"#)["id"] as? Int == Int(place.id))
    }
}
