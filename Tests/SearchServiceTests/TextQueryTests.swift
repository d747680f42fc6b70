import Bus
import Foundation
@testable import SearchService
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

func names(_ index: TestIndex, _ json: String) throws -> [String] {
    try TextQueries(db: index.db).search(try textQuery(json)).hits.map(\.name)
}

@Suite struct TextQueryTests {
    @Test func caseAndDiacriticsDoNotMatter() throws {
        let index = try namedIndex()
        #expect(try names(index, #"{"q":"Sant Julia"}"#) == ["Sant Julià de Lòria"])
        #expect(Set(try names(index, #"{"q":"cafe"}"#)) == ["Café Sydney", "Cafe Sydney Express"])
        #expect(Set(try names(index, #"{"q":"CAFÉ SYDNEY"}"#)) == ["Café Sydney", "Cafe Sydney Express"])
    }

    @Test func cyrillicAndCJKNamesAreFindable() throws {
        let index = try namedIndex()
        #expect(try names(index, #"{"q":"эрмитаж"}"#) == ["Государственный Эрмитаж"])
        #expect(try names(index, #"{"q":"东京塔"}"#) == ["东京塔"])
        #expect(try names(index, #"{"q":"东京"}"#) == ["东京塔"])  // prefix of the last word
    }

    @Test func theLastWordIsAPrefix() throws {
        let index = try namedIndex()
        #expect(try names(index, #"{"q":"opera ho"}"#) == ["Sydney Opera House"])
        #expect(try names(index, #"{"q":"botan"}"#) == ["Royal Botanic Garden"])
        // A space after the last word means the word is complete.
        #expect(try names(index, #"{"q":"botan "}"#).isEmpty)
    }

    @Test func typosAreForgivenByWordLength() throws {
        let index = try namedIndex()
        #expect(try names(index, #"{"q":"musuem"}"#).contains("Museum of Contemporary Art"))  // transposition, 6 letters
        #expect(try names(index, #"{"q":"harbor bridge"}"#) == ["Harbour Bridge Climb"])      // one letter missing
        #expect(try names(index, #"{"q":"contmprary"}"#) == ["Museum of Contemporary Art"])   // 2 typos, 10 letters
        #expect(try names(index, #"{"q":"bar "}"#) == ["Opera Bar"])
        #expect(try names(index, #"{"q":"bxr "}"#).isEmpty)                                   // 3 letters: no typo allowed
        #expect(try names(index, #"{"q":"opexa "}"#).count == 2)                              // 5 letters: one typo
        #expect(try names(index, #"{"q":"opxxa "}"#).isEmpty)                                 // two typos in 5 letters: no
    }

    @Test func hostileInputIsPlainText() throws {
        let index = try namedIndex()
        for q in ["\"opera", "NEAR(opera", "opera*", "-opera", "name:opera", "((opera", "opera)", "\"opera\" OR 1=1", "^opera", "{name}: x"] {
            let json = String(decoding: try JSONEncoder().encode(["q": q]), as: UTF8.self)
            _ = try names(index, json)  // never an FTS5 syntax error
        }
        // Syntax characters are plain separators: "NEAR(opera" is the words "near" and "opera" (no place has both),
        // "opera*" is just "opera".
        #expect(try names(index, String(decoding: try JSONEncoder().encode(["q": "NEAR(opera"]), as: UTF8.self)).isEmpty)
        #expect(try names(index, String(decoding: try JSONEncoder().encode(["q": "opera*"]), as: UTF8.self)).count == 2)
        for (q, field) in [("", "q"), ("*-:\"()", "q"), (String(repeating: "a", count: 10_000), "q")] {
            do {
                _ = try names(index, String(decoding: try JSONEncoder().encode(["q": q]), as: UTF8.self))
                Issue.record("accepted \(q.prefix(20))")
            } catch let error as ServiceError {
                #expect(error.code == .invalidArgument && error.field == field)
            }
        }
    }

    @Test func nearRadiusBoxFiltersAndSorts() throws {
        let index = try namedIndex()
        let near = try TextQueries(db: index.db).search(try textQuery(#"{"q":"opera","near":{"lat":-33.8572,"lon":151.2142},"sort":"distance"}"#))
        #expect(near.hits.map(\.name) == ["Opera Bar", "Sydney Opera House"])
        #expect(near.hits.first?.distanceM == 0)
        #expect(try names(index, #"{"q":"sydney","near":{"lat":-33.8617,"lon":151.2107},"radius_m":100}"#) == ["Café Sydney"])
        #expect(try names(index, #"{"q":"attraction","bbox":{"south":30,"west":130,"north":40,"east":140}}"#) == ["东京塔"])
        #expect(try names(index, #"{"q":"sydney","categories":["attraction"]}"#) == ["Sydney Opera House"])
        for (json, field) in [(#"{"q":"x","radius_m":100}"#, "radius_m"), (#"{"q":"x","sort":"distance"}"#, "sort"),
                              (#"{"q":"x","sort":"best"}"#, "sort"), (#"{"q":"x","near":{"lat":99,"lon":0}}"#, "lat")] {
            do {
                _ = try TextQueries(db: index.db).search(try textQuery(json))
                Issue.record("accepted \(json)")
            } catch let error as ServiceError {
                #expect(error.field == field, "\(json): \(error)")
            }
        }
    }

    @Test func autocompleteWithHighlights() throws {
        let index = try namedIndex()
        let q = TextQueries(db: index.db)
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
