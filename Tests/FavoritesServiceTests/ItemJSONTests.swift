import Contracts
import Bus
import Foundation
import Testing
import TestSupport
@testable import FavoritesService

/// The items of a list page are written by hand; they must read exactly as the encoder writes them.
@Suite struct ItemJSONTests {
    /// Texts with everything the encoder escapes or leaves alone.
    static let texts = ["", "Opera Bar", "Caf\u{e9} \"Sydney\"", "back\\slash/slash", "tab\tline\nfeed\r\u{1}\u{1f}\u{7f}", "\u{1F1E6}\u{1F1FA} 北京", "e\u{301}\u{301}"]
    static let numbers = [0, -33.8568, 151.2153, 12.0, 1e-05, 4.5, 1234567.891, -0.0, 90, -180]

    @Test func handWrittenItemsEqualTheEncoders() throws {
        var random = SplitMix64(seed: 13)
        for round in 0..<2_000 {
            func text() -> String { Self.texts[Int(random.next() % UInt64(Self.texts.count))] }
            func number() -> Double { Self.numbers[Int(random.next() % UInt64(Self.numbers.count))] }
            func maybe<T>(_ value: @autoclosure () -> T) -> T? { random.next() % 2 == 0 ? value() : nil }
            let card = PlaceCard(id: Int64(random.next() % 1_000_000), name: text(), category: text(), address: maybe(text()), lat: number(), lon: number(),
                                 rating: maybe(number()), ratingCount: maybe(Int(random.next() % 1_000)))
            let item = ListItem(place: card, note: maybe(text()), addedAt: "2026-06-01T00:00:0\(round % 10).000Z", visitedAt: maybe("2026-05-31T08:30:00.000Z"),
                                distanceM: maybe(number()))
            var written: [UInt8] = []
            item.appendJSON(to: &written)
            #expect(String(decoding: written, as: UTF8.self) == String(decoding: try JSONCoding.encoder.encode(item), as: UTF8.self))
        }
    }

    @Test func aPageReadsAsItsFieldsSay() throws {
        var item: [UInt8] = []
        ListItem(place: PlaceCard(id: 1, name: "A", category: "cafe", address: nil, lat: 1, lon: 2, rating: nil, ratingCount: nil),
                 note: nil, addedAt: "t", visitedAt: nil, distanceM: nil).appendJSON(to: &item)
        let page = ItemPage(list: "My \"list\"", items: item + Array(",".utf8) + item, nextCursor: "c/1")
        let read = try JSONSerialization.jsonObject(with: page.body) as? [String: Any]
        #expect((read?["items"] as? [Any])?.count == 2 && read?["list"] as? String == "My \"list\"" && read?["next_cursor"] as? String == "c/1")
        #expect(String(decoding: ItemPage(list: "l", items: [], nextCursor: nil).body, as: UTF8.self) == #"{"items":[],"list":"l"}"#)
    }
}
