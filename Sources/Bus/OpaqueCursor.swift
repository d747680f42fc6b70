import Foundation

/// Page cursors clients hand back unchanged: a service's own text, base64url-encoded so
/// clients treat it as opaque and it travels in URLs and RESP words as it is.
public enum OpaqueCursor {
    /// Wraps a service's cursor text.
    public static func encode(_ text: String) -> String {
        Data(text.utf8).base64EncodedString()
            .replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_").replacingOccurrences(of: "=", with: "")
    }

    /// Unwraps a cursor, or answers `invalid_argument` on the field `cursor` when it is not one.
    public static func decode(_ cursor: String, maxLength: Int = 128) throws(ServiceError) -> String {
        var base64 = cursor.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        base64 += String(repeating: "=", count: (4 - base64.count % 4) % 4)
        guard cursor.count <= maxLength, let data = Data(base64Encoded: base64), let text = String(data: data, encoding: .utf8) else {
            throw ServiceError.invalid("cursor", "not a cursor from this service")
        }
        return text
    }
}
