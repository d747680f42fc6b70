import Bus
import Contracts
import Foundation
import KeyFiles
import Testing

/// One value, one text: base64 that Foundation would also take in another form is refused.
@Suite struct CanonicalBase64Tests {
    @Test func onlyTheCanonicalFormDecodes() {
        #expect(Data(canonicalBase64: "AA==") == Data([0]))
        #expect(Data(canonicalBase64: "AAA=") == Data([0, 0]))
        #expect(Data(canonicalBase64: "3q2+7w==") == Data([0xDE, 0xAD, 0xBE, 0xEF]))
        #expect(Data(canonicalBase64: "") == Data())
        // Foundation reads each of these as zero bytes or a zero byte; none is canonical.
        for text in ["====", "AB==", "AAB=", "A===", "AA", "AA=", " AA==", "AA==\n", "AA==AA==", "3q2+7x=="] {
            #expect(Data(canonicalBase64: text) == nil, "\(text.debugDescription)")
        }
    }

    @Test func cursorsAreCanonicalBase64URL() {
        // Five bytes: seven letters, the last with two bits unused.
        let cursor = OpaqueCursor.encode("n_4_7")
        #expect(cursor.count == 7 && Base64URL.decode(cursor) == Data("n_4_7".utf8))
        // The same bytes with the last letter's unused bits set, or padded: not the cursor.
        let last = cursor.last!
        let letters = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_")
        let index = letters.firstIndex(of: last)!
        #expect(Base64URL.decode(String(cursor.dropLast()) + String(letters[index + 1])) == nil)
        #expect(Base64URL.decode(cursor + "=") == nil)
        #expect(Base64URL.decode("====") == nil)
    }

    /// The text inside a cursor is held to what the encoder writes too: one page, one cursor.
    @Test func idCursorsAreCanonicalInside() throws {
        let cursor = IDCursor(tag: "p")
        #expect(try cursor.decode(cursor.encode(17)) == 17)
        for text in ["p017", "p+17", "p 17", "p17 "] {
            #expect(throws: ServiceError.self) { try cursor.decode(OpaqueCursor.encode(text)) }
        }
    }
}
