import Contracts
import Bus
import Foundation
import Geo
import ServiceKit

// The request and reply bodies of `pins.*` (Protocols/favorites.md, "Pins"). No other module
// reads them, so they stay here rather than in Contracts.

/// A pin as clients get it. `title` and `note` are always present (`null` when unset);
/// `place` only when a place of the catalog lies within 100 m, `distance_m` only in a `near` list.
struct PinJSON: Encodable, Sendable {
    var id: Int64
    var lat: Double
    var lon: Double
    var title: String?
    var note: String?
    var createdAt: String
    var updatedAt: String
    var place: PinPlace?
    /// Metres from the point of a `near` list.
    var distanceM: Double?

    enum CodingKeys: String, CodingKey {
        case id, lat, lon, title, note, place
        case createdAt = "created_at"
        case updatedAt = "updated_at"
        case distanceM = "distance_m"
    }

    func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(id, forKey: .id)
        try c.encode(lat, forKey: .lat)
        try c.encode(lon, forKey: .lon)
        try c.encode(title, forKey: .title)
        try c.encode(note, forKey: .note)
        try c.encode(createdAt, forKey: .createdAt)
        try c.encode(updatedAt, forKey: .updatedAt)
        try c.encodeIfPresent(place, forKey: .place)
        try c.encodeIfPresent(distanceM, forKey: .distanceM)
    }
}

/// The place nearest a pin: its card (name, category, address, point, rating) and how far
/// it is from the pin.
struct PinPlace: Encodable, Sendable {
    var card: PlaceCard
    var distanceM: Double

    enum CodingKeys: String, CodingKey {
        case distanceM = "distance_m"
    }

    /// The card's members, with `distance_m` beside them in the same object.
    func encode(to encoder: any Encoder) throws {
        try card.encode(to: encoder)
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(distanceM, forKey: .distanceM)
    }
}

/// `pins.add {lat, lon, title?, note?}`.
struct PinAdd: Decodable, Sendable, DeclaredShape {
    var lat: Double
    var lon: Double
    var title: String?
    var note: String?
}

/// `pins.list`'s `near`: a point, and at most how far from it.
struct PinNear: Decodable, Sendable {
    var lat: Double
    var lon: Double
    var radiusM: Double?

    enum CodingKeys: String, CodingKey {
        case lat, lon
        case radiusM = "radius_m"
    }
}

/// `pins.list {near?, bbox?, limit?, cursor?}`; `bbox` is checked as it decodes (`west > east`
/// crosses the 180th meridian).
struct PinListRequest: Decodable, Sendable, DeclaredShape {
    var near: PinNear?
    var bbox: BoundingBox?
    var limit: Int?
    var cursor: String?
}

/// A page of pins.
struct PinPage: Encodable, Sendable {
    var pins: [PinJSON]
    var nextCursor: String?

    enum CodingKeys: String, CodingKey {
        case pins
        case nextCursor = "next_cursor"
    }
}

/// `pins.update {id, lat?, lon?, title?, note?}`: what is absent stays; `null` clears a title
/// or a note (and is refused for `lat` and `lon`).
struct PinUpdate: Decodable, Sendable, DeclaredShape {
    var id: Int64
    var lat: Patch<Double>
    var lon: Patch<Double>
    var title: Patch<String>
    var note: Patch<String>

    enum CodingKeys: String, CodingKey {
        case id, lat, lon, title, note
    }

    init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        id = try c.decode(Int64.self, forKey: .id)
        lat = try c.decodePatch(Double.self, forKey: .lat)
        lon = try c.decodePatch(Double.self, forKey: .lon)
        title = try c.decodePatch(String.self, forKey: .title)
        note = try c.decodePatch(String.self, forKey: .note)
    }
}

/// `pins.delete {id}`.
struct PinRef: Decodable, Sendable, DeclaredShape {
    var id: Int64
}

/// `pins.delete`'s reply.
struct PinDeleted: Encodable, Sendable {
    var id: Int64
    var deleted = true
}
