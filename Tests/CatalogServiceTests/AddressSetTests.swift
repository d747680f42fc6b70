import Bus
import Contracts
import Foundation
import Storage
import Testing

@testable import CatalogService

/// OSM imports keep their addresses as a set, publish them as events in batches, replace the
/// sets of the same area, and page them in the snapshot after the tours.
@Suite struct AddressSetTests {
    /// `count` houses along a street near (lat, lon), as OSM XML.
    static func extract(lat: Double, lon: Double, count: Int, street: String = "Bulevardi", firstId: Int = 1) -> String {
        var xml = "<osm version=\"0.6\">"
        for i in 0..<count {
            xml += "<node id=\"\(i + firstId)\" lat=\"\(lat + Double(i) * 1e-5)\" lon=\"\(lon)\"><tag k=\"addr:street\" v=\"\(street)\"/>"
            xml += "<tag k=\"addr:housenumber\" v=\"\(i + 1)\"/><tag k=\"addr:postcode\" v=\"00120\"/><tag k=\"addr:city\" v=\"Helsinki\"/></node>"
        }
        return xml + "</osm>"
    }

    /// The events after `head`, each as its type and body.
    func events(_ catalog: CatalogFixture, after head: Int) throws -> [(type: String, body: [String: Any])] {
        let replay = try catalog.client.request(type: "sys.replay", body: Data(#"{"after":\#(head),"limit":1000}"#.utf8))
        return try replay.attachments.map { data in
            let envelope = try #require(try JSONSerialization.jsonObject(with: data) as? [String: Any])
            return (envelope["type"] as? String ?? "", envelope["body"] as? [String: Any] ?? [:])
        }
    }

    @Test func anImportsAddressesGoOutInBatchesAndTheSameAreaAgainReplacesThem() throws {
        let catalog = try CatalogFixture()
        let start = try ImportSliceTests.head(catalog)
        // 1,200 houses and their postcode: three batches, each of one set.
        #expect(try ImportTests.run(catalog, Self.extract(lat: 60.16, lon: 24.93, count: 1_200), format: "osm").state == "done")
        let first = try events(catalog, after: start).filter { $0.type == AddressEvents.upserted }
        #expect(first.map { ($0.body["addresses"] as? [Any])?.count ?? 0 } == [500, 500, 201])
        #expect(first.allSatisfy { $0.body["total"] as? Int == 1_201 })
        let setId = try #require(first.first?.body["set_id"] as? Int)
        #expect(first.allSatisfy { $0.body["set_id"] as? Int == setId })
        // Its postcode first (areas, streets and postcodes come before houses), then the houses.
        let batch = try #require(first.first?.body["addresses"] as? [[String: Any]])
        #expect(batch.first?["kind"] as? String == "postcode")
        let house = try #require(batch.first { $0["kind"] as? String == "house" })
        #expect(house["kind"] as? String == "house" && house["street"] as? String == "Bulevardi" && house["housenumber"] as? String == "1")
        #expect(house["postcode"] as? String == "00120" && house["city"] as? String == "Helsinki" && house["osm"] as? String == "node/1")

        // Another city's stays; the same houses again (half of them is enough) replace the first
        // set: removed, then the new one.
        #expect(try ImportTests.run(catalog, Self.extract(lat: 61.5, lon: 23.76, count: 2, firstId: 5_000), format: "osm").state == "done")
        let head = try ImportSliceTests.head(catalog)
        #expect(try ImportTests.run(catalog, Self.extract(lat: 60.16, lon: 24.93, count: 600, street: "Bulevarden"), format: "osm").state == "done")
        let again = try events(catalog, after: head).filter { $0.type.hasPrefix("catalog.addresses.") }
        #expect(again.map { $0.type } == [AddressEvents.removed] + Array(repeating: AddressEvents.upserted, count: 2))
        #expect(again.last?.body["total"] as? Int == 601)
        #expect(again.first?.body["set_id"] as? Int == setId)
        #expect((again.dropFirst().first?.body["addresses"] as? [[String: Any]])?.compactMap { $0["street"] as? String }.first == "Bulevarden")
        let db = try Database(path: catalog.config.resolvedDatabasePath)
        #expect(try db.scalarInt("SELECT count(*) FROM addresses WHERE set_id = ?", setId) == 0)
        #expect(try db.scalarInt("SELECT count(*) FROM address_sets") == 2)

        // Two houses far apart, whose box spans the world, replace nothing: they are not the
        // elements of any set.
        let world = #"<osm version="0.6"><node id="9001" lat="-89.9" lon="-179.9"><tag k="addr:street" v="A"/><tag k="addr:housenumber" v="1"/></node><node id="9002" lat="89.9" lon="179.9"><tag k="addr:street" v="B"/><tag k="addr:housenumber" v="2"/></node></osm>"#
        let beforeWorld = try ImportSliceTests.head(catalog)
        #expect(try ImportTests.run(catalog, world, format: "osm").state == "done")
        #expect(try events(catalog, after: beforeWorld).filter { $0.type == AddressEvents.removed }.isEmpty)
        #expect(try db.scalarInt("SELECT count(*) FROM address_sets") == 3)

        // A dry run keeps none.
        let before = try ImportSliceTests.head(catalog)
        #expect(try ImportTests.run(catalog, Self.extract(lat: 62, lon: 25, count: 2), format: "osm", dryRun: true).state == "done")
        #expect(try events(catalog, after: before).isEmpty)
    }

    @Test func theSnapshotPagesTheAddressesAfterTheToursInBoundedPages() throws {
        let catalog = try CatalogFixture()
        _ = try catalog.create("Café")
        #expect(try ImportTests.run(catalog, Self.extract(lat: 60.16, lon: 24.93, count: 2_100), format: "osm").state == "done")
        var types: [String] = []
        var addresses: [Int] = []
        var after: String?
        for _ in 0..<50 {
            // A large limit: address pages stay at `AddressSets.snapshotEvents` events all the same.
            let body = try JSONCoding.encoder.encode(SnapshotRequest(after: after, limit: 1_000))
            let reply = try catalog.client.request(type: "sys.snapshot", body: body)
            #expect(reply.attachments.count <= 1_000)
            for data in reply.attachments {
                let envelope = try #require(try JSONSerialization.jsonObject(with: data) as? [String: Any])
                types.append(envelope["type"] as? String ?? "")
                addresses += ((envelope["body"] as? [String: Any])?["addresses"] as? [[String: Any]])?.compactMap { $0["id"] as? Int } ?? []
            }
            if types.last == AddressEvents.upserted { #expect(reply.attachments.count <= AddressSets.snapshotEvents) }
            after = try JSONCoding.decodeBody(SnapshotReply.self, fromEnvelope: reply.envelope).next
            if after == nil { break }
        }
        #expect(after == nil)
        // The place, then every address (2,100 houses and their postcode) once, in order.
        #expect(types.first == CatalogEvents.upserted && types.dropFirst().allSatisfy { $0 == AddressEvents.upserted })
        #expect(addresses.count == 2_101 && addresses == addresses.sorted() && Set(addresses).count == addresses.count)
    }
}
