import Testing
@testable import ContentImport

/// Reads an OSM XML text with the standard mapping.
private func read(_ xml: String) throws -> OSMDocument {
    try OSMDocument(bytes: Array(xml.utf8), mapping: OSMMapping.standard())
}

/// `<osm>` around elements.
private func osm(_ body: String) -> String {
    "<?xml version='1.0' encoding='UTF-8'?>\n<osm version=\"0.6\" generator=\"test\">\n\(body)\n</osm>\n"
}

private func node(_ id: Int64, _ lat: Double, _ lon: Double, _ tags: [(String, String)] = []) -> String {
    let tagLines = tags.map { "<tag k=\"\($0.0)\" v=\"\($0.1)\"/>" }.joined()
    return tags.isEmpty ? "<node id=\"\(id)\" version=\"1\" lat=\"\(lat)\" lon=\"\(lon)\"/>"
        : "<node id=\"\(id)\" version=\"1\" lat=\"\(lat)\" lon=\"\(lon)\">\(tagLines)</node>"
}

private func way(_ id: Int64, _ refs: [Int64], _ tags: [(String, String)]) -> String {
    "<way id=\"\(id)\" version=\"2\">" + refs.map { "<nd ref=\"\($0)\"/>" }.joined()
        + tags.map { "<tag k=\"\($0.0)\" v=\"\($0.1)\"/>" }.joined() + "</way>"
}

