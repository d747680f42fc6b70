import Bus
import Foundation
import Geo

// The params and results of the notify service's methods (Protocols/notify.md): annotations,
// the form, alert settings, reports and the inbox.

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

    public init(id: Int64, lat: Double, lon: Double, values: [String: String], text: String? = nil, userId: Int64, createdAt: String, expiresAt: String, distanceM: Double? = nil) {
        self.id = id
        self.lat = lat
        self.lon = lon
        self.values = values
        self.text = text
        self.userId = userId
        self.createdAt = createdAt
        self.expiresAt = expiresAt
        self.distanceM = distanceM
    }
}

/// `annotations.form {lat?, lon?, lang?}`.
public struct FormRequest: Decodable, Sendable, DeclaredShape {
    /// Where the client is: only what can be picked there is shown.
    public var near: Point?
    public var lang: String?

    public init(near: Point? = nil, lang: String? = nil) {
        self.near = near
        self.lang = lang
    }
}

/// `annotations.form.set`'s reply: the version now in force.
public struct FormSet: Codable, Sendable {
    public var version: Int

    public init(version: Int) {
        self.version = version
    }
}

/// `annotations.submit {lat, lon, values, text?}`.
public struct SubmitRequest: Decodable, Sendable, DeclaredShape {
    /// An annotation's text: at most 500 characters (in Swift `Character`s) and at most 8,000
    /// UTF-8 bytes, checked first (500 flags or skin-toned emoji, 8 bytes each, fit); line
    /// breaks allowed. `annotations.import` holds each item's text to it too.
    public static let textRule = TextRule("text", maxCharacters: 500, maxBytes: 8_000, lines: .multiple)
    public static let fieldRules: [FieldRule] = [.text(textRule)]

    public var lat: Double
    public var lon: Double
    public var values: [String: String]
    public var text: String?

    public init(lat: Double, lon: Double, values: [String: String], text: String? = nil) {
        self.lat = lat
        self.lon = lon
        self.values = values
        self.text = text
    }
}

/// `annotations.get {id}`, `annotations.delete {id}`.
public struct AnnotationRef: Decodable, Sendable, DeclaredShape {
    public var id: Int64

    public init(id: Int64) {
        self.id = id
    }
}

/// `annotations.delete`'s reply.
public struct AnnotationDeleted: Codable, Sendable {
    public var id: Int64
    public var deleted = true

    public init(id: Int64) {
        self.id = id
    }
}

/// `annotations.nearby {lat, lon, radius_m, cursor?, limit?}`.
public struct NearbyRequest: Decodable, Sendable, DeclaredShape {
    public var near: Point
    public var radiusM: Double
    public var cursor: String?
    public var limit: Int?

    /// The largest radius, in metres.
    public static let maxRadius = 50_000.0

    enum CodingKeys: String, CodingKey {
        case near, cursor, limit
        case radiusM = "radius_m"
    }

    public init(near: Point, radiusM: Double, cursor: String? = nil, limit: Int? = nil) {
        self.near = near
        self.radiusM = radiusM
        self.cursor = cursor
        self.limit = limit
    }

    public static let fieldRules: [FieldRule] = [PageLimit.annotations.rule, .number("radius_m", 1...maxRadius)]
}

/// `annotations.viewport {bbox, cursor?, limit?}`.
public struct ViewportRequest: Decodable, Sendable, DeclaredShape {
    public var bbox: Box
    public var cursor: String?
    public var limit: Int?

    public init(bbox: Box, cursor: String? = nil, limit: Int? = nil) {
        self.bbox = bbox
        self.cursor = cursor
        self.limit = limit
    }

    public static let fieldRules: [FieldRule] = [PageLimit.annotations.rule]
}

/// A page of annotations.
public struct AnnotationPage: Codable, Sendable {
    public var annotations: [AnnotationJSON]
    public var nextCursor: String?

    enum CodingKeys: String, CodingKey {
        case annotations
        case nextCursor = "next_cursor"
    }

