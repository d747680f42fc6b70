import Bus
import Contracts
import Foundation
import Geo
import TestSupport
import Testing

@testable import SearchService

/// `geo.search` and `geo.reverse` over real sockets, from the address events of a fake catalog.
@Suite(.serialized) struct GeoServiceTests {
    static let houses = [
        Address(id: 1, kind: .house, osm: "node/1", housenumber: "16b", street: "Bulevardi", postcode: "00120", area: "Punavuori", city: "Helsinki", lat: 60.1648, lon: 24.9393),
        // The same address text elsewhere (another town's Bulevardi), 30 km away.
        Address(id: 2, kind: .house, osm: "node/2", housenumber: "16b", street: "Bulevardi", postcode: "02100", city: "Espoo", lat: 60.1750, lon: 24.4000),
        Address(id: 3, kind: .street, osm: "way/3", street: "Bulevardi", area: "Punavuori", city: "Helsinki", names: ["sv": "Bulevarden", "en": "Boulevard"], lat: 60.1652, lon: 24.9380),
        Address(id: 4, kind: .area, area: "Kamppi", city: "Helsinki", names: ["sv": "Kampen"], lat: 60.1681, lon: 24.9320),
        Address(id: 5, kind: .postcode, postcode: "00120", city: "Helsinki", lat: 60.1640, lon: 24.9400),
    ]

    private func emit(_ f: SearchFixture, _ type: String, _ body: some Encodable, key: String) throws {
        let json = String(decoding: try JSONCoding.encoder.encode(body), as: UTF8.self)
        _ = try f.catalogClient.call("fake.emit", FakeEmit(type: type, key: key, body: json), as: Int64.self)
    }

    private func hits(_ f: SearchFixture, _ json: String) throws -> [[String: Any]] {
        try call(f, Methods.Geo.search.name, json)["hits"] as? [[String: Any]] ?? []
    }

