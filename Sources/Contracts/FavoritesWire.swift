import Bus
import Foundation
import Geo

// The params and results of the favorites service's methods (Protocols/favorites.md): lists,
// items, shares, pins and recent searches.

/// `favorites.toggle {place_id, list?, request_id?}`.
public struct ToggleRequest: Decodable, Sendable, DeclaredShape {
    /// A client's `request_id`: one line of at most 64 bytes.
    public static let requestIdRule = TextRule("request_id", maxCharacters: 64, maxBytes: 64)
    public static let fieldRules: [FieldRule] = [.text(requestIdRule)]

    public var placeId: Int64
    public var list: String?
    public var requestId: String?

    enum CodingKeys: String, CodingKey {
        case list
        case placeId = "place_id"
        case requestId = "request_id"
    }

    public init(placeId: Int64, list: String? = nil, requestId: String? = nil) {
        self.placeId = placeId
        self.list = list
        self.requestId = requestId
    }
}

/// `favorites.toggle`'s reply: whether the place is in the list now, and how many the list holds.
public struct ToggleReply: Codable, Sendable, Equatable {
    public var saved: Bool
    public var list: String
    public var count: Int

    public init(saved: Bool, list: String, count: Int) {
        self.saved = saved
        self.list = list
        self.count = count
    }
}

/// `favorites.add {place_id, list?, note?}`.
public struct AddRequest: Decodable, Sendable, DeclaredShape {
    /// A note: at most 500 characters and 2,000 bytes, line breaks allowed.
    public static let noteRule = TextRule("note", maxCharacters: 500, lines: .multiple)
    public static let fieldRules: [FieldRule] = [.text(noteRule)]

    public var placeId: Int64
    public var list: String?
    public var note: String?

    enum CodingKeys: String, CodingKey {
        case list, note
        case placeId = "place_id"
    }

    public init(placeId: Int64, list: String? = nil, note: String? = nil) {
        self.placeId = placeId
        self.list = list
        self.note = note
    }
}

/// `favorites.remove {place_id, list?}`.
public struct RemoveRequest: Decodable, Sendable, DeclaredShape {
    public var placeId: Int64
    public var list: String?

    enum CodingKeys: String, CodingKey {
        case list
        case placeId = "place_id"
    }

    public init(placeId: Int64, list: String? = nil) {
        self.placeId = placeId
        self.list = list
    }
}

/// The reply of `favorites.add` and `favorites.remove`: the place's state in the list after the
/// call, and whether the call changed anything (`changed` false: it was already so).
public struct ItemChanged: Codable, Sendable {
    public var placeId: Int64
    public var list: String
    public var saved: Bool
    public var changed: Bool
    public var count: Int

    enum CodingKeys: String, CodingKey {
        case list, saved, changed, count
        case placeId = "place_id"
    }

    public init(placeId: Int64, list: String, saved: Bool, changed: Bool, count: Int) {
        self.placeId = placeId
        self.list = list
        self.saved = saved
        self.changed = changed
        self.count = count
    }
}

/// `favorites.visited.add {place_id, at?}`.
public struct VisitedRequest: Decodable, Sendable, DeclaredShape {
    public var placeId: Int64
    public var at: String?

    enum CodingKeys: String, CodingKey {
        case at
        case placeId = "place_id"
    }

    public init(placeId: Int64, at: String? = nil) {
        self.placeId = placeId
        self.at = at
    }
}

/// `favorites.visited.add`'s reply.
public struct VisitedReply: Codable, Sendable {
    public var placeId: Int64
    public var list: String
    public var visitedAt: String
    public var count: Int

    enum CodingKeys: String, CodingKey {
        case list, count
        case placeId = "place_id"
        case visitedAt = "visited_at"
    }

    public init(placeId: Int64, list: String, visitedAt: String, count: Int) {
        self.placeId = placeId
        self.list = list
        self.visitedAt = visitedAt
        self.count = count
    }
}

/// `favorites.list {list?, near?, sort?, limit?, cursor?}`.
public struct ListRequest: Decodable, Sendable, DeclaredShape {
    public var list: String?
    public var near: Point?
    public var sort: String?
    public var limit: Int?
    public var cursor: String?

    public init(list: String? = nil, near: Point? = nil, sort: String? = nil, limit: Int? = nil, cursor: String? = nil) {
        self.list = list
        self.near = near
        self.sort = sort
        self.limit = limit
        self.cursor = cursor
    }

    public static let fieldRules: [FieldRule] = [PageLimit.listItems.rule]
}

/// One saved place as a list shows it: the place card, the owner's note (never through a
/// share), when it was added, when visited (the `visited` list) and how far from `near`.
/// Pages write it by hand (`appendJSON`); its `Encodable` is the reference they are held to.
public struct ListItem: Codable, Sendable {
    public var place: PlaceCard
    public var note: String?
    public var addedAt: String
    public var visitedAt: String?
    public var distanceM: Double?