    public init(annotations: [AnnotationJSON], nextCursor: String? = nil) {
        self.annotations = annotations
        self.nextCursor = nextCursor
    }
}

/// A user's notify settings, as `notify.settings.get` and `.set` answer them.
public struct SettingsJSON: Codable, Sendable, Equatable {
    public var alerts: Bool
    public var radiusM: Int
    public var timezone: String
    public var appTimerMin: Int?
    public var idleTimerMin: Int?

    enum CodingKeys: String, CodingKey {
        case alerts, timezone
        case radiusM = "radius_m"
        case appTimerMin = "app_timer_min"
        case idleTimerMin = "idle_timer_min"
    }

    public init(alerts: Bool, radiusM: Int, timezone: String, appTimerMin: Int? = nil, idleTimerMin: Int? = nil) {
        self.alerts = alerts
        self.radiusM = radiusM
        self.timezone = timezone
        self.appTimerMin = appTimerMin
        self.idleTimerMin = idleTimerMin
    }
}

/// `notify.settings.set`: what is absent stays; `null` clears a timer.
public struct SettingsChange: Decodable, Sendable, DeclaredShape {
    public var alerts: Bool?
    public var radiusM: Int?
    public var timezone: String?
    public var appTimerMin: Patch<Int>
    public var idleTimerMin: Patch<Int>

    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: SettingsJSON.CodingKeys.self)
        alerts = try c.decodeIfPresent(Bool.self, forKey: .alerts)
        radiusM = try c.decodeIfPresent(Int.self, forKey: .radiusM)
        timezone = try c.decodeIfPresent(String.self, forKey: .timezone)
        appTimerMin = try c.decodePatch(Int.self, forKey: .appTimerMin)
        idleTimerMin = try c.decodePatch(Int.self, forKey: .idleTimerMin)
    }

    public init(alerts: Bool? = nil, radiusM: Int? = nil, timezone: String? = nil, appTimerMin: Patch<Int>, idleTimerMin: Patch<Int>) {
        self.alerts = alerts
        self.radiusM = radiusM
        self.timezone = timezone
        self.appTimerMin = appTimerMin
        self.idleTimerMin = idleTimerMin
    }
}

/// `notify.location {lat, lon, at?}`.
public struct LocationRequest: Decodable, Sendable, DeclaredShape {
    public var lat: Double
    public var lon: Double
    public var at: String?

    public init(lat: Double, lon: Double, at: String? = nil) {
        self.lat = lat
        self.lon = lon
        self.at = at
    }
}

/// What a report alerted: the push's body, and with `stale` the reply to `notify.location`.
public struct AlertList: Codable, Sendable {
    public var alerts: [AnnotationJSON]
    /// How many alerts of the report are not listed; absent when none.
    public var more: Int?
    /// Only in the reply to `notify.location`.
    public var stale: Bool?

    public init(alerts: [AnnotationJSON], more: Int? = nil, stale: Bool? = nil) {
        self.alerts = alerts
        self.more = more
        self.stale = stale
    }
}

/// `notify.inbox {cursor?, limit?}`.
public struct InboxRequest: Decodable, Sendable, DeclaredShape {
    public var cursor: String?
    public var limit: Int?

    public init(cursor: String? = nil, limit: Int? = nil) {
        self.cursor = cursor
        self.limit = limit
    }

    public static let fieldRules: [FieldRule] = [PageLimit.annotations.rule]
}

/// One alert kept for its user until acknowledged.
public struct InboxEntry: Codable, Sendable {
    public var id: Int64
    public var at: String
    public var alert: AnnotationJSON

    public init(id: Int64, at: String, alert: AnnotationJSON) {
        self.id = id
        self.at = at
        self.alert = alert
    }
}

/// A page of the inbox, oldest first.
public struct InboxPage: Codable, Sendable {
    public var entries: [InboxEntry]
    public var nextCursor: String?

    enum CodingKeys: String, CodingKey {
        case entries
        case nextCursor = "next_cursor"
    }

    public init(entries: [InboxEntry], nextCursor: String? = nil) {
        self.entries = entries
        self.nextCursor = nextCursor
    }
}

