import Bus
import Contracts
import FavoritesService
import Foundation
import Geo
import Storage
import Testing
import TestSupport

/// Sydney Opera House, where most pin tests happen.
let pinOpera = Coordinate(uncheckedLatitude: -33.8568, longitude: 151.2153)

/// `{"lat":…,"lon":…}` members of a point, and more members after them.
func pinPoint(_ point: Coordinate, _ more: String = "") -> String {
    #"{"lat":\#(point.latitude),"lon":\#(point.longitude)\#(more.isEmpty ? "" : "," + more)}"#
}

@Suite(.serialized) struct PinTests {
    @Test func aPinShowsTheNearestPlaceWithin100MetresAndNoneAt101() throws {
        let f = try PinFixture()
        try f.place(1, name: "Opera Bar", lat: pinOpera.latitude, lon: pinOpera.longitude, address: "Bennelong Point")
        let near = pinOpera.destination(bearingDegrees: 90, distanceMeters: 99.5)
        let far = pinOpera.destination(bearingDegrees: 90, distanceMeters: 101)
        let shown = try f.add(pinPoint(near, #""title":"Near""#), as: 2)
        #expect(shown.place?.id == 1 && shown.place?.name == "Opera Bar" && shown.place?.address == "Bennelong Point")
        #expect(shown.place.map { abs($0.distanceM - 99.5) < 0.01 } == true)
        #expect(try f.add(pinPoint(far), as: 2).place == nil)

        // Of two places in reach, the nearer.
        let closer = pinOpera.destination(bearingDegrees: 90, distanceMeters: 70)
        try f.place(2, name: "Closer", lat: closer.latitude, lon: closer.longitude)
        let pins = try f.list(as: 2).pins
        #expect(pins.map(\.place?.id) == [2, 2])
        #expect(pins.first?.place.map { abs($0.distanceM - 31) < 0.1 } == true)
    }

    @Test func aPlaceDeletedOrMovedAwayIsNoLongerShown() throws {
        let f = try PinFixture()
        try f.place(1, name: "Kiosk", lat: pinOpera.latitude, lon: pinOpera.longitude)
        let pin = try f.add(pinPoint(pinOpera), as: 2)
        #expect(pin.place?.id == 1)

        try f.place(1, name: "Kiosk", lat: -33.9, lon: 151.0, version: 2)
        #expect(try f.list(as: 2).pins.map(\.place?.id) == [nil])
        try f.place(1, name: "Kiosk, back", lat: pinOpera.latitude, lon: pinOpera.longitude, version: 3)
        #expect(try f.list(as: 2).pins.map(\.place?.name) == ["Kiosk, back"])

        try f.deletePlace(1)
        #expect(try f.list(as: 2).pins.map(\.place?.id) == [nil])
        #expect(try f.list(as: 2).pins.map(\.id) == [pin.id])
    }

    @Test func aBoxAcrossThe180thMeridianHoldsThePinsOnBothSides() throws {
        let f = try PinFixture()
        var ids: [Double: Int64] = [:]
        for lon in [179.5, -179.5, 180, -180, 170, 0, -170] {
            ids[lon] = try f.add(#"{"lat":10,"lon":\#(lon)}"#, as: 2).id
        }
        let across = try f.listAll(#""bbox":{"south":0,"west":179,"north":20,"east":-179}"#, as: 2).pins.map(\.id)
        #expect(Set(across) == Set([179.5, -179.5, 180, -180].compactMap { ids[$0] }))
        #expect(across == across.sorted(by: >))
        let plain = try f.listAll(#""bbox":{"south":0,"west":-1,"north":20,"east":171}"#, as: 2).pins.map(\.id)
        #expect(Set(plain) == Set([170, 0].compactMap { ids[$0] }))
        #expect(try f.list(#"{"bbox":{"south":11,"west":-180,"north":20,"east":180}}"#, as: 2).pins.isEmpty)

        // Nearest across the meridian too: 180 and -180 are one line, 179.5 and -179.5 about 55 km from it.
        let near = try f.list(#"{"near":{"lat":10,"lon":-180},"radius_m":60000}"#, as: 2).pins
        #expect(near.prefix(2).map(\.id).sorted() == [ids[180], ids[-180]].compactMap { $0 }.sorted())
        #expect(near.prefix(2).allSatisfy { ($0.distanceM ?? 1) < 0.001 })
        #expect(Set(near.dropFirst(2).map(\.id)) == Set([179.5, -179.5].compactMap { ids[$0] }))
        #expect(near.dropFirst(2).allSatisfy { ($0.distanceM ?? 0) > 50_000 && ($0.distanceM ?? 0) < 60_000 })
    }

    @Test func pagesHaveNoDuplicatesAndNoGaps() throws {
        let f = try PinFixture()
        var added: [Int64] = []
        for i in 0..<150 {
            // Every fifth pin at the same point, so nearest-first pages must break ties by id.
            let point = i % 5 == 0 ? pinOpera : pinOpera.destination(bearingDegrees: Double(i * 7 % 360), distanceMeters: Double(i * 13))
            added.append(try f.add(pinPoint(point, #""title":"P\#(i)""#), as: 2).id)
            f.advance(1)
        }
        let newest = try f.listAll(#""limit":7"#, as: 2)
        #expect(newest.pins.map(\.id) == added.reversed() && newest.pages == 22)

        let near = try f.listAll(#""near":\#(pinPoint(pinOpera)),"limit":9"#, as: 2)
        #expect(near.pins.count == 150 && Set(near.pins.map(\.id)) == Set(added))
        let distances = near.pins.compactMap(\.distanceM)
        #expect(distances.count == 150 && distances == distances.sorted())
        #expect(near.pins.prefix(30).map(\.id) == added.enumerated().filter { $0.offset % 5 == 0 }.map(\.element))

        let within = try f.listAll(#""near":\#(pinPoint(pinOpera)),"radius_m":500,"limit":4"#, as: 2).pins
        #expect(within.count == 30 + (1..<150).filter { $0 % 5 != 0 && $0 * 13 <= 500 }.count)
        #expect(within.allSatisfy { ($0.distanceM ?? .infinity) <= 500 })

        let boxed = try f.listAll(#""bbox":{"south":-33.9,"west":151.2,"north":-33.85,"east":151.23},"limit":11"#, as: 2).pins.map(\.id)
        #expect(Set(boxed).count == boxed.count && boxed == boxed.sorted(by: >) && boxed.count > 40)
    }

    @Test func aPageStopsAtItsByteBudget() throws {
        let f = try PinFixture { $0.pageBudgetBytes = 2_000 }
        let note = String(repeating: "n", count: 450)
        var added: [Int64] = []
        for _ in 0..<10 { added.append(try f.add(pinPoint(pinOpera, #""note":"\#(note)""#), as: 2).id) }
        let first = try f.list(as: 2)
        #expect(first.pins.count == 3 && first.nextCursor != nil)
        let all = try f.listAll(as: 2)
        #expect(all.pins.map(\.id) == added.reversed() && all.pages == 4)
    }

    @Test func updateChangesWhatIsGivenAndNullClears() throws {
        let f = try PinFixture()
        try f.place(1, name: "Kiosk", lat: pinOpera.latitude, lon: pinOpera.longitude)
        let pin = try f.add(pinPoint(pinOpera, #""title":"Lunch","note":"Bring a hat""#), as: 2)
        f.advance(5_000)
        let retitled = try JSONCoding.decoder.decode(PinReply.self, from: try f.call("pins.update", #"{"id":\#(pin.id),"title":null}"#, as: 2))
        #expect(retitled.title == nil && retitled.note == "Bring a hat" && retitled.lat == pinOpera.latitude)
        #expect(retitled.createdAt == "2026-06-01T00:00:00.000Z" && retitled.updatedAt == "2026-06-01T00:00:05.000Z")

        let moved = try JSONCoding.decoder.decode(PinReply.self, from: try f.call("pins.update", #"{"id":\#(pin.id),"lat":-33.9,"lon":151.0,"note":"Moved"}"#, as: 2))
        #expect(moved.lat == -33.9 && moved.lon == 151.0 && moved.note == "Moved" && moved.place == nil)
        #expect(try f.list(as: 2).pins == [moved])

        #expect(pinRefusal(f.error("pins.update", #"{"id":\#(pin.id),"lat":-33.8}"#, as: 2)) == "invalid_argument lon")
        #expect(pinRefusal(f.error("pins.update", #"{"id":\#(pin.id),"lon":151.1}"#, as: 2)) == "invalid_argument lat")
        #expect(pinRefusal(f.error("pins.update", #"{"id":\#(pin.id),"lat":null,"lon":151.1}"#, as: 2)) == "invalid_argument lat")
        #expect(pinRefusal(f.error("pins.update", #"{"id":\#(pin.id),"lat":-91,"lon":151.1}"#, as: 2)) == "invalid_argument lat")
        #expect(try f.list(as: 2).pins == [moved])
    }

    @Test func deleteRemovesThePin() throws {
        let f = try PinFixture()
        let kept = try f.add(pinPoint(pinOpera), as: 2)
        let gone = try f.add(pinPoint(pinOpera), as: 2)
        let reply = try JSONSerialization.jsonObject(with: try f.call("pins.delete", #"{"id":\#(gone.id)}"#, as: 2)) as? [String: Any]
        #expect((reply?["id"] as? NSNumber)?.int64Value == gone.id && reply?["deleted"] as? Bool == true)
        #expect(try f.list(as: 2).pins.map(\.id) == [kept.id])
        #expect(pinRefusal(f.error("pins.delete", #"{"id":\#(gone.id)}"#, as: 2)) == "not_found id")
    }

    @Test func everyChangeIsPushedToTheUsersOtherConnections() throws {
        let f = try PinFixture()
        let socket = try f.pushListener()
        func next() throws -> (user: Int64, origin: String?, body: [String: Any])? {
            guard let push = try socket.next() else { return nil }
            #expect(push.topic == "favorites.changed")
            return (push.userId, push.origin, (try JSONSerialization.jsonObject(with: push.body)) as? [String: Any] ?? [:])
        }
        let pin = try JSONCoding.decoder.decode(PinReply.self, from: try f.call("pins.add", pinPoint(pinOpera), as: 2, origin: "gw/7"))
        let added = try next()
        #expect(added?.user == 2 && added?.origin == "gw/7")
        #expect(added?.body["change"] as? String == "pin_added" && (added?.body["pin_id"] as? NSNumber)?.int64Value == pin.id)

        // A refused change pushes nothing: the next push is the update's.
        #expect(f.error("pins.update", #"{"id":\#(pin.id),"title":"\#(String(repeating: "t", count: 101))"}"#, as: 2) != nil)
        try f.call("pins.update", #"{"id":\#(pin.id),"title":"New"}"#, as: 2)
        #expect(try next()?.body["change"] as? String == "pin_updated")
        try f.call("pins.delete", #"{"id":\#(pin.id)}"#, as: 2)
        let deleted = try next()
        #expect(deleted?.body["change"] as? String == "pin_deleted" && (deleted?.body["pin_id"] as? NSNumber)?.int64Value == pin.id)
    }

    @Test func aDeletedUsersPinsAreErasedAndNoOneElses() throws {
        let f = try PinFixture()
        for _ in 0..<3 { try f.add(pinPoint(pinOpera, #""note":"mine""#), as: 2) }
        let other = try f.add(pinPoint(pinOpera), as: 3)
        try f.deleteUser(2)
        #expect(try f.list(as: 2).pins.isEmpty)
        #expect(try f.list(as: 3).pins.map(\.id) == [other.id])
        let db = try Database(path: f.folder.path + "/favorites.sqlite", readOnly: true)
        #expect(try db.scalarInt("SELECT COUNT(*) FROM pins WHERE user_id = 2") == 0)
        #expect(try db.scalarInt("SELECT COUNT(*) FROM pins WHERE user_id = 3") == 1)
    }
}
