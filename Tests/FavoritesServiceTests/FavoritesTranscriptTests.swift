import Bus
import Foundation
import Testing
import TestSupport

@Suite struct FavoritesTranscriptTests {
    /// Replays `favorites.md` against one fresh service whose catalog has the places the file
    /// names, with a clock that starts at 2026-06-01T00:00:00Z and moves 1 s after each exchange.
    @Test func favoritesTranscriptMatchesTheService() throws {
        let exchanges = try serviceTranscript("favorites.md").filter { !$0.type.hasPrefix("pins.") }
        #expect(exchanges.count >= 25)
        let f = try FavoritesFixture()
        try f.place(1, name: "Opera Bar", lat: -33.8568, lon: 151.2153)
        try f.place(2, name: "Harbour Lookout", lat: -33.8523, lon: 151.2108)
        try f.place(3, name: "Garden Kiosk", lat: -33.8642, lon: 151.2166)
        try f.place(4, name: "New Gelato", lat: -33.8700, lon: 151.2000, publish: false)
        #expect(f.waitForPlace(1) && f.waitForPlace(2) && f.waitForPlace(3))
        for exchange in exchanges {
            var actual: [String: Any]
            do {
                let reply = try f.client!.request(type: exchange.type, body: Data(exchange.body.utf8), auth: exchange.auth, timeoutMilliseconds: 5_000)
                actual = try JSONSerialization.jsonObject(with: reply.envelope) as? [String: Any] ?? [:]
            } catch let error as ServiceError {
                actual = ["ok": false, "error": try JSONSerialization.jsonObject(with: try JSONEncoder().encode(error))]
            }
            actual.removeValue(forKey: "v")
            actual.removeValue(forKey: "id")
            let expected = try JSONSerialization.jsonObject(with: Data(exchange.expected.utf8))
            let shown = String(decoding: try JSONSerialization.data(withJSONObject: actual, options: [.sortedKeys, .withoutEscapingSlashes]), as: UTF8.self)
            #expect(transcriptMatches(expected, actual), "favorites.md line \(exchange.line): \(exchange.type) answered \(shown)")
            f.advance(1_000)
        }
    }
}
