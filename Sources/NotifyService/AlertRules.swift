import Bus
import Contracts
import Geo

/// The alert rules of issue 12 (R1–R6) as a pure, exact core: no storage, no clock of its own,
/// no threads. The service keeps the state (pairs, zones, each user's latest judged report) in
/// its SQLite file, calls `judge` once per position report, in one transaction stores what the
/// judgement says, and calls `initialPairs` for each annotation it creates.
///
/// Times are integer milliseconds since 1970 and distances Geo's great-circle metres on the
/// sphere of radius 6,371,008.8 m; every bound is inclusive (≤), so a report exactly at a bound
/// is inside it and 1 ms (or a few centimetres) past it is outside.
///
/// Choices where the issue leaves room, each tested in `AlertRulesTests`:
/// - R3 moves only *armed* pairs to *waiting*. A *seen* pair stays *seen*: the user has already
///   been in range of that annotation since it alerted, which is what *waiting* waits for, and
///   it re-arms once they leave. A *waiting* pair stays as it is.
/// - Within one report, the R2 transitions of pairs disarmed by earlier reports come first (on
///   the report's position), then the alerts in R4 order, each followed by R3. So a *waiting*
///   pair the user is now in range of becomes *seen* even if an alert of this report would have
///   suppressed it, and no pair changes twice because of this report's own alerts.
/// - "Later report" means judged later: a report with the same `at` as the one that disarmed a
///   pair is a later report (an equal `at` is not stale), which is why reports are numbered.
/// - R2 transitions do not depend on R1's other conditions: they happen with alerts off, after
///   the 6 h window and for the user's own annotations; only `at ≥ created_at` is required.
/// - R3 suppresses every annotation B that matches, the user's own ones too (they never alert
///   anyway), and a zone outlives the deletion of the annotation that made it.
/// - A stale report changes nothing at all: no alert, no transition, no zone, no new latest `at`.
public enum AlertRules {
    /// One hour in milliseconds.
    public static let hourMs: Int64 = 3_600_000
    /// R1: an annotation alerts until `created_at + 6 h`, inclusive.
    public static let freshForMs: Int64 = 6 * hourMs
    /// R3: an alert suppresses annotations within this many metres of the one that fired.
    public static let suppressionRadiusM: Double = 500
    /// R3: … whose `created_at` is within this many milliseconds of the report's `at`, either way.
    public static let suppressionWindowMs: Int64 = 2 * hourMs
    /// R6: annotations, alert state and inbox entries older than this are deleted.
    public static let lifetimeMs: Int64 = 12 * hourMs
    /// A report's `at` may be at most this far behind the service's clock.
    public static let reportPastMs: Int64 = 12 * hourMs
    /// A report's `at` may be at most this far ahead of the service's clock.
    public static let reportFutureMs: Int64 = 60_000
    /// R5: a push lists at most this many alerts.
    public static let pushLimit = 20

    // MARK: Time

    /// A report's time: `at`, or `now` when the client sent none. `at` must lie in
    /// [now − 12 h, now + 60 s], both ends included; otherwise `invalid_argument` on `at`.
    public static func reportTime(at: Int64?, now: Int64) throws(ServiceError) -> Int64 {
        guard let at else { return now }
        guard shifted(now, by: -reportPastMs) <= at, at <= shifted(now, by: reportFutureMs) else {
            throw .invalid("at", "must be within 12 hours before and 60 seconds after the server's time")
        }
        return at
    }

    /// R6: when an annotation created at `createdAt` expires (`expires_at` = created_at + 12 h).
    public static func expiresAt(createdAt: Int64) -> Int64 { shifted(createdAt, by: lifetimeMs) }

    /// R6: everything created before this moment (`now − 12 h`) is older than 12 h and deleted;
    /// what was created exactly at it is 12 h old, not older, and stays.
    public static func purgeHorizon(now: Int64) -> Int64 { shifted(now, by: -lifetimeMs) }

