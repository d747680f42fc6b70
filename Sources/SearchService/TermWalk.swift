import Bus
import Contracts
import Foundation
import Geo
import Storage

/// The keys a place is found by in `place_terms`: each of its folded words, and the first
/// one, two and three letters of each word (`s*`, `sa*`, `san*`), so that a text search near a
/// point reads the places of one word or short prefix outward from the point, and no others.
enum PlaceTerms {
    /// The key of a word's first letters (at most three): the letters and `*`, which no folded word has.
    static func prefixKey(_ word: String) -> String { String(word.prefix(3)) + "*" }

    /// The keys of a place's folded words (space-separated), each once.
    static func keys(name: String, other: String) -> Set<String> {
        var keys = Set<String>()
        for word in (name + " " + other).split(separator: " ") {
            keys.insert(String(word))
            for letters in 1...min(3, word.count) { keys.insert(String(word.prefix(letters)) + "*") }
        }
        return keys
    }

    /// The place's position on the Z-order curve of the R*Tree's integer coordinates (1e-7
    /// degree): latitude and longitude bits interleaved, so that every cell of a quadtree over
    /// the Earth is one range of positions. Signed so that SQLite orders it as the curve does.
    static func cell(lat: Double, lon: Double) -> Int64 {
        let y = UInt64(Int64((lat * SearchIndex.scale).rounded()) + latOffset)
        let x = UInt64(Int64((lon * SearchIndex.scale).rounded()) + lonOffset)
        return Int64(bitPattern: (spread(y) << 1 | spread(x)) ^ signBit)
    }

    static let latOffset: Int64 = 900_000_000
    static let lonOffset: Int64 = 1_800_000_000
    static let signBit: UInt64 = 1 << 63

    /// The 32 low bits of `value` at the even bits of the result.
    static func spread(_ value: UInt64) -> UInt64 {
        var x = value & 0xFFFF_FFFF
        x = (x | (x << 16)) & 0x0000_FFFF_0000_FFFF
        x = (x | (x << 8)) & 0x00FF_00FF_00FF_00FF
        x = (x | (x << 4)) & 0x0F0F_0F0F_0F0F_0F0F
        x = (x | (x << 2)) & 0x3333_3333_3333_3333
        x = (x | (x << 1)) & 0x5555_5555_5555_5555
        return x
    }

    /// The even bits of `value`, packed.
    static func unspread(_ value: UInt64) -> UInt64 {
        var x = value & 0x5555_5555_5555_5555
        x = (x | (x >> 1)) & 0x3333_3333_3333_3333
        x = (x | (x >> 2)) & 0x0F0F_0F0F_0F0F_0F0F
        x = (x | (x >> 4)) & 0x00FF_00FF_00FF_00FF
        x = (x | (x >> 8)) & 0x0000_FFFF_0000_FFFF
        x = (x | (x >> 16)) & 0x0000_0000_FFFF_FFFF
        return x
    }

    /// A place's words and position, as `place_terms` has them.
    typealias Indexed = (name: String, other: String, lat: Double, lon: Double)

    /// Changes a place's rows from what it was indexed by (nil: nothing) to what it is now
    /// (nil: it is gone): only the keys that changed, unless it moved.
    static func rewrite(_ id: Int64, from old: Indexed?, to new: Indexed?, _ db: Database) throws {
        let oldKeys = old.map { keys(name: $0.name, other: $0.other) } ?? []
        let oldCell = old.map { cell(lat: $0.lat, lon: $0.lon) }
        let newKeys = new.map { keys(name: $0.name, other: $0.other) } ?? []
        let newCell = new.map { cell(lat: $0.lat, lon: $0.lon) }
        let moved = oldCell != newCell
        if let oldCell {
            for key in moved ? oldKeys : oldKeys.subtracting(newKeys) {
                try db.run("DELETE FROM place_terms WHERE term = ? AND cell = ? AND id = ?", key, oldCell, id)
            }
        }
        if let newCell {
            for key in moved ? newKeys : newKeys.subtracting(oldKeys) {
                try db.run("INSERT INTO place_terms (term, cell, id) VALUES (?, ?, ?)", key, newCell, id)
            }
        }
    }
}

