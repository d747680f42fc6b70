import Bus
import Contracts
import Foundation
import Testing
import TestSupport

/// No method shows or changes one user's pins for another: another user's pin is
/// `not_found` exactly as a pin that does not exist.
@Suite(.serialized) struct PinPrivacyTests {
    @Test func anotherUserSeesAndChangesNothing() throws {
        let f = try PinFixture()
        let mine = try f.add(pinPoint(pinOpera, #""title":"Secret spot","note":"Only mine""#), as: 2)
        let socket = try f.pushListener()

        // Listing, in every order: none of user 2's pins.
        for body in ["{}", #"{"near":\#(pinPoint(pinOpera))}"#, #"{"bbox":{"south":-90,"west":-180,"north":90,"east":180}}"#] {
            #expect(try f.list(body, as: 3).pins.isEmpty, "\(body)")
        }
        // Changing: the same answer as for an id no one has, and nothing pushed.
        let missing = mine.id + 1_000
        for (type, body) in [("pins.update", #"{"id":%d,"title":"Mine now"}"#), ("pins.update", #"{"id":%d,"lat":0,"lon":0}"#),
                             ("pins.update", #"{"id":%d,"note":null}"#), ("pins.delete", #"{"id":%d}"#)] {
            let theirs = f.error(type, body.replacingOccurrences(of: "%d", with: String(mine.id)), as: 3)
            let nobodys = f.error(type, body.replacingOccurrences(of: "%d", with: String(missing)), as: 3)
            #expect(pinRefusal(theirs) == "not_found id" && pinRefusal(nobodys) == "not_found id", "\(type) \(body)")
            #expect(theirs?.message == "no pin with id \(mine.id)" && nobodys?.message == "no pin with id \(missing)")
        }
        #expect(try socket.next() == nil)

        // User 2's pin is as it was.
        #expect(try f.list(as: 2).pins == [mine])
    }
}
