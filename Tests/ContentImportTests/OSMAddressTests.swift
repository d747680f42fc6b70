import Testing

@testable import ContentImport

/// OpenStreetMap XML of `elements`, read with its streets and addresses.
private func addresses(_ elements: [String]) throws -> [OSMAddress] {
    let xml = "<?xml version='1.0' encoding='UTF-8'?>\n<osm version=\"0.6\">\n" + elements.joined(separator: "\n") + "\n</osm>\n"
    return try OSMDocument(bytes: Array(xml.utf8), mapping: OSMMapping.standard(), streets: true).addresses
}

private func tags(_ tags: [(String, String)]) -> String { tags.map { "<tag k=\"\($0.0)\" v=\"\($0.1)\"/>" }.joined() }

private func node(_ id: Int64, _ lat: Double, _ lon: Double, _ list: [(String, String)] = []) -> String {
    "<node id=\"\(id)\" lat=\"\(lat)\" lon=\"\(lon)\">\(tags(list))</node>"
}

private func way(_ id: Int64, _ refs: [Int64], _ list: [(String, String)] = []) -> String {
    "<way id=\"\(id)\">" + refs.map { "<nd ref=\"\($0)\"/>" }.joined() + tags(list) + "</way>"
}

private func relation(_ id: Int64, _ members: [(String, Int64, String)], _ list: [(String, String)]) -> String {
    "<relation id=\"\(id)\">" + members.map { "<member type=\"\($0.0)\" ref=\"\($0.1)\" role=\"\($0.2)\"/>" }.joined() + tags(list) + "</relation>"
}

private let house = [("addr:street", "Bulevardi"), ("addr:housenumber", "16b")]

@Suite struct OSMAddressTests {
    @Test func aNodeIsAHouseWhereItIs() throws {
        let found = try addresses([node(1, 60.1, 24.9, house + [("addr:postcode", "00120"), ("addr:city", "Helsinki")])])
        let houses = found.filter { $0.kind == .house }
        #expect(houses == [OSMAddress(kind: .house, osm: "node/1", housenumber: "16b", street: "Bulevardi", postcode: "00120", city: "Helsinki", lat: 60.1, lon: 24.9)])
        // Its postcode is an entry of its own, at the mean of its houses.
        #expect(found.filter { $0.kind == .postcode }.map { [$0.postcode, $0.city] } == [["00120", "Helsinki"]])
    }

    @Test func aClosedWayIsAtItsAreasCentroidNotTheMeanOfItsNodes() throws {
        // An L-shaped building: four of its six corners crowd one end; the area's centroid
        // does not follow them as the mean of the nodes would.
        let corners: [(Double, Double)] = [(0, 0), (0, 0.003), (0.001, 0.003), (0.001, 0.001), (0.003, 0.001), (0.003, 0)]
        let nodes = corners.enumerated().map { node(Int64($0.offset + 1), 60 + $0.element.0, 24 + $0.element.1) }
        let found = try addresses(nodes + [way(10, [1, 2, 3, 4, 5, 6, 1], house)]).filter { $0.kind == .house }
        // The two rectangles: 0.001 × 0.003 centred at (0.0005, 0.0015), 0.002 × 0.001 at (0.002, 0.0005).
        let expectedLat = 60 + (0.003e-3 * 0.0005 + 0.002e-3 * 0.002) / 0.005e-3
        let expectedLon = 24 + (0.003e-3 * 0.0015 + 0.002e-3 * 0.0005) / 0.005e-3
        #expect(found.count == 1)
        #expect(abs(found[0].lat - expectedLat) < 1e-9 && abs(found[0].lon - expectedLon) < 1e-9)
    }

    @Test func anOpenWayOrOneMissingANodeIsNoHouse() throws {
        let found = try addresses([node(1, 60, 24), node(2, 60, 24.001), node(3, 60.001, 24), way(10, [1, 2, 3], house), way(11, [1, 2, 9, 1], house)])
        #expect(found.filter { $0.kind == .house }.isEmpty)
    }