/// What a walk outward from a point reads next: a quadtree cell not read yet, or a place read
/// but not probed; `key` is a lower bound of the distance from the point to anything in it,
/// which orders them (least first).
struct WalkEntry: Comparable {
    var key: Double
    var level: Int
    var base: UInt64
    var latLow: Int64
    var lonLow: Int64
    /// A place's id, for a place.
    var id: Int64?

    static func < (a: WalkEntry, b: WalkEntry) -> Bool { a.key < b.key }
}

extension MapQueries {
    /// A cell is read whole when it holds at most this many places of the key, else split in four.
    static let walkCell = 16

    /// The entry of a quadtree cell (nil when it lies wholly beyond the poles or the 180th meridian).
    static func cellEntry(_ center: Coordinate, level: Int, base: UInt64, latLow: Int64, lonLow: Int64) -> WalkEntry? {
        let side = Int64(1) << (32 - level)
        let south = latLow - PlaceTerms.latOffset
        let west = lonLow - PlaceTerms.lonOffset
        guard south <= PlaceTerms.latOffset, west <= PlaceTerms.lonOffset else { return nil }
        let key = center.distanceLowerBound(
            south: Double(south) / SearchIndex.scale, north: Double(min(south + side, PlaceTerms.latOffset)) / SearchIndex.scale,
            west: Double(west) / SearchIndex.scale, east: Double(min(west + side, PlaceTerms.lonOffset)) / SearchIndex.scale)
        return WalkEntry(key: key, level: level, base: base, latLow: latLow, lonLow: lonLow, id: nil)
    }

