import Contracts
import Bus
import Foundation
import Geo
@testable import SearchService
import ServiceKit
import Storage
import Testing
import TestSupport

/// When the words match more places than `allMatchesUpTo`, a text search ranks the
/// `widerCandidates` matches nearest its point, or without a point the most popular ones:
/// checked against brute force on an index where every search takes that road.
@Suite struct TextCandidateTests {
    static let vocabulary = ["alpha", "bravo", "charlie", "delta", "echo"]

    /// Places around Sydney and by the 180th meridian, named with two words of the vocabulary.
    func index(_ rng: inout SplitMix64) throws -> TestIndex {
        let index = try TestIndex()
        try index.db.transaction {
            for i in 1...1_500 {
                let centre = i % 3 == 0 ? (-16.0, 179.99) : (-33.87, 151.21)
                let lat = centre.0 + Double.random(in: -0.2...0.2, using: &rng) * Double.random(in: 0...1, using: &rng)
                var lon = centre.1 + Double.random(in: -0.2...0.2, using: &rng) * Double.random(in: 0...1, using: &rng)
                if lon > 180 { lon -= 360 }
                let name = "\(TextCandidateTests.vocabulary.randomElement(using: &rng)!) \(TextCandidateTests.vocabulary.randomElement(using: &rng)!)"
                let place = IndexedPlace(id: Int64(i), name: name, category: i % 2 == 0 ? "cafe" : "bar", lat: lat, lon: lon,
                                         address: nil, priceLevel: nil, popularity: Double(Int.random(in: 0...40, using: &rng)) / 4,
                                         openingHours: nil)
                // Counts from favorites for two places in five, before the place is indexed or after.
                let saves = Int.random(in: 0...200, using: &rng), visits = Int.random(in: 0...50, using: &rng)
                if i % 5 == 0 { try index.count(Int64(i), saves: saves, visits: visits) }
                try SearchIndex.upsert(place, index.db)
                index.places.append(place)
                if i % 5 == 1 { try index.count(Int64(i), saves: saves, visits: visits) }
            }
        }
        return index
    }

