import Bus
import Contracts
import Foundation
import Testing
import TestSupport
@testable import SearchService

/// `lang` on search, over a real search service fed by a stand-in catalog's events: a place is
/// found by any of its names whatever the language asked, and hits are named in that language
/// along the same fallback as the catalog's, saying which.
@Suite(.serialized) struct LanguageSearchTests {
    private func emitOpera(_ f: SearchFixture, names: String) throws {
        let body = #"{"id":3,"name":"Sydney Opera House","name_i18n":\#(names),"category":"attraction","lat":-33.8568,"lon":151.2153,"opening_hours":[],"photos":[],"external_ids":{},"version":1,"created_at":"x","updated_at":"x"}"#
        _ = try f.catalogClient.call("fake.emit", FakeEmit(type: CatalogEvents.upserted, key: "00000003", body: body), as: Int64.self)
    }

    private func call<Reply: Decodable>(_ f: SearchFixture, _ type: String, _ json: String, as: Reply.Type = SearchPage.self) throws -> Reply {
        try #require(f.searchClient).request(type: type, body: Data(json.utf8)).body(Reply.self)
    }

    private func eventually(_ f: SearchFixture, _ json: String, _ condition: (SearchPage) -> Bool) throws -> Bool {
        try TestSupport.eventually { condition(try call(f, "search.text", json)) }
    }

    @Test func aRussianNameFindsThePlaceInRussianAndInEnglishAndHitsAreNamedInLang() throws {
        let f = try SearchFixture()
        try emitOpera(f, names: #"{"en":"Sydney Opera House","ru":"Сиднейский оперный театр","de":"Opernhaus Sydney"}"#)
        _ = try f.place(4, name: "Opera Bar", lat: -33.8572, lon: 151.2142)
        #expect(try eventually(f, #"{"q":"opera"}"#) { $0.hits.count == 2 })

        // Russian words, Russian asked: the Russian name, from ru.
        let ru = try call(f, "search.text", #"{"q":"оперный театр","lang":"ru-RU,ru;q=0.9"}"#)
        #expect(ru.hits.map(\.name) == ["Сиднейский оперный театр"] && ru.hits.first?.lang == TextLanguages(name: "ru"))
        // Russian words, English asked: found all the same, named in English.
        let en = try call(f, "search.text", #"{"q":"оперный","lang":"en"}"#)
        #expect(en.hits.map(\.entityId) == [3] && en.hits.first?.name == "Sydney Opera House" && en.hits.first?.lang == TextLanguages(name: "en"))
        // English words, German asked; a place with no names by language keeps its own, saying so.
        let de = try call(f, "search.text", #"{"q":"opera","lang":"de-AT"}"#)
        #expect(Set(de.hits.map(\.name)) == ["Opernhaus Sydney", "Opera Bar"])
        #expect(de.hits.first { $0.entityId == 4 }?.lang == TextLanguages())
        // An unknown language falls back to English; without lang the reply has no lang.
        #expect(try call(f, "search.text", #"{"q":"оперный","lang":"tlh"}"#).hits.first?.name == "Sydney Opera House")
        let plain = try call(f, "search.text", #"{"q":"оперный"}"#)
        #expect(plain.hits.first?.name == "Sydney Opera House" && plain.hits.first?.lang == nil)
    }

    @Test func mapSearchesAndAutocompleteAnswerInLang() throws {
        let f = try SearchFixture()
        try emitOpera(f, names: #"{"en":"Sydney Opera House","ru":"Сиднейский оперный театр"}"#)
        #expect(try eventually(f, #"{"q":"opera"}"#) { $0.hits.count == 1 })
        let point = #""near":{"lat":-33.857,"lon":151.215},"radius_m":1000"#
        // Nearest first (which memory answers without lang), and the other sorts.
        for sort in ["distance", "popularity", "rating"] {
            let page = try call(f, "search.nearby", #"{\#(point),"sort":"\#(sort)","lang":"ru"}"#)
            #expect(page.hits.map(\.name) == ["Сиднейский оперный театр"] && page.hits.first?.lang?.name == "ru", "\(sort)")
            #expect(page.hits.first?.distanceM != nil, "\(sort)")
        }
        let memory = try call(f, "search.nearby", #"{\#(point)}"#)
        #expect(memory.hits.map(\.name) == ["Sydney Opera House"] && memory.hits.first?.lang == nil)
        let box = #""bbox":{"south":-34,"west":151,"north":-33.5,"east":151.5}"#
        for sort in ["popularity", "rating"] {
            let page = try call(f, "search.viewport", #"{\#(box),"sort":"\#(sort)","lang":"ru"}"#)
            #expect(page.hits.map(\.name) == ["Сиднейский оперный театр"], "\(sort)")
        }
        // Autocomplete: what was typed is shown in the name it matched, the one in lang first.
        let typedRussian = try call(f, "search.autocomplete", #"{"prefix":"сидн","lang":"en"}"#, as: Suggestions.self)
        #expect(typedRussian.suggestions.map(\.text) == ["Сиднейский оперный театр"] && typedRussian.suggestions.first?.lang == TextLanguages(name: "ru"))
        #expect(typedRussian.suggestions.first?.highlights == [[0, 4]])
        let typedEnglish = try call(f, "search.autocomplete", #"{"prefix":"sydney op","lang":"ru"}"#, as: Suggestions.self)
        #expect(typedEnglish.suggestions.map(\.text) == ["Sydney Opera House"] && typedEnglish.suggestions.first?.lang == TextLanguages(name: "en"))
        let inRussian = try call(f, "search.autocomplete", #"{"prefix":"opera","lang":"ru"}"#, as: Suggestions.self)
        #expect(inRussian.suggestions.map(\.text) == ["Sydney Opera House"])
    }

    @Test func aMalformedLangIsRefusedOnEveryMethod() throws {
        let f = try SearchFixture()
        let bodies = [("search.text", #""q":"opera""#), ("search.nearby", #""near":{"lat":-33.857,"lon":151.215},"radius_m":1000"#),
                      ("search.viewport", #""bbox":{"south":-34,"west":151,"north":-33.5,"east":151.5}"#), ("search.autocomplete", #""prefix":"op""#)]
        let long = String(repeating: "en-GB,", count: 43) + "en"
        for (type, body) in bodies {
            for bad in ["ru_RU", "", "ru;q=1.5", long] {
                var refused: ServiceError?
                do {
                    _ = try #require(f.searchClient).request(type: type, body: Data(#"{\#(body),"lang":"\#(bad)"}"#.utf8))
                } catch let error as ServiceError {
                    refused = error
                }
                #expect(refused?.code == .invalidArgument && refused?.field == "lang", "\(type) \(bad)")
            }
        }
    }
}
