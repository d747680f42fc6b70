import Contracts
import Bus
import Foundation

// The request and reply bodies of favorites' lists, items and shares (Protocols/favorites.md).
// They are the service's own: no other module reads them, so they stay here, not in Contracts.

/// `favorites.toggle {place_id, list?, request_id?}`.
struct ToggleRequest: Decodable, Sendable, DeclaredShape {
    var placeId: Int64
    var list: String?
    var requestId: String?

    enum CodingKeys: String, CodingKey {
        case list
        case placeId = "place_id"
        case requestId = "request_id"
    }
}

/// `favorites.toggle`'s reply: whether the place is in the list now, and how many the list holds.
struct ToggleReply: Codable, Sendable, Equatable {
    var saved: Bool
    var list: String
    var count: Int
}

/// `favorites.add {place_id, list?, note?}`.
struct AddRequest: Decodable, Sendable, DeclaredShape {
    var placeId: Int64
    var list: String?
    var note: String?

    enum CodingKeys: String, CodingKey {
        case list, note
        case placeId = "place_id"
    }
}

/// `favorites.remove {place_id, list?}`.
struct RemoveRequest: Decodable, Sendable, DeclaredShape {
    var placeId: Int64
    var list: String?

    enum CodingKeys: String, CodingKey {
        case list
        case placeId = "place_id"
    }
}

/// The reply of `favorites.add` and `favorites.remove`: the place's state in the list after the
/// call, and whether the call changed anything (`changed` false: it was already so).
struct ItemChanged: Encodable, Sendable {
    var placeId: Int64
    var list: String
    var saved: Bool
    var changed: Bool
    var count: Int

    enum CodingKeys: String, CodingKey {
        case list, saved, changed, count
        case placeId = "place_id"
    }
}

/// `favorites.visited.add {place_id, at?}`.
struct VisitedRequest: Decodable, Sendable, DeclaredShape {
    var placeId: Int64
    var at: String?

    enum CodingKeys: String, CodingKey {
        case at
        case placeId = "place_id"
    }
}

/// `favorites.visited.add`'s reply.
struct VisitedReply: Encodable, Sendable {
    var placeId: Int64
    var list: String
    var visitedAt: String
    var count: Int

    enum CodingKeys: String, CodingKey {
        case list, count
        case placeId = "place_id"
        case visitedAt = "visited_at"
    }
}

/// A point in a request (`near`).
struct NearPoint: Decodable, Sendable {
    var lat: Double
    var lon: Double
}

/// `favorites.list {list?, near?, sort?, limit?, cursor?}`.
struct ListRequest: Decodable, Sendable, DeclaredShape {
    var list: String?
    var near: NearPoint?
    var sort: String?
    var limit: Int?
    var cursor: String?
}

/// One saved place as a list shows it: the place card, the owner's note (never through a
/// share), when it was added, when visited (the `visited` list) and how far from `near`.
/// Pages write it by hand (`appendJSON`); its `Encodable` is the reference they are held to.
struct ListItem: Encodable, Sendable {
    var place: PlaceCard
    var note: String?
    var addedAt: String
    var visitedAt: String?
    var distanceM: Double?

    enum CodingKeys: String, CodingKey {
        case place, note
        case addedAt = "added_at"
        case visitedAt = "visited_at"
        case distanceM = "distance_m"
    }
}

/// A page of a list's items.
///
/// Written by hand, items included, as `JSONCoding.encoder` would write it (sorted keys): a
/// page of 100 items cost the encoder about 3 ms (`bench/favorites`), each item encoded once
/// to be measured against the page's byte budget and once more in the reply.
struct ItemPage: Sendable {
    var list: String
    /// The items' JSON objects, comma-separated.
    var items: [UInt8]
    var nextCursor: String?

    /// The reply body: `{"items":[…],"list":…,"next_cursor":…}`.
    var body: Data {
        var out: [UInt8] = []
        out.reserveCapacity(items.count + list.utf8.count + 64)
        out.append(UInt8(ascii: "{"))
        JSONText.appendKey("items", to: &out)
        out.append(UInt8(ascii: "["))
        out += items
        out += Array("],".utf8)
        JSONText.appendKey("list", to: &out)
        JSONText.append(list, to: &out)
        if let nextCursor {
            out.append(UInt8(ascii: ","))
            JSONText.appendKey("next_cursor", to: &out)
            JSONText.append(nextCursor, to: &out)
        }
        out.append(UInt8(ascii: "}"))
        return Data(out)
    }
}