@Suite struct OSMDocumentTests {
    @Test func namedMappedNodeBecomesAPlaceWithItsDetails() throws {
        let document = try read(osm(node(42, 60.1699, 24.9442, [
            ("amenity", "restaurant"), ("name", " Savoy "), ("name:en", "Savoy"), ("name:sv", "Savoy SV"), ("name:zh-Hans", "萨沃伊"),
            ("name:etymology", "x"), ("name:left", "y"), ("name:", "z"),
            ("addr:street", "Eteläesplanadi"), ("addr:housenumber", "14"), ("addr:postcode", "00130"), ("addr:city", "Helsinki"),
            ("phone", "+358 9 6128 5300; +358 40 1"), ("contact:website", "https://www.ravintolasavoy.fi"),
            ("opening_hours", "Mo-Fr 11:30-24:00; Sa 18:00-24:00"), ("description", "Alvar Aalto's dining room"),
        ])))
        #expect(document.places == [OSMPlace(
            externalID: "node/42", category: "restaurant", name: "Savoy",
            localizedNames: ["en": "Savoy", "sv": "Savoy SV", "zh-Hans": "萨沃伊"], lat: 60.1699, lon: 24.9442,
            address: "Eteläesplanadi 14, 00130 Helsinki", phone: "+358 9 6128 5300", website: "https://www.ravintolasavoy.fi",
            description: "Alvar Aalto's dining room",
            openingHours: [1, 2, 3, 4, 5].map { OpeningHours.Period(day: $0, open: "11:30", close: "24:00") }
                + [OpeningHours.Period(day: 6, open: "18:00", close: "24:00")]
        )])
        #expect(document.counts.nodes == 1)
    }

    @Test func hoursNotUnderstoodAreKeptAsText() throws {
        let document = try read(osm(node(1, 60, 25, [("shop", "books"), ("name", "Arkadia"), ("opening_hours", "Mo-Fr 10:00-18:00; PH off")])))
        #expect(document.places.first?.openingHours == [])
        #expect(document.places.first?.openingHoursText == "Mo-Fr 10:00-18:00; PH off")
    }

    @Test func addressPartsAndFallbacks() throws {
        let document = try read(osm([
            node(1, 60, 25, [("shop", "books"), ("name", "A"), ("addr:full", "Somewhere 1"), ("addr:street", "Ignored")]),
            node(2, 60, 25, [("shop", "books"), ("name", "B"), ("addr:city", "Helsinki")]),
            node(3, 60, 25, [("shop", "books"), ("name", "C"), ("addr:street", "Mannerheimintie")]),
            node(4, 60, 25, [("shop", "books"), ("name", "D"), ("contact:phone", "+358 1"), ("website", " ; ")]),
        ].joined()))
        #expect(document.places.map(\.address) == ["Somewhere 1", "Helsinki", "Mannerheimintie", nil])
        #expect(document.places.map(\.phone) == [nil, nil, nil, "+358 1"])
        #expect(document.places.map(\.website) == [nil, nil, nil, nil])
    }

    @Test func onlyNamedElementsWithAMappedTag() throws {
        let document = try read(osm([
            node(1, 60, 25, [("amenity", "cafe")]),
            node(2, 60, 25, [("amenity", "cafe"), ("name", "  ")]),
            node(3, 60, 25, [("amenity", "bench"), ("name", "Bench")]),
            node(4, 60, 25, [("amenity", "cafe"), ("name", "Fazer")]),
        ].joined()))
        #expect(document.places.map(\.externalID) == ["node/4"])
    }

    @Test func closedWayIsAtTheMeanOfItsNodesCountedOnce() throws {
        // A square; its first node repeated at the end must not pull the centre towards it.
        let document = try read(osm([
            node(1, 60.0, 24.0), node(2, 60.0, 24.2), node(3, 60.2, 24.2), node(4, 60.2, 24.0),
            way(10, [1, 2, 3, 4, 1], [("leisure", "park"), ("name", "Esplanadi")]),
            way(11, [1, 2, 3], [("tourism", "attraction"), ("name", "Open line")]),
        ].joined()))
        #expect(document.places.count == 2)
        #expect(document.places[0].externalID == "way/10")
        #expect(document.places[0].category == "park")
        #expect(abs(document.places[0].lat - 60.1) < 1e-9 && abs(document.places[0].lon - 24.1) < 1e-9)
        #expect(abs(document.places[1].lat - (60 + 60 + 60.2) / 3) < 1e-9 && abs(document.places[1].lon - (24 + 24.2 + 24.2) / 3) < 1e-9)
        #expect(document.counts.ways == 2)
    }

    @Test func wayWithAMissingNodeIsLeftOutAndCounted() throws {
        let document = try read(osm([
            node(1, 60.0, 24.0), node(2, 60.0, 24.2),
            way(10, [1, 2, 3], [("tourism", "museum"), ("name", "Half there")]),
            way(11, [1, 2], [("tourism", "museum"), ("name", "All there")]),
            way(12, [1, 99], [("highway", "footway"), ("name", "Not mapped")]),
        ].joined()))
        #expect(document.places.map(\.externalID) == ["way/11"])
        #expect(document.counts.waysMissingNodes == 1)
    }

    @Test func nodesInAnyOrderAndAfterTheWay() throws {
        let document = try read(osm([
            node(5, 60.0, 24.0), way(10, [5, 3, 7], [("tourism", "museum"), ("name", "M")]), node(7, 60.3, 24.3), node(3, 60.0, 24.0),
        ].joined()))
        #expect(document.places.count == 1)
        #expect(abs(document.places[0].lat - 60.1) < 1e-9 && abs(document.places[0].lon - 24.1) < 1e-9)
    }

    @Test func relationsArePassedOverAndTheirTagsDoNotLeak() throws {
        let document = try read(osm([
            node(1, 60, 25, [("amenity", "cafe"), ("name", "Node")]),
            "<relation id=\"5\" version=\"1\"><member type=\"node\" ref=\"1\" role=\"\"/><tag k=\"name\" v=\"R\"/><tag k=\"tourism\" v=\"museum\"/></relation>",
        ].joined()))
        #expect(document.places.map(\.name) == ["Node"])
        #expect(document.counts.relations == 1)
    }

    @Test func elementsBreakingABoundAreLeftOutAndCounted() throws {
        let long = String(repeating: "é", count: 513)  // 513 characters, 1,026 bytes
        let document = try read(osm([
            node(1, 95, 25, [("amenity", "cafe"), ("name", "Too far north")]),
            "<node id=\"x\" lat=\"60\" lon=\"25\"><tag k=\"amenity\" v=\"cafe\"/><tag k=\"name\" v=\"Bad id\"/></node>",
            node(3, 60, 25, [("amenity", "cafe"), ("name", long)]),
            node(4, 60, 25, [("amenity", "cafe"), ("name", String(long.dropLast(2)))]),
            way(5, Array(repeating: 4, count: OSMCollector.maxWayNodes + 1), [("leisure", "park"), ("name", "Long way")]),
            way(6, Array(repeating: 4, count: OSMCollector.maxWayNodes), [("leisure", "park"), ("name", "Longest way")]),
            way(8, [], [("leisure", "park"), ("name", "No nodes")]),
            "<way id=\"-\"><nd ref=\"4\"/><tag k=\"leisure\" v=\"park\"/><tag k=\"name\" v=\"Bad id\"/></way>",
            // Numbers OSM does not write, which Swift's parsers would take.
            "<node id=\"10\" lat=\"0x10\" lon=\"25\"><tag k=\"amenity\" v=\"cafe\"/><tag k=\"name\" v=\"Hex\"/></node>",
            "<node id=\"11\" lat=\"60\" lon=\"2.5e1\"><tag k=\"amenity\" v=\"cafe\"/><tag k=\"name\" v=\"Exponent\"/></node>",
            "<node id=\"+12\" lat=\"60\" lon=\"25\"><tag k=\"amenity\" v=\"cafe\"/><tag k=\"name\" v=\"Plus\"/></node>",
            "<node id=\"013\" lat=\"60\" lon=\"25\"><tag k=\"amenity\" v=\"cafe\"/><tag k=\"name\" v=\"Leading zero\"/></node>",
            "<node id=\"14\" lat=\"nan\" lon=\"25\"><tag k=\"amenity\" v=\"cafe\"/><tag k=\"name\" v=\"Not a number\"/></node>",
            "<node id=\"15\" lat=\"60.\" lon=\"25\"><tag k=\"amenity\" v=\"cafe\"/><tag k=\"name\" v=\"Bare point\"/></node>",
            // Over the bound as written, though a Double rounds it to 90 or 180.
            "<node id=\"19\" lat=\"90.0000000000000001\" lon=\"25\"><tag k=\"amenity\" v=\"cafe\"/><tag k=\"name\" v=\"Past the pole\"/></node>",
            "<node id=\"20\" lat=\"60\" lon=\"-180.00000000000000001\"><tag k=\"amenity\" v=\"cafe\"/><tag k=\"name\" v=\"Past the meridian\"/></node>",
            "<way id=\"0x16\"><nd ref=\"4\"/><tag k=\"leisure\" v=\"park\"/><tag k=\"name\" v=\"Hex way\"/></way>",
            "<way id=\"17\"><nd ref=\"0x4\"/><tag k=\"leisure\" v=\"park\"/><tag k=\"name\" v=\"Hex ref\"/></way>",
            // What OSM does write: negative ids of new elements, and many decimals.
            "<node id=\"-18\" lat=\"-33.8688000\" lon=\"151.2093000\"><tag k=\"amenity\" v=\"cafe\"/><tag k=\"name\" v=\"New\"/></node>",
            "<node id=\"21\" lat=\"-90.000\" lon=\"180\"><tag k=\"amenity\" v=\"cafe\"/><tag k=\"name\" v=\"Corner\"/></node>",
        ].joined()))
        #expect(document.places.map(\.externalID) == ["node/4", "way/6", "node/-18", "node/21"])
        #expect(document.counts.invalidElements == 16)
        let tags = (0...OSMCollector.maxTags).map { ("k\($0)", "v") } + [("amenity", "cafe"), ("name", "Many tags")]
        #expect(try read(osm(node(7, 60, 25, tags))).counts.invalidElements == 1)
        #expect(try read(osm(node(7, 60, 25, Array(tags.suffix(OSMCollector.maxTags))))).places.count == 1)
    }

    /// A node given twice (in order or not) has no coordinates: a way through it is left out
    /// as one missing a node, rather than placed by whichever copy came first.
    @Test func aNodeGivenTwiceLeavesItsWaysOut() throws {
        for nodes in [[(4, 10.0), (4, 50.0), (5, 10.1), (6, 10.2)], [(5, 10.1), (4, 10.0), (6, 10.2), (4, 50.0)]] {
            let xml = nodes.map { #"<node id="\#($0.0)" lat="\#($0.1)" lon="20"/>"# }.joined()
                + way(9, [4, 5, 6], [("leisure", "park"), ("name", "Park")]) + way(10, [5, 6], [("leisure", "park"), ("name", "Other")])
            let document = try read(osm(xml))
            #expect(document.places.map(\.externalID) == ["way/10"])
            #expect(document.counts.waysMissingNodes == 1)
        }
    }

    @Test func refusesOtherDocumentsAndBadXML() {
        #expect(throws: OSMError.notOSM(root: "content")) { try read("<content/>") }
        let dtd = "<?xml version='1.0'?><!DOCTYPE osm [<!ENTITY a \"b\">]><osm/>"
        #expect { try read(dtd) } throws: { error in
            guard case .xml(let xml) = error as? OSMError else { return false }
            return xml.reason == .declarationRefused && xml.line == 1
        }
        #expect { try OSMDocument(bytes: Array(osm("").utf8), mapping: OSMMapping.standard(), maxBytes: 10) } throws: { error in
            guard case .xml(let xml) = error as? OSMError, case .tooLarge = xml.reason else { return false }
            return true
        }
        #expect { try read(osm("<node id=\"1\" lat=\"60\" lon=\"25\">")) } throws: { error in
            guard case .xml = error as? OSMError else { return false }
            return true
        }
    }

    @Test func nodeTableFindsEveryIdOnceSorted() {
        var table = NodeTable()
        for id in [9, 3, 7, 1, 5] as [Int64] { table.append(id: id, lat: Double(id), lon: -Double(id)) }
        table.prepareForLookups()
        for id in [1, 3, 5, 7, 9] as [Int64] {
            #expect(table.coordinate(of: id).map { [$0.lat, $0.lon] } == [Int32(id) * 10_000_000, -Int32(id) * 10_000_000])
        }
        #expect(table.coordinate(of: 4) == nil)
        #expect(table.coordinate(of: 10) == nil)
        #expect(table.coordinate(of: 0) == nil)
    }
}
