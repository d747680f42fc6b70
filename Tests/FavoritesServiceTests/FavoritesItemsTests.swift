import Bus
import Foundation
import Testing
import TestSupport

/// Toggle, add, remove, visited, contains and the pages of a list, on one service with a fake
/// catalog.
@Suite struct FavoritesItemsTests {
    @Test func toggleTwiceGivesTheSameState() throws {
        let f = try FavoritesFixture()
        try f.place(1)
        #expect(f.waitForPlace(1))
        let first = try f.call("favorites.toggle", #"{"place_id":1}"#)
        #expect(first["saved"] as? Bool == true && first["list"] as? String == "favorites" && intMember(first, "count") == 1)
        let second = try f.call("favorites.toggle", #"{"place_id":1}"#)
        #expect(second["saved"] as? Bool == false && intMember(second, "count") == 0)
        #expect(listedPlaceIds(try f.call("favorites.list")).isEmpty)
        try f.call("favorites.toggle", #"{"place_id":1}"#)
        try f.call("favorites.toggle", #"{"place_id":1}"#)
        #expect(listedPlaceIds(try f.call("favorites.list")).isEmpty)
        try f.call("favorites.toggle", #"{"place_id":1,"list":"want_to_go"}"#)
        #expect(listedPlaceIds(try f.call("favorites.list", #"{"list":"want_to_go"}"#)) == [1])
        #expect(listedPlaceIds(try f.call("favorites.list")).isEmpty)
    }

    @Test func aRetryWithTheSameRequestIdAnswersTheFirstAndChangesNothing() throws {
        let f = try FavoritesFixture()
        try f.place(1)
        try f.place(2)
        #expect(f.waitForPlace(2))
        let first = try f.call("favorites.toggle", #"{"place_id":1,"request_id":"r-1"}"#)
        #expect(first["saved"] as? Bool == true)
        f.advance(60_000)
        let retry = try f.call("favorites.toggle", #"{"place_id":1,"request_id":"r-1"}"#)
        #expect(retry["saved"] as? Bool == true && intMember(retry, "count") == 1)
        #expect(listedPlaceIds(try f.call("favorites.list")) == [1])
        // Another id toggles again; the same id for another place is a conflict.
        #expect(try f.call("favorites.toggle", #"{"place_id":1,"request_id":"r-2"}"#)["saved"] as? Bool == false)
        #expect(refusal(f.error("favorites.toggle", #"{"place_id":2,"request_id":"r-1"}"#)) == "conflict request_id")
        // Another user's same request_id is theirs alone.
        #expect(try f.call("favorites.toggle", #"{"place_id":1,"request_id":"r-1"}"#, as: 2)["saved"] as? Bool == true)
        // After the window (24 h) the id is forgotten: the flush drops it, and it toggles anew.
        f.advance(24 * 3_600_000)
        try f.flush()
        #expect(try f.rows("SELECT 1 FROM toggle_requests WHERE user_id = 1").isEmpty)
        #expect(try f.call("favorites.toggle", #"{"place_id":1,"request_id":"r-1"}"#)["saved"] as? Bool == true)
    }

    @Test func requestIdsAreKeptUpToTheirLimitPerUser() throws {
        let f = try FavoritesFixture { $0.toggleRecordsPerUser = 3 }
        try f.place(1)
        #expect(f.waitForPlace(1))
        for i in 1...5 {
            try f.call("favorites.toggle", #"{"place_id":1,"request_id":"r\#(i)"}"#)
            f.advance(1)
        }
        let kept = try f.rows("SELECT request_id FROM toggle_requests WHERE user_id = 1 ORDER BY request_id").map { try $0.decode("request_id", as: String.self) }
        #expect(kept == ["r3", "r4", "r5"])
    }

    @Test func addTwiceIsNoErrorAndANoteUpdates() throws {
        let f = try FavoritesFixture()
        try f.place(1)
        #expect(f.waitForPlace(1))
        let added = try f.call("favorites.add", #"{"place_id":1,"note":"go early"}"#)
        #expect(added["changed"] as? Bool == true && intMember(added, "count") == 1)
        #expect(try f.call("favorites.add", #"{"place_id":1}"#)["changed"] as? Bool == false)
        #expect(listedItems(try f.call("favorites.list")).first?["note"] as? String == "go early")
        try f.call("favorites.add", #"{"place_id":1,"note":"go late"}"#)
        #expect(listedItems(try f.call("favorites.list")).first?["note"] as? String == "go late")
        try f.call("favorites.add", #"{"place_id":1,"note":""}"#)
        #expect(listedItems(try f.call("favorites.list")).first?["note"] == nil)
        let removed = try f.call("favorites.remove", #"{"place_id":1}"#)
        #expect(removed["changed"] as? Bool == true && intMember(removed, "count") == 0)
        // Removing what is not there is no error.
        #expect(try f.call("favorites.remove", #"{"place_id":1}"#)["changed"] as? Bool == false)
        #expect(try f.call("favorites.remove", #"{"place_id":1,"list":"want_to_go"}"#)["changed"] as? Bool == false)
        #expect(refusal(f.error("favorites.remove", #"{"place_id":1,"list":"Trip"}"#)) == "not_found list")
    }

    @Test func anEmptyListIsNoErrorAndAnUnknownOwnListIsNotFound() throws {
        let f = try FavoritesFixture()
        for list in ["favorites", "visited", "want_to_go"] {
            let reply = try f.call("favorites.list", #"{"list":"\#(list)"}"#)
            #expect(reply["items"] as? [Any] != nil && listedItems(reply).isEmpty && reply["next_cursor"] == nil)
        }
        #expect(refusal(f.error("favorites.list", #"{"list":"Trip"}"#)) == "not_found list")
        try f.call("favorites.lists.create", #"{"name":"Trip"}"#)
        #expect(listedItems(try f.call("favorites.list", #"{"list":"Trip"}"#)).isEmpty)
        #expect(refusal(f.error("favorites.list", #"{"sort":"rating"}"#)) == "invalid_argument sort")
        #expect(refusal(f.error("favorites.list", #"{"sort":"distance"}"#)) == "invalid_argument sort")
        #expect(refusal(f.error("favorites.list", #"{"near":{"lat":91,"lon":0}}"#)).hasPrefix("invalid_argument"))
    }

    @Test func visitedCarriesItsDateStrictlyRead() throws {
        let f = try FavoritesFixture()
        try f.place(1)
        try f.place(2)
        #expect(f.waitForPlace(2))
        let reply = try f.call("favorites.visited.add", #"{"place_id":1,"at":"2026-05-20T10:00:00+10:00"}"#)
        #expect(reply["visited_at"] as? String == "2026-05-20T00:00:00.000Z" && reply["list"] as? String == "visited")
        try f.call("favorites.visited.add", #"{"place_id":2}"#)
        let list = listedItems(try f.call("favorites.list", #"{"list":"visited","sort":"name"}"#))
        #expect(list.compactMap { $0["visited_at"] as? String } == ["2026-05-20T00:00:00.000Z", "2026-06-01T00:00:00.000Z"])
        // A second visit sets the new date.
        try f.call("favorites.visited.add", #"{"place_id":1,"at":"2026-05-30T00:00:00Z"}"#)
        #expect(listedItems(try f.call("favorites.list", #"{"list":"visited","sort":"name"}"#)).first?["visited_at"] as? String == "2026-05-30T00:00:00.000Z")
        // Other lists have no visited_at.
        try f.call("favorites.add", #"{"place_id":1}"#)
        #expect(listedItems(try f.call("favorites.list")).first?["visited_at"] == nil)
        // A minute ahead is a clock's skew; more is the future. Loose forms are refused.
        try f.call("favorites.visited.add", #"{"place_id":1,"at":"2026-06-01T00:01:00Z"}"#)
        for bad in ["2026-06-01T00:01:01Z", "2026-02-30T00:00:00Z", "2026-06-01", "2026-06-01T00:00:00", "2026-06-01T00:00:00Zjunk",
                    "2026-06-01T24:00:00Z", "2026-06-01T00:00:00+05:30:45", "2026-06-01T00:00:00.000000000000000000000000000000000Z"] {
            #expect(refusal(f.error("favorites.visited.add", #"{"place_id":1,"at":"\#(bad)"}"#)) == "invalid_argument at", "\(bad)")
        }
    }

    @Test func containsSaysWhichListsHoldEachPlace() throws {
        let f = try FavoritesFixture()
        for id in Int64(1)...3 { try f.place(id) }
        #expect(f.waitForPlace(3))
        try f.call("favorites.lists.create", #"{"name":"Trip"}"#)
        try f.call("favorites.add", #"{"place_id":1,"list":"Trip"}"#)
        try f.call("favorites.add", #"{"place_id":1}"#)
        try f.call("favorites.visited.add", #"{"place_id":1}"#)
        try f.call("favorites.add", #"{"place_id":3,"list":"want_to_go"}"#)
        let reply = try f.call("favorites.contains", #"{"place_ids":[3,2,1,3]}"#)
        let saved = reply["saved"] as? [[String: Any]] ?? []
        #expect(saved.compactMap { ($0["place_id"] as? NSNumber)?.int64Value } == [3, 1])
        #expect(saved.compactMap { $0["lists"] as? [String] } == [["want_to_go"], ["favorites", "visited", "Trip"]])
    }

    @Test func pagesAreStableAndBoundedByCountAndBytes() throws {
        let f = try FavoritesFixture { $0.pageBudgetBytes = 2_000 }
        // Five places east of a point, 1 km apart; added in the order 3, 1, 5, 2, 4.
        let names = [1: "delta", 2: "Alpha", 3: "echo", 4: "charlie", 5: "Bravo"]
        for (id, name) in names { try f.place(Int64(id), name: name, lat: -33.86, lon: 151.20 + Double(id) * 0.0108) }
        #expect(f.waitForPlace(5) && f.waitForPlace(1))
        for id in [3, 1, 5, 2, 4] {
            try f.call("favorites.add", #"{"place_id":\#(id)}"#)
            f.advance(1_000)
        }
        func all(_ body: String, limit: Int) throws -> [Int64] {
            var ids: [Int64] = []
            var cursor: String?
            for _ in 0..<10 {
                let cursorMember = cursor.map { #","cursor":"\#($0)""# } ?? ""
                let reply = try f.call("favorites.list", #"{"limit":\#(limit)\#(cursorMember),\#(body)}"#)
                ids += listedPlaceIds(reply)
                cursor = reply["next_cursor"] as? String
                if cursor == nil { break }
            }
            return ids
        }
        #expect(try all(#""sort":"added""#, limit: 2) == [4, 2, 5, 1, 3])
        #expect(try all(#""sort":"name""#, limit: 2) == [2, 5, 4, 1, 3])
        #expect(try all(#""sort":"distance","near":{"lat":-33.86,"lon":151.2}"#, limit: 2) == [1, 2, 3, 4, 5])
        // distance_m on every item when near is given.
        let near = listedItems(try f.call("favorites.list", #"{"near":{"lat":-33.86,"lon":151.2},"sort":"distance","limit":1}"#))
        #expect(abs((near.first?["distance_m"] as? Double ?? 0) - 998) < 5)
        // Stable: an item added while paging does not shift the pages (newest first: it is before the cursor).
        let firstPage = try f.call("favorites.list", #"{"limit":2}"#)
        try f.place(6)
        #expect(f.waitForPlace(6))
        try f.call("favorites.add", #"{"place_id":6}"#)
        let next = try f.call("favorites.list", #"{"limit":2,"cursor":"\#(firstPage["next_cursor"] as? String ?? "")"}"#)
        #expect(listedPlaceIds(next) == [5, 1])
        // The byte budget cuts a page before its count: notes of 400 bytes, budget 2,000.
        for id in 1...5 { try f.call("favorites.add", #"{"place_id":\#(id),"note":"\#(String(repeating: "n", count: 400))"}"#) }
        let budgeted = try f.call("favorites.list", #"{"limit":100}"#)
        #expect(listedItems(budgeted).count < 6 && listedItems(budgeted).count >= 1 && budgeted["next_cursor"] != nil)
        #expect(try all(#""sort":"added""#, limit: 100) == [6, 4, 2, 5, 1, 3])
        // A cursor of another order, or none of ours, or a limit out of range is refused.
        #expect(refusal(f.error("favorites.list", #"{"sort":"name","cursor":"\#(firstPage["next_cursor"] as? String ?? "")"}"#)) == "invalid_argument cursor")
        #expect(refusal(f.error("favorites.list", #"{"cursor":"!!"}"#)) == "invalid_argument cursor")
        #expect(refusal(f.error("favorites.list", #"{"cursor":"\#(String(repeating: "A", count: 5_000))"}"#)) == "invalid_argument cursor")
        #expect(refusal(f.error("favorites.list", #"{"limit":101}"#)) == "invalid_argument limit")
        #expect(refusal(f.error("favorites.list", #"{"limit":0}"#)) == "invalid_argument limit")
    }

    @Test func listsHaveCountsBuiltInsFirstAndOwnListsCanBeRenamedAndDeleted() throws {
        let f = try FavoritesFixture()
        try f.place(1)
        #expect(f.waitForPlace(1))
        try f.call("favorites.lists.create", #"{"name":"  Trip  "}"#)
        try f.call("favorites.lists.create", #"{"name":"Beach"}"#)
        try f.call("favorites.add", #"{"place_id":1,"list":"trip"}"#)
        try f.call("favorites.add", #"{"place_id":1}"#)
        let lists = try f.call("favorites.lists")["lists"] as? [[String: Any]] ?? []
        #expect(lists.compactMap { $0["name"] as? String } == ["favorites", "visited", "want_to_go", "Trip", "Beach"])
        #expect(lists.compactMap { intMember($0, "count") } == [1, 0, 0, 1, 0])
        #expect(refusal(f.error("favorites.lists.create", #"{"name":"TRIP"}"#)) == "already_exists name")
        #expect(refusal(f.error("favorites.lists.create", #"{"name":"Favorites"}"#)) == "already_exists name")
        // Invisible characters: a name of nothing else is empty; one inside passes for another name.
        #expect(refusal(f.error("favorites.lists.create", #"{"name":"\u200b\u00ad \ufeff"}"#)) == "invalid_argument name")
        #expect(f.error("favorites.lists.create", #"{"name":"Fav\u200borites"}"#)?.message.hasPrefix("must not contain invisible characters") == true)
        #expect(f.error("favorites.lists.create", #"{"name":"Favo\udb40\udd00rites"}"#)?.message.hasPrefix("must not contain invisible characters") == true)
        #expect(refusal(f.error("favorites.lists.rename", #"{"name":"Trip","new_name":"Tr\u2060ip"}"#)) == "invalid_argument new_name")
        // Around a name they are trimmed, as white space is.
        #expect(try f.call("favorites.lists.create", #"{"name":"\u200bParks\u200d"}"#)["name"] as? String == "Parks")
        try f.call("favorites.lists.delete", #"{"name":"Parks"}"#)
        #expect(refusal(f.error("favorites.lists.rename", #"{"name":"favorites","new_name":"Faves"}"#)) == "invalid_argument name")
        #expect(refusal(f.error("favorites.lists.delete", #"{"name":"visited"}"#)) == "invalid_argument name")
        #expect(refusal(f.error("favorites.lists.rename", #"{"name":"Trip","new_name":"beach"}"#)) == "already_exists new_name")
        #expect(refusal(f.error("favorites.lists.rename", #"{"name":"Nowhere","new_name":"x"}"#)) == "not_found name")
        let renamed = try f.call("favorites.lists.rename", #"{"name":"Trip","new_name":"Road trip"}"#)
        #expect(renamed["name"] as? String == "Road trip" && intMember(renamed, "count") == 1)
        #expect(listedPlaceIds(try f.call("favorites.list", #"{"list":"Road trip"}"#)) == [1])
        try f.call("favorites.lists.rename", #"{"name":"Beach","new_name":"BEACH"}"#)
        try f.call("favorites.lists.delete", #"{"name":"Road trip"}"#)
        #expect(refusal(f.error("favorites.lists.delete", #"{"name":"Road trip"}"#)) == "not_found name")
        #expect(try f.rows("SELECT 1 FROM items i JOIN lists l ON l.id = i.list_id WHERE l.builtin = 0").isEmpty)
        let after = try f.call("favorites.lists")["lists"] as? [[String: Any]] ?? []
        #expect(after.compactMap { $0["name"] as? String } == ["favorites", "visited", "want_to_go", "BEACH"])
    }
}
