import Bus
@testable import CatalogService
import Contracts
import Foundation
import ServiceKit
import Testing
import TestSupport

/// Tours in the catalog alone, over its real sockets: what a change to a stop does to the
/// tours that share it, the events, the snapshot, and the bounds of every field.
@Suite struct TourTests {
    /// The events the catalog published after `seq`, as (type, envelope).
    private func events(_ catalog: CatalogFixture, after seq: Int64) throws -> [(type: String, envelope: Data)] {
        let replay = try catalog.client.request(type: "sys.replay", body: Data(#"{"after":\#(seq),"limit":100}"#.utf8))
        return try replay.attachments.map { (try JSONDecoder().decode(EventHeader.self, from: $0).type, $0) }
    }

    private func head(_ catalog: CatalogFixture) throws -> Int64 {
        let outbox = try catalog.raw("sys.stats", "{}")["outbox"] as? [String: Any]
        return Int64(try #require(outbox?["head"] as? Int))
    }

    private func tour(_ catalog: CatalogFixture, _ name: String, _ stops: [Int64]) throws -> Tour {
        try catalog.client.call("tours.create", TourInput(name: name, stops: stops), as: Tour.self)
    }

    private func get(_ catalog: CatalogFixture, _ id: Int64) throws -> Tour {
        try catalog.client.call("tours.get", TourDeleted(id: id), as: Tour.self)
    }

    @Test func deletingAPlaceRemovesItFromEveryTourInOrderAndPublishesEachChangedTour() throws {
        let catalog = try CatalogFixture()
        let places = try (0..<4).map { try catalog.create("Stop \($0)", lat: -33.86 + Double($0) * 0.001) }
        let (a, b, c, d) = (places[0].id, places[1].id, places[2].id, places[3].id)
        let first = try tour(catalog, "First", [a, b, c])
        let second = try tour(catalog, "Second", [c, b, d])
        let third = try tour(catalog, "Third", [d])
        let before = try head(catalog)

        try catalog.raw("catalog.delete", #"{"id":\#(b)}"#)

        #expect(try get(catalog, first.id).stops == [a, c])
        #expect(try get(catalog, second.id).stops == [c, d])
        #expect(try get(catalog, first.id).version == 2)
        #expect(try get(catalog, third.id).version == 1)
        let published = try events(catalog, after: before)
        #expect(published.map(\.type) == [CatalogEvents.deleted, TourEvents.upserted, TourEvents.upserted])
        let tours = try published.dropFirst().map { try JSONCoding.decodeBody(Tour.self, fromEnvelope: $0.envelope) }
        #expect(tours.map(\.id) == [first.id, second.id])
        #expect(tours.map(\.stops) == [[a, c], [c, d]])
        // The places themselves are all still there but the deleted one.
        #expect(try catalog.allPlaces().map(\.id) == [a, c, d])

        // A tour whose last stop goes has no start; it stays, with no stops.
        try catalog.raw("catalog.delete", #"{"id":\#(d)}"#)
        let emptied = try get(catalog, third.id)
        #expect(emptied.stops.isEmpty && emptied.lat == nil && emptied.lon == nil && emptied.version == 2)
    }

    @Test func deletingATourLeavesItsPlacesAndPublishesItsDeletion() throws {
        let catalog = try CatalogFixture()
        let a = try catalog.create("A"), b = try catalog.create("B")
        let walk = try tour(catalog, "Walk", [a.id, b.id])
        let before = try head(catalog)
        try catalog.raw("tours.delete", #"{"id":\#(walk.id)}"#)
        #expect(try events(catalog, after: before).map(\.type) == [TourEvents.deleted])
        #expect(try catalog.allPlaces().map(\.id) == [a.id, b.id])
        #expect(throws: ServiceError.self) { try get(catalog, walk.id) }
    }

    @Test func aTourStartsAtItsFirstStopAndMovesWithIt() throws {
        let catalog = try CatalogFixture()
        let a = try catalog.create("A", lat: -33.80), b = try catalog.create("B", lat: -33.81)
        let starting = try tour(catalog, "Starts at A", [a.id, b.id])
        let passing = try tour(catalog, "Passes A", [b.id, a.id])
        #expect(starting.lat == -33.80 && passing.lat == -33.81)
        let before = try head(catalog)

        try catalog.raw("catalog.update", #"{"id":\#(a.id),"lat":-33.75}"#)

        let published = try events(catalog, after: before)
        #expect(published.map(\.type) == [CatalogEvents.upserted, TourEvents.upserted])
        let moved = try JSONCoding.decodeBody(Tour.self, fromEnvelope: try #require(published.last).envelope)
        #expect(moved.id == starting.id && moved.lat == -33.75 && moved.version == 2)
        #expect(try get(catalog, passing.id).version == 1)
        // A change that does not move the place leaves its tours alone.
        let unmoved = try head(catalog)
        try catalog.raw("catalog.update", #"{"id":\#(a.id),"name":"A renamed"}"#)
        #expect(try events(catalog, after: unmoved).map(\.type) == [CatalogEvents.upserted])
    }

    @Test func anUpdateThatChangesNothingKeepsTheVersionAndPublishesNothing() throws {
        let catalog = try CatalogFixture()
        let a = try catalog.create("A")
        let walk = try tour(catalog, "Walk", [a.id])
        let before = try head(catalog)
        let same = try catalog.client.call("tours.update", ["id": walk.id], as: Tour.self)
        #expect(same == walk)
        try catalog.raw("tours.update", #"{"id":\#(walk.id),"name":"Walk","stops":[\#(a.id)]}"#)
        #expect(try events(catalog, after: before).isEmpty)
    }

    @Test func theSnapshotHasThePlacesThenTheTours() throws {
        let catalog = try CatalogFixture()
        let places = try (0..<3).map { try catalog.create("P\($0)") }
        _ = try tour(catalog, "One", [places[0].id, places[1].id])
        _ = try tour(catalog, "Two", [places[2].id])
        var types: [String] = []
        var after: String?
        for _ in 0..<20 {
            let body = try JSONCoding.encoder.encode(SnapshotRequest(after: after, limit: 2))
            let reply = try catalog.client.request(type: "sys.snapshot", body: body)
            types += try reply.attachments.map { try JSONDecoder().decode(EventHeader.self, from: $0).type }
            after = try JSONCoding.decodeBody(SnapshotReply.self, fromEnvelope: reply.envelope).next
            if after == nil { break }
        }
        #expect(after == nil)
        #expect(types == Array(repeating: CatalogEvents.upserted, count: 3) + [TourEvents.upserted, TourEvents.upserted])
    }

    @Test func listingPagesByIdAndNearAPointWithoutRepeats() throws {
        let catalog = try CatalogFixture()
        // Ten tours, each with one stop 100 m further north of the point than the last.
        let places = try (0..<10).map { try catalog.create("P\($0)", lat: -33.86 + Double($0) * 0.0009, lon: 151.21) }
        let tours = try places.reversed().map { try tour(catalog, "Walk \($0.id)", [$0.id]) }
        for near in [false, true] {
            var seen: [Int64] = []
            var distances: [Double] = []
            var cursor: String?
            for _ in 0..<20 {
                let nearJSON = near ? #","near":{"lat":-33.86,"lon":151.21},"radius_m":5000"# : ""
                let page = try catalog.raw("tours.list", #"{"limit":3\#(nearJSON)\#(cursor.map { #","cursor":"\#($0)""# } ?? "")}"#)
                let items = try #require(page["tours"] as? [[String: Any]])
                seen += items.compactMap { ($0["id"] as? Int).map(Int64.init) }
                distances += items.compactMap { $0["distance_m"] as? Double }
                cursor = page["next_cursor"] as? String
                if cursor == nil { break }
            }
            if near {
                // Nearest first: the last tour made has the nearest stop.
                #expect(seen == tours.map(\.id).reversed())
                #expect(distances == distances.sorted() && distances.count == 10)
            } else {
                #expect(seen == tours.map(\.id) && distances.isEmpty)
            }
        }
        let outside = try catalog.raw("tours.list", #"{"near":{"lat":-33.86,"lon":151.21},"radius_m":50}"#)
        #expect((outside["tours"] as? [Any])?.count == 1)
    }

    /// Every field bounded from the sender's side: counts, bytes before characters, tags.
    @Test func oversizedToursAreRefusedNamingTheField() throws {
        let catalog = try CatalogFixture()
        let a = try catalog.create("A")
        func refusal(_ json: String) throws -> ServiceError? {
            do {
                try catalog.raw("tours.create", json)
                return nil
            } catch {
                return error
            }
        }
        let many = (0...TourRules.maxStops).map { _ in String(a.id) }.joined(separator: ",")
        #expect(try refusal(#"{"name":"Long","stops":[\#(many)]}"#)?.field == "stops")
        // One character of a thousand combining accents: few characters, many bytes.
        let heavy = "e" + String(repeating: "\u{301}", count: 1_000)
        #expect(try refusal(#"{"name":"Heavy","name_i18n":{"fr":"\#(heavy)"},"stops":[\#(a.id)]}"#)?.field == "name_i18n.fr")
        let languages = (0...LanguageTexts.maxLanguages).map { #""l\#(String(UnicodeScalar(97 + $0 / 26)!))\#(String(UnicodeScalar(97 + $0 % 26)!))":"x""# }
        #expect(try refusal(#"{"name":"Many","name_i18n":{\#(languages.joined(separator: ","))},"stops":[\#(a.id)]}"#)?.field == "name_i18n")
        let longTag = String(repeating: "a", count: 100_000)
        let tagRefusal = try refusal(#"{"name":"Tag","name_i18n":{"\#(longTag)":"x"},"stops":[\#(a.id)]}"#)
        #expect(tagRefusal?.field == "name_i18n" && (tagRefusal?.message.utf8.count ?? .max) < 200)
        #expect(try refusal(#"{"name":"Empty","description_i18n":{"en":"  "},"stops":[\#(a.id)]}"#)?.field == "description_i18n.en")
        #expect(try refusal(#"{"name":"Twice","stops":[\#(a.id)],"external_ids":{"x":"1"}}"#) == nil)
        #expect(try refusal(#"{"name":"Twice again","stops":[\#(a.id)],"external_ids":{"x":"1"}}"#)?.code == .alreadyExists)
        #expect(throws: ServiceError.self) { try catalog.raw("tours.get", #"{"id":1,"lang":"\#(longTag)"}"#) }
    }

    @Test func languageTagsAreCheckedAndLookedUpByPrimaryLanguage() throws {
        for good in ["en", "ru", "pt-BR", "zh-Hant-TW", "yue"] { #expect(LanguagePreference.isTag(good), "\(good)") }
        for bad in ["", "e", "EN", "english", "en-", "en--us", "en_US", "en-abcdefghi", "ру"] { #expect(!LanguagePreference.isTag(bad), "\(bad)") }
        let names = ["en": "Walk", "pt": "Passeio"]
        func text(_ lang: String?) throws -> (text: String?, tag: String?) {
            LanguageTexts.localized(names, try LanguagePreference.read(lang), own: "Own")
        }
        #expect(try text("pt-BR") == ("Passeio", "pt"))
        // Another language falls back to English; without a preference the text is its own.
        #expect(try text("de") == ("Walk", "en"))
        #expect(try text(nil) == ("Own", nil))
        #expect(LanguageTexts.localized(["ru": "Прогулка"], try LanguagePreference.read("de"), own: "Own") == ("Own", nil))
        // A request's tag in any case, as BCP 47 allows; stored tags compared without case.
        #expect(try text("PT-br") == ("Passeio", "pt"))
        #expect(LanguageTexts.localized(["pt-BR": "Passeio"], try LanguagePreference.read("pt-br"), own: nil) == ("Passeio", "pt-BR"))
        #expect(throws: ServiceError.self) { try LanguagePreference.read("english") }
    }
}

/// Places' names and descriptions by language: which one is `name`, what is kept, what is refused.
@Suite struct PlaceLanguageTests {
    @Test func theNameIsTheEnglishOneOrElseTheFirstLanguagesAndEachTextIsChecked() throws {
        let catalog = try CatalogFixture()
        let english = try catalog.raw("catalog.create", #"{"name_i18n":{"ru":"Опера","en":"Opera"},"category":"attraction","lat":0,"lon":0}"#)
        #expect(english["name"] as? String == "Opera")
        let first = try catalog.raw("catalog.create", #"{"name_i18n":{"ru":"Опера","de":"Oper"},"category":"attraction","lat":0,"lon":0}"#)
        #expect(first["name"] as? String == "Oper")
        let given = try catalog.raw("catalog.create", #"{"name":"Given","name_i18n":{"en":"English"},"category":"attraction","lat":0,"lon":0}"#)
        #expect(given["name"] as? String == "Given")
        // No texts is none: left out, not `{}`.
        let none = try catalog.raw("catalog.create", #"{"name":"Plain","name_i18n":{},"category":"attraction","lat":0,"lon":0}"#)
        #expect(none["name_i18n"] == nil && none["description_i18n"] == nil)
        // Kept through an update of other fields, replaced by one of its own, cleared by null.
        let id = try #require(english["id"] as? Int)
        let renamed = try catalog.raw("catalog.update", #"{"id":\#(id),"phone":"+61 2 0000 0000"}"#)
        #expect(renamed["name_i18n"] as? [String: String] == ["ru": "Опера", "en": "Opera"])
        let replaced = try catalog.raw("catalog.update", #"{"id":\#(id),"description_i18n":{"fr":"Salle"}}"#)
        #expect(replaced["description_i18n"] as? [String: String] == ["fr": "Salle"])
        let cleared = try catalog.raw("catalog.update", #"{"id":\#(id),"name_i18n":null}"#)
        #expect(cleared["name_i18n"] == nil && cleared["name"] as? String == "Opera")
        #expect(try catalog.raw("catalog.get", #"{"id":\#(id)}"#)["description_i18n"] as? [String: String] == ["fr": "Salle"])

        let heavy = "e" + String(repeating: "\u{301}", count: 1_000)
        #expect(throws: ServiceError.invalid("description_i18n.fr", "must be at most 20000 bytes")) {
            try catalog.raw("catalog.create", #"{"name":"X","description_i18n":{"fr":"\#(String(repeating: heavy, count: 11))"},"category":"cafe","lat":0,"lon":0}"#)
        }
        #expect(throws: ServiceError.self) {
            try catalog.raw("catalog.create", #"{"name":"X","name_i18n":{"en":"\#(heavy)"},"category":"cafe","lat":0,"lon":0}"#)
        }
        #expect(throws: ServiceError.invalid("name_i18n", "'EN' is not a language tag (such as en, ru or pt-BR)")) {
            try catalog.raw("catalog.create", #"{"name":"X","name_i18n":{"EN":"X"},"category":"cafe","lat":0,"lon":0}"#)
        }
    }
}
