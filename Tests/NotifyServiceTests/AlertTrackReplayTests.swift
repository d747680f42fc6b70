import Geo
import Testing
import TestSupport
@testable import NotifyService

/// Replays generated GPS tracks through `AlertRules`, report by report, the way the service will
/// call it, and compares every answer with a brute-force model of R1–R6 written here: plain
/// loops over everything, its own state, nothing shared with the core but Geo's distance.
enum AlertTrackReplayTests {
    static let second: Int64 = 1000
    static let minute: Int64 = 60 * second
    static let hour: Int64 = 60 * minute
    /// The simulated afternoon starts at 2027-01-15T02:00:00Z (13:00 in Sydney).
    static let start: Int64 = 1_800_000_000_000 - 6 * hour
    static let sydney = Coordinate(uncheckedLatitude: -33.8688, longitude: 151.2093)

    /// Dice thrown by SplitMix64, so that every run replays the same city.
    struct Dice: RandomNumberGenerator {
        var generator: SplitMix64
        init(state: UInt64) { generator = SplitMix64(seed: state) }
        mutating func next() -> UInt64 { generator.next() }
        mutating func chance(_ p: Double) -> Bool { Double.random(in: 0..<1, using: &generator) < p }
        mutating func meters(_ range: ClosedRange<Double>) -> Double { Double.random(in: range, using: &generator) }
        mutating func millis(_ range: ClosedRange<Int64>) -> Int64 { Int64.random(in: range, using: &generator) }
        mutating func near(_ point: Coordinate, within meters: Double) -> Coordinate {
            point.destination(bearingDegrees: Double.random(in: 0..<360, using: &generator),
                              distanceMeters: Double.random(in: 0...meters, using: &generator))
        }
    }

    // MARK: The city's afternoon, as events in the order the service processes them

    enum Happening {
        case create(AlertAnnotation)
        case delete(Int64)
        case settings(user: Int64, alerts: Bool, radiusM: Int)
        case report(user: Int64, point: Coordinate, at: Int64)
    }

    /// Something that happens, processed by the service at `now`.
    struct Event {
        var now: Int64
        var order: Int
        var happening: Happening
    }

    struct TrackPoint {
        var at: Int64
        var point: Coordinate
    }

    static let reporters: [Int64] = [1, 2, 3, 4, 5, 6]
    static let radii = [50, 100, 200, 300, 500, 800, 1000, 2000, 5000]

    /// One user's afternoon: from landmark to landmark, on foot or by bus (farther than 1.5 km),
    /// lingering at each, a report every 20 s to 2 min, with GPS noise of up to 15 m.
    static func track(from first: Int, landmarks: [Coordinate], dice: inout Dice) -> [TrackPoint] {
        var points: [TrackPoint] = []
        var at = start + dice.millis(0...(40 * minute))
        let end = at + dice.millis((3 * hour)...(4 * hour))
        var here = first
        for _ in 0..<40 where at < end {
            let dwellEnd = at + dice.millis((5 * minute)...(20 * minute))
            for _ in 0..<100 where at < dwellEnd {
                points.append(TrackPoint(at: at, point: dice.near(landmarks[here], within: 30)))
                at += dice.millis((30 * second)...(2 * minute))
            }
            var next = Int.random(in: 0..<landmarks.count, using: &dice)
            if next == here { next = (next + 1) % landmarks.count }
            let from = landmarks[here], to = landmarks[next]
            let length = from.distance(to: to), bearing = from.initialBearing(to: to)
            let speed = length > 1500 ? dice.meters(6...11) : dice.meters(1.1...1.6)
            let departure = at
            for _ in 0..<1000 {
                let travelled = speed * Double(at - departure) / 1000
                guard travelled < length else { break }
                let onRoad = from.destination(bearingDegrees: bearing, distanceMeters: travelled)
                points.append(TrackPoint(at: at, point: dice.near(onRoad, within: 15)))
                at += dice.millis((20 * second)...(60 * second))
            }
            here = next
        }
        return points
    }

