import Contracts
import Bus
import Foundation
@testable import SearchService
import ServiceKit
import Storage
import Testing

/// An index of a few named places for text tests.
func namedIndex() throws -> TestIndex {
    let index = try TestIndex()
    let places: [(String, String, Double, Double, String?)] = [
        ("Sant Julià de Lòria", "attraction", 42.46, 1.49, "A parish of Andorra"),
        ("Café Sydney", "cafe", -33.8617, 151.2107, "Rooftop at Customs House"),
        ("Cafe Sydney Express", "cafe", -33.87, 151.20, nil),
        ("Государственный Эрмитаж", "museum", 59.9398, 30.3146, "Hermitage Museum"),
        ("东京塔", "attraction", 35.6586, 139.7454, "Tokyo Tower"),
        ("Museum of Contemporary Art", "museum", -33.8599, 151.2090, nil),
        ("Harbour Bridge Climb", "attraction", -33.8523, 151.2108, "Climb the \"Coathanger\""),
        ("Royal Botanic Garden", "park", -33.8642, 151.2166, nil),
        ("Opera Bar", "bar", -33.8572, 151.2142, nil),
        ("Sydney Opera House", "attraction", -33.8568, 151.2153, "Performing arts centre"),
    ]
    try index.db.transaction {
        for (i, (name, category, lat, lon, description)) in places.enumerated() {
            let place = IndexedPlace(id: Int64(i + 1), name: name, category: category, lat: lat, lon: lon, address: nil,
                                     priceLevel: nil, popularity: Double(i), openingHours: nil, description: description)
            try SearchIndex.upsert(place, index.db)
            index.places.append(place)
        }
    }
    return index
}

func textQuery(_ json: String) throws -> TextQuery { try JSONDecoder().decode(TextQuery.self, from: Data(json.utf8)) }

/// Text searches with every match ranked (the default), or as when the words match too many
/// places to rank them all (nearest or most popular first).
let everyRoad = [3_000, 0]

func texts(_ index: TestIndex, _ allMatchesUpTo: Int) -> TextQueries {
    var queries = TextQueries(db: index.db)
    queries.allMatchesUpTo = allMatchesUpTo
    return queries
}

func names(_ index: TestIndex, _ json: String, _ allMatchesUpTo: Int = 3_000) throws -> [String] {
    try texts(index, allMatchesUpTo).search(try textQuery(json)).hits.map(\.name)
}

@Suite struct TextQueryTests {
    @Test(arguments: everyRoad) func caseAndDiacriticsDoNotMatter(road: Int) throws {
        let index = try namedIndex()
        #expect(try names(index, #"{"q":"Sant Julia"}"#, road) == ["Sant Julià de Lòria"])
        #expect(Set(try names(index, #"{"q":"cafe"}"#, road)) == ["Café Sydney", "Cafe Sydney Express"])
        #expect(Set(try names(index, #"{"q":"CAFÉ SYDNEY"}"#, road)) == ["Café Sydney", "Cafe Sydney Express"])
    }

    @Test(arguments: everyRoad) func cyrillicAndCJKNamesAreFindable(road: Int) throws {
        let index = try namedIndex()
        #expect(try names(index, #"{"q":"эрмитаж"}"#, road) == ["Государственный Эрмитаж"])
        #expect(try names(index, #"{"q":"东京塔"}"#, road) == ["东京塔"])
        #expect(try names(index, #"{"q":"东京"}"#, road) == ["东京塔"])  // prefix of the last word
    }

    @Test(arguments: everyRoad) func theLastWordIsAPrefix(road: Int) throws {
        let index = try namedIndex()
        #expect(try names(index, #"{"q":"opera ho"}"#, road) == ["Sydney Opera House"])
        #expect(try names(index, #"{"q":"botan"}"#, road) == ["Royal Botanic Garden"])
        // A space after the last word means the word is complete.
        #expect(try names(index, #"{"q":"botan "}"#, road).isEmpty)
    }

    @Test(arguments: everyRoad) func typosAreForgivenByWordLength(road: Int) throws {
        let index = try namedIndex()
        #expect(try names(index, #"{"q":"musuem"}"#, road).contains("Museum of Contemporary Art"))  // transposition, 6 letters
        #expect(try names(index, #"{"q":"harbor bridge"}"#, road) == ["Harbour Bridge Climb"])      // one letter missing
        #expect(try names(index, #"{"q":"contmprary"}"#, road) == ["Museum of Contemporary Art"])   // 2 typos, 10 letters
        #expect(try names(index, #"{"q":"bar "}"#, road) == ["Opera Bar"])
        #expect(try names(index, #"{"q":"bxr "}"#, road).isEmpty)                                   // 3 letters: no typo allowed
        #expect(try names(index, #"{"q":"opexa "}"#, road).count == 2)                              // 5 letters: one typo
        #expect(try names(index, #"{"q":"opxxa "}"#, road).isEmpty)                                 // two typos in 5 letters: no
    }

