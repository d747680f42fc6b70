import Bus
import Foundation

// The favorites service's events. Declared once here; the favorites service publishes these
// types and search, which blends them into popularity, decodes the same ones.

/// Event types the favorites service publishes.
public enum FavoritesEvents {
    /// Body: `PlaceCounted`. Published through the outbox when a place's counts change, at
    /// most once per place per coalescing window (a burst of saves is one event).
    public static let counted = "favorites.place.counted"
    /// Body: `PlaceVisited`. A discoverable user (as social's `social.profile.discoverable`
    /// last said) marked a place visited, or became discoverable (their latest 1,000 visits).
    /// Never published for any other user.
    public static let visited = "favorites.visited"
    /// Body: `PlaceUnvisited`. A discoverable user's visit is gone: unmarked, or the place was
    /// deleted.
    public static let unvisited = "favorites.unvisited"
    /// Body: `{}`. Never published as such: a visit event of a user who has since stopped
    /// being discoverable, or was deleted, rewritten in the outbox (same `seq`). Every
    /// follower ignores it.
    public static let redacted = "favorites.redacted"
}

/// Body of `favorites.visited`: who visited which place when (`at`, RFC 3339), and the place's
/// point as favorites' copy of the catalog holds it.
public struct PlaceVisited: Codable, Sendable, Equatable {
    public var userId: Int64
    public var placeId: Int64
    public var lat: Double
    public var lon: Double
    public var at: String

    public init(userId: Int64, placeId: Int64, lat: Double, lon: Double, at: String) {
        self.userId = userId
        self.placeId = placeId
        self.lat = lat
        self.lon = lon
        self.at = at
    }

    enum CodingKeys: String, CodingKey {
        case lat, lon, at
        case userId = "user_id"
        case placeId = "place_id"
    }
}

/// Body of `favorites.unvisited`: a user's visit of a place that is no longer there.
public struct PlaceUnvisited: Codable, Sendable, Equatable {
    public var userId: Int64
    public var placeId: Int64

    public init(userId: Int64, placeId: Int64) {
        self.userId = userId
        self.placeId = placeId
    }

    enum CodingKeys: String, CodingKey {
        case userId = "user_id"
        case placeId = "place_id"
    }
}

/// Body of `favorites.place.counted`: how many users have a place in their `favorites` list,
/// and how many marked it visited in the last 30 days, as they stand now.
public struct PlaceCounted: Codable, Sendable, Equatable {
    public var placeId: Int64
    public var saves: Int
    public var visits30d: Int

    public init(placeId: Int64, saves: Int, visits30d: Int) {
        self.placeId = placeId
        self.saves = saves
        self.visits30d = visits30d
    }

    enum CodingKeys: String, CodingKey {
        case saves
        case placeId = "place_id"
        case visits30d = "visits_30d"
    }
}
