import Bus
import Geo
import Testing
@testable import NotifyService

// Each alert rule of issue 12 alone, near (0, 0) on the equator, where coordinates are fine
// enough that points at exactly 50, 500 or 5000 metres (as Geo computes it) can be found.

/// The rules one at a time; the helpers are static members so that the test target's other files
/// may use the same names.
enum AlertRulesTests {
    static let hour = AlertRules.hourMs
    /// The injected clock's "now" for most tests: 2027-01-15T08:00:00Z.
    static let t0: Int64 = 1_800_000_000_000
    static let origin = Coordinate(uncheckedLatitude: 0, longitude: 0)
    /// Metres per degree of longitude along the equator.
    static let metersPerDegree = Earth.meanRadiusMeters * Double.pi / 180

    /// The point on the equator `meters` east of (0, 0), approximately.
    static func east(_ meters: Double) -> Coordinate {
        Coordinate(uncheckedLatitude: 0, longitude: meters / metersPerDegree)
    }

    /// The point on the equator `meters` north (negative: south) and `eastMeters` east of (0, 0), approximately.
    static func offset(north: Double, east eastMeters: Double) -> Coordinate {
        Coordinate(uncheckedLatitude: north / metersPerDegree, longitude: eastMeters / metersPerDegree)
    }

    /// A point about `meters` east of (0, 0) whose distance from it, as Geo computes it, is exactly
    /// `meters`, so that it tests an inclusive bound and not a rounding. Along the equator alone
    /// some distances (500 m among them) are never computed exactly, so it also tries points a few
    /// decimetres north, and for each the farthest longitude within `meters`, found by bisection.
    static func eastAtExactly(_ meters: Double) throws -> Coordinate {
        for step in 0..<100 {
            let latitude = Double(step) * 0.1 / metersPerDegree
            let along = (meters * meters - 0.01 * Double(step * step)).squareRoot() / metersPerDegree
            var low = along * (1 - 1e-6), high = along * (1 + 1e-6)
            func distance(_ longitude: Double) -> Double {
                origin.distance(to: Coordinate(uncheckedLatitude: latitude, longitude: longitude))
            }
            guard distance(low) <= meters, distance(high) > meters else { continue }
            for _ in 0..<200 where low.nextUp < high {
                let middle = low + (high - low) / 2
                if distance(middle) <= meters { low = middle } else { high = middle }
            }
            if distance(low) == meters { return Coordinate(uncheckedLatitude: latitude, longitude: low) }
        }
        throw ExactPointNotFound(meters: meters)
    }

    struct ExactPointNotFound: Error { var meters: Double }

    /// A point `centimeters` farther east than `point`, checked to be that much farther from (0, 0).
    static func beyond(_ point: Coordinate, centimeters: Double = 2) throws -> Coordinate {
        let farther = withLongitude(point, point.longitude + centimeters / 100 / metersPerDegree)
        let gained = origin.distance(to: farther) - origin.distance(to: point)
        try #require(abs(gained - centimeters / 100) < 0.001)
        return farther
    }

    /// `point` moved to `longitude`.
    static func withLongitude(_ point: Coordinate, _ longitude: Double) -> Coordinate {
        Coordinate(uncheckedLatitude: point.latitude, longitude: longitude)
    }

    /// An annotation posted by user 99 unless told.
    static func note(_ id: Int64, _ point: Coordinate, created: Int64, by author: Int64 = 99) -> AlertAnnotation {
        AlertAnnotation(id: id, authorId: author, point: point, createdAt: created)
    }

    /// One user as the service would keep them: settings, latest judged report, pairs and zones,
    /// updated from each judgement as the service would store it.
    struct AlertUser {
        var id: Int64 = 1
        var settings = AlertSettings.defaults
        var last: JudgedReport?
        var pairs: [Int64: AlertPair] = [:]
        var zones: [SuppressionZone] = []

        /// Judges a report at `point` and `at` (processed at `now`, by default `at`) and stores the outcome.
        mutating func report(_ point: Coordinate, at: Int64, now: Int64? = nil,
                             _ annotations: [AlertAnnotation]) throws -> AlertJudgement {
            let report = try AlertReport(userId: id, point: point, at: at, now: now ?? at)
            let judgement = AlertRules.judge(report, settings: settings, lastJudged: last,
                                             annotations: annotations, pairs: Array(pairs.values))
            apply(judgement)
            return judgement
        }

