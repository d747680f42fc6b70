import Bus
import Foundation

// The search service's events. Declared once here; the search service publishes these types
// and favorites, which keeps each user's recent searches, decodes the same ones.

/// Event types the search service publishes.
public enum SearchEvents {
    /// Body: `SearchPerformed`. One per `search.text` answered for a signed-in caller (never
    /// for an anonymous one), appended to the outbox of the replica that answered it.
    public static let performed = "search.performed"
    /// Body `{}`: a `search.performed` of a user since deleted, rewritten in place (its seq stays).
    public static let redacted = "search.redacted"
}

/// Body of `search.performed`: who searched for what, where, and when.
public struct SearchPerformed: Codable, Sendable, Equatable {
    /// The most UTF-8 bytes of `q` an event carries: `search.text` refuses more.
    public static let maxQueryBytes = 800

    /// The signed-in caller (the envelope's `auth.user_id`).
    public var userId: Int64
    /// The words as the caller sent them (`search.text`'s `q`).
    public var q: String
    /// The point the search was made around, when it named one.
    public var near: Point?
    /// When the search was answered, RFC 3339 UTC with milliseconds (`2026-06-01T00:00:05.000Z`).
    public var at: String

    /// A point of a search, in degrees.
    public struct Point: Codable, Sendable, Equatable {
        public var lat: Double
        public var lon: Double

        public init(lat: Double, lon: Double) {
            self.lat = lat
            self.lon = lon
        }
    }

    public init(userId: Int64, q: String, near: Point?, at: String) {
        self.userId = userId
        self.q = q
        self.near = near
        self.at = at
    }

    enum CodingKeys: String, CodingKey {
        case q, near, at
        case userId = "user_id"
    }

    /// The body as `JSONCoding.encoder` writes it (sorted keys, `near` left out when nil),
    /// written by hand: every signed-in search makes one on the read path, and the encoder costs
    /// more than the rest of recording it. `near` must be finite (a decoded JSON number is).
    public var json: Data {
        var out: [UInt8] = []
        out.reserveCapacity(96 + q.utf8.count)
        out.append(UInt8(ascii: "{"))
        JSONText.appendKey("at", to: &out)
        JSONText.append(at, to: &out)
        out.append(UInt8(ascii: ","))
        if let near {
            JSONText.appendKey("near", to: &out)
            out.append(UInt8(ascii: "{"))
            JSONText.appendKey("lat", to: &out)
            JSONText.append(near.lat, to: &out)
            out.append(UInt8(ascii: ","))
            JSONText.appendKey("lon", to: &out)
            JSONText.append(near.lon, to: &out)
            out.append(contentsOf: [UInt8(ascii: "}"), UInt8(ascii: ",")])
        }
        JSONText.appendKey("q", to: &out)
        JSONText.append(q, to: &out)
        out.append(UInt8(ascii: ","))
        JSONText.appendKey("user_id", to: &out)
        JSONText.append(userId, to: &out)
        out.append(UInt8(ascii: "}"))
        return Data(out)
    }
}
