import Bus
import Contracts
import Foundation
import Geo
import ServiceKit
import Storage
import TourMaps

// Walking a tour: `tours.locate` places a signed-in walker on the tour's map, turns their
// heading onto it and names the next stop; each user's progress along each tour is kept
// (visited stops, the last position that gave a heading) and erased with the user.

/// The rules of walking a tour.
enum WalkRules {
    /// A stop is visited when a located position comes within this many metres of it.
    static let visitRadiusMeters = 30.0
    /// A heading is taken from movement only over at least this many metres…
    static let headingMinMeters = 5.0
    /// …from a position located at most this long ago.
    static let headingWindowMilliseconds: Int64 = 300_000

    /// `invalid_argument` unless `course` is a finite number in [0, 360).
    static func checkCourse(_ course: Double?) throws(ServiceError) {
        guard let course else { return }
        guard course.isFinite, course >= 0, course < 360 else {
            throw ServiceError.invalid("course_deg", "must be a number of degrees from 0 up to but not including 360")
        }
    }

    /// `value` to one decimal: replies carry metres, degrees and pixels to a tenth.
    static func tenth(_ value: Double) -> Double { (value * 10).rounded() / 10 }

    /// A bearing in degrees to a tenth, in [0, 360).
    static func bearing(_ degrees: Double) -> Double {
        let rounded = tenth(degrees)
        return rounded >= 360 ? 0 : rounded
    }

    /// Erases a deleted user's walks (`social.user.deleted`): their progress and last positions.
    /// Their late `tours.locate` is refused for a while (`erased`), noted before the erasure
    /// commits. Social's snapshot holds no deleted user, so a rebuild has nothing to erase.
    static func socialEvents(clock: @escaping @Sendable () -> Int64, erased: RecentlyErased) -> EventHandlers {
        EventHandlers([
            SocialEvents.userDeleted: { event, scope in
                let user = try event.body(UserDeleted.self).userId
                erased.note(user, now: clock())
                try scope.db.run("DELETE FROM tour_progress WHERE user_id = ?", user)
            }
        ])
    }
}

/// A stop of a tour being walked: its place's id, name (in the request's language) and point.
private struct WalkStop {
    var id: Int64
    var name: String
    var point: Coordinate
}

/// What is kept of one user's walk of one tour.
private struct Walk {
    /// Visited place ids (some may have left the tour since).
    var visited: Set<Int64>
    /// The last position that gave a heading (or the first, or the first after a pause).
    var last: Coordinate
    var lastMilliseconds: Int64
}

extension CatalogStore {
    // MARK: Walking a tour (tours.locate on a reader, writing only what changed; progress reads anywhere)

    /// `tours.locate`: marks the stops within 30 m visited, keeps the position for the next
    /// heading, and answers the position's pixel, heading and next stop. It runs on a reader
    /// and reads first: a walker standing still changes nothing, so it writes nothing and
    /// never waits for the write lock. When something changed, it is worked out again and
    /// written in one immediate transaction.
    func locate(_ request: TourLocate, user: Int64) throws -> TourPosition {
        let here: Coordinate
        do {
            here = try Coordinate(latitude: request.lat, longitude: request.lon)
        } catch {
            throw error.serviceError
        }
        try WalkRules.checkCourse(request.courseDeg)
        let lang = try LanguagePreference.read(request.lang)
        let now = options.clock()
        let seen = try db.transaction(.deferred) { try locating(request, here: here, lang: lang, user: user, now: now, write: false) }
        guard seen.changes else { return seen.position }
        return try db.transaction(.immediate) { try locating(request, here: here, lang: lang, user: user, now: now, write: true).position }
    }

