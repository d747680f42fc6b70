import Bus
import Foundation
import Testing
import TestSupport

@Suite struct PinTranscriptTests {
    /// Replays the `pins.*` exchanges of `favorites.md` (its "Pins" section) against one fresh
    /// service whose clock starts at 2026-06-01T00:00:00Z and moves 1 s after each exchange,
    /// with the catalog's Opera Bar in its copy.
    @Test func pinsTranscriptMatchesTheService() throws {
        let exchanges = try serviceTranscript("favorites.md").filter { $0.type.hasPrefix("pins.") }
        #expect(exchanges.count >= 15)
        let f = try PinFixture()
        try f.place(1, name: "Opera Bar", lat: -33.8568, lon: 151.2153, category: "bar", address: "Lower Concourse, Sydney Opera House")
        for exchange in exchanges {
            var actual: [String: Any]
            do {
                let reply = try f.client.request(type: exchange.type, body: Data(exchange.body.utf8), auth: exchange.auth, timeoutMilliseconds: 5_000)
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
