import Bus
import Contracts
import Foundation
import ServiceCore
import ServiceKit
import SocialService
import Testing

@Suite struct ReviewTests {
    @Test func onlyTheAuthorOrAnAdminDeletesAndIdentityComesFromAuthOnly() throws {
        let f = try SocialFixture()
        let author = try f.register("ann"), other = try f.register("ben"), admin = try f.register("root", admin: true)
        // A user id in the body says nothing about who writes: it is no parameter of reviews.add.
        #expect(f.error("reviews.add", #"{"place_id":1,"rating":4,"text":"Not mine","user_id":\#(other)}"#, as: author) ==
                .invalid("user_id", "unknown parameter 'user_id'"))
        let added = try f.call("reviews.add", #"{"place_id":1,"rating":4,"text":"Great acoustics"}"#, as: author)
        #expect((added["user"] as? [String: Any])?["id"] as? Int == Int(author))
        let id = added["id"] as? Int ?? 0
        // Adding again replaces the review, keeping its id.
        let replaced = try f.call("reviews.add", #"{"place_id":1,"rating":5,"text":"Even better"}"#, as: author)
        #expect(replaced["id"] as? Int == id && replaced["rating"] as? Int == 5 && replaced["text"] as? String == "Even better")
        #expect(replaced["created_at"] as? String == added["created_at"] as? String)

        #expect(f.error("reviews.delete", #"{"review_id":\#(id)}"#, as: other) ==
                ServiceError(.permissionDenied, "only its author or an admin may delete review \(id)"))
        #expect(try f.call("reviews.delete", #"{"review_id":\#(id)}"#, as: admin)["id"] as? Int == id)
        #expect(f.error("reviews.delete", #"{"review_id":\#(id)}"#, as: admin) == ServiceError(.notFound, "no review with id \(id)", field: "review_id"))
        // The author deletes their own.
        let again = try f.review(1, 3, by: author)
        #expect(try f.call("reviews.delete", #"{"review_id":\#(again)}"#, as: author)["id"] as? Int == Int(again))
    }

    @Test func textIsStoredAndReturnedVerbatim() throws {
        let f = try SocialFixture()
        let user = try f.register("ann")
        let html = #"<script>alert("x")</script> <b>Bold</b> & 'quoted' \ ümlaut 🎭"#
        #expect(try f.call("reviews.add", #"{"place_id":1,"rating":5,"text":\#(try json(html))}"#, as: user)["text"] as? String == html)
        let page = try f.client.call("reviews.list", ListReviews(placeId: 1), as: ReviewPage.self)
        #expect(page.reviews.map(\.text) == [html])
        #expect(try f.call("reviews.add", #"{"place_id":2,"rating":3,"text":\#(try json(String(repeating: "é", count: 5_000)))}"#, as: user)["rating"] as? Int == 3)
    }