    /// Works out a walker's position; `write`: keeps what changed. Answers the position and
    /// whether anything changed.
    private func locating(_ request: TourLocate, here: Coordinate, lang: LanguagePreference?, user: Int64, now: Int64, write: Bool) throws
        -> (position: TourPosition, changes: Bool)
    {
        do {
            let stops = try walkStops(request.tourId, lang: lang)
            try erased.refuse(user, now: now)
            let walk = try self.walk(user: user, tour: request.tourId)
            var visited = (walk?.visited ?? []).intersection(stops.map(\.id))
            let arrived = stops.filter { !visited.contains($0.id) && $0.point.distance(to: here) <= WalkRules.visitRadiusMeters }.map(\.id)
            visited.formUnion(arrived)

            // Heading: the phone's course, else the way from the last kept position, when that is
            // recent and far enough away. The kept position moves only when a heading could be
            // taken from it (or it is missing or too old), so slow steps add up to a heading.
            var heading = request.courseDeg
            var keep = (point: here, milliseconds: now)
            if let walk, now - walk.lastMilliseconds <= WalkRules.headingWindowMilliseconds, now >= walk.lastMilliseconds {
                if walk.last.distance(to: here) >= WalkRules.headingMinMeters {
                    heading = heading ?? walk.last.initialBearing(to: here)
                } else {
                    keep = (walk.last, walk.lastMilliseconds)
                }
            }
            let visitedInOrder = stops.map(\.id).filter(visited.contains)
            // A walker standing still changes nothing: then nothing is written.
            let unchanged = walk.map { $0.visited == visited && $0.last == keep.point && $0.lastMilliseconds == keep.milliseconds } ?? false
            if !unchanged && write {
                try db.run(
                    """
                    INSERT INTO tour_progress (user_id, tour_id, visited, last_lat, last_lon, last_ms) VALUES (?, ?, ?, ?, ?, ?)
                    ON CONFLICT (user_id, tour_id) DO UPDATE SET visited = excluded.visited, last_lat = excluded.last_lat,
                        last_lon = excluded.last_lon, last_ms = excluded.last_ms
                    """, user, request.tourId, "[" + visitedInOrder.map(String.init).joined(separator: ",") + "]", keep.point.latitude,
                    keep.point.longitude, keep.milliseconds)
            }

            var position = TourPosition(
                tourId: request.tourId, arrived: arrived, visitedCount: visitedInOrder.count,
                stopCount: stops.count, finished: true)
            if let heading { position.headingDeg = WalkRules.bearing(heading) }
            if let map = try tourMapFit(request.tourId) {
                let pixel = map.pixel(of: here)
                position.x = WalkRules.tenth(pixel.x)
                position.y = WalkRules.tenth(pixel.y)
                position.onMap = map.isOnMap(x: pixel.x, y: pixel.y)
                if let heading { position.headingOnMapDeg = WalkRules.bearing(map.imageAngle(ofBearing: heading)) }
            }
            if let next = stops.first(where: { !visited.contains($0.id) }) {
                position.finished = false
                position.nextStop = NextStop(
                    id: next.id, name: next.name, distanceM: WalkRules.tenth(here.distance(to: next.point)),
                    bearingDeg: WalkRules.bearing(here.initialBearing(to: next.point)))
            }
            return (position, !unchanged)
        }
    }

    /// `tours.progress`: the caller's visited stops (those still in the tour) and the next one.
    func progress(_ request: TourProgressRequest, user: Int64) throws -> TourProgressReply {
        let stops = try walkStops(request.tourId, lang: try LanguagePreference.read(request.lang))
        let visited = try walk(user: user, tour: request.tourId)?.visited ?? []
        let inOrder = stops.map(\.id).filter(visited.contains)
        let next = stops.first { !visited.contains($0.id) }
        return TourProgressReply(
            tourId: request.tourId, visited: inOrder, nextStop: next.map { NextStop(id: $0.id, name: $0.name) },
            visitedCount: inOrder.count, stopCount: stops.count, finished: next == nil)
    }

    /// `tours.progress.reset`: forgets the caller's visited stops and last position on the tour.
    func resetProgress(_ request: TourProgressRequest, user: Int64) throws -> TourProgressReply {
        try db.transaction {
            _ = try walkStops(request.tourId, lang: nil)
            try db.run("DELETE FROM tour_progress WHERE user_id = ? AND tour_id = ?", user, request.tourId)
            return try progress(request, user: user)
        }
    }

    /// The stops of tour `id` in order, named in `lang`; `not_found` (field `tour_id`) for no such tour.
    private func walkStops(_ id: Int64, lang: LanguagePreference?) throws -> [WalkStop] {
        guard try db.scalarInt("SELECT 1 FROM tours WHERE id = ?\(HiddenImport.tours("id"))", id) != nil else {
            throw ServiceError(.notFound, "no tour with id \(id)", field: "tour_id")
        }
        return try db.query(
            """
            SELECT p.id, p.name, p.name_i18n, p.lat, p.lon FROM tour_stops s JOIN places p ON p.id = s.place_id
            WHERE s.tour_id = ? ORDER BY s.position
            """, id
        ).map { row in
            let names = try row.decode("name_i18n", as: String?.self).map { try JSONCoding.decoder.decode([String: String].self, from: Data($0.utf8)) }
            return WalkStop(
                id: try row.decode("id"), name: try LanguageTexts.localized(names, lang, own: nil).text ?? row.decode("name"),
                point: Coordinate(uncheckedLatitude: try row.decode("lat"), longitude: try row.decode("lon")))
        }
    }

    /// What is kept of `user`'s walk of `tour`, or nil.
    private func walk(user: Int64, tour: Int64) throws -> Walk? {
        try db.queryOne("SELECT visited, last_lat, last_lon, last_ms FROM tour_progress WHERE user_id = ? AND tour_id = ?", user, tour).map { row in
            Walk(
                visited: Set(try JSONCoding.decoder.decode([Int64].self, from: Data(try row.decode("visited", as: String.self).utf8))),
                last: Coordinate(uncheckedLatitude: try row.decode("last_lat"), longitude: try row.decode("last_lon")),
                lastMilliseconds: try row.decode("last_ms"))
        }
    }

    /// The fit of tour `id`'s map, or nil when it has none.
    private func tourMapFit(_ id: Int64) throws -> MapGeoreference? {
        try db.queryOne("SELECT georeference FROM tour_maps WHERE tour_id = ?", id).map(georeference)
    }
}