    /// The `want` places nearest `center` within `reach` metres that have `key` (see
    /// `PlaceTerms`), pass the filters and that `accept` takes, nearest first (ties by id),
    /// with their distances: the places of the key are read outward from the point through a
    /// quadtree of the Earth, nearest cell first (a cell's places are one range of
    /// `place_terms`; a cell holding more than `walkCell` has the smallest cell
    /// holding them all split in four), and probed
    /// nearest first until `want` are found. Every place nearer than what is left to read has
    /// been read, so the nearest are exact.
    ///
    /// The `budget` counts every row of `place_terms` read, every cell found empty and every
    /// split: when
    /// it runs out before `want` are found, the answer is those found nearer than anything
    /// left unread, still the nearest, but fewer than `want`.
    func nearest(
        having key: String, _ center: Coordinate, within reach: Double, want: Int, budget: ReadBudget, _ filters: PlaceFilters,
        accept: (Probe) -> Bool
    ) throws -> [(id: Int64, distance: Double)] {
        var found: [(id: Int64, distance: Double)] = []
        var pending: [Int64] = []
        func nearestFirst(within radius: Double) -> [(id: Int64, distance: Double)] {
            Array(
                found.filter { $0.distance <= radius }
                    .sorted { $0.distance != $1.distance ? $0.distance < $1.distance : $0.id < $1.id }
                    .prefix(want))
        }
        /// Probes the places read; true when `want` are found nearer than `frontier`, what is left to read.
        func probePending(frontier: Double) throws -> Bool {
            if !pending.isEmpty {
                try probe(ids: pending, filters) { place in
                    let distance = place.coordinate.distance(to: center)
                    if distance <= reach, accept(place) { found.append((place.id, distance)) }
                }
                pending.removeAll(keepingCapacity: true)
            }
            return found.lazy.filter { $0.distance <= frontier }.count >= want
        }
        let cells = try db.statement(
            """
            SELECT cell, id FROM place_terms WHERE term = ? AND cell BETWEEN ? AND ? LIMIT ?
            """)
        defer { cells.reset() }
        let cellColumn = try cells.column("cell")
        let idColumn = try cells.column("id")
        let last = try db.statement(
            """
            SELECT cell FROM place_terms WHERE term = ? AND cell BETWEEN ? AND ? ORDER BY cell DESC LIMIT 1
            """)
        defer { last.reset() }
        let lastColumn = try last.column("cell")
        var queue = MinHeap<WalkEntry>()
        if let root = MapQueries.cellEntry(center, level: 0, base: 0, latLow: 0, lonLow: 0) { queue.push(root) }
        while let next = queue.first {
            if next.key > reach { break }
            guard next.id == nil else {
                pending.append(next.id ?? 0)
                _ = queue.pop()
                if pending.count >= 64, try probePending(frontier: queue.first?.key ?? reach) { return nearestFirst(within: queue.first?.key ?? reach) }
                continue
            }
            // Before reading further, probe what was read: it may be enough.
            if try probePending(frontier: next.key) { return nearestFirst(within: next.key) }
            let deepest = next.level == 32
            let limit = deepest ? budget.left : MapQueries.walkCell + 1
            guard budget.left >= limit, limit > 0 else { return nearestFirst(within: next.key) }
            _ = queue.pop()
            let span: UInt64 = deepest ? 0 : (UInt64(1) << (64 - 2 * next.level)) &- 1
            try cells.bind([key, Int64(bitPattern: next.base ^ PlaceTerms.signBit), Int64(bitPattern: (next.base | span) ^ PlaceTerms.signBit), Int64(limit)])
            var rows: [(cell: UInt64, id: Int64)] = []
            while try cells.step() {
                rows.append((UInt64(bitPattern: cells.int64(cellColumn.index)) ^ PlaceTerms.signBit, cells.int64(idColumn.index)))
            }
            cells.reset()
            budget.spend(max(1, rows.count))
            if rows.count <= MapQueries.walkCell || deepest {
                for row in rows {
                    let lat = Int64(PlaceTerms.unspread(row.cell >> 1)) - PlaceTerms.latOffset
                    let lon = Int64(PlaceTerms.unspread(row.cell)) - PlaceTerms.lonOffset
                    // The place's own coordinates round to these: a box of one unit either side holds them.
                    let bound = center.distanceLowerBound(
                        south: Double(lat - 1) / SearchIndex.scale, north: Double(lat + 1) / SearchIndex.scale,
                        west: Double(lon - 1) / SearchIndex.scale, east: Double(lon + 1) / SearchIndex.scale)
                    queue.push(WalkEntry(key: bound, level: 33, base: 0, latLow: 0, lonLow: 0, id: row.id))
                }
                // A deepest cell cut short by the budget: nothing past it is known.
                if deepest, budget.ranOut, rows.count == limit {
                    _ = try probePending(frontier: next.key)
                    return nearestFirst(within: next.key)
                }
            } else {
                // The smallest cell holding all the cell's places (the first read and the last)
                // is split, not the cell: clustered places take no split per level above them.
                try last.bind([key, Int64(bitPattern: next.base ^ PlaceTerms.signBit), Int64(bitPattern: (next.base | span) ^ PlaceTerms.signBit)])
                let high = try last.step() ? UInt64(bitPattern: last.int64(lastColumn.index)) ^ PlaceTerms.signBit : rows[0].cell
                last.reset()
                budget.spend(1)
                let level = min(32, (rows[0].cell ^ high).leadingZeroBitCount / 2)
                let base = level == 0 ? 0 : rows[0].cell & ~((UInt64(1) << (64 - 2 * level)) &- 1)
                let latLow = Int64(PlaceTerms.unspread(base >> 1))
                let lonLow = Int64(PlaceTerms.unspread(base))
                if level == 32 {
                    if let cell = MapQueries.cellEntry(center, level: 32, base: base, latLow: latLow, lonLow: lonLow) { queue.push(cell) }
                } else {
                    let half = Int64(1) << (31 - level)
                    for quarter in 0..<UInt64(4) {
                        if let child = MapQueries.cellEntry(
                            center, level: level + 1, base: base | quarter << (62 - 2 * level),
                            latLow: latLow + (quarter >> 1 == 1 ? half : 0),
                            lonLow: lonLow + (quarter & 1 == 1 ? half : 0))
                        {
                            queue.push(child)
                        }
                    }
                }
            }
        }
        // Everything within reach is read.
        let frontier = queue.first.map { min($0.key, reach) } ?? reach
        _ = try probePending(frontier: frontier)
        return nearestFirst(within: frontier)
    }
}