    enum CodingKeys: String, CodingKey {
        case place, note
        case addedAt = "added_at"
        case visitedAt = "visited_at"
        case distanceM = "distance_m"
    }

    public init(place: PlaceCard, note: String? = nil, addedAt: String, visitedAt: String? = nil, distanceM: Double? = nil) {
        self.place = place
        self.note = note
        self.addedAt = addedAt
        self.visitedAt = visitedAt
        self.distanceM = distanceM
    }
}

/// A page of a list's items (`favorites.list`, and `favorites.shared` without notes), oldest
/// cursor last: the service writes it by hand, in this shape.
public struct ListPage: Codable, Sendable {
    public var list: String
    public var items: [ListItem]
    public var nextCursor: String?

    enum CodingKeys: String, CodingKey {
        case list, items
        case nextCursor = "next_cursor"
    }
}

/// `favorites.contains {place_ids}`.
public struct ContainsRequest: Decodable, Sendable, DeclaredShape {
    public var placeIds: [Int64]

    enum CodingKeys: String, CodingKey { case placeIds = "place_ids" }

    public init(placeIds: [Int64]) {
        self.placeIds = placeIds
    }
}

/// One saved place of `favorites.contains`: the caller's lists it is in.
public struct Contained: Codable, Sendable {
    public var placeId: Int64
    public var lists: [String]

    enum CodingKeys: String, CodingKey {
        case lists
        case placeId = "place_id"
    }

    public init(placeId: Int64, lists: [String]) {
        self.placeId = placeId
        self.lists = lists
    }
}

/// `favorites.contains`'s reply: only the places saved in some list, in the order asked.
public struct ContainsReply: Codable, Sendable {
    public var saved: [Contained]

    public init(saved: [Contained]) {
        self.saved = saved
    }
}

/// A list as `favorites.lists` and the list requests show it.
public struct ListInfo: Codable, Sendable {
    public var name: String
    public var builtin: Bool
    public var count: Int
    public var shared: Bool

    public init(name: String, builtin: Bool, count: Int, shared: Bool) {
        self.name = name
        self.builtin = builtin
        self.count = count
        self.shared = shared
    }
}

/// `favorites.lists`'s reply: the built-ins first (favorites, visited, want_to_go), then the
/// caller's own lists in the order they were made.
public struct ListsReply: Codable, Sendable {
    public var lists: [ListInfo]

    public init(lists: [ListInfo]) {
        self.lists = lists
    }
}

/// `favorites.lists.create {name}`, `favorites.lists.delete {name}`, `favorites.share {list}`…:
/// one list by name.
public struct ListName: Decodable, Sendable, DeclaredShape {
    /// A list's name: 1 to 100 characters on one line, at most 400 bytes.
    public static let nameRule = TextRule("name", maxCharacters: 100)
    public static let fieldRules: [FieldRule] = [.text(nameRule, trimmed: true)]

    public var name: String

    public init(name: String) {
        self.name = name
    }
}

/// `favorites.lists.rename {name, new_name}`.
public struct RenameRequest: Decodable, Sendable, DeclaredShape {
    /// The same bounds as a list's name.
    public static let newNameRule = TextRule("new_name", maxCharacters: 100)
    public static let fieldRules: [FieldRule] = [.text(ListName.nameRule, trimmed: true), .text(newNameRule, trimmed: true)]

    public var name: String
    public var newName: String

    enum CodingKeys: String, CodingKey {
        case name
        case newName = "new_name"
    }

    public init(name: String, newName: String) {
        self.name = name
        self.newName = newName
    }
}

/// `favorites.lists.delete`'s reply.
public struct ListDeleted: Codable, Sendable {
    public var name: String
    public var deleted = true

    public init(name: String) {
        self.name = name
    }
}

/// `favorites.share {list}`, `favorites.share.revoke {list}`.
public struct ListShareRequest: Decodable, Sendable, DeclaredShape {
    public var list: String

    public init(list: String) {
        self.list = list
    }
}

/// `favorites.share`'s reply: the list's live token.
public struct ShareReply: Codable, Sendable {
    public var token: String
    public var list: String

    public init(token: String, list: String) {
        self.token = token
        self.list = list
    }
}

/// `favorites.share.revoke`'s reply: whether a live token was ended.
public struct Revoked: Codable, Sendable {
    public var list: String
    public var revoked: Bool

    public init(list: String, revoked: Bool) {
        self.list = list
        self.revoked = revoked
    }
}

