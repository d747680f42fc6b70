import Bus
import Geo
import Storage

/// The popularity bands: the most popular places of a box, read band by band downward.
extension MapQueries {
    /// The `want` most popular places after `after` in `box` (the whole world when nil) that
    /// pass the filters and that `accept` takes, most popular first (ties by id). Finds the
    /// highest popularity there, then reads bands of popularity downward, each twice as deep
    /// as the last, until enough are found: every place above a band's floor is read, so the
    /// order is exact, and a dense box is not read whole for one page.
    func mostPopular(in box: BoundingBox?, want: Int, after: SearchCursor?, _ filters: PlaceFilters,
                     accept: (Probe) -> Bool) throws -> [(id: Int64, popularity: Double)] {
        let areas: [(String, [SQLBindable?])] = box.map { MapQueries.areas($0).map { (MapQueries.inBox + " AND ", MapQueries.bounds($0)) } } ?? [("", [])]
        // Popularities in the R*Tree's hundredths. The cursor's band comes again; the cursor cuts it below.
        let ceiling = after.map { SearchIndex.scaledPopularity(-$0.key) } ?? 2_000_000_000
        func anyAtLeast(_ floor: Int64) throws -> Bool {
            try areas.contains { area, args in
                try db.scalarInt("SELECT 1 FROM places_geo g WHERE \(area)g.max_pop >= ? AND g.min_pop <= ? LIMIT 1",
                                 args + [floor, ceiling]) != nil
            }
        }
        // The highest popularity at or under the ceiling, by halving.
        guard try anyAtLeast(0) else { return [] }
        var low: Int64 = 0, high = ceiling
        while low < high {
            let middle = (low + high + 1) / 2
            if try anyAtLeast(middle) { low = middle } else { high = middle - 1 }
        }
        var found: [(id: Int64, popularity: Double)] = []
        var top = low, depth = max(1, low / 64)
        while true {
            let floor = max(0, top - depth + 1)
            for (area, args) in areas {
                var conditions = area + "g.min_pop >= ? AND g.max_pop <= ?"
                var conditionArgs = args + [floor, top]
                if let after {
                    conditions += " AND (p.popularity < ? OR (p.popularity = ? AND p.id > ?))"
                    conditionArgs += [-after.key, -after.key, after.id]
                }
                try probe(from: MapQueries.fromTree, where: conditions, conditionArgs, filters) { place in
                    if accept(place) { found.append((place.id, place.popularity)) }
                }
            }
            if found.count >= want || floor == 0 { break }
            top = floor - 1
            depth *= 2
        }
        return Array(found.sorted { $0.popularity != $1.popularity ? $0.popularity > $1.popularity : $0.id < $1.id }.prefix(want))
    }
}
