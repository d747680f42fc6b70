import Contracts
import Foundation
@testable import SearchService
import Testing

@Suite struct OpeningHoursTests {
    func at(_ iso: String) -> Date { ISO8601DateFormatter().date(from: iso) ?? .distantPast }

    @Test func periodsInThePlacesOwnTimeZone() {
        let weekdays = #"[{"day":1,"open":"09:00","close":"17:00"}]"#
        // 2026-11-29T23:30Z is Monday 10:30 in Sydney (UTC+11 in November).
        #expect(OpeningHours.isOpen(hoursJSON: weekdays, timezone: "Australia/Sydney", at: at("2026-11-29T23:30:00Z")))
        #expect(!OpeningHours.isOpen(hoursJSON: weekdays, timezone: "Australia/Sydney", at: at("2026-11-30T07:00:00Z")))  // 18:00
        #expect(!OpeningHours.isOpen(hoursJSON: weekdays, timezone: "Europe/Paris", at: at("2026-11-29T23:30:00Z")))      // Monday 00:30
        // Sunday 22:00 to 02:00 runs into Monday.
        let late = #"[{"day":7,"open":"22:00","close":"02:00"}]"#
        #expect(OpeningHours.isOpen(hoursJSON: late, timezone: "Australia/Sydney", at: at("2026-11-29T14:00:00Z")))       // Mon 01:00
        #expect(!OpeningHours.isOpen(hoursJSON: late, timezone: "Australia/Sydney", at: at("2026-11-29T16:00:00Z")))      // Mon 03:00
        #expect(OpeningHours.isOpen(hoursJSON: #"[{"day":1,"open":"20:00","close":"24:00"}]"#, timezone: "Australia/Sydney", at: at("2026-11-30T12:59:00Z")))
        // Without hours or a time zone it cannot be said: not open.
        #expect(!OpeningHours.isOpen(hoursJSON: weekdays, timezone: nil, at: at("2026-11-29T23:30:00Z")))
        #expect(!OpeningHours.isOpen(hoursJSON: "[]", timezone: "Australia/Sydney", at: at("2026-11-29T23:30:00Z")))
    }

    @Test func openNowFilterKeepsOnlyOpenPlaces() throws {
        let index = try TestIndex()
        let always = (1...7).map { OpeningPeriod(day: $0, open: "00:00", close: "24:00") }
        try SearchIndex.upsert(IndexedPlace(id: 1, name: "Always Open", category: "cafe", lat: -33.87, lon: 151.21, address: nil, priceLevel: nil,
                                            popularity: 1, openingHours: always, description: nil, timezone: "Australia/Sydney"), index.db)
        try SearchIndex.upsert(IndexedPlace(id: 2, name: "No Hours Known", category: "cafe", lat: -33.87, lon: 151.2101, address: nil, priceLevel: nil,
                                            popularity: 1, openingHours: nil, description: nil, timezone: "Australia/Sydney"), index.db)
        let all = try index.queries.nearbyPage(try nearbyQuery(#"{"near":{"lat":-33.87,"lon":151.21},"radius_m":500}"#))
        let open = try index.queries.nearbyPage(try nearbyQuery(#"{"near":{"lat":-33.87,"lon":151.21},"radius_m":500,"open_now":true}"#))
        #expect(all.hits.map(\.id) == [1, 2] && open.hits.map(\.id) == [1])
        let text = try TextQueries(db: index.db).search(try textQuery(#"{"q":"open","open_now":true}"#))
        #expect(text.hits.map(\.id) == [1])
    }
}