    /// Every page of a text search, in order.
    func allPages(_ index: TestIndex, _ json: String) throws -> [SearchHit] {
        var queries = TextQueries(db: index.db)
        queries.allMatchesUpTo = 0
        var hits: [SearchHit] = []
        var cursor: String?
        for _ in 0..<100 {
            let body = cursor.map { String(json.dropLast()) + #","cursor":"\#($0)"}"# } ?? json
            let page = try queries.search(try textQuery(body))
            hits += page.hits
            guard let next = page.nextCursor else { break }
            cursor = next
        }
        return hits
    }

    func hasWord(_ place: IndexedPlace, _ word: String) -> Bool { place.name.split(separator: " ").contains { $0 == word } }

    @Test func theNearestMatchesAroundAPoint() throws {
        var rng = SplitMix64(seed: 11)
        let index = try index(&rng)
        for (lat, lon) in [(-33.87, 151.21), (-16.0, 179.999), (-16.0, -179.999), (-33.95, 151.1)] {
            for (word, radius) in [("bravo", 3_000.0), ("delta", 50_000), ("echo", 100)] {
                let centre = try Coordinate(latitude: lat, longitude: lon)
                struct Expected { var id: Int64; var d: Double }
                let matching: [Expected] = index.places.filter { hasWord($0, word) }.map { place in
                    Expected(id: place.id, d: Coordinate(uncheckedLatitude: place.lat, longitude: place.lon).distance(to: centre))
                }
                let expected = matching.filter { $0.d <= radius }
                    .sorted { (a: Expected, b: Expected) -> Bool in a.d != b.d ? a.d < b.d : a.id < b.id }
                    .prefix(TextQueries.widerCandidates)
                let got = try allPages(index, #"{"q":"\#(word) ","near":{"lat":\#(lat),"lon":\#(lon)},"radius_m":\#(radius),"sort":"distance","limit":17}"#)
                #expect(got.map(\.id) == expected.map { (e: Expected) in e.id }, "\(word) near \(lat),\(lon) within \(radius)")
                #expect(zip(got, expected).allSatisfy { (hit: SearchHit, e: Expected) in abs((hit.distanceM ?? -1) - e.d) < 1e-6 })
            }
        }
    }

    @Test func theMostPopularMatchesWithoutAPoint() throws {
        var rng = SplitMix64(seed: 12)
        let index = try index(&rng)
        let box = try BoundingBox(south: -16.2, west: 179.9, north: -15.9, east: -179.9)
        for (word, bbox) in [("charlie", nil), ("alpha", box)] {
            let expected = index.places
                .filter { hasWord($0, word) && (bbox?.contains(Coordinate(uncheckedLatitude: $0.lat, longitude: $0.lon)) ?? true) }
                .sorted { index.ranked($0) != index.ranked($1) ? index.ranked($0) > index.ranked($1) : $0.id < $1.id }
                .prefix(TextQueries.widerCandidates)
            let area = bbox.map { #","bbox":{"south":\#($0.south),"west":\#($0.west),"north":\#($0.north),"east":\#($0.east)}"# } ?? ""
            let got = try allPages(index, #"{"q":"\#(word) ","sort":"popularity","limit":13\#(area)}"#)
            #expect(got.map(\.id) == expected.map(\.id), "\(word) in \(String(describing: bbox))")
        }
    }

    @Test func filtersApplyBeforeTheCandidatesAreCounted() throws {
        var rng = SplitMix64(seed: 13)
        let index = try index(&rng)
        let got = try allPages(index, #"{"q":"echo ","categories":["cafe"],"near":{"lat":-33.87,"lon":151.21},"sort":"distance","limit":50}"#)
        let expected = index.places.filter { hasWord($0, "echo") && $0.category == "cafe" }
        #expect(got.count == min(expected.count, TextQueries.widerCandidates) && got.allSatisfy { $0.category == "cafe" })
    }

    /// A word that matches thousands of places, none of them among the many more popular
    /// places, nor near the point: the search reads no more than its budgets, and still
    /// answers the place the guarantee names first.
    @Test func aPathologicalQueryStaysWithinItsBudget() throws {
        let index = try TestIndex()
        try index.db.transaction {
            for i in 1...5_000 {
                // 2,000 popular museums around Sydney; 3,000 "san" places around Madrid, unknown
                // popularity (0) but for one, the most popular of all.
                let museum = i <= 2_000, star = i == 4_999
                let place = IndexedPlace(id: Int64(i), name: star ? "San Mateo" : museum ? "Museum \(i)" : "San \(i)",
                                         category: "attraction", lat: museum ? -33.87 + Double(i) * 1e-5 : 40.4 + Double(i) * 1e-5,
                                         lon: museum ? 151.21 : -3.7, popularity: star ? 20 : museum ? 10 : 0)
                try SearchIndex.upsert(place, index.db)
            }
        }
        var queries = TextQueries(db: index.db)
        // Enough for the walk down to the nearest of 3,000 places on a line, not for the 2,000 museums.
        (queries.allMatchesUpTo, queries.readBudget) = (100, 400)
        for json in [#"{"q":"san"}"#, #"{"q":"san","near":{"lat":-33.87,"lon":151.21}}"#] {
            let tally = TextQueries.Tally()
            queries.tally = tally
            let page = try queries.search(try textQuery(json))
            #expect(tally.matches <= queries.allMatchesUpTo + 1, "\(json)")
            #expect(tally.probed <= queries.readBudget + queries.allMatchesUpTo, "\(json)")
            if json.contains("near") {
                // Sydney's museums are not read: the 50 "san" places nearest Sydney are, and ranked.
                let sydney = try Coordinate(latitude: -33.87, longitude: 151.21)
                struct Match { var id: Int64; var d: Double; var value: Double }
                let all: [Match] = (2_001...5_000).map { i in
                    let d = Coordinate(uncheckedLatitude: 40.4 + Double(i) * 1e-5, longitude: -3.7).distance(to: sydney)
                    return Match(id: Int64(i), d: d, value: 3 * (1 + 0.1 * log1p(i == 4_999 ? 20 : 0)) / (1 + d / 1_000))
                }
                let nearest = all.sorted { (a: Match, b: Match) -> Bool in a.d != b.d ? a.d < b.d : a.id < b.id }.prefix(TextQueries.widerCandidates)
                let ranked: [Int64] = nearest.sorted { (a: Match, b: Match) -> Bool in a.value != b.value ? a.value > b.value : a.id < b.id }
                    .prefix(20).map(\.id)
                #expect(page.hits.map(\.id) == ranked, "\(json)")
            } else {
                // The most popular place of all matches; the other matches tie at popularity 0, by id.
                #expect(page.hits.map(\.id) == [4_999] + Array(2_001...2_019), "\(json)")
            }
        }
    }

    /// A word of 12,000 places, none within 2,000 km of the point, and 3,000 places around the
    /// point that do not match (more than the budget reads): the search reads only places of the
    /// word, outward from the point, and answers the nearest of them, as ranking every match
    /// does, within its budgets. Also where the nearest 40 share one point (more than a cell of
    /// the walk is read whole with), and with a filter that turns away all but a few matches.
    @Test func aWordFarFromThePointIsReadWhereItIsWithinTheBudget() throws {
        var rng = SplitMix64(seed: 14)
        let sydney = try Coordinate(latitude: -33.87, longitude: 151.21)
        let index = try TestIndex()
        var spots: [(lat: Double, lon: Double)] = []
        while spots.count < 12_000 {
            let spot = (lat: Double.random(in: -80...80, using: &rng), lon: Double.random(in: -180...180, using: &rng))
            if Coordinate(uncheckedLatitude: spot.lat, longitude: spot.lon).distance(to: sydney) > 2_000_000 { spots.append(spot) }
        }
        // The 40 places nearest Sydney of all: one point, 1,850 km west, by ids spread among the rest.
        let shared = (lat: -33.87, lon: 151.21 - 20)
        var sharedIds = Set<Int64>()
        while sharedIds.count < 40 { sharedIds.insert(Int64.random(in: 1...12_000, using: &rng)) }
        // Ten of them cafés, every other place a bar.
        let cafes = Set(sharedIds.sorted().prefix(10))
        try index.db.transaction {
            for (i, spot) in spots.enumerated() {
                let id = Int64(i + 1)
                let at = sharedIds.contains(id) ? shared : spot
                let place = IndexedPlace(id: id, name: "San \(id)", category: cafes.contains(id) ? "cafe" : "bar", lat: at.lat, lon: at.lon)
                try SearchIndex.upsert(place, index.db)
                index.places.append(place)
            }
            for i in 1...3_000 {
                try SearchIndex.upsert(IndexedPlace(id: Int64(20_000 + i), name: "Museum \(i)", category: "museum",
                                                    lat: -33.87 + Double(i % 60) * 1e-3, lon: 151.21 + Double(i / 60) * 1e-3), index.db)
            }
        }
        var queries = TextQueries(db: index.db)
        #expect(queries.allMatchesUpTo == 3_000 && queries.readBudget == 2_000)
        for (json, category) in [(#"{"q":"san","near":{"lat":-33.87,"lon":151.21},"sort":"distance","limit":50}"#, nil),
                                 (#"{"q":"san","near":{"lat":-33.87,"lon":151.21},"limit":50}"#, nil),
                                 (#"{"q":"san","near":{"lat":-33.87,"lon":151.21},"categories":["cafe"],"sort":"distance"}"#, "cafe")] {
            let tally = TextQueries.Tally()
            queries.tally = tally
            let got = try queries.search(try textQuery(json)).hits
            #expect(tally.matches <= queries.allMatchesUpTo + 1, "\(json)")
            #expect(tally.probed <= queries.readBudget + TextQueries.fallbackMatches, "\(json): \(tally.probed) probed")
            struct Match { var id: Int64; var d: Double }
            let nearest = index.places.filter { category == nil || $0.category == category }
                .map { Match(id: $0.id, d: Coordinate(uncheckedLatitude: $0.lat, longitude: $0.lon).distance(to: sydney)) }
                .sorted { (a: Match, b: Match) -> Bool in a.d != b.d ? a.d < b.d : a.id < b.id }
            if category == nil {
                // Popularity ties at 0: relevance orders by distance too.
                #expect(got.map(\.id) == nearest.prefix(50).map(\.id), "\(json)")
                #expect(Set(got.prefix(40).map(\.id)) == sharedIds, "\(json)")
            } else {
                // Too few cafés for the budget: it runs out after finding the nearest ones, all ten.
                #expect(got.map(\.id) == nearest.map(\.id), "\(json)")
                #expect(got.count == 10, "\(json)")
            }
        }
    }

    /// Without a point, a filter that turns away the most popular matches does not make the
    /// search read on down the popularity index: the places it turns away count against the
    /// budget, and the first matches by id are ranked instead (Protocols/search.md, *Candidates*).
    @Test func aFilterThatTurnsAwayThePopularMatchesEndsTheReading() throws {
        let index = try TestIndex()
        try index.db.transaction {
            for i in 1...3_000 {
                try SearchIndex.upsert(IndexedPlace(id: Int64(1_000 + i), name: "San Bar \(i)", category: "bar", lat: 40.4 + Double(i) * 1e-4,
                                                    lon: -3.7, popularity: 10), index.db)
            }
            // Five cafés with the lowest ids, less popular than one with a high id.
            for (id, popularity) in [(1, 1.0), (2, 1), (3, 1), (4, 1), (5, 1), (5_000, 5)] {
                try SearchIndex.upsert(IndexedPlace(id: Int64(id), name: "San Café", category: "cafe", lat: 41, lon: -3.7, popularity: popularity), index.db)
            }
        }
        var queries = TextQueries(db: index.db)
        (queries.allMatchesUpTo, queries.readBudget) = (100, 200)
        let tally = TextQueries.Tally()
        queries.tally = tally
        let got = try queries.search(try textQuery(#"{"q":"san","categories":["cafe"],"sort":"popularity"}"#)).hits.map(\.id)
        #expect(got == [1, 2, 3, 4, 5])
        #expect(tally.probed <= queries.readBudget + queries.allMatchesUpTo)
        // Within the budget, the same filter finds the most popular café first.
        queries.readBudget = 3_500
        #expect(try queries.search(try textQuery(#"{"q":"san","categories":["cafe"],"sort":"popularity"}"#)).hits.map(\.id) == [5_000, 1, 2, 3, 4, 5])
    }

    /// The index of words by place follows a place's renames, moves and deletion: a search
    /// near a point that reads it finds the place where it is now, by the words it has now.
    @Test func theWordIndexFollowsRenamesMovesAndDeletes() throws {
        let index = try TestIndex()
        try index.db.transaction {
            for i in 1...200 {
                try SearchIndex.upsert(IndexedPlace(id: Int64(i), name: "Harbour \(i)", category: "bar", lat: 10 + Double(i) * 1e-3, lon: 20), index.db)
            }
        }
        var queries = TextQueries(db: index.db)
        (queries.allMatchesUpTo, queries.readBudget) = (50, 100)
        func first(_ q: String) throws -> Int64? {
            try queries.search(try textQuery(#"{"q":"\#(q)","near":{"lat":-40,"lon":20},"sort":"distance"}"#)).hits.first?.id
        }
        func rows(_ id: Int64) throws -> Int64? {
            try index.db.scalarInt("SELECT count(*) FROM place_terms WHERE id = ?", id)
        }
        #expect(try first("harbour") == 1)
        // "Harbour Lights": harbour, lights, h*, ha*, har*, l*, li*, lig*; the category's bar, b*, ba*, bar*.
        try index.db.transaction { try SearchIndex.upsert(IndexedPlace(id: 150, name: "Harbour Lights", category: "bar", lat: -39, lon: 20), index.db) }
        #expect(try first("harbour") == 150)
        #expect(try rows(150) == 12)
        try index.db.transaction { try SearchIndex.upsert(IndexedPlace(id: 150, name: "Quay", category: "bar", lat: -39, lon: 20), index.db) }
        #expect(try first("harbour") == 1)
        try index.db.transaction { try SearchIndex.upsert(IndexedPlace(id: 150, name: "Harbour Quay", category: "bar", lat: -39, lon: 20), index.db) }
        #expect(try first("harbour") == 150 && first("quay") == 150)
        // Moved back north, past the other harbours: found where it is now only.
        try index.db.transaction { try SearchIndex.upsert(IndexedPlace(id: 150, name: "Harbour Quay", category: "bar", lat: 11, lon: 20), index.db) }
        #expect(try first("harbour") == 1 && first("quay") == 150)
        #expect(try rows(150) == 12)
        #expect(try index.db.scalarInt("SELECT count(*) FROM place_terms WHERE id = 150 AND cell = ?", PlaceTerms.cell(lat: 11, lon: 20)) == 12)
        try index.db.transaction { try SearchIndex.delete(150, index.db) }
        #expect(try first("harbour") == 1)
        #expect(try rows(150) == 0)
    }

    /// Near spellings are looked for only while the words before match some place together:
    /// past that the query matches nothing whatever the spellings, and the answer is the same.
    @Test func misspelledWordsAfterAnImpossiblePairAreNotSpelledOut() throws {
        let index = try TestIndex()
        try index.db.transaction {
            for (id, name) in [(1, "Alpha Bravo Charlie"), (2, "Alpha Delta"), (3, "Bravo Foxtrot"), (4, "Charlie Delta")] {
                try SearchIndex.upsert(IndexedPlace(id: Int64(id), name: name, category: "bar", lat: 1, lon: 2), index.db)
            }
        }
        let queries = TextQueries(db: index.db)
        // Every misspelled word of "alpah bravvo charlei" has a near spelling, and place 1 has them all.
        let found = try queries.queryWords(["alpah", "bravvo", "charlei"], prefixLast: false)
        #expect(found.map(\.spellings) == [["alpha"], ["bravo"], ["charlie"]])
        #expect(try queries.search(try textQuery(#"{"q":"alpah bravvo charlei "}"#)).hits.map(\.id) == [1])
        // No place has both foxtrot and delta: charlie is not looked for, and nothing is found.
        let none = try queries.queryWords(["foxtort", "dleta", "charlei"], prefixLast: false)
        #expect(none.map(\.spellings) == [["foxtrot"], ["delta"], []])
        #expect(try queries.search(try textQuery(#"{"q":"foxtort dleta charlei "}"#)).hits.isEmpty)
    }

    /// More matches than are all ranked, most of them nearer (or more popular) but matching only
    /// in their address; the one place with the word in its name ranks first all the same, and
    /// the page is the one ranking every match gives.
    @Test func aNameMatchIsNotCrowdedOutByNearerAddressMatches() throws {
        let index = try TestIndex()
        try index.db.transaction {
            for i in 1...300 {
                // 3 to 4 km east of the Opera House's point, and more popular.
                let place = IndexedPlace(id: Int64(i), name: "Shop \(i)", category: "shop", lat: -33.87,
                                         lon: 151.21 + 0.0325 + Double(i) * 0.0108 / 300, address: "Opera Lane",
                                         popularity: 10)
                try SearchIndex.upsert(place, index.db)
            }
            try SearchIndex.upsert(IndexedPlace(id: 301, name: "Opera House", category: "attraction", lat: -33.87,
                                                lon: 151.21 + 0.0487, popularity: 1), index.db)
        }
        var exact = TextQueries(db: index.db)
        exact.allMatchesUpTo = 3_000
        var bounded = TextQueries(db: index.db)
        (bounded.allMatchesUpTo, bounded.readBudget) = (100, 1_000)
        for json in [#"{"q":"opera","near":{"lat":-33.87,"lon":151.21}}"#, #"{"q":"opera"}"#] {
            let tally = TextQueries.Tally()
            bounded.tally = tally
            let got = try bounded.search(try textQuery(json)).hits.map(\.id)
            #expect(tally.matches == bounded.allMatchesUpTo + 1, "\(json): the search must take the bounded road")
            #expect(got.first == 301, "\(json)")
            #expect(got == (try exact.search(try textQuery(json)).hits.map(\.id)), "\(json)")
        }
    }

    @Test func aBulkLoadThatDroppedTheIndexesStillAnswersTheSame() throws {
        let index = try TestIndex()
        try index.db.transaction {
            for i in 1...400 {
                let place = IndexedPlace(id: Int64(i), name: "San \(i)", category: "attraction", lat: 40.4 + Double(i) * 1e-5,
                                         lon: -3.7, popularity: Double(i % 7))
                try SearchIndex.upsert(place, index.db)
            }
        }
        var queries = TextQueries(db: index.db)
        // A budget that no reading uses up: each answer is then the exact one.
        (queries.allMatchesUpTo, queries.readBudget) = (50, 400)
        let asked = [#"{"q":"san"}"#, #"{"q":"san","near":{"lat":40.4,"lon":-3.7}}"#]
        let before = try asked.map { try queries.search(try textQuery($0)).hits.map(\.id) }
        try index.db.transaction { try SearchIndex.catalogApplier(memory: NearbyMemory(), streets: BackgroundSignal(), addresses: AddressBook()).startBulk?(index.db) }
        #expect(try !SearchSchema.hasIndex("places_by_popularity", index.db) && !SearchSchema.hasIndex("places_by_strip", index.db))
        #expect(try asked.map { try queries.search(try textQuery($0)).hits.map(\.id) } == before)
        try index.db.transaction { try SearchIndex.catalogApplier(memory: NearbyMemory(), streets: BackgroundSignal(), addresses: AddressBook()).finishBulk?(index.db) }
        #expect(try SearchSchema.hasIndex("places_by_popularity", index.db) && SearchSchema.hasIndex("places_by_strip", index.db))
    }
}