/// `notify.ack {ids}`.
public struct AckRequest: Decodable, Sendable, DeclaredShape {
    public var ids: [Int64]

    public init(ids: [Int64]) {
        self.ids = ids
    }
}

/// `notify.ack`'s reply: how many of the ids were the caller's entries and are now gone.
public struct Acked: Codable, Sendable {
    public var acked: Int

    public init(acked: Int) {
        self.acked = acked
    }
}

/// `annotations.sync {cursor?, south?, west?, north?, east?, limit?}`.
public struct SyncRequest: Decodable, Sendable, DeclaredShape {
    public var cursor: String?
    /// Only the annotations inside this box (none: everywhere).
    public var bbox: Box?
    public var limit: Int?

    public init(cursor: String? = nil, bbox: Box? = nil, limit: Int? = nil) {
        self.cursor = cursor
        self.bbox = bbox
        self.limit = limit
    }

    public static let fieldRules: [FieldRule] = [PageLimit.annotations.rule]
}

/// A page of `annotations.sync`.
public struct SyncPage: Codable, Sendable {
    public var changed: [AnnotationJSON]
    public var deleted: [Int64]
    public var cursor: String
    public var more: Bool
    public var nextPollS: Int

    enum CodingKeys: String, CodingKey {
        case changed, deleted, cursor, more
        case nextPollS = "next_poll_s"
    }

    public init(changed: [AnnotationJSON], deleted: [Int64], cursor: String, more: Bool, nextPollS: Int) {
        self.changed = changed
        self.deleted = deleted
        self.cursor = cursor
        self.more = more
        self.nextPollS = nextPollS
    }
}

/// What one purge removed.
public struct Purged: Codable, Sendable {
    public var annotations: Int

    public init(annotations: Int) {
        self.annotations = annotations
    }
}

/// `annotations.import {annotations: [...]}`.
public struct ImportRequest: Decodable, Sendable, DeclaredShape {
    public struct Item: Decodable, Sendable {
        public var lat: Double
        public var lon: Double
        public var values: [String: String]
        public var text: String?
        public var createdAt: String
        public var externalId: String

        enum CodingKeys: String, CodingKey {
            case lat, lon, values, text
            case createdAt = "created_at"
            case externalId = "external_id"
        }

        public init(lat: Double, lon: Double, values: [String: String], text: String? = nil, createdAt: String, externalId: String) {
            self.lat = lat
            self.lon = lon
            self.values = values
            self.text = text
            self.createdAt = createdAt
            self.externalId = externalId
        }
    }

    public var annotations: [Item]

    public init(annotations: [Item]) {
        self.annotations = annotations
    }
}

/// `annotations.import`'s reply: the id of each annotation given, in order (an earlier
/// import's for one imported before), and how many are new.
public struct Imported: Codable, Sendable {
    public var ids: [Int64]
    public var imported: Int

    public init(ids: [Int64], imported: Int) {
        self.ids = ids
        self.imported = imported
    }
}

/// The params of `annotations.form.set`: the form, which `AnnotationForm` reads and checks.
public struct FormReplacement: DeclaredShape {
    public var form: AnyJSON

    public init(form: AnyJSON) {
        self.form = form
    }
}

/// The annotation form as a client gets it (`annotations.form`): one label per field and
/// choice, in the language asked for, and, for a position, only what can be picked there.
///
/// Encoded with sorted keys (`JSONCoding.encoder`), so the same form gives the same bytes;
/// `depends_on`, `parent` and `region` are left out where there are none. A dependent field
/// lists every choice still shown with its `parent`: the client filters them as the user
/// picks the parent field, with no second request.
public struct FormView: Codable, Sendable, Equatable {
    /// The form's version.
    public let version: Int
    /// The fields shown, in order.
    public let fields: [Field]

    public init(version: Int, fields: [Field]) {
        (self.version, self.fields) = (version, fields)
    }

