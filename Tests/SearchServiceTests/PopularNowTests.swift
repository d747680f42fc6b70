import Bus
import CatalogService
import Contracts
import Foundation
import SearchService
import ServiceCore
import ServiceKit
import Testing
import TestSupport
@testable import TourbusCLI

/// A real catalog (its default zone Australia/Sydney, as `tourbus up` runs it) holding the
/// demo's places, and a real search service following it, in this process over loopback.
final class PopularFixture {
    let scratch: TemporaryFolder
    let context: ZMQContext
    let catalog: ServiceRuntime<CatalogStore>
    let search: ServiceRuntime<SearchStore>
    let catalogClient: RPCClient
    let searchClient: RPCClient

    init() throws {
        let scratch = TemporaryFolder("popular")
        self.scratch = scratch
        context = try ZMQContext()
        func config(_ name: String) -> ServiceConfig {
            var c = ServiceConfig(service: name)
            c.dataDirectory = scratch.path
            c.heartbeatMilliseconds = 50
            return c
        }
        var options = CatalogOptions()
        options.defaultTimezone = "Australia/Sydney"
        catalog = try ServiceRuntime(definition: CatalogService.definition(options: options), config: config("catalog"), context: context, logger: quiet)
        catalogClient = try RPCClient(context: context, endpoints: catalog.endpoints.rpc, logger: quiet)
        var c = config("search")
        c.peers = ["catalog": PeerEndpoints(rpc: catalog.endpoints.rpc, publish: catalog.endpoints.publish)]
        search = try ServiceRuntime(definition: SearchService.definition(), config: c, context: context, logger: quiet)
        searchClient = try RPCClient(context: context, endpoints: search.endpoints.rpc, logger: quiet)
    }

    deinit {
        searchClient.close()
        catalogClient.close()
        search.stop()
        catalog.stop()
    }

    /// Creates every demo place, and waits (bounded: 10 s) until search has them all.
    func loadDemo() throws -> Int {
        let demo = try DemoData.load(from: packageRoot.appendingPathComponent("deploy/demo").path)
        let created = try DemoLoader.loadIfEmpty(catalogClient, demo).count
        for _ in 0..<200 {
            let stats = try searchClient.call("sys.stats", Empty(), as: SubscriberCheck.self)
            if stats.subscriptions?.first(where: { $0.source == "catalog" })?.seq == Int64(created) { break }
            usleep(50_000)
        }
        return created
    }

    /// `search.popular`'s hits as (name, in_season) pairs.
    func popular(_ json: String) throws -> [(name: String, inSeason: Bool)] {
        let reply = try searchClient.request(type: "search.popular", body: Data(json.utf8))
        let body = try JSONSerialization.jsonObject(with: reply.bodyJSON) as? [String: Any]
        return (body?["hits"] as? [[String: Any]] ?? []).map { ($0["name"] as? String ?? "", $0["in_season"] as? Bool ?? false) }
    }

    /// The error a request gets, or nil when it succeeds.
    func refusal(_ type: String, _ json: String, client: RPCClient? = nil) -> ServiceError? {
        do {
            _ = try (client ?? searchClient).request(type: type, body: Data(json.utf8))
            return nil
        } catch {
            return error
        }
    }
}

@Suite(.serialized) struct PopularNowTests {
    static let easterShow = "Sydney Royal Easter Show", vivid = "Vivid Sydney", fireworks = "Sydney New Year's Eve Fireworks"
    static let festival = "Sydney Festival", zoo = "Taronga Zoo Sydney"
    static let events: Set<String> = [easterShow, vivid, fireworks, festival]