    @Test func aMultipolygonIsAtItsLargestOuterRingJoinedFromItsWays() throws {
        // A square of side 0.002 cut into two ways (one drawn backwards), and a small island.
        let square = [node(1, 60, 24), node(2, 60, 24.002), node(3, 60.002, 24.002), node(4, 60.002, 24)]
        let island = [node(5, 61, 25), node(6, 61, 25.0001), node(7, 61.0001, 25)]
        let found = try addresses(
            square + island + [
                way(10, [1, 2, 3]), way(11, [1, 4, 3]), way(12, [5, 6, 7, 5]),
                relation(20, [("way", 10, "outer"), ("way", 12, "outer"), ("way", 11, "outer")], house + [("type", "multipolygon")]),
            ]
        ).filter { $0.kind == .house }
        #expect(found.map(\.osm) == ["relation/20"])
        #expect(abs(found[0].lat - 60.001) < 1e-9 && abs(found[0].lon - 24.001) < 1e-9)
    }

    @Test func theCityIsTheSmallestPolygonAroundElseTheNearestCityNodeAndNeverADigit() throws {
        let big = [node(1, 59, 23), node(2, 59, 26), node(3, 61, 26), node(4, 61, 23)]
        let small = [node(5, 59.9, 24.8), node(6, 59.9, 25.0), node(7, 60.2, 25.0), node(8, 60.2, 24.8)]
        let polygons = [
            way(10, [1, 2, 3, 4, 1], [("boundary", "administrative"), ("admin_level", "8"), ("name", "Big")]),
            way(11, [5, 6, 7, 8, 5], [("place", "city"), ("name", "Small")]),
        ]
        let far = [node(30, 62, 27, [("place", "town"), ("name", "Town")]), node(31, 62.5, 27, [("place", "village"), ("name", "Village")])]
        let houses = [
            node(40, 60.0, 24.9, house), node(41, 60.5, 25.5, house), node(42, 62.01, 27, house), node(43, 62.01, 27, house + [("addr:city", "7")]),
            node(44, 64, 30, house),
        ]
        let found = try addresses(big + small + polygons + far + houses).filter { $0.kind == .house }
        #expect(found.map(\.city) == ["Small", "Big", "Town", "Town", nil])
    }

    @Test func theAreaIsTheSmallestAreaPolygonElseTheNearestAreaNodeWithin2Km() throws {
        let ring = [node(1, 60.0, 24.0), node(2, 60.0, 24.01), node(3, 60.01, 24.01), node(4, 60.01, 24.0)]
        let elements =
            ring + [
                relation(10, [("way", 11, "outer")], [("type", "boundary"), ("boundary", "administrative"), ("admin_level", "10"), ("name", "Kamppi")]),
                way(11, [1, 2, 3, 4, 1]),
                node(20, 60.03, 24.0, [("place", "suburb"), ("name", "Kallio")]),
                node(30, 60.005, 24.005, house), node(31, 60.025, 24.0, house), node(32, 60.2, 24.0, house),
            ]
        let found = try addresses(elements)
        #expect(found.filter { $0.kind == .house }.map(\.area) == ["Kamppi", "Kallio", nil])
        // Both areas are entries of their own: the polygon at its centroid.
        let areas = found.filter { $0.kind == .area }
        #expect(Set(areas.compactMap(\.area)) == ["Kamppi", "Kallio"])
        #expect(Set(areas.compactMap(\.osm)) == ["relation/10", "node/20"])
        let kamppi = try #require(areas.first { $0.area == "Kamppi" })
        #expect(abs(kamppi.lat - 60.005) < 1e-9 && abs(kamppi.lon - 24.005) < 1e-9)
    }

    @Test func waysOfOneNameThatTouchOrLieCloseAreOneStreetOnItsNodeNearestTheirMean() throws {
        let line = (1...6).map { node(Int64($0), 60, 24 + Double($0) * 0.001) }
        let farAway = [node(7, 61, 25), node(8, 61, 25.001)]
        let found = try addresses(
            line + farAway + [
                way(10, [1, 2, 3], [("highway", "residential"), ("name", "Bulevardi"), ("name:sv", "Bulevarden")]),
                way(11, [3, 4], [("highway", "residential"), ("name", "Bulevardi")]),
                // Not joined to the others, but 55 m from them: the other carriageway.
                way(12, [5, 6], [("highway", "residential"), ("name", "Bulevardi")]),
                way(13, [7, 8], [("highway", "residential"), ("name", "Bulevardi")]),
                way(14, [1, 2], [("building", "yes"), ("name", "Not a street")]),
            ]
        ).filter { $0.kind == .street }
        #expect(found.map(\.osm) == ["way/10", "way/13"])
        #expect(found[0].names == ["sv": "Bulevarden"])
        // The mean of the nodes (way 10 and 11 share one) is at 24.0034: its nearest node is 24.003.
        #expect(found[0].lat == 60 && [24.003, 24.004].contains(found[0].lon))
    }

