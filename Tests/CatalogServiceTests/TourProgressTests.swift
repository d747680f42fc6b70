import Bus
@testable import CatalogService
import Contracts
import Foundation
import Geo
import Sealing
import ServiceCore
import ServiceKit
import Storage
import Testing
import TestSupport
import TourMaps

/// A catalog that follows a fake social publisher, with a hand-moved clock, and a tour of
/// three Sydney stops (about 830 m and 520 m apart) to walk.
final class WalkFixture {
    /// 2026-06-01T00:00:00Z in milliseconds: where the clock starts.
    static let epochMs: Int64 = 1_780_272_000_000
    static let stops = TourMapTests.stops

    let clock = Locked(WalkFixture.epochMs)
    let social: ServiceRuntime<WorkerState>
    let socialClient: RPCClient
    let catalog: CatalogFixture
    let tour: Int64
    let places: [Int64]

    let folder = TemporaryFolder()

    /// `signingKey`: the catalog's, which signs `library.add`'s packages (none: it makes none).
    /// `packageMaxBytes`: the library's bound on a package's content (nil: the default).
    init(signingKey: SigningKey? = nil, packageMaxBytes: Int? = nil) throws {
        let context = try ZMQContext()
        var socialConfig = ServiceConfig(service: "social")
        socialConfig.dataDirectory = folder.path
        socialConfig.heartbeatMilliseconds = 50
        social = try ServiceRuntime(definition: fakePublisher(name: "social"), config: socialConfig, context: context, logger: quiet)
        socialClient = try RPCClient(context: context, endpoints: social.endpoints.rpc, logger: quiet)
        var options = CatalogOptions()
        let clock = self.clock
        options.clock = { clock.value }
        options.signingKey = signingKey
        if let packageMaxBytes { options.packageMaxBytes = packageMaxBytes }
        let catalog = try CatalogFixture(context: context, peers: ["social": PeerEndpoints(rpc: social.endpoints.rpc, publish: social.endpoints.publish)],
                                         options: options)
        let places = try Self.stops.enumerated().map { try catalog.create("Stop \($0.offset)", lat: $0.element.latitude, lon: $0.element.longitude).id }
        tour = try catalog.client.call("tours.create", TourInput(name: "Walk", stops: places), as: Tour.self).id
        self.catalog = catalog
        self.places = places
    }

    deinit {
        socialClient.close()
        social.stop()
    }

    /// Moves the clock on by `ms` milliseconds.
    func advance(_ ms: Int64) { clock.withLock { $0 += ms } }

    /// Sends `type` with `json` as user `user` (none: anonymous); the reply body, or the refusal.
    func call(_ type: String, _ json: String, as user: String? = "1") throws(ServiceError) -> [String: Any] {
        let auth = user.map { Auth(userId: $0, role: "user") }
        let reply = try catalog.client.request(type: type, body: Data(json.utf8), auth: auth, timeoutMilliseconds: 5_000)
        let object = try? JSONSerialization.jsonObject(with: reply.envelope) as? [String: Any]
        return object?["body"] as? [String: Any] ?? [:]
    }