/// `favorites.shared {token, limit?, cursor?}`.
public struct SharedRequest: Decodable, Sendable, DeclaredShape {
    public var token: String
    public var limit: Int?
    public var cursor: String?

    public init(token: String, limit: Int? = nil, cursor: String? = nil) {
        self.token = token
        self.limit = limit
        self.cursor = cursor
    }

    public static let fieldRules: [FieldRule] = [PageLimit.listItems.rule]
}

/// `favorites.counts.flush`'s reply: how many places were recounted and how many events left.
public struct Flushed: Codable, Sendable {
    public var recounted: Int
    public var published: Int

    public init(recounted: Int, published: Int) {
        self.recounted = recounted
        self.published = published
    }
}

/// What favorites shows of a place (a list item's, a pin's nearest place): the catalog's name,
/// category, address and point, with social's rating when it has one.
public struct PlaceCard: Codable, Sendable, Equatable {
    public var id: Int64
    public var name: String
    public var category: String
    public var address: String?
    public var lat: Double
    public var lon: Double
    /// The average rating, 1 to 5, and how many reviews make it; absent when unrated.
    public var rating: Double?
    public var ratingCount: Int?

    enum CodingKeys: String, CodingKey {
        case id, name, category, address, lat, lon, rating
        case ratingCount = "rating_count"
    }

    public init(id: Int64, name: String, category: String, address: String? = nil, lat: Double, lon: Double, rating: Double? = nil, ratingCount: Int? = nil) {
        self.id = id
        self.name = name
        self.category = category
        self.address = address
        self.lat = lat
        self.lon = lon
        self.rating = rating
        self.ratingCount = ratingCount
    }
}

/// A pin as clients get it. `title` and `note` are always present (`null` when unset);
/// `place` only when a place of the catalog lies within 100 m, `distance_m` only in a `near` list.
public struct PinJSON: Codable, Sendable {
    public var id: Int64
    public var lat: Double
    public var lon: Double
    public var title: String?
    public var note: String?
    public var createdAt: String
    public var updatedAt: String
    public var place: PinPlace?
    /// Metres from the point of a `near` list.
    public var distanceM: Double?

    enum CodingKeys: String, CodingKey {
        case id, lat, lon, title, note, place
        case createdAt = "created_at"
        case updatedAt = "updated_at"
        case distanceM = "distance_m"
    }

    public func encode(to encoder: any Encoder) throws {
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

    public init(
        id: Int64, lat: Double, lon: Double, title: String? = nil, note: String? = nil, createdAt: String, updatedAt: String, place: PinPlace? = nil, distanceM: Double? = nil
    ) {
        self.id = id
        self.lat = lat
        self.lon = lon
        self.title = title
        self.note = note
        self.createdAt = createdAt
        self.updatedAt = updatedAt
        self.place = place
        self.distanceM = distanceM
    }
}

/// The place nearest a pin: its card (name, category, address, point, rating) and how far
/// it is from the pin.
public struct PinPlace: Codable, Sendable {
    public var card: PlaceCard
    public var distanceM: Double

    enum CodingKeys: String, CodingKey {
        case distanceM = "distance_m"
    }

    public init(from decoder: any Decoder) throws {
        card = try PlaceCard(from: decoder)
        distanceM = try decoder.container(keyedBy: CodingKeys.self).decode(Double.self, forKey: .distanceM)
    }

    /// The card's members, with `distance_m` beside them in the same object.
    public func encode(to encoder: any Encoder) throws {
        try card.encode(to: encoder)
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(distanceM, forKey: .distanceM)
    }

    public init(card: PlaceCard, distanceM: Double) {
        self.card = card
        self.distanceM = distanceM
    }
}

/// `pins.add {lat, lon, title?, note?}`.
public struct PinAdd: Decodable, Sendable, DeclaredShape {
    /// A title: one line of at most 100 characters and 1,600 UTF-8 bytes (checked first), so
    /// 100 flags or skin-toned emoji fit and no grapheme of thousands of accents does.
    public static let titleRule = TextRule("title", maxCharacters: 100, maxBytes: 1_600)
    /// A note: at most 500 characters and 8,000 UTF-8 bytes, line breaks allowed (as an
    /// annotation's text in notify).
    public static let noteRule = TextRule("note", maxCharacters: 500, maxBytes: 8_000, lines: .multiple)
    public static let fieldRules: [FieldRule] = [.text(titleRule), .text(noteRule)]

    public var lat: Double
    public var lon: Double
    public var title: String?
    public var note: String?

    public init(lat: Double, lon: Double, title: String? = nil, note: String? = nil) {
        self.lat = lat
        self.lon = lon
        self.title = title
        self.note = note
    }
}

/// `pins.list {near?, radius_m?, bbox?, limit?, cursor?}` (`west > east` crosses the 180th meridian).
public struct PinListRequest: Decodable, Sendable, DeclaredShape {
    /// The pins nearest this point first, only those within `radius_m` when given.
    public var near: Point?
    public var radiusM: Double?
    public var bbox: Box?
    public var limit: Int?
    public var cursor: String?

