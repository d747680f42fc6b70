import Bus
import Contracts
import Foundation
import Testing
import TestSupport
@testable import SearchService

/// Tours in the search index, fed by a stand-in catalog's `catalog.tour.*` events: every hit
/// says whether it is a place or a tour, and a tour's id never collides with a place's.
@Suite(.serialized) struct TourIndexTests {
    private func tour(_ f: SearchFixture, id: Int, name: String, names: String = "{}", lat: Double?, lon: Double?) throws {
        let start = lat.map { #","lat":\#($0),"lon":\#(lon ?? 0)"# } ?? ""
        let stops = lat == nil ? "[]" : "[1]"
        let body = #"{"id":\#(id),"name":"\#(name)","name_i18n":\#(names),"description":"A walk by the water.","description_i18n":{},"stops":\#(stops)\#(start),"external_ids":{},"created_at":"x","updated_at":"x","version":1}"#
        _ = try f.catalogClient.call("fake.emit", FakeEmit(type: TourEvents.upserted, key: "t\(id)", body: body), as: Int64.self)
    }

    private func text(_ f: SearchFixture, _ json: String) throws -> SearchPage {
        try #require(f.searchClient).request(type: "search.text", body: Data(json.utf8)).body(SearchPage.self)
    }

    private func eventuallyText(_ f: SearchFixture, _ json: String, _ condition: (SearchPage) -> Bool) throws -> Bool {
        try eventually { condition(try text(f, json)) }
    }

    @Test func toursAreFoundByNameInEveryLanguageAndListedAsItineraries() throws {
        let f = try SearchFixture()
        // Place 7 and tour 7 share a number, not an entry.
        try f.place(7, name: "Harbour Kiosk", lat: -33.8570, lon: 151.2150)
        try tour(f, id: 7, name: "Harbour Walk", names: #"{"en":"Harbour Walk","ru":"Прогулка по гавани"}"#, lat: -33.8568, lon: 151.2153)
        #expect(try eventuallyText(f, #"{"q":"harbour"}"#) { $0.hits.count == 2 })
        let hits = try text(f, #"{"q":"harbour"}"#).hits
        #expect(Set(hits.map { "\($0.kind.rawValue) \($0.entityId)" }) == ["place 7", "tour 7"])
        #expect(try text(f, #"{"q":"прогулка"}"#).hits.map(\.kind) == [.tour])
        #expect(try text(f, #"{"q":"water"}"#).hits.map(\.kind) == [.tour])

        // On the wire: the tour's own id and its kind, whichever path wrote the hit.
        let nearbyWire = try #require(f.searchClient).request(type: "search.nearby", body: Data(#"{"near":{"lat":-33.8568,"lon":151.2153},"radius_m":100,"categories":["itinerary"]}"#.utf8))
        let wire = try #require(try JSONSerialization.jsonObject(with: nearbyWire.envelope) as? [String: Any])
        let wireHits = try #require((wire["body"] as? [String: Any])?["hits"] as? [[String: Any]])
        #expect(wireHits.count == 1 && wireHits[0]["id"] as? Int == 7 && wireHits[0]["kind"] as? String == "tour")
        #expect(try f.nearby(#"{"near":{"lat":-33.8568,"lon":151.2153},"radius_m":100,"exclude_categories":["itinerary"]}"#).hits.map(\.kind) == [.place])

        // Autocomplete says which it suggests.
        let suggestions = try #require(f.searchClient).call("search.autocomplete", AutocompleteQuery(prefix: "harbour w", near: nil, limit: 5), as: Suggestions.self)
        #expect(suggestions.suggestions.map(\.kind) == ["tour"] && suggestions.suggestions.first?.id == 7)

        // A tour with no stop left is not found; a deleted tour neither; the place stays.
        try tour(f, id: 7, name: "Harbour Walk", lat: nil, lon: nil)
        #expect(try eventuallyText(f, #"{"q":"harbour"}"#) { $0.hits.map(\.kind) == [.place] })
        try tour(f, id: 8, name: "Rocks Walk", lat: -33.8590, lon: 151.2090)
        #expect(try eventuallyText(f, #"{"q":"rocks"}"#) { $0.hits.count == 1 })
        _ = try f.catalogClient.call("fake.emit", FakeEmit(type: TourEvents.deleted, key: "t8", body: #"{"id":8}"#, delete: true), as: Int64.self)
        #expect(try eventuallyText(f, #"{"q":"rocks"}"#) { $0.hits.isEmpty })
        #expect(try text(f, #"{"q":"kiosk"}"#).hits.map(\.entityId) == [7])
    }

    @Test func placesAreFoundByTheirNamesAndDescriptionsInEveryLanguage() throws {
        let f = try SearchFixture()
        let body = #"{"id":3,"name":"Sydney Opera House","name_i18n":{"en":"Sydney Opera House","ru":"Сиднейский оперный театр"},"description_i18n":{"fr":"Salle de concert emblématique"},"category":"attraction","lat":-33.8568,"lon":151.2153,"opening_hours":[],"photos":[],"external_ids":{},"version":1,"created_at":"x","updated_at":"x"}"#
        _ = try f.catalogClient.call("fake.emit", FakeEmit(type: CatalogEvents.upserted, key: "00000003", body: body), as: Int64.self)
        #expect(try eventuallyText(f, #"{"q":"оперный"}"#) { $0.hits.map(\.entityId) == [3] })
        #expect(try text(f, #"{"q":"emblematique"}"#).hits.map(\.entityId) == [3])
        #expect(try text(f, #"{"q":"opera"}"#).hits.map(\.kind) == [.place])
    }

    @Test func aHitDecodesBackToTheRowItCameFrom() throws {
        let tour = SearchHit(id: -3, name: "T", category: "itinerary", address: nil, lat: 1, lon: 2, priceLevel: nil, popularity: 0,
                             rating: nil, reviewCount: nil, distanceM: nil)
        let json = try JSONCoding.encoder.encode(tour)
        #expect(String(decoding: json, as: UTF8.self).contains(#""id":3,"kind":"tour""#))
        #expect(try JSONCoding.decoder.decode(SearchHit.self, from: json) == tour)
        // The stored pieces write the same members as the encoder.
        let entry = try #require(SearchIndex.tourEntry(Tour(id: 3, name: "T", stops: [1], lat: 1, lon: 2, createdAt: "x", updatedAt: "x")))
        let pieces = try HitJSON(entry)
        #expect(pieces.tail.hasPrefix(#""id":3,"kind":"tour","lat":1"#))
    }
}
