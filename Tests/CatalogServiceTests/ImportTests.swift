import Bus
@testable import CatalogService
import Contracts
import Foundation
import Geo
import Testing
import TestSupport
import TourMaps
import Uploads

/// Imports into the catalog alone, over its real sockets: what a file adds, what a second run
/// changes (nothing), what is kept, and that a bad file changes nothing.
@Suite struct ImportTests {
    /// Sends `document` (and `files` beside it) in chunks, commits, and waits (bounded: 20 s) for the report.
    static func run(_ catalog: CatalogFixture, _ document: String, format: String = "content", dryRun: Bool = false,
                    files: [String: Data] = [:], chunk: Int = 64 * 1024) throws -> (state: String, report: [String: Any]) {
        let begun = try catalog.raw("catalog.import.begin", #"{"format":"\#(format)","dry_run":\#(dryRun)}"#)
        let id = try #require(begun["import_id"] as? String)
        for (file, bytes) in [("", Data(document.utf8))] + files.sorted(by: { $0.key < $1.key }) {
            var offset = 0
            while offset < bytes.count {
                let piece = bytes[offset..<min(bytes.count, offset + chunk)]
                let name = file.isEmpty ? "" : #","file":"\#(file)""#
                try catalog.raw("catalog.import.append", #"{"import_id":"\#(id)"\#(name),"offset":\#(offset),"chunk":"\#(Data(piece).base64EncodedString())"}"#)
                offset += piece.count
            }
        }
        try catalog.raw("catalog.import.commit", #"{"import_id":"\#(id)"}"#)
        for _ in 0..<400 {
            let status = try catalog.raw("catalog.import.status", #"{"import_id":"\#(id)"}"#)
            if let state = status["state"] as? String, state == "done" || state == "failed" {
                return (state, status["report"] as? [String: Any] ?? [:])
            }
            usleep(50_000)
        }
        Issue.record("import \(id) did not finish in 20 s")
        return ("", [:])
    }

    static func counts(_ report: [String: Any], _ kind: String) -> [Int] {
        let counts = report[kind] as? [String: Int] ?? [:]
        return [counts["created"] ?? -1, counts["updated"] ?? -1, counts["unchanged"] ?? -1]
    }

    private func head(_ catalog: CatalogFixture) throws -> Int {
        ((try catalog.raw("sys.stats", "{}")["outbox"] as? [String: Any])?["head"] as? Int) ?? -1
    }

    static let walks = """
        <?xml version="1.0" encoding="UTF-8"?>
        <content xmlns="urn:tourbus:content:1" source="guide-co">
          <poi id="opera" category="attraction" lat="-33.8568" lon="151.2153">
            <name lang="en">Sydney Opera House</name><name lang="ru">Сиднейский оперный театр</name>
            <description lang="en">Sails on the harbour.</description>
            <website>https://www.sydneyoperahouse.com/</website><price>3</price>
          </poi>
          <poi id="bridge" category="attraction" lat="-33.8523" lon="151.2108"><name lang="en">Harbour Bridge</name></poi>
          <poi id="garden" category="park" lat="-33.8642" lon="151.2166"><name lang="en">Royal Botanic Garden</name></poi>
          <tour id="harbour"><name lang="en">Harbour walk</name><stop ref="opera"/><stop ref="bridge"/></tour>
          <tour id="green"><name lang="en">Green walk</name><stop ref="garden"/><stop ref="opera"/></tour>
        </content>
        """

    @Test func aSecondRunChangesNothingAndASharedPoiIsStoredOnce() throws {
        let catalog = try CatalogFixture()
        let first = try Self.run(catalog, Self.walks)
        #expect(first.state == "done", "\(first.report)")
        #expect(Self.counts(first.report, "places") == [3, 0, 0] && Self.counts(first.report, "tours") == [2, 0, 0])
        let places = try catalog.allPlaces()
        #expect(places.count == 3)
        // The Opera House is one place, a stop of both tours.
        let opera = try #require(places.first { $0.externalIds["guide-co"] == "opera" })
        #expect(opera.name == "Sydney Opera House" && opera.nameI18n?["ru"] == "Сиднейский оперный театр" && opera.priceLevel == 3)
        let tours = try #require(try catalog.raw("tours.list", "{}")["tours"] as? [[String: Any]])
        #expect(tours.filter { ($0["stops"] as? [Int])?.contains(Int(opera.id)) == true }.count == 2)

        let before = try head(catalog)
        let second = try Self.run(catalog, Self.walks)
        #expect(second.state == "done" && Self.counts(second.report, "places") == [0, 0, 3] && Self.counts(second.report, "tours") == [0, 0, 2])
        #expect(try head(catalog) == before)
        #expect(try catalog.allPlaces().map(\.version) == [1, 1, 1])
    }

    @Test func aChangedPoiIsUpdatedInPlaceKeepingWhatTheFormatDoesNotCarry() throws {
        let catalog = try CatalogFixture()
        #expect(try Self.run(catalog, Self.walks).state == "done")
        let opera = try #require(try catalog.allPlaces().first { $0.externalIds["guide-co"] == "opera" })
        // An admin's popularity and opening hours, which the format does not carry.
        try catalog.raw("catalog.update", #"{"id":\#(opera.id),"popularity":42,"opening_hours":[{"day":1,"open":"09:00","close":"17:00"}]}"#)
        let changed = Self.walks.replacingOccurrences(of: "<price>3</price>", with: "<price>4</price>")
            .replacingOccurrences(of: #"<tour id="green">"#, with: #"<tour id="green2">"#)
        let run = try Self.run(catalog, changed)
        #expect(run.state == "done" && Self.counts(run.report, "places") == [0, 1, 2] && Self.counts(run.report, "tours") == [1, 0, 1], "\(run.report)")
        let after = try catalog.client.call("catalog.get", PlaceID(id: opera.id), as: Place.self)
        #expect(after.priceLevel == 4 && after.popularity == 42 && after.openingHours.count == 1 && after.version == 3)
        // Absent from the file: the tour "green" stays.
        #expect((try catalog.raw("tours.list", "{}")["tours"] as? [Any])?.count == 3)
        #expect(try catalog.allPlaces().count == 3)
    }

    @Test func aBadFileChangesNothingAndReportsEveryErrorWithItsLine() throws {
        let catalog = try CatalogFixture()
        let bad = Self.walks
            .replacingOccurrences(of: #"category="park""#, with: #"category="spaceship""#)
            .replacingOccurrences(of: #"<stop ref="bridge"/>"#, with: #"<stop ref="nowhere"/>"#)
        let before = try head(catalog)
        let run = try Self.run(catalog, bad)
        #expect(run.state == "failed")
        let errors = try #require(run.report["errors"] as? [[String: Any]])
        #expect(errors.count == 2, "\(errors)")
        #expect(errors.contains { ($0["message"] as? String)?.contains("unknown category 'spaceship'") == true && $0["line"] as? Int == 9 })
        #expect(errors.contains { ($0["message"] as? String)?.contains("'nowhere'") == true && $0["line"] as? Int == 10 && $0["column"] != nil })
        #expect(try catalog.allPlaces().isEmpty && (try head(catalog)) == before)

        // Hostile XML is refused, not expanded.
        let laughs = """
            <?xml version="1.0"?>
            <!DOCTYPE lolz [<!ENTITY lol "lol"><!ENTITY lol2 "&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;">]>
            <content xmlns="urn:tourbus:content:1" source="x">&lol2;</content>
            """
        let refused = try Self.run(catalog, laughs)
        #expect(refused.state == "failed" && (refused.report["errors"] as? [[String: Any]])?.first?["line"] as? Int == 2, "\(refused.report)")
        #expect(try catalog.allPlaces().isEmpty)
    }

    /// A POI's seasons come with it, in the catalog's default zone; an impossible day is
    /// reported with its line and the field; a file without them clears a place's.
    @Test func seasonsAreImportedAndChecked() throws {
        var options = CatalogOptions()
        options.defaultTimezone = "Australia/Sydney"
        let catalog = try CatalogFixture(options: options)
        let events = """
            <content xmlns="urn:tourbus:content:1" source="events">
              <poi id="vivid" category="event" lat="-33.8599" lon="151.2090"><name lang="en">Vivid Sydney</name>
                <season from="05-23" to="06-14"/><season from="2028-04-07" to="2028-04-18"/>
              </poi>
            </content>
            """
        let run = try Self.run(catalog, events)
        #expect(run.state == "done" && Self.counts(run.report, "places") == [1, 0, 0], "\(run.report)")
        let vivid = try #require(try catalog.allPlaces().first)
        #expect(vivid.seasons == [Season(from: "05-23", to: "06-14"), Season(from: "2028-04-07", to: "2028-04-18")] && vivid.timezone == "Australia/Sydney")
        #expect(try Self.run(catalog, events).report["places"] as? [String: Int] == ["created": 0, "updated": 0, "unchanged": 1])

        let impossible = try Self.run(catalog, events.replacingOccurrences(of: #"to="06-14""#, with: #"to="06-31""#))
        let errors = try #require(impossible.report["errors"] as? [[String: Any]])
        #expect(impossible.state == "failed" && errors.count == 1 && errors.first?["line"] as? Int == 2, "\(errors)")
        #expect((errors.first?["message"] as? String)?.contains("seasons[0].to: must be a day of the year MM-DD") == true, "\(errors)")
        let missing = try Self.run(catalog, events.replacingOccurrences(of: #"<season from="05-23" to="06-14"/>"#, with: #"<season from="05-23"/>"#))
        #expect(missing.state == "failed", "\(missing.report)")
        let tooMany = try Self.run(catalog, events.replacingOccurrences(of: #"<season from="05-23" to="06-14"/>"#,
                                                                        with: String(repeating: #"<season from="05-23" to="06-14"/>"#, count: 21)))
        #expect(tooMany.state == "failed" && (tooMany.report["errors"] as? [[String: Any]])?.count == 1, "\(tooMany.report)")

        // The file's seasons replace the place's: none in the file, none kept.
        let plain = try Self.run(catalog, events.replacingOccurrences(of: #"<season from="05-23" to="06-14"/><season from="2028-04-07" to="2028-04-18"/>"#, with: ""))
        #expect(plain.state == "done" && Self.counts(plain.report, "places") == [0, 1, 0], "\(plain.report)")
        #expect(try catalog.allPlaces().first?.seasons == nil)
    }

    /// A tour naming a new POI twice is refused while reading, with its line, in a dry run too
    /// (it once passed the reading and failed the transaction on a UNIQUE constraint).
    @Test func aNewPoiTwiceInOneTourIsAnErrorWithItsLine() throws {
        let catalog = try CatalogFixture()
        let twice = Self.walks.replacingOccurrences(of: #"<stop ref="opera"/><stop ref="bridge"/>"#,
                                                     with: #"<stop ref="opera"/><stop ref="bridge"/><stop ref="opera"/>"#)
        for dryRun in [true, false] {
            let run = try Self.run(catalog, twice, dryRun: dryRun)
            let errors = run.report["errors"] as? [[String: Any]] ?? []
            #expect(run.state == "failed" && errors.count == 1 && errors.first?["line"] as? Int == 10, "\(run.report)")
            #expect((errors.first?["message"] as? String)?.contains("already a stop") == true, "\(errors)")
        }
        #expect(try catalog.allPlaces().isEmpty)
    }

    @Test func aStopMayNameAnEarlierImportsPoiAndADryRunWritesNothing() throws {
        let catalog = try CatalogFixture()
        #expect(try Self.run(catalog, Self.walks).state == "done")
        let later = """
            <content xmlns="urn:tourbus:content:1" source="guide-co">
              <tour id="bridge-only"><name lang="en">Bridge only</name><stop ref="bridge"/></tour>
            </content>
            """
        let before = try head(catalog)
        let dry = try Self.run(catalog, later, dryRun: true)
        #expect(dry.state == "done" && Self.counts(dry.report, "tours") == [1, 0, 0])
        #expect(try head(catalog) == before)
        #expect(try Self.run(catalog, later).state == "done")
        let bridge = try #require(try catalog.allPlaces().first { $0.externalIds["guide-co"] == "bridge" })
        let tours = try #require(try catalog.raw("tours.list", "{}")["tours"] as? [[String: Any]])
        #expect(tours.last?["stops"] as? [Int] == [Int(bridge.id)])
        // Another source's ids are not this one's.
        let other = later.replacingOccurrences(of: #"source="guide-co""#, with: #"source="rival""#)
        #expect(try Self.run(catalog, other).state == "failed")
    }

    @Test func aTourMapTravelsWithTheFileAndIsCutIntoTiles() throws {
        let catalog = try CatalogFixture()
        let stops = [Coordinate(uncheckedLatitude: -33.8568, longitude: 151.2153), Coordinate(uncheckedLatitude: -33.8523, longitude: 151.2108)]
        let map = try MapCanvas.draw(stops: stops, width: 600, height: 400)
        let points = map.controlPoints.map { #"<point x="\#($0.x)" y="\#($0.y)" lat="\#($0.coordinate.latitude)" lon="\#($0.coordinate.longitude)"/>"# }.joined()
        let document = Self.walks.replacingOccurrences(of: #"<stop ref="bridge"/></tour>"#,
                                                         with: #"<stop ref="bridge"/><map file="harbour.jpg">\#(points)</map></tour>"#)
        let run = try Self.run(catalog, document, files: ["harbour.jpg": map.jpeg], chunk: 20_000)
        #expect(run.state == "done" && Self.counts(run.report, "maps") == [1, 0, 0], "\(run.report)")
        let tour = try #require((try catalog.raw("tours.list", "{}")["tours"] as? [[String: Any]])?.first?["id"] as? Int)
        var ready = false
        for _ in 0..<200 where !ready {
            ready = try catalog.raw("tours.map.get", #"{"tour_id":\#(tour)}"#)["tiles_ready"] as? Bool == true
            if !ready { usleep(50_000) }
        }
        #expect(ready)
        // Again: the same image and points are unchanged.
        let again = try Self.run(catalog, document, files: ["harbour.jpg": map.jpeg])
        #expect(Self.counts(again.report, "maps") == [0, 0, 1] && Self.counts(again.report, "tours") == [0, 0, 2], "\(again.report)")
        // A map file that is not in the import is an error.
        let missing = try Self.run(catalog, document)
        #expect(missing.state == "failed" && ((missing.report["errors"] as? [[String: Any]])?.first?["message"] as? String)?.contains("harbour.jpg") == true)
    }

    @Test func anOpenStreetMapExtractBecomesPlacesWithHoursAndASecondRunChangesNothing() throws {
        let catalog = try CatalogFixture()
        let osm = """
            <?xml version="1.0" encoding="UTF-8"?>
            <osm version="0.6">
              <node id="1" lat="60.1699" lon="24.9384"><tag k="name" v="Café Aalto"/><tag k="name:fi" v="Kahvila Aalto"/>
                <tag k="amenity" v="cafe"/><tag k="opening_hours" v="Mo-Fr 09:00-17:00; Sa 10:00-14:00"/><tag k="website" v="cafeaalto.fi"/></node>
              <node id="2" lat="60.1700" lon="24.9400"><tag k="name" v="Ateneum"/><tag k="tourism" v="museum"/><tag k="opening_hours" v="Tu-Su 10:00-18:00; PH off"/></node>
              <node id="3" lat="60.1710" lon="24.9410"><tag k="amenity" v="cafe"/></node>
              <node id="4" lat="60.1720" lon="24.9420"/><node id="5" lat="60.1730" lon="24.9420"/><node id="6" lat="60.1730" lon="24.9440"/>
              <way id="9"><nd ref="4"/><nd ref="5"/><nd ref="6"/><nd ref="4"/><tag k="name" v="Esplanadi"/><tag k="leisure" v="park"/></way>
            </osm>
            """
        let run = try Self.run(catalog, osm, format: "osm")
        #expect(run.state == "done" && Self.counts(run.report, "places") == [3, 0, 0] && run.report["dropped_fields"] as? Int == 1, "\(run.report)")
        let places = try catalog.allPlaces()
        let cafe = try #require(places.first { $0.externalIds["osm"] == "node/1" })
        #expect(cafe.category == "cafe" && cafe.nameI18n?["fi"] == "Kahvila Aalto" && cafe.website == nil)
        #expect(cafe.openingHours.count == 6 && cafe.openingHoursText == nil)
        let museum = try #require(places.first { $0.externalIds["osm"] == "node/2" })
        #expect(museum.openingHours.isEmpty && museum.openingHoursText == "Tu-Su 10:00-18:00; PH off")
        let park = try #require(places.first { $0.externalIds["osm"] == "way/9" })
        #expect(abs(park.lat - 60.17266666) < 1e-6 && abs(park.lon - 24.94266666) < 1e-6)
        let again = try Self.run(catalog, osm, format: "osm")
        #expect(Self.counts(again.report, "places") == [0, 0, 3])
        // A newer extract: one place renamed, one gone (it stays), one new.
        let newer = osm.replacingOccurrences(of: #"v="Ateneum""#, with: #"v="Ateneumin taidemuseo""#)
            .replacingOccurrences(of: #"<tag k="name" v="Café Aalto"/>"#, with: "")
            .replacingOccurrences(of: #"<tag k="amenity" v="cafe"/></node>"#, with: #"<tag k="amenity" v="cafe"/><tag k="name" v="Uusi"/></node>"#)
        let update = try Self.run(catalog, newer, format: "osm")
        #expect(Self.counts(update.report, "places") == [1, 1, 1], "\(update.report)")
        let after = try catalog.allPlaces()
        #expect(after.count == 4 && after.first { $0.externalIds["osm"] == "node/2" }?.name == "Ateneumin taidemuseo")
        #expect(after.first { $0.externalIds["osm"] == "node/1" }?.name == "Café Aalto")
    }

    /// An OSM element given twice would claim one id twice: the dry run fails as the real run
    /// does, with the same error, and nothing is written.
    @Test func anOSMIdGivenTwiceFailsTheDryRunAsTheRealRun() throws {
        let catalog = try CatalogFixture()
        let osm = """
            <osm version="0.6">
              <node id="7" lat="60.1699" lon="24.9384"><tag k="name" v="Café"/><tag k="amenity" v="cafe"/></node>
              <node id="8" lat="60.1700" lon="24.9400"><tag k="name" v="Ateneum"/><tag k="tourism" v="museum"/></node>
              <node id="7" lat="60.1701" lon="24.9385"><tag k="name" v="Café again"/><tag k="amenity" v="cafe"/></node>
            </osm>
            """
        var reports: [String] = []
        for dryRun in [true, false] {
            let run = try Self.run(catalog, osm, format: "osm", dryRun: dryRun)
            let errors = run.report["errors"] as? [[String: Any]] ?? []
            #expect(run.state == "failed" && errors.count == 1, "\(run.report)")
            reports.append(errors.first?["message"] as? String ?? "")
        }
        #expect(reports == ["OSM element node/7 is given twice", "OSM element node/7 is given twice"])
        #expect(try catalog.allPlaces().isEmpty)
    }

    @Test func importsAreBoundedFromTheSendersSide() throws {
        let catalog = try CatalogFixture()
        let begun = try catalog.raw("catalog.import.begin", "{}")
        let id = try #require(begun["import_id"] as? String)
        func refusal(_ json: String) -> ServiceError? {
            do {
                try catalog.raw("catalog.import.append", json)
                return nil
            } catch {
                return error
            }
        }
        #expect(refusal(#"{"import_id":"\#(id)","chunk":"\#(Data(count: Chunks.maxBytes + 1).base64EncodedString())"}"#)?.field == "chunk")
        #expect(refusal(#"{"import_id":"\#(id)","file":"../etc/passwd","chunk":"AAAA"}"#)?.field == "file")
        #expect(refusal(#"{"import_id":"\#(id)","file":"a\u0000b","chunk":"AAAA"}"#)?.field == "file")
        #expect(refusal(#"{"import_id":"\#(id)","offset":5,"chunk":"AAAA"}"#)?.code == .conflict)
        #expect(throws: ServiceError.self) { try catalog.raw("catalog.import.commit", #"{"import_id":"\#(id)"}"#) }
        for _ in 1..<ImportRules.maxOpenImports { try catalog.raw("catalog.import.begin", "{}") }
        #expect(throws: ServiceError.self) { try catalog.raw("catalog.import.begin", "{}") }
    }
}