        mutating func apply(_ judgement: AlertJudgement) {
            for change in judgement.pairChanges {
                pairs[change.annotationId] = change.to == .armed
                    ? nil : AlertPair(annotationId: change.annotationId, state: change.to, disarmedBy: judgement.judged.number)
            }
            zones += judgement.newZones
            last = judgement.judged
        }

        func state(_ id: Int64) -> AlertPairState { pairs[id]?.state ?? .armed }
    }

    static func alerted(_ judgement: AlertJudgement) -> [Int64] { judgement.alerts.map(\.annotationId) }

    @Suite struct ReportTimeTests {
        @Test func atDefaultsToNowAndItsWindowIsInclusive() throws {
            #expect(try AlertRules.reportTime(at: nil, now: t0) == t0)
            #expect(try AlertRules.reportTime(at: t0 - 12 * hour, now: t0) == t0 - 12 * hour)
            #expect(try AlertRules.reportTime(at: t0 + 60_000, now: t0) == t0 + 60_000)
            #expect(try AlertRules.reportTime(at: t0, now: t0) == t0)
            let refusal = ServiceError.invalid("at", "must be within 12 hours before and 60 seconds after the server's time")
            for at in [t0 - 12 * hour - 1, t0 + 60_001, Int64.min, Int64.max, 0, -1] {
                #expect(throws: refusal) { try AlertRules.reportTime(at: at, now: t0) }
                #expect(throws: refusal) { try AlertReport(userId: 1, point: origin, at: at, now: t0) }
            }
        }

        @Test func aClockAtInt64sEndsDoesNotTrap() throws {
            #expect(try AlertRules.reportTime(at: Int64.max, now: Int64.max) == Int64.max)
            #expect(throws: ServiceError.self) { try AlertRules.reportTime(at: Int64.min, now: Int64.max) }
            #expect(try AlertRules.reportTime(at: Int64.min, now: Int64.min) == Int64.min)
            #expect(throws: ServiceError.self) { try AlertRules.reportTime(at: Int64.max, now: Int64.min) }
        }

