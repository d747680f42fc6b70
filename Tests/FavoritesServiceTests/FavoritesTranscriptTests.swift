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
            let mismatch = try transcriptMismatch(exchange, try replay(exchange, on: try #require(f.client)), file: "favorites.md")
            #expect(mismatch == nil, "\(mismatch ?? "")")
            f.advance(1_000)
        }
    }
}
