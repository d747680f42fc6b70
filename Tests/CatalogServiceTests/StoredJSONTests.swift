import Bus
import CatalogService
import Contracts
import Foundation
import Storage
import Testing

/// A place's JSON is made once per change and kept in its row (`places.json`); `catalog.get`,
/// `catalog.create`, `catalog.update` and the `catalog.place.upserted` event carry those bytes
/// as they are. They must be exactly what `JSONCoding.encoder` makes of the `Place`.
@Suite struct StoredJSONTests {
    /// Every field set, with text that needs escaping or is not ASCII, and several entries
    /// where key order matters.
    static var everyField: PlaceInput {
        var input = PlaceInput(name: "  Café \"Zur Blauen Ente\" \\ 東京 🦆  ", category: "restaurant", lat: -33.856_812_345, lon: 151.215_3)
        input.address = "Straße 1/2\nHof\tlinks\r\n3. OG"
        input.phone = "+49 (30) 123-45.67/8"
        input.website = "https://example.org/a/b?c=d&e=%20f#g"
        input.priceLevel = 0
        input.description = "Ünïcödé, \"quotes\", back\\slash, </script>, tab\tand\nnew line; e\u{301} and 👩‍👩‍👧"
        input.openingHours = [OpeningPeriod(day: 7, open: "23:00", close: "02:30"), OpeningPeriod(day: 1, open: "00:00", close: "24:00")]
        input.photos = [Photo(url: "https://example.org/p/1.jpg", attribution: "© Ünï \"A\" / B"), Photo(url: "http://example.org/2.png")]
        input.popularity = 1e-7
        input.externalIds = ["osm": "node/1", "Wikidata": "Q1", "gn": "ü/ß", "a\"b": "c\\d"]
        input.timezone = "Europe/Berlin"
        return input
    }

    /// The reply body and what `JSONCoding.encoder` makes of the place it decodes to.
    private func bodyAndReencoded(_ reply: Reply) throws -> (body: Data, reencoded: Data) {
        let body = reply.bodyJSON
        return (body, try JSONCoding.encoder.encode(try JSONCoding.decoder.decode(Place.self, from: body)))
    }

    private func storedJSON(_ catalog: CatalogFixture, _ id: Int64) throws -> String? {
        try Database(path: catalog.config.resolvedDatabasePath).queryOne("SELECT json FROM places WHERE id = ?", id)?.value(0).textValue
    }

    private func lastEventBody(_ catalog: CatalogFixture) throws -> Data? {
        try Database(path: catalog.config.resolvedDatabasePath).queryOne("SELECT body FROM outbox ORDER BY seq DESC LIMIT 1")?
            .value(0).blobValue.map { Data($0) }
    }

    @Test func createUpdateGetAndTheEventCarryExactlyTheEncodersBytes() throws {
        let catalog = try CatalogFixture()
        for input in [Self.everyField, PlaceInput(name: "Bare", category: "park", lat: 0, lon: -0.5)] {
            let created = try bodyAndReencoded(try catalog.client.request(type: "catalog.create", body: try JSONCoding.encoder.encode(input)))
            #expect(created.body == created.reencoded)
            let place = try JSONCoding.decoder.decode(Place.self, from: created.body)
            #expect(try storedJSON(catalog, place.id) == String(decoding: created.body, as: UTF8.self))
            #expect(try lastEventBody(catalog) == created.body)
            let fetched = try catalog.client.request(type: "catalog.get", body: Data(#"{"id":\#(place.id)}"#.utf8))
            #expect(fetched.bodyJSON == created.body)
            if input.address == nil {
                // Unset optionals are left out, never written as null.
                #expect(!String(decoding: created.body, as: UTF8.self).contains("null"))
            }

            // A change replaces the stored JSON with the new place's, which the event carries too.
            let updated = try bodyAndReencoded(try catalog.client.request(
                type: "catalog.update", body: Data(#"{"id":\#(place.id),"name":"Neu \u00e9\u0301 \"x\"","photos":null,"price_level":4}"#.utf8)))
            #expect(updated.body == updated.reencoded)
            #expect(try JSONCoding.decoder.decode(Place.self, from: updated.body).version == 2)
            #expect(try storedJSON(catalog, place.id) == String(decoding: updated.body, as: UTF8.self))
            #expect(try lastEventBody(catalog) == updated.body)
            #expect(try catalog.client.request(type: "catalog.get", body: Data(#"{"id":\#(place.id)}"#.utf8)).bodyJSON == updated.body)
            // An update that changes nothing answers the place as it is.
            #expect(try catalog.client.request(type: "catalog.update", body: Data(#"{"id":\#(place.id)}"#.utf8)).bodyJSON == updated.body)
        }
    }

    @Test func aRowWrittenBeforeTheColumnGetsItsJSONOnFirstRead() throws {
        let catalog = try CatalogFixture()
        let created = try catalog.client.request(type: "catalog.create", body: try JSONCoding.encoder.encode(Self.everyField)).bodyJSON
        let id = try JSONCoding.decoder.decode(Place.self, from: created).id
        // As migration catalog/3 leaves a row it finds.
        try Database(path: catalog.config.resolvedDatabasePath).run("UPDATE places SET json = NULL WHERE id = ?", id)
        #expect(try storedJSON(catalog, id) == nil)
        #expect(try catalog.client.request(type: "catalog.get", body: Data(#"{"id":\#(id)}"#.utf8)).bodyJSON == created)
        #expect(try storedJSON(catalog, id) == String(decoding: created, as: UTF8.self))
        #expect(try catalog.client.request(type: "catalog.get", body: Data(#"{"id":\#(id)}"#.utf8)).bodyJSON == created)

        // An update of such a row that changes nothing answers (and stores) it as well.
        try Database(path: catalog.config.resolvedDatabasePath).run("UPDATE places SET json = NULL WHERE id = ?", id)
        #expect(try catalog.client.request(type: "catalog.update", body: Data(#"{"id":\#(id)}"#.utf8)).bodyJSON == created)
        #expect(try storedJSON(catalog, id) == String(decoding: created, as: UTF8.self))

        // An empty column is no JSON either: it is made again and stored.
        try Database(path: catalog.config.resolvedDatabasePath).run("UPDATE places SET json = '' WHERE id = ?", id)
        #expect(try catalog.client.request(type: "catalog.get", body: Data(#"{"id":\#(id)}"#.utf8)).bodyJSON == created)
        #expect(try storedJSON(catalog, id) == String(decoding: created, as: UTF8.self))
    }

    @Test func aNegativeZeroIsStoredAndAnsweredAsZeroEverywhere() throws {
        let catalog = try CatalogFixture()
        let body = Data(#"{"name":"Null Island","category":"park","lat":-0.0,"lon":-0.0,"popularity":-0.0}"#.utf8)
        let created = try catalog.client.request(type: "catalog.create", body: body).bodyJSON
        let place = try JSONCoding.decoder.decode(Place.self, from: created)
        let got = try catalog.client.request(type: "catalog.get", body: Data(#"{"id":\#(place.id)}"#.utf8)).bodyJSON
        let listed = try #require(try catalog.allPlaces().first { $0.id == place.id })
        let listedJSON = try JSONCoding.encoder.encode(listed)
        #expect(got == created && got == listedJSON)
        // Each number as written: `0`, not `-0` (the timestamps hold "-0" from the 1st to the 9th of a month).
        let text = String(decoding: got, as: UTF8.self)
        #expect(text.contains(#""lat":0,"#) && text.contains(#""lon":0,"#) && text.contains(#""popularity":0,"#), "\(text)")
        #expect(!text.contains(":-0"), "\(text)")
    }
}
