import Bus
import Foundation
import Testing
import TestSupport

@Suite struct FavoritesTranscriptTests {
    /// Replays `favorites.md` against one fresh service whose catalog has the places the file
    /// names, with a clock that starts at 2026-06-01T00:00:00Z and moves 1 s after each exchange.
    @Test func favoritesTranscriptMatchesTheService() throws {
        let exchanges = try serviceTranscript("favorites.md").filter { !$0.type.hasPrefix("pins.") && !$0.type.hasPrefix("search.recent") }
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

@Suite struct RecentSearchTranscriptTests {
    /// Replays the `search.recent` exchanges of `favorites.md` (its "Recent searches" section)
    /// against one fresh service that has heard, from two search replicas, the searches that
    /// section lists, with a clock that starts at 2026-06-01T00:00:00Z and moves 1 s after each exchange.
    @Test func recentSearchesTranscriptMatchesTheService() throws {
        let exchanges = try serviceTranscript("favorites.md").filter { $0.type.hasPrefix("search.recent") }
        #expect(exchanges.count >= 6)
        let f = try FavoritesFixture()
        try f.searched("Opera House", user: 1, near: (-33.8568, 151.2153), seconds: -300, replica: 0)
        try f.searched("bondi beach", user: 1, seconds: -240, replica: 1)
        try f.searched("gelato", user: 2, seconds: -200, replica: 0)
        let one = try f.searched(" opera   house", user: 1, seconds: -120, replica: 1)
        let other = try f.searched("Harbour Bridge climb", user: 1, near: (-33.8523, 151.2108), seconds: -60, replica: 0)
        #expect(try f.caughtUp(search: 0, to: other) && f.caughtUp(search: 1, to: one))
        for exchange in exchanges {
            let mismatch = try transcriptMismatch(exchange, try replay(exchange, on: try #require(f.client)), file: "favorites.md")
            #expect(mismatch == nil, "\(mismatch ?? "")")
            f.advance(1_000)
        }
    }
}
