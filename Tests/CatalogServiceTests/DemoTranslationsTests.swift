import Foundation
import Testing

/// The demo's Russian and German names cover its 20 most popular places and its events.
@Suite struct DemoTranslationsTests {
    @Test func theTopTwentyPlacesByPopularityHaveRussianAndGermanNames() throws {
        // Read from the demo's data files (deploy/demo), which `tourbus up` loads.
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        let folder = root.appendingPathComponent("deploy/demo")
        let objects = try #require(try JSONSerialization.jsonObject(with: Data(contentsOf: folder.appendingPathComponent("places.json"))) as? [[String: Any]])
        let table = try #require(
            try JSONSerialization.jsonObject(with: Data(contentsOf: folder.appendingPathComponent("translations.json"))) as? [String: [String: String]])
        var places: [(id: String, popularity: Double, event: Bool)] = []
        var names: [String: String] = [:]
        for object in objects {
            let id = try #require((object["external_ids"] as? [String: String])?["demo"])
            places.append((id, object["popularity"] as? Double ?? 0, object["category"] as? String == "event"))
            names[id] = object["name"] as? String
        }
        #expect(places.count >= 200)
        // The 20 most popular places that are not events, and the events (so every one of the 20
        // most popular, events or not, has its names).
        let top = places.filter { !$0.event }.sorted { ($0.popularity, $1.id) > ($1.popularity, $0.id) }.prefix(20).map(\.id)
        let translated = table.map { (id: $0.key, ru: $0.value["ru"] ?? "", de: $0.value["de"] ?? "") }
        let events = places.filter { $0.event }.map(\.id)
        #expect(events.count == 4 && Set(translated.map(\.id)) == Set(top).union(events) && Set(translated.map(\.id)).count == translated.count)
        for entry in translated {
            #expect(entry.ru.unicodeScalars.contains { (0x0400...0x04FF).contains($0.value) }, "\(entry.id) has no Cyrillic name")
        }
        // German keeps some English names (Circular Quay, Hyde Park), as German guides do, but most are German.
        #expect(translated.allSatisfy { names[$0.id] != $0.ru })
        #expect(translated.filter { names[$0.id] != $0.de }.count >= 12)
    }

    /// The demo's opening hours: on the places whose hours are published (museums, markets and
    /// the like), each read in Sydney's zone, so search's `open_now` can use them.
    @Test func thePlacesWithHoursAreReadInSydney() throws {
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        let objects = try #require(
            try JSONSerialization.jsonObject(with: Data(contentsOf: root.appendingPathComponent("deploy/demo/places.json"))) as? [[String: Any]])
        let withHours = objects.filter { ($0["opening_hours"] as? [Any])?.isEmpty == false }
        #expect(withHours.count == 16)
        #expect(withHours.allSatisfy { $0["timezone"] as? String == "Australia/Sydney" })
        let library = try #require(withHours.first { $0["name"] as? String == "State Library of New South Wales" })
        #expect((library["opening_hours"] as? [[String: Any]])?.count == 7)
    }
}
