import CSQLite
import Geo

/// `nearest_first(lat, lon, scale, from, to)`: an R*Tree query that reads the points of a
/// two-dimensional index (`min_lat, max_lat, min_lon, max_lon`, in degrees times `scale`)
/// nearest the point first, those whose distance may lie within `from` to `to` metres:
///
///     SELECT id FROM places_geo WHERE id MATCH nearest_first(-33.87, 151.21, 1, 0, 5000)
///
/// SQLite's R*Tree visits what a query function scores least first, nodes and entries alike
/// ([rtree.html](https://sqlite.org/rtree.html#custom_r_tree_queries)). Each is scored by the
/// least distance from the point to its box, which no point under a node is nearer than, so
/// the points come nearest first by their boxes. A box is a point's position rounded outward
/// (32-bit floats round by up to 1.7 m at ±180°; integers by the scale), so a point may come
/// a few metres before a slightly nearer one: readers allow `NearestFirst.slack`. Nodes and
/// points wholly nearer than `from` or further than `to` are never read.
public enum NearestFirst {
    /// How much nearer than the last point read a point not read yet may be, in metres.
    public static let slack = 4.0

    static func register(on connection: OpaquePointer) -> Int32 {
        sqlite3_rtree_query_callback(connection, "nearest_first", nearestFirstQuery, nil, nil)
    }
}

private func nearestFirstQuery(_ info: UnsafeMutablePointer<sqlite3_rtree_query_info>?) -> Int32 {
    guard let info, info.pointee.nParam == 5, info.pointee.nCoord == 4, let parameters = info.pointee.aParam,
        let coordinates = info.pointee.aCoord
    else { return SQLITE_ERROR }
    let scale = parameters[2]
    guard scale > 0, (-90...90).contains(parameters[0]), (-180...180).contains(parameters[1]) else { return SQLITE_ERROR }
    let center = Coordinate(uncheckedLatitude: parameters[0], longitude: parameters[1])
    let south = max(-90, coordinates[0] / scale)
    let north = min(90, coordinates[1] / scale)
    let west = max(-180, coordinates[2] / scale)
    let east = min(180, coordinates[3] / scale)
    let nearest = center.distanceLowerBound(south: south, north: north, west: west, east: east)
    let within =
        nearest > parameters[4] || (parameters[3] > 0 && center.distanceUpperBound(south: south, north: north, west: west, east: east) < parameters[3])
        ? NOT_WITHIN : PARTLY_WITHIN
    info.pointee.eWithin = within
    info.pointee.rScore = nearest
    return SQLITE_OK
}