    /// R6: whether an annotation (or inbox entry) created at `createdAt` is purged at `now`,
    /// that is, `now` is past its `expires_at`.
    public static func isPurged(createdAt: Int64, now: Int64) -> Bool { createdAt < purgeHorizon(now: now) }

    /// R6 for zones: a zone is purged once every annotation it could cover (created by
    /// `zone.at + 2 h`) is, so deleting it then can never change an answer.
    public static func isPurged(_ zone: SuppressionZone, now: Int64) -> Bool {
        shifted(zone.at, by: suppressionWindowMs) < purgeHorizon(now: now)
    }

    // MARK: Rules

    /// Judges one position report (R1–R5) and says what changes.
    ///
    /// - Parameters:
    ///   - report: the report, its `at` already checked against its window.
    ///   - settings: the user's settings as they are now.
    ///   - lastJudged: the user's latest judged report, or nil before the first.
    ///   - annotations: the live annotations that can matter. The service passes every live
    ///     annotation within `radius_m + 500` m of the report (whatever can alert, and whatever
    ///     an alert can suppress), plus those of the user's pairs in `pairs`, wherever they are.
    ///     More does no harm: each rule is checked here exactly, and an annotation created
    ///     before `purgeHorizon(now:)` is left out even when passed. A deleted one must not be
    ///     passed. Of two with the same id, the first counts.
    ///   - pairs: the user's pairs that are not armed (any pair not listed is armed); a pair
    ///     whose annotation is not in `annotations` is left as it is.
    /// - Returns: stale and nothing else when `report.at` is earlier than `lastJudged.at`;
    ///   otherwise the alerts nearest first, the push, the pair changes, one zone per alert and
    ///   the new latest report.
    public static func judge(
        _ report: AlertReport, settings: AlertSettings, lastJudged: JudgedReport?,
        annotations: [AlertAnnotation], pairs: [AlertPair]
    ) -> AlertJudgement {
        if let lastJudged, report.at < lastJudged.at {
            return AlertJudgement(stale: true, alerts: [], push: nil, pairChanges: [], newZones: [], judged: lastJudged)
        }
        let number = (lastJudged?.number ?? 0) + 1
        var live: [Int64: AlertAnnotation] = [:]
        var distance: [Int64: Double] = [:]
        for annotation in annotations
        where live[annotation.id] == nil && !isPurged(createdAt: annotation.createdAt, now: report.now) {
            live[annotation.id] = annotation
            distance[annotation.id] = report.point.distance(to: annotation.point)
        }
        var state: [Int64: AlertPair] = [:]
        for pair in pairs where pair.state != .armed && state[pair.annotationId] == nil {
            state[pair.annotationId] = pair
        }
        let before = state.mapValues(\.state)
        let radius = Double(settings.radiusM)

        // R2: transitions of pairs disarmed by an earlier report, for annotations created by `at`.
        for pair in state.values {
            guard pair.disarmedBy < number, let annotation = live[pair.annotationId],
                let d = distance[pair.annotationId], annotation.createdAt <= report.at
            else { continue }
            if pair.state == .waiting, d <= radius {
                state[pair.annotationId] = AlertPair(annotationId: pair.annotationId, state: .seen, disarmedBy: number)
            } else if pair.state == .seen, d > radius {
                state[pair.annotationId] = nil
            }
        }

        // R1 and R4: eligible armed annotations, nearest first, then older, then lower id.
        var alerts: [Alert] = []
        var zones: [SuppressionZone] = []
        if settings.alerts {
            let candidates = live.values.filter { annotation in
                annotation.authorId != report.userId
                    && annotation.createdAt <= report.at
                    && report.at <= shifted(annotation.createdAt, by: freshForMs)
                    && distance[annotation.id, default: .infinity] <= radius
            }.sorted { a, b in
                let da = distance[a.id, default: .infinity]
                let db = distance[b.id, default: .infinity]
                if da != db { return da < db }
                if a.createdAt != b.createdAt { return a.createdAt < b.createdAt }
                return a.id < b.id
            }
            // R3's neighbours are looked for in a latitude band: a great-circle distance is never
            // less than the latitudes' difference times the radius, so what lies outside the band
            // is farther than 500 m (a hair more is taken, and each is checked exactly).
            let byLatitude = live.values.sorted { $0.point.latitude < $1.point.latitude }
            let band = suppressionRadiusM / Earth.meanRadiusMeters * 180 / .pi + 1e-9
            func firstNorthOf(_ latitude: Double) -> Int {
                var low = 0
                var high = byLatitude.count
                while low < high {
                    let mid = (low + high) / 2
                    if byLatitude[mid].point.latitude < latitude { low = mid + 1 } else { high = mid }
                }
                return low
            }
            for annotation in candidates where state[annotation.id] == nil {
                alerts.append(Alert(annotationId: annotation.id, distanceM: distance[annotation.id, default: .infinity]))
                state[annotation.id] = AlertPair(annotationId: annotation.id, state: .seen, disarmedBy: number)
                let zone = SuppressionZone(userId: report.userId, center: annotation.point, at: report.at, report: number)
                zones.append(zone)
                // R3, before the next candidate is considered.
                var i = firstNorthOf(annotation.point.latitude - band)
                while i < byLatitude.count, byLatitude[i].point.latitude <= annotation.point.latitude + band {
                    let other = byLatitude[i]
                    if state[other.id] == nil && covers(zone, other) {
                        state[other.id] = AlertPair(annotationId: other.id, state: .waiting, disarmedBy: number)
                    }
                    i += 1
                }
            }
        }

        let touched = Set(before.keys).union(state.keys)
        let changes = touched.sorted().compactMap { id -> AlertPairChange? in
            let from = before[id] ?? .armed
            let to = state[id]?.state ?? .armed
            return from == to ? nil : AlertPairChange(annotationId: id, from: from, to: to)
        }
        let push =
            alerts.isEmpty
            ? nil : AlertPush(alerts: Array(alerts.prefix(pushLimit)), more: max(0, alerts.count - pushLimit))
        return AlertJudgement(
            stale: false, alerts: alerts, push: push, pairChanges: changes, newZones: zones,
            judged: JudgedReport(at: report.at, number: number))
    }

