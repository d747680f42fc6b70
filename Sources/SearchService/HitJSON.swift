import Bus
import Contracts
import Foundation

/// A place's hit as the reply's JSON (`SearchHit` as `JSONCoding.encoder` writes it), in the
/// two pieces that do not change between queries, made when the place is indexed. The encoder
/// sorts keys, so a hit is `{` head `,"distance_m":`D `,` tail
/// `,"rating":`R`,"review_count":`N `}`, the distance and rating present when known: a query
/// copies the pieces and writes only those numbers (`JSONText`).
struct HitJSON: Equatable {
    /// The members before `distance_m`: `"address":…,"category":…` (no address when it has none).
    var head: String
    /// The members after `distance_m`, up to the rating: `"id":…,"kind":…,"lat":…,"lon":…,"name":…,"popularity":…,"price_level":…`.
    var tail: String

    /// The pieces of `place`'s hit, with its numbers as SQLite gives them back (a negative zero
    /// is stored as 0): the encoder's `SearchHit` without distance or rating, cut where `id`
    /// begins, written by hand (the encoder cost a sixth of applying a place's event;
    /// NearbyReplyTests hold pages of them to the encoder's bytes).
    init(_ place: IndexedPlace) throws {
        func stored(_ x: Double) -> Double { x == 0 ? 0 : x }
        let popularity = stored(place.popularity ?? 0)
        guard place.lat.isFinite, place.lon.isFinite, popularity.isFinite else {
            throw ServiceError(.internal, "a search hit's numbers must be finite")
        }
        var out: [UInt8] = []
        out.reserveCapacity(256)
        if let address = place.address {
            JSONText.appendKey("address", to: &out)
            JSONText.append(address, to: &out)
            out.append(UInt8(ascii: ","))
        }
        JSONText.appendKey("category", to: &out)
        JSONText.append(place.category, to: &out)
        head = String(decoding: out, as: UTF8.self)
        out.removeAll(keepingCapacity: true)
        // The index row's id is minus a tour's: the hit has the tour's own, and its kind.
        let kind = HitKind(row: place.id)
        JSONText.appendKey("id", to: &out)
        JSONText.append(kind == .tour ? -place.id : place.id, to: &out)
        out.append(UInt8(ascii: ","))
        JSONText.appendKey("kind", to: &out)
        JSONText.append(kind.rawValue, to: &out)
        out.append(UInt8(ascii: ","))
        JSONText.appendKey("lat", to: &out)
        JSONText.append(stored(place.lat), to: &out)
        out.append(UInt8(ascii: ","))
        JSONText.appendKey("lon", to: &out)
        JSONText.append(stored(place.lon), to: &out)
        out.append(UInt8(ascii: ","))
        JSONText.appendKey("name", to: &out)
        JSONText.append(place.name, to: &out)
        out.append(UInt8(ascii: ","))
        JSONText.appendKey("popularity", to: &out)
        JSONText.append(popularity, to: &out)
        if let level = place.priceLevel {
            out.append(UInt8(ascii: ","))
            JSONText.appendKey("price_level", to: &out)
            JSONText.append(Int64(level), to: &out)
        }
        tail = String(decoding: out, as: UTF8.self)
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