    /// The afternoon: six users' tracks, a few hundred annotations around landmarks and along the
    /// tracks (some in clusters, some posted twice at one point, some imported hours late, a dense grid where user 1 starts with a
    /// 5 km radius), deletions, settings changes, and reports sometimes late, early or repeated,
    /// one user's all seven hours late (so that purges fall inside R1's window).
    static func afternoon(seed: UInt64) -> [Event] {
        var dice = Dice(state: seed)
        var events: [Event] = []
        func add(_ now: Int64, _ happening: Happening) { events.append(Event(now: now, order: events.count, happening: happening)) }
        let landmarks = (0..<12).map { _ in dice.near(sydney, within: 4000) }
        var tracks: [Int64: [TrackPoint]] = [:]
        for user in reporters {
            let first = user == 1 ? 0 : Int.random(in: 0..<landmarks.count, using: &dice)
            tracks[user] = track(from: first, landmarks: landmarks, dice: &dice)
        }
        var annotations: [AlertAnnotation] = []
        func post(_ point: Coordinate, _ createdAt: Int64) {
            annotations.append(AlertAnnotation(id: Int64(annotations.count + 1), authorId: Int64.random(in: 1...10, using: &dice),
                                               point: point, createdAt: createdAt))
        }
        for _ in 0..<140 {
            post(dice.near(landmarks.randomElement(using: &dice)!, within: 800), start + dice.millis((-7 * hour)...(4 * hour)))
        }
        let everyPoint = tracks.keys.sorted().flatMap { tracks[$0]! }
        for _ in 0..<140 {
            let passage = everyPoint.randomElement(using: &dice)!
            post(dice.near(passage.point, within: 1200), passage.at + dice.millis((-5 * hour)...hour))
        }
        for _ in 0..<25 {
            let center = dice.near(landmarks.randomElement(using: &dice)!, within: 300)
            let base = start + dice.millis((-3 * hour)...(3 * hour))
            for _ in 0..<Int.random(in: 2...5, using: &dice) {
                post(dice.near(center, within: 250), base + dice.millis((-90 * minute)...(90 * minute)))
            }
        }
        for row in 0..<5 {
            for column in 0..<6 {
                let point = landmarks[0].destination(bearingDegrees: 0, distanceMeters: Double(row - 2) * 700)
                    .destination(bearingDegrees: 90, distanceMeters: Double(column) * 700 - 1750)
                post(point, start - 30 * minute)
            }
        }
        // Posted twice at the very same point (a re-post, a bus stop's snapped position):
        // equal distances, sometimes equal times too, for R4's ties.
        for _ in 0..<20 {
            let original = annotations.randomElement(using: &dice)!
            post(original.point, original.createdAt + (dice.chance(0.5) ? 0 : dice.millis((-30 * minute)...(30 * minute))))
        }
        for annotation in annotations {
            let imported = dice.chance(0.15)
            let now = annotation.createdAt + (imported ? dice.millis(minute...(6 * hour)) : 0)
            add(now, .create(annotation))
            if dice.chance(0.12) { add(now + dice.millis(minute...(5 * hour)), .delete(annotation.id)) }
        }
        add(start - hour, .settings(user: 1, alerts: true, radiusM: 5000))
        for _ in 0..<30 {
            add(start + dice.millis(0...(5 * hour)),
                .settings(user: reporters.randomElement(using: &dice)!, alerts: dice.chance(0.85), radiusM: radii.randomElement(using: &dice)!))
        }
        for user in reporters {
            // User 6's phone was offline: its reports arrive, in order, seven hours late.
            let offline = user == 6 ? 7 * hour : 0
            for point in tracks[user]! {
                let report = Happening.report(user: user, point: point.point, at: point.at)
                let roll = Double.random(in: 0..<1, using: &dice)
                if roll < 0.08 {
                    add(offline + point.at + dice.millis((5 * second)...(10 * minute)), report)  // late
                } else if roll < 0.12 {
                    add(offline + point.at - dice.millis(0...(60 * second)), report)  // the phone's clock is ahead
                } else {
                    add(offline + point.at, report)
                }
                if dice.chance(0.02) { add(offline + point.at + dice.millis(0...(5 * second)), report) }  // sent twice
            }
        }
        return events.sorted { ($0.now, $0.order) < ($1.now, $1.order) }
    }

    // MARK: The service: the core, called as the service will call it, with its state in memory

    struct ServiceUser {
        var settings = AlertSettings.defaults
        var last: JudgedReport?
        var pairs: [Int64: AlertPair] = [:]
        var zones: [SuppressionZone] = []
    }

    struct Service {
        var annotations: [Int64: AlertAnnotation] = [:]
        var users: [Int64: ServiceUser] = [:]

        mutating func create(_ annotation: AlertAnnotation) {
            annotations[annotation.id] = annotation
            let zones = users.values.flatMap(\.zones)
            for start in AlertRules.initialPairs(of: annotation, zones: zones) {
                users[start.userId, default: ServiceUser()].pairs[start.pair.annotationId] = start.pair
            }
        }

