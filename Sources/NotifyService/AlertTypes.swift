import Bus
import Contracts
import Geo

// The values `AlertRules` judges and answers with. Every time is an integer count of
// milliseconds since 1970-01-01T00:00:00Z, so that equal times are equal and every inclusive
// bound (≤) is exact; every distance is Geo's great-circle distance in metres.

/// What the alert rules need to know of one annotation: who posted it, where and when.
public struct AlertAnnotation: Sendable, Hashable {
    /// The annotation's id.
    public var id: Int64
    /// The user who posted it (R1: nobody is alerted of their own annotation).
    public var authorId: Int64
    /// Where it was posted.
    public var point: Coordinate
    /// When it was created, in milliseconds since 1970 (R1's and R3's windows start from it).
    public var createdAt: Int64

    /// An annotation as the rules see it.
    public init(id: Int64, authorId: Int64, point: Coordinate, createdAt: Int64) {
        self.id = id
        self.authorId = authorId
        self.point = point
        self.createdAt = createdAt
    }
}

/// A user's alert settings as they are when a report is processed.
public struct AlertSettings: Sendable, Hashable {
    /// The radii a user may choose, in whole metres (`radius_m`), both ends included.
    public static let radiusRange: ClosedRange<Int> = 50...5000
    /// What a user who never set anything has: alerts on, 500 m.
    public static let defaults = AlertSettings(alerts: true, uncheckedRadiusM: 500)

    /// Whether the user wants alerts at all (R1). Pair transitions (R2) happen either way.
    public let alerts: Bool
    /// How near, in metres, an annotation must be to alert (R1) and to count as "in range" (R2).
    public let radiusM: Int

    /// Settings with a radius in `radiusRange`; anything else is `invalid_argument` on `radius_m`.
    public init(alerts: Bool, radiusM: Int) throws(ServiceError) {
        guard Self.radiusRange.contains(radiusM) else {
            throw .invalid("radius_m", "must be \(Self.radiusRange.lowerBound) to \(Self.radiusRange.upperBound) metres")
        }
        self.init(alerts: alerts, uncheckedRadiusM: radiusM)
    }

    init(alerts: Bool, uncheckedRadiusM radiusM: Int) {
        self.alerts = alerts
        self.radiusM = radiusM
    }
}

/// The last report of a user that was judged: its time and its number among that user's
/// judged reports (1, 2, 3, … in the order they were judged).
///
/// The number names a report, so that R2's "a later report, never the report that disarmed it"
/// holds even between two reports with the same `at` (an equal `at` is not stale: it is a
/// later report).
public struct JudgedReport: Sendable, Hashable {
    /// The report's time, in milliseconds since 1970.
    public var at: Int64
    /// The report's number among the user's judged reports, from 1.
    public var number: Int64

    /// A judged report.
    public init(at: Int64, number: Int64) {
        self.at = at
        self.number = number
    }
}

/// One position report, its time checked against its window when it was made.
public struct AlertReport: Sendable, Hashable {
    /// Who reported.
    public let userId: Int64
    /// Where they were.
    public let point: Coordinate
    /// When they were there (the report's `at`), in milliseconds since 1970.
    public let at: Int64
    /// When the service processed it (its clock's now), in milliseconds since 1970: deletions,
    /// purges (R6) and settings are taken as they are at this moment.
    public let now: Int64

    /// A report at `at`, or at `now` when the client sent none; an `at` outside
    /// [now − 12 h, now + 60 s] is `invalid_argument` on `at` (see `AlertRules.reportTime`).
    public init(userId: Int64, point: Coordinate, at: Int64?, now: Int64) throws(ServiceError) {
        self.userId = userId
        self.point = point
        self.at = try AlertRules.reportTime(at: at, now: now)
        self.now = now
    }
}

/// The state of one (user, annotation) pair (R2). A pair with no stored state is armed.
public enum AlertPairState: String, Sendable, Hashable {
    /// The annotation may alert this user.
    case armed
    /// Disarmed by an alert: armed again at a later report farther than `radius_m` from it.
    case seen
    /// Disarmed by R3: seen at a later report within `radius_m` of it.
    case waiting
}

