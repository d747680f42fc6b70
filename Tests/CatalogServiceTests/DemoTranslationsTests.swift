import Foundation
import Testing

/// The demo's Russian and German names cover exactly its 20 most popular places.
@Suite struct DemoTranslationsTests {
    @Test func theTopTwentyPlacesByPopularityHaveRussianAndGermanNames() throws {
        // Read from the CLI's source, which this target does not link: the places' lines and the table's keys.
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        let data = try String(contentsOf: root.appendingPathComponent("Sources/TourbusCLI/DemoData.swift"), encoding: .utf8)
        let table = try String(contentsOf: root.appendingPathComponent("Sources/TourbusCLI/DemoTranslations.swift"), encoding: .utf8)
        var places: [(id: String, popularity: Double)] = []
        var names: [String: String] = [:]
        for line in data.split(separator: "\n") where line.trimmingCharacters(in: .whitespaces).hasPrefix(#"{"name":"#) {
            let text = line.trimmingCharacters(in: .whitespaces).trimmingCharacters(in: CharacterSet(charactersIn: ","))
            let object = try #require(try JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any])
            let id = try #require((object["external_ids"] as? [String: String])?["demo"])
            places.append((id, object["popularity"] as? Double ?? 0))
            names[id] = object["name"] as? String
        }
        #expect(places.count >= 200)
        let top = places.sorted { ($0.popularity, $1.id) > ($1.popularity, $0.id) }.prefix(20).map(\.id)
        let translated = table.matches(of: /"(syd-\d{3})": \("([^"]+)", "([^"]+)"\)/).map { (id: String($0.1), ru: String($0.2), de: String($0.3)) }
        #expect(Set(translated.map(\.id)) == Set(top) && translated.count == 20)
        for entry in translated {
            #expect(entry.ru.unicodeScalars.contains { (0x0400...0x04FF).contains($0.value) }, "\(entry.id) has no Cyrillic name")
        }
        // German keeps some English names (Circular Quay, Hyde Park), as German guides do, but most are German.
        #expect(translated.allSatisfy { names[$0.id] != $0.ru })
        #expect(translated.filter { names[$0.id] != $0.de }.count >= 12)
    }
}
