import Bus
import Contracts
import Foundation

/// Where a place can be shared, and the URL each network takes.
enum ShareNetwork: String {
    case twitter, facebook, email

    init(name: String) throws(ServiceError) {
        guard let network = ShareNetwork(rawValue: name) else { throw .invalid("network", "must be twitter, facebook or email") }
        self = network
    }

    /// The URL that shares `link` with `text` on this network, every query value percent-encoded.
    func url(text: String, link: String) -> String {
        let (text, link) = (Self.percentEncoded(text), Self.percentEncoded(link))
        return switch self {
        case .twitter: "https://twitter.com/intent/tweet?text=\(text)&url=\(link)"
        case .facebook: "https://www.facebook.com/sharer/sharer.php?u=\(link)"
        case .email: "mailto:?subject=\(text)&body=\(link)"
        }
    }

    /// `value` with every UTF-8 byte other than RFC 3986's unreserved characters
    /// (`A-Z a-z 0-9 - . _ ~`) written as `%XX`.
    static func percentEncoded(_ value: String) -> String {
        var encoded = ""
        for byte in value.utf8 {
            switch byte {
            case UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "0")...UInt8(ascii: "9"),
                UInt8(ascii: "-"), UInt8(ascii: "."), UInt8(ascii: "_"), UInt8(ascii: "~"):
                encoded.unicodeScalars.append(Unicode.Scalar(byte))
            default:
                encoded += String(format: "%%%02X", byte)
            }
        }
        return encoded
    }
}
