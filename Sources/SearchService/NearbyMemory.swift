import Bus
import Contracts
import Foundation
import Geo
import Storage
import Synchronization

/// What `search.nearby` needs of every indexed place, in memory: its point in a grid of cells,
/// its hit's stored JSON pieces, and its rating. A query nearest first without filters is then
/// answered without SQLite: the cells around the point are read nearest first, and the hits
/// are copied from the pieces.
///
/// The copy follows the index's commits and only them: the appliers note each change as they
/// make it in SQLite (`Changes`), and hand the notes over once the transaction has committed
/// (`settle`); a rollback drops them. It is filled from the index at the first query (`load`),
/// in a read transaction begun after it holds the lock, so a commit either is in what it reads
/// or is handed over after it: the changes handed over after the load (some already in it) are
/// applied again in commit order, each setting what it says, so the copy ends where the index is.
/// A rebuild from a snapshot merges into the index as events do, and the copy follows it.
///
/// One lock guards it: a query holds it for the microseconds of its cells, the subscribers to
/// hand changes over, the first query for the load (0.4 s for 144,561 places, which then take
/// about 300 bytes each), while the queries that come meanwhile read the index.
final class NearbyMemory: Sendable {
    /// Cells are this many degrees of latitude and of longitude.
    static let cellDegrees = 0.1
    static let rows = Int(180 / cellDegrees), columns = Int(360 / cellDegrees)
    /// A query whose box covers more cells than this (within a few degrees of a pole) reads the
    /// index instead: near a pole, 50 km spans every longitude.
    static let maxCells = 2_048

    /// A place's point, as its cell keeps it.
    struct Point {
        let id: Int64
        let latitude: Double
        let longitude: Double
    }

    /// A place as a hit: its point and its JSON pieces, `head` then `tail` in one array.
    struct Place {
        let latitude: Double
        let longitude: Double
        let pieces: [UInt8]
        let headCount: Int
    }

    /// A change an applier made in the index, handed over once it has committed.
    enum Change: Sendable {
        case upsert(id: Int64, latitude: Double, longitude: Double, head: String, tail: String)
        case delete(id: Int64)
        case rating(placeId: Int64, average: Double, count: Int64)
        case unrated(placeId: Int64)
    }

    /// One applier's notes of the transaction it is in (the subscriber's thread only, but the
    /// applier's closures must be `Sendable`).
    final class Changes: Sendable {
        private let noted = Mutex<[Change]>([])
        func note(_ change: Change) { noted.withLock { $0.append(change) } }
        func take() -> [Change] {
            noted.withLock { list in
                defer { list = [] }
                return list
            }
        }
    }

    /// The places' points by cell: for each row of cells (south to north), the cells that hold
    /// any, in column order (west to east), so a box is read row by row from one binary search.
    struct Grid {
        struct Cell {
            let column: Int
            var points: [Point]
        }

        private(set) var rows = [[Cell]](repeating: [], count: NearbyMemory.rows)

        /// Where in `rows[row]` the cell of `column` is, or would be.
        func index(_ row: Int, _ column: Int) -> Int {
            let cells = rows[row]
            var low = 0
            var high = cells.count
            while low < high {
                let middle = (low + high) / 2
                if cells[middle].column < column { low = middle + 1 } else { high = middle }
            }
            return low
        }

        mutating func insert(_ point: Point) {
            let (row, column) = NearbyMemory.position(point.latitude, point.longitude)
            let at = index(row, column)
            if at < rows[row].count && rows[row][at].column == column {
                rows[row][at].points.append(point)
            } else {
                rows[row].insert(Cell(column: column, points: [point]), at: at)
            }
        }

        mutating func remove(_ id: Int64, latitude: Double, longitude: Double) {
            let (row, column) = NearbyMemory.position(latitude, longitude)
            let at = index(row, column)
            guard at < rows[row].count && rows[row][at].column == column else { return }
            rows[row][at].points.removeAll { $0.id == id }
            if rows[row][at].points.isEmpty { rows[row].remove(at: at) }
        }
    }

