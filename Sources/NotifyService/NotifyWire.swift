import Contracts
import Bus
import Foundation
import Geo
import ServiceKit

// The request and reply bodies of the notify service (Protocols/notify.md). They are the
// service's own: no other module reads them, so they stay here rather than in Contracts.

/// An annotation as clients get it; an alert is one with `distance_m`.
public struct AnnotationJSON: Codable, Sendable, Equatable {
    public var id: Int64
    public var lat: Double
    public var lon: Double
    public var values: [String: String]
    public var text: String?
    public var userId: Int64
    public var createdAt: String
    public var expiresAt: String
    /// Metres from the report, in an alert; absent elsewhere.
    public var distanceM: Double?

    enum CodingKeys: String, CodingKey {
        case id, lat, lon, values, text
        case userId = "user_id"
        case createdAt = "created_at"
        case expiresAt = "expires_at"
        case distanceM = "distance_m"
    }
}

/// `annotations.form {lat?, lon?, lang?}`.
struct FormRequest: Decodable, Sendable, DeclaredShape {
    var lat: Double?
    var lon: Double?
    var lang: String?
}

/// `annotations.form.set`'s reply: the version now in force.
struct FormSet: Encodable, Sendable {
    var version: Int
}

/// `annotations.submit {lat, lon, values, text?}`.
struct SubmitRequest: Decodable, Sendable, DeclaredShape {
    var lat: Double
    var lon: Double
    var values: [String: String]
    var text: String?
}

/// `annotations.get {id}`, `annotations.delete {id}`.
struct AnnotationRef: Decodable, Sendable, DeclaredShape {
    var id: Int64
}

/// `annotations.delete`'s reply.
struct AnnotationDeleted: Encodable, Sendable {
    var id: Int64
    var deleted = true
}

/// `annotations.nearby {lat, lon, radius_m, cursor?, limit?}`.
struct NearbyRequest: Decodable, Sendable, DeclaredShape {
    var lat: Double
    var lon: Double
    var radiusM: Double
    var cursor: String?
    var limit: Int?

    enum CodingKeys: String, CodingKey {
        case lat, lon, cursor, limit
        case radiusM = "radius_m"
    }
}

/// `annotations.viewport {south, west, north, east, cursor?, limit?}`.
struct ViewportRequest: Decodable, Sendable, DeclaredShape {
    var south: Double
    var west: Double
    var north: Double
    var east: Double
    var cursor: String?
    var limit: Int?
}

/// A page of annotations.
struct AnnotationPage: Encodable, Sendable {
    var annotations: [AnnotationJSON]
    var nextCursor: String?

    enum CodingKeys: String, CodingKey {
        case annotations
        case nextCursor = "next_cursor"
    }
}

/// A user's notify settings, as `notify.settings.get` and `.set` answer them.
struct SettingsJSON: Codable, Sendable, Equatable {
    var alerts: Bool
    var radiusM: Int
    var timezone: String
    var appTimerMin: Int?
    var idleTimerMin: Int?

    enum CodingKeys: String, CodingKey {
        case alerts, timezone
        case radiusM = "radius_m"
        case appTimerMin = "app_timer_min"
        case idleTimerMin = "idle_timer_min"
    }
}

/// `notify.settings.set`: what is absent stays; `null` clears a timer.
struct SettingsChange: Decodable, Sendable, DeclaredShape {
    var alerts: Bool?
    var radiusM: Int?
    var timezone: String?
    var appTimerMin: Patch<Int>
    var idleTimerMin: Patch<Int>

    init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: SettingsJSON.CodingKeys.self)
        alerts = try c.decodeIfPresent(Bool.self, forKey: .alerts)
        radiusM = try c.decodeIfPresent(Int.self, forKey: .radiusM)
        timezone = try c.decodeIfPresent(String.self, forKey: .timezone)
        appTimerMin = try c.decodePatch(Int.self, forKey: .appTimerMin)
        idleTimerMin = try c.decodePatch(Int.self, forKey: .idleTimerMin)
    }
}

/// `notify.location {lat, lon, at?}`.
struct LocationRequest: Decodable, Sendable, DeclaredShape {
    var lat: Double
    var lon: Double
    var at: String?
}

