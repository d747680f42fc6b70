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
            let mismatch = try transcriptMismatch(exchange, try replay(exchange, on: f.client), file: "favorites.md")
            #expect(mismatch == nil, "\(mismatch ?? "")")
            f.advance(1_000)
        }
    }
}
