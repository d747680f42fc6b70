import Foundation
import Testing
@testable import ContentImport

/// The OpenStreetMap example of Protocols/import.md: its ```osm block read with the standard
/// table gives the places of the ```text block after it.
@Suite struct OSMDocumentationTests {
    /// One line a place, then the counts, as import.md shows them.
    static func describe(_ document: OSMDocument) -> String {
        var lines = document.places.map { place in
            var line = "\(place.externalID) \(place.category) \(String(format: "%.4f", place.lat)) \(String(format: "%.4f", place.lon)) \"\(place.name)\""
            for (language, name) in place.localizedNames.sorted(by: { $0.key < $1.key }) { line += " \(language)=\"\(name)\"" }
            if let address = place.address { line += " address=\"\(address)\"" }
            if let phone = place.phone { line += " phone=\"\(phone)\"" }
            if let website = place.website { line += " website=\"\(website)\"" }
            if let description = place.description { line += " description=\"\(description)\"" }
            if !place.openingHours.isEmpty { line += " hours=" + place.openingHours.map { "\($0.day) \($0.open)-\($0.close)" }.joined(separator: ", ") }
            if let text = place.openingHoursText { line += " hours_text=\"\(text)\"" }
            return line
        }
        let counts = document.counts
        lines.append("nodes \(counts.nodes), ways \(counts.ways), relations \(counts.relations), ways missing nodes \(counts.waysMissingNodes)")
        return lines.joined(separator: "\n") + "\n"
    }

    @Test func theExampleGivesThePlacesShown() throws {
        let blocks = try ImportDocumentation.blocks()
        var checked = 0
        for (example, shown) in zip(blocks, blocks.dropFirst()) where example.language == "osm" {
            #expect(shown.language == "text")
            let document = try OSMDocument(bytes: Array(example.text.utf8), mapping: OSMMapping.standard())
            #expect(Self.describe(document) == shown.text)
            checked += 1
        }
        #expect(checked == 1)
    }

    /// The table of mapping rules in import.md names the categories the file maps to, in its order.
    @Test func theMappingTableIsDescribedInItsOrder() throws {
        let text = try String(contentsOf: ImportDocumentation.protocols.appendingPathComponent("import.md"), encoding: .utf8)
        let section = try #require(text.range(of: "### The mapping table")).upperBound
        let end = try #require(text.range(of: "### opening_hours", range: section..<text.endIndex)).lowerBound
        // Rows are `| tags | category |`: the categories as they come, runs of one category merged.
        let described = text[section..<end].split(separator: "\n").filter { $0.hasPrefix("| `") }.map { row -> String in
            let category = row.split(separator: "|").last.map { $0.trimmingCharacters(in: .whitespaces) } ?? ""
            return category == "left out" ? "-" : category.trimmingCharacters(in: CharacterSet(charactersIn: "`"))
        }
        var inFile: [String] = []
        for rule in try OSMMapping.standard().rules where inFile.last != (rule.category ?? "-") { inFile.append(rule.category ?? "-") }
        #expect(described == inFile)
    }
}
