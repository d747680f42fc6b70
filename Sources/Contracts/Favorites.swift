import Bus
import Foundation

// The favorites service's events. Declared once here; the favorites service publishes these
// types and search, which blends them into popularity, decodes the same ones.

/// Event types the favorites service publishes.
public enum FavoritesEvents {
    /// Body: `PlaceCounted`. Published through the outbox when a place's counts change, at
    /// most once per place per coalescing window (a burst of saves is one event).
    public static let counted = "favorites.place.counted"
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
