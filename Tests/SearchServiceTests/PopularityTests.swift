import Bus
import Contracts
import Foundation
import Geo
@testable import SearchService
import ServiceKit
import Storage
import Testing
import TestSupport

/// Popularity blended with the favorites service's counts (`Popularity`), on an index filled
/// directly through the event-applying code.
@Suite struct PopularityTests {
    /// The worked example of Protocols/search.md, computed by hand there.
    @Test func theBlendIsTheDocumentedFormula() {
        // 80 + 2·ln(121) + ln(41) = 80 + 9.5916 + 3.7136 = 93.3052
        #expect(abs(Popularity.blended(catalog: 80, saves: 120, visits30d: 40) - 93.3052) < 0.0001)
        // No counts: the catalog's number as it is.
        #expect(Popularity.blended(catalog: 85, saves: 0, visits30d: 0) == 85)
        // One traveller's save and visit: 85 + 2·ln 2 + ln 2 = 87.0794, still below a place at 90.
        #expect(abs(Popularity.blended(catalog: 85, saves: 1, visits30d: 1) - 87.0794) < 0.0001)
        // Counts below zero read as zero.
        #expect(Popularity.blended(catalog: 10, saves: -5, visits30d: -1) == 10)
    }

    /// More of any input never ranks lower, and each further save adds less than the one before.
    @Test func theBlendGrowsInEachInputWithDiminishingSteps() {
        var previousStep = Double.infinity
        for saves in 0..<2_000 {
            let step = Popularity.blended(catalog: 50, saves: saves + 1, visits30d: 3) - Popularity.blended(catalog: 50, saves: saves, visits30d: 3)
            #expect(step > 0 && step < previousStep && step <= 2 * log(2.0) + 1e-12, "save \(saves + 1)")
            previousStep = step
        }
        for visits in [0, 1, 10, 1_000, 1_000_000] {
            #expect(Popularity.blended(catalog: 50, saves: 7, visits30d: visits + 1) > Popularity.blended(catalog: 50, saves: 7, visits30d: visits))
        }
        #expect(Popularity.blended(catalog: 50.01, saves: 7, visits30d: 7) > Popularity.blended(catalog: 50, saves: 7, visits30d: 7))
        #expect(Popularity.blended(catalog: 0, saves: Int.max, visits30d: Int.max).isFinite)
    }

    /// Three places near a point (each with "NSW" in its address), by the catalog: garden 90, museum 85, bar 80.
    func sydney() throws -> TestIndex {
        let index = try TestIndex()
        try index.db.transaction {
            for place in [IndexedPlace(id: 1, name: "Royal Botanic Garden", category: "park", lat: -33.8642, lon: 151.2166, address: "Sydney NSW 2000", popularity: 90),
                          IndexedPlace(id: 2, name: "Museum of Contemporary Art", category: "museum", lat: -33.8599, lon: 151.2090, address: "Sydney NSW 2000", popularity: 85),
                          IndexedPlace(id: 3, name: "Opera Bar", category: "bar", lat: -33.8572, lon: 151.2142, address: "Sydney NSW 2000", popularity: 80)] {
                try SearchIndex.upsert(place, index.db)
                index.places.append(place)
            }
        }
        return index
    }