    @Test(arguments: [
        (#""rating":0"#, ServiceError.invalid("rating", "must be 1 to 5")),
        (#""rating":6"#, .invalid("rating", "must be 1 to 5")),
        (#""rating":2.5"#, .invalid("rating", "expected an integer")),
        (#""rating":"five""#, .invalid("rating", "expected an integer")),
        (#""rating":null"#, .invalid("rating", "expected an integer, found null")),
        (#""rating":true"#, .invalid("rating", "expected an integer")),
        (#""text":"no rating""#, .invalid("rating", "missing required field rating")),
        (#""rating":4,"text":"<5001 × x>""#, .invalid("text", "must be at most 5000 characters")),
    ])
    func badReviewsAreRefusedAndNothingIsStored(fields template: String, expected: ServiceError) throws {
        let fields = template.replacing(/<(\d+) × (.)>/) { String(repeating: String($0.2), count: Int($0.1) ?? 0) }
        let f = try SocialFixture()
        let user = try f.register("ann")
        #expect(f.error("reviews.add", #"{"place_id":1,\#(fields)}"#, as: user) == expected)
        #expect(try f.client.call("reviews.list", ListReviews(placeId: 1), as: ReviewPage.self).reviews.isEmpty)
        #expect(try f.ratingEvents().isEmpty)
    }

    @Test func theCatalogDecidesWhetherAPlaceExists() throws {
        let f = try SocialFixture()
        let user = try f.register("ann")
        #expect(f.error("reviews.add", #"{"place_id":99,"rating":4}"#, as: user) == ServiceError(.notFound, "no place with id 99", field: "place_id"))
        #expect(try f.ratingEvents().isEmpty)
    }

    @Test func withTheCatalogDownNothingIsStored() throws {
        let f = try SocialFixture(catalogUp: false)
        let user = try f.register("ann")
        // The service's own deadline on the catalog call answers before the client's 5 s.
        #expect(f.error("reviews.add", #"{"place_id":1,"rating":4,"text":"Lovely"}"#, as: user) ==
                ServiceError(.unavailable, "the catalog is not answering; try again"))
        #expect(f.error("share.place", #"{"place_id":1,"network":"email"}"#)?.code == .unavailable)
        #expect(try f.client.call("reviews.list", ListReviews(placeId: 1), as: ReviewPage.self).reviews.isEmpty)
        #expect(try f.ratingEvents().isEmpty)
        #expect(f.logs.text.contains("catalog did not answer"))
    }

    @Test func listsAreSortedEachWayAndPagedExactlyOnce() throws {
        let f = try SocialFixture()
        for (i, rating) in [3, 5, 1, 5, 3, 4, 2].enumerated() {
            let user = try f.register("user\(i)")
            try f.review(2, rating, by: user, text: "review \(i)")
            f.clock.advance(i == 3 ? 0 : 1)  // two reviews share a time: ties go by id
        }
        // Rewriting a review moves it in the date order.
        try f.review(2, 2, by: 2, text: "changed my mind")
        let all = try f.client.call("reviews.list", ListReviews(placeId: 2, limit: 50), as: ReviewPage.self).reviews
        #expect(all.count == 7)

        let byRating: (Review, Review) -> Bool = { ($0.rating, $0.id) < ($1.rating, $1.id) }
        let byDate: (Review, Review) -> Bool = { ($0.updatedAt, $0.id) < ($1.updatedAt, $1.id) }
        let cases: [(String?, String?, [Review])] = [
            (nil, nil, Array(all.sorted(by: byDate).reversed())),
            ("default", "asc", all.sorted(by: byDate)),
            ("date", "desc", Array(all.sorted(by: byDate).reversed())),
            ("date", "asc", all.sorted(by: byDate)),
            ("rating", nil, Array(all.sorted(by: byRating).reversed())),
            ("rating", "asc", all.sorted(by: byRating)),
        ]
        for (sort, order, expected) in cases {
            var seen: [Int64] = []
            var cursor: String?
            for _ in 0..<10 {
                let page = try f.client.call("reviews.list", ListReviews(placeId: 2, sort: sort, order: order, limit: 2, cursor: cursor), as: ReviewPage.self)
                seen += page.reviews.map(\.id)
                guard let next = page.nextCursor else { break }
                cursor = next
            }
            #expect(seen == expected.map(\.id), "sort \(sort ?? "-") order \(order ?? "-")")
        }
        #expect(all.first?.text == "changed my mind")

        let ratingCursor = try f.client.call("reviews.list", ListReviews(placeId: 2, sort: "rating", limit: 1), as: ReviewPage.self).nextCursor ?? ""
        let refusals: [(String, ServiceError)] = [
            (#"{"place_id":2,"sort":"stars"}"#, .invalid("sort", "must be default, rating or date")),
            (#"{"place_id":2,"order":"up"}"#, .invalid("order", "must be asc or desc")),
            (#"{"place_id":2,"limit":0}"#, .invalid("limit", "must be 1 to 50")),
            (#"{"place_id":2,"limit":51}"#, .invalid("limit", "must be 1 to 50")),
            (#"{"place_id":2,"cursor":"not-a-cursor!"}"#, .invalid("cursor", "not a cursor from this service")),
            (#"{"place_id":2,"sort":"date","cursor":"\#(ratingCursor)"}"#, .invalid("cursor", "this cursor belongs to another sort or order")),
            (#"{"sort":"date"}"#, .invalid("place_id", "missing required field place_id")),
        ]
        for (body, expected) in refusals { #expect(f.error("reviews.list", body) == expected, "\(body)") }
    }

    @Test func everyChangePublishesThePlacesRating() throws {
        let f = try SocialFixture()
        let ann = try f.register("ann"), ben = try f.register("ben")
        let first = try f.review(1, 4, by: ann)
        let second = try f.review(1, 2, by: ben)
        try f.review(1, 5, by: ann)
        try f.review(2, 3, by: ben)
        try f.call("reviews.delete", #"{"review_id":\#(second)}"#, as: ben)
        try f.call("reviews.delete", #"{"review_id":\#(first)}"#, as: ann)
        #expect(try f.ratingEvents() == [
            RatingUpdated(placeId: 1, average: 4, count: 1, reviews30d: 1),
            RatingUpdated(placeId: 1, average: 3, count: 2, reviews30d: 2),
            RatingUpdated(placeId: 1, average: 3.5, count: 2, reviews30d: 2),
            RatingUpdated(placeId: 2, average: 3, count: 1, reviews30d: 1),
            RatingUpdated(placeId: 1, average: 5, count: 1, reviews30d: 1),
            RatingUpdated(placeId: 1, average: 0, count: 0, reviews30d: 0),
        ])
        // The snapshot has one event per place that has reviews.
        let snapshot = try f.client.request(type: "sys.snapshot", body: Data("{}".utf8))
        #expect(try snapshot.attachments.map { try ReceivedEvent(envelope: $0).body(RatingUpdated.self) } == [RatingUpdated(placeId: 2, average: 3, count: 1, reviews30d: 1)])
        #expect(f.error("sys.snapshot", #"{"after":"x"}"#) == .invalid("after", "not a snapshot key from this service"))
    }

    /// A review counts in `reviews_30d` for 30 days from when it was written (or last
    /// replaced); when it leaves the window, the sweep publishes the place's rating again,
    /// with no write of anyone's.
    @Test func reviewsAgeOutOfTheWindowAndAreRepublished() throws {
        let f = try SocialFixture()
        let ann = try f.register("ann"), ben = try f.register("ben")
        try f.review(1, 4, by: ann)
        f.clock.advance(10 * 86_400)
        try f.review(1, 2, by: ben)
        #expect(try f.ratingEvents().last == RatingUpdated(placeId: 1, average: 3, count: 2, reviews30d: 2))
        // Nothing is due yet: the sweep publishes nothing.
        let before = try f.ratingEvents().count
        #expect(try f.call("social.ratings.sweep")["published"] as? Int == 0)
        #expect(try f.ratingEvents().count == before)
        // 30 days after ann's review it leaves the window; ben's, 10 days later.
        f.clock.advance(20 * 86_400 + 1)
        #expect(try f.call("social.ratings.sweep")["published"] as? Int == 1)
        #expect(try f.ratingEvents().last == RatingUpdated(placeId: 1, average: 3, count: 2, reviews30d: 1))
        #expect(try f.call("social.ratings.sweep")["published"] as? Int == 0)
        f.clock.advance(10 * 86_400)
        #expect(try f.call("social.ratings.sweep")["published"] as? Int == 1)
        #expect(try f.ratingEvents().last == RatingUpdated(placeId: 1, average: 3, count: 2, reviews30d: 0))
        // Nothing recent is left: nothing more to sweep, and the snapshot says 0 too.
        f.clock.advance(60 * 86_400)
        #expect(try f.call("social.ratings.sweep")["published"] as? Int == 0)
        let snapshot = try f.client.request(type: "sys.snapshot", body: Data("{}".utf8))
        #expect(try snapshot.attachments.map { try ReceivedEvent(envelope: $0).body(RatingUpdated.self) } == [RatingUpdated(placeId: 1, average: 3, count: 2, reviews30d: 0)])
        // Replacing a review makes it recent again.
        try f.review(1, 5, by: ann)
        #expect(try f.ratingEvents().last == RatingUpdated(placeId: 1, average: 3.5, count: 2, reviews30d: 1))
    }

    @Test func aReviewAddedOnAReaderThreadIsPublishedAtOnce() throws {
        let f = try SocialFixture(heartbeatMs: 60_000)
        let user = try f.register("ann")
        let sub = try Socket(f.context, .sub)
        try sub.subscribe("social.")
        try sub.setReceiveTimeout(milliseconds: 100)
        try sub.connect(f.runtime.endpoints.publish[0])
        // Until the subscription is live, each review's event may be lost: write until one arrives.
        var received: [Data]?
        for rating in 0..<50 where received == nil {
            try f.review(1, rating % 5 + 1, by: user)
            received = try sub.receive()
        }
        #expect(received.map { String(decoding: $0[0], as: UTF8.self) } == SocialEvents.ratingUpdated)
    }
}
