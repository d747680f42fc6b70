import Bus
import Foundation

// The request and reply bodies of favorites' lists, items and shares (Protocols/favorites.md).
// They are the service's own: no other module reads them, so they stay here, not in Contracts.

/// `favorites.toggle {place_id, list?, request_id?}`.
struct ToggleRequest: Decodable, Sendable {
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
struct AddRequest: Decodable, Sendable {
    var placeId: Int64
    var list: String?
    var note: String?

    enum CodingKeys: String, CodingKey {
        case list, note
        case placeId = "place_id"
    }
}

/// `favorites.remove {place_id, list?}`.
struct RemoveRequest: Decodable, Sendable {
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
struct VisitedRequest: Decodable, Sendable {
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
struct ListRequest: Decodable, Sendable {
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
struct ContainsRequest: Decodable, Sendable {
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
struct ListName: Decodable, Sendable {
    var name: String
}

/// `favorites.lists.rename {name, new_name}`.
struct RenameRequest: Decodable, Sendable {
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
struct ShareRequest: Decodable, Sendable {
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
struct SharedRequest: Decodable, Sendable {
    var token: String
    var limit: Int?
    var cursor: String?
}

/// `favorites.counts.flush`'s reply: how many places were recounted and how many events left.
struct Flushed: Encodable, Sendable {
    var recounted: Int
    var published: Int
}

/// Times clients send (`favorites.visited.add`'s `at`), read strictly.
///
/// The same scanner as notify's (`NotifyStore.milliseconds(at:)`, a module favorites may not
/// import): Foundation's formatter takes trailing garbage and out-of-range fields.
enum RFC3339 {
    /// The most bytes a time may take.
    static let maxBytes = 40

    /// Milliseconds since 1970 of `text`: `YYYY-MM-DD`, `T` (or `t` or a space), `HH:MM:SS`, an
    /// optional fraction (1 to 9 digits, kept to the millisecond), then `Z` (or `z`) or `±HH:MM`;
    /// every field in its range, nothing after it. `invalid_argument` naming `field` otherwise.
    static func milliseconds(_ text: String, field: String) throws(ServiceError) -> Int64 {
        guard let ms = parse(Array(text.utf8)) else { throw ServiceError.invalid(field, "must be a time such as 2026-06-01T08:30:00.250Z") }
        return ms
    }

    private static func parse(_ b: [UInt8]) -> Int64? {
        guard b.count <= maxBytes, b.count >= 20 else { return nil }
        var i = 0
        func number(_ digits: Int) -> Int? {
            guard i + digits <= b.count else { return nil }
            var n = 0
            for _ in 0..<digits {
                guard (0x30...0x39).contains(b[i]) else { return nil }
                n = n * 10 + Int(b[i] - 0x30)
                i += 1
            }
            return n
        }
        func take(_ options: String) -> Bool {
            guard i < b.count, options.utf8.contains(b[i]) else { return false }
            i += 1
            return true
        }
        guard let year = number(4), year >= 1, take("-"), let month = number(2), (1...12).contains(month), take("-"),
              let day = number(2), take("Tt "), let hour = number(2), hour <= 23, take(":"), let minute = number(2), minute <= 59,
              take(":"), let second = number(2), second <= 60 else { return nil }
        let leap = year % 4 == 0 && (year % 100 != 0 || year % 400 == 0)
        let days = [31, leap ? 29 : 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31][month - 1]
        guard (1...days).contains(day) else { return nil }
        var millis = 0
        if take(".") {
            let first = i
            while i < b.count, (0x30...0x39).contains(b[i]), i - first < 9 { i += 1 }
            guard i > first else { return nil }
            for (k, digit) in b[first..<min(i, first + 3)].enumerated() { millis += Int(digit - 0x30) * [100, 10, 1][k] }
        }
        var offset = 0
        if !take("Zz") {
            guard i < b.count, b[i] == UInt8(ascii: "+") || b[i] == UInt8(ascii: "-") else { return nil }
            let sign = b[i] == UInt8(ascii: "-") ? -1 : 1
            i += 1
            guard let oh = number(2), oh <= 23, take(":"), let om = number(2), om <= 59 else { return nil }
            offset = sign * (oh * 60 + om)
        }
        guard i == b.count else { return nil }
        // Days from 1970-01-01 to the date (the proleptic Gregorian calendar, by era of 400 years).
        let y = month <= 2 ? year - 1 : year
        let era = (y >= 0 ? y : y - 399) / 400
        let yoe = y - era * 400
        let doy = (153 * (month + (month > 2 ? -3 : 9)) + 2) / 5 + day - 1
        let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy
        let epochDays = era * 146_097 + doe - 719_468
        let seconds = Int64(epochDays) * 86_400 + Int64(hour * 3_600 + minute * 60 + second) - Int64(offset * 60)
        return seconds * 1_000 + Int64(millis)
    }
}