        mutating func delete(_ id: Int64) {
            annotations[id] = nil
            for user in users.keys { users[user]?.pairs[id] = nil }
        }

        /// R6, run now and then, so that the core also sees annotations that are due but not yet purged.
        mutating func purge(now: Int64) {
            for (id, annotation) in annotations where AlertRules.isPurged(createdAt: annotation.createdAt, now: now) {
                delete(id)
            }
            for user in users.keys { users[user]?.zones.removeAll { AlertRules.isPurged($0, now: now) } }
        }

        mutating func report(user id: Int64, point: Coordinate, at: Int64, now: Int64) throws -> AlertJudgement {
            var user = users[id] ?? ServiceUser()
            let reach = Double(user.settings.radiusM) + AlertRules.suppressionRadiusM
            let passed = annotations.values.filter { point.distance(to: $0.point) <= reach || user.pairs[$0.id] != nil }
            let report = try AlertReport(userId: id, point: point, at: at, now: now)
            let judgement = AlertRules.judge(report, settings: user.settings, lastJudged: user.last,
                                             annotations: scrambled(passed), pairs: Array(user.pairs.values))
            for change in judgement.pairChanges {
                user.pairs[change.annotationId] = change.to == .armed
                    ? nil : AlertPair(annotationId: change.annotationId, state: change.to, disarmedBy: judgement.judged.number)
            }
            user.zones += judgement.newZones
            user.last = judgement.judged
            users[id] = user
            return judgement
        }
    }

    /// Annotations in an order unrelated to distance, time or id, as a query might return them.
    static func scrambled(_ annotations: [AlertAnnotation]) -> [AlertAnnotation] {
        annotations.sorted { ($0.id &* 2_654_435_761) % 1009 < ($1.id &* 2_654_435_761) % 1009 }
    }

    // MARK: The model: R1–R6 read as plainly as possible

    struct ModelNote {
        var id: Int64
        var author: Int64
        var point: Coordinate
        var created: Int64
        var deleted = false
    }

    enum ModelState: Equatable { case armed, seen, waiting }

    struct ModelUser {
        var alerts = true
        var radius = 500.0
        var latest: Int64?
        var reports = 0
        /// Per annotation id: its state and the number of the report that set it.
        var state: [Int64: (ModelState, Int)] = [:]
        /// Each alert's place and time, for annotations created later (R3).
        var zones: [(point: Coordinate, at: Int64)] = []

        func current(_ id: Int64) -> ModelState { state[id]?.0 ?? .armed }
    }

    /// What the model says of one report.
    struct ModelAnswer: Equatable {
        var stale: Bool
        var alerts: [Int64]
        var distances: [Double]
        var pushed: [Int64]
        var more: Int
    }

    struct Model {
        var notes: [ModelNote] = []
        var users: [Int64: ModelUser] = [:]
        var transitions = 0, suppressions = 0, bornWaiting = 0

        func exists(_ note: ModelNote, now: Int64) -> Bool { !note.deleted && now - note.created <= 12 * hour }

        func suppresses(_ a: Coordinate, at t: Int64, _ b: ModelNote) -> Bool {
            greatCircleDistance(a, b.point) <= 500 && t - 2 * hour <= b.created && b.created <= t + 2 * hour
        }

        mutating func create(_ note: ModelNote) {
            notes.append(note)
            for (id, user) in users {
                if user.zones.contains(where: { suppresses($0.point, at: $0.at, note) }) {
                    users[id]!.state[note.id] = (.waiting, user.reports)
                    bornWaiting += 1
                }
            }
        }

        mutating func delete(_ id: Int64) {
            for index in notes.indices where notes[index].id == id { notes[index].deleted = true }
        }