    /// The largest `radius_m`: 20,000 km, about half the Earth's circumference.
    public static let maxRadius = 20_000_000.0

    enum CodingKeys: String, CodingKey {
        case near, bbox, limit, cursor
        case radiusM = "radius_m"
    }

    public init(near: Point? = nil, radiusM: Double? = nil, bbox: Box? = nil, limit: Int? = nil, cursor: String? = nil) {
        self.near = near
        self.radiusM = radiusM
        self.bbox = bbox
        self.limit = limit
        self.cursor = cursor
    }

    public static let fieldRules: [FieldRule] = [PageLimit.pins.rule, .number("radius_m", 0...maxRadius, exclusiveMinimum: true)]
}

/// A page of pins.
public struct PinPage: Codable, Sendable {
    public var pins: [PinJSON]
    public var nextCursor: String?

    enum CodingKeys: String, CodingKey {
        case pins
        case nextCursor = "next_cursor"
    }

    public init(pins: [PinJSON], nextCursor: String? = nil) {
        self.pins = pins
        self.nextCursor = nextCursor
    }
}

/// `pins.update {id, lat?, lon?, title?, note?}`: what is absent stays; `null` clears a title
/// or a note (and is refused for `lat` and `lon`).
public struct PinUpdate: Decodable, Sendable, DeclaredShape {
    public static let fieldRules: [FieldRule] = [.text(PinAdd.titleRule), .text(PinAdd.noteRule)]

    public var id: Int64
    public var lat: Patch<Double>
    public var lon: Patch<Double>
    public var title: Patch<String>
    public var note: Patch<String>

    enum CodingKeys: String, CodingKey {
        case id, lat, lon, title, note
    }

    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        id = try c.decode(Int64.self, forKey: .id)
        lat = try c.decodePatch(Double.self, forKey: .lat)
        lon = try c.decodePatch(Double.self, forKey: .lon)
        title = try c.decodePatch(String.self, forKey: .title)
        note = try c.decodePatch(String.self, forKey: .note)
    }
}

/// `pins.delete {id}`.
public struct PinRef: Decodable, Sendable, DeclaredShape {
    public var id: Int64

    public init(id: Int64) {
        self.id = id
    }
}

/// `pins.delete`'s reply.
public struct PinDeleted: Codable, Sendable {
    public var id: Int64
    public var deleted = true

    public init(id: Int64) {
        self.id = id
    }
}

/// `search.recent`'s body.
public struct RecentRequest: Decodable, Sendable, DeclaredShape {
    public var limit: Int?

    public init(limit: Int? = nil) {
        self.limit = limit
    }

    public static let fieldRules: [FieldRule] = [PageLimit.recentSearches.rule]
}

/// One recent search as `search.recent` shows it.
public struct RecentSearch: Codable, Sendable, Equatable {
    public var q: String
    public var near: SearchPerformed.Point?
    public var at: String

    public init(q: String, near: SearchPerformed.Point? = nil, at: String) {
        self.q = q
        self.near = near
        self.at = at
    }
}

/// `search.recent`'s reply: newest first.
public struct RecentPage: Codable, Sendable {
    public var searches: [RecentSearch]

    public init(searches: [RecentSearch]) {
        self.searches = searches
    }
}

/// `search.recent.clear`'s reply: how many searches were forgotten.
public struct RecentCleared: Codable, Sendable {
    public var cleared: Int

    public init(cleared: Int) {
        self.cleared = cleared
    }
}

/// The body of a `favorites.changed` push: what changed, so a second device updates its hearts
/// or its map without reading everything again.
public struct FavoritesChange: Codable, Sendable, Equatable {
    public enum Kind: String, Codable, Sendable, CaseIterable {
        case saved, removed, visited, shared, unshared
        case listCreated = "list_created"
        case listRenamed = "list_renamed"
        case listDeleted = "list_deleted"
        case pinAdded = "pin_added"
        case pinUpdated = "pin_updated"
        case pinDeleted = "pin_deleted"
    }

    public var change: Kind
    /// The list it happened in (saving, lists, shares).
    public var list: String?
    public var placeId: Int64?
    public var pinId: Int64?

    public init(change: Kind, list: String? = nil, placeId: Int64? = nil, pinId: Int64? = nil) {
        self.change = change
        self.list = list
        self.placeId = placeId
        self.pinId = pinId
    }

    enum CodingKeys: String, CodingKey {
        case change, list
        case placeId = "place_id"
        case pinId = "pin_id"
    }
}
