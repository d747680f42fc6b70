import Contracts
import Bus
import Foundation
import ServiceKit
@testable import SocialService
import Testing

@Suite struct FollowTests {
    /// Every user of `type` (followers, following, feed ids) for `user`, paging `limit` at a time.
    func pages(_ f: SocialFixture, _ type: String, _ body: String, as user: Int64?, limit: Int) throws -> [Int] {
        var seen: [Int] = []
        var cursor: String?
        for _ in 0..<20 {
            let fields = [body, "\"limit\":\(limit)", cursor.map { "\"cursor\":\"\($0)\"" }].compactMap { $0 }.filter { !$0.isEmpty }
            let page = try f.call(type, "{\(fields.joined(separator: ","))}", as: user)
            let items = (page["users"] ?? page["reviews"]) as? [[String: Any]] ?? []
            seen += items.compactMap { $0["id"] as? Int }
            guard let next = page["next_cursor"] as? String else { break }
            cursor = next
        }
        return seen
    }

    @Test func followUnfollowAndTheLists() throws {
        let f = try SocialFixture()
        let ann = try f.register("ann"), ben = try f.register("ben"), cat = try f.register("cat")
        #expect(try f.call("social.follow", #"{"user_id":\#(ben)}"#, as: ann)["following"] as? Bool == true)
        try f.call("social.follow", #"{"user_id":\#(cat)}"#, as: ann)
        try f.call("social.follow", #"{"user_id":\#(cat)}"#, as: ann)  // twice is fine
        try f.call("social.follow", #"{"user_id":\#(ann)}"#, as: cat)
        #expect(f.error("social.follow", #"{"user_id":\#(ann)}"#, as: ann) == .invalid("user_id", "cannot follow yourself"))
        #expect(f.error("social.follow", #"{"user_id":99}"#, as: ann) == ServiceError(.notFound, "no user with id 99", field: "user_id"))
        #expect(f.error("social.unfollow", #"{"user_id":99}"#, as: ann) == ServiceError(.notFound, "no user with id 99", field: "user_id"))

        // Newest follow first, each once, page by page.
        #expect(try pages(f, "social.following", "", as: ann, limit: 1) == [Int(cat), Int(ben)])
        #expect(try pages(f, "social.following", #""user_id":\#(ann)"#, as: nil, limit: 5) == [Int(cat), Int(ben)])
        #expect(try pages(f, "social.followers", #""user_id":\#(cat)"#, as: nil, limit: 1) == [Int(ann)])
        #expect(try pages(f, "social.followers", "", as: ann, limit: 2) == [Int(cat)])
        #expect(f.error("social.followers", #"{"user_id":99}"#) == ServiceError(.notFound, "no user with id 99", field: "user_id"))
        #expect(f.error("social.followers", #"{"user_id":1,"cursor":"bm9wZQ"}"#) == .invalid("cursor", "not a cursor from this service"))
        let profile = try f.call("profile.get", #"{"user_id":\#(ann)}"#)
        #expect(profile["followers"] as? Int == 1 && profile["following"] as? Int == 2)

        #expect(try f.call("social.unfollow", #"{"user_id":\#(cat)}"#, as: ann)["following"] as? Bool == false)
        try f.call("social.unfollow", #"{"user_id":\#(cat)}"#, as: ann)  // twice is fine
        #expect(try pages(f, "social.following", "", as: ann, limit: 5) == [Int(ben)])
    }

    @Test func theFeedHasTheNewestReviewsOfThePeopleFollowed() throws {
        let f = try SocialFixture()
        let ann = try f.register("ann"), ben = try f.register("ben"), cat = try f.register("cat"), dan = try f.register("dan")
        try f.call("social.follow", #"{"user_id":\#(ben)}"#, as: ann)
        try f.call("social.follow", #"{"user_id":\#(cat)}"#, as: ann)
        var written: [(Int64, Int64)] = []  // (author, review)
        for (place, author) in [(1, ben), (1, cat), (1, dan), (2, ben), (3, cat), (3, ann), (3, ben)] {
            written.append((author, try f.review(Int64(place), 4, by: author)))
            f.clock.advance(60)
        }
        let expected = written.filter { $0.0 == ben || $0.0 == cat }.map { Int($0.1) }.reversed()
        #expect(try pages(f, "social.feed", "", as: ann, limit: 2) == Array(expected))
        try f.call("social.unfollow", #"{"user_id":\#(ben)}"#, as: ann)
        #expect(try pages(f, "social.feed", "", as: ann, limit: 50) == Array(written.filter { $0.0 == cat }.map { Int($0.1) }.reversed()))
        #expect(try pages(f, "social.feed", "", as: dan, limit: 50).isEmpty)
    }
}

@Suite struct ProfileTests {
    @Test func ownProfileShowsMoreThanOthersSee() throws {
        let f = try SocialFixture()
        let ann = try f.register("ann"), ben = try f.register("ben")
        // A user id in the body says nothing about whose profile changes: it is no parameter of profile.update.
        #expect(f.error("profile.update", #"{"name":"Ben's now","user_id":\#(ben)}"#, as: ann) == .invalid("user_id", "unknown parameter 'user_id'"))
        let updated = try f.call("profile.update", #"""
            {"name":" Ann Lee ","bio":"<i>Coffee</i> first","avatar_url":"https://example.org/ann.png","birth_year":1990,"language":"pt-BR","home_city":"Sydney"}
            """#, as: ann)
        #expect(updated["id"] as? Int == Int(ann) && updated["name"] as? String == "Ann Lee" && updated["bio"] as? String == "<i>Coffee</i> first")
        #expect(updated["email"] as? String == "ann@example.com" && updated["birth_year"] as? Int == 1990 && updated["age_group"] == nil)
        #expect(try f.call("profile.get", as: ann)["language"] as? String == "pt-BR")
        #expect(try f.call("profile.get", #"{"user_id":\#(ann)}"#, as: ann)["email"] as? String == "ann@example.com")
        let seen = try f.call("profile.get", #"{"user_id":\#(ann)}"#, as: ben)
        #expect(seen["age_group"] as? String == "35-44" && seen["email"] == nil && seen["birth_year"] == nil && seen["home_city"] as? String == "Sydney")
        #expect(Set(try f.call("profile.get", #"{"user_id":\#(ann)}"#).keys) ==
                ["id", "username", "name", "role", "bio", "avatar_url", "language", "home_city", "age_group", "followers", "following", "created_at"])
        // Ben's own profile was not touched by the user_id in Ann's body.
        #expect(try f.call("profile.get", as: ben)["bio"] == nil)

        // A name or a home city of invisible characters only is empty; around one they are trimmed.
        #expect(f.error("profile.update", #"{"home_city":"\u200b\u3164"}"#, as: ann) == .invalid("home_city", "must not be empty; send null to clear it"))
        #expect(f.error("profile.update", #"{"name":"\u2800\u00ad"}"#, as: ann) == .invalid("name", "must not be empty"))
        #expect(try f.call("profile.update", #"{"home_city":" \ufeffSydney\u200b "}"#, as: ann)["home_city"] as? String == "Sydney")

        // null clears; absent keeps.
        let cleared = try f.call("profile.update", #"{"bio":null,"birth_year":null}"#, as: ann)
        #expect(cleared["bio"] == nil && cleared["birth_year"] == nil && cleared["home_city"] as? String == "Sydney")
        #expect(try f.call("profile.get", #"{"user_id":\#(ann)}"#)["age_group"] == nil)
        #expect(f.error("profile.get", #"{"user_id":99}"#) == ServiceError(.notFound, "no user with id 99", field: "user_id"))
    }

    @Test(arguments: [
        (#"{"name":null}"#, ServiceError.invalid("name", "cannot be null")),
        (#"{"name":"  "}"#, .invalid("name", "must not be empty")),
        (#"{"bio":"<501 × b>"}"#, .invalid("bio", "must be at most 500 characters")),
        (#"{"avatar_url":"ftp://example.org/a.png"}"#, .invalid("avatar_url", "must be an http or https URL of at most 500 characters")),
        (#"{"avatar_url":"https://example.org/<490 × a>"}"#, .invalid("avatar_url", "must be at most 500 characters")),
        (#"{"birth_year":1899}"#, .invalid("birth_year", "must be 1900 to 2026")),
        (#"{"birth_year":2027}"#, .invalid("birth_year", "must be 1900 to 2026")),
        (#"{"language":"english"}"#, .invalid("language", "must be a language tag such as en or pt-BR")),
        (#"{"language":"pt_BR"}"#, .invalid("language", "must be a language tag such as en or pt-BR")),
        (#"{"home_city":"<101 × c>"}"#, .invalid("home_city", "must be at most 100 characters")),
    ])
    func profileRulesNameTheField(body template: String, expected: ServiceError) throws {
        let body = template.replacing(/<(\d+) × (.)>/) { String(repeating: String($0.2), count: Int($0.1) ?? 0) }
        let f = try SocialFixture()
        let ann = try f.register("ann")
        #expect(f.error("profile.update", body, as: ann) == expected)
        #expect(try f.call("profile.get", as: ann)["name"] as? String == "Ann")
    }

    @Test(arguments: [(2009, "under 18"), (2008, "18-24"), (2002, "18-24"), (2001, "25-34"), (1982, "35-44"), (1981, "45-54"),
                      (1971, "55-64"), (1962, "55-64"), (1961, "65+"), (1900, "65+")])
    func ageGroups(birthYear: Int, group: String) {
        #expect(ProfileRules.ageGroup(birthYear: birthYear, currentYear: 2026) == group)
    }
}

@Suite struct ShareTests {
    @Test func shareURLsAreExactlyEscaped() throws {
        let f = try SocialFixture()
        let text = "Caf%C3%A9%20Sydney%20%26%20Bar%20on%20Tourbus", link = "https%3A%2F%2Ftourbus.example%2Fplaces%2F3"
        let expected = [
            "twitter": "https://twitter.com/intent/tweet?text=\(text)&url=\(link)",
            "facebook": "https://www.facebook.com/sharer/sharer.php?u=\(link)",
            "email": "mailto:?subject=\(text)&body=\(link)",
        ]
        for (network, url) in expected {
            let shared = try f.client.call("share.place", ShareRequest(placeId: 3, network: network), as: ShareLink.self)
            #expect(shared == ShareLink(text: "Café Sydney & Bar on Tourbus", url: url))
        }
        #expect(f.error("share.place", #"{"place_id":3,"network":"myspace"}"#) == .invalid("network", "must be twitter, facebook or email"))
        #expect(f.error("share.place", #"{"place_id":99,"network":"email"}"#) == ServiceError(.notFound, "no place with id 99", field: "place_id"))
    }

    @Test func onlyUnreservedCharactersAreLeftAsTheyAre() {
        #expect(ShareNetwork.percentEncoded("AZaz09-._~") == "AZaz09-._~")
        #expect(ShareNetwork.percentEncoded(" !\"#$%&'()*+,/:;=?@[]") == "%20%21%22%23%24%25%26%27%28%29%2A%2B%2C%2F%3A%3B%3D%3F%40%5B%5D")
        #expect(ShareNetwork.percentEncoded("ü€🎭\n") == "%C3%BC%E2%82%AC%F0%9F%8E%AD%0A")
    }
}
