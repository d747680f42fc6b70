import Bus
import Contracts
import Foundation
import ServiceKit
import SocialService
import Testing

@Suite struct PageBudgetTests {
    static let budget = SocialOptions().pageBudgetBytes

    /// Every item id of a list, page by page, with the size of each page's reply body.
    func pages(_ f: SocialFixture, _ type: String, _ fields: String, as user: Int64? = nil) throws -> (ids: [Int], sizes: [Int]) {
        var ids: [Int] = [], sizes: [Int] = []
        var cursor: String?
        for _ in 0..<100 {
            let body = "{" + ([fields, cursor.map { #""cursor":"\#($0)""# }].compactMap { $0 }.filter { !$0.isEmpty }.joined(separator: ",")) + "}"
            let reply = try f.client.request(type: type, body: Data(body.utf8), auth: user.map { Auth(userId: String($0), role: "user") },
                                             timeoutMilliseconds: 5_000)
            sizes.append(reply.bodyJSON.count)
            let page = try JSONSerialization.jsonObject(with: reply.bodyJSON) as? [String: Any] ?? [:]
            ids += ((page["reviews"] ?? page["users"]) as? [[String: Any]] ?? []).compactMap { $0["id"] as? Int }
            guard let next = page["next_cursor"] as? String else { break }
            cursor = next
        }
        return (ids, sizes)
    }

    @Test func pagesOfLargeReviewsStayUnderTheBudgetAndMissNothing() throws {
        #expect(Self.budget == 256 * 1_024)
        let f = try SocialFixture()
        // 30 reviews of 5,000 four-byte characters: 600 KB, more than two budgets.
        let text = String(repeating: "🎭", count: 5_000)
        var reviews: [Int] = []
        let reader = try f.register("reader")
        for i in 0..<30 {
            let user = try f.register("writer\(i)")
            reviews.append(Int(try f.review(1, i % 5 + 1, by: user, text: text)))
            try f.call("social.follow", #"{"user_id":\#(user)}"#, as: reader)
            f.clock.advance(1)
        }
        for (sort, expected) in [("date", Array(reviews.reversed())), ("rating", nil)] {
            let (ids, sizes) = try pages(f, "reviews.list", #""place_id":1,"limit":50,"sort":"\#(sort)""#)
            #expect(sizes.count >= 3, "\(sizes)")
            #expect(sizes.allSatisfy { $0 <= Self.budget + 100 }, "\(sizes)")
            #expect(ids.count == 30 && Set(ids) == Set(reviews))
            if let expected { #expect(ids == expected) }
        }
        // The feed pages the same way.
        let (feed, feedSizes) = try pages(f, "social.feed", #""limit":50"#, as: reader)
        #expect(feed == Array(reviews.reversed()))
        #expect(feedSizes.count >= 3 && feedSizes.allSatisfy { $0 <= Self.budget + 100 }, "\(feedSizes)")
        // Small reviews still fill a page by count.
        let (few, fewSizes) = try pages(f, "reviews.list", #""place_id":1,"limit":5"#)
        #expect(few.count == 30 && fewSizes.count == 6 + 1)
    }

    @Test func followerListsArePagedByBytesToo() throws {
        // A budget of 2 KiB holds four users whose names take 400 bytes.
        let f = try SocialFixture(pageBudget: 2_048)
        let star = try f.register("star")
        var fans: [Int] = []
        for i in 0..<20 {
            let name = String(repeating: "🎭", count: 100)
            let account = Registration(username: "fan\(i)", email: "fan\(i)@example.com", name: name, password: SocialFixture.password)
            let fan = try f.client.call("auth.register", account, as: PublicUser.self).id
            try f.call("social.follow", #"{"user_id":\#(star)}"#, as: fan)
            try f.call("social.follow", #"{"user_id":\#(fan)}"#, as: star)
            fans.append(Int(fan))
        }
        for type in ["social.followers", "social.following"] {
            let (ids, sizes) = try pages(f, type, #""user_id":\#(star),"limit":50"#)
            #expect(ids == Array(fans.reversed()), "\(type)")
            #expect(sizes.count == 5 && sizes.allSatisfy { $0 <= 2_048 + 100 }, "\(type) \(sizes)")
        }
    }

    @Test func anItemLargerThanTheBudgetStillHasAPageOfItsOwn() throws {
        let f = try SocialFixture(pageBudget: 100)
        let ann = try f.register("ann"), ben = try f.register("ben")
        let first = try f.review(1, 5, by: ann, text: String(repeating: "a", count: 500))
        f.clock.advance(1)
        let second = try f.review(1, 4, by: ben, text: String(repeating: "b", count: 500))
        let (ids, sizes) = try pages(f, "reviews.list", #""place_id":1"#)
        #expect(ids == [Int(second), Int(first)] && sizes.count == 2)
    }
}