    /// R3 for an annotation created after the alert: the waiting pair it starts with for each
    /// user one of whose `zones` covers it (within 500 m of the zone's center, `created_at` in
    /// [zone.at − 2 h, zone.at + 2 h]), by user id ascending; every other user's pair is armed.
    ///
    /// The service passes every zone that can cover the annotation (all zones within 500 m of
    /// it, or simply all); a pair is disarmed by the latest covering zone's report.
    public static func initialPairs(of annotation: AlertAnnotation, zones: [SuppressionZone]) -> [AlertPairStart] {
        var disarmedBy: [Int64: Int64] = [:]
        for zone in zones where covers(zone, annotation) {
            disarmedBy[zone.userId] = max(disarmedBy[zone.userId] ?? zone.report, zone.report)
        }
        return disarmedBy.keys.sorted().map { user in
            AlertPairStart(
                userId: user,
                pair: AlertPair(
                    annotationId: annotation.id, state: .waiting,
                    disarmedBy: disarmedBy[user, default: 0]))
        }
    }

    /// Whether `zone` suppresses `annotation` (R3): within 500 m, created within 2 h of the zone's `at`.
    static func covers(_ zone: SuppressionZone, _ annotation: AlertAnnotation) -> Bool {
        shifted(zone.at, by: -suppressionWindowMs) <= annotation.createdAt
            && annotation.createdAt <= shifted(zone.at, by: suppressionWindowMs)
            && zone.center.distance(to: annotation.point) <= suppressionRadiusM
    }

    /// `time + delta`, held at Int64's ends instead of overflowing (times come from clients and storage).
    static func shifted(_ time: Int64, by delta: Int64) -> Int64 {
        let (sum, overflow) = time.addingReportingOverflow(delta)
        guard overflow else { return sum }
        return delta > 0 ? .max : .min
    }
}
