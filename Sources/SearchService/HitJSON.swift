import Bus
import Foundation

/// A place's hit as the reply's JSON (`SearchHit` as `JSONCoding.encoder` writes it), in the
/// two pieces that do not change between queries, made by the encoder itself when the place is
/// indexed. The encoder sorts keys, so a hit is `{` head `,"distance_m":`D `,` tail
/// `,"rating":`R`,"review_count":`N `}`, the distance and rating present when known: a query
/// copies the pieces and writes only those numbers (`JSONText`).
struct HitJSON: Equatable {
    /// The members before `distance_m`: `"address":…,"category":…` (no address when it has none).
    var head: String
    /// The members after `distance_m`, up to the rating: `"id":…,"lat":…,"lon":…,"name":…,"popularity":…,"price_level":…`.
    var tail: String

    /// The pieces of `place`'s hit, with its numbers as SQLite gives them back (a negative zero
    /// is stored as 0): the encoder's `SearchHit` without distance or rating, cut where `id`
    /// begins. Keys are sorted, and `,"id":` cannot stand inside a string (its quotes would be
    /// escaped), so the first one is the member's.
    init(_ place: IndexedPlace) throws {
        func stored(_ x: Double) -> Double { x == 0 ? 0 : x }
        let hit = SearchHit(id: place.id, name: place.name, category: place.category, address: place.address,
                            lat: stored(place.lat), lon: stored(place.lon), priceLevel: place.priceLevel,
                            popularity: stored(place.popularity ?? 0), rating: nil, reviewCount: nil, distanceM: nil)
        let object = String(decoding: try JSONCoding.encoder.encode(hit), as: UTF8.self)
        let inside = object.dropFirst().dropLast()
        guard let cut = inside.range(of: #","id":"#) else {
            throw ServiceError(.internal, "a search hit's JSON has no id member")
        }
        head = String(inside[..<cut.lowerBound])
        tail = String(inside[inside.index(after: cut.lowerBound)...])
    }
}

/// A `search.nearby` reply (a `SearchPage`) written from hits' stored pieces.
struct HitPageWriter {
    private(set) var bytes: [UInt8] = Array(#"{"hits":["#.utf8)
    private var count = 0

    init() { bytes.reserveCapacity(4096) }

    /// Appends one hit: its stored pieces, its distance, and its rating when it has one.
    mutating func append(head: UnsafeBufferPointer<UInt8>, tail: UnsafeBufferPointer<UInt8>, distance: Double?, rating: (average: Double, count: Int64)?) {
        if count > 0 { bytes.append(UInt8(ascii: ",")) }
        count += 1
        bytes.append(UInt8(ascii: "{"))
        bytes.append(contentsOf: head)
        if let distance {
            bytes.append(contentsOf: #","distance_m":"#.utf8)
            JSONText.append(distance, to: &bytes)
        }
        bytes.append(UInt8(ascii: ","))
        bytes.append(contentsOf: tail)
        if let rating {
            bytes.append(contentsOf: #","rating":"#.utf8)
            JSONText.append(rating.average, to: &bytes)
            bytes.append(contentsOf: #","review_count":"#.utf8)
            bytes.append(contentsOf: String(rating.count).utf8)
        }
        bytes.append(UInt8(ascii: "}"))
    }

    /// The page, closed, with the next page's cursor when there is one (an opaque cursor is
    /// plain base64, copied between quotes).
    consuming func finish(nextCursor: String?) -> Data {
        bytes.append(UInt8(ascii: "]"))
        if let nextCursor {
            bytes.append(contentsOf: #","next_cursor":""#.utf8)
            bytes.append(contentsOf: nextCursor.utf8)
            bytes.append(UInt8(ascii: "\""))
        }
        bytes.append(UInt8(ascii: "}"))
        return Data(bytes)
    }
}
