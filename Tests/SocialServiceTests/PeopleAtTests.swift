import Bus
import Contracts
import Foundation
import ServiceCore
import ServiceKit
import Storage
@testable import SocialService
import Testing

/// `profile.discoverable` and `social.people_at`, with a fake favorites publishing visits.
@Suite struct PeopleAtTests {
    /// The ids of the people `social.people_at` (`json`) lists for `user`.
    func people(_ f: SocialFixture, _ json: String, as user: Int64) throws -> [Int] {
        (try f.call("social.people_at", json, as: user)["people"] as? [[String: Any]] ?? []).compactMap { ($0["user"] as? [String: Any])?["id"] as? Int }
    }

    /// Makes `username` discoverable; returns the id.
    func discoverable(_ f: SocialFixture, _ username: String, birthYear: Int? = nil) throws -> Int64 {
        let id = try f.register(username)
        try f.call("profile.update", #"{"discoverable":true\#(birthYear.map { ",\"birth_year\":\($0)" } ?? "")}"#, as: id)
        return id
    }

    @Test func discoverableIsOffByDefaultAndShownToTheOwnerOnly() throws {
        let f = try SocialFixture()
        let ann = try f.register("ann"), ben = try f.register("ben")
        #expect(try f.call("profile.get", as: ann)["discoverable"] as? Bool == false)
        #expect(try f.call("profile.update", #"{"discoverable":true}"#, as: ann)["discoverable"] as? Bool == true)
        #expect(try f.call("profile.get", #"{"user_id":\#(ann)}"#, as: ben)["discoverable"] == nil)
        #expect(try f.call("profile.get", #"{"user_id":\#(ann)}"#)["discoverable"] == nil)
        #expect(f.error("profile.update", #"{"discoverable":null}"#, as: ann) == .invalid("discoverable", "cannot be null; give true or false"))
        #expect(f.error("profile.update", #"{"discoverable":"yes"}"#, as: ann)?.field == "discoverable")
        #expect(f.error("profile.update", #"{"discoverable":true}"#) == ServiceError(.unauthenticated, "profile.update needs a signed-in user"))

        // Each change is one event; the same value again is none.
        try f.call("profile.update", #"{"discoverable":true}"#, as: ann)
        try f.call("profile.update", #"{"discoverable":false}"#, as: ann)
        try f.call("profile.update", #"{"bio":"hi"}"#, as: ann)
        let changes = try f.events().filter { $0.header.type == SocialEvents.profileDiscoverable }.map { try $0.body(DiscoverableChanged.self) }
        #expect(changes == [DiscoverableChanged(userId: ann, discoverable: true), DiscoverableChanged(userId: ann, discoverable: false)])
        #expect(try f.call("profile.get", as: ann)["discoverable"] as? Bool == false)
    }

    @Test func theSnapshotNamesEachDiscoverableUser() throws {
        let f = try SocialFixture()
        let ann = try discoverable(f, "ann"), _ = try f.register("ben"), cat = try discoverable(f, "cat")
        var after: String?
        var named: [DiscoverableChanged] = []
        for _ in 0..<20 {
            let body = after.map { #"{"after":"\#($0)","limit":1}"# } ?? #"{"limit":1}"#
            let page = try f.client.request(type: "sys.snapshot", body: Data(body.utf8))
            named += try page.attachments.map { try ReceivedEvent(envelope: $0) }
                .filter { $0.header.type == SocialEvents.profileDiscoverable }.map { try $0.body(DiscoverableChanged.self) }
            guard let next = (try JSONSerialization.jsonObject(with: page.bodyJSON) as? [String: Any])?["next"] as? String else { break }
            after = next
        }
        #expect(named == [DiscoverableChanged(userId: ann, discoverable: true), DiscoverableChanged(userId: cat, discoverable: true)])
    }

    @Test func visitorsOfAPlaceAreListedNewestFirstWithAWayToMessageThem() throws {
        let f = try SocialFixture(favorites: true)
        let me = try f.register("mia")
        let ann = try discoverable(f, "ann", birthYear: 1990), ben = try discoverable(f, "ben")
        try f.visited(ann, place: 1, at: "2026-05-01T10:00:00.000Z")
        try f.visited(ben, place: 1, at: "2026-05-20T10:00:00.000Z")
        try f.visited(me, place: 1)  // not discoverable: favorites would not send it; social ignores it anyway
        #expect(try f.eventually { try people(f, #"{"place_id":1}"#, as: me) == [Int(ben), Int(ann)] })
        let reply = try f.call("social.people_at", #"{"place_id":1}"#, as: me)
        let first = (reply["people"] as? [[String: Any]])?.last
        #expect(first?["message"] as? String == "user:\(ann)" && first?["age_group"] as? String == "35-44")
        #expect(first?["here_now"] as? Bool == false && first?["visited_at"] as? String == "2026-05-01T10:00:00.000Z")
        #expect((first?["user"] as? [String: Any])?["username"] as? String == "ann" && reply["more"] as? Bool == false)
        #expect(((reply["people"] as? [[String: Any]])?.first)?["age_group"] == nil)  // ben gave no birth year

        // The caller is never listed; a place nobody visited lists nobody.
        #expect(try people(f, #"{"place_id":1}"#, as: ann) == [Int(ben)])
        #expect(try people(f, #"{"place_id":2}"#, as: me).isEmpty)
        #expect(f.error("social.people_at", #"{"place_id":99}"#, as: me) == ServiceError(.notFound, "no place with id 99", field: "place_id"))

        // An unvisit removes them; visiting again moves the time.
        try f.unvisited(ben, place: 1)
        #expect(try f.eventually { try people(f, #"{"place_id":1}"#, as: me) == [Int(ann)] })
        try f.visited(ann, place: 1, at: "2026-05-31T10:00:00.000Z")
        #expect(try f.eventually {
            (try f.call("social.people_at", #"{"place_id":1}"#, as: me)["people"] as? [[String: Any]])?.first?["visited_at"] as? String
                == "2026-05-31T10:00:00.000Z"
        })
    }

    @Test func aCircleListsTheVisitsOfPlacesWithinIt() throws {
        let f = try SocialFixture(favorites: true)
        let me = try f.register("mia")
        let ann = try discoverable(f, "ann"), ben = try discoverable(f, "ben")
        try f.visited(ann, place: 1)  // the Opera House
        try f.visited(ben, place: 2)  // Bondi, 6 km away
        let opera = #""near":{"lat":-33.8568,"lon":151.2153}"#
        #expect(try f.eventually { try people(f, #"{"near":{"lat":-33.8908,"lon":151.2743},"radius_m":200}"#, as: me) == [Int(ben)] })
        #expect(try people(f, #"{\#(opera),"radius_m":2000}"#, as: me) == [Int(ann)])
        // 600 m from the Opera House: in a 700 m circle, not in a 500 m one (the R*Tree box is cut to the circle).
        #expect(try people(f, #"{"near":{"lat":-33.8622,"lon":151.2153},"radius_m":700}"#, as: me) == [Int(ann)])
        #expect(try people(f, #"{"near":{"lat":-33.8622,"lon":151.2153},"radius_m":500}"#, as: me).isEmpty)
    }

    @Test func onlyDiscoverableUsersAreEverListed() throws {
        let f = try SocialFixture(favorites: true)
        let me = try f.register("mia"), shy = try f.register("shy")
        let ann = try discoverable(f, "ann")
        try f.visited(shy, place: 1)
        try f.visited(ann, place: 1)
        #expect(try f.eventually { try people(f, #"{"place_id":1}"#, as: me) == [Int(ann)] })

        // Stopping drops the copy at once; a visit favorites sent before it heard is ignored.
        try f.call("profile.update", #"{"discoverable":false}"#, as: ann)
        #expect(try people(f, #"{"place_id":1}"#, as: me).isEmpty)
        try f.visited(ann, place: 3)
        try f.visited(shy, place: 3)
        let marker = try discoverable(f, "marker")
        try f.visited(marker, place: 3)
        #expect(try f.eventually { try people(f, #"{"place_id":3}"#, as: me) == [Int(marker)] })
        #expect(try people(f, #"{"place_id":1}"#, as: me).isEmpty)
        // Becoming discoverable again lists what favorites sends from then on.
        try f.call("profile.update", #"{"discoverable":true}"#, as: ann)
        try f.visited(ann, place: 1)
        #expect(try f.eventually { try people(f, #"{"place_id":1}"#, as: me) == [Int(ann)] })

        // A deleted account goes with its visits.
        try f.call("auth.delete", #"{"password":"\#(SocialFixture.password)"}"#, as: ann)
        #expect(try people(f, #"{"place_id":1}"#, as: me).isEmpty)
        #expect(try Database(path: f.databasePath).scalarInt("SELECT count(*) FROM visits WHERE user_id = ?", ann) == 0)
    }

    @Test func anonymousCallersAreRefusedBeforeAnythingElse() throws {
        let f = try SocialFixture(favorites: true)
        #expect(f.error("social.people_at", #"{"place_id":1}"#) == ServiceError(.unauthenticated, "social.people_at needs a signed-in user"))
        #expect(f.error("social.people_at", #"{"near":{"lat":999}}"#) == ServiceError(.unauthenticated, "social.people_at needs a signed-in user"))
        #expect(f.error("social.people_at", #"{"place_id":1}"#, as: 4242) == ServiceError(.unauthenticated, "no user with id 4242"))
    }

    @Test func hostileRequestsNameTheirField() throws {
        let f = try SocialFixture(favorites: true)
        let me = try f.register("mia")
        let radius = "must be a number in [200, 2000]"
        let cases: [(String, ServiceError)] = [
            ("{}", .invalid("place_id", "give place_id, or near and radius_m")),
            (#"{"place_id":1,"near":{"lat":1,"lon":1}}"#, .invalid("place_id", "give place_id, or near and radius_m, not both")),
            (#"{"place_id":0}"#, .invalid("place_id", "must be 1 or more")),
            (#"{"place_id":-5}"#, .invalid("place_id", "must be 1 or more")),
            (#"{"radius_m":200}"#, .invalid("near", "missing required field near")),
            (#"{"near":{"lat":1},"radius_m":200}"#, .invalid("near.lon", "missing required field near.lon")),
            (#"{"near":{"lat":1,"lon":1}}"#, .invalid("radius_m", "missing required field radius_m")),
            (#"{"near":{"lat":1,"lon":1},"radius_m":2000.5}"#, .invalid("radius_m", radius)),
            (#"{"near":{"lat":1,"lon":1},"radius_m":0}"#, .invalid("radius_m", radius)),
            (#"{"near":{"lat":1,"lon":1},"radius_m":-1}"#, .invalid("radius_m", radius)),
            (#"{"near":{"lat":1,"lon":1},"radius_m":1e308,"limit":5}"#, .invalid("radius_m", radius)),
            (#"{"near":{"lat":1,"lon":1},"radius_m":1e-320}"#, .invalid("radius_m", radius)),
            (#"{"near":{"lat":1,"lon":1},"radius_m":199.9}"#, .invalid("radius_m", radius)),
            (#"{"near":{"lat":1e308,"lon":1},"radius_m":200}"#, .invalid("near.lat", "must be a number in [-90, 90]")),
            (#"{"near":{"lat":1,"lon":-180.5},"radius_m":200}"#, .invalid("near.lon", "must be a number in [-180, 180]")),
            (#"{"lat":1,"lon":1,"radius_m":200}"#, .invalid("lat", "unknown parameter 'lat'; did you mean 'near'?")),
            (#"{"place_id":1,"limit":51}"#, .invalid("limit", "must be 1 to 50")),
            (#"{"place_id":1,"limit":0}"#, .invalid("limit", "must be 1 to 50")),
        ]
        for (body, expected) in cases {
            #expect(f.error("social.people_at", body, as: me) == expected, "\(body)")
        }
        #expect(f.error("social.people_at", #"{"near":{"lat":91,"lon":1},"radius_m":200}"#, as: me)?.field == "near.lat")
        #expect(f.error("social.people_at", #"{"near":{"lat":1,"lon":-180.5},"radius_m":200}"#, as: me)?.field == "near.lon")
        #expect(f.error("social.people_at", #"{"near":{"lat":"north","lon":1},"radius_m":200}"#, as: me)?.field == "near.lat")
        #expect(f.error("social.people_at", #"{"place_id":"1 OR 1=1"}"#, as: me)?.field == "place_id")
    }

    @Test func aPlaceCrowdedWithVisitorsGivesAtMostFiftyAndSaysThereIsMore() throws {
        let f = try SocialFixture(favorites: true)
        let me = try f.register("mia")
        var visitors: [Int64] = []
        for i in 0..<55 {
            let id = try discoverable(f, "visitor\(i)")
            try f.visited(id, place: 2, at: String(format: "2026-05-01T10:%02d:00.000Z", i))
            visitors.append(id)
        }
        // Favorites' events apply in order: once the last visit is listed, all are.
        #expect(try f.eventually { try people(f, #"{"place_id":2,"limit":1}"#, as: me) == [Int(visitors[54])] })
        let reply = try f.call("social.people_at", #"{"place_id":2}"#, as: me)
        #expect((reply["people"] as? [[String: Any]])?.count == 50 && reply["more"] as? Bool == true)
        // The newest visits first.
        #expect(try people(f, #"{"place_id":2,"limit":3}"#, as: me) == visitors.suffix(3).reversed().map(Int.init))
    }

    @Test func aPageStopsAtItsBudgetInBytes() throws {
        let f = try SocialFixture(pageBudget: 300, favorites: true)
        let me = try f.register("mia")
        for i in 0..<10 { try f.visited(try discoverable(f, "visitor\(i)"), place: 3) }
        #expect(try f.eventually { try f.call("social.people_at", #"{"place_id":3}"#, as: me)["more"] as? Bool == true })
        let reply = try f.call("social.people_at", #"{"place_id":3}"#, as: me)
        let listed = reply["people"] as? [[String: Any]] ?? []
        #expect(!listed.isEmpty && listed.count < 10)
        #expect(try JSONSerialization.data(withJSONObject: listed).count <= 300)
    }

    @Test func socialKeepsAtMostAThousandVisitsOfAUser() throws {
        let f = try SocialFixture(favorites: true)
        let ann = try discoverable(f, "ann")
        let db = try Database(path: f.databasePath)
        try db.transaction {
            for i in 0..<1_005 {
                let at = 1_780_000_000_000 + Int64(i) * 1_000
                try PeopleRules.keep(PlaceVisited(userId: ann, placeId: Int64(100 + i), lat: 1, lon: 1, at: Logger.timestamp(Date(timeIntervalSince1970: Double(at) / 1000))), db)
            }
        }
        #expect(try db.scalarInt("SELECT count(*) FROM visits WHERE user_id = ?", ann) == 1_000)
        #expect(try db.scalarInt("SELECT count(*) FROM visits_geo") == 1_000)
        #expect(try db.scalarInt("SELECT min(place_id) FROM visits") == 105)  // the oldest five went
    }

    @Test func thoseThereNowComeFirstFromAPositionOfTheLastTenMinutes() throws {
        let f = try SocialFixture(favorites: true)
        let mia = try f.register("mia"), shy = try f.register("shy")
        let ann = try discoverable(f, "ann"), ben = try discoverable(f, "ben"), cat = try discoverable(f, "cat")
        try f.visited(cat, place: 1)
        #expect(try f.eventually { try people(f, #"{"place_id":1}"#, as: mia) == [Int(cat)] })
        // ann 100 m from the Opera House, ben 300 m from it; shy is not discoverable and shares with no group.
        #expect(try f.call("groups.position", #"{"lat":-33.8577,"lon":151.2153}"#, as: ann)["kept"] as? Bool == true)
        try f.call("groups.position", #"{"lat":-33.8595,"lon":151.2153}"#, as: ben)
        #expect(try f.call("groups.position", #"{"lat":-33.8568,"lon":151.2153}"#, as: shy)["kept"] as? Bool == false)
        let reply = try f.call("social.people_at", #"{"place_id":1}"#, as: mia)
        let listed = reply["people"] as? [[String: Any]] ?? []
        #expect(listed.compactMap { ($0["user"] as? [String: Any])?["id"] as? Int } == [Int(ann), Int(cat)])
        #expect(listed.first?["here_now"] as? Bool == true && listed.first?["visited_at"] == nil)
        #expect(listed.last?["here_now"] as? Bool == false)
        // A circle takes its own radius: ben, 300 m away, is in a 500 m one; the latest position first.
        f.clock.advance(1)
        try f.call("groups.position", #"{"lat":-33.8595,"lon":151.2153}"#, as: ben)
        #expect(try people(f, #"{"near":{"lat":-33.8568,"lon":151.2153},"radius_m":500}"#, as: mia) == [Int(ben), Int(ann), Int(cat)])
        // Ten minutes on, a position is no longer "now".
        f.clock.advance(601)
        #expect(try people(f, #"{"near":{"lat":-33.8568,"lon":151.2153},"radius_m":500}"#, as: mia) == [Int(cat)])
        // One who stops being discoverable has their position dropped (no group keeps it).
        try f.call("groups.position", #"{"lat":-33.8577,"lon":151.2153}"#, as: ann)
        #expect(try people(f, #"{"place_id":1}"#, as: mia) == [Int(ann), Int(cat)])
        try f.call("profile.update", #"{"discoverable":false}"#, as: ann)
        #expect(try Database(path: f.databasePath).scalarInt("SELECT count(*) FROM positions WHERE user_id = ?", ann) == 0)
        #expect(try people(f, #"{"place_id":1}"#, as: mia) == [Int(cat)])
    }

    @Test func aBlockHidesBothWays() throws {
        let f = try SocialFixture(favorites: true)
        let mia = try discoverable(f, "mia")
        let ann = try discoverable(f, "ann"), ben = try discoverable(f, "ben"), cat = try discoverable(f, "cat")
        for user in [mia, ann, ben, cat] { try f.visited(user, place: 3) }
        try f.call("groups.position", #"{"lat":-33.8612,"lon":151.2111}"#, as: ann)
        try f.call("groups.position", #"{"lat":-33.8612,"lon":151.2111}"#, as: ben)
        #expect(try f.eventually { try people(f, #"{"place_id":3}"#, as: mia).count == 3 })
        try f.call("social.block", #"{"user_id":\#(ann)}"#, as: mia)  // mia blocks ann
        try f.call("social.block", #"{"user_id":\#(mia)}"#, as: ben)  // ben blocks mia
        for json in [#"{"place_id":3}"#, #"{"near":{"lat":-33.8612,"lon":151.2111},"radius_m":200}"#] {
            #expect(try people(f, json, as: mia) == [Int(cat)], "\(json)")
            #expect(try !people(f, json, as: ann).contains(Int(mia)), "\(json)")
            #expect(try !people(f, json, as: ben).contains(Int(mia)), "\(json)")
            #expect(try people(f, json, as: cat).contains(Int(mia)), "\(json)")
        }
        try f.call("social.unblock", #"{"user_id":\#(ann)}"#, as: mia)
        #expect(try people(f, #"{"place_id":3}"#, as: mia) == [Int(ann), Int(cat)])
    }

    @Test func turningDiscoverableOnAndOffInALoopIsRateLimited() throws {
        let f = try SocialFixture()
        let ann = try f.register("ann")
        for i in 0..<10 { try f.call("profile.update", #"{"discoverable":\#(i % 2 == 0)}"#, as: ann) }
        // Setting what it already is changes nothing, so it is not counted.
        try f.call("profile.update", #"{"discoverable":false,"bio":"still me"}"#, as: ann)
        #expect(f.error("profile.update", #"{"discoverable":true,"bio":"changed"}"#, as: ann)
                == ServiceError(.rateLimited, "discoverable changes at most 10 times an hour; try again later", field: "discoverable"))
        // Refused whole: neither field changed, and no event went out.
        let profile = try f.call("profile.get", as: ann)
        #expect(profile["discoverable"] as? Bool == false && profile["bio"] as? String == "still me")
        #expect(try f.events().filter { $0.header.type == SocialEvents.profileDiscoverable }.count == 10)
        f.clock.advance(3_601)
        #expect(try f.call("profile.update", #"{"discoverable":true}"#, as: ann)["discoverable"] as? Bool == true)
    }

    @Test func shrinkingOrMovingCirclesCannotPlaceAnyoneBelowTheGrid() throws {
        let f = try SocialFixture()
        let mia = try f.register("mia")
        let ann = try discoverable(f, "ann"), ben = try discoverable(f, "ben")
        // 90 m apart, in one cell of the grid (-33.857 to -33.856, 151.215 to 151.216).
        try f.call("groups.position", #"{"lat":-33.8569,"lon":151.2151}"#, as: ann)
        try f.call("groups.position", #"{"lat":-33.8561,"lon":151.2159}"#, as: ben)
        // The smallest circle is 200 m.
        #expect(f.error("social.people_at", #"{"near":{"lat":-33.8569,"lon":151.2151},"radius_m":1e-320}"#, as: mia)
            == .invalid("radius_m", "must be a number in [200, 2000]"))
        // Circles moved step by step across them, north-south and east-west: whatever the
        // centre, both or neither are there, so no answer tells one point of the cell from another.
        var both = 0, neither = 0
        var centres: [(lat: Double, lon: Double)] = []
        for step in -7...7 {
            let k = Double(step)
            centres.append((lat: -33.8565 + k * 0.0003, lon: 151.2155))
            centres.append((lat: -33.8565, lon: 151.2155 + k * 0.0004))
        }
        for (lat, lon) in centres {
            let listed = try people(f, #"{"near":{"lat":\#(lat),"lon":\#(lon)},"radius_m":200}"#, as: mia)
            #expect(listed.contains(Int(ann)) == listed.contains(Int(ben)), "\(lat), \(lon): \(listed)")
            if listed.count == 2 { both += 1 } else if listed.isEmpty { neither += 1 }
        }
        #expect(both > 0 && neither > 0)
    }

    @Test func thirtyCallsAMinuteAtMost() throws {
        let f = try SocialFixture()
        let rex = try f.register("rex"), mia = try f.register("mia")
        for _ in 0..<30 { try f.call("social.people_at", #"{"near":{"lat":1,"lon":1},"radius_m":200}"#, as: rex) }
        #expect(f.error("social.people_at", #"{"near":{"lat":1,"lon":1},"radius_m":200}"#, as: rex)
            == ServiceError(.rateLimited, "at most 30 people_at calls a minute; try again in a moment"))
        // Each caller their own.
        try f.call("social.people_at", #"{"near":{"lat":1,"lon":1},"radius_m":200}"#, as: mia)
        f.clock.advance(60)
        try f.call("social.people_at", #"{"near":{"lat":1,"lon":1},"radius_m":200}"#, as: rex)
    }

    @Test func moreMeansOnlyThatPeopleWereLeftOut() throws {
        let f = try SocialFixture()
        let mia = try f.register("mia")
        let ann = try discoverable(f, "ann"), ben = try discoverable(f, "ben")
        try f.call("groups.position", #"{"lat":1,"lon":1}"#, as: ann)
        try f.call("groups.position", #"{"lat":1,"lon":1}"#, as: ben)
        #expect(try f.call("social.people_at", #"{"near":{"lat":1,"lon":1},"radius_m":200,"limit":1}"#, as: mia)["more"] as? Bool == true)
        #expect(try f.call("social.people_at", #"{"near":{"lat":1,"lon":1},"radius_m":200}"#, as: mia)["more"] as? Bool == false)
    }
}
