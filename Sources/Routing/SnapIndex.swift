import Foundation
import Geo

/// Where a point meets the street network: the nearest point of a segment a profile travels.
public struct Snap: Sendable, Equatable {
    /// The segment (index into the graph's segments) and how far along it, 0 at its first node
    /// and 1 at its second.
    var segment: Int32
    var fraction: Double
    /// The point on the segment, and its distance from the point asked.
    public var point: Coordinate
    public var metres: Double
}

/// The segments of a network by the grid cells their bounding boxes cover (cells of
/// `cellDegrees` on a side), kept as one sorted array of cells and their segments. A segment
/// whose box covers more than `maxCells` cells (a long ferry line, or one a crafted file draws
/// across the world) is kept apart, in `long`, and looked at by every snap: it costs a
/// comparison, not a cell for each of its boxes' cells.
struct SnapIndex {
    static let cellDegrees = 0.002
    static let maxCells = 64

    private let cells: [Int64]
    private let start: [Int32]
    private let members: [Int32]
    private let long: [Int32]
    /// The box of every segment's ends: a point far outside it meets no street.
    private let box: (south: Double, west: Double, north: Double, east: Double)

    init(segments: [StreetGraph.Segment], coordinates: [Coordinate]) {
        var pairs: [(cell: Int64, segment: Int32)] = []
        var long: [Int32] = []
        pairs.reserveCapacity(segments.count * 2)
        for (index, segment) in segments.enumerated() {
            let a = coordinates[Int(segment.a)]
            let b = coordinates[Int(segment.b)]
            let rows = Self.cell(min(a.latitude, b.latitude))...Self.cell(max(a.latitude, b.latitude))
            let columns = Self.cell(min(a.longitude, b.longitude))...Self.cell(max(a.longitude, b.longitude))
            guard Int64(rows.count) * Int64(columns.count) <= Self.maxCells else {
                long.append(Int32(index))
                continue
            }
            for row in rows {
                for column in columns { pairs.append((Self.key(row, column), Int32(index))) }
            }
        }
        self.long = long
        var box = (south: 90.0, west: 180.0, north: -90.0, east: -180.0)
        for segment in segments {
            for end in [coordinates[Int(segment.a)], coordinates[Int(segment.b)]] {
                box = (min(box.south, end.latitude), min(box.west, end.longitude), max(box.north, end.latitude), max(box.east, end.longitude))
            }
        }
        self.box = box
        pairs.sort { $0.cell < $1.cell || ($0.cell == $1.cell && $0.segment < $1.segment) }
        var cells: [Int64] = []
        var start: [Int32] = []
        for (offset, pair) in pairs.enumerated() where cells.last != pair.cell {
            cells.append(pair.cell)
            start.append(Int32(offset))
        }
        start.append(Int32(pairs.count))
        self.cells = cells
        self.start = start
        members = pairs.map(\.segment)
    }

    static func cell(_ degrees: Double) -> Int32 { Int32((degrees / cellDegrees).rounded(.down)) }
    static func key(_ row: Int32, _ column: Int32) -> Int64 { Int64(row) << 32 | Int64(UInt32(bitPattern: column)) }

    /// Metres per degree of latitude on the sphere of `Earth.meanRadiusMeters`.
    static let metresPerDegree = Earth.meanRadiusMeters * .pi / 180

    /// The segments of the cells around `point`, ring by ring outwards (the cell it is in, then
    /// the eight around it, …), as long as `keepGoing(metres)` says a segment at least that far
    /// away could still matter, the long segments first. A segment may come more than once.
    func forEachSegment(near point: Coordinate, within metres: Double, keepGoing: (Double) -> Bool, _ body: (Int32) -> Void) {
        let latMargin = metres / Self.metresPerDegree
        let lonMargin = metres / (Self.metresPerDegree * max(0.01, cos(point.latitude * .pi / 180)))
        guard point.latitude >= box.south - latMargin, point.latitude <= box.north + latMargin, point.longitude >= box.west - lonMargin,
            point.longitude <= box.east + lonMargin
        else { return }
        for segment in long { body(segment) }
        let row = Self.cell(point.latitude)
        let column = Self.cell(point.longitude)
        // The narrower side of a cell here, in metres: a ring k cells out is at least k - 1 of them away.
        let side = Self.cellDegrees * Self.metresPerDegree * min(1, max(0.01, cos(point.latitude * .pi / 180)))
        var ring: Int32 = 0
        while keepGoing(Double(max(0, ring - 1)) * side) {
            for r in (row - ring)...(row + ring) {
                for c in (column - ring)...(column + ring) where ring == 0 || abs(r - row) == ring || abs(c - column) == ring {
                    visit(Self.key(r, c), body)
                }
            }
            ring += 1
        }
    }

    private func visit(_ key: Int64, _ body: (Int32) -> Void) {
        var low = 0
        var high = cells.count
        while low < high {
            let mid = (low + high) / 2
            if cells[mid] < key { low = mid + 1 } else { high = mid }
        }
        guard low < cells.count, cells[low] == key else { return }
        for slot in Int(start[low])..<Int(start[low + 1]) { body(members[slot]) }
    }
}
