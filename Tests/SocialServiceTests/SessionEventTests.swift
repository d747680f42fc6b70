import Bus
import Contracts
import Foundation
import ServiceCore
import ServiceKit
import SocialService
import Synchronization
import Testing

@Suite struct SessionEventTests {
    /// The events of the outbox other than ratings: type and body as JSON text.
    func accountEvents(_ f: SocialFixture) throws -> [String] {
        try f.events().filter { $0.header.type != SocialEvents.ratingUpdated }.map { event in
            "\(event.header.type) \(String(decoding: event.bodyBytes ?? Data(), as: UTF8.self))"
        }
    }

    @Test func loggingOutPublishesThatTheSessionEnded() throws {
        let f = try SocialFixture()
        let ann = try f.register("ann"), ben = try f.register("ben")
        let token = try f.login("ann").token
        let bens = try f.login("ben").token
        #expect(try accountEvents(f).isEmpty)
        try f.call("auth.logout", #"{"token":"\#(token)"}"#, as: ann)
        #expect(try accountEvents(f) == [#"social.session.ended {"user_id":\#(ann)}"#])
        #expect(try f.events().last?.body(SessionEnded.self) == SessionEnded(userId: ann))
        // Nothing ended, nothing published: the same token again, someone else's, a string of another shape.
        try f.call("auth.logout", #"{"token":"\#(token)"}"#, as: ann)
        try f.call("auth.logout", #"{"token":"\#(bens)"}"#, as: ann)
        try f.call("auth.logout", #"{"token":"not a token"}"#, as: ann)
        #expect(try accountEvents(f).count == 1)
        try f.call("auth.logout", #"{"token":"\#(bens)"}"#, as: ben)
        #expect(try accountEvents(f) == [#"social.session.ended {"user_id":\#(ann)}"#, #"social.session.ended {"user_id":\#(ben)}"#])
        // No token, nor anything of it, goes on the bus.
        let outbox = try f.client.request(type: "sys.replay", body: Data(#"{"after":0}"#.utf8)).attachments.reduce(Data(), +)
        for secret in [token, bens, String(token.dropFirst(4).prefix(12))] {
            #expect(outbox.range(of: Data(secret.utf8)) == nil)
        }
    }

    @Test func changingARolePublishesTheNewRole() throws {
        let f = try SocialFixture()
        let root = try f.register("root", admin: true), ann = try f.register("ann")
        try f.call("admin.set_role", #"{"user_id":\#(ann),"role":"admin"}"#, as: root)
        #expect(try f.events().last?.body(RoleChange.self) == RoleChange(userId: ann, role: "admin"))
        // The role it already has: nothing changes, nothing is published; refusals publish nothing.
        try f.call("admin.set_role", #"{"user_id":\#(ann),"role":"admin"}"#, as: root)
        #expect(f.error("admin.set_role", #"{"user_id":\#(ann),"role":"king"}"#, as: root) != nil)
        #expect(f.error("admin.set_role", #"{"user_id":99,"role":"user"}"#, as: root) != nil)
        #expect(f.error("admin.set_role", #"{"user_id":\#(root),"role":"user"}"#, as: 42) != nil)
        try f.call("admin.set_role", #"{"user_id":\#(ann),"role":"user"}"#, as: root)
        #expect(try accountEvents(f) == [
            #"social.role.changed {"role":"admin","user_id":\#(ann)}"#,
            #"social.role.changed {"role":"user","user_id":\#(ann)}"#,
        ])
        #expect(try f.call("profile.get", #"{"user_id":\#(ann)}"#)["role"] as? String == "user")
    }

    @Test func theNewEventsAreLiveAndTheSnapshotStillHoldsRatingsOnly() throws {
        let f = try SocialFixture(heartbeatMs: 60_000)
        let root = try f.register("root", admin: true), ann = try f.register("ann")
        try f.review(1, 4, by: ann)
        let sub = try Socket(f.context, .sub)
        try sub.subscribe("social.")
        try sub.setReceiveTimeout(milliseconds: 100)
        try sub.connect(f.runtime.endpoints.publish[0])
        // Until the subscription is live, an event may be lost: change the role until one arrives.
        var received: [Data]?
        for i in 0..<50 where received == nil {
            try f.call("admin.set_role", #"{"user_id":\#(ann),"role":"\#(i % 2 == 0 ? "admin" : "user")"}"#, as: root)
            received = try sub.receive()
            // The review's rating event may still be on its way when the subscription goes live.
            while let frames = received, String(decoding: frames[0], as: UTF8.self) == SocialEvents.ratingUpdated { received = try sub.receive() }
        }
        #expect(received.map { String(decoding: $0[0], as: UTF8.self) } == SocialEvents.roleChanged)
        let token = try f.login("ann").token
        try f.call("auth.logout", #"{"token":"\#(token)"}"#, as: ann)
        var topics: [String] = []
        while let frames = try sub.receive() { topics.append(String(decoding: frames[0], as: UTF8.self)) }
        #expect(topics.last == SocialEvents.sessionEnded)

        let snapshot = try f.client.request(type: "sys.snapshot", body: Data("{}".utf8))
        #expect(try snapshot.attachments.map { try ReceivedEvent(envelope: $0).header.type } == [SocialEvents.ratingUpdated])
    }

    /// What the gateway does: follow social's session and role events in memory.
    @Test func aMemorySubscriberHearsLogoutsAndRoleChanges() throws {
        let f = try SocialFixture()
        let root = try f.register("root", admin: true), ann = try f.register("ann")
        let heard = Mutex<[String]>([])
        let options = EventStreamOptions(source: "social", publishEndpoints: f.runtime.endpoints.publish, rpcEndpoints: f.runtime.endpoints.rpc)
        let subscriber = try EventSubscriber(context: f.context, options: options, logger: quiet) {
            MemoryCursorStore(source: "social", logger: quiet, types: [SocialEvents.sessionEnded, SocialEvents.roleChanged],
                              apply: { event in heard.withLock { $0.append("\(event.header.type) \(String(decoding: event.bodyBytes ?? Data(), as: UTF8.self))") } },
                              forgetAll: { heard.withLock { $0.append("forget all") } })
        }
        defer { subscriber.stop() }
        func wait(for count: Int) -> [String] {
            for _ in 0..<500 where heard.withLock({ $0.count }) < count { usleep(10_000) }
            return heard.withLock { $0 }
        }
        #expect(wait(for: 1) == ["forget all"])
        try f.review(1, 5, by: ann)  // a rating: followed but not applied
        let token = try f.login("ann").token
        try f.call("auth.logout", #"{"token":"\#(token)"}"#, as: ann)
        try f.call("admin.set_role", #"{"user_id":\#(ann),"role":"admin"}"#, as: root)
        #expect(Array(wait(for: 3).dropFirst()) == [
            #"social.session.ended {"user_id":\#(ann)}"#,
            #"social.role.changed {"role":"admin","user_id":\#(ann)}"#,
        ])
        #expect(subscriber.waitFor(seq: 3, timeout: 10) && subscriber.status.seq == 3)
    }
}
