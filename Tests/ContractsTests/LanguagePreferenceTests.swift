import Bus
import Contracts
import Testing

/// `lang` as every service reads it: a tag or an Accept-Language list, into the languages to
/// try, and what is refused.
@Suite struct LanguagePreferenceTests {
    private func chain(_ lang: String) throws -> [String] { try LanguagePreference(lang).chain }

    private func refusal(_ lang: String) -> ServiceError? {
        do {
            _ = try LanguagePreference(lang)
            return nil
        } catch {
            return error
        }
    }

    @Test func aTagFallsBackThroughItsShorterFormsToEnglish() throws {
        #expect(try chain("ru-RU") == ["ru-RU", "ru", "en"])
        #expect(try chain("zh-Hant-TW") == ["zh-Hant-TW", "zh-Hant", "zh", "en"])
        #expect(try chain("en") == ["en"])
        #expect(try chain("en-AU") == ["en-AU", "en"])
        // Any case, written in BCP 47's conventional one.
        #expect(try chain("EN-au") == ["en-AU", "en"])
        #expect(try chain("tlh") == ["tlh", "en"])
    }

    @Test func anAcceptLanguageListIsOrderedByQualityThenByPosition() throws {
        #expect(try chain("ru-RU,ru;q=0.9,en;q=0.8") == ["ru-RU", "ru", "en"])
        #expect(try chain("de-CH,fr;q=0.5,ru;q=0.9") == ["de-CH", "de", "ru", "fr", "en"])
        #expect(try chain("fr;q=0.5, de ;Q=0.5,it") == ["it", "fr", "de", "en"])
        // The wildcard and q=0 add nothing; the chain still ends with English.
        #expect(try chain("*") == ["en"])
        #expect(try chain("fr;q=0, *;q=0.1, de") == ["de", "en"])
        #expect(try chain("en;q=0") == ["en"])
        #expect(try chain("de;q=1.000,ru;q=0.999") == ["de", "ru", "en"])
    }

    @Test func malformedListsAreRefusedNamingTheField() throws {
        for bad in ["", "ru_RU", "русский", "r", "english", "en-", "en--GB", "ru,,en", ",ru", "ru;", "ru;q=", "ru;q=2", "ru;q=1.5",
                    "ru;q=0.1234", "ru;q=.5", "ru;level=1", "ru;q=0.5;q=0.4", "en-abcdefghi", "\u{0}"] {
            #expect(refusal(bad)?.code == .invalidArgument && refusal(bad)?.field == "lang", "\(bad)")
        }
        #expect(throws: ServiceError.self) { try LanguagePreference("ru_RU", field: "accept") }
        #expect(refusal("ru;q=2")?.message == "'q=2' is not a q-value (q=0 to q=1, at most 3 decimals)")
    }

    @Test func bytesAndEntriesAreBoundedFromTheAttackersSide() throws {
        // 256 bytes pass, 257 do not, counted in UTF-8 bytes (a Cyrillic letter is 2).
        let sixteen = Array(repeating: "de", count: 16).joined(separator: ",")
        #expect(try chain(sixteen) == ["de", "en"])
        #expect(refusal(sixteen + ",de")?.message == "at most 16 languages")
        #expect(refusal(String(repeating: "a", count: 257))?.message == "must be at most 256 bytes")
        let cyrillic = String(repeating: "я", count: 129)
        #expect(cyrillic.count < 256 && cyrillic.utf8.count == 258)
        #expect(refusal(cyrillic)?.message == "must be at most 256 bytes")
        // A huge body is refused by its bytes before it is split.
        #expect(refusal(String(repeating: ",", count: 1_000_000))?.message == "must be at most 256 bytes")
    }

    @Test func textsArePickedAlongTheChainWithoutCase() throws {
        let names = ["en": "Opera House", "ru": "Оперный театр", "pt-BR": "Ópera"]
        #expect(try LanguagePreference("ru-RU").pick(names)! == ("ru", "Оперный театр"))
        #expect(try LanguagePreference("PT-br").pick(names)! == ("pt-BR", "Ópera"))
        #expect(try LanguagePreference("fr").pick(names)! == ("en", "Opera House"))
        #expect(try LanguagePreference("fr").pick(["de": "Oper"]) == nil)
        #expect(try LanguagePreference("ru").pick([String: String]()) == nil)
        #expect(try LanguagePreference("ru").pick(nil as [String: String]?) == nil)
    }

    @Test func tagsAreWellFormedOrNot() {
        for good in ["en", "ru", "pt-BR", "zh-Hant-TW", "yue", "de-1996"] { #expect(LanguagePreference.isTag(good), "\(good)") }
        for bad in ["", "e", "EN", "english", "en-", "en--us", "en_US", "en-abcdefghi", "ру", String(repeating: "ab-", count: 12) + "ab"] {
            #expect(!LanguagePreference.isTag(bad), "\(bad)")
        }
        #expect(LanguagePreference.isTag("EN-gb", anyCase: true))
        #expect(LanguagePreference.canonical("zh-hant-tw") == "zh-Hant-TW" && LanguagePreference.canonical("EN-AU") == "en-AU")
    }
}
