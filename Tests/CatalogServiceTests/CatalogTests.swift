import Bus
import CatalogService
import Contracts
import Foundation
import ServiceKit
import Testing

@Suite struct CatalogRequestTests {
    @Test func createGetUpdateListDelete() throws {
        let catalog = try CatalogFixture()
        var input = PlaceInput(name: "Sydney Opera House", category: "attraction", lat: -33.8568, lon: 151.2153)
        input.address = "Bennelong Point, Sydney NSW 2000"
        input.phone = "+61 2 9250 7111"
        input.website = "https://www.sydneyoperahouse.com"
        input.priceLevel = 3
        input.openingHours = [OpeningPeriod(day: 1, open: "09:00", close: "17:00"), OpeningPeriod(day: 5, open: "19:00", close: "01:00")]
        input.photos = [Photo(url: "https://example.org/opera.jpg", attribution: "CC BY-SA")]
        input.externalIds = ["osm": "way/5163069"]
        input.popularity = 99.5
        input.timezone = "Australia/Sydney"
        let created = try catalog.client.call("catalog.create", input, as: Place.self)
        #expect(created.id > 0 && created.version == 1 && created.name == "Sydney Opera House" && created.timezone == "Australia/Sydney")
        #expect(try catalog.client.call("catalog.get", PlaceID(id: created.id), as: Place.self) == created)

        // Partial update: name changes, phone is cleared, everything else stays.
        let updated = try catalog.raw("catalog.update", #"{"id":\#(created.id),"name":"Opera House","phone":null,"expected_version":1}"#)
        #expect(updated["name"] as? String == "Opera House")
        #expect(updated["phone"] == nil)
        #expect(updated["version"] as? Int == 2)
        let fetched = try catalog.client.call("catalog.get", PlaceID(id: created.id), as: Place.self)
        #expect(fetched.phone == nil && fetched.website == input.website && fetched.openingHours == input.openingHours && fetched.externalIds == ["osm": "way/5163069"])
        #expect(throws: ServiceError.self) { try catalog.raw("catalog.update", #"{"id":\#(created.id),"name":"x","expected_version":1}"#) }
        // Changing nothing writes nothing: same version, no event (checked in the event test).
        #expect(try catalog.client.call("catalog.get", PlaceID(id: created.id), as: Place.self).version == 2)
        _ = try catalog.raw("catalog.update", #"{"id":\#(created.id),"name":" Opera House "}"#)
        #expect(try catalog.client.call("catalog.get", PlaceID(id: created.id), as: Place.self).version == 2)

        for i in 0..<5 { _ = try catalog.create("Cafe \(i)", category: "cafe") }
        var names: [String] = []
        var cursor: String?
        for _ in 0..<10 {
            let page = try catalog.client.call("catalog.list", ListPlaces(category: "cafe", limit: 2, cursor: cursor), as: PlacePage.self)
            names += page.places.map(\.place.name)
            guard let next = page.nextCursor else { break }
            cursor = next
        }
        #expect(names == ["Cafe 0", "Cafe 1", "Cafe 2", "Cafe 3", "Cafe 4"])

        let categories = try catalog.client.call("catalog.categories", Empty(), as: CategoryList.self).categories
        #expect(categories.first { $0.id == "cafe" }?.count == 5)
        #expect(categories.first { $0.id == "attraction" }?.count == 1)
        #expect(categories.first { $0.id == "hotel" }?.count == 0)

        #expect(try catalog.client.call("catalog.delete", PlaceID(id: created.id), as: PlaceDeleted.self) == PlaceDeleted(id: created.id))
        #expect(throws: ServiceError(.notFound, "no place with id \(created.id)", field: "id")) {
            try catalog.client.call("catalog.get", PlaceID(id: created.id), as: Place.self)
        }
        #expect(throws: ServiceError(.notFound, "no place with id \(created.id)", field: "id")) {
            try catalog.client.call("catalog.delete", PlaceID(id: created.id), as: PlaceDeleted.self)
        }
    }

