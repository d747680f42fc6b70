import Bus

// The street networks the catalog keeps from its OpenStreetMap imports, which search fetches
// to build its routes (Protocols/routing.md). Services only: the gateway never offers them.

extension Methods {
    public enum Streets {}
}

extension Methods.Streets {
    public static let list = Method<Empty, StreetSetList>(
        "catalog.streets.list", .catalog, .internal, .read,
        "the street networks the OSM imports left: id, checksum, bytes, bounds")
    public static let chunk = Method<StreetChunkRequest, StreetChunk>(
        "catalog.streets.chunk", .catalog, .internal, .read,
        "256 KiB (base64) of a street network's bytes: set_id, offset",
        errors: [
            .notFound("set_id", "no street network has this id (a newer import replaced it)"),
            .invalid("offset", "must be 0 or more, and at most the network's bytes"),
        ])
}

/// The catalog's events about street networks.
public enum StreetEvents {
    /// Body: `StreetSetsChanged`. An OSM import kept a street network, replacing those within its bounds.
    public static let changed = "catalog.streets.changed"
}

/// Body of `catalog.streets.changed`.
public struct StreetSetsChanged: Codable, Sendable, Equatable {
    public var setId: Int64
    /// The sets the new one replaced (their bounds lie within its own).
    public var removed: [Int64]

    enum CodingKeys: String, CodingKey {
        case removed
        case setId = "set_id"
    }

    public init(setId: Int64, removed: [Int64]) {
        self.setId = setId
        self.removed = removed
    }
}

/// One street network the catalog keeps: the streets of one OSM import, encoded
/// (`OSMStreets.encoded()`), with what a fetcher checks them by.
public struct StreetSetInfo: Codable, Sendable, Equatable {
    public var id: Int64
    /// FNV-1a (64 bits, 16 hex digits) of the bytes.
    public var checksum: String
    public var bytes: Int
    public var nodes: Int
    public var ways: Int
    public var south: Double, west: Double, north: Double, east: Double
    public var createdAt: String

    enum CodingKeys: String, CodingKey {
        case id, checksum, bytes, nodes, ways, south, west, north, east
        case createdAt = "created_at"
    }

    /// The checksum of a network's bytes: FNV-1a, 64 bits, as 16 hex digits.
    public static func checksum(_ bytes: [UInt8]) -> String {
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in bytes { hash = (hash ^ UInt64(byte)) &* 0x100_0000_01b3 }
        let hex = String(hash, radix: 16)
        return String(repeating: "0", count: 16 - hex.count) + hex
    }

    public init(
        id: Int64, checksum: String, bytes: Int, nodes: Int, ways: Int, south: Double, west: Double, north: Double, east: Double,
        createdAt: String
    ) {
        self.id = id
        self.checksum = checksum
        self.bytes = bytes
        self.nodes = nodes
        self.ways = ways
        (self.south, self.west, self.north, self.east) = (south, west, north, east)
        self.createdAt = createdAt
    }
}

/// The reply of `catalog.streets.list`, oldest first.
public struct StreetSetList: Codable, Sendable, Equatable {
    public var sets: [StreetSetInfo]
    public init(sets: [StreetSetInfo]) { self.sets = sets }
}

/// `catalog.streets.chunk`: a piece of a street network's bytes.
public struct StreetChunkRequest: Codable, Sendable, DeclaredShape {
    public var setId: Int64
    public var offset: Int

    enum CodingKeys: String, CodingKey {
        case offset
        case setId = "set_id"
    }

    public init(setId: Int64, offset: Int) {
        self.setId = setId
        self.offset = offset
    }
}

/// The reply of `catalog.streets.chunk`: up to `maxBytes` from `offset`, base64.
public struct StreetChunk: Codable, Sendable {
    public static let maxBytes = 256 << 10
    public var setId: Int64
    public var offset: Int
    public var total: Int
    public var data: String

    enum CodingKeys: String, CodingKey {
        case offset, total, data
        case setId = "set_id"
    }

    public init(setId: Int64, offset: Int, total: Int, data: String) {
        self.setId = setId
        self.offset = offset
        self.total = total
        self.data = data
    }
}