/// What a report alerted: the push's body, and with `stale` the reply to `notify.location`.
struct AlertList: Encodable, Sendable {
    var alerts: [AnnotationJSON]
    /// How many alerts of the report are not listed; absent when none.
    var more: Int?
    /// Only in the reply to `notify.location`.
    var stale: Bool?
}

/// `notify.inbox {cursor?, limit?}`.
struct InboxRequest: Decodable, Sendable, DeclaredShape {
    var cursor: String?
    var limit: Int?
}

/// One alert kept for its user until acknowledged.
struct InboxEntry: Encodable, Sendable {
    var id: Int64
    var at: String
    var alert: AnnotationJSON
}

/// A page of the inbox, oldest first.
struct InboxPage: Encodable, Sendable {
    var entries: [InboxEntry]
    var nextCursor: String?

    enum CodingKeys: String, CodingKey {
        case entries
        case nextCursor = "next_cursor"
    }
}

/// `notify.ack {ids}`.
struct AckRequest: Decodable, Sendable, DeclaredShape {
    var ids: [Int64]
}

/// `notify.ack`'s reply: how many of the ids were the caller's entries and are now gone.
struct Acked: Encodable, Sendable {
    var acked: Int
}

/// `annotations.sync {cursor?, south?, west?, north?, east?, limit?}`.
struct SyncRequest: Decodable, Sendable, DeclaredShape {
    var cursor: String?
    var south: Double?
    var west: Double?
    var north: Double?
    var east: Double?
    var limit: Int?

    /// The box, when all four edges are given (none: everywhere); each checked, naming it.
    func box() throws(ServiceError) -> BoundingBox? {
        let edges = [("south", south), ("west", west), ("north", north), ("east", east)]
        let given = edges.filter { $0.1 != nil }
        guard !given.isEmpty else { return nil }
        if let missing = edges.first(where: { $0.1 == nil }) { throw .invalid(missing.0, "south, west, north and east come together") }
        return try BoxEdges(south: south ?? 0, west: west ?? 0, north: north ?? 0, east: east ?? 0).checked()
    }
}

/// The four edges of a box as a request gives them, checked naming the one at fault.
struct BoxEdges {
    var south, west, north, east: Double

    func checked() throws(ServiceError) -> BoundingBox {
        for (name, value) in [("south", south), ("north", north)] where !(value.isFinite && (-90...90).contains(value)) {
            throw .invalid(name, "must be a finite number in [-90, 90]")
        }
        for (name, value) in [("west", west), ("east", east)] where !(value.isFinite && (-180...180).contains(value)) {
            throw .invalid(name, "must be a finite number in [-180, 180]")
        }
        guard south <= north else { throw .invalid("north", "must not be below south") }
        do {
            return try BoundingBox(south: south, west: west, north: north, east: east)
        } catch {
            throw .invalid("south", "\(error)")
        }
    }
}

/// A page of `annotations.sync`.
struct SyncPage: Encodable, Sendable {
    var changed: [AnnotationJSON]
    var deleted: [Int64]
    var cursor: String
    var more: Bool
    var nextPollS: Int

    enum CodingKeys: String, CodingKey {
        case changed, deleted, cursor, more
        case nextPollS = "next_poll_s"
    }
}

/// What one purge removed.
struct Purged: Encodable, Sendable {
    var annotations: Int
}

/// `annotations.import {annotations: [...]}`.
struct ImportRequest: Decodable, Sendable, DeclaredShape {
    struct Item: Decodable, Sendable {
        var lat: Double
        var lon: Double
        var values: [String: String]
        var text: String?
        var createdAt: String
        var externalId: String

        enum CodingKeys: String, CodingKey {
            case lat, lon, values, text
            case createdAt = "created_at"
            case externalId = "external_id"
        }
    }

    var annotations: [Item]
}

/// `annotations.import`'s reply: the id of each annotation given, in order (an earlier
/// import's for one imported before), and how many are new.
struct Imported: Encodable, Sendable {
    var ids: [Int64]
    var imported: Int
}
