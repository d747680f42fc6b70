import Bus
import Foundation
import Testing

/// The server reads a plainly shaped request header by span and leaves any other to the
/// decoder; what the span reads must be what the decoder reads.
@Suite struct RequestHeaderScanTests {
    static func fields(_ header: RequestHeader) -> [String] {
        [String(header.v), header.id, header.type, header.auth.map { "\($0.userId)|\($0.role)" } ?? "-", header.deadlineMs.map(String.init) ?? "-"]
    }

    @Test(arguments: [
        #"{"v":1,"id":"k3x9a1-17","type":"catalog.get","auth":null,"deadline_ms":2000,"body":{"id":1}}"#,
        #"{"v":1,"id":"a","type":"sys.ping"}"#,
        #"{ "type" : "x.y", "id" : "a\"b\\c\u00e9", "v" : 2, "deadline_ms" : null, "extra" : [1, {"v": 9}] }"#,
        #"{"v":1,"id":"","type":"catalog.get","auth":{"user_id":"u-1","role":"admin"},"deadline_ms":-5,"body":null}"#,
        #"{"v":1,"id":"é東","type":"t","auth":{"role":"user","user_id":"\u0075"},"deadline_ms":0}"#,
        #"{"body":{"v":7,"id":"inner"},"v":1,"id":"outer","type":"t"}"#,
    ])
    func aPlainHeaderIsScannedAsTheDecoderReadsIt(envelope: String) throws {
        let data = Data(envelope.utf8)
        let scanned = try #require(try RequestHeader.scan(data))
        #expect(Self.fields(scanned) == Self.fields(try JSONDecoder().decode(RequestHeader.self, from: data)))
    }

    @Test(arguments: [
        #"{"v":1,"id":"a"}"#, #"{"id":"a","type":"t"}"#, #"{"v":"1","id":"a","type":"t"}"#, #"{"v":1.0,"id":"a","type":"t"}"#,
        #"{"v":1,"id":5,"type":"t"}"#, #"{"v":1,"id":"a","type":null}"#, #"{"v":1,"id":"a","type":"t","deadline_ms":"100"}"#,
        #"{"v":1,"id":"a","type":"t","deadline_ms":1.5}"#, #"{"v":1,"id":"a","type":"t","deadline_ms":1e999}"#,
        #"{"v":99999999999999999999,"id":"a","type":"t"}"#, #"{"v":1,"id":"a","type":"t","auth":{"user_id":"u"}}"#,
        #"{"v":1,"id":"a","type":"t","auth":{"user_id":"u","role":"r","extra":1}}"#, #"{"v":1,"id":"a","type":"t","auth":"u"}"#,
        #"{"v":1,"id":"a","type":"t","auth":{"user_id":1,"role":"r"}}"#, #"{"v":1,"id":"a","id":"b","type":"t"}"#, #"[1]"#,
        // A key written with escapes might spell a header member: the decoder reads it.
        #"{"\u0076":1,"id":"a","type":"t"}"#, #"{"v":1,"id":"a","type":"t","\u0069d":"b"}"#,
    ])
    func anyOtherHeaderGoesToTheDecoder(envelope: String) throws {
        #expect(try RequestHeader.scan(Data(envelope.utf8)) == nil)
    }
}

/// Reply and event envelopes copy a plain string (printable ASCII without quote or backslash)
/// between quotes; every string must come out as `JSONCoding.encoder` writes it.
@Suite struct EnvelopeQuotingTests {
    @Test(arguments: ["k3x9a1-17", "", "a/b", "sp ace", "<>&'~`{}[]:,", "é", "東京", "a\"b", "a\\b", "\u{7F}", "\u{2028}", "\t", "\u{0}", "🦆"])
    func anIdIsQuotedAsTheEncoderQuotesIt(id: String) throws {
        let expected = "{\"v\":1,\"id\":\(String(decoding: try JSONCoding.encoder.encode(id), as: UTF8.self)),\"ok\":true,\"body\":{}}"
        #expect(EnvelopeCoding.success(id: id, body: Data("{}".utf8)) == Data(expected.utf8))
    }
}
