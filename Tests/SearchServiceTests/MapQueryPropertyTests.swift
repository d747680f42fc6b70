import Bus
import Contracts
import Foundation
import Geo
@testable import SearchService
import ServiceKit
import Storage
import Testing
import TestSupport

/// An index in a temporary file, filled directly through the event-applying code.
final class TestIndex {
    let folder = TemporaryFolder("search")
    let path: String
    let db: Database
    var places: [IndexedPlace] = []
    /// The favorites service's counts applied, by place.
    var counts: [Int64: (saves: Int, visits: Int)] = [:]

    init() throws {
        path = folder.file("search.sqlite")
        db = try Database(path: path)
        try db.migrate(OutboxSchema.migrations + CursorSchema.migrations + SearchSchema.migrations)  // as the runtime orders them
    }

    /// Indexes places at `points`; with `counted`, two places in three get random saves and
    /// visits, half of them before their place is indexed and half after.
    func add(_ points: [(Double, Double)], rng: inout SplitMix64, counted: Bool = false) throws {
        let categories = ["cafe", "park", "museum", "bar"]
        try db.transaction {
            for (lat, lon) in points {
                let id = Int64(places.count + 1)
                let place = IndexedPlace(id: id, name: "P\(id)", category: categories[Int(id) % 4], lat: lat, lon: lon,
                                         address: nil, priceLevel: Int(id % 5), popularity: Double(Int.random(in: 0...20, using: &rng)),
                                         openingHours: nil)
                let saves = Int.random(in: 0...500, using: &rng), visits = Int.random(in: 0...100, using: &rng)
                if counted && id % 3 == 0 { try count(id, saves: saves, visits: visits) }
                try SearchIndex.upsert(place, db)
                places.append(place)
                if counted && id % 3 == 1 { try count(id, saves: saves, visits: visits) }
            }
        }
    }

    /// Applies a `favorites.place.counted` event, as the favorites applier does.
    func count(_ id: Int64, saves: Int, visits: Int) throws {
        try Popularity.counted(PlaceCounted(placeId: id, saves: saves, visits30d: visits), db)
        counts[id] = (saves, visits)
    }

    /// A place's popularity as search should rank it: the formula of Protocols/search.md.
    func ranked(_ place: IndexedPlace) -> Double {
        let (saves, visits) = counts[place.id] ?? (0, 0)
        return (place.popularity ?? 0) + 2 * log(1 + Double(saves)) + log(1 + Double(visits))
    }

    var queries: MapQueries { MapQueries(db: db) }
}

extension MapQueries {
    /// `nearby`'s reply body read back as a page.
    func nearbyPage(_ q: NearbyQuery) throws -> SearchPage { try JSONDecoder().decode(SearchPage.self, from: nearby(q)) }
}

/// A query as the service reads one: held to its declared shape, then decoded.
func nearbyQuery(_ json: String) throws -> NearbyQuery {
    try SchemaCheck.check(Data(json.utf8), against: SchemaProbe.shape(of: NearbyQuery.self))
    return try JSONDecoder().decode(NearbyQuery.self, from: Data(json.utf8))
}
func viewportQuery(_ json: String) throws -> ViewportQuery {
    try SchemaCheck.check(Data(json.utf8), against: SchemaProbe.shape(of: ViewportQuery.self))
    return try JSONDecoder().decode(ViewportQuery.self, from: Data(json.utf8))
}

/// Points scattered uniformly, in tight city-like clusters, and piled up at the poles and the 180th meridian.
func testPoints(_ rng: inout SplitMix64) -> [(Double, Double)] {
    var points: [(Double, Double)] = []
    for _ in 0..<600 { points.append((Double.random(in: -90...90, using: &rng), Double.random(in: -180...180, using: &rng))) }
    let centres: [(Double, Double)] = [(-33.87, 151.21), (89.95, 10), (-89.95, -120), (0.5, 179.99), (-15, -179.995), (51.5, -0.12)]
    for (lat, lon) in centres {
        let centre = try? Coordinate(latitude: lat, longitude: lon)
        // London's crowd is denser than `MapQueries.rankedInMemoryUpTo`, so its first pages by
        // popularity are read band by band, the others' ranked in memory: both held to the truth.
        for _ in 0..<(lat == 51.5 ? 900 : 400) {
            let p = centre?.destination(bearingDegrees: Double.random(in: 0..<360, using: &rng), distanceMeters: Double.random(in: 0...60_000, using: &rng) * Double.random(in: 0...1, using: &rng))
            if let p { points.append((p.latitude, p.longitude)) }
        }
    }
    // On the 180th meridian itself, stored as 180 or as -180.
    for i in 0..<20 { points.append((Double(i - 10) * 0.01, i % 2 == 0 ? 180 : -180)) }
    return points
}

