/// Google's encoded polyline format, which OSRM, Valhalla and most map libraries read: each
/// coordinate's change from the one before, rounded to `precision` decimal places, as
/// zig-zag-encoded 5-bit groups written as printable characters from `?` (63) on.
public enum Polyline {
    /// The points as one string, latitude before longitude, at `precision` 5 (about 1 m) unless told.
    public static func encode(_ points: [Coordinate], precision: Int = 5) -> String {
        let factor = pow10(precision)
        var out: [UInt8] = []
        out.reserveCapacity(points.count * 8)
        var lastLat = 0
        var lastLon = 0
        for point in points {
            let lat = Int((point.latitude * factor).rounded())
            let lon = Int((point.longitude * factor).rounded())
            append(lat - lastLat, to: &out)
            append(lon - lastLon, to: &out)
            (lastLat, lastLon) = (lat, lon)
        }
        return String(decoding: out, as: UTF8.self)
    }

    /// The points of an encoded polyline, or nil when it is not one (a character outside `?`…`~`,
    /// a number cut short, a latitude without its longitude, a point off the Earth).
    public static func decode(_ text: String, precision: Int = 5) -> [Coordinate]? {
        let factor = pow10(precision)
        var points: [Coordinate] = []
        var bytes = text.utf8.makeIterator()
        var lat = 0
        var lon = 0
        while let first = bytes.next() {
            guard let dLat = number(startingWith: first, &bytes), let next = bytes.next(), let dLon = number(startingWith: next, &bytes) else {
                return nil
            }
            lat += dLat
            lon += dLon
            guard let point = try? Coordinate(latitude: Double(lat) / factor, longitude: Double(lon) / factor) else { return nil }
            points.append(point)
        }
        return points
    }

    private static func pow10(_ precision: Int) -> Double {
        (0..<max(0, precision)).reduce(1.0) { value, _ in value * 10 }
    }

    private static func append(_ delta: Int, to out: inout [UInt8]) {
        var value = delta < 0 ? ~(delta << 1) : delta << 1
        while value >= 0x20 {
            out.append(UInt8((0x20 | (value & 0x1F)) + 63))
            value >>= 5
        }
        out.append(UInt8(value + 63))
    }

    private static func number(startingWith first: UInt8, _ bytes: inout String.UTF8View.Iterator) -> Int? {
        var result = 0
        var shift = 0
        var byte = first
        while true {
            guard byte >= 63, byte <= 126, shift <= 60 else { return nil }
            let chunk = Int(byte) - 63
            result |= (chunk & 0x1F) << shift
            shift += 5
            guard chunk >= 0x20 else { break }
            guard let next = bytes.next() else { return nil }
            byte = next
        }
        return result & 1 == 1 ? ~(result >> 1) : result >> 1
    }
}