    private struct State {
        var loaded = false
        var grid = Grid()
        var places: [Int64: Place] = [:]
        var ratings: [Int64: (average: Double, count: Int64)] = [:]
    }

    private let state = Mutex(State())
    /// Whether a thread is filling the copy: meanwhile queries read the index, not wait.
    private let loading = Atomic<Bool>(false)
    /// Whether the copy is filled (as the state says), read without the lock.
    private let filled = Atomic<Bool>(false)
    /// A query that would measure more places than this reads the index instead: the bound on
    /// the time one query holds the lock (a quarter of a million places, about 40 ms at the
    /// 0.15 µs a place measured with 20,000 places on one point). Below
    /// it memory is the faster even in a crowd (a cell of 0.1 degree holding a city's tens of
    /// thousands of places, a deep page reading past every place before its cursor).
    let maxPoints: Int

    init(maxPoints: Int = 1 << 18) { self.maxPoints = maxPoints }

    // MARK: Following the index

    /// Applies the notes of a transaction that committed; drops them when it rolled back.
    func settle(_ changes: [Change], committed: Bool) {
        guard committed, !changes.isEmpty else { return }
        state.withLock { s in
            // Not filled yet: the load will read what has committed.
            guard s.loaded else { return }
            for change in changes { NearbyMemory.apply(change, to: &s) }
        }
    }

    private static func apply(_ change: Change, to s: inout State) {
        switch change {
        case .upsert(let id, let latitude, let longitude, let head, let tail):
            remove(id, from: &s)
            let place = Place(latitude: latitude, longitude: longitude, pieces: Array(head.utf8) + Array(tail.utf8), headCount: head.utf8.count)
            s.places[id] = place
            s.grid.insert(Point(id: id, latitude: latitude, longitude: longitude))
        case .delete(let id):
            remove(id, from: &s)
        case .rating(let placeId, let average, let count):
            s.ratings[placeId] = (average, count)
        case .unrated(let placeId):
            s.ratings[placeId] = nil
        }
    }

    private static func remove(_ id: Int64, from s: inout State) {
        guard let old = s.places.removeValue(forKey: id) else { return }
        s.grid.remove(id, latitude: old.latitude, longitude: old.longitude)
    }

    /// Fills the copy from the index, unless it is filled or another thread is filling it: in a
    /// read transaction of its own (none may be open on `db`), begun once the lock is held.
    func load(from db: Database) throws {
        guard !filled.load(ordering: .acquiring),
            loading.compareExchange(expected: false, desired: true, ordering: .acquiringAndReleasing).exchanged
        else { return }
        defer { loading.store(false, ordering: .releasing) }
        try state.withLock { s throws in
            guard !s.loaded else { return }
            var fresh = State()
            try db.transaction(.deferred) {
                var columns: (id: Column, lat: Column, lon: Column, head: Column, tail: Column)?
                try db.forEachStep("SELECT id, lat, lon, hit_head, hit_tail FROM places") { statement in
                    let c =
                        try columns ?? (
                            statement.column("id"), statement.column("lat"), statement.column("lon"),
                            statement.column("hit_head"), statement.column("hit_tail")
                        )
                    columns = c
                    try statement.requireText(c.head)
                    try statement.requireText(c.tail)
                    let id = try statement.int64(c.id)
                    let latitude = try statement.double(c.lat)
                    let longitude = try statement.double(c.lon)
                    var pieces: [UInt8] = []
                    statement.withUTF8(c.head.index) { pieces.append(contentsOf: $0) }
                    let headCount = pieces.count
                    statement.withUTF8(c.tail.index) { pieces.append(contentsOf: $0) }
                    fresh.places[id] = Place(latitude: latitude, longitude: longitude, pieces: pieces, headCount: headCount)
                    fresh.grid.insert(Point(id: id, latitude: latitude, longitude: longitude))
                }
                for row in try db.query("SELECT place_id, average, count FROM ratings") {
                    fresh.ratings[try row.decode("place_id", as: Int64.self)] = (try row.decode("average", as: Double.self), try row.decode("count", as: Int64.self))
                }
            }
            fresh.loaded = true
            s = fresh
            filled.store(true, ordering: .releasing)
        }
    }

