import Bus
import ContentImport
import Contracts
import Foundation
import Testing

@testable import CatalogService

/// OSM imports keep their street networks for search's routes: listed, fetched in chunks that
/// add up to the import's streets, replaced by a newer import of the same area, and told as events.
@Suite struct StreetSetTests {
    /// A few streets around (lat, lon), and a café, as OSM XML.
    static func extract(lat: Double, lon: Double, name: String = "Mannerheimintie") -> String {
        """
        <osm version="0.6">
          <node id="1" lat="\(lat)" lon="\(lon)"/><node id="2" lat="\(lat + 0.001)" lon="\(lon)"/>
          <node id="3" lat="\(lat + 0.001)" lon="\(lon + 0.002)"><tag k="barrier" v="bollard"/></node>
          <node id="4" lat="\(lat + 0.0005)" lon="\(lon + 0.001)"><tag k="name" v="Café"/><tag k="amenity" v="cafe"/></node>
          <way id="10"><nd ref="1"/><nd ref="2"/><tag k="highway" v="primary"/><tag k="name" v="\(name)"/></way>
          <way id="11"><nd ref="2"/><nd ref="3"/><tag k="highway" v="footway"/></way>
        </osm>
        """
    }

    func sets(_ catalog: CatalogFixture) throws -> [StreetSetInfo] {
        try catalog.client.call(Methods.Streets.list.name, Empty(), as: StreetSetList.self).sets
    }

    /// A set's bytes, fetched chunk by chunk as search does.
    func fetch(_ catalog: CatalogFixture, _ set: StreetSetInfo) throws -> [UInt8] {
        var bytes: [UInt8] = []
        while bytes.count < set.bytes {
            let chunk = try catalog.client.call(
                Methods.Streets.chunk.name, StreetChunkRequest(setId: set.id, offset: bytes.count), as: StreetChunk.self)
            let data = try #require(Data(base64Encoded: chunk.data))
            #expect(!data.isEmpty && chunk.total == set.bytes)
            bytes += data
        }
        return bytes
    }

    @Test func anOSMImportKeepsItsStreetsAndANewerImportOfTheAreaReplacesThem() throws {
        let catalog = try CatalogFixture()
        #expect(try sets(catalog).isEmpty)
        // A dry run keeps nothing.
        let dry = try ImportTests.run(catalog, Self.extract(lat: 60.17, lon: 24.94), format: "osm", dryRun: true)
        #expect(dry.state == "done")
        #expect(try sets(catalog).isEmpty)

        let xml = Self.extract(lat: 60.17, lon: 24.94)
        #expect(try ImportTests.run(catalog, xml, format: "osm").state == "done")
        let first = try #require(try sets(catalog).first)
        #expect(first.nodes == 3 && first.ways == 2 && first.south == 60.17 && first.north == 60.171 && first.east == 24.942)
        let bytes = try fetch(catalog, first)
        #expect(StreetSetInfo.checksum(bytes) == first.checksum)
        #expect(try OSMStreets(encoded: bytes) == OSMStreets(bytes: Array(xml.utf8)))

        // Another city stays beside it; the same area again replaces the first.
        #expect(try ImportTests.run(catalog, Self.extract(lat: 61.5, lon: 23.76), format: "osm").state == "done")
        #expect(try sets(catalog).count == 2)
        let head = try ImportSliceTests.head(catalog)
        #expect(try ImportTests.run(catalog, Self.extract(lat: 60.17, lon: 24.94, name: "Mansku"), format: "osm").state == "done")
        let after = try sets(catalog)
        #expect(after.count == 2 && !after.contains { $0.id == first.id })
        let replay = try catalog.client.request(type: "sys.replay", body: Data(#"{"after":\#(head),"limit":100}"#.utf8))
        let changes = try replay.attachments.filter { try JSONDecoder().decode(EventHeader.self, from: $0).type == StreetEvents.changed }
        #expect(changes.count == 1)
        let body = try #require(changes.first.flatMap { try? JSONSerialization.jsonObject(with: $0) as? [String: Any] }?["body"] as? [String: Any])
        #expect(body["removed"] as? [Int] == [Int(first.id)] && body["set_id"] as? Int == Int(after.last?.id ?? 0))
        // An import without streets keeps none and replaces none.
        let cafe = #"<osm version="0.6"><node id="9" lat="60.1705" lon="24.941"><tag k="name" v="Kiosk"/><tag k="amenity" v="cafe"/></node></osm>"#
        #expect(try ImportTests.run(catalog, cafe, format: "osm").state == "done")
        #expect(try sets(catalog).map(\.id) == after.map(\.id))
    }

    @Test func chunksAreBoundedAndNamed() throws {
        let catalog = try CatalogFixture()
        #expect(try ImportTests.run(catalog, Self.extract(lat: 60.17, lon: 24.94), format: "osm").state == "done")
        let set = try #require(try sets(catalog).first)
        func refusal(_ request: StreetChunkRequest) -> ServiceError? {
            do {
                _ = try catalog.client.call(Methods.Streets.chunk.name, request, as: StreetChunk.self)
                return nil
            } catch {
                return error
            }
        }
        #expect(refusal(StreetChunkRequest(setId: set.id + 1, offset: 0))?.code == .notFound)
        #expect(refusal(StreetChunkRequest(setId: set.id, offset: -1))?.field == "offset")
        #expect(refusal(StreetChunkRequest(setId: set.id, offset: set.bytes + 1))?.field == "offset")
        // At the end: nothing more, and no error.
        let end = try catalog.client.call(Methods.Streets.chunk.name, StreetChunkRequest(setId: set.id, offset: set.bytes), as: StreetChunk.self)
        #expect(end.data.isEmpty && end.total == set.bytes)
    }
}