        mutating func report(user id: Int64, point: Coordinate, at: Int64, now: Int64) -> ModelAnswer {
            var user = users[id] ?? ModelUser()
            if let latest = user.latest, at < latest {
                return ModelAnswer(stale: true, alerts: [], distances: [], pushed: [], more: 0)
            }
            user.latest = at
            user.reports += 1
            // R2, for pairs set by an earlier report and annotations created by `at`.
            for note in notes where exists(note, now: now) && note.created <= at {
                guard let (state, by) = user.state[note.id], by < user.reports else { continue }
                let d = greatCircleDistance(point, note.point)
                if state == .waiting && d <= user.radius { user.state[note.id] = (.seen, user.reports); transitions += 1 }
                if state == .seen && d > user.radius { user.state[note.id] = nil; transitions += 1 }
            }
            // R1, R4 and R3: take the best eligible armed annotation, again and again.
            var alerts: [Int64] = [], distances: [Double] = []
            for _ in 0...notes.count {
                var best: ModelNote?
                var bestDistance = 0.0
                for note in notes {
                    let d = greatCircleDistance(point, note.point)
                    let eligible = exists(note, now: now) && note.created <= at && at <= note.created + 6 * hour
                        && note.author != id && user.alerts && d <= user.radius && user.current(note.id) == .armed
                    guard eligible else { continue }
                    if let b = best, (bestDistance, b.created, b.id) <= (d, note.created, note.id) { continue }
                    best = note
                    bestDistance = d
                }
                guard let a = best else { break }
                alerts.append(a.id)
                distances.append(bestDistance)
                user.state[a.id] = (.seen, user.reports)
                user.zones.append((a.point, at))
                for b in notes where exists(b, now: now) && user.current(b.id) == .armed && suppresses(a.point, at: at, b) {
                    user.state[b.id] = (.waiting, user.reports)
                    suppressions += 1
                }
            }
            users[id] = user
            return ModelAnswer(stale: false, alerts: alerts, distances: distances,
                               pushed: Array(alerts.prefix(20)), more: max(0, alerts.count - 20))
        }
    }

    // MARK: The replay

    @Test(arguments: [UInt64(20261201), 7])
    static func aCityAfternoonJudgedByTheCoreMatchesTheModel(seed: UInt64) throws {
        let events = afternoon(seed: seed)
        var service = Service()
        var model = Model()
        var mismatches: [String] = []
        var reports = 0, stale = 0, alerts = 0, longest = 0, quiet = 0
        for (index, event) in events.enumerated() {
            if index % 25 == 0 { service.purge(now: event.now) }
            switch event.happening {
            case .create(let annotation):
                service.create(annotation)
                model.create(ModelNote(id: annotation.id, author: annotation.authorId, point: annotation.point,
                                       created: annotation.createdAt))
            case .delete(let id):
                service.delete(id)
                model.delete(id)
            case .settings(let user, let on, let radius):
                service.users[user, default: ServiceUser()].settings = try AlertSettings(alerts: on, radiusM: radius)
                model.users[user, default: ModelUser()].alerts = on
                model.users[user, default: ModelUser()].radius = Double(radius)
            case .report(let user, let point, let at):
                let expected = model.report(user: user, point: point, at: at, now: event.now)
                let judgement = try service.report(user: user, point: point, at: at, now: event.now)
                let answer = ModelAnswer(stale: judgement.stale, alerts: judgement.alerts.map(\.annotationId),
                                         distances: judgement.alerts.map(\.distanceM),
                                         pushed: judgement.push?.alerts.map(\.annotationId) ?? [],
                                         more: judgement.push?.more ?? 0)
                if answer != expected || (judgement.push == nil) != expected.alerts.isEmpty {
                    mismatches.append("event \(index), user \(user), at \(at): core \(answer), model \(expected)")
                }
                reports += 1
                stale += expected.stale ? 1 : 0
                alerts += expected.alerts.count
                longest = max(longest, expected.alerts.count)
                quiet += model.users[user]?.alerts == false ? 1 : 0
            }
        }
        #expect(mismatches.isEmpty, "\(mismatches.count) of \(reports) reports differ, first: \(mismatches.prefix(3))")
        // The pair states the service stored are the model's, for every annotation that still exists.
        let now = events.last?.now ?? start
        for (id, user) in model.users {
            for note in model.notes where model.exists(note, now: now) {
                let stored = service.users[id]?.pairs[note.id]?.state ?? .armed
                let expected: AlertPairState = switch user.current(note.id) {
                case .armed: .armed
                case .seen: .seen
                case .waiting: .waiting
                }
                #expect(stored == expected, "user \(id), annotation \(note.id)")
            }
        }
        // The afternoon exercised what it is meant to: if the generator drifts, these say so.
        #expect(reports > 1000 && reports < 3000)
        #expect(alerts > 100)
        #expect(stale > 10)
        #expect(longest > 20)
        #expect(quiet > 10)
        #expect(model.transitions > 20 && model.suppressions > 20 && model.bornWaiting > 0)
    }
}