    // MARK: Answering

    /// The reply of a `search.nearby` nearest first without filters, as `MapQueries.nearby`
    /// writes it from the index: the `want` places nearest `center` within `reach` that
    /// `accept` takes, cut into a page by `page`. Nil when the copy is not filled or the query
    /// is being filled, the point is too near a pole, or the query would measure more than
    /// `maxPoints` places: then the index answers.
    ///
    /// Best first: the cells within reach that hold places, nearest possible first; a cell is
    /// read only while it could hold a place nearer than the `want`th found so far.
    func nearest(
        _ center: Coordinate, within reach: Double, want: Int, accept: (Int64, Double) -> Bool,
        page: ([(key: Double, id: Int64)]) -> (page: [(key: Double, id: Int64)], next: String?)
    ) -> Data? {
        guard filled.load(ordering: .acquiring), !loading.load(ordering: .acquiring) else { return nil }
        return state.withLock { s -> Data? in
            guard s.loaded, let spans = NearbyMemory.spans(around: center, radius: reach) else { return nil }
            var bounds = CellBounds(center)
            let reachable = CellBounds.haversine(reach + 0.01)
            // Where the cells are, not their arrays: plain numbers cost nothing to let go.
            var near: [(bound: Double, row: Int, at: Int)] = []
            for (row, columns) in spans {
                var at = s.grid.index(row, columns.lowerBound)
                while at < s.grid.rows[row].count && s.grid.rows[row][at].column <= columns.upperBound {
                    let bound = bounds.haversine(row: row, column: s.grid.rows[row][at].column)
                    if bound <= reachable { near.append((bound, row, at)) }
                    at += 1
                }
            }
            // The nearest found so far, at most `want` once a cell is read, nearest first (ties by id).
            var found: [(key: Double, id: Int64)] = []
            var measured = 0
            while !near.isEmpty {
                // The cell left that could be nearest (few are read: picked, not sorted).
                var pick = 0
                for index in near.indices where near[index].bound < near[pick].bound { pick = index }
                let (bound, row, at) = near[pick]
                near.swapAt(pick, near.count - 1)
                near.removeLast()
                if found.count >= want, found[want - 1].key < CellBounds.metres(bound) - 0.01 { break }
                measured += s.grid.rows[row][at].points.count
                guard measured <= maxPoints else { return nil }
                for point in s.grid.rows[row][at].points {
                    let distance = Coordinate(uncheckedLatitude: point.latitude, longitude: point.longitude).distance(to: center)
                    guard distance <= reach else { continue }
                    // Kept in order, `want` at most: most points of later cells lie past the last kept.
                    func before(_ kept: (key: Double, id: Int64)) -> Bool { distance != kept.key ? distance < kept.key : point.id < kept.id }
                    if found.count == want, let last = found.last, !before(last) { continue }
                    guard accept(point.id, distance) else { continue }
                    var index = found.count
                    while index > 0 && before(found[index - 1]) { index -= 1 }
                    found.insert((distance, point.id), at: index)
                    if found.count > want { found.removeLast() }
                }
            }
            let (hits, next) = page(found)
            var writer = HitPageWriter()
            for (distance, id) in hits {
                guard let place = s.places[id] else { continue }
                place.pieces.withUnsafeBufferPointer { pieces in
                    writer.append(
                        head: UnsafeBufferPointer(rebasing: pieces[..<place.headCount]),
                        tail: UnsafeBufferPointer(rebasing: pieces[place.headCount...]), distance: distance, rating: s.ratings[id])
                }
            }
            return writer.finish(nextCursor: next)
        }
    }

    /// A distance (metres) that no point of cell `key` is nearer `center` than (see `CellBounds`),
    /// less a centimetre for rounding.
    static func nearestPossible(row: Int, column: Int, to center: Coordinate) -> Double {
        var bounds = CellBounds(center)
        return max(0, CellBounds.metres(bounds.haversine(row: row, column: column)) - 0.01)
    }

