import Bus
import Contracts
import Foundation
import Testing
import TestSupport

/// Each user sees and changes only their own lists; a share token is the one way in, and a
/// change is pushed to the user's other connections.
@Suite struct FavoritesPrivacyTests {
    @Test func everyMethodAsAnotherUserSeesNothingOfTheFirst() throws {
        let f = try FavoritesFixture()
        try f.place(1)
        #expect(f.waitForPlace(1))
        try f.call("favorites.add", #"{"place_id":1,"note":"secret note"}"#, as: 1)
        try f.call("favorites.visited.add", #"{"place_id":1}"#, as: 1)
        try f.call("favorites.lists.create", #"{"name":"Secret"}"#, as: 1)
        try f.call("favorites.add", #"{"place_id":1,"list":"Secret"}"#, as: 1)
        let token = try f.call("favorites.share", #"{"list":"Secret"}"#, as: 1)["token"] as? String ?? ""

        // User 2 reads: nothing of user 1's.
        let calls: [(String, String)] = [
            ("favorites.list", "{}"), ("favorites.list", #"{"list":"visited"}"#), ("favorites.lists", "{}"),
            ("favorites.contains", #"{"place_ids":[1]}"#),
        ]
        for (type, body) in calls {
            let text = String(decoding: try JSONSerialization.data(withJSONObject: try f.call(type, body, as: 2)), as: UTF8.self)
            #expect(!text.contains("secret") && !text.contains("Secret") && !text.contains(#""place_id":1"#) && !text.contains(#""count":1"#), "\(type): \(text)")
        }
        #expect(refusal(f.error("favorites.list", #"{"list":"Secret"}"#, as: 2)) == "not_found list")
        // User 2 writes: their own lists only, or not_found for user 1's own list.
        #expect(refusal(f.error("favorites.remove", #"{"place_id":1,"list":"Secret"}"#, as: 2)) == "not_found list")
        #expect(refusal(f.error("favorites.lists.rename", #"{"name":"Secret","new_name":"Mine"}"#, as: 2)) == "not_found name")
        #expect(refusal(f.error("favorites.lists.delete", #"{"name":"Secret"}"#, as: 2)) == "not_found name")
        #expect(refusal(f.error("favorites.share", #"{"list":"Secret"}"#, as: 2)) == "not_found list")
        #expect(refusal(f.error("favorites.share.revoke", #"{"list":"Secret"}"#, as: 2)) == "not_found list")
        try f.call("favorites.remove", #"{"place_id":1}"#, as: 2)
        try f.call("favorites.toggle", #"{"place_id":1}"#, as: 2)
        try f.call("favorites.share.revoke", #"{"list":"favorites"}"#, as: 2)
        try f.call("favorites.lists.create", #"{"name":"Secret"}"#, as: 2)
        // User 1's data is as it was.
        #expect(listedItems(try f.call("favorites.list", as: 1)).first?["note"] as? String == "secret note")
        #expect(listedPlaceIds(try f.call("favorites.list", #"{"list":"Secret"}"#, as: 1)) == [1])
        #expect(listedPlaceIds(try f.call("favorites.list", #"{"list":"visited"}"#, as: 1)) == [1])
        #expect(try f.call("favorites.shared", #"{"token":"\#(token)"}"#, as: nil)["list"] as? String == "Secret")
        // Without a user, every method but favorites.shared is unauthenticated.
        for type in ["favorites.list", "favorites.lists", "favorites.contains", "favorites.toggle", "favorites.add", "favorites.remove",
                     "favorites.visited.add", "favorites.lists.create", "favorites.lists.rename", "favorites.lists.delete",
                     "favorites.share", "favorites.share.revoke"] {
            #expect(f.error(type, #"{"place_id":1,"place_ids":[1],"name":"x","new_name":"y","list":"favorites"}"#, as: nil)?.code == .unauthenticated, "\(type)")
        }
    }

    @Test func aShareTokenShowsTheListWithoutNotesUntilRevoked() throws {
        let f = try FavoritesFixture()
        for id in Int64(1)...3 { try f.place(id) }
        #expect(f.waitForPlace(3))
        try f.call("favorites.lists.create", #"{"name":"Sydney"}"#)
        for id in 1...3 {
            try f.call("favorites.add", #"{"place_id":\#(id),"list":"Sydney","note":"private \#(id)"}"#)
            f.advance(1_000)
        }
        let share = try f.call("favorites.share", #"{"list":"Sydney"}"#)
        let token = share["token"] as? String ?? ""
        // 192 random bits in base64url; sharing again answers the live token.
        #expect(token.utf8.count == 32 && token.utf8.allSatisfy(Base64URL.isAlphabet))
        #expect(try f.call("favorites.share", #"{"list":"Sydney"}"#)["token"] as? String == token)
        #expect(try f.call("favorites.share", #"{"list":"favorites"}"#)["token"] as? String != token)
        let lists = try f.call("favorites.lists")["lists"] as? [[String: Any]] ?? []
        #expect(lists.compactMap { $0["shared"] as? Bool } == [true, false, false, true])
        // Anyone with the token reads it, paged, with no notes and no owner.
        let page = try f.call("favorites.shared", #"{"token":"\#(token)","limit":2}"#, as: nil)
        #expect(page["list"] as? String == "Sydney" && listedPlaceIds(page) == [3, 2])
        let text = String(decoding: try JSONSerialization.data(withJSONObject: page), as: UTF8.self)
        #expect(!text.contains("private") && !text.contains("user"))
        let rest = try f.call("favorites.shared", #"{"token":"\#(token)","cursor":"\#(page["next_cursor"] as? String ?? "")"}"#, as: 7)
        #expect(listedPlaceIds(rest) == [1] && rest["next_cursor"] == nil)
        // Revoked and unknown tokens answer alike.
        #expect(try f.call("favorites.share.revoke", #"{"list":"Sydney"}"#)["revoked"] as? Bool == true)
        #expect(try f.call("favorites.share.revoke", #"{"list":"Sydney"}"#)["revoked"] as? Bool == false)
        let revoked = f.error("favorites.shared", #"{"token":"\#(token)"}"#, as: nil)
        let unknown = f.error("favorites.shared", #"{"token":"AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA"}"#, as: nil)
        #expect(refusal(revoked) == "not_found token" && revoked?.message == unknown?.message && refusal(unknown) == "not_found token")
        #expect(refusal(f.error("favorites.shared", #"{"token":"\#(String(repeating: "A", count: 10_000))"}"#, as: nil)) == "not_found token")
        // A new share is a new token; deleting the list ends it.
        let again = try f.call("favorites.share", #"{"list":"Sydney"}"#)["token"] as? String ?? ""
        #expect(again != token && again.utf8.count == 32)
        try f.call("favorites.lists.delete", #"{"name":"Sydney"}"#)
        #expect(refusal(f.error("favorites.shared", #"{"token":"\#(again)"}"#, as: nil)) == "not_found token")
    }

    @Test func aChangeIsPushedToTheUsersOtherConnections() throws {
        let f = try FavoritesFixture()
        try f.place(1)
        #expect(f.waitForPlace(1))
        let listener = try PushListener(f.context, endpoints: f.favorites?.endpoints.publish ?? [])
        func nextPush() throws -> Push? { try listener.next() }
        let changes: [(String, String, String)] = [
            ("favorites.toggle", #"{"place_id":1}"#, "saved"), ("favorites.remove", #"{"place_id":1}"#, "removed"),
            ("favorites.add", #"{"place_id":1,"list":"want_to_go"}"#, "saved"), ("favorites.visited.add", #"{"place_id":1}"#, "visited"),
            ("favorites.lists.create", #"{"name":"Trip"}"#, "list_created"), ("favorites.lists.rename", #"{"name":"Trip","new_name":"Tour"}"#, "list_renamed"),
            ("favorites.share", #"{"list":"Tour"}"#, "shared"), ("favorites.share.revoke", #"{"list":"Tour"}"#, "unshared"),
            ("favorites.lists.delete", #"{"name":"Tour"}"#, "list_deleted"),
        ]
        for (type, body, change) in changes {
            try f.call(type, body, as: 4, origin: "gw-1/c7")
            let push = try nextPush()
            #expect(push?.topic == "favorites.changed" && push?.userId == 4 && push?.origin == "gw-1/c7", "\(type)")
            let notice = push.map { listsJSONObject($0.body) } ?? [:]
            #expect(notice["change"] as? String == change, "\(type)")
        }
        // What changes nothing pushes nothing: the next push is the toggle's.
        try f.call("favorites.remove", #"{"place_id":1}"#, as: 4)
        try f.call("favorites.toggle", #"{"place_id":1}"#, as: 4)
        #expect((try nextPush()).map { listsJSONObject($0.body)["change"] as? String } == "saved")
    }
}

/// A JSON object's text as a dictionary.
func listsJSONObject(_ data: Data) -> [String: Any] {
    (try? JSONSerialization.jsonObject(with: data)) as? [String: Any] ?? [:]
}
