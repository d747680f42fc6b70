import Bus
import Contracts
import Foundation
import Geo
@testable import SearchService
import Storage
import Testing
import TestSupport

/// `search.nearby` reads a plain body by span and writes its reply from stored pieces: both must
/// be exactly what the decoder reads and what the encoder writes.
@Suite struct NearbyReplyTests {
    /// Numbers are written as `JSONCoding.encoder` writes them, for any finite double.
    @Test func numbersAreWrittenAsTheEncoderWritesThem() throws {
        var rng = SplitMix64(seed: 11)
        var values: [Double] = [0, -0.0, 1, 12, 50_000, 110.88520346870206, 1e-5, 1.5e-7, 123_456_789_012, 1e15, 1e16, 1e17,
                                4.5, 0.1, 3.0000000000000004, .leastNonzeroMagnitude, .greatestFiniteMagnitude, -2.5]
        for _ in 0..<3_000 {
            values.append(Double.random(in: 0...50_000, using: &rng))
            values.append(Double.random(in: 0...1, using: &rng) * pow(10, Double(Int.random(in: -12...20, using: &rng))))
            let bits = Double(bitPattern: rng.next())
            if bits.isFinite { values.append(bits) }
        }
        for value in values {
            var written: [UInt8] = []
            JSONText.append(value, to: &written)
            let encoded = try JSONCoding.encoder.encode([value])
            #expect(written == Array(encoded.dropFirst().dropLast()), "\(value)")
        }
    }

