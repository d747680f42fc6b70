import Bus
import Contracts
import Geo
import Storage

/// The ring search: the places nearest a point, read outward ring by ring.
extension MapQueries {
    /// The band of `places_by_strip` a latitude falls in (as the index computes it).
    static func strip(_ latitude: Double) -> Int64 { Int64((latitude + 90) * 1000) }
    /// Boxes taller than this many strips are read through the R*Tree instead.
    static let maxStrips: Int64 = 400

    /// The `want` places nearest `center` within `reach` metres that pass the filters and
    /// that `accept` takes, nearest first (ties by id), with their distances. Reads outward in
    /// widening rings until enough are found: everything within the ring is read, so the
    /// nearest are exact. Each ring is sized from how many the last one found, so little more
    /// is read than the answer needs; a ring read by latitude bands reads the inner ones
    /// again (cheaply, skipped), one read through the R*Tree leaves out what the R*Tree read.
    /// Bands cost a range scan each, the R*Tree a table lookup per place: a ring is read by
    /// bands only where the places read so far say it holds more places than bands (a dense
    /// city), through the R*Tree elsewhere (and for the first ring, before anything is known).
    func nearest(
        _ center: Coordinate, within reach: Double, want: Int, from start: Double = 0, _ filters: PlaceFilters,
        accept: (Probe) -> Bool
    ) throws -> [(id: Int64, distance: Double)] {
        var found: [(id: Int64, distance: Double)] = []
        var seen = Set<Int64>()
        var read: [BoundingBox] = []
        func consider(_ place: Probe) -> Bool {
            guard seen.insert(place.id).inserted else { return true }
            let distance = place.coordinate.distance(to: center)
            if distance <= reach, accept(place) { found.append((place.id, distance)) }
            return true
        }
        func nearestFirst(within radius: Double) -> [(id: Int64, distance: Double)] {
            Array(
                found.filter { $0.distance <= radius }
                    .sorted { $0.distance != $1.distance ? $0.distance < $1.distance : $0.id < $1.id }
                    .prefix(want))
        }
        // While a bulk load rebuilds the strips, the R*Tree serves every ring (asked once, when bands would be read).
        var strips: Bool?
        func hasStrips() throws -> Bool {
            if let strips { return strips }
            let has = try SearchSchema.hasIndex("places_by_strip", db)
            strips = has
            return has
        }
        // A dense city centre holds tens of places within 100 m.
        var ring = min(reach, max(100, start * 1.25))
        // The ring read last (its box read whole) and how many places its box held.
        var last: (ring: Double, places: Int)?
        while true {
            let box: BoundingBox
            box = try BoundingBox.around(center, radiusMeters: ring)
            let areas = box.indexAreas
            // Exact bounds, widened by 1e-7 degree (1 cm) so rounding never leaves out a point.
            let widened = areas.map { (south: $0.south - 1e-7, north: $0.north + 1e-7, west: $0.west - 1e-7, east: $0.east + 1e-7) }
            let bands = widened.reduce(0) { $0 + MapQueries.strip($1.north) - MapQueries.strip($1.south) + 1 }
            // The places this box should hold, at the density of the last one.
            let expected = last.map { Double($0.places) * (ring / $0.ring) * (ring / $0.ring) } ?? 0
            if expected >= Double(bands), widened.allSatisfy({ MapQueries.strip($0.north) - MapQueries.strip($0.south) < MapQueries.maxStrips }),
                try hasStrips()
            {
                // Band by band, in longitude order; what an earlier ring read comes again, cheaply, and is skipped.
                for area in widened {
                    for strip in MapQueries.strip(area.south)...MapQueries.strip(area.north) {
                        try probe(
                            from: "places p INDEXED BY places_by_strip",
                            where: "p.strip = ? AND p.lon BETWEEN ? AND ? AND p.lat BETWEEN ? AND ?",
                            [strip, area.west, area.east, area.south, area.north], filters, consider)
                    }
                }
                read = []
            } else {
                // A tall box: the R*Tree, leaving out what earlier rings read through it.
                for area in areas {
                    var conditions = MapQueries.inBox
                    var args = MapQueries.bounds(area)
                    for done in read {
                        conditions += " AND NOT (\(MapQueries.inBox))"
                        args += MapQueries.bounds(done)
                    }
                    try probe(from: MapQueries.fromTree, where: conditions, args, filters, consider)
                }
                read = areas
            }
            last = (ring, seen.count)
            let inside = found.lazy.filter { $0.distance <= ring }.count
            if ring >= reach || inside >= want { return nearestFirst(within: ring) }
            // Found grows with the area: aim a little past the radius that should hold `want`.
            let aim = inside == 0 ? ring * 4 : ring * (Double(want) / Double(inside)).squareRoot() * 1.15
            ring = min(reach, min(ring * 4, max(ring * 1.25, aim)))
        }
    }
}