    @Test func aPostcodeListKeepsItsFirstAndALongOneIsDropped() throws {
        let found = try addresses([
            node(1, 60, 24, house + [("addr:postcode", "00100; 00120")]), node(2, 60, 24, house + [("addr:postcode", String(repeating: "9", count: 17))]),
        ])
        #expect(found.filter { $0.kind == .house }.map(\.postcode) == ["00100", nil])
    }

    @Test func streetsAndAddressesAreOnlyReadWhenAsked() throws {
        let xml = "<osm>" + node(1, 60, 24, house) + "</osm>"
        #expect(try OSMDocument(bytes: Array(xml.utf8), mapping: OSMMapping.standard()).addresses.isEmpty)
    }
}

/// What an attacker's file made of the reading (issue 33's attack): each is bounded now.
@Suite struct OSMAddressAttackTests {
    @Test func aRingThatCrossesItselfIsPlacedInsideItsBoxNotOffTheEarth() throws {
        // A bow tie whose two lobes nearly cancel: its area is 1e-10, its centroid degrees away.
        let corners: [(Double, Double)] = [(60, 24), (60.002, 24.002), (60.002, 24), (60.0000001, 24.002)]
        let nodes = corners.enumerated().map { node(Int64($0.offset + 1), $0.element.0, $0.element.1) }
        let houses = try addresses(nodes + [way(10, [1, 2, 3, 4, 1], house)]).filter { $0.kind == .house }
        #expect(houses.count == 1)
        #expect(houses.allSatisfy { (60...60.002).contains($0.lat) && (24...24.002).contains($0.lon) }, "\(houses)")
    }

    @Test func valuesLongerThanOpenStreetMapAllowsAreNone() throws {
        let long = String(repeating: "k", count: 256)
        let found = try addresses([
            node(1, 60, 24, [("addr:street", long), ("addr:housenumber", "1")]), node(2, 60, 24, [("addr:street", "Ok"), ("addr:housenumber", "1")]),
        ])
        #expect(found.filter { $0.kind == .house }.map(\.osm) == ["node/2"])
    }

    @Test func aStreetJoinedFromWaysKeepsAtMost32Names() throws {
        let tags31 = (0..<31).map { ("name:a\(String(UnicodeScalar(UInt8(97 + $0 % 26))))\($0 < 26 ? "" : "x")", "N\($0)") }
        let tags32 = (0..<32).map { ("name:b\(String(UnicodeScalar(UInt8(97 + $0 % 26))))\($0 < 26 ? "" : "x")", "M\($0)") }
        let found = try addresses([
            node(1, 60, 24), node(2, 60, 24.001), node(3, 60, 24.002),
            way(10, [1, 2], [("highway", "residential"), ("name", "Many")] + tags31), way(11, [2, 3], [("highway", "residential"), ("name", "Many")] + tags32),
        ]).filter { $0.kind == .street }
        #expect(found.count == 1 && found[0].names.count == AddressCollector.maxNames, "\(found.map(\.names.count))")
    }
}

extension OSMAddressAttackTests {
    @Test func piecesOfOneNameChainNoFurtherThanAStreetsSpan() throws {
        // Six pieces of "Rantatie" 0.01° long, 0.0015° apart: close each to the next, but 0.0675°
        // end to end; they make streets of at most 0.05°, not one that swallows the villages.
        var elements: [String] = []
        for piece in 0..<6 {
            let west = 24 + Double(piece) * 0.0115
            elements += [node(Int64(piece * 2 + 1), 60, west), node(Int64(piece * 2 + 2), 60, west + 0.01)]
            elements.append(way(Int64(100 + piece), [Int64(piece * 2 + 1), Int64(piece * 2 + 2)], [("highway", "residential"), ("name", "Rantatie")]))
        }
        let streets = try addresses(elements).filter { $0.kind == .street }
        #expect(streets.count >= 2, "\(streets)")
    }

    @Test func aNodeWhoseTagsBreakABoundStillCarriesTheWaysThroughIt() throws {
        let long = String(repeating: "x", count: OSMElementReader.maxTagBytes + 1)
        let xml = "<osm>" + node(1, 60, 24) + node(2, 60, 24.001, [("note", long)]) + node(3, 60, 24.002)
            + way(10, [1, 2, 3], [("highway", "residential")]) + "</osm>"
        let streets = try OSMStreets(bytes: Array(xml.utf8))
        #expect(streets.ways.map(\.nodes.count) == [3] && streets.counts.invalidElements == 1)
    }
}