    /// A page nearest first, written from the stored pieces, is byte for byte the encoder's
    /// `SearchPage` of the same hits, whatever the places' names, addresses, numbers and ratings.
    @Test func aPageIsWhatTheEncoderWrites() throws {
        var rng = SplitMix64(seed: 12)
        let index = try TestIndex()
        let names = ["Café \"Ζ\" \\ 東京", "Opera\nBar", "Plain", "😀 emoji", "tab\there", "a/b", "ctl\u{1}\u{1F}", "Line\u{2028}sep", "\u{7F}del"]
        try index.db.transaction {
            for i in 0..<400 {
                let centre = try Coordinate(latitude: 0.01, longitude: 0.01)
                // Around a point by the equator and the prime meridian, some exactly on them (a negative zero among them).
                let p = centre.destination(bearingDegrees: Double(i) * 7.3, distanceMeters: Double(i * i % 9_000))
                let lat = i % 17 == 0 ? -0.0 : p.latitude, lon = i % 19 == 0 ? (i % 2 == 0 ? 0 : -0.0) : p.longitude
                let address: String? = i % 3 == 0 ? nil : i % 3 == 1 ? "\(i) George St, \"The\" Rocks\nNSW" : "Ünïcödé / \\ 東京 \(i)"
                let popularity: Double? = i % 4 == 0 ? nil : i % 4 == 1 ? Double(i) / 7 : i % 4 == 2 ? -0.0 : Double(i)
                let place = IndexedPlace(id: Int64(i + 1), name: names[i % names.count] + " \(i)", category: ["cafe", "park", "museum"][i % 3],
                                         lat: lat, lon: lon, address: address, priceLevel: i % 6 == 5 ? nil : i % 6,
                                         popularity: popularity)
                try SearchIndex.upsert(place, index.db)
                index.places.append(place)
                if i % 5 == 0 {
                    try SearchIndex.rating(RatingUpdated(placeId: Int64(i + 1), average: Double(Int.random(in: 10...50, using: &rng)) / 10 + (i % 10 == 0 ? 0.25 : 0), count: i + 1), index.db)
                }
            }
        }
        for (lat, lon, radius, limit) in [(0.01, 0.01, 50_000.0, 50), (0.01, 0.01, 3_000.0, 7), (0.0, 0.0, 2_000.0, 1), (0.02, 0.0, 50_000.0, 20), (10.0, 10.0, 100.0, 5)] {
            var cursor: String?
            for _ in 0..<100 {
                let query = try nearbyQuery(#"{"near":{"lat":\#(lat),"lon":\#(lon)},"radius_m":\#(radius),"limit":\#(limit)\#(cursor.map { #","cursor":"\#($0)""# } ?? "")}"#)
                let written = try index.queries.nearby(query)
                let page = try JSONDecoder().decode(SearchPage.self, from: written)
                let centre = try Coordinate(latitude: lat, longitude: lon)
                let expected = SearchPage(hits: try index.queries.hits(ids: page.hits.map(\.id), from: centre), nextCursor: page.nextCursor)
                #expect(written == (try JSONCoding.encoder.encode(expected)), "\(String(decoding: written, as: UTF8.self))")
                guard let next = page.nextCursor else { break }
                cursor = next
            }
        }
        #expect(try index.queries.nearbyPage(try nearbyQuery(#"{"near":{"lat":0.01,"lon":0.01},"radius_m":50000,"limit":50}"#)).hits.count == 50)
    }

    /// A plain body is read by span as the decoder reads it; anything else (and anything out
    /// of range, which the params' rules refuse) is left to the check and the decoder.
    @Test func spansReadWhatTheDecoderReads() throws {
        var rng = SplitMix64(seed: 13)
        var bodies = [
            #"{"near":{"lat":-33.8568,"lon":151.2153},"radius_m":1000,"limit":2}"#,
            #"{"near":{"lat":48.8566,"lon":2.3522},"radius_m":50000,"limit":20,"sort":"distance","cursor":"czE6NDA1YmI4YTcyYzczMTg2NDoy"}"#,
            #" { "radius_m" : 5e4 , "near" : { "lon" : -0.0 , "lat" : 1E-7 } , "sort" : "popularity" } "#,
            #"{"near":{"lat":90,"lon":-180},"radius_m":1,"sort":"rating","limit":50,"cursor":"a\"b\\c\u00e9"}"#,
        ]
        for _ in 0..<500 {
            let lat = Double.random(in: -90...90, using: &rng), lon = Double.random(in: -180...180, using: &rng)
            let radius = Double.random(in: 1...50_000, using: &rng)
            let text = [String(lat), String(format: "%.17g", lon), String(format: "%.6e", radius)]
            bodies.append(#"{"near":{"lat":\#(text[0]),"lon":\#(text[1])},"radius_m":\#(text[2]),"limit":\#(Int.random(in: 1...50, using: &rng))}"#)
        }
        for body in bodies {
            let json = Data(body.utf8)
            let decoded = try JSONDecoder().decode(NearbyQuery.self, from: json)
            let spans = try #require(NearbyQuery(spans: json), "\(body)")
            #expect(spans.near.lat.bitPattern == decoded.near.lat.bitPattern && spans.near.lon.bitPattern == decoded.near.lon.bitPattern, "\(body)")
            #expect(spans.radiusM.bitPattern == decoded.radiusM.bitPattern && spans.limit == decoded.limit, "\(body)")
            #expect(spans.sort == decoded.sort && spans.cursor == decoded.cursor && spans.filters == decoded.filters, "\(body)")
        }
        let near = #""near":{"lat":1,"lon":2}"#
        for odd in [#"{\#(near),"radius_m":3,"categories":["cafe"]}"#, #"{\#(near),"radius_m":3,"min_rating":4}"#,
                    #"{\#(near),"radius_m":3,"open_now":true}"#, #"{\#(near),"radius_m":3,"extra":0}"#,
                    #"{"near":{"lat":1,"lat":2,"lon":2},"radius_m":3}"#, #"{\#(near),\#(near),"radius_m":3}"#,
                    #"{\#(near),"radius_m":3,"limit":2,"limit":3}"#, #"{"near":{"lat":1,"lon":2,"alt":0},"radius_m":3}"#,
                    #"{"near":{"lat":null,"lon":2},"radius_m":3}"#, #"{\#(near),"radius_m":3,"limit":null}"#, #"{"near":null,"radius_m":3}"#,
                    #"{"near":{"lat":"1","lon":2},"radius_m":3}"#, #"{"near":{"lat":1e999,"lon":2},"radius_m":3}"#, #"{\#(near)}"#,
                    #"{"near":{"lat":1},"radius_m":3}"#, #"{"lat":1,"lon":2,"radius_m":3}"#, #"{"near":[1,2],"radius_m":3}"#,
                    #"{\#(near),"radius_m":3,"limit":2.5}"#, #"{\#(near),"radius_m":3,"limit":1e1}"#,
                    #"{\#(near),"radius_m":3,"limit":99999999999999999999}"#, #"{\#(near),"radius_m":3,"sort":"nearest"}"#,
                    #"{\#(near),"radius_m":3,"sort":null}"#, #"{\#(near),"radius_m":3,"cursor":7}"#, "[]", "{}",
                    // Out of range: the rules' errors, not the span reader's silence.
                    #"{"near":{"lat":90.5,"lon":2},"radius_m":3}"#, #"{"near":{"lat":1,"lon":-180.1},"radius_m":3}"#,
                    #"{\#(near),"radius_m":0.5}"#, #"{\#(near),"radius_m":50001}"#, #"{\#(near),"radius_m":3,"limit":0}"#,
                    #"{\#(near),"radius_m":3,"limit":51}"#, #"{"near":{"lat":1e-400,"lon":2},"radius_m":3}"#] {
            #expect(NearbyQuery(spans: Data(odd.utf8)) == nil, "\(odd)")
        }
    }
}

/// A page's cursor, written byte by byte, is the text it always was: cursors handed out before
/// still read, and every cursor reads back as its key and id.
@Suite struct SearchCursorTests {
    @Test func cursorsAreWrittenAsBeforeAndReadBack() throws {
        var rng = SplitMix64(seed: 0xC5)
        var keys: [Double] = [0, -0.0, 1, 0.5, 12_345.678_9, 50_000, .leastNonzeroMagnitude, .greatestFiniteMagnitude, -3.25]
        for _ in 0..<2_000 { keys.append(Double(bitPattern: rng.next()).isFinite ? Double(bitPattern: rng.next() & 0x7FEF_FFFF_FFFF_FFFF) : 1) }
        var ids: [Int64] = [0, 1, 9, 10, -1, .max, .min]
        for _ in 0..<2_000 { ids.append(Int64(bitPattern: rng.next()) >> Int64(rng.next() % 63)) }
        for (key, id) in zip(keys, ids) where key.isFinite {
            let cursor = SearchCursor(key: key, id: id)
            #expect(cursor.encoded == OpaqueCursor.encode("s1:\(String(key.bitPattern, radix: 16)):\(id)"), "\(key) \(id)")
            let read = try SearchCursor.decode(cursor.encoded)
            #expect(read.key.bitPattern == key.bitPattern && read.id == id)
        }
    }
}