    /// One picker as shown.
    public struct Field: Codable, Sendable, Equatable {
        /// Its key in a submission's values.
        public let name: String
        /// Its label in the language asked for, or the nearest one the form has.
        public let label: String
        /// As the form says; a field is left out where it has nothing to pick.
        public let required: Bool
        /// The earlier field whose value selects among `choices`.
        public let dependsOn: String?
        /// What can be picked, in the form's order.
        public let choices: [Choice]

        enum CodingKeys: String, CodingKey {
            case name, label, required, choices
            case dependsOn = "depends_on"
        }

        public init(name: String, label: String, required: Bool, dependsOn: String?, choices: [Choice]) {
            (self.name, self.label, self.required, self.dependsOn, self.choices) = (name, label, required, dependsOn, choices)
        }
    }

    /// One choice as shown.
    public struct Choice: Codable, Sendable, Equatable {
        /// What a submission sends.
        public let value: String
        /// Its label in the language asked for, or the nearest one the form has.
        public let label: String
        /// The parent field's value this choice belongs to, in a dependent field.
        public let parent: String?
        /// Where the choice exists, if not everywhere.
        public let region: ChoiceRegion?

        public init(value: String, label: String, parent: String?, region: ChoiceRegion?) {
            (self.value, self.label, self.parent, self.region) = (value, label, parent, region)
        }
    }
}

/// Where a choice exists: a circle or a box on the sphere of `Geo`, edges included.
public enum ChoiceRegion: Sendable, Equatable, Codable, SaysItsShape {
    /// Every point within `radiusMeters` (great-circle) of `center`.
    case circle(center: Coordinate, radiusMeters: Double)
    /// Every point of the box; `west > east` crosses the 180th meridian.
    case box(BoundingBox)

    /// A circle `{lat, lon, radius_m}` or a box `{south, west, north, east}`.
    public static func shape() throws -> Schema {
        .anyOf([try SchemaProbe.plainShape(of: Circle.self), try SchemaProbe.plainShape(of: Box.self)])
    }

    public static var example: ChoiceRegion { .circle(center: Coordinate(uncheckedLatitude: 0, longitude: 0), radiusMeters: 1) }

    /// The circle's members, for its shape.
    private struct Circle: Decodable {
        var lat, lon: Double
        var radiusM: Double
        enum CodingKeys: String, CodingKey {
            case lat, lon
            case radiusM = "radius_m"
        }
    }

    /// Whether `position` lies in the region or on its edge.
    public func contains(_ position: Coordinate) -> Bool {
        switch self {
        case .circle(let center, let radius): center.distance(to: position) <= radius
        case .box(let box): box.contains(position)
        }
    }

    private enum CodingKeys: String, CodingKey {
        case lat, lon, south, west, north, east
        case radiusMeters = "radius_m"
    }

    /// `{lat, lon, radius_m}` or `{south, west, north, east}`.
    /// `{lat, lon, radius_m}` or `{south, west, north, east}`.
    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        if c.contains(.radiusMeters) {
            let center = try Coordinate(latitude: try c.decode(Double.self, forKey: .lat), longitude: try c.decode(Double.self, forKey: .lon))
            self = .circle(center: center, radiusMeters: try c.decode(Double.self, forKey: .radiusMeters))
        } else {
            self = .box(
                try BoundingBox(
                    south: try c.decode(Double.self, forKey: .south), west: try c.decode(Double.self, forKey: .west),
                    north: try c.decode(Double.self, forKey: .north), east: try c.decode(Double.self, forKey: .east)))
        }
    }

    /// As in the form: `{lat, lon, radius_m}` or `{south, west, north, east}`.
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        switch self {
        case .circle(let center, let radius):
            try container.encode(center.latitude, forKey: .lat)
            try container.encode(center.longitude, forKey: .lon)
            try container.encode(radius, forKey: .radiusMeters)
        case .box(let box):
            try container.encode(box.south, forKey: .south)
            try container.encode(box.west, forKey: .west)
            try container.encode(box.north, forKey: .north)
            try container.encode(box.east, forKey: .east)
        }
    }
}
