import Bus
import Contracts
import Foundation
import KeyFiles
import Storage

/// What uploads and imports share: files that arrive in base64 chunks under a random id,
/// stored as rows, put together again in order.
public enum Chunks {
    /// Decoded bytes of one chunk, at most (its base64 fits the gateway's 1 MiB request limit).
    public static let maxBytes = 512 * 1024

    /// The bytes of a chunk: canonical base64 of 1 to `maxBytes` bytes, its text bounded before it is decoded.
    public static func decode(_ base64: String) throws(ServiceError) -> Data {
        guard base64.utf8.count <= (maxBytes + 2) / 3 * 4, let chunk = Data(canonicalBase64: base64), (1...maxBytes).contains(chunk.count) else {
            throw .invalid("chunk", "must be base64 of 1 to \(maxBytes) bytes")
        }
        return chunk
    }

    /// A new upload or import id: 16 random bytes in hex.
    public static func newID() -> String {
        (0..<16).map { _ in String(format: "%02x", UInt8.random(in: 0...255)) }.joined()
    }

    /// The BLOB column 0 of every row `sql` selects, one after the other (the query orders them).
    public static func joined(_ db: Database, _ sql: String, _ args: [SQLBindable?]) throws -> Data {
        var bytes = Data()
        try db.forEachStep(sql, args) { statement in bytes.append(statement.blob(0)) }
        return bytes
    }
}
