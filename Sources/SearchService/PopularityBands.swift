import Bus
import Contracts
import Geo
import Storage

/// The popularity bands: the most popular places of a box, read band by band downward.
extension MapQueries {
    /// The most places of a box ranked in memory from one read (see `mostPopular`).
    static let rankedInMemoryUpTo = 512

    /// The `want` most popular places after `after` in `box` (the whole world when nil) that
    /// pass the filters and that `accept` takes, most popular first (ties by id). Finds the
    /// highest popularity there, then reads bands of popularity downward, each twice as deep
    /// as the last, until enough are found: every place above a band's floor is read, so the
    /// order is exact, and a dense box is not read whole for one page. With a `budget`, at
    /// most what it has left is read: when it runs out within a band, the answer is what the
    /// bands above it found, still the most popular, but fewer than `want`.
    ///
    /// A first page of a box that holds at most `rankedInMemoryUpTo` places (that pass the
    /// filters' SQL) is read whole from the R*Tree once and ranked in memory: most boxes on a
    /// map of real places are that sparse, and finding their highest popularity by halving
    /// takes some 40 probes (issue 16's `./bench/goals`: 24 ms at 50 connections for a town).
    func mostPopular(
        in box: BoundingBox?, want: Int, after: SearchCursor?, budget: ReadBudget? = nil, _ filters: PlaceFilters,
        accept: (Probe) -> Bool
    ) throws -> [(id: Int64, popularity: Double)] {
        let areas: [(String, [SQLBindable?])] = box.map { $0.indexAreas.map { (MapQueries.inBox + " AND ", MapQueries.bounds($0)) } } ?? [("", [])]
        if box != nil, after == nil, (budget?.left ?? .max) > Self.rankedInMemoryUpTo {
            var all: [(id: Int64, popularity: Double)] = []
            var read = 0
            for (area, args) in areas where read <= Self.rankedInMemoryUpTo {
                read += try probe(from: MapQueries.fromTree, where: area + "1", args, filters, limit: Self.rankedInMemoryUpTo + 1 - read) { place in
                    if accept(place) { all.append((place.id, place.popularity)) }
                    return true
                }
            }
            budget?.spend(read)
            if read <= Self.rankedInMemoryUpTo {
                return Array(all.sorted { $0.popularity != $1.popularity ? $0.popularity > $1.popularity : $0.id < $1.id }.prefix(want))
            }
        }
        // Popularities in the R*Tree's hundredths. The cursor's band comes again; the cursor cuts it below.
        let ceiling = after.map { SearchIndex.scaledPopularity(-$0.key) } ?? 2_000_000_000
        func anyAtLeast(_ floor: Int64) throws -> Bool {
            try areas.contains { area, args in
                try db.scalarInt(
                    "SELECT 1 FROM places_geo g WHERE \(area)g.max_pop >= ? AND g.min_pop <= ? LIMIT 1",
                    args + [floor, ceiling]) != nil
            }
        }
        // The highest popularity at or under the ceiling, by halving.
        guard try anyAtLeast(0) else { return [] }
        var low: Int64 = 0
        var high = ceiling
        while low < high {
            let middle = (low + high + 1) / 2
            if try anyAtLeast(middle) { low = middle } else { high = middle - 1 }
        }
        var found: [(id: Int64, popularity: Double)] = []
        func mostPopularFirst() -> [(id: Int64, popularity: Double)] {
            Array(found.sorted { $0.popularity != $1.popularity ? $0.popularity > $1.popularity : $0.id < $1.id }.prefix(want))
        }
        var top = low
        var depth = max(1, low / 64)
        while true {
            let floor = max(0, top - depth + 1)
            let above = found.count
            for (area, args) in areas {
                var conditions = area + "g.min_pop >= ? AND g.max_pop <= ?"
                var conditionArgs = args + [floor, top]
                if let after {
                    conditions += " AND (p.popularity < ? OR (p.popularity = ? AND p.id > ?))"
                    conditionArgs += [-after.key, -after.key, after.id]
                }
                let read = try probe(from: MapQueries.fromTree, where: conditions, conditionArgs, filters, limit: budget?.left) { place in
                    if accept(place) { found.append((place.id, place.popularity)) }
                    return true
                }
                budget?.spend(read)
                if budget?.ranOut == true {
                    // This band may be cut short: only the bands above it were read whole.
                    found.removeSubrange(above...)
                    return mostPopularFirst()
                }
            }
            if found.count >= want || floor == 0 { break }
            top = floor - 1
            depth *= 2
        }
        return mostPopularFirst()
    }

    /// The `want` most popular places (ties by id) that pass the filters and that `accept`
    /// takes, read down `places_by_popularity` until enough are found or `budget` runs out:
    /// then the answer is those found, fewer than `want` but still the most popular. The
    /// filters judge the places the budget reads, so a place they turn away is counted too.
    /// While a bulk load has dropped that index, SQLite sorts the places instead (slower, same answer).
    func mostPopular(want: Int, budget: ReadBudget, _ filters: PlaceFilters, accept: (Probe) -> Bool) throws -> [(id: Int64, popularity: Double)] {
        var found: [(id: Int64, popularity: Double)] = []
        guard want > 0, !budget.ranOut else { return found }
        let index = try SearchSchema.hasIndex("places_by_popularity", db) ? " INDEXED BY places_by_popularity" : ""
        func take(_ place: Probe) -> Bool {
            if accept(place) { found.append((place.id, place.popularity)) }
            return found.count < want
        }
        guard MapQueries.judgesInSQL(filters) else {
            // Every place read comes to the probe (open now is judged there), and is counted.
            budget.spend(try probe(from: "places p" + index, where: "1", [], filters, order: "p.popularity DESC, p.id", limit: budget.left, take))
            return found
        }
        // The budget's places, the filters judging them after: what they turn away is counted.
        // The columns are what the probe and the filters read (the index covers them but opening hours).
        let columns = "id, lat, lon, popularity, category, price_level, name_words, other_words" + (filters.openNow == true ? ", opening_hours, timezone" : "")
        let limit = budget.left
        let read = try probe(
            from: "(SELECT \(columns) FROM places\(index) ORDER BY popularity DESC, id LIMIT ?) p", where: "1", [limit], filters,
            order: "p.popularity DESC, p.id", take)
        // Stopped early, it read at least those it took; else the whole limit.
        budget.spend(found.count < want ? limit : read)
        return found
    }
}

/// How many more places a search may read: a bound on its work whatever the index holds.
final class ReadBudget {
    private(set) var left: Int
    /// Places read so far.
    private(set) var spent = 0

    init(_ places: Int) { left = places }

    var ranOut: Bool { left <= 0 }

    func spend(_ places: Int) {
        left -= places
        spent += places
    }
}