    /// Polls (at most 20 s) until `geo.search` of `q` finds `count` hits.
    private func waitFor(_ f: SearchFixture, _ q: String, count: Int) throws -> Bool {
        for _ in 0..<400 {
            if try hits(f, #"{"q":"\#(q)","limit":20}"#).count == count { return true }
            usleep(50_000)
        }
        return false
    }

    @Test func addressesArriveAsEventsAndAreFoundByTextAndByPoint() throws {
        let f = try SearchFixture()
        // Before any address: nothing found, and a point has no nearest address.
        #expect(try hits(f, #"{"q":"Bulevardi"}"#).isEmpty)
        #expect(refusal(f, Methods.Geo.reverse.name, #"{"lat":60.1648,"lon":24.9393}"#)?.code == .notFound)

        try emit(f, AddressEvents.upserted, AddressBatch(setId: 1, total: Self.houses.count, addresses: Self.houses), key: "a1")
        #expect(try waitFor(f, "Bulevardi", count: 3), "search never indexed the addresses")

        // Ranked by match: the street (all of what it is matched) before its houses; then by distance from near.
        let street = try hits(f, #"{"q":"Bulevardi"}"#)
        #expect(street.first?["kind"] as? String == "street" && street.first?["label"] as? String == "Bulevardi, Helsinki")
        let nearEspoo = try hits(f, #"{"q":"bulevardi 16b","near":{"lat":60.17,"lon":24.41}}"#)
        #expect(nearEspoo.map { $0["label"] as? String ?? "" } == ["Bulevardi 16b, 02100 Espoo", "Bulevardi 16b, 00120 Helsinki"])
        #expect((nearEspoo.first?["distance_m"] as? Double ?? .infinity) < 1_000)
        let nearHelsinki = try hits(f, #"{"q":"bulevardi 16b","near":{"lat":60.1648,"lon":24.9393},"limit":1}"#)
        #expect(nearHelsinki.map { $0["osm"] as? String ?? "" } == ["node/1"])
        // One typo, an unfinished last word, another language's name, a postcode, an area.
        #expect(try hits(f, #"{"q":"Bulevradi 16b Helsinki"}"#).first?["osm"] as? String == "node/1")
        #expect(try hits(f, #"{"q":"Bulevardi 16b Hel"}"#).first?["osm"] as? String == "node/1")
        #expect(try hits(f, #"{"q":"Bulevardi 16b Helsinki Espoo"}"#).isEmpty)
        let swedish = try hits(f, #"{"q":"Bulevarden 16b","lang":"sv","near":{"lat":60.1648,"lon":24.9393}}"#)
        #expect(swedish.first?["label"] as? String == "Bulevarden 16b, 00120 Helsinki", "\(swedish)")
        #expect(try hits(f, #"{"q":"00120"}"#).first?["kind"] as? String == "postcode")
        // A language the data lacks keeps the local name (not the English a chain ends with);
        // English asked, English given; Helsinki's Swedish name is not Espoo's street's.
        let german = try hits(f, #"{"q":"Bulevardi 16b","lang":"de","near":{"lat":60.1648,"lon":24.9393}}"#)
        #expect(german.first?["label"] as? String == "Bulevardi 16b, 00120 Helsinki", "\(german)")
        let english = try hits(f, #"{"q":"Bulevardi 16b","lang":"en","near":{"lat":60.1648,"lon":24.9393}}"#)
        #expect(english.first?["label"] as? String == "Boulevard 16b, 00120 Helsinki", "\(english)")
        let espoo = try hits(f, #"{"q":"Bulevardi 16b","lang":"sv","near":{"lat":60.17,"lon":24.41}}"#)
        #expect(espoo.first?["label"] as? String == "Bulevardi 16b, 02100 Espoo", "\(espoo)")
        #expect(try hits(f, #"{"q":"Kampen","lang":"sv"}"#).first?["label"] as? String == "Kampen, Helsinki")
        // Two typos are one too many.
        #expect(try hits(f, #"{"q":"Buelvardi 16b Helsnki"}"#).isEmpty)

        // The nearest house to a point, with its street, area and city, and how far it is.
        let reverse = try call(f, Methods.Geo.reverse.name, #"{"lat":60.1650,"lon":24.9390}"#)
        let address = try #require(reverse["address"] as? [String: Any])
        #expect(address["osm"] as? String == "node/1" && address["street"] as? String == "Bulevardi" && address["area"] as? String == "Punavuori")
        #expect(address["city"] as? String == "Helsinki")
        let expected = Coordinate(uncheckedLatitude: 60.1650, longitude: 24.9390).distance(to: Coordinate(uncheckedLatitude: 60.1648, longitude: 24.9393))
        #expect(abs((address["distance_m"] as? Double ?? 0) - expected) < 0.1)
        // Farther than 50 km from every address: not found, and said so.
        let far = refusal(f, Methods.Geo.reverse.name, #"{"lat":61.0,"lon":24.9}"#)
        #expect(far?.code == .notFound && far?.field == "lat" && far?.message.contains("50 km") == true)

        // A set is found once whole: its first batch of two is not indexed alone.
        var first = Self.houses[0]
        (first.id, first.street, first.osm) = (20, "Mannerheimintie", "node/20")
        var second = first
        (second.id, second.housenumber, second.osm) = (21, "17", "node/21")
        try emit(f, AddressEvents.upserted, AddressBatch(setId: 3, total: 2, addresses: [first]), key: "p1")
        usleep(500_000)
        #expect(try hits(f, #"{"q":"Mannerheimintie"}"#).isEmpty, "half a set was indexed")
        try emit(f, AddressEvents.upserted, AddressBatch(setId: 3, total: 2, addresses: [second]), key: "p2")
        #expect(try waitFor(f, "Mannerheimintie", count: 2))

        // A newer import replaced the set: its addresses are gone.
        try emit(f, AddressEvents.removed, AddressSetRemoved(setId: 1), key: "r1")
        #expect(try waitFor(f, "Bulevardi", count: 0), "the removed set is still found")
    }

    /// A rebuild from the catalog's snapshot keeps the address sets it names and drops the others.
    @Test func aRebuildKeepsTheSetsTheSnapshotHasAndDropsTheRest() throws {
        let f = try SearchFixture()
        try emit(f, AddressEvents.upserted, AddressBatch(setId: 1, total: 1, addresses: [Self.houses[0]]), key: "s1")
        #expect(try waitFor(f, "Bulevardi 16b", count: 1))
        f.stopSearch()
        try f.replaceCatalog()
        var espoo = Self.houses[1]
        espoo.id = 9
        try emit(f, AddressEvents.upserted, AddressBatch(setId: 2, total: 1, addresses: [espoo]), key: "s2")
        try f.startSearch()
        // Set 2 arrives with the rebuild; set 1, which the snapshot does not name, goes at its end.
        var found: [String] = []
        for _ in 0..<400 where found != ["node/2"] {
            found = try hits(f, #"{"q":"Bulevardi 16b","limit":5}"#).compactMap { $0["osm"] as? String }
            if found != ["node/2"] { usleep(50_000) }
        }
        #expect(found == ["node/2"], "after the rebuild: \(found)")
    }

    @Test func textWithoutALetterOrDigitAndTooManyWordsAreRefusedByName() throws {
        let f = try SearchFixture()
        for q in ["!!! ,,, ...", "   ", "—"] {
            let error = refusal(f, Methods.Geo.search.name, "{\"q\":\"\(q)\"}")
            #expect(error?.code == .invalidArgument && error?.field == "q", "\(q): \(String(describing: error))")
        }
        let long = refusal(f, Methods.Geo.search.name, #"{"q":"a b c d e f g h i j k l m"}"#)
        #expect(long?.code == .invalidArgument && long?.field == "q" && long?.message.contains("12 words") == true)
        #expect(refusal(f, Methods.Geo.search.name, #"{"q":"Bulevardi","limit":21}"#)?.field == "limit")
    }
}