/// A (user, annotation) pair that is not armed, as the service stores it for one user.
public struct AlertPair: Sendable, Hashable {
    /// The annotation the pair is about.
    public var annotationId: Int64
    /// `seen` or `waiting` (a pair given as `armed` is treated as if it were not there).
    public var state: AlertPairState
    /// The number (`JudgedReport.number`) of the report that put the pair in this state.
    public var disarmedBy: Int64

    /// A pair that is not armed.
    public init(annotationId: Int64, state: AlertPairState, disarmedBy: Int64) {
        self.annotationId = annotationId
        self.state = state
        self.disarmedBy = disarmedBy
    }
}

/// A change of one pair's state made by a report. The service stores `to` with
/// `disarmedBy` = the report's number, or forgets the pair when `to` is `armed`.
public struct AlertPairChange: Sendable, Hashable {
    /// The annotation the pair is about.
    public var annotationId: Int64
    /// Its state before the report.
    public var from: AlertPairState
    /// Its state after the report.
    public var to: AlertPairState

    /// A change of state.
    public init(annotationId: Int64, from: AlertPairState, to: AlertPairState) {
        self.annotationId = annotationId
        self.from = from
        self.to = to
    }
}

/// Where and when an alert suppresses a user's annotations that are created later (R3): every
/// annotation within 500 m of `center` whose `created_at` is in [at − 2 h, at + 2 h].
public struct SuppressionZone: Sendable, Hashable {
    /// The user it suppresses for.
    public var userId: Int64
    /// The alerting annotation's point (the zone stays if that annotation is deleted later).
    public var center: Coordinate
    /// The time `at` of the report whose alert made the zone.
    public var at: Int64
    /// That report's number (`JudgedReport.number`): the waiting pairs it makes were disarmed by it.
    public var report: Int64

    /// A zone.
    public init(userId: Int64, center: Coordinate, at: Int64, report: Int64) {
        self.userId = userId
        self.center = center
        self.at = at
        self.report = report
    }
}

/// What a new annotation's pair starts as for one user: waiting, disarmed by `pair.disarmedBy`.
public struct AlertPairStart: Sendable, Hashable {
    /// The user whose suppression zone covers the annotation.
    public var userId: Int64
    /// The pair to store for that user.
    public var pair: AlertPair

    /// A pair for a user.
    public init(userId: Int64, pair: AlertPair) {
        self.userId = userId
        self.pair = pair
    }
}

/// One annotation that alerted, and how far it was from the report.
public struct Alert: Sendable, Hashable {
    /// The annotation's id.
    public var annotationId: Int64
    /// Great-circle metres from the report to the annotation.
    public var distanceM: Double

    /// An alert.
    public init(annotationId: Int64, distanceM: Double) {
        self.annotationId = annotationId
        self.distanceM = distanceM
    }
}

/// The one push a report makes (R5): its first `AlertRules.pushLimit` alerts, and how many more there were.
public struct AlertPush: Sendable, Hashable {
    /// At most `AlertRules.pushLimit` alerts, nearest first.
    public var alerts: [Alert]
    /// How many alerts of the report are not listed (`more: N`); 0 when none.
    public var more: Int

    /// A push.
    public init(alerts: [Alert], more: Int) {
        self.alerts = alerts
        self.more = more
    }
}

/// The rules' answer to one report.
public struct AlertJudgement: Sendable, Hashable {
    /// Whether the report was earlier than the user's latest judged one: then nothing changed.
    public var stale: Bool
    /// Every annotation that alerted, in the order they alerted (R4: nearest first).
    public var alerts: [Alert]
    /// The report's one push, or nil when nothing alerted.
    public var push: AlertPush?
    /// Every pair whose state the report changed, by annotation id ascending.
    public var pairChanges: [AlertPairChange]
    /// One zone per alert, in the order of `alerts` (R3 for annotations created later).
    public var newZones: [SuppressionZone]
    /// The user's latest judged report after this one (unchanged when stale).
    public var judged: JudgedReport

    /// A judgement.
    public init(
        stale: Bool, alerts: [Alert], push: AlertPush?, pairChanges: [AlertPairChange],
        newZones: [SuppressionZone], judged: JudgedReport
    ) {
        self.stale = stale
        self.alerts = alerts
        self.push = push
        self.pairChanges = pairChanges
        self.newZones = newZones
        self.judged = judged
    }
}