    @Test(arguments: [
        (#"{"category":"cafe","lat":0,"lon":0}"#, "name"),
        (#"{"name":"","category":"cafe","lat":0,"lon":0}"#, "name"),
        (#"{"name":"   ","category":"cafe","lat":0,"lon":0}"#, "name"),
        (#"{"name":"<201 × n>","category":"cafe","lat":0,"lon":0}"#, "name"),
        (#"{"name":"x","category":"spaceship","lat":0,"lon":0}"#, "category"),
        (#"{"name":"x","lat":0,"lon":0}"#, "category"),
        (#"{"name":"x","category":"cafe","lat":90.0001,"lon":0}"#, "lat"),
        (#"{"name":"x","category":"cafe","lat":-91,"lon":0}"#, "lat"),
        (#"{"name":"x","category":"cafe","lat":0,"lon":180.5}"#, "lon"),
        (#"{"name":"x","category":"cafe","lat":"NaN","lon":0}"#, "lat"),
        (#"{"name":"x","category":"cafe","lat":0,"lon":"Infinity"}"#, "lon"),
        (#"{"name":"x","category":"cafe","lat":1e999,"lon":0}"#, "lat"),
        (#"{"name":"x","category":"cafe","lat":0}"#, "lon"),
        (#"{"name":"x","category":"cafe","lat":0,"lon":0,"website":"ftp://example.org"}"#, "website"),
        (#"{"name":"x","category":"cafe","lat":0,"lon":0,"website":"javascript:alert(1)"}"#, "website"),
        (#"{"name":"x","category":"cafe","lat":0,"lon":0,"photos":[{"url":"file:///etc/passwd"}]}"#, "photos[0].url"),
        (#"{"name":"x","category":"cafe","lat":0,"lon":0,"price_level":5}"#, "price_level"),
        (#"{"name":"x","category":"cafe","lat":0,"lon":0,"price_level":-1}"#, "price_level"),
        (#"{"name":"x","category":"cafe","lat":0,"lon":0,"phone":"call me"}"#, "phone"),
        (#"{"name":"x","category":"cafe","lat":0,"lon":0,"popularity":-1}"#, "popularity"),
        (#"{"name":"x","category":"cafe","lat":0,"lon":0,"opening_hours":[{"day":8,"open":"09:00","close":"10:00"}]}"#, "opening_hours[0].day"),
        (#"{"name":"x","category":"cafe","lat":0,"lon":0,"opening_hours":[{"day":1,"open":"9am","close":"10:00"}]}"#, "opening_hours[0].open"),
        (#"{"name":"x","category":"cafe","lat":0,"lon":0,"description":"<5001 × d>"}"#, "description"),
        (#"{"name":"x","category":"cafe","lat":0,"lon":0,"timezone":"Mars/Olympus_Mons"}"#, "timezone"),
    ])
    func createValidationNamesTheField(body template: String, field: String) throws {
        // "<N × c>" stands for N copies of c, so long inputs do not flood the test log.
        let body = template.replacing(/<(\d+) × (.)>/) { String(repeating: String($0.2), count: Int($0.1) ?? 0) }
        let catalog = try CatalogFixture()
        do {
            try catalog.raw("catalog.create", body)
            Issue.record("accepted \(body.prefix(80))")
        } catch {
            #expect(error.code == .invalidArgument)
            #expect(error.field == field, "\(error)")
        }
        // Nothing was stored.
        #expect(try catalog.allPlaces().isEmpty)
    }

    @Test func textsAreBoundedInBytesAndRefuseControlCharacters() throws {
        let catalog = try CatalogFixture()
        // 200 characters ("e" and 50 combining accents each) of 20,200 bytes.
        let bomb = String(repeating: "e" + String(repeating: "\u{301}", count: 50), count: 200)
        #expect(bomb.count == 200)
        func refusal(_ fields: String) -> ServiceError? {
            do {
                try catalog.raw("catalog.create", #"{"category":"cafe","lat":0,"lon":0,\#(fields)}"#)
                return nil
            } catch {
                return error
            }
        }
        func quoted(_ text: String) throws -> String { String(decoding: try JSONEncoder().encode(text), as: UTF8.self) }
        let oneLine = "must be one line without control or bidirectional formatting characters"
        #expect(refusal(#""name":\#(try quoted(bomb))"#) == .invalid("name", "must be at most 800 bytes"))
        #expect(refusal(#""name":"x","description":\#(try quoted(String(repeating: "e\u{301}\u{301}", count: 5_000)))"#) ==
                .invalid("description", "must be at most 20000 bytes"))
        #expect(refusal(#""name":"x","address":\#(try quoted(String(repeating: "é", count: 1_001)))"#) == .invalid("address", "must be at most 2000 bytes"))
        #expect(refusal(#""name":"x","website":\#(try quoted("https://example.org/" + String(repeating: "é", count: 4_000)))"#) ==
                .invalid("website", "must be at most 8000 bytes"))
        #expect(refusal(#""name":"x","external_ids":{"osm":\#(try quoted(String(repeating: "e\u{301}\u{301}\u{301}", count: 150)))}"#) ==
                .invalid("external_ids", "sources must be 1-50 characters and ids 1-200"))
        for bad in ["Caf\u{0}e", "Caf\u{202E}e", "Ca\u{7F}fe", "Ca\u{85}fe", "Caf\u{2066}e", "Cafe\u{200F}x", "Ca\nfe"] {
            #expect(refusal(#""name":\#(try quoted(bad))"#) == .invalid("name", oneLine), "\(Array(bad.unicodeScalars))")
        }
        #expect(refusal(#""name":"x","description":"a\u0000b""#) ==
                .invalid("description", "must not contain control or bidirectional formatting characters other than line breaks and tabs"))
        #expect(try catalog.allPlaces().isEmpty)
        // Surrounding line breaks of a name are still trimmed; a description keeps its lines.
        let made = try catalog.raw("catalog.create", #"{"name":"\n Café Sydney \t","category":"cafe","lat":0,"lon":0,"description":"Line one\r\nLine\ttwo\n"}"#)
        #expect(made["name"] as? String == "Café Sydney" && made["description"] as? String == "Line one\r\nLine\ttwo\n")
    }

    @Test func updateAndListErrors() throws {
        let catalog = try CatalogFixture()
        let place = try catalog.create("Bondi Icebergs", category: "restaurant")
        let cases: [(String, String, ErrorCode, String?)] = [
            ("catalog.update", #"{"id":\#(place.id),"name":null}"#, .invalidArgument, "name"),
            ("catalog.update", #"{"id":\#(place.id),"lat":95}"#, .invalidArgument, "lat"),
            ("catalog.update", #"{"id":\#(place.id),"category":"moon"}"#, .invalidArgument, "category"),
            ("catalog.update", #"{"id":999999,"name":"x"}"#, .notFound, "id"),
            ("catalog.update", #"{"name":"x"}"#, .invalidArgument, "id"),
            ("catalog.update", #"{"id":\#(place.id),"expected_version":7,"name":"x"}"#, .conflict, "expected_version"),
            ("catalog.get", #"{"id":"seven"}"#, .invalidArgument, "id"),
            ("catalog.list", #"{"limit":0}"#, .invalidArgument, "limit"),
            ("catalog.list", #"{"limit":101}"#, .invalidArgument, "limit"),
            ("catalog.list", #"{"cursor":"not-a-cursor!"}"#, .invalidArgument, "cursor"),
            ("catalog.list", #"{"category":"moon"}"#, .invalidArgument, "category"),
            // The params' shape names the field that held a fraction where an integer belongs.
            ("catalog.update", #"{"id":\#(place.id),"price_level":2.5}"#, .invalidArgument, "price_level"),
            ("catalog.update", #"{"id":\#(place.id),"nmae":"x"}"#, .invalidArgument, "nmae"),
        ]
        for (type, body, code, field) in cases {
            do {
                try catalog.raw(type, body)
                Issue.record("\(type) accepted \(body)")
            } catch {
                #expect(error.code == code && error.field == field, "\(type) \(body): \(error)")
            }
        }
        #expect(try catalog.client.call("catalog.get", PlaceID(id: place.id), as: Place.self) == place)
    }

    @Test func externalIdsAreUniquePerSource() throws {
        let catalog = try CatalogFixture()
        var input = PlaceInput(name: "Harbour Bridge", category: "attraction", lat: -33.8523, lon: 151.2108)
        input.externalIds = ["osm": "way/1"]
        let first = try catalog.client.call("catalog.create", input, as: Place.self)
        do {
            _ = try catalog.client.call("catalog.create", input, as: Place.self)
            Issue.record("duplicate external id accepted")
        } catch {
            #expect(error.code == .alreadyExists && error.field == "external_ids")
        }
        input.externalIds = ["wikidata": "way/1"]
        _ = try catalog.client.call("catalog.create", input, as: Place.self)
        // Freed on delete.
        _ = try catalog.client.call("catalog.delete", PlaceID(id: first.id), as: PlaceDeleted.self)
        input.externalIds = ["osm": "way/1"]
        _ = try catalog.client.call("catalog.create", input, as: Place.self)
        #expect(try catalog.allPlaces().count == 2)
    }
}

@Suite struct CatalogEventTests {
    @Test func everyChangeEmitsAnEventWithConsecutiveSequenceNumbers() throws {
        let catalog = try CatalogFixture(heartbeatMs: 50)
        let sub = try Socket(catalog.context, .sub)
        try sub.subscribe("")
        try sub.setReceiveTimeout(milliseconds: 3_000)
        try sub.connect(catalog.runtime.endpoints.publish[0])
        // A heartbeat proves the subscription is live before anything is written.
        var heartbeat: [Data]?
        for _ in 0..<100 where heartbeat == nil { heartbeat = try sub.receive() }
        #expect(heartbeat.map { String(decoding: $0[0], as: UTF8.self) } == "sys.heartbeat")

        let a = try catalog.create("A")
        let b = try catalog.create("B")
        _ = try catalog.raw("catalog.update", #"{"id":\#(a.id),"name":"A2"}"#)
        _ = try catalog.raw("catalog.update", #"{"id":\#(a.id)}"#)  // no change, no event
        _ = try catalog.client.call("catalog.delete", PlaceID(id: b.id), as: PlaceDeleted.self)
        #expect(throws: ServiceError.self) { try catalog.raw("catalog.create", #"{"name":""}"#) }  // no event for a refusal

        var events: [(String, EventHeader, Data)] = []
        for _ in 0..<200 where events.count < 4 {
            guard let frames = try sub.receive() else { break }
            let header = try JSONDecoder().decode(EventHeader.self, from: frames[1])
            if header.type != "sys.heartbeat" { events.append((String(decoding: frames[0], as: UTF8.self), header, frames[1])) }
        }
        #expect(events.map(\.0) == [CatalogEvents.upserted, CatalogEvents.upserted, CatalogEvents.upserted, CatalogEvents.deleted])
        #expect(events.map(\.1.seq) == [1, 2, 3, 4])
        #expect(Set(events.map(\.1.epoch)).count == 1)
        let renamed = try JSONCoding.decodeBody(Place.self, fromEnvelope: events[2].2)
        #expect(renamed.name == "A2" && renamed.version == 2)
        #expect(try JSONCoding.decodeBody(PlaceDeleted.self, fromEnvelope: events[3].2) == PlaceDeleted(id: b.id))

        // sys.replay serves the same events, one frame each, after a given seq.
        let replay = try catalog.client.request(type: "sys.replay", body: Data(#"{"after":1,"limit":2}"#.utf8))
        #expect(replay.attachments.count == 2)
        #expect(try replay.attachments.map { try JSONDecoder().decode(EventHeader.self, from: $0).seq } == [2, 3])
        #expect(replay.attachments[1] == events[2].2)
    }

    @Test func systemRequests() throws {
        let catalog = try CatalogFixture()
        _ = try catalog.create("A")
        let ping = try catalog.raw("sys.ping", "{}")
        #expect(ping["service"] as? String == "catalog" && ping["pong"] as? Bool == true)
        let stats = try catalog.raw("sys.stats", "{}")
        let outbox = stats["outbox"] as? [String: Any]
        #expect(outbox?["head"] as? Int == 1)
        let server = stats["server"] as? [String: Any]
        #expect((server?["requests"] as? Int ?? 0) >= 2)
        #expect((server?["latency_us"] as? [String: Any])?["p99"] != nil)
        let snapshot = try catalog.client.request(type: "sys.snapshot", body: Data("{}".utf8))
        #expect(snapshot.attachments.count == 1)
    }
}