@Suite struct MapQueryPropertyTests {
    @Test func nearbyReturnsExactlyThePlacesWithinTheRadiusInDistanceOrder() throws {
        var rng = SplitMix64(seed: 42)
        let index = try TestIndex()
        try index.add(testPoints(&rng), rng: &rng, counted: true)
        let centres: [(Double, Double)] = [(-33.87, 151.21), (89.95, 10), (89.999, -170), (-89.95, -120), (0.5, 179.99), (0.5, -179.99),
                                           (-15, -179.995), (-15, 179.999), (51.5, -0.12), (10, 10)]
        for (lat, lon) in centres {
            for radius in [1.0, 500, 5_000, 25_000, 50_000] {
                let centre = try Coordinate(latitude: lat, longitude: lon)
                struct Expected { var id: Int64; var d: Double }
                var expected: [Expected] = index.places.map { place in
                    Expected(id: place.id, d: Coordinate(uncheckedLatitude: place.lat, longitude: place.lon).distance(to: centre))
                }
                expected = expected.filter { $0.d <= radius }
                expected.sort { (a: Expected, b: Expected) -> Bool in a.d != b.d ? a.d < b.d : a.id < b.id }
                var got: [SearchHit] = []
                var cursor: String?
                for _ in 0..<1_000 {
                    let page = try index.queries.nearbyPage(try nearbyQuery(#"{"near":{"lat":\#(lat),"lon":\#(lon)},"radius_m":\#(radius),"limit":50\#(cursor.map { #","cursor":"\#($0)""# } ?? "")}"#))
                    got += page.hits
                    guard let next = page.nextCursor else { break }
                    cursor = next
                }
                let gotIds: [Int64] = got.map { $0.id }
                let expectedIds: [Int64] = expected.map { $0.id }
                #expect(gotIds == expectedIds, "centre \(lat),\(lon) radius \(radius)")
                #expect(zip(got, expected).allSatisfy { (hit: SearchHit, e: Expected) in abs((hit.distanceM ?? -1) - e.d) < 1e-6 })

                // The same places by popularity as ranked (blended with counts; ties by id), paged.
                let popularity = Dictionary(uniqueKeysWithValues: index.places.map { ($0.id, index.ranked($0)) })
                let byPopularity: [Int64] = expectedIds.sorted { (a: Int64, b: Int64) -> Bool in
                    popularity[a]! != popularity[b]! ? popularity[a]! > popularity[b]! : a < b
                }
                var popular: [Int64] = []
                cursor = nil
                for _ in 0..<1_000 {
                    let page = try index.queries.nearbyPage(try nearbyQuery(#"{"near":{"lat":\#(lat),"lon":\#(lon)},"radius_m":\#(radius),"sort":"popularity","limit":29\#(cursor.map { #","cursor":"\#($0)""# } ?? "")}"#))
                    popular += page.hits.map(\.id)
                    guard let next = page.nextCursor else { break }
                    cursor = next
                }
                #expect(popular == byPopularity, "popularity, centre \(lat),\(lon) radius \(radius)")
            }
        }
    }

    /// A place just outside a ring read by latitude bands, whose rounded R*Tree point falls
    /// inside that ring's box: the next ring, read through the R*Tree, must still find it.
    @Test func aPlaceOnTheEdgeOfABandRingIsFoundByTheNextRing() throws {
        var rng = SplitMix64(seed: 1)
        let index = try TestIndex()
        try index.add([(-33.92755664, 151.21)], rng: &rng)
        let page = try index.queries.nearbyPage(try nearbyQuery(#"{"near":{"lat":-33.87,"lon":151.21},"radius_m":50000,"limit":1}"#))
        #expect(page.hits.map(\.id) == [1])
    }

    @Test func nearbyIsTheSameWhileABulkLoadRebuildsTheStrips() throws {
        var rng = SplitMix64(seed: 43)
        let index = try TestIndex()
        try index.add(testPoints(&rng), rng: &rng)
        let queries = [#"{"near":{"lat":-33.87,"lon":151.21},"radius_m":3000,"limit":50}"#, #"{"near":{"lat":0.5,"lon":179.99},"radius_m":800}"#,
                       #"{"near":{"lat":89.95,"lon":10},"radius_m":5000,"sort":"popularity"}"#]
        let withStrips = try queries.map { try index.queries.nearbyPage(try nearbyQuery($0)) }
        try SearchIndex.catalogApplier(memory: NearbyMemory(), streets: BackgroundSignal(), addresses: AddressBook()).startBulk?(index.db)
        #expect(try index.db.scalarInt("SELECT count(*) FROM sqlite_master WHERE name = 'places_by_strip'") == 0)
        #expect(try queries.map { try index.queries.nearbyPage(try nearbyQuery($0)) } == withStrips)
        try SearchIndex.catalogApplier(memory: NearbyMemory(), streets: BackgroundSignal(), addresses: AddressBook()).finishBulk?(index.db)
        #expect(try index.db.scalarInt("SELECT count(*) FROM sqlite_master WHERE name = 'places_by_strip'") == 1)
        #expect(try queries.map { try index.queries.nearbyPage(try nearbyQuery($0)) } == withStrips)
        #expect(withStrips.allSatisfy { !$0.hits.isEmpty })
    }

    /// A search runs in one read transaction (as the service runs each): a bulk load that
    /// drops and builds the band index meanwhile, on another connection, never breaks it.
    @Test func aSearchInOneTransactionOutlivesABulkLoadBeginningAndEnding() throws {
        var rng = SplitMix64(seed: 44)
        let index = try TestIndex()
        try index.add(testPoints(&rng), rng: &rng)
        let path = index.path
        let toggler = Thread {
            guard let db = try? Database(path: path) else { return }
            for _ in 0..<100 {
                try? db.transaction { try SearchIndex.catalogApplier(memory: NearbyMemory(), streets: BackgroundSignal(), addresses: AddressBook()).startBulk?(db) }
                try? db.transaction { try SearchIndex.catalogApplier(memory: NearbyMemory(), streets: BackgroundSignal(), addresses: AddressBook()).finishBulk?(db) }
            }
        }
        toggler.start()
        var failures = 0, searches = 0
        for _ in 0..<2_000 where !toggler.isFinished {
            searches += 1
            do {
                _ = try index.db.transaction(.deferred) { try index.queries.nearbyPage(try nearbyQuery(#"{"near":{"lat":-33.87,"lon":151.21},"radius_m":2000}"#)) }
            } catch {
                failures += 1
            }
        }
        for _ in 0..<500 where !toggler.isFinished { usleep(10_000) }
        #expect(searches > 10 && failures == 0, "\(failures) of \(searches) searches failed")
    }

    @Test func viewportReturnsExactlyThePlacesInsideTheBox() throws {
        var rng = SplitMix64(seed: 7)
        let index = try TestIndex()
        try index.add(testPoints(&rng), rng: &rng, counted: true)
        var ratings: [Int64: Double] = [:]
        for place in index.places where place.id % 3 == 0 {
            let average = Double(Int.random(in: 2...10, using: &rng)) / 2  // ties on purpose
            ratings[place.id] = average
            try SearchIndex.rating(RatingUpdated(placeId: place.id, average: average, count: 1), index.db)
        }
        var boxes: [(Double, Double, Double, Double)] = [(-34, 151, -33.5, 151.5), (0, 179.5, 1, -179.5), (-16, 179.9, -14, -179.9),
                                                        (89, -90, 90, 90), (-90, 0, -89, 179.9), (-10, -180, 10, 0)]
        for _ in 0..<40 {
            let south = Double.random(in: -90...89, using: &rng)
            let north = Double.random(in: south...90, using: &rng)
            let west = Double.random(in: -180...180, using: &rng)
            let east = (west + Double.random(in: 0...180, using: &rng)).truncatingRemainder(dividingBy: 360)
            boxes.append((south, west, north, east > 180 ? east - 360 : east))
        }
        for (south, west, north, east) in boxes {
            let box = try BoundingBox(south: south, west: west, north: north, east: east)
            let expected = index.places.filter { box.contains(Coordinate(uncheckedLatitude: $0.lat, longitude: $0.lon)) }
                .sorted { index.ranked($0) != index.ranked($1) ? index.ranked($0) > index.ranked($1) : $0.id < $1.id }
            var got: [Int64] = []
            var cursor: String?
            for _ in 0..<1_000 {
                let page = try index.queries.viewport(try viewportQuery(#"{"bbox":{"south":\#(south),"west":\#(west),"north":\#(north),"east":\#(east)},"limit":37\#(cursor.map { #","cursor":"\#($0)""# } ?? "")}"#))
                // Ranked by the blend, the hits still show the catalog's popularity.
                #expect(page.hits.allSatisfy { hit in hit.popularity == index.places[Int(hit.id) - 1].popularity })
                got += page.hits.map(\.id)
                guard let next = page.nextCursor else { break }
                cursor = next
            }
            #expect(got == expected.map(\.id), "box \(south),\(west),\(north),\(east)")
            #expect(Set(got).count == got.count)

            // By rating (unrated last), paged the same way.
            let byRating = expected.sorted { a, b in
                let ra = ratings[a.id] ?? -1, rb = ratings[b.id] ?? -1
                return ra != rb ? ra > rb : a.id < b.id
            }
            var rated: [Int64] = []
            cursor = nil
            for _ in 0..<1_000 {
                let page = try index.queries.viewport(try viewportQuery(#"{"bbox":{"south":\#(south),"west":\#(west),"north":\#(north),"east":\#(east)},"sort":"rating","limit":23\#(cursor.map { #","cursor":"\#($0)""# } ?? "")}"#))
                rated += page.hits.map(\.id)
                guard let next = page.nextCursor else { break }
                cursor = next
            }
            #expect(rated == byRating.map(\.id), "rating, box \(south),\(west),\(north),\(east)")
        }
    }

    @Test func pagesContinueAfterTheLastHitWhilePlacesAreAdded() throws {
        var rng = SplitMix64(seed: 99)
        let index = try TestIndex()
        try index.add((0..<100).map { _ in (-33.87 + Double.random(in: -0.01...0.01, using: &rng), 151.21 + Double.random(in: -0.01...0.01, using: &rng)) }, rng: &rng)
        let first = try index.queries.nearbyPage(try nearbyQuery(#"{"near":{"lat":-33.87,"lon":151.21},"radius_m":5000,"limit":30}"#))
        // A place right at the centre arrives between pages: it sorts before the cursor, so it is not repeated or slipped in.
        try index.add([(-33.87, 151.21)], rng: &rng)
        var seen = first.hits.map(\.id)
        var cursor = first.nextCursor
        while let c = cursor {
            let page = try index.queries.nearbyPage(try nearbyQuery(#"{"near":{"lat":-33.87,"lon":151.21},"radius_m":5000,"limit":30,"cursor":"\#(c)"}"#))
            seen += page.hits.map(\.id)
            cursor = page.nextCursor
        }
        #expect(seen.count == 100 && Set(seen).count == 100)
    }

    @Test func filtersAndSorts() throws {
        var rng = SplitMix64(seed: 5)
        let index = try TestIndex()
        try index.add((0..<40).map { i in (-33.87 + Double(i) * 1e-4, 151.21) }, rng: &rng)
        try SearchIndex.rating(RatingUpdated(placeId: 3, average: 4.5, count: 10), index.db)
        try SearchIndex.rating(RatingUpdated(placeId: 7, average: 3.0, count: 2), index.db)
        let cafes = try index.queries.nearbyPage(try nearbyQuery(#"{"near":{"lat":-33.87,"lon":151.21},"radius_m":1000,"categories":["cafe"],"limit":50}"#))
        #expect(!cafes.hits.isEmpty && cafes.hits.allSatisfy { $0.category == "cafe" })
        let cheap = try index.queries.nearbyPage(try nearbyQuery(#"{"near":{"lat":-33.87,"lon":151.21},"radius_m":1000,"price_levels":[0,1],"exclude_categories":["bar"],"limit":50}"#))
        #expect(cheap.hits.allSatisfy { ($0.priceLevel ?? 9) <= 1 && $0.category != "bar" })
        let rated = try index.queries.nearbyPage(try nearbyQuery(#"{"near":{"lat":-33.87,"lon":151.21},"radius_m":1000,"min_rating":3.5}"#))
        #expect(rated.hits.map(\.id) == [3] && rated.hits.first?.reviewCount == 10 && rated.hits.first?.rating == 4.5)
        let byRating = try index.queries.nearbyPage(try nearbyQuery(#"{"near":{"lat":-33.87,"lon":151.21},"radius_m":1000,"sort":"rating","limit":3}"#))
        #expect(byRating.hits.map(\.id).prefix(2) == [3, 7])
        // A rating that drops to no reviews disappears.
        try SearchIndex.rating(RatingUpdated(placeId: 3, average: 0, count: 0), index.db)
        #expect(try index.queries.nearbyPage(try nearbyQuery(#"{"near":{"lat":-33.87,"lon":151.21},"radius_m":1000,"min_rating":3.5}"#)).hits.isEmpty)
    }

    @Test(arguments: [
        (#"{"near":{"lat":91,"lon":0},"radius_m":100}"#, "near.lat"),
        (#"{"near":{"lat":0,"lon":-181},"radius_m":100}"#, "near.lon"),
        (#"{"near":{"lat":0,"lon":0},"radius_m":0.5}"#, "radius_m"),
        (#"{"near":{"lat":0,"lon":0},"radius_m":50001}"#, "radius_m"),
        (#"{"near":{"lat":0,"lon":0},"radius_m":100,"limit":51}"#, "limit"),
        (#"{"near":{"lat":0,"lon":0},"radius_m":100,"limit":0}"#, "limit"),
        (#"{"near":{"lat":0,"lon":0},"radius_m":100,"sort":"nearest"}"#, "sort"),
        (#"{"near":{"lat":0,"lon":0},"radius_m":100,"cursor":"bogus"}"#, "cursor"),
        (#"{"near":{"lat":0,"lon":0},"radius_m":100,"price_levels":[7]}"#, "price_levels"),
        (#"{"near":{"lat":0,"lon":0},"radius_m":100,"min_rating":6}"#, "min_rating"),
    ])
    func nearbyRefusesBadInputNamingTheField(json: String, field: String) throws {
        let index = try TestIndex()
        do {
            _ = try index.queries.nearbyPage(try nearbyQuery(json))
            Issue.record("accepted \(json)")
        } catch let error as ServiceError {
            #expect(error.code == .invalidArgument && error.field == field, "\(error)")
        } catch let error as ServiceErrorConvertible {
            // A point out of range is Geo's error, which the request server answers as this.
            #expect(error.serviceError.code == .invalidArgument && error.serviceError.field == field, "\(error)")
        } catch let error as DecodingError {
            #expect(ServiceError.decoding(error, dropping: []).field == field, "\(error)")
        }
    }

    @Test func viewportRefusesBadBoxes() throws {
        let index = try TestIndex()
        for (json, field) in [(#"{"bbox":{"south":10,"west":0,"north":5,"east":1}}"#, "bbox.north"), (#"{"bbox":{"south":0,"west":-100,"north":1,"east":100}}"#, "bbox.east"),
                              (#"{"bbox":{"south":-91,"west":0,"north":1,"east":1}}"#, "bbox.south"), (#"{"bbox":{"south":0,"west":0,"north":1,"east":1},"sort":"distance"}"#, "sort")] {
            do {
                _ = try index.queries.viewport(try viewportQuery(json))
                Issue.record("accepted \(json)")
            } catch let error as ServiceError {
                #expect(error.field == field, "\(json): \(error)")
            }
        }
    }
}

/// The copy in memory answers nearest-first searches as the index does, byte for byte.
@Suite struct NearbyMemoryTests {
    /// An index of the test points, a third of them rated, and a copy of it loaded.
    static func indexAndCopy(seed: UInt64) throws -> (TestIndex, NearbyMemory) {
        var rng = SplitMix64(seed: seed)
        let index = try TestIndex()
        try index.add(testPoints(&rng), rng: &rng, counted: true)
        for place in index.places where place.id % 3 == 0 {
            try SearchIndex.rating(RatingUpdated(placeId: place.id, average: Double(Int.random(in: 2...10, using: &rng)) / 2, count: Int(place.id % 7) + 1), index.db)
        }
        let memory = NearbyMemory()
        try memory.load(from: index.db)
        return (index, memory)
    }

    @Test func everyPageIsTheIndexsPageByteForByte() throws {
        let (index, memory) = try Self.indexAndCopy(seed: 45)
        var fromMemory = index.queries
        fromMemory.memory = memory
        let centres: [(Double, Double)] = [(-33.87, 151.21), (89.95, 10), (89.999, -170), (-89.95, -120), (0.5, 179.99), (0.5, -179.99),
                                           (-15, -179.995), (-15, 179.999), (51.5, -0.12), (10, 10), (0, 180), (-0.05, -180)]
        var pages = 0, answered = 0
        for (lat, lon) in centres {
            for radius in [1.0, 500, 5_000, 25_000, 50_000] {
                for limit in [1, 50] {
                    var cursor: String?
                    for _ in 0..<1_000 {
                        let query = try nearbyQuery(#"{"near":{"lat":\#(lat),"lon":\#(lon)},"radius_m":\#(radius),"limit":\#(limit)\#(cursor.map { #","cursor":"\#($0)""# } ?? "")}"#)
                        let expected = try index.queries.nearby(query)
                        pages += 1
                        if let reply = try fromMemory.nearbyFromMemory(query) {
                            answered += 1
                            #expect(reply == expected, "\(lat),\(lon) radius \(radius) limit \(limit)")
                        }
                        #expect(try fromMemory.nearby(query) == expected, "\(lat),\(lon) radius \(radius) limit \(limit)")
                        let page = try JSONDecoder().decode(SearchPage.self, from: expected)
                        // The same hits as the other sorts read them from SQL (`hitColumns`), counts and all.
                        #expect(try page.hits == index.queries.hits(ids: page.hits.map(\.id), from: Coordinate(latitude: lat, longitude: lon)),
                                "hits from SQL, \(lat),\(lon) radius \(radius) limit \(limit)")
                        let after = try page.nextCursor.map(SearchCursor.decode)
                        guard let next = page.nextCursor, after != nil else { break }
                        cursor = next
                    }
                }
            }
        }
        // Only the points next to a pole are left to the index.
        #expect(pages > 300 && answered >= pages * 2 / 3, "\(answered) of \(pages)")
    }

    /// No point of a cell is nearer than the cell's bound, wherever the centre is (poles and the
    /// 180th meridian included), and the bound is not idle: near the centre it is small.
    @Test func aCellsBoundIsNeverFartherThanItsPoints() throws {
        var rng = SplitMix64(seed: 48)
        var positive = 0
        for round in 0..<20_000 {
            let centre = try Coordinate(latitude: Double.random(in: -90...90, using: &rng), longitude: Double.random(in: -180...180, using: &rng))
            // A cell near the centre (half the rounds) or anywhere.
            let near = round % 2 == 0
            let lat = near ? min(90, max(-90, centre.latitude + Double.random(in: -1...1, using: &rng))) : Double.random(in: -90...90, using: &rng)
            var lon = near ? centre.longitude + Double.random(in: -3...3, using: &rng) : Double.random(in: -180...180, using: &rng)
            if lon > 180 { lon -= 360 } else if lon < -180 { lon += 360 }
            let (row, column) = NearbyMemory.position(lat, lon)
            let bound = NearbyMemory.nearestPossible(row: row, column: column, to: centre)
            if bound > 0 { positive += 1 }
            let south = Double(row) * NearbyMemory.cellDegrees - 90
            let west = Double(column) * NearbyMemory.cellDegrees - 180
            for corner in [(0.0, 0.0), (1, 1), (0, 1), (1, 0), (Double.random(in: 0...1, using: &rng), Double.random(in: 0...1, using: &rng))] {
                let point = Coordinate(uncheckedLatitude: min(90, south + corner.0 * NearbyMemory.cellDegrees),
                                       longitude: min(180, west + corner.1 * NearbyMemory.cellDegrees))
                #expect(point.distance(to: centre) >= bound, "cell \(row),\(column) centre \(centre) bound \(bound)")
            }
        }
        #expect(positive > 15_000)
    }

    /// A crowd of places in one cell, more than a query may measure: the index answers the
    /// queries that would read it, and the same as before.
    @Test func aCrowdedCellIsLeftToTheIndex() throws {
        var rng = SplitMix64(seed: 49)
        let index = try TestIndex()
        let crowd = (0..<60).map { _ in (48.85 + Double.random(in: 0...0.01, using: &rng), 2.35 + Double.random(in: 0...0.01, using: &rng)) }
        try index.add(crowd + [(10, 10), (10.001, 10.001)], rng: &rng)
        let memory = NearbyMemory(maxPoints: 50)
        try memory.load(from: index.db)
        var fromMemory = index.queries
        fromMemory.memory = memory
        let crowded = try nearbyQuery(#"{"near":{"lat":48.855,"lon":2.355},"radius_m":2000,"limit":5}"#)
        #expect(try fromMemory.nearbyFromMemory(crowded) == nil)
        let page = try JSONDecoder().decode(SearchPage.self, from: try fromMemory.nearby(crowded))
        #expect(page.hits.count == 5 && page.nextCursor != nil)
        // Elsewhere memory still answers.
        let quiet = try nearbyQuery(#"{"near":{"lat":10,"lon":10},"radius_m":2000}"#)
        #expect(try fromMemory.nearbyFromMemory(quiet) == (try index.queries.nearby(quiet)))
    }

    @Test func filtersAndOtherOrdersAreLeftToTheIndex() throws {
        let (index, memory) = try Self.indexAndCopy(seed: 46)
        var fromMemory = index.queries
        fromMemory.memory = memory
        for body in [#"{"near":{"lat":-33.87,"lon":151.21},"radius_m":50000,"categories":["cafe"]}"#, #"{"near":{"lat":-33.87,"lon":151.21},"radius_m":50000,"min_rating":3}"#,
                     #"{"near":{"lat":-33.87,"lon":151.21},"radius_m":50000,"sort":"rating"}"#, #"{"near":{"lat":-33.87,"lon":151.21},"radius_m":50000,"price_levels":[1,2]}"#] {
            let query = try nearbyQuery(body)
            #expect(!fromMemory.answersFromMemory(query))
            #expect(try fromMemory.nearby(query) == index.queries.nearby(query), "\(body)")
        }
        #expect(fromMemory.answersFromMemory(try nearbyQuery(#"{"near":{"lat":-33.87,"lon":151.21},"radius_m":50000,"categories":[]}"#)))
    }

    /// The copy takes a transaction's changes once it has committed, never when it rolled back;
    /// a reset empties it until it is loaded again.
    @Test func theCopyFollowsCommitsOnly() throws {
        let (index, memory) = try Self.indexAndCopy(seed: 47)
        var fromMemory = index.queries
        fromMemory.memory = memory
        let query = try nearbyQuery(#"{"near":{"lat":51.5,"lon":-0.12},"radius_m":50000,"limit":3}"#)
        let before = try fromMemory.nearby(query)
        #expect(try JSONDecoder().decode(SearchPage.self, from: before).hits.count == 3)
        // A new nearest place, in a transaction that is rolled back, then in one that commits.
        let place = IndexedPlace(id: 99_999, name: "Closest", category: "cafe", lat: 51.5, lon: -0.12)
        let changes = NearbyMemory.Changes()
        struct Undo: Error {}
        #expect(throws: Undo.self) {
            try index.db.transaction {
                let hit = try SearchIndex.upsert(place, index.db)
                changes.note(.upsert(id: place.id, latitude: place.lat, longitude: place.lon, head: hit.head, tail: hit.tail))
                throw Undo()
            }
        }
        memory.settle(changes.take(), committed: false)
        #expect(try fromMemory.nearby(query) == before)
        try index.db.transaction {
            let hit = try SearchIndex.upsert(place, index.db)
            changes.note(.upsert(id: place.id, latitude: place.lat, longitude: place.lon, head: hit.head, tail: hit.tail))
            try SearchIndex.rating(RatingUpdated(placeId: place.id, average: 4.5, count: 2), index.db)
            changes.note(.rating(placeId: place.id, average: 4.5, count: 2))
        }
        memory.settle(changes.take(), committed: true)
        let after = try fromMemory.nearby(query)
        #expect(after == (try index.queries.nearby(query)))
        #expect(try JSONDecoder().decode(SearchPage.self, from: after).hits.first?.id == 99_999)
        // Deleted (as a rebuild from the catalog's snapshot removes a place it does not name).
        try SearchIndex.delete(place.id, index.db)
        memory.settle([.delete(id: place.id)], committed: true)
        #expect(try fromMemory.nearby(query) == before)
    }
}
