import Bus
import Contracts
import Foundation
@testable import SearchService
import Testing
import TestSupport

@Suite struct PlaceEventReadingTests {
    /// Catch-up reads place bodies by spans; whatever it reads must be what `JSONDecoder` reads.
    @Test func spansReadWhatTheDecoderReads() throws {
        var rng = SplitMix64(seed: 3)
        let names = ["Café \"Ζ\" \\ 東京", "Opera\nBar", "Plain", "😀 emoji", "tab\there"]
        for i in 0..<300 {
            var object: [String: Any] = [
                "id": i + 1, "name": names[i % names.count], "category": "cafe",
                "lat": Double.random(in: -90...90, using: &rng), "lon": Double.random(in: -180...180, using: &rng),
                "photos": [["url": "https://example.org/\(i).jpg"]], "version": 3, "external_ids": ["osm": "n\(i)"],
            ]
            if i % 2 == 0 { object["address"] = "\(i) George St, Sydney" } else if i % 3 == 0 { object["address"] = NSNull() }
            if i % 4 == 0 { object["price_level"] = i % 5 }
            if i % 5 != 0 { object["popularity"] = Double(i) / 7 }
            if i % 3 == 0 { object["opening_hours"] = [["day": 1, "open": "09:00", "close": "17:00"], ["day": 7, "open": "22:00", "close": "02:00"]] }
            if i % 7 == 0 { object["description"] = "Line one\u{2028}line \"two\"" }
            if i % 11 == 0 { object["timezone"] = "Australia/Sydney" }
            if i % 4 == 1 { object["name_i18n"] = ["en": names[i % names.count], "ru": "Кафе \(i)"] } else if i % 13 == 0 { object["name_i18n"] = NSNull() }
            if i % 6 == 1 { object["description_i18n"] = ["fr": "Près du port"] }
            let json = try JSONSerialization.data(withJSONObject: object, options: i % 2 == 0 ? [.sortedKeys] : [.prettyPrinted])
            let decoded = try JSONDecoder().decode(IndexedPlace.self, from: json)
            #expect(IndexedPlace(spans: json) == decoded, "\(String(decoding: json, as: UTF8.self))")
        }
        // What the spans cannot read plainly is left to the decoder.
        for odd in [#"{"id":1.5,"name":"x","category":"c","lat":0,"lon":0}"#, #"{"id":1,"name":"x","category":"c","lat":1e999,"lon":0}"#,
                    #"{"id":1,"name":"x","category":"c","lat":0}"#, #"{"id":1,"name":7,"category":"c","lat":0,"lon":0}"#,
                    #"{"id":1,"name":"x","name":"y","category":"c","lat":0,"lon":0}"#, #"{"id":+1,"name":"x","category":"c","lat":0,"lon":0}"#,
                    #"{"id":01,"name":"x","category":"c","lat":0,"lon":0}"#, #"{"id":1,"name":"x","category":"c","lat":.5,"lon":0}"#,
                    #"{"id":1,"name":"x","category":"c","lat":1.,"lon":0}"#,
                    #"{"id":1,"name":"x","category":"c","lat":0,"lon":0,"name_i18n":{"en":1}}"#,
                    #"{"id":1,"name":"x","category":"c","lat":0,"lon":0,"name_i18n":{"en":"a","en":"b"}}"#] {
            #expect(IndexedPlace(spans: Data(odd.utf8)) == nil, "\(odd)")
        }
    }

    /// The fast path reads what the catalog's contract says: `JSONDecoder` of the Contracts
    /// `PlaceSummary`, on whole `Place` bodies and on odd ones.
    @Test func spansReadWhatTheContractTypeDecodes() throws {
        let place = Place(id: 9, name: "Caf\u{E9} \"Q\" \\ / 東京", category: "cafe", lat: -33.8568, lon: 151.2153, address: "Line\none",
                          priceLevel: 2, description: "tab\there \u{2028}", openingHours: [OpeningPeriod(day: 7, open: "22:00", close: "02:00")],
                          photos: [Photo(url: "https://example.org/p.jpg", attribution: nil)], popularity: 12.25, externalIds: ["osm": "node/1"],
                          createdAt: "2026-01-01T00:00:00.000Z", updatedAt: "2026-01-01T00:00:00.000Z", version: 3, timezone: "Australia/Sydney",
                          nameI18n: ["en": "Cafe", "ja": "東京のカフェ"], descriptionI18n: ["de": "Am Hafen"],
                          seasons: [Season(from: "12-28", to: "01-02"), Season(from: "2027-04-09", to: "2027-04-20")])
        let bodies = [
            String(decoding: try JSONCoding.encoder.encode(place), as: UTF8.self),
            String(decoding: try JSONCoding.encoder.encode(Place(id: 1, name: "Bare", category: "park", lat: 0, lon: 0, createdAt: "t", updatedAt: "t")), as: UTF8.self),
            // Seasons with members in another order and one unknown; null seasons.
            #"{"id":5,"name":"x","category":"event","lat":0,"lon":0,"seasons":[{"to":"01-02","note":1,"from":"12-28"}]}"#,
            #"{"id":6,"name":"x","category":"event","lat":0,"lon":0,"seasons":null}"#,
            // Only what a summary needs; optional members missing.
            #"{"id":1,"name":"x","category":"c","lat":0,"lon":-0.5}"#,
            // Nulls where a place may have none.
            #"{"id":2,"name":"x","category":"c","lat":1e-7,"lon":180,"address":null,"price_level":null,"popularity":null,"opening_hours":null,"description":null,"timezone":null}"#,
            // Escapes of every kind, members in another order, unknown members of any shape.
            #"{"lon":2.5E+1,"lat":-9.75,"name":"\"\\\/\b\f\n\r\t\u00e9\ud83d\ude00","category":"caf\u00E9","id":3,"extra":{"a":[1,{"b":null}]},"photos":[],"opening_hours":[{"close":"17:00","open":"09:00","day":1,"note":"x"}]}"#,
            " { \"id\" : 4 , \"name\" : \"\" , \"category\" : \"c\" , \"lat\" : 0 , \"lon\" : 0 , \"opening_hours\" : [ ] } ",
        ]
        for (i, body) in bodies.enumerated() {
            let json = Data(body.utf8)
            let decoded = try JSONCoding.decoder.decode(PlaceSummary.self, from: json)
            // White space between tokens may be left to the decoder; the rest is read by spans.
            guard let fast = IndexedPlace(spans: json) else {
                #expect(i == bodies.count - 1, "not read by spans: \(body)")
                continue
            }
            #expect(fast == decoded, "\(body)")
        }
        #expect(try JSONCoding.decoder.decode(PlaceSummary.self, from: Data(bodies[0].utf8)) == PlaceSummary(place))
    }

    @Test func jsonNumbersAsTheGrammarHasThem() {
        for good in ["0", "-0", "7", "-33.8568", "1e3", "1E-7", "2.5e+10", "151.2153"] { #expect(JSONNumber.isValid(Array(good.utf8)), "\(good)") }
        for bad in ["", "-", "+1", "01", ".5", "1.", "1e", "1e+", "0x10", "1.2.3", "NaN", "--1"] { #expect(!JSONNumber.isValid(Array(bad.utf8)), "\(bad)") }
    }
}