    /// The ids of every sort by popularity: nearby, viewport, text (with and without a point).
    func byPopularity(_ index: TestIndex) throws -> [[Int64]] {
        let near = try index.queries.nearbyPage(try nearbyQuery(#"{"near":{"lat":-33.86,"lon":151.21},"radius_m":5000,"sort":"popularity"}"#))
        let box = try index.queries.viewport(try viewportQuery(#"{"bbox":{"south":-33.9,"west":151.1,"north":-33.8,"east":151.3}}"#))
        let text = TextQueries(db: index.db)
        let words = try text.search(try textQuery(#"{"q":"nsw ","sort":"popularity"}"#))
        let wordsNear = try text.search(try textQuery(#"{"q":"nsw ","near":{"lat":-33.86,"lon":151.21},"radius_m":5000,"sort":"popularity"}"#))
        return [near.hits.map(\.id), box.hits.map(\.id), words.hits.map(\.id), wordsNear.hits.map(\.id)]
    }

    @Test func countsReorderEverySortByPopularityAndHitsShowTheCatalogs() throws {
        let index = try sydney()
        #expect(try byPopularity(index) == Array(repeating: [1, 2, 3], count: 4))
        // The bar, saved by 120 travellers and visited by 40 lately: 93.31, first.
        try index.count(3, saves: 120, visits: 40)
        #expect(try byPopularity(index) == Array(repeating: [3, 1, 2], count: 4))
        let hits = try index.queries.viewport(try viewportQuery(#"{"bbox":{"south":-33.9,"west":151.1,"north":-33.8,"east":151.3}}"#)).hits
        #expect(hits.map(\.popularity) == [80, 90, 85])
        // One traveller saves and visits the museum (87.08): not past the garden.
        try index.count(2, saves: 1, visits: 1)
        #expect(try byPopularity(index) == Array(repeating: [3, 1, 2], count: 4))
        // Counts back to nothing: the catalog's order again, and no row kept.
        try index.count(3, saves: 0, visits: 0)
        try index.count(2, saves: 0, visits: 0)
        #expect(try byPopularity(index) == Array(repeating: [1, 2, 3], count: 4))
        #expect(try index.db.scalarInt("SELECT count(*) FROM place_counts") == 0)
    }

    @Test func countsThatComeBeforeTheirPlaceAreBlendedWhenItIsIndexed() throws {
        let index = try sydney()
        try index.count(4, saves: 500, visits: 0)  // 2·ln 501 = 12.43
        #expect(try index.db.scalarInt("SELECT count(*) FROM places WHERE id = 4") == 0)
        let manly = IndexedPlace(id: 4, name: "Manly Beach", category: "beach", lat: -33.8610, lon: 151.2120, address: "Manly NSW 2095", popularity: 80)
        try SearchIndex.upsert(manly, index.db)
        index.places.append(manly)
        #expect(try byPopularity(index) == Array(repeating: [4, 1, 2, 3], count: 4))
        // Indexed again with the catalog's new number: blended with the same counts.
        var lessPopular = manly
        lessPopular.popularity = 70
        try SearchIndex.upsert(lessPopular, index.db)
        #expect(try byPopularity(index) == Array(repeating: [1, 2, 4, 3], count: 4))
        let ranked = try index.db.queryOne("SELECT popularity, catalog_popularity FROM places WHERE id = 4")
        #expect(try ranked?.decode("catalog_popularity", as: Double.self) == 70)
        #expect(try ranked?.decode("popularity", as: Double.self) == Popularity.blended(catalog: 70, saves: 500, visits30d: 0))
    }

    /// Removes what a rebuild's merge removes at its end when the snapshot names none of it.
    func unnamed(_ applier: EventApplier, _ index: TestIndex) throws {
        let merge = try #require(applier.merge)
        try index.db.transaction {
            for id in try index.db.query(merge.keys).decode("place_id", as: Int64.self) { try merge.remove(id, EventScope(db: index.db)) }
        }
    }

    /// A rebuild from favorites' snapshot that names no count removes them all: the places rank
    /// by the catalog's popularity alone, in the table and in the R*Tree.
    @Test func forgettingTheCountsRanksByTheCatalogAlone() throws {
        let index = try sydney()
        try index.count(3, saves: 120, visits: 40)
        try index.count(9, saves: 3, visits: 0)  // of a place not indexed
        try unnamed(Popularity.favoritesApplier(), index)
        index.counts = [:]
        #expect(try byPopularity(index) == Array(repeating: [1, 2, 3], count: 4))
        #expect(try index.db.scalarInt("SELECT count(*) FROM place_counts") == 0)
        #expect(try index.db.scalarInt("SELECT count(*) FROM places p JOIN places_geo g ON g.id = p.id WHERE p.popularity != p.catalog_popularity OR g.max_pop != CAST(p.catalog_popularity * 100 AS INTEGER)") == 0)
    }

    /// Reviews of the last 30 days (social's `reviews_30d`) lift a place as the formula says;
    /// an event that does not say keeps what the place had, and a rebuild from social's
    /// snapshot that does not name the place ranks it without them.
    @Test func recentReviewsReorderEverySortByPopularity() throws {
        let index = try sydney()
        // 1.5·ln(1 + 20) = 4.5668: the bar (80) reviewed 20 times lately is 84.57, past nothing yet.
        #expect(abs(Popularity.blended(catalog: 80, saves: 0, visits30d: 0, reviews30d: 20) - 84.5668) < 0.0001)
        try SearchIndex.rating(RatingUpdated(placeId: 3, average: 4, count: 30, reviews30d: 20), index.db)
        #expect(try byPopularity(index) == Array(repeating: [1, 2, 3], count: 4))
        // With 40 saves too (2·ln 41 = 7.43): 92.0, first.
        try index.count(3, saves: 40, visits: 0)
        let ranked = try index.db.queryOne("SELECT popularity FROM places WHERE id = 3")
        #expect(try ranked?.decode("popularity", as: Double.self) == Popularity.blended(catalog: 80, saves: 40, visits30d: 0, reviews30d: 20))
        #expect(try byPopularity(index) == Array(repeating: [3, 1, 2], count: 4))
        // A rating without reviews_30d (an older publisher) keeps the count it had.
        try SearchIndex.rating(RatingUpdated(placeId: 3, average: 4.5, count: 31), index.db)
        #expect(try byPopularity(index) == Array(repeating: [3, 1, 2], count: 4))
        // They leave the window: back below the garden.
        try SearchIndex.rating(RatingUpdated(placeId: 3, average: 4.5, count: 31, reviews30d: 0), index.db)
        #expect(try byPopularity(index) == Array(repeating: [1, 3, 2], count: 4))
        try SearchIndex.rating(RatingUpdated(placeId: 3, average: 4.5, count: 31, reviews30d: 20), index.db)
        try unnamed(SearchIndex.socialApplier(memory: NearbyMemory(), erased: RecentlyErased(windowMilliseconds: 1_000)), index)
        #expect(try index.db.queryOne("SELECT popularity FROM places WHERE id = 3")?.decode("popularity", as: Double.self)
                == Popularity.blended(catalog: 80, saves: 40, visits30d: 0))
    }
}