        @Test func theRadiusIsFiftyToFiveThousandMetres() throws {
            #expect(try AlertSettings(alerts: true, radiusM: 50).radiusM == 50)
            #expect(try AlertSettings(alerts: false, radiusM: 5000).radiusM == 5000)
            #expect(AlertSettings.defaults == (try AlertSettings(alerts: true, radiusM: 500)))
            for radius in [49, 5001, 0, -1, Int.min, Int.max] {
                #expect(throws: ServiceError.invalid("radius_m", "must be 50 to 5000 metres")) {
                    try AlertSettings(alerts: true, radiusM: radius)
                }
            }
        }
    }

    @Suite struct EligibilityTests {
        @Test func anAnnotationAlertsFromTheMomentItIsCreated() throws {
            let a = note(1, origin, created: t0)
            var onTime = AlertUser()
            #expect(alerted(try onTime.report(origin, at: t0, [a])) == [1])
            var early = AlertUser()
            #expect(try early.report(origin, at: t0 - 1, now: t0, [a]).alerts.isEmpty)
        }

        @Test func anAnnotationAlertsUntilSixHoursAfterItWasCreatedInclusive() throws {
            let a = note(1, origin, created: t0)
            var atSix = AlertUser()
            #expect(alerted(try atSix.report(origin, at: t0 + 6 * hour, [a])) == [1])
            var past = AlertUser()
            #expect(try past.report(origin, at: t0 + 6 * hour + 1, [a]).alerts.isEmpty)
        }

        @Test func nobodyIsAlertedOfTheirOwnAnnotation() throws {
            var user = AlertUser(id: 7)
            #expect(try user.report(origin, at: t0, [note(1, origin, created: t0, by: 7)]).alerts.isEmpty)
            #expect(alerted(try user.report(origin, at: t0, [note(2, origin, created: t0, by: 8)])) == [2])
        }

        @Test func alertsOffMeansNoAlert() throws {
            let a = note(1, origin, created: t0)
            var off = AlertUser(settings: try AlertSettings(alerts: false, radiusM: 500))
            let quiet = try off.report(origin, at: t0, [a])
            #expect(quiet.alerts.isEmpty && quiet.push == nil && quiet.pairChanges.isEmpty && !quiet.stale)
            off.settings = try AlertSettings(alerts: true, radiusM: 500)
            #expect(alerted(try off.report(origin, at: t0 + 1, [a])) == [1])
        }

        @Test(arguments: [50, 500, 5000])
        func theRadiusIsInclusiveToTheCentimetre(radius: Int) throws {
            let edge = try eastAtExactly(Double(radius))
            let settings = try AlertSettings(alerts: true, radiusM: radius)
            var atEdge = AlertUser(settings: settings)
            // The report is at the edge and the annotation at (0, 0): the distance is the same both ways.
            let judgement = try atEdge.report(edge, at: t0, [note(1, origin, created: t0)])
            #expect(judgement.alerts == [Alert(annotationId: 1, distanceM: Double(radius))])
            var outside = AlertUser(settings: settings)
            #expect(try outside.report(try beyond(edge), at: t0, [note(1, origin, created: t0)]).alerts.isEmpty)
        }

        @Test func aPurgedAnnotationNeverAlertsEvenIfPassed() throws {
            // Twelve hours old exactly is not older than twelve hours: still there.
            var kept = AlertUser()
            let twelve = note(1, origin, created: t0 - 12 * hour)
            #expect(alerted(try kept.report(origin, at: t0 - 11 * hour, now: t0, [twelve])) == [1])
            // One millisecond more and it is gone, though R1's window alone (at − created_at = 1 h) would allow it.
            var purged = AlertUser()
            let older = note(1, origin, created: t0 - 12 * hour - 1)
            let judgement = try purged.report(origin, at: t0 - 11 * hour, now: t0, [older])
            #expect(judgement.alerts.isEmpty && judgement.pairChanges.isEmpty)
        }

        @Test func theReportedDistanceIsGeosGreatCircle() throws {
            let here = Coordinate(uncheckedLatitude: -33.8688, longitude: 151.2093)
            let there = Coordinate(uncheckedLatitude: -33.8650, longitude: 151.2094)
            var user = AlertUser()
            let judgement = try user.report(here, at: t0, [note(1, there, created: t0)])
            #expect(judgement.alerts == [Alert(annotationId: 1, distanceM: greatCircleDistance(here, there))])
        }
    }

    @Suite struct PairStateTests {
        @Test func anAlertDisarmsUntilTheUserHasLeftTheRadius() throws {
            let edge = try eastAtExactly(500)
            let a = note(1, origin, created: t0)
            var user = AlertUser()
            #expect(alerted(try user.report(origin, at: t0, [a])) == [1])
            #expect(user.state(1) == .seen)
            // Still in range, at the very edge: seen, nothing changes.
            let inRange = try user.report(edge, at: t0 + 1, [a])
            #expect(inRange.alerts.isEmpty && inRange.pairChanges.isEmpty)
            // Two centimetres out: armed again, but too far to alert.
            let left = try user.report(try beyond(edge), at: t0 + 2, [a])
            #expect(left.alerts.isEmpty)
            #expect(left.pairChanges == [AlertPairChange(annotationId: 1, from: .seen, to: .armed)])
            // Back in range: it alerts again.
            #expect(alerted(try user.report(edge, at: t0 + 3, [a])) == [1])
        }

        @Test func aWaitingPairIsSeenInRangeThenArmedWhenLeft() throws {
            let edge = try eastAtExactly(500)
            let a = note(1, origin, created: t0)
            var user = AlertUser(last: JudgedReport(at: t0, number: 4))
            user.pairs[1] = AlertPair(annotationId: 1, state: .waiting, disarmedBy: 4)
            // Out of range: still waiting.
            #expect(try user.report(try beyond(edge), at: t0 + 1, [a]).pairChanges.isEmpty)
            // In range (exactly at the radius): seen, without an alert.
            let seen = try user.report(edge, at: t0 + 2, [a])
            #expect(seen.alerts.isEmpty && seen.pairChanges == [AlertPairChange(annotationId: 1, from: .waiting, to: .seen)])
            #expect(user.pairs[1]?.disarmedBy == 6)
            #expect(try user.report(origin, at: t0 + 3, [a]).alerts.isEmpty)
            let left = try user.report(try beyond(edge), at: t0 + 4, [a])
            #expect(left.pairChanges == [AlertPairChange(annotationId: 1, from: .seen, to: .armed)])
            #expect(alerted(try user.report(origin, at: t0 + 5, [a])) == [1])
        }

        @Test func theReportThatDisarmsAPairDoesNotMoveItOn() throws {
            // A alerts and suppresses B, which is in range of this very report: B waits, not seen.
            let a = note(1, origin, created: t0), b = note(2, east(100), created: t0)
            var user = AlertUser()
            let first = try user.report(origin, at: t0, [a, b])
            #expect(alerted(first) == [1])
            #expect(first.pairChanges == [AlertPairChange(annotationId: 1, from: .armed, to: .seen),
                                          AlertPairChange(annotationId: 2, from: .armed, to: .waiting)])
            // The next report at the same place is a later one: B is seen now.
            let second = try user.report(origin, at: t0, [a, b])
            #expect(second.pairChanges == [AlertPairChange(annotationId: 2, from: .waiting, to: .seen)])
        }

        @Test func aPairNamingThisReportAsItsDisarmerDoesNotTransition() throws {
            let a = note(1, origin, created: t0)
            let last = JudgedReport(at: t0, number: 9)
            for (disarmedBy, moves) in [(Int64(9), true), (10, false)] {
                var user = AlertUser(last: last)
                user.pairs[1] = AlertPair(annotationId: 1, state: .waiting, disarmedBy: disarmedBy)
                let judgement = try user.report(origin, at: t0 + 1, [a])
                #expect(judgement.judged.number == 10)
                #expect((user.state(1) == .seen) == moves)
                #expect(judgement.alerts.isEmpty)
            }
        }

        @Test func aReportWithTheSameAtIsALaterReport() throws {
            let a = note(1, origin, created: t0)
            var user = AlertUser()
            #expect(alerted(try user.report(origin, at: t0, [a])) == [1])
            let same = try user.report(east(600), at: t0, [a])
            #expect(!same.stale)
            #expect(same.pairChanges == [AlertPairChange(annotationId: 1, from: .seen, to: .armed)])
            #expect(same.judged == JudgedReport(at: t0, number: 2))
        }

        @Test func onlyReportsAtOrAfterAnAnnotationsCreationMoveItsPair() throws {
            // B is created at t0 + 1 h, after a report at t0 made a zone over it: B waits.
            var user = AlertUser()
            _ = try user.report(origin, at: t0, now: t0 + hour, [note(1, origin, created: t0)])
            let b = note(2, east(200), created: t0 + hour)
            let starts = AlertRules.initialPairs(of: b, zones: user.zones)
            #expect(starts == [AlertPairStart(userId: 1, pair: AlertPair(annotationId: 2, state: .waiting, disarmedBy: 1))])
            user.pairs[2] = try #require(starts.first).pair
            // A late report from before B existed, in range of B: it does not count for B.
            let early = try user.report(east(200), at: t0 + hour - 1, now: t0 + hour, [b])
            #expect(early.pairChanges.isEmpty && early.alerts.isEmpty && !early.stale)
            // The first report at B's creation counts.
            let onTime = try user.report(east(200), at: t0 + hour, now: t0 + hour, [b])
            #expect(onTime.pairChanges == [AlertPairChange(annotationId: 2, from: .waiting, to: .seen)])
            #expect(onTime.alerts.isEmpty)
        }

        @Test func pairsMoveWithAlertsOff() throws {
            let a = note(1, origin, created: t0)
            var user = AlertUser()
            #expect(alerted(try user.report(origin, at: t0, [a])) == [1])
            user.settings = try AlertSettings(alerts: false, radiusM: 500)
            let left = try user.report(east(600), at: t0 + 1, [a])
            #expect(left.pairChanges == [AlertPairChange(annotationId: 1, from: .seen, to: .armed)])
        }

        @Test func theRadiusOfTheMomentDecidesInRange() throws {
            let a = note(1, origin, created: t0)
            var user = AlertUser()
            #expect(alerted(try user.report(origin, at: t0, [a])) == [1])
            // 600 m away with a 1 km radius: still in range, still seen.
            user.settings = try AlertSettings(alerts: true, radiusM: 1000)
            #expect(try user.report(east(600), at: t0 + 1, [a]).pairChanges.isEmpty)
            // The same place with a 500 m radius: left.
            user.settings = AlertSettings.defaults
            #expect(try user.report(east(600), at: t0 + 2, [a]).pairChanges.count == 1)
        }
    }

    @Suite struct SuppressionTests {
        /// Judges a report at (0, 0) and t0 with a 1 km radius over A at (0, 0) and `b`.
        func judge(_ b: AlertAnnotation, at: Int64 = t0, now: Int64 = t0) throws -> AlertJudgement {
            var user = AlertUser(settings: try AlertSettings(alerts: true, radiusM: 1000))
            return try user.report(origin, at: at, now: now, [note(1, origin, created: t0 - hour), b])
        }

        @Test func anAlertSuppressesWithinFiveHundredMetresInclusive() throws {
            let edge = try eastAtExactly(500)
            let within = try judge(note(2, edge, created: t0))
            #expect(alerted(within) == [1])
            #expect(within.pairChanges.last == AlertPairChange(annotationId: 2, from: .armed, to: .waiting))
            #expect(alerted(try judge(note(2, try beyond(edge), created: t0))) == [1, 2])
        }

        /// North and south too (the neighbours are looked for in a band of latitude): 499.9 m
        /// due north or south is suppressed, 500.1 m is not.
        @Test func anAlertSuppressesDueNorthAndSouth() throws {
            for sign in [1.0, -1.0] {
                let within = try judge(note(2, offset(north: sign * 499.9, east: 0), created: t0))
                #expect(alerted(within) == [1] && within.pairChanges.last?.to == .waiting, "\(sign)")
                #expect(alerted(try judge(note(2, offset(north: sign * 500.1, east: 0), created: t0))) == [1, 2], "\(sign)")
            }
        }

        @Test func anAlertSuppressesWithinTwoHoursEitherWayInclusive() throws {
            // The report is at t0 but processed later, so that B may be created after it.
            let now = t0 + 3 * hour
            func suppressed(created: Int64) throws -> Bool {
                try judge(note(2, east(100), created: created), now: now).pairChanges
                    .contains(AlertPairChange(annotationId: 2, from: .armed, to: .waiting))
            }
            #expect(try suppressed(created: t0 - 2 * hour))
            #expect(try suppressed(created: t0 + 2 * hour))
            #expect(try !suppressed(created: t0 - 2 * hour - 1))
            #expect(try !suppressed(created: t0 + 2 * hour + 1))
            // Older than two hours before the report, B is not suppressed and alerts too.
            #expect(alerted(try judge(note(2, east(100), created: t0 - 2 * hour - 1), now: now)) == [1, 2])
        }

        @Test func suppressionFollowsEachAlertBeforeTheNextIsConsidered() throws {
            // A at 0 m suppresses B at 300 m; C at 700 m is 400 m from B but 700 m from A: it alerts.
            let a = note(1, origin, created: t0), b = note(2, east(300), created: t0), c = note(3, east(700), created: t0)
            var user = AlertUser(settings: try AlertSettings(alerts: true, radiusM: 1000))
            let judgement = try user.report(origin, at: t0, [c, b, a])
            #expect(alerted(judgement) == [1, 3])
            #expect(user.state(2) == .waiting)
            #expect(judgement.newZones.map(\.center) == [a.point, c.point])
        }

        @Test func aSeenPairIsNotMovedToWaiting() throws {
            // B alerts first; A, created later, alerts next while the user is still in range of B.
            let b = note(2, east(300), created: t0)
            var user = AlertUser(settings: try AlertSettings(alerts: true, radiusM: 1000))
            #expect(alerted(try user.report(east(300), at: t0, [b])) == [2])
            let a = note(1, origin, created: t0 + 1)
            let second = try user.report(east(100), at: t0 + 1, [a, b])
            #expect(alerted(second) == [1])
            #expect(second.pairChanges == [AlertPairChange(annotationId: 1, from: .armed, to: .seen)])
            #expect(user.state(2) == .seen)
        }

        @Test func aSeenPairTheUserLeftIsArmedThenSuppressed() throws {
            // B was seen; this report is out of B's range (armed again) and A alerts: B waits.
            let b = note(2, east(450), created: t0)
            var user = AlertUser(settings: try AlertSettings(alerts: true, radiusM: 50))
            #expect(alerted(try user.report(east(450), at: t0, [b])) == [2])
            let a = note(1, origin, created: t0 + 1)
            let second = try user.report(origin, at: t0 + 1, [a, b])
            #expect(alerted(second) == [1])
            #expect(second.pairChanges.contains(AlertPairChange(annotationId: 2, from: .seen, to: .waiting)))
        }

        @Test func anAnnotationCreatedLaterStartsWaitingForUsersWhoseZoneCoversIt() throws {
            var ann = AlertUser(id: 1), bob = AlertUser(id: 2)
            let a = note(10, origin, created: t0)
            _ = try ann.report(origin, at: t0, [a])
            _ = try bob.report(origin, at: t0, [a])
            let west = offset(north: 0, east: -3000)
            #expect(alerted(try bob.report(west, at: t0 + hour, [a, note(11, west, created: t0)])) == [11])
            let zones = ann.zones + bob.zones
            #expect(zones.map(\.userId) == [1, 2, 2])
            let edge = try eastAtExactly(500)
            let waiting = { (user: Int64, report: Int64, annotation: Int64) in
                AlertPairStart(userId: user, pair: AlertPair(annotationId: annotation, state: .waiting, disarmedBy: report))
            }
            #expect(AlertRules.initialPairs(of: note(20, edge, created: t0 + 2 * hour), zones: zones) == [waiting(1, 1, 20), waiting(2, 1, 20)])
            #expect(AlertRules.initialPairs(of: note(20, edge, created: t0 - 2 * hour), zones: zones) == [waiting(1, 1, 20), waiting(2, 1, 20)])
            #expect(AlertRules.initialPairs(of: note(20, try beyond(edge), created: t0), zones: zones).isEmpty)
            #expect(AlertRules.initialPairs(of: note(20, edge, created: t0 + 2 * hour + 1), zones: zones).isEmpty)
            #expect(AlertRules.initialPairs(of: note(20, edge, created: t0 - 2 * hour - 1), zones: zones).isEmpty)
            // Bob's second zone (at t0 + 1 h, 3 km west) covers what is near it, and only for Bob.
            #expect(AlertRules.initialPairs(of: note(21, west, created: t0 + 3 * hour), zones: zones) == [waiting(2, 2, 21)])
            // A user covered by two zones gets one pair, disarmed by the later report.
            let twice = zones + [SuppressionZone(userId: 1, center: origin, at: t0, report: 5)]
            #expect(AlertRules.initialPairs(of: note(20, origin, created: t0), zones: twice) == [waiting(1, 5, 20), waiting(2, 1, 20)])
            // And the waiting pair does what it says: no alert in range, seen instead.
            let later = note(20, edge, created: t0 + hour)
            ann.pairs[20] = try #require(AlertRules.initialPairs(of: later, zones: ann.zones).first).pair
            let judgement = try ann.report(origin, at: t0 + hour, [a, later])
            #expect(judgement.alerts.isEmpty && ann.state(20) == .seen)
        }
    }

    @Suite struct OrderTests {
        @Test func nearestFirst() throws {
            let notes = [note(1, offset(north: 0, east: 800), created: t0), note(2, offset(north: 600, east: 0), created: t0),
                         note(3, offset(north: -700, east: 0), created: t0), note(4, offset(north: 0, east: -650), created: t0)]
            var user = AlertUser(settings: try AlertSettings(alerts: true, radiusM: 1000))
            let judgement = try user.report(origin, at: t0, notes)
            #expect(alerted(judgement) == [2, 4, 3, 1])
            #expect(judgement.alerts.map(\.distanceM) == judgement.alerts.map(\.distanceM).sorted())
            #expect(judgement.push?.alerts == judgement.alerts)
        }

        @Test func aTieGoesToTheOlderThenToTheLowerId() throws {
            // Two annotations at one place: the first taken alerts and suppresses the other.
            var older = AlertUser()
            #expect(alerted(try older.report(origin, at: t0, [note(1, east(10), created: t0), note(2, east(10), created: t0 - 1)])) == [2])
            var lower = AlertUser()
            #expect(alerted(try lower.report(origin, at: t0, [note(2, east(10), created: t0), note(1, east(10), created: t0)])) == [1])
            // Mirrored across the report, the same distance: still the older first, both alert (1 km apart).
            var mirrored = AlertUser()
            let judgement = try mirrored.report(origin, at: t0, [note(1, east(499), created: t0), note(2, east(-499), created: t0 - 1)])
            try #require(judgement.alerts.count == 2)
            #expect(judgement.alerts[0].distanceM == judgement.alerts[1].distanceM)
            #expect(alerted(judgement) == [2, 1])
        }
    }

    @Suite struct PushTests {
        /// `count` annotations 1 km apart on a grid around (0, 0), all within 5 km of it.
        func grid(_ count: Int) -> [AlertAnnotation] {
            (0..<count).map { index in
                let row = Double(index / 5 - 2), column = Double(index % 5 - 2)
                return note(Int64(index + 1), offset(north: row * 1000, east: column * 1000), created: t0 - Int64(index))
            }
        }

        func push(after count: Int) throws -> AlertJudgement {
            var user = AlertUser(settings: try AlertSettings(alerts: true, radiusM: 5000))
            return try user.report(origin, at: t0, grid(count))
        }

        @Test func aPushListsTwentyAndCountsTheRest() throws {
            let judgement = try push(after: 25)
            #expect(judgement.alerts.count == 25)
            #expect(judgement.push == AlertPush(alerts: Array(judgement.alerts.prefix(20)), more: 5))
            #expect(judgement.alerts.map(\.distanceM) == judgement.alerts.map(\.distanceM).sorted())
            #expect(judgement.newZones.count == 25)
        }

        @Test func twentyFitAndTwentyOneDoNot() throws {
            let twenty = try push(after: 20)
            #expect(twenty.push == AlertPush(alerts: twenty.alerts, more: 0) && twenty.alerts.count == 20)
            let more = try push(after: 21)
            #expect(more.push?.alerts.count == 20 && more.push?.more == 1)
            #expect(try push(after: 0).push == nil)
        }
    }

    @Suite struct StaleTests {
        @Test func anEarlierReportChangesNothing() throws {
            let a = note(1, origin, created: t0 - hour), b = note(2, east(2000), created: t0 - hour)
            var user = AlertUser()
            #expect(alerted(try user.report(east(2000), at: t0, [a, b])) == [2])
            let before = user
            // Earlier by 1 ms, in range of A (eligible, armed) and out of range of B (seen).
            let stale = try user.report(origin, at: t0 - 1, [a, b])
            #expect(stale == AlertJudgement(stale: true, alerts: [], push: nil, pairChanges: [], newZones: [],
                                            judged: JudgedReport(at: t0, number: 1)))
            #expect(user.pairs == before.pairs && user.last == before.last)
            // The same `at` is not stale.
            let equal = try user.report(origin, at: t0, [a, b])
            #expect(!equal.stale && alerted(equal) == [1])
            #expect(equal.pairChanges.contains(AlertPairChange(annotationId: 2, from: .seen, to: .armed)))
        }

        @Test func theFirstReportIsNeverStale() throws {
            var user = AlertUser()
            let first = try user.report(origin, at: t0 - 12 * hour, now: t0, [])
            #expect(!first.stale && first.judged == JudgedReport(at: t0 - 12 * hour, number: 1))
        }
    }

    @Suite struct PurgeTests {
        @Test func annotationsExpireTwelveHoursAfterCreation() {
            #expect(AlertRules.expiresAt(createdAt: t0) == t0 + 12 * hour)
            #expect(AlertRules.purgeHorizon(now: t0) == t0 - 12 * hour)
            #expect(!AlertRules.isPurged(createdAt: t0, now: t0 + 12 * hour))
            #expect(AlertRules.isPurged(createdAt: t0, now: t0 + 12 * hour + 1))
            #expect(!AlertRules.isPurged(createdAt: t0, now: t0))
            #expect(AlertRules.expiresAt(createdAt: Int64.max) == Int64.max)
            #expect(AlertRules.purgeHorizon(now: Int64.min) == Int64.min)
        }

        @Test func aZoneGoesOnceNothingItCouldCoverIsLeft() {
            let zone = SuppressionZone(userId: 1, center: origin, at: t0, report: 1)
            // It covers annotations created up to t0 + 2 h, which live until t0 + 14 h.
            #expect(!AlertRules.isPurged(zone, now: t0 + 14 * hour))
            #expect(AlertRules.isPurged(zone, now: t0 + 14 * hour + 1))
            #expect(AlertRules.covers(zone, note(1, origin, created: t0 + 2 * hour)))
            #expect(AlertRules.isPurged(createdAt: t0 + 2 * hour, now: t0 + 14 * hour + 1))
        }
    }
}