extension ListItem {
    /// Appends the item's JSON as `JSONCoding.encoder` writes it (sorted keys, absent optionals
    /// left out); `ItemJSONTests` holds it to the encoder.
    func appendJSON(to out: inout [UInt8]) {
        out.append(UInt8(ascii: "{"))
        JSONText.appendKey("added_at", to: &out)
        JSONText.append(addedAt, to: &out)
        if let distanceM {
            out.append(UInt8(ascii: ","))
            JSONText.appendKey("distance_m", to: &out)
            JSONText.append(distanceM, to: &out)
        }
        if let note {
            out.append(UInt8(ascii: ","))
            JSONText.appendKey("note", to: &out)
            JSONText.append(note, to: &out)
        }
        out.append(UInt8(ascii: ","))
        JSONText.appendKey("place", to: &out)
        place.appendJSON(to: &out)
        if let visitedAt {
            out.append(UInt8(ascii: ","))
            JSONText.appendKey("visited_at", to: &out)
            JSONText.append(visitedAt, to: &out)
        }
        out.append(UInt8(ascii: "}"))
    }
}

extension PlaceCard {
    /// Appends the card's JSON as `JSONCoding.encoder` writes it (sorted keys, absent optionals
    /// left out).
    func appendJSON(to out: inout [UInt8]) {
        out.append(UInt8(ascii: "{"))
        if let address {
            JSONText.appendKey("address", to: &out)
            JSONText.append(address, to: &out)
            out.append(UInt8(ascii: ","))
        }
        JSONText.appendKey("category", to: &out)
        JSONText.append(category, to: &out)
        out.append(UInt8(ascii: ","))
        JSONText.appendKey("id", to: &out)
        JSONText.append(id, to: &out)
        out.append(UInt8(ascii: ","))
        JSONText.appendKey("lat", to: &out)
        JSONText.append(lat, to: &out)
        out.append(UInt8(ascii: ","))
        JSONText.appendKey("lon", to: &out)
        JSONText.append(lon, to: &out)
        out.append(UInt8(ascii: ","))
        JSONText.appendKey("name", to: &out)
        JSONText.append(name, to: &out)
        if let rating {
            out.append(UInt8(ascii: ","))
            JSONText.appendKey("rating", to: &out)
            JSONText.append(rating, to: &out)
        }
        if let ratingCount {
            out.append(UInt8(ascii: ","))
            JSONText.appendKey("rating_count", to: &out)
            JSONText.append(Int64(ratingCount), to: &out)
        }
        out.append(UInt8(ascii: "}"))
    }
}

/// `favorites.contains {place_ids}`.
struct ContainsRequest: Decodable, Sendable, DeclaredShape {
    var placeIds: [Int64]

    enum CodingKeys: String, CodingKey { case placeIds = "place_ids" }
}

/// One saved place of `favorites.contains`: the caller's lists it is in.
struct Contained: Encodable, Sendable {
    var placeId: Int64
    var lists: [String]

    enum CodingKeys: String, CodingKey {
        case lists
        case placeId = "place_id"
    }
}

/// `favorites.contains`'s reply: only the places saved in some list, in the order asked.
struct ContainsReply: Encodable, Sendable {
    var saved: [Contained]
}

/// A list as `favorites.lists` and the list requests show it.
struct ListInfo: Encodable, Sendable {
    var name: String
    var builtin: Bool
    var count: Int
    var shared: Bool
}

/// `favorites.lists`'s reply: the built-ins first (favorites, visited, want_to_go), then the
/// caller's own lists in the order they were made.
struct ListsReply: Encodable, Sendable {
    var lists: [ListInfo]
}

/// `favorites.lists.create {name}`, `favorites.lists.delete {name}`, `favorites.share {list}`…:
/// one list by name.
struct ListName: Decodable, Sendable, DeclaredShape {
    var name: String
}

/// `favorites.lists.rename {name, new_name}`.
struct RenameRequest: Decodable, Sendable, DeclaredShape {
    var name: String
    var newName: String

    enum CodingKeys: String, CodingKey {
        case name
        case newName = "new_name"
    }
}

/// `favorites.lists.delete`'s reply.
struct ListDeleted: Encodable, Sendable {
    var name: String
    var deleted = true
}

/// `favorites.share {list}`, `favorites.share.revoke {list}`.
struct ShareRequest: Decodable, Sendable, DeclaredShape {
    var list: String
}

/// `favorites.share`'s reply: the list's live token.
struct ShareReply: Encodable, Sendable {
    var token: String
    var list: String
}

/// `favorites.share.revoke`'s reply: whether a live token was ended.
struct Revoked: Encodable, Sendable {
    var list: String
    var revoked: Bool
}

/// `favorites.shared {token, limit?, cursor?}`.
struct SharedRequest: Decodable, Sendable, DeclaredShape {
    var token: String
    var limit: Int?
    var cursor: String?
}

/// `favorites.counts.flush`'s reply: how many places were recounted and how many events left.
struct Flushed: Encodable, Sendable {
    var recounted: Int
    var published: Int
}
