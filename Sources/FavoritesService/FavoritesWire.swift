import Bus
import Contracts
import Foundation

// A list's page, written by hand (its shape is `ListPage`'s, in Contracts).

/// A page of a list's items.
///
/// Written by hand, items included, as `JSONCoding.encoder` would write it (sorted keys): a
/// page of 100 items cost the encoder about 3 ms (`bench/favorites`), each item encoded once
/// to be measured against the page's byte budget and once more in the reply.
struct ItemPage: Sendable {
    var list: String
    /// The items' JSON objects, comma-separated.
    var items: [UInt8]
    var nextCursor: String?

    /// The reply body: `{"items":[…],"list":…,"next_cursor":…}`.
    var body: Data {
        var out: [UInt8] = []
        out.reserveCapacity(items.count + list.utf8.count + 64)
        out.append(UInt8(ascii: "{"))
        JSONText.appendKey("items", to: &out)
        out.append(UInt8(ascii: "["))
        out += items
        out += Array("],".utf8)
        JSONText.appendKey("list", to: &out)
        JSONText.append(list, to: &out)
        if let nextCursor {
            out.append(UInt8(ascii: ","))
            JSONText.appendKey("next_cursor", to: &out)
            JSONText.append(nextCursor, to: &out)
        }
        out.append(UInt8(ascii: "}"))
        return Data(out)
    }
}

extension ListItem {
    /// Appends the item's JSON as `JSONCoding.encoder` writes it (sorted keys, absent optionals
    /// left out); `ItemJSONTests` holds it to the encoder.
    func appendJSON(to out: inout [UInt8]) {
        out.append(UInt8(ascii: "{"))
        JSONText.appendKey("added_at", to: &out)
        JSONText.append(addedAt, to: &out)
        if let distanceM {
            out.append(UInt8(ascii: ","))
            JSONText.appendKey("distance_m", to: &out)
            JSONText.append(distanceM, to: &out)
        }
        if let note {
            out.append(UInt8(ascii: ","))
            JSONText.appendKey("note", to: &out)
            JSONText.append(note, to: &out)
        }
        out.append(UInt8(ascii: ","))
        JSONText.appendKey("place", to: &out)
        place.appendJSON(to: &out)
        if let visitedAt {
            out.append(UInt8(ascii: ","))
            JSONText.appendKey("visited_at", to: &out)
            JSONText.append(visitedAt, to: &out)
        }
        out.append(UInt8(ascii: "}"))
    }
}

extension PlaceCard {
    /// Appends the card's JSON as `JSONCoding.encoder` writes it (sorted keys, absent optionals
    /// left out).
    func appendJSON(to out: inout [UInt8]) {
        out.append(UInt8(ascii: "{"))
        if let address {
            JSONText.appendKey("address", to: &out)
            JSONText.append(address, to: &out)
            out.append(UInt8(ascii: ","))
        }
        JSONText.appendKey("category", to: &out)
        JSONText.append(category, to: &out)
        out.append(UInt8(ascii: ","))
        JSONText.appendKey("id", to: &out)
        JSONText.append(id, to: &out)
        out.append(UInt8(ascii: ","))
        JSONText.appendKey("lat", to: &out)
        JSONText.append(lat, to: &out)
        out.append(UInt8(ascii: ","))
        JSONText.appendKey("lon", to: &out)
        JSONText.append(lon, to: &out)
        out.append(UInt8(ascii: ","))
        JSONText.appendKey("name", to: &out)
        JSONText.append(name, to: &out)
        if let rating {
            out.append(UInt8(ascii: ","))
            JSONText.appendKey("rating", to: &out)
            JSONText.append(rating, to: &out)
        }
        if let ratingCount {
            out.append(UInt8(ascii: ","))
            JSONText.appendKey("rating_count", to: &out)
            JSONText.append(Int64(ratingCount), to: &out)
        }
        out.append(UInt8(ascii: "}"))
    }
}
