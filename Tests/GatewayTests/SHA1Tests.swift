import Foundation
@testable import Gateway
import Testing

/// SHA-1 against RFC 3174's test vectors (section 7.3), and the WebSocket accept key of
/// RFC 6455's own example (section 1.3).
@Suite struct SHA1Tests {
    static func hex(_ bytes: [UInt8]) -> String { bytes.map { String(format: "%02X", $0) }.joined() }

    @Test func rfc3174TestVectors() {
        let vectors: [(message: [UInt8], repeats: Int, digest: String)] = [
            (Array("abc".utf8), 1, "A9993E364706816ABA3E25717850C26C9CD0D89D"),
            (Array("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq".utf8), 1, "84983E441C3BD26EBAAE4AA1F95129E5E54670F1"),
            (Array("a".utf8), 1_000_000, "34AA973CD4C4DAA4F61EEB2BDBAD27316534016F"),
            (Array("0123456701234567012345670123456701234567012345670123456701234567".utf8), 10, "DEA356A2CDDD90C7A7ECEDC5EBB563934F460452"),
        ]
        for vector in vectors {
            let message = Array([[UInt8]](repeating: vector.message, count: vector.repeats).joined())
            #expect(SHA1Tests.hex(SHA1.digest(message)) == vector.digest)
        }
        // Lengths around the padding's edges (55, 56, 63, 64 bytes) against known digests.
        #expect(SHA1Tests.hex(SHA1.digest([UInt8]())) == "DA39A3EE5E6B4B0D3255BFEF95601890AFD80709")
        #expect(SHA1Tests.hex(SHA1.digest(Array("The quick brown fox jumps over the lazy dog".utf8))) == "2FD4E1C67A2D28FCED849EE1BB76E7391B93EB12")
    }

    @Test func theWebSocketAcceptKeyOfRFC6455() {
        #expect(SHA1.webSocketAccept(key: "dGhlIHNhbXBsZSBub25jZQ==") == "s3pPLMBiTxaQ9kYGzzhZRbK+xOo=")
    }
}
