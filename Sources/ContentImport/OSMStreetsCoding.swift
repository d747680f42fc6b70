/// Why bytes are not an encoded street network.
public enum OSMStreetsCodingError: Error, Sendable, Equatable, CustomStringConvertible {
    case notStreets
    case truncated(at: Int)
    case invalid(String)

    public var description: String {
        switch self {
        case .notStreets: "not an encoded street network (wrong magic)"
        case .truncated(let at): "an encoded street network cut short at byte \(at)"
        case .invalid(let what): "an encoded street network with \(what)"
        }
    }
}

/// A street network as bytes, for the catalog to keep and search to fetch: little-endian
/// integers, coordinates in OpenStreetMap's fixed point (1e-7 degrees), and every tag key and
/// value once in a table the tags point into.
///
///     "TBSTREETS1"  strings: u32 count, each u16 length + UTF-8
///     nodes: u32 count, each i64 id, i32 lat, i32 lon, u16 tag count, (u32 key, u32 value)…
///     ways:  u32 count, each i64 id, u16 tag count, tags, u32 node count, u32 node index…
///     restrictions: u32 count, each i64 id, u8 kind (0 no, 1 only), i64 from, u32 via, i64 to,
///                   u16 transport count, u32 string…
///     counts: u32 ways missing nodes, u32 restrictions left out, u32 invalid elements
extension OSMStreets {
    static let magic = Array("TBSTREETS1".utf8)

    public func encoded() -> [UInt8] {
        var strings: [String: UInt32] = [:]
        var table: [String] = []
        func intern(_ text: String) -> UInt32 {
            if let known = strings[text] { return known }
            let index = UInt32(table.count)
            strings[text] = index
            table.append(text)
            return index
        }
        var body = Writer()
        func tags(_ tags: [String: String]) {
            body.u16(UInt16(tags.count))
            for (key, value) in tags.sorted(by: { $0.key < $1.key }) {
                body.u32(intern(key))
                body.u32(intern(value))
            }
        }
        body.u32(UInt32(nodes.count))
        for node in nodes {
            body.i64(node.id)
            body.u32(UInt32(bitPattern: Int32((node.lat * 1e7).rounded())))
            body.u32(UInt32(bitPattern: Int32((node.lon * 1e7).rounded())))
            tags(node.tags)
        }
        body.u32(UInt32(ways.count))
        for way in ways {
            body.i64(way.id)
            tags(way.tags)
            body.u32(UInt32(way.nodes.count))
            for node in way.nodes { body.u32(UInt32(node)) }
        }
        body.u32(UInt32(restrictions.count))
        for restriction in restrictions {
            body.i64(restriction.id)
            body.bytes.append(restriction.kind == .no ? 0 : 1)
            body.i64(restriction.from)
            body.u32(UInt32(restriction.via))
            body.i64(restriction.to)
            body.u16(UInt16(restriction.transports.count))
            for transport in restriction.transports.sorted() { body.u32(intern(transport)) }
        }
        body.u32(UInt32(counts.waysMissingNodes))
        body.u32(UInt32(counts.restrictionsLeftOut))
        body.u32(UInt32(counts.invalidElements))
        var head = Writer()
        head.bytes = Self.magic
        head.u32(UInt32(table.count))
        for text in table {
            let utf8 = Array(text.utf8)
            head.u16(UInt16(utf8.count))
            head.bytes += utf8
        }
        return head.bytes + body.bytes
    }

