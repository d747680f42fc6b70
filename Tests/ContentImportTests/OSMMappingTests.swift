import Foundation
import Testing
@testable import ContentImport

@Suite struct OSMMappingTests {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

    @Test func builtInTableIsTheDocumentedFile() throws {
        let file = try String(contentsOf: Self.root.appendingPathComponent("Protocols/osm-mapping.tsv"), encoding: .utf8)
        #expect(OSMMapping.standardTable + "\n" == file)
        let mapping = try OSMMapping.standard()
        #expect(mapping.rules.count > 40)
        // Every category a place can have in the catalog is reachable, except none.
        #expect(Set(mapping.rules.compactMap(\.category)) == OSMMapping.categories)
    }

    @Test func standardTableMapsTheIssuesTags() throws {
        let mapping = try OSMMapping.standard()
        let cases: [([String: String], String?)] = [
            (["tourism": "museum"], "museum"), (["tourism": "attraction"], "attraction"), (["tourism": "viewpoint"], "viewpoint"),
            (["tourism": "hotel"], "hotel"), (["tourism": "hostel"], "hostel"), (["tourism": "gallery"], "museum"),
            (["tourism": "zoo"], "attraction"), (["amenity": "restaurant"], "restaurant"), (["amenity": "cafe"], "cafe"),
            (["amenity": "bar"], "bar"), (["amenity": "pub"], "bar"), (["amenity": "theatre"], "theatre"),
            (["shop": "clothes"], "shopping"), (["shop": "yes"], "shopping"), (["historic": "memorial"], "attraction"),
            (["leisure": "park"], "park"), (["natural": "beach"], "beach"), (["amenity": "marketplace"], "market"),
            (["amenity": "nightclub"], "nightlife"), (["railway": "station"], "transport"),
            (["amenity": "bench"], nil), (["tourism": "information"], nil), (["highway": "bus_stop"], nil), ([:], nil),
        ]
        for (tags, category) in cases {
            #expect(mapping.category(for: tags) == category, "\(tags)")
        }
    }

    @Test func theFirstMatchingLineWins() throws {
        let mapping = try OSMMapping.standard()
        #expect(mapping.category(for: ["tourism": "hotel", "amenity": "restaurant"]) == "hotel")
        #expect(mapping.category(for: ["historic": "building", "tourism": "museum"]) == "museum")
        #expect(mapping.category(for: ["historic": "building", "shop": "books"]) == "shopping")
        // A "-" line stops the search: a vacant shop is not a shopping place, nor a historic one.
        #expect(mapping.category(for: ["shop": "vacant", "historic": "building"]) == nil)
        let reversed = try OSMMapping(table: "historic=*\tattraction\ntourism=museum museum\n")
        #expect(reversed.category(for: ["historic": "building", "tourism": "museum"]) == "attraction")
    }

    @Test func readsCommentsBlankLinesAndSpaces() throws {
        let mapping = try OSMMapping(table: "# a comment\n\n  shop=*   shopping  \r\nshop=vacant\t-\n")
        #expect(mapping.rules == [
            OSMMapping.Rule(key: "shop", value: nil, category: "shopping"), OSMMapping.Rule(key: "shop", value: "vacant", category: nil),
        ])
    }

    @Test(arguments: [
        ("shop=*", OSMMapping.TableError(line: 1, message: "expected TAG CATEGORY, found 1 fields")),
        ("shop=* shopping extra", .init(line: 1, message: "expected TAG CATEGORY, found 3 fields")),
        ("# x\nshop shopping", .init(line: 2, message: "expected key=value or key=*")),
        ("=x shopping", .init(line: 1, message: "key and value must not be empty")),
        ("shop= shopping", .init(line: 1, message: "key and value must not be empty")),
        ("shop=* itinerary", .init(line: 1, message: "unknown category 'itinerary'; known: attraction, bar, beach, cafe, hostel, hotel, market, museum, nightlife, park, restaurant, shopping, theatre, transport, viewpoint, or -")),
        ("shop=* shopping\nshop=* -", .init(line: 2, message: "shop=* is already mapped above")),
        ("# nothing\n", .init(line: 0, message: "no rules")),
    ])
    func refusesBadTables(table: String, expected: OSMMapping.TableError) {
        #expect(throws: expected) { try OSMMapping(table: table) }
    }

    @Test func boundedInBytesRulesAndTagLength() throws {
        let long = String(repeating: "é", count: 128)  // 128 characters, 256 bytes
        #expect(throws: OSMMapping.TableError(line: 1, message: "a key or value is longer than 255 bytes")) {
            try OSMMapping(table: "shop=\(long) shopping")
        }
        _ = try OSMMapping(table: "shop=\(long.dropLast())a shopping")
        let rules = (0...OSMMapping.maxRules).map { "k=\($0) park" }.joined(separator: "\n")
        #expect(throws: OSMMapping.TableError(line: OSMMapping.maxRules + 1, message: "more than 1000 rules")) { try OSMMapping(table: rules) }
        #expect(try OSMMapping(table: (0..<OSMMapping.maxRules).map { "k=\($0) park" }.joined(separator: "\n")).rules.count == OSMMapping.maxRules)
        let big = String(repeating: "#", count: OSMMapping.maxBytes) + "\nshop=* shopping"
        #expect(throws: OSMMapping.TableError(line: 0, message: "larger than 65536 bytes (65552)")) { try OSMMapping(table: big) }
    }
}