    func locate(_ point: Coordinate, course: Double? = nil, as user: String = "1", tour: Int64? = nil) throws -> [String: Any] {
        let course = course.map { #","course_deg":\#($0)"# } ?? ""
        return try call("tours.locate", #"{"tour_id":\#(tour ?? self.tour),"lat":\#(point.latitude),"lon":\#(point.longitude)\#(course)}"#, as: user)
    }

    func progress(as user: String = "1") throws -> [String: Any] {
        try call("tours.progress", #"{"tour_id":\#(tour)}"#, as: user)
    }

    /// Gives the tour a map drawn from its stops (north up) and answers the drawing.
    /// `turned`: a square map whose control points say it is turned a quarter clockwise
    /// (north points right on the image), so headings on it are 90° more.
    func drawMap(turned: Bool = false) throws -> DrawnMap {
        let side = turned ? 700 : 900
        let map = try MapCanvas.draw(stops: Self.stops, width: side, height: 700)
        let points = turned ? map.controlPoints.map { ControlPoint(x: 700 - $0.y, y: $0.x, coordinate: $0.coordinate) } : map.controlPoints
        let upload = try TourMapTests.upload(catalog, map.jpeg)
        try catalog.raw("tours.map.set", #"{"tour_id":\#(tour),"upload_id":"\#(upload)","points":\#(TourMapTests.pointsJSON(points))}"#)
        return map
    }

    /// The catalog's database, opened beside it (for what no reply shows: rows kept).
    func database() throws -> Database { try Database(path: catalog.config.resolvedDatabasePath) }
}

/// A JSON number of a reply as a Double (an integral one may be read as an Int), or nil.
func number(_ value: Any?) -> Double? {
    switch value {
    case let d as Double: d
    case let i as Int: Double(i)
    case let n as NSNumber: n.doubleValue
    default: nil
    }
}

/// A JSON array of ids of a reply, or nil.
func ids(_ value: Any?) -> [Int64]? {
    guard let array = value as? [Any] else { return nil }
    let numbers = array.compactMap { number($0).map { Int64($0) } }
    return numbers.count == array.count ? numbers : nil
}

/// The `id` of a reply's object (such as `next_stop`), or nil.
func id(_ object: Any?) -> Int64? { number((object as? [String: Any])?["id"]).map { Int64($0) } }

/// The difference between two bearings in degrees, 0…180.
func angleGap(_ a: Double, _ b: Double) -> Double {
    let d = abs(a - b).truncatingRemainder(dividingBy: 360)
    return min(d, 360 - d)
}

/// `tours.locate`, `tours.progress` and `tours.progress.reset` in the catalog alone, over its
/// real sockets, with a fake social publisher for user deletions.
@Suite struct TourProgressTests {
    /// A walker standing still changes nothing, so nothing is written and the write lock is
    /// not waited for: while another connection holds the lock for a second, a locate that
    /// moves the kept position waits for it, and one standing still is answered at once.
    @Test func standingStillNeitherWritesNorWaitsForTheWriteLock() throws {
        let f = try WalkFixture()
        let start = WalkFixture.stops[0].destination(bearingDegrees: 200, distanceMeters: 300)
        _ = try f.locate(start, as: "4")
        _ = try f.locate(start, as: "5")
        f.advance(1_000)
        let holder = try f.database()
        try holder.execute("BEGIN IMMEDIATE")
        let clock = ContinuousClock()
        let began = clock.now
        let step = f.catalog.client.start(
            type: "tours.locate", body: Data(#"{"tour_id":\#(f.tour),"lat":\#(start.latitude + 0.0005),"lon":\#(start.longitude)}"#.utf8),
            auth: Auth(userId: "5", role: "user"), timeoutMilliseconds: 5_000)
        usleep(200_000)
        var still: [String: Any] = [:]
        let waited = try clock.measure { still = try f.locate(start.destination(bearingDegrees: 90, distanceMeters: 1), as: "4") }
        #expect(waited < .milliseconds(700) && id(still["next_stop"]) != nil, "standing still waited \(waited) for the lock")
        usleep(800_000)
        try holder.execute("ROLLBACK")
        _ = try step.wait()
        #expect(clock.now - began >= .seconds(1), "a step that moves the kept position did not wait for the lock")
    }

    /// A walk along the drawn route, 20 m and 10 s a step: each reply's pixel is where the
    /// map drew that point, the heading is the way just walked, the next stop and its distance
    /// and bearing are Geo's, and stops are visited as the walk passes them.
    @Test func aWalkAlongTheMapsRoute() throws {
        let f = try WalkFixture()
        let map = try f.drawMap()
        let fit = try MapGeoreference.fit(map.controlPoints, width: map.width, height: map.height)
        let stops = WalkFixture.stops

        // The control points' places land on their pixels.
        for point in map.controlPoints {
            let reply = try f.locate(point.coordinate, as: "9")
            let (x, y) = (try #require(number(reply["x"])), try #require(number(reply["y"])))
            #expect(abs(x - point.x) <= 1 && abs(y - point.y) <= 1, "\(point) answered \(x), \(y)")
        }

        // The route: from 60 m south of the first stop, through every stop, in steps of 20 m.
        var route = [stops[0].destination(bearingDegrees: 180, distanceMeters: 60)]
        for target in stops {
            while let last = route.last, last.distance(to: target) > 20 {
                route.append(last.destination(bearingDegrees: last.initialBearing(to: target), distanceMeters: 20))
            }
            route.append(target)
        }
        #expect(route.count > 60 && route.count < 100)

        var visited: [Int64] = []
        var anchor: Coordinate?
        var stopPixelsChecked = 0
        for point in route {
            f.advance(10_000)
            let reply = try f.locate(point)
            let (x, y) = (try #require(number(reply["x"])), try #require(number(reply["y"])))
            let expected = fit.pixel(of: point)
            #expect(abs(x - expected.x) <= 1 && abs(y - expected.y) <= 1)
            #expect(reply["on_map"] as? Bool == true)
            if let i = stops.firstIndex(of: point) {
                #expect(abs(x - map.stopPixels[i].x) <= 1 && abs(y - map.stopPixels[i].y) <= 1, "stop \(i) at \(x), \(y)")
                stopPixelsChecked += 1
            }

            // Heading: the way from the last position kept, which moves on only with a step of
            // 5 m or more (a short last step onto a stop gives none).
            if let kept = anchor, kept.distance(to: point) >= 5 {
                let heading = try #require(number(reply["heading_deg"]), "\(reply)")
                #expect(angleGap(heading, kept.initialBearing(to: point)) <= 0.06)
                anchor = point
                // The drawn map is north up: on it the heading is the same angle.
                #expect(angleGap(try #require(number(reply["heading_on_map_deg"])), heading) <= 0.5)
            } else {
                #expect(reply["heading_deg"] == nil)
                if anchor == nil { anchor = point }
            }

            // Visited: every stop within 30 m of a position so far; the next is the first other.
            let arrived = f.places.enumerated().filter { !visited.contains($0.element) && stops[$0.offset].distance(to: point) <= 30 }.map(\.element)
            visited = f.places.filter { visited.contains($0) || arrived.contains($0) }
            #expect(ids(reply["arrived"]) == arrived)
            #expect(number(reply["visited_count"]).map { Int($0) } == visited.count && number(reply["stop_count"]).map { Int($0) } == 3)
            if let nextIndex = f.places.firstIndex(where: { !visited.contains($0) }) {
                let next = try #require(reply["next_stop"] as? [String: Any])
                #expect(number(next["id"]).map { Int64($0) } == f.places[nextIndex] && next["name"] as? String == "Stop \(nextIndex)")
                let distance = try #require(number(next["distance_m"]))
                #expect(abs(distance - point.distance(to: stops[nextIndex])) <= 0.051)
                if distance > 1 {
                    #expect(angleGap(try #require(number(next["bearing_deg"])), point.initialBearing(to: stops[nextIndex])) <= 0.06)
                }
                #expect(reply["finished"] as? Bool == false)
            } else {
                #expect(reply["next_stop"] == nil && reply["finished"] as? Bool == true)
            }
        }
        #expect(stopPixelsChecked == 3)
        #expect(visited == f.places)
        let progress = try f.progress()
        #expect(ids(progress["visited"]) == f.places && progress["finished"] as? Bool == true && progress["next_stop"] == nil)

        // Far off the map: a pixel outside it.
        let away = try f.locate(Coordinate(uncheckedLatitude: -33.80, longitude: 151.30), as: "9")
        #expect(away["on_map"] as? Bool == false && away["x"] is Double)
    }

    /// The heading comes from the phone's course when given, else from a move of 5 m or more
    /// within 5 minutes; small steps add up from the last position that gave one.
    @Test func headingFromCourseAndFromMovement() throws {
        let f = try WalkFixture()
        let start = WalkFixture.stops[1].destination(bearingDegrees: 0, distanceMeters: 100)

        // No map: no pixel and no heading on it.
        let first = try f.locate(start, course: 45)
        #expect(number(first["heading_deg"]) == 45)
        #expect(first["x"] == nil && first["y"] == nil && first["on_map"] == nil && first["heading_on_map_deg"] == nil)

        f.advance(1_000)
        let east4 = start.destination(bearingDegrees: 90, distanceMeters: 4)
        #expect(try f.locate(east4)["heading_deg"] == nil)  // 4 m from the last: too little
        f.advance(1_000)
        let east6 = start.destination(bearingDegrees: 90, distanceMeters: 6)
        let moved = try #require(number(try f.locate(east6)["heading_deg"]))  // 6 m from the first position, not 2 m from the second
        #expect(angleGap(moved, start.initialBearing(to: east6)) <= 0.06)
        #expect(angleGap(moved, 90) <= 0.1)
        f.advance(1_000)
        #expect(number(try f.locate(east6, course: 270)["heading_deg"]) == 270)  // the course wins over movement

        // More than 5 minutes later a move gives none; the next one does again.
        f.advance(300_001)
        let north = east6.destination(bearingDegrees: 0, distanceMeters: 20)
        #expect(try f.locate(north)["heading_deg"] == nil)
        f.advance(300_000)
        let south = north.destination(bearingDegrees: 180, distanceMeters: 10)
        #expect(number(try f.locate(south)["heading_deg"]).map { angleGap($0, 180) <= 0.1 } == true)

        // Another user's positions are their own.
        #expect(try f.locate(south.destination(bearingDegrees: 90, distanceMeters: 50), as: "2")["heading_deg"] == nil)

        // With a map set, the heading is turned onto it: on a map turned a quarter clockwise,
        // north is to the right.
        _ = try f.drawMap(turned: true)
        let onMap = try f.locate(south, course: 123.4)
        #expect(number(onMap["heading_deg"]) == 123.4)
        #expect(number(onMap["heading_on_map_deg"]).map { angleGap($0, 213.4) <= 0.5 } == true, "\(onMap)")
        #expect(number(try f.locate(south, course: 300)["heading_on_map_deg"]).map { angleGap($0, 30) <= 0.5 } == true)
    }

    /// A stop 29.9 m away is visited; one 31 m away is not, and is the next stop at 31 m.
    @Test func visitedWithinThirtyMetres() throws {
        let f = try WalkFixture()
        let stop = WalkFixture.stops[0]
        let at31 = try f.locate(stop.destination(bearingDegrees: 0, distanceMeters: 31))
        #expect(ids(at31["arrived"]) == [] && number(at31["visited_count"]).map { Int($0) } == 0)
        let next = try #require(at31["next_stop"] as? [String: Any])
        #expect(number(next["id"]).map { Int64($0) } == f.places[0] && number(next["distance_m"]) == 31 && number(next["bearing_deg"]) == 180)
        let at29 = try f.locate(stop.destination(bearingDegrees: 0, distanceMeters: 29.9))
        #expect(ids(at29["arrived"]) == [f.places[0]] && number(at29["visited_count"]).map { Int($0) } == 1)
        #expect(id(at29["next_stop"]) == f.places[1])

        // Any stop within 30 m counts, not only the next: the last one first.
        let last = try f.locate(WalkFixture.stops[2], as: "2")
        #expect(ids(last["arrived"]) == [f.places[2]] && id(last["next_stop"]) == f.places[0])
    }

    /// Progress is per user; reset forgets it; a stop removed from the tour (by tours.update or
    /// with its place) no longer counts.
    @Test func progressResetAndRemovedStops() throws {
        let f = try WalkFixture()
        let stops = WalkFixture.stops
        _ = try f.locate(stops[0])
        _ = try f.locate(stops[1])
        _ = try f.locate(stops[0], as: "2")

        let one = try f.progress()
        #expect(ids(one["visited"]) == [f.places[0], f.places[1]] && number(one["visited_count"]).map { Int($0) } == 2 && number(one["stop_count"]).map { Int($0) } == 3)
        #expect((one["next_stop"] as? [String: Any]).map { id($0) == f.places[2] && $0["name"] as? String == "Stop 2" && $0["distance_m"] == nil } == true)
        #expect(one["finished"] as? Bool == false && number(one["tour_id"]).map { Int64($0) } == f.tour)
        #expect(ids(try f.progress(as: "2")["visited"]) == [f.places[0]])
        #expect(ids(try f.progress(as: "3")["visited"]) == [])

        // Stop 1 leaves the tour: user 1 has visited one of its two stops.
        try f.catalog.raw("tours.update", #"{"id":\#(f.tour),"stops":[\#(f.places[0]),\#(f.places[2])]}"#)
        let shorter = try f.progress()
        #expect(ids(shorter["visited"]) == [f.places[0]] && number(shorter["visited_count"]).map { Int($0) } == 1 && number(shorter["stop_count"]).map { Int($0) } == 2)
        let located = try f.locate(stops[2].destination(bearingDegrees: 0, distanceMeters: 200))
        #expect(number(located["visited_count"]).map { Int($0) } == 1 && id(located["next_stop"]) == f.places[2])
        // Its place deleted: stop 0 leaves too.
        try f.catalog.raw("catalog.delete", #"{"id":\#(f.places[0])}"#)
        #expect(ids(try f.progress()["visited"]) == [])
        #expect(try f.progress(as: "2")["stop_count"] as? Int == 1)

        // Reset: user 1's progress goes, user 2's stays.
        _ = try f.locate(stops[2])
        #expect(try f.progress()["finished"] as? Bool == true)
        let reset = try f.call("tours.progress.reset", #"{"tour_id":\#(f.tour)}"#)
        #expect(ids(reset["visited"]) == [] && reset["finished"] as? Bool == false)
        #expect(ids(try f.progress()["visited"]) == [])
        _ = try f.locate(stops[2], as: "2")
        #expect(ids(try f.progress(as: "2")["visited"]) == [f.places[2]])

        // Deleting the tour deletes its walks.
        try f.catalog.raw("tours.delete", #"{"id":\#(f.tour)}"#)
        #expect(try f.database().scalarInt("SELECT COUNT(*) FROM tour_progress") == 0)
    }

    /// Every input is checked, and the caller must be signed in; a user keeps one row per tour.
    @Test func refusalsAndBounds() throws {
        let f = try WalkFixture()
        func refusal(_ type: String, _ json: String, as user: String? = "1") -> ServiceError? {
            do {
                _ = try f.call(type, json, as: user)
                return nil
            } catch {
                return error
            }
        }
        let t = f.tour
        for type in ["tours.locate", "tours.progress", "tours.progress.reset"] {
            #expect(refusal(type, #"{"tour_id":\#(t),"lat":-33.86,"lon":151.21}"#, as: nil)?.code == .unauthenticated)
            #expect(refusal(type, #"{"tour_id":\#(t),"lat":-33.86,"lon":151.21}"#, as: "abc")?.code == .unauthenticated)
            #expect(refusal(type, #"{"tour_id":\#(t),"lat":-33.86,"lon":151.21}"#, as: "0")?.code == .unauthenticated)
            let point = type == "tours.locate" ? #","lat":-33.86,"lon":151.21"# : ""
            #expect(refusal(type, #"{"tour_id":999\#(point)}"#)?.field == "tour_id")
        }
        #expect(refusal("tours.locate", #"{"tour_id":\#(t),"lat":91,"lon":151.21}"#)?.field == "lat")
        #expect(refusal("tours.locate", #"{"tour_id":\#(t),"lat":-33.86,"lon":-180.5}"#)?.field == "lon")
        #expect(refusal("tours.locate", #"{"tour_id":\#(t),"lat":-33.86}"#)?.code == .invalidArgument)
        for course in ["360", "-0.1", "1e308", "\"north\""] {
            let error = refusal("tours.locate", #"{"tour_id":\#(t),"lat":-33.86,"lon":151.21,"course_deg":\#(course)}"#)
            #expect(error?.code == .invalidArgument && (course == "\"north\"" || error?.field == "course_deg"), "\(course): \(String(describing: error))")
        }
        #expect(refusal("tours.locate", #"{"tour_id":\#(t),"lat":-33.86,"lon":151.21,"lang":"en_GB"}"#)?.field == "lang")
        #expect(refusal("tours.progress", #"{"tour_id":\#(t),"lang":"\#(String(repeating: "a", count: 100))"}"#)?.field == "lang")

        // However often a user is located, they have one row per tour, holding only its stops.
        for i in 0..<40 {
            f.advance(1_000)
            _ = try f.locate(WalkFixture.stops[i % 3].destination(bearingDegrees: Double(i * 9), distanceMeters: Double(i)))
        }
        let db = try f.database()
        #expect(try db.scalarInt("SELECT COUNT(*) FROM tour_progress WHERE user_id = 1") == 1)
        let visited = try #require(try db.queryOne("SELECT visited FROM tour_progress WHERE user_id = 1")?.decode("visited", as: String.self))
        #expect(visited == "[\(f.places.map(String.init).joined(separator: ","))]")
    }

    /// `social.user.deleted` erases the user's walks (and no one else's); their late
    /// `tours.locate` is refused rather than making a row again.
    @Test func aDeletedUsersWalksAreErased() throws {
        let f = try WalkFixture()
        _ = try f.locate(WalkFixture.stops[0], as: "7")
        _ = try f.locate(WalkFixture.stops[0], as: "8")
        let head = try f.socialClient.call("fake.emit", FakeEmit(type: SocialEvents.userDeleted, key: "7", body: #"{"user_id":7}"#), as: Int64.self)
        #expect(head > 0)
        let db = try f.database()
        var erased = false
        for _ in 0..<200 where !erased {
            erased = try db.scalarInt("SELECT COUNT(*) FROM tour_progress WHERE user_id = 7") == 0
            if !erased { usleep(25_000) }
        }
        #expect(erased)
        #expect(ids(try f.progress(as: "7")["visited"]) == [])
        #expect(ids(try f.progress(as: "8")["visited"]) == [f.places[0]])
        do {
            _ = try f.locate(WalkFixture.stops[1], as: "7")
            Issue.record("an erased user was located")
        } catch let error as ServiceError {
            #expect(error.code == .unauthenticated)
        }
        #expect(try db.scalarInt("SELECT COUNT(*) FROM tour_progress WHERE user_id = 7") == 0)
    }
}