    /// Lower bounds on the distance from one centre to cells, as haversines (`sin²(d / 2R)`,
    /// which grows with the distance d): the larger of the latitudes' difference along a
    /// meridian and of what the longitudes' difference alone adds to the haversine at the
    /// cell's latitude nearest a pole. What depends on the row is kept while cells come row by row.
    /// Looser than `MapQueries.lowerBound` (the distance to a box's nearest point, which the text
    /// search's walk needs for few cells), and cheap enough for every cell within reach: with
    /// that one instead, a nearby of one hit in Paris cost 444,513 instructions, not 108,882.
    struct CellBounds {
        let center: Coordinate
        private let cosine: Double
        private var row = -1
        private var rowLatitudes = 0.0, rowCoolest = 0.0

        init(_ center: Coordinate) {
            self.center = center
            cosine = cos(center.latitude * .pi / 180)
        }

        /// The haversine of a distance no point of the cell at `row`, `column` is nearer `center` than.
        mutating func haversine(row: Int, column: Int) -> Double {
            let degrees = NearbyMemory.cellDegrees
            let radians = Double.pi / 180
            if row != self.row {
                self.row = row
                let south = Double(row) * degrees - 90
                let north = south + degrees
                let gap = max(0, south - center.latitude, center.latitude - north)
                rowLatitudes = pow(sin(gap * radians / 2), 2)
                rowCoolest = max(0, cosine * min(cos(south * radians), cos(north * radians)))
            }
            let west = Double(column) * degrees - 180
            let east = west + degrees
            guard center.longitude < west || center.longitude > east else { return rowLatitudes }
            // Both in [-180, 180]: the gaps east to the cell's west edge and west to its east edge.
            var eastward = west - center.longitude
            var westward = center.longitude - east
            if eastward < 0 { eastward += 360 }
            if westward < 0 { westward += 360 }
            let gap = min(180, eastward, westward)
            return max(rowLatitudes, rowCoolest * pow(sin(gap * radians / 2), 2))
        }

        static func haversine(_ metres: Double) -> Double { pow(sin(min(metres / Earth.meanRadiusMeters, .pi) / 2), 2) }
        static func metres(_ haversine: Double) -> Double { 2 * Earth.meanRadiusMeters * asin(min(1, max(0, haversine).squareRoot())) }
    }

    /// The row and column of the cell a point lies in (longitude 180 in the easternmost
    /// column, -180 in the westernmost: one meridian, but a place is stored at one of them).
    static func position(_ latitude: Double, _ longitude: Double) -> (row: Int, column: Int) {
        (
            min(rows - 1, max(0, Int(((latitude + 90) / cellDegrees).rounded(.down)))),
            min(columns - 1, max(0, Int(((longitude + 180) / cellDegrees).rounded(.down))))
        )
    }

    /// The cells that hold every point within `radius` metres of `center`: for each row, a
    /// range of columns, each cell once; nil when they are more than `maxCells`.
    static func spans(around center: Coordinate, radius: Double) -> [(row: Int, columns: ClosedRange<Int>)]? {
        guard let box = try? BoundingBox.around(center, radiusMeters: radius) else { return nil }
        var spans: [(row: Int, columns: ClosedRange<Int>)] = []
        var parts: [ClosedRange<Int>] = []
        var count = 0
        // The meridian on the other side too, when only one side of it is in (as the index reads it).
        for part in box.indexAreas {
            // Widened by 1e-7 degree (1 cm), as the index's boxes are, so rounding never leaves out a point.
            let (south, west) = position(part.south - 1e-7, part.west - 1e-7)
            let (north, east) = position(part.north + 1e-7, part.east + 1e-7)
            // Parts of a box never share a cell, unless widening made them: then the index answers.
            guard !parts.contains(where: { $0.overlaps(west...east) }) else { return nil }
            parts.append(west...east)
            count += (north - south + 1) * (east - west + 1)
            guard count <= maxCells else { return nil }
            for row in south...north { spans.append((row, west...east)) }
        }
        return spans
    }
}