    @Test func aWordNoPlaceHasAnyMoreIsForgivenLikeAnyTypo() throws {
        let index = try TestIndex()
        let place = IndexedPlace(id: 1, name: "Pizzaria Roma", category: "restaurant", lat: 0, lon: 0)
        try SearchIndex.upsert(place, index.db)
        var renamed = place
        renamed.name = "Pizzeria Roma"
        try SearchIndex.upsert(renamed, index.db)
        #expect(try names(index, #"{"q":"pizzaria "}"#) == ["Pizzeria Roma"])
    }

    @Test(arguments: everyRoad) func hostileInputIsPlainText(road: Int) throws {
        let index = try namedIndex()
        for q in ["\"opera", "NEAR(opera", "opera*", "-opera", "name:opera", "((opera", "opera)", "\"opera\" OR 1=1", "^opera", "{name}: x"] {
            let json = String(decoding: try JSONEncoder().encode(["q": q]), as: UTF8.self)
            _ = try names(index, json, road)  // never an FTS5 syntax error
        }
        // Syntax characters are plain separators: "NEAR(opera" is the words "near" and "opera" (no place has both),
        // "opera*" is just "opera".
        #expect(try names(index, String(decoding: try JSONEncoder().encode(["q": "NEAR(opera"]), as: UTF8.self), road).isEmpty)
        #expect(try names(index, String(decoding: try JSONEncoder().encode(["q": "opera*"]), as: UTF8.self), road).count == 2)
        for (q, field) in [("", "q"), ("*-:\"()", "q"), (String(repeating: "a", count: 10_000), "q")] {
            do {
                _ = try names(index, String(decoding: try JSONEncoder().encode(["q": q]), as: UTF8.self), road)
                Issue.record("accepted \(q.prefix(20))")
            } catch let error as ServiceError {
                #expect(error.code == .invalidArgument && error.field == field)
            }
        }
    }

    @Test(arguments: everyRoad) func nearRadiusBoxFiltersAndSorts(road: Int) throws {
        let index = try namedIndex()
        let near = try texts(index, road).search(try textQuery(#"{"q":"opera","near":{"lat":-33.8572,"lon":151.2142},"sort":"distance"}"#))
        #expect(near.hits.map(\.name) == ["Opera Bar", "Sydney Opera House"])
        #expect(near.hits.first?.distanceM == 0)
        #expect(try names(index, #"{"q":"sydney","near":{"lat":-33.8617,"lon":151.2107},"radius_m":100}"#, road) == ["Café Sydney"])
        #expect(try names(index, #"{"q":"attraction","bbox":{"south":30,"west":130,"north":40,"east":140}}"#, road) == ["东京塔"])
        #expect(try names(index, #"{"q":"sydney","categories":["attraction"]}"#, road) == ["Sydney Opera House"])
        #expect(try names(index, #"{"q":"sydney","categories":["attraction"],"lang":"pt-BR"}"#, road) == ["Sydney Opera House"])
        for (json, field) in [(#"{"q":"x","radius_m":100}"#, "radius_m"), (#"{"q":"x","sort":"distance"}"#, "sort"),
                              (#"{"q":"x","sort":"best"}"#, "sort"), (#"{"q":"x","near":{"lat":99,"lon":0}}"#, "lat"),
                              (#"{"q":"x","lang":"english!"}"#, "lang"), (#"{"q":"x","lang":""}"#, "lang")] {
            do {
                _ = try texts(index, road).search(try textQuery(json))
                Issue.record("accepted \(json)")
            } catch let error as ServiceError {
                #expect(error.field == field, "\(json): \(error)")
            } catch let error as ServiceErrorConvertible {
                // A point out of range is Geo's error, which the request server answers as this.
                #expect(error.serviceError.field == field, "\(json): \(error)")
            }
        }
    }

    @Test(arguments: everyRoad) func autocompleteWithHighlights(road: Int) throws {
        let index = try namedIndex()
        let q = texts(index, road)
        let opera = try q.autocomplete(AutocompleteQuery(prefix: "oper", near: Point(lat: -33.8572, lon: 151.2142), limit: 5))
        #expect(opera.suggestions.map(\.text) == ["Opera Bar", "Sydney Opera House"])
        #expect(opera.suggestions.map(\.highlights) == [[[0, 4]], [[7, 11]]])
        let mus = try q.autocomplete(AutocompleteQuery(prefix: "Mus", near: nil, limit: 5))
        #expect(mus.suggestions.first == Suggestion(kind: "category", text: "museum", id: nil, category: nil, distanceM: nil, highlights: [[0, 3]]))
        #expect(mus.suggestions.contains { $0.text == "Museum of Contemporary Art" && $0.highlights == [[0, 3]] })
        let julia = try q.autocomplete(AutocompleteQuery(prefix: "sant juli", near: nil, limit: 5))
        #expect(julia.suggestions.first?.highlights == [[0, 4], [5, 9]])
        #expect(try q.autocomplete(AutocompleteQuery(prefix: "\"(", near: nil, limit: 5)).suggestions.isEmpty)
    }

    @Test func editDistance() {
        func d(_ a: String, _ b: String) -> Int { TextQueries.editDistance(Array(a), Array(b), limit: 5) }
        #expect(d("museum", "musuem") == 1 && d("harbor", "harbour") == 1 && d("kitten", "sitting") == 3 && d("", "abc") == 3 && d("same", "same") == 0)
    }
}
