import Bus
import Contracts
import Foundation
import ServiceKit
import SocialService
import Storage
import Testing

/// `count` characters of `e` each followed by `accents` combining acute accents (U+0301, 2
/// bytes each): one grapheme cluster per `e`, so few characters and many bytes.
func graphemeBomb(characters count: Int, accents: Int) -> String {
    String(repeating: "e" + String(repeating: "\u{301}", count: accents), count: count)
}

@Suite struct TextBoundTests {
    /// A registration body with one field replaced.
    func registration(username: String = "erin", email: String = "erin@example.com", name: String = "Erin",
                      password: String = SocialFixture.password) -> Registration {
        Registration(username: username, email: email, name: name, password: password)
    }

    func refusal(_ f: SocialFixture, _ account: Registration) -> ServiceError? {
        do {
            _ = try f.client.call("auth.register", account, as: PublicUser.self)
            return nil
        } catch {
            return error
        }
    }

    @Test func aGraphemeBombOfAHundredCharactersIsRefusedByItsBytes() throws {
        let f = try SocialFixture()
        let bomb = graphemeBomb(characters: 100, accents: 5_000)
        #expect(bomb.count == 100 && bomb.utf8.count == 1_000_100)
        #expect(refusal(f, registration(name: bomb)) == .invalid("name", "must be at most 400 bytes"))
        // Nothing was stored: the first account still gets id 1.
        let erin = try f.register("erin")
        #expect(erin == 1)
        #expect(f.error("profile.update", #"{"name":\#(try json(bomb))}"#, as: erin) == .invalid("name", "must be at most 400 bytes"))
        let bio = graphemeBomb(characters: 500, accents: 999)
        #expect(bio.count == 500 && bio.utf8.count > 990_000)
        #expect(f.error("profile.update", #"{"bio":\#(try json(bio))}"#, as: erin) == .invalid("bio", "must be at most 2000 bytes"))
        #expect(f.error("profile.update", #"{"home_city":\#(try json(graphemeBomb(characters: 100, accents: 2)))}"#, as: erin) ==
                .invalid("home_city", "must be at most 400 bytes"))
        #expect(f.error("profile.update", #"{"avatar_url":\#(try json("https://example.org/" + graphemeBomb(characters: 100, accents: 50)))}"#, as: erin) ==
                .invalid("avatar_url", "must be at most 2000 bytes"))
        #expect(f.error("profile.update", #"{"language":\#(try json("en-" + graphemeBomb(characters: 10, accents: 20)))}"#, as: erin) ==
                .invalid("language", "must be at most 140 bytes"))
        #expect(try f.call("profile.get", as: erin)["name"] as? String == "Erin")
        #expect(refusal(f, registration(username: graphemeBomb(characters: 10, accents: 100))) == .invalid("username", "must be at most 128 bytes"))
        #expect(refusal(f, registration(email: "a@" + graphemeBomb(characters: 100, accents: 10) + ".com")) == .invalid("email", "must be at most 1016 bytes"))
    }

    @Test func aReviewIsBoundedInBytes() throws {
        let f = try SocialFixture()
        let ann = try f.register("ann")
        let text = graphemeBomb(characters: 5_000, accents: 99)
        #expect(text.count == 5_000 && text.utf8.count == 995_000)
        #expect(f.error("reviews.add", #"{"place_id":1,"rating":4,"text":\#(try json(text))}"#, as: ann) == .invalid("text", "must be at most 20000 bytes"))
        #expect(try f.client.call("reviews.list", ListReviews(placeId: 1), as: ReviewPage.self).reviews.isEmpty)
        #expect(try f.ratingEvents().isEmpty)
        // 5,000 characters of four bytes each is the most there is room for.
        let widest = String(repeating: "🎭", count: 5_000)
        #expect(try f.call("reviews.add", #"{"place_id":1,"rating":4,"text":\#(try json(widest))}"#, as: ann)["text"] as? String == widest)
        #expect(f.error("reviews.add", #"{"place_id":1,"rating":4,"text":\#(try json(widest + "a"))}"#, as: ann) == .invalid("text", "must be at most 20000 bytes"))
    }

    static let singleLine = "must be one line without control or bidirectional formatting characters"

    @Test(arguments: ["\u{0}", "\u{1}", "\t", "\n", "\r", "\u{1B}", "\u{7F}", "\u{85}", "\u{9F}", "\u{61C}", "\u{200E}", "\u{200F}",
                      "\u{202A}", "\u{202E}", "\u{2066}", "\u{2069}", "\u{2028}"])
    func controlAndBidiCharactersAreRefusedInSingleLineFields(character: String) throws {
        let f = try SocialFixture()
        #expect(refusal(f, registration(username: "er\(character)in")) == .invalid("username", Self.singleLine))
        #expect(refusal(f, registration(email: "erin\(character)@example.com")) == .invalid("email", Self.singleLine))
        #expect(refusal(f, registration(name: "Er\(character)in")) == .invalid("name", Self.singleLine))
        let erin = try f.register("erin")
        #expect(erin == 1)
        for field in ["name", "home_city", "language", "avatar_url"] {
            let value = field == "avatar_url" ? "https://example.org/\(character)a.png" : field == "language" ? "en\(character)" : "Syd\(character)ney"
            #expect(f.error("profile.update", #"{"\#(field)":\#(try json(value))}"#, as: erin) == .invalid(field, Self.singleLine), "\(field)")
        }
    }

    @Test func surroundingWhiteSpaceOfANameIsStillTrimmed() throws {
        let f = try SocialFixture()
        let user = try f.client.call("auth.register", registration(name: "\n\t Erin Lee \r\n"), as: PublicUser.self)
        #expect(user.name == "Erin Lee")
    }

    @Test func anEmailWithANulOrAnInvisibleCharacterIsNotASecondAccount() throws {
        let f = try SocialFixture()
        try f.register("alice")
        let invisible = "must be an email address such as name@example.com"
        for (email, message) in [("alice@example.com\u{0}", Self.singleLine), ("\u{0}alice@example.com", Self.singleLine),
                                 ("alice\u{0}@example.com", Self.singleLine), ("alice@example.com\u{202E}", Self.singleLine),
                                 ("alice@example.com\u{200B}", invisible), ("al\u{FEFF}ice@example.com", invisible)] {
            #expect(refusal(f, registration(username: "alice2", email: email)) == .invalid("email", message), "\(Array(email.unicodeScalars))")
        }
        #expect(try Database(path: f.databasePath).scalarInt("SELECT count(*) FROM users") == 1)
    }

    @Test func multiLineTextKeepsLineBreaksAndTabsOnly() throws {
        let f = try SocialFixture()
        let ann = try f.register("ann")
        let kept = "First line\nsecond\tcolumn\r\nthird"
        #expect(try f.call("profile.update", #"{"bio":\#(try json(kept))}"#, as: ann)["bio"] as? String == kept)
        #expect(try f.call("reviews.add", #"{"place_id":1,"rating":5,"text":\#(try json(kept))}"#, as: ann)["text"] as? String == kept)
        let multiLine = "must not contain control or bidirectional formatting characters other than line breaks and tabs"
        for bad in ["a\u{0}b", "a\rb", "ends in\r", "\u{1B}[31mred", "\u{7F}", "\u{85}", "\u{202E}evil", "\u{2067}x\u{2069}", "\u{200F}"] {
            #expect(f.error("profile.update", #"{"bio":\#(try json(bad))}"#, as: ann) == .invalid("bio", multiLine))
            #expect(f.error("reviews.add", #"{"place_id":2,"rating":5,"text":\#(try json(bad))}"#, as: ann) == .invalid("text", multiLine))
        }
        #expect(try f.call("profile.get", as: ann)["bio"] as? String == kept)
    }

    @Test func logInRefusesWhatNoAccountCanHaveBeforeHashing() throws {
        let f = try SocialFixture()
        try f.register("ann")
        #expect(throws: ServiceError.invalid("username", "must be at most 128 bytes")) {
            try f.login(graphemeBomb(characters: 100, accents: 5_000))
        }
        #expect(throws: ServiceError.invalid("password", "must be at most 1024 bytes")) {
            try f.login("ann", String(repeating: "Aa1", count: 342))
        }
        #expect(try f.login("ann").user.username == "ann")
        #expect(refusal(f, registration(password: "Aa1" + graphemeBomb(characters: 6, accents: 100))) == .invalid("password", "must be at most 1024 bytes"))
    }

    @Test func cursorsAreBoundedInBytes() throws {
        let f = try SocialFixture()
        let ann = try f.register("ann")
        let long = String(repeating: "A", count: 100_000)
        let refused = ServiceError.invalid("cursor", "not a cursor from this service")
        #expect(f.error("reviews.list", #"{"place_id":1,"cursor":"\#(long)"}"#) == refused)
        #expect(f.error("social.followers", #"{"user_id":\#(ann),"cursor":"\#(long)"}"#) == refused)
        #expect(f.error("social.feed", #"{"cursor":"\#(long)"}"#, as: ann) == refused)
    }
}
