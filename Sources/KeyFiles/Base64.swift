import Foundation

extension Data {
    /// The bytes of `text` when it is standard base64 in its one canonical form (RFC 4648 §3.5:
    /// padded to a multiple of four, the unused bits of the last letter zero, nothing else),
    /// else nil. Foundation's own decoder also takes `====` and `AB==` as one zero byte: two
    /// texts for one value, which a key, a chunk or a handshake must not have.
    public init?(canonicalBase64 text: String) {
        guard let data = Data(base64Encoded: text), data.base64EncodedString() == text else { return nil }
        self = data
    }
}