    /// The demo's events come and go with the season: the Easter Show in April only (and it
    /// takes a classic attraction's place), Vivid in June only, the fireworks on 31 December
    /// only, each above the classic attraction while it is on.
    @Test func theListChangesWithTheSeason() throws {
        let f = try PopularFixture()
        #expect(try f.loadDemo() == 246)
        func at(_ time: String, limit: Int = 50) throws -> [(name: String, inSeason: Bool)] {
            try f.popular(#"{"at":"\#(time)","limit":\#(limit)}"#)
        }
        // Mid September 2027: no event is on, and no event is shown.
        let quiet = try at("2027-09-15T02:00:00Z")
        #expect(quiet.count == 50 && !quiet.contains { Self.events.contains($0.name) || $0.inSeason })
        let zooRank = try #require(quiet.firstIndex { $0.name == Self.zoo })

        func check(_ time: String, shows event: String) throws {
            let list = try at(time)
            #expect(list.first?.name == event && list.first?.inSeason == true, "\(time): \(list.prefix(3))")
            #expect(list.filter(\.inSeason).map(\.name) == [event], "\(time)")
            #expect(Set(list.map(\.name)).intersection(Self.events) == [event], "\(time)")
            let eventRank = try #require(list.firstIndex { $0.name == event })
            let zoo = try #require(list.firstIndex { $0.name == Self.zoo })
            #expect(eventRank < zoo)
        }
        try check("2028-04-10T02:00:00Z", shows: Self.easterShow)  // noon in Sydney, in the 2028 Show
        try check("2027-06-05T09:00:00Z", shows: Self.vivid)
        try check("2026-12-31T12:00:00Z", shows: Self.fireworks)  // 11 pm in Sydney
        try check("2027-01-15T01:00:00Z", shows: Self.festival)

        // Around Easter the Show takes a place on the welcome screen: the zoo, last of the
        // short list in September, is pushed off it in April.
        let short = zooRank + 1
        #expect(try at("2027-09-15T02:00:00Z", limit: short).last?.name == Self.zoo)
        let april = try at("2028-04-10T02:00:00Z", limit: short)
        #expect(april.first?.name == Self.easterShow && !april.contains { $0.name == Self.zoo })

        // Days are Sydney's: 2 pm UTC on 1 January is already 2 January there, past the fireworks
        // (UTC would still say 1 January).
        #expect(try !at("2027-01-01T14:00:00Z").contains { $0.name == Self.fireworks })
        #expect(try at("2027-01-01T12:00:00Z").contains { $0.name == Self.fireworks })  // 11 pm on 1 January there
        // Out of the Show's dated windows (Easter 2027 falls in March): not shown in April 2027.
        #expect(try !at("2027-04-10T02:00:00Z").contains { $0.name == Self.easterShow })

        // A place's own zone wins over the default: a Los Angeles New Year's Eve party is on at
        // 9 pm there, when it is already 1 January in Sydney (and the Sydney fireworks are on).
        let party = try f.catalogClient.request(type: Methods.Catalog.create.name, body: Data(#"{"name":"LA Party","category":"event","lat":34.05,"lon":-118.25,"timezone":"America/Los_Angeles","popularity":1,"seasons":[{"from":"12-31","to":"12-31"}]}"#.utf8)).body(Place.self)
        #expect(party.timezone == "America/Los_Angeles")
        var la: [(name: String, inSeason: Bool)] = []
        for _ in 0..<200 where !la.contains(where: { $0.name == "LA Party" }) {
            la = try at("2027-01-01T05:00:00Z")
            if !la.contains(where: { $0.name == "LA Party" }) { usleep(50_000) }
        }
        #expect(la.prefix(2).map(\.name) == [Self.fireworks, "LA Party"] && la.prefix(2).allSatisfy(\.inSeason), "\(la.prefix(3))")
        #expect(try !at("2026-12-31T05:00:00Z").contains { $0.name == "LA Party" })  // 30 December, 9 pm there

        // Near Sydney Olympic Park: the Show first, then the park's classics, nearest in the area only.
        let near = try f.popular(#"{"near":{"lat":-33.8439,"lon":151.0678},"radius_m":2000,"at":"2028-04-10T02:00:00Z"}"#)
        #expect(near.first?.name == Self.easterShow && near.contains { $0.name == "Accor Stadium" } && !near.contains { $0.name == Self.zoo })
        let box = try f.popular(#"{"bbox":{"south":-33.87,"west":151.2,"north":-33.85,"east":151.22},"at":"2027-06-05T09:00:00Z","limit":5}"#)
        #expect(box.first?.name == Self.vivid && box.count == 5)
    }

    /// The catalog gives an event without a zone of its own its default zone, and refuses
    /// impossible seasons naming the field.
    @Test func theCatalogChecksSeasons() throws {
        let f = try PopularFixture()
        let created = try f.catalogClient.request(type: Methods.Catalog.create.name, body: Data(#"{"name":"Leap Fair","category":"event","lat":-33.87,"lon":151.2,"seasons":[{"from":"02-29","to":"03-02"}]}"#.utf8))
        let place = try created.body(Place.self)
        #expect(place.timezone == "Australia/Sydney" && place.seasons == [Season(from: "02-29", to: "03-02")])
        let plain = try f.catalogClient.request(type: Methods.Catalog.create.name, body: Data(#"{"name":"Plain","category":"park","lat":-33.87,"lon":151.2}"#.utf8)).body(Place.self)
        #expect(plain.timezone == nil && plain.seasons == nil)
        #expect(!String(decoding: try f.catalogClient.request(type: Methods.Catalog.get.name, body: Data(#"{"id":\#(plain.id)}"#.utf8)).bodyJSON, as: UTF8.self).contains("seasons"))

        func refused(_ seasons: String) -> ServiceError? {
            f.refusal(Methods.Catalog.create.name, #"{"name":"X","category":"event","lat":-33.87,"lon":151.2,"seasons":\#(seasons)}"#, client: f.catalogClient)
        }
        for (seasons, field) in [(#"[{"from":"01-01","to":"01-02"},{"from":"01-01","to":"01-02"},{"from":"02-30","to":"03-01"}]"#, "seasons[2].from"),
                                 (#"[{"from":"2027-02-29","to":"2027-03-01"}]"#, "seasons[0].from"),
                                 (#"[{"from":"12-01","to":"13-01"}]"#, "seasons[0].to"),
                                 (#"[{"from":"04-09","to":"2027-04-20"}]"#, "seasons[0].to"),
                                 (#"[{"from":"2027-04-20","to":"2027-04-09"}]"#, "seasons[0].to"),
                                 (#"[{"from":"2027-4-09","to":"2027-04-20"}]"#, "seasons[0].from"),
                                 ("[" + Array(repeating: #"{"from":"01-01","to":"01-02"}"#, count: 21).joined(separator: ",") + "]", "seasons")] {
            let error = refused(seasons)
            #expect(error?.code == .invalidArgument && error?.field == field, "\(seasons): \(String(describing: error))")
        }
        // Twenty is allowed; an update patches them, and null clears them.
        #expect(refused("[" + Array(repeating: #"{"from":"01-01","to":"01-02"}"#, count: 20).joined(separator: ",") + "]") == nil)
        let updated = try f.catalogClient.request(type: "catalog.update", body: Data(#"{"id":\#(place.id),"seasons":[{"from":"2027-04-09","to":"2027-04-20"}]}"#.utf8)).body(Place.self)
        #expect(updated.seasons == [Season(from: "2027-04-09", to: "2027-04-20")] && updated.version == 2)
        let cleared = try f.catalogClient.request(type: "catalog.update", body: Data(#"{"id":\#(place.id),"seasons":null}"#.utf8)).body(Place.self)
        #expect(cleared.seasons == nil)
        let bad = f.refusal("catalog.update", #"{"id":\#(place.id),"seasons":[{"from":"2027-02-29","to":"2027-03-01"}]}"#, client: f.catalogClient)
        #expect(bad?.field == "seasons[0].from")
    }

    /// `search.popular`'s bounds and errors, from the caller's side.
    @Test func popularRefusesWhatIsOutOfBounds() throws {
        let f = try PopularFixture()
        for (json, field) in [(#"{"limit":0}"#, "limit"), (#"{"limit":51}"#, "limit"), (#"{"at":"tomorrow"}"#, "at"),
                              (#"{"at":"2027-02-29T00:00:00Z"}"#, "at"),
                              (#"{"at":"1969-12-31T23:59:59Z"}"#, "at"), (#"{"at":"9999-12-31T23:59:59-23:59"}"#, "at"), (#"{"at":"\#(String(repeating: "9", count: 100_000))"}"#, "at"), (#"{"near":{"lat":91,"lon":0}}"#, "near.lat"),
                              (#"{"near":{"lat":0,"lon":0},"radius_m":50001}"#, "radius_m"), (#"{"radius_m":100}"#, "radius_m"),
                              (#"{"near":{"lat":0,"lon":0},"bbox":{"south":0,"west":0,"north":1,"east":1}}"#, "bbox"),
                              (#"{"bbox":{"south":0,"west":-170,"north":1,"east":170}}"#, "bbox.east"),
                              (#"{"bbox":{"south":2,"west":0,"north":1,"east":1}}"#, "bbox.north")] {  // named as every box names it
            let error = f.refusal("search.popular", json)
            #expect(error?.code == .invalidArgument && error?.field == field, "\(json): \(String(describing: error))")
        }
        #expect(try f.popular(#"{"limit":50}"#).isEmpty)
    }
}

/// Seasons as days: ranges over New Year, 29 February, dated windows.
@Suite struct SeasonTests {
    @Test func daysAreReadStrictly() {
        for good in ["01-01", "02-29", "12-31", "2028-02-29", "2027-12-31"] { #expect(Season.Day(good) != nil, "\(good)") }
        for bad in ["02-30", "13-01", "00-10", "04-31", "2027-02-29", "1-01", "01-1", "2027/01/01", "01-01 ", "", "٠١-٠١", "1969-01-01"] {
            #expect(Season.Day(bad) == nil, "\(bad)")
        }
    }

    @Test func rangesHoldTheirDays() {
        let newYear = Season(from: "12-28", to: "01-02")
        #expect(newYear.contains(year: 2026, month: 12, day: 28) && newYear.contains(year: 2027, month: 1, day: 2))
        #expect(!newYear.contains(year: 2026, month: 12, day: 27) && !newYear.contains(year: 2027, month: 1, day: 3))
        // From 29 February: 1 March in a year without it; to 29 February: 28 February.
        #expect(Season(from: "02-29", to: "03-05").contains(year: 2027, month: 3, day: 1))
        #expect(!Season(from: "02-29", to: "03-05").contains(year: 2027, month: 2, day: 28))
        #expect(Season(from: "02-01", to: "02-29").contains(year: 2027, month: 2, day: 28))
        #expect(Season(from: "02-29", to: "02-29").contains(year: 2028, month: 2, day: 29))
        let dated = Season(from: "2027-04-09", to: "2027-04-20")
        #expect(dated.contains(year: 2027, month: 4, day: 9) && dated.contains(year: 2027, month: 4, day: 20))
        #expect(!dated.contains(year: 2028, month: 4, day: 10) && !dated.contains(year: 2027, month: 4, day: 21))
        #expect(!Season(from: "04-09", to: "2027-04-20").contains(year: 2027, month: 4, day: 10))
    }
}
