import Bus
@testable import CatalogService
import Contracts
import Foundation
import Testing

/// `catalog.create` reads a plainly shaped body by spans and leaves any other to the decoder
/// (PlaceJSONTests compares the two readings on many bodies): through the service, a body read
/// either way gets the same answer, or the same error.
@Suite struct PlaceInputReadingTests {
    /// The reply without what differs between two creates (id and times).
    static func comparable(_ reply: [String: Any]) -> NSDictionary {
        var reply = reply
        for key in ["id", "created_at", "updated_at"] { reply[key] = nil }
        return reply as NSDictionary
    }

    @Test func theServiceAnswersACreateBothWaysAlike() throws {
        let catalog = try CatalogFixture()
        let bodies = [
            #"{"name":" Caf\u00e9 \"Z\" \ud83d\ude00 ","category":"cafe","lat":-0,"lon":1e2,"address":"1 George St\nSydney","price_level":2,"opening_hours":[{"day":1,"open":"09:00","close":"17:00"}],"photos":[{"url":"https://example.org/p.jpg","attribution":null}],"external_ids":{"osm":"node/#N#","wikidata":"Q#N#"},"popularity":12.25,"timezone":"Australia/Sydney","website":"https://example.org/a/b"}"#,
            #"{"name":"Plain","category":"park","lat":48.85,"lon":2.35}"#,
            #"{"name":"Vivid","category":"event","lat":-33.86,"lon":151.21,"seasons":[{"from":"05-23","to":"06-14"},{"to":"2027-04-20","from":"2027-04-09"}]}"#,
        ]
        for (i, plainBody) in bodies.enumerated() {
            let body = plainBody.contains(#""price_level":2"#) ? plainBody : String(plainBody.dropLast()) + #","price_level":2}"#
            #expect(PlaceInput(spans: Data(body.utf8)) != nil, "read by spans: \(body)")
            // A whole number written with a fraction is no plain integer literal: the same place goes to the checked decoder.
            let decoderBody = body.replacingOccurrences(of: #""price_level":2"#, with: #""price_level":2.0"#)
            #expect(PlaceInput(spans: Data(decoderBody.utf8)) == nil)
            // A repeated member is refused, read either way: which copy counts would be a guess.
            #expect(PlaceInput(spans: Data((String(body.dropLast()) + #","category":"museum"}"#).utf8)) == nil)
            #expect(throws: ServiceError(.invalidArgument, "is given twice", field: "category")) {
                try catalog.raw("catalog.create", String(body.dropLast()) + #","category":"museum"}"#)
            }
            // External ids may not repeat between places: each create has its own.
            let bySpans = try catalog.raw("catalog.create", body.replacingOccurrences(of: "#N#", with: "\(i)a"))
            var byDecoder = try catalog.raw("catalog.create", decoderBody.replacingOccurrences(of: "#N#", with: "\(i)b"))
            byDecoder["external_ids"] = (byDecoder["external_ids"] as? [String: String])?.mapValues { $0.replacingOccurrences(of: "\(i)b", with: "\(i)a") }
            #expect(Self.comparable(bySpans) == Self.comparable(byDecoder))
        }
        for (body, error) in [
            (#"{"name":null,"category":"cafe","lat":0,"lon":0}"#, ServiceError(.invalidArgument, "give name or name_i18n", field: "name")),
            (#"{"name":"x","category":"cafe","lat":"1","lon":0}"#, ServiceError(.invalidArgument, "expected a number", field: "lat")),
            // Too small to be told from 0: refused, named, as the params check reads it exactly.
            (#"{"name":"x","category":"cafe","lat":1e-400,"lon":0}"#, ServiceError(.invalidArgument, "number 1e-400 is out of range", field: "lat")),
            (#"{"name":"x","category":"cafe","lat":1e999,"lon":0}"#, ServiceError(.invalidArgument, "number 1e999 is out of range", field: "lat")),
            (#"{"name":"x","category":"cafe","lat":0,"lon":0,"price_level":2.5}"#, ServiceError(.invalidArgument, "expected an integer", field: "price_level")),
            // A member catalog.create does not take is refused by name, read either way.
            (#"{"name":"x","category":"cafe","lat":0,"lon":0,"pricelevel":2}"#,
             ServiceError(.invalidArgument, "unknown parameter 'pricelevel'; did you mean 'price_level'?", field: "pricelevel")),
            (#"{"name":"x","category":"cafe","lat":0,"lon":0,"opening_hours":[{"day":1,"open":"09:00","close":"17:00","closed":true}]}"#,
             ServiceError(.invalidArgument, "unknown parameter 'opening_hours[0].closed'; did you mean 'opening_hours[0].close'?", field: "opening_hours[0].closed")),
            (#"{"name":"x","category":"cafe","lat":0}"#, ServiceError(.invalidArgument, "missing required field lon", field: "lon")),
            (#"{"name":"x","category":"spaceship","lat":0,"lon":0}"#, nil),
        ] {
            if let error {
                #expect(throws: error) { try catalog.raw("catalog.create", body) }
            } else {
                #expect(throws: ServiceError.self) { try catalog.raw("catalog.create", body) }
            }
        }
    }
}

/// A name's surrounding white space and invisible characters are trimmed as
/// `TextRule.trimmingInvisible` trims them, also where the fast path answers without it; and
/// that trims white space as Foundation's `.whitespacesAndNewlines` does.
@Suite struct NameTrimmingTests {
    @Test func trimmingIsFoundationsWhateverTheEdges() {
        let edges: [String] = (0..<0x80).compactMap { Unicode.Scalar($0).map { String(Character($0)) } }
            + ["\u{85}", "\u{A0}", "\u{2028}", "\u{2029}", "\u{3000}", "\u{200B}", "\u{FEFF}", "é", "e\u{301}", "😀", ""]
        for first in edges {
            for last in edges {
                for text in [first + "Harbour" + last, first + last, first] {
                    #expect(PlaceRules.trimmed(text) == TextRule.trimmingInvisible(text), "\(text.unicodeScalars.map(\.value))")
                    if !text.unicodeScalars.contains(where: TextRule.isInvisible) {
                        #expect(TextRule.trimmingInvisible(text) == text.trimmingCharacters(in: .whitespacesAndNewlines), "\(text.unicodeScalars.map(\.value))")
                    }
                }
            }
        }
    }
}