    /// Reads what `encoded()` wrote, checking every count and index against the bytes there are.
    public init(encoded bytes: [UInt8]) throws(OSMStreetsCodingError) {
        var reader = Reader(bytes: bytes)
        guard bytes.count >= Self.magic.count, Array(bytes[0..<Self.magic.count]) == Self.magic else { throw .notStreets }
        reader.at = Self.magic.count
        let stringCount = try reader.count(atLeast: 2)
        var table: [String] = []
        table.reserveCapacity(stringCount)
        for _ in 0..<stringCount {
            let length = Int(try reader.u16())
            let utf8 = try reader.take(length)
            guard let text = String(validating: utf8, as: UTF8.self) else { throw .invalid("a string that is not UTF-8") }
            table.append(text)
        }
        func string(_ index: UInt32) throws(OSMStreetsCodingError) -> String {
            guard Int(index) < table.count else { throw .invalid("a string index out of range") }
            return table[Int(index)]
        }
        func tags() throws(OSMStreetsCodingError) -> [String: String] {
            let count = Int(try reader.u16())
            var tags: [String: String] = [:]
            for _ in 0..<count { tags[try string(try reader.u32())] = try string(try reader.u32()) }
            return tags
        }
        let nodeCount = try reader.count(atLeast: 18)
        var nodes: [OSMStreetNode] = []
        nodes.reserveCapacity(nodeCount)
        for _ in 0..<nodeCount {
            let id = try reader.i64()
            let lat = Double(Int32(bitPattern: try reader.u32())) / 1e7
            let lon = Double(Int32(bitPattern: try reader.u32())) / 1e7
            guard abs(lat) <= 90, abs(lon) <= 180 else { throw .invalid("a node off the Earth") }
            nodes.append(OSMStreetNode(id: id, lat: lat, lon: lon, tags: try tags()))
        }
        let wayCount = try reader.count(atLeast: 14)
        var ways: [OSMStreetWay] = []
        ways.reserveCapacity(wayCount)
        for _ in 0..<wayCount {
            let id = try reader.i64()
            let wayTags = try tags()
            let count = try reader.count(atLeast: 4)
            var refs: [Int32] = []
            refs.reserveCapacity(count)
            for _ in 0..<count {
                let index = try reader.u32()
                guard index < nodeCount else { throw .invalid("a way node out of range") }
                refs.append(Int32(index))
            }
            ways.append(OSMStreetWay(id: id, tags: wayTags, nodes: refs))
        }
        let restrictionCount = try reader.count(atLeast: 31)
        var restrictions: [OSMTurnRestriction] = []
        for _ in 0..<restrictionCount {
            let id = try reader.i64()
            let kind = try reader.take(1).first ?? 0xFF
            guard kind <= 1 else { throw .invalid("a restriction of an unknown kind") }
            let from = try reader.i64()
            let via = try reader.u32()
            guard via < nodeCount else { throw .invalid("a restriction through a node out of range") }
            let to = try reader.i64()
            var transports = Set<String>()
            for _ in 0..<Int(try reader.u16()) { transports.insert(try string(try reader.u32())) }
            restrictions.append(OSMTurnRestriction(id: id, kind: kind == 0 ? .no : .only, from: from, via: Int32(via), to: to, transports: transports))
        }
        var counts = OSMStreetCounts()
        counts.waysMissingNodes = Int(try reader.u32())
        counts.restrictionsLeftOut = Int(try reader.u32())
        counts.invalidElements = Int(try reader.u32())
        guard reader.at == bytes.count else { throw .invalid("\(bytes.count - reader.at) bytes after its end") }
        self.init(nodes: nodes, ways: ways, restrictions: restrictions, counts: counts)
    }

    /// The smallest box holding every node: (south, west, north, east), nil without nodes.
    public var bounds: (south: Double, west: Double, north: Double, east: Double)? {
        guard let first = nodes.first else { return nil }
        var box = (south: first.lat, west: first.lon, north: first.lat, east: first.lon)
        for node in nodes.dropFirst() {
            box = (min(box.south, node.lat), min(box.west, node.lon), max(box.north, node.lat), max(box.east, node.lon))
        }
        return box
    }
}

private struct Writer {
    var bytes: [UInt8] = []
    mutating func u16(_ value: UInt16) { withUnsafeBytes(of: value.littleEndian) { bytes += $0 } }
    mutating func u32(_ value: UInt32) { withUnsafeBytes(of: value.littleEndian) { bytes += $0 } }
    mutating func i64(_ value: Int64) { withUnsafeBytes(of: value.littleEndian) { bytes += $0 } }
}

private struct Reader {
    let bytes: [UInt8]
    var at = 0

    mutating func take(_ count: Int) throws(OSMStreetsCodingError) -> ArraySlice<UInt8> {
        guard count >= 0, count <= bytes.count - at else { throw .truncated(at: at) }
        defer { at += count }
        return bytes[at..<(at + count)]
    }

    mutating func u16() throws(OSMStreetsCodingError) -> UInt16 {
        let slice = try take(2)
        return UInt16(slice[slice.startIndex]) | UInt16(slice[slice.startIndex + 1]) << 8
    }

    mutating func u32() throws(OSMStreetsCodingError) -> UInt32 {
        let slice = try take(4)
        return slice.reversed().reduce(0) { $0 << 8 | UInt32($1) }
    }

    mutating func i64() throws(OSMStreetsCodingError) -> Int64 {
        let slice = try take(8)
        return Int64(bitPattern: slice.reversed().reduce(0) { $0 << 8 | UInt64($1) })
    }

    /// A count of items of at least `size` bytes each: one the bytes left cannot hold is refused
    /// before anything is reserved for it.
    mutating func count(atLeast size: Int) throws(OSMStreetsCodingError) -> Int {
        let count = Int(try u32())
        guard count <= (bytes.count - at) / size else { throw .truncated(at: at) }
        return count
    }
}
