import Bus
import Foundation
import Storage
import Testing
import TestSupport

/// Every bound of the lists, from the side of a client that pushes at it.
@Suite struct FavoritesLimitsTests {
    @Test func aListHoldsAtMostItsLimit() throws {
        let f = try FavoritesFixture { $0.maxItemsPerList = 3 }
        for id in Int64(1)...5 { try f.place(id) }
        #expect(f.waitForPlace(5))
        for id in 1...3 { try f.call("favorites.add", #"{"place_id":\#(id)}"#) }
        #expect(refusal(f.error("favorites.add", #"{"place_id":4}"#)) == "conflict list")
        #expect(refusal(f.error("favorites.toggle", #"{"place_id":4}"#)) == "conflict list")
        #expect(refusal(f.error("favorites.toggle", #"{"place_id":4,"list":"visited"}"#)) == "no error")
        // Adding again what is there, and toggling one out, still work.
        try f.call("favorites.add", #"{"place_id":3,"note":"x"}"#)
        #expect(try f.call("favorites.toggle", #"{"place_id":3}"#)["saved"] as? Bool == false)
        try f.call("favorites.add", #"{"place_id":4}"#)
        #expect(intMember(try f.call("favorites.lists")["lists"].flatMap { ($0 as? [[String: Any]])?.first } ?? [:], "count") == 3)
    }

    @Test func aListHoldsTenThousandPlacesAndNoMore() throws {
        let f = try FavoritesFixture()
        try f.place(1)
        try f.call("favorites.add", #"{"place_id":1}"#)
        try f.place(10_001)
        try f.place(10_002)
        #expect(f.waitForPlace(10_002))
        // 9,998 more items written straight into the file: requests would take minutes.
        let db = try Database(path: f.folder.file("favorites.sqlite"))
        try db.transaction {
            let list = try db.scalarInt("SELECT id FROM lists WHERE user_id = 1 AND name = 'favorites'") ?? 0
            for id in 2...9_999 {
                try db.run("INSERT INTO places (id, name, category, lat, lon, version) VALUES (?, 'P', 'cafe', -33.8, 151.2, 1)", id)
                try db.run("INSERT INTO items (list_id, place_id, added_at) VALUES (?, ?, 0)", list, id)
            }
        }
        #expect(intMember(try f.call("favorites.add", #"{"place_id":10001}"#), "count") == 10_000)
        #expect(refusal(f.error("favorites.add", #"{"place_id":10002}"#)) == "conflict list")
        // A page of the full list near a point stays within its bounds.
        let page = try f.call("favorites.list", #"{"near":{"lat":-33.8,"lon":151.2},"sort":"distance","limit":100}"#)
        #expect(listedItems(page).count == 100 && page["next_cursor"] != nil)
    }

    /// Lists that are each under their limit still hold at most `maxItemsPerUser` places
    /// together, however they are added; the bound is the user's, not everyone's.
    @Test func aUserHoldsAtMostItsLimitInAllListsTogether() throws {
        let f = try FavoritesFixture { $0.maxItemsPerUser = 4 }
        for id in Int64(1)...6 { try f.place(id) }
        #expect(f.waitForPlace(6))
        try f.call("favorites.lists.create", #"{"name":"Own"}"#)
        try f.call("favorites.add", #"{"place_id":1}"#)
        try f.call("favorites.toggle", #"{"place_id":2,"list":"want_to_go"}"#)
        try f.call("favorites.visited.add", #"{"place_id":3}"#)
        try f.call("favorites.add", #"{"place_id":1,"list":"own"}"#)
        #expect(refusal(f.error("favorites.add", #"{"place_id":5}"#)) == "conflict list")
        #expect(refusal(f.error("favorites.toggle", #"{"place_id":5,"list":"own"}"#)) == "conflict list")
        #expect(refusal(f.error("favorites.visited.add", #"{"place_id":5}"#)) == "conflict -")  // it names no list: visited is not a param
        // Marking a visited place again, and notes on what is there, add nothing.
        #expect(refusal(f.error("favorites.visited.add", #"{"place_id":3}"#)) == "no error")
        #expect(refusal(f.error("favorites.add", #"{"place_id":1,"note":"x"}"#)) == "no error")
        // Another user is not held by this one's places; removing one makes room.
        #expect(refusal(f.error("favorites.add", #"{"place_id":5}"#, as: 2)) == "no error")
        try f.call("favorites.remove", #"{"place_id":1,"list":"own"}"#)
        #expect(refusal(f.error("favorites.add", #"{"place_id":6}"#)) == "no error")
    }

    /// The default: 25,000 places in all of a user's lists (written straight into the file,
    /// as requests would take minutes), so erasing a user holds the writer briefly.
    @Test func aUserHoldsTwentyFiveThousandPlacesAndNoMore() throws {
        let f = try FavoritesFixture()
        try f.place(1)
        try f.call("favorites.add", #"{"place_id":1}"#)
        try f.call("favorites.lists.create", #"{"name":"A"}"#)
        try f.call("favorites.lists.create", #"{"name":"B"}"#)
        try f.place(30_001)
        try f.place(30_002)
        #expect(f.waitForPlace(30_002))
        let db = try Database(path: f.folder.file("favorites.sqlite"))
        try db.transaction {
            let lists = try db.query("SELECT id FROM lists WHERE user_id = 1 ORDER BY id").decode("id", as: Int64.self)
            #expect(lists.count == 3)
            for id in Int64(2)...24_999 {
                try db.run("INSERT INTO places (id, name, category, lat, lon, version) VALUES (?, 'P', 'cafe', -33.8, 151.2, 1)", id)
                // favorites 10,000, A 10,000, B 4,999: no list past its own limit.
                try db.run("INSERT INTO items (list_id, place_id, added_at) VALUES (?, ?, 0)", lists[Int((id - 1) / 10_000)], id)
            }
        }
        #expect(intMember(try f.call("favorites.add", #"{"place_id":30001,"list":"b"}"#), "count") == 5_000)
        #expect(refusal(f.error("favorites.add", #"{"place_id":30002,"list":"b"}"#)) == "conflict list")
    }

    @Test func aNoteIsBoundedInCharactersAndInBytes() throws {
        let f = try FavoritesFixture()
        try f.place(1)
        #expect(f.waitForPlace(1))
        func add(_ note: String) -> String {
            let json = String(decoding: try! JSONEncoder().encode(["note": note]), as: UTF8.self)
            return refusal(f.error("favorites.add", #"{"place_id":1,"# + json.dropFirst()))
        }
        #expect(add(String(repeating: "é", count: 500)) == "no error")          // 1,000 bytes
        #expect(add(String(repeating: "😀", count: 500)) == "no error")         // 2,000 bytes
        #expect(add(String(repeating: "é", count: 501)) == "invalid_argument note")
        #expect(add(String(repeating: "a", count: 501)) == "invalid_argument note")
        // One character of 4,001 bytes: "e" and 2,000 combining accents.
        #expect(add("e" + String(repeating: "\u{301}", count: 2_000)) == "invalid_argument note")
        #expect(add("line one\nline two") == "no error")
        #expect(add("bad \u{0} nul") == "invalid_argument note")
        #expect(add("sneaky \u{202E}txet") == "invalid_argument note")
    }

    @Test func aUserHasAtMostAHundredOwnListsWithBoundedNames() throws {
        let f = try FavoritesFixture()
        for i in 1...100 { try f.call("favorites.lists.create", #"{"name":"List \#(i)"}"#) }
        #expect(refusal(f.error("favorites.lists.create", #"{"name":"List 101"}"#)) == "conflict name")
        // Another user is not held back by the first one's lists.
        #expect(refusal(f.error("favorites.lists.create", #"{"name":"List 101"}"#, as: 2)) == "no error")
        try f.call("favorites.lists.delete", #"{"name":"List 1"}"#)
        #expect(refusal(f.error("favorites.lists.create", #"{"name":"\#(String(repeating: "n", count: 100))"}"#)) == "no error")
        try f.call("favorites.lists.delete", #"{"name":"List 2"}"#)
        #expect(refusal(f.error("favorites.lists.create", #"{"name":"\#(String(repeating: "n", count: 101))"}"#)) == "invalid_argument name")
        #expect(refusal(f.error("favorites.lists.create", #"{"name":"e\#(String(repeating: "\u{301}", count: 400))"}"#)) == "invalid_argument name")
        #expect(refusal(f.error("favorites.lists.create", #"{"name":"   "}"#)) == "invalid_argument name")
        #expect(refusal(f.error("favorites.lists.create", #"{"name":"two\nlines"}"#)) == "invalid_argument name")
        #expect(refusal(f.error("favorites.lists.rename", #"{"name":"List 3","new_name":"\#(String(repeating: "n", count: 101))"}"#)) == "invalid_argument new_name")
        // A name too long to be any list's is simply not one.
        #expect(refusal(f.error("favorites.list", #"{"list":"\#(String(repeating: "n", count: 5_000))"}"#)) == "not_found list")
    }

    @Test func containsTakesOneToAHundredIds() throws {
        let f = try FavoritesFixture()
        let hundred = (1...100).map(String.init).joined(separator: ",")
        #expect(refusal(f.error("favorites.contains", #"{"place_ids":[\#(hundred)]}"#)) == "no error")
        #expect(refusal(f.error("favorites.contains", #"{"place_ids":[\#(hundred),101]}"#)) == "invalid_argument place_ids")
        #expect(refusal(f.error("favorites.contains", #"{"place_ids":[]}"#)) == "invalid_argument place_ids")
        #expect(refusal(f.error("favorites.contains", #"{"place_ids":"1"}"#)).hasPrefix("invalid_argument"))
    }

    @Test func aRequestIdIsBounded() throws {
        let f = try FavoritesFixture()
        try f.place(1)
        #expect(f.waitForPlace(1))
        #expect(refusal(f.error("favorites.toggle", #"{"place_id":1,"request_id":"\#(String(repeating: "r", count: 64))"}"#)) == "no error")
        #expect(refusal(f.error("favorites.toggle", #"{"place_id":1,"request_id":"\#(String(repeating: "r", count: 65))"}"#)) == "invalid_argument request_id")
        #expect(refusal(f.error("favorites.toggle", #"{"place_id":1,"request_id":"\#(String(repeating: "é", count: 33))"}"#)) == "invalid_argument request_id")
        #expect(refusal(f.error("favorites.toggle", #"{"place_id":1,"request_id":""}"#)) == "invalid_argument request_id")
    }
}
