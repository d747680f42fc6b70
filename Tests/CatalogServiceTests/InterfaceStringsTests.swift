import Bus
@testable import CatalogService
import Foundation
import Testing

/// The repository's string files (`i18n/`), the rules a strings directory is held to at start,
/// and `strings.get` over a real catalog.
@Suite struct InterfaceStringsTests {
    static let repository = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

    private func files(_ texts: [String: String]) -> [String: Data] { texts.mapValues { Data($0.utf8) } }

    private func refusal(_ texts: [String: String]) -> String? {
        do {
            _ = try InterfaceStrings(files: files(texts))
            return nil
        } catch {
            return "\(error)"
        }
    }

    @Test func everyKeyOfEnglishIsInEveryFileOrFallsBackOnPurpose() throws {
        let strings = try InterfaceStrings(directory: Self.repository.appendingPathComponent("i18n").path)
        #expect(Set(strings.tables.keys).isSuperset(of: ["en", "en-AU", "ru", "de"]))
        #expect(strings.missing() == [:])
        // No file has a key English lacks (the loader refuses it), and real translations differ from English.
        let english = try #require(strings.tables["en"])
        for (tag, table) in strings.tables {
            #expect(Set(table.keys).isSubset(of: english.keys), "\(tag)")
        }
        for tag in ["ru", "de"] {
            let table = try #require(strings.tables[tag])
            let same = table.filter { english[$0.key] == $0.value && !$0.key.hasPrefix("image.") }.count
            #expect(same * 10 < table.count, "\(tag): \(same) of \(table.count) texts are the English ones")
        }
        // The texts the product names: the empty favorites, alerts, the password rule, images per language.
        #expect(english["favorites.empty"] == "No favorites" && strings.tables["en-AU"]?["favorites.empty"] == "No favourites")
        #expect(strings.tables["ru"]?["image.welcome_banner"] == "welcome_banner.ru.png")
        #expect(english.keys.contains("account.password_rule") && english.keys.filter { $0.hasPrefix("alerts.") }.count >= 5)
        // en-AU says only what differs.
        for (key, text) in try #require(strings.tables["en-AU"]) { #expect(english[key] != text, "en-AU \(key) is the en text") }
    }

    @Test func aMissingKeyNotListedIsFoundAndListingItOrStarAllowsIt() throws {
        let en = #"{"a.one":"One","a.two":"Two"}"#
        let lacking = try InterfaceStrings(files: files(["en.json": en, "de.json": #"{"a.one":"Eins"}"#]))
        #expect(lacking.missing() == ["de": ["a.two"]])
        let listed = try InterfaceStrings(files: files(["en.json": en, "de.json": #"{"a.one":"Eins"}"#,
                                                        "fallbacks.json": #"{"de":{"a.two":"same word"}}"#]))
        #expect(listed.missing() == [:])
        let regional = try InterfaceStrings(files: files(["en.json": en, "en-AU.json": "{}", "fallbacks.json": #"{"en-AU":{"*":"regional"}}"#]))
        #expect(regional.missing() == [:])
    }

    @Test func badFilesAreRefusedWithTheFileAndTheRule() {
        let en = #"{"a.one":"One"}"#
        #expect(refusal(["de.json": en]) == "en.json: is missing: English has every key")
        #expect(refusal(["en.json": en, "de.json": #"{"a.two":"Zwei"}"#]) == "de.json: has key 'a.two', which en.json lacks")
        #expect(refusal(["en.json": #"{"a":{"b":"c"}}"#])?.hasPrefix("en.json: ") == true)
        #expect(refusal(["en.json": #"{"a.one":1}"#]) == "en.json: a.one must be a string")
        #expect(refusal(["en.json": #"["One"]"#]) == "en.json: must be one JSON object of key to text")
        #expect(refusal(["en.json": #"{"a.one":"One","a.one":"Again"}"#]) == "en.json: has key 'a.one' twice")
        #expect(refusal(["en.json": #"{"A key":"x"}"#])?.hasPrefix("en.json: 'A key' is not a key") == true)
        #expect(refusal(["en.json": "{\"a.one\":\"One\""])?.hasPrefix("en.json: is not JSON") == true)
        #expect(refusal(["en.json": en, "ru_RU.json": en])?.hasPrefix("ru_RU.json: is not named") == true)
        #expect(refusal(["en.json": en, "en-au.json": en])?.hasPrefix("en-au.json: is not named") == true)
        #expect(refusal(["en.json": en, "fallbacks.json": #"{"fr":{"a.one":"x"}}"#]) == "fallbacks.json: 'fr' is not a language file other than en")
        #expect(refusal(["en.json": en, "de.json": "{}", "fallbacks.json": #"{"de":{"b":"x"}}"#]) == "fallbacks.json: de lists 'b', which en.json lacks")
        // Bounds, from the attacker's side: bytes of a file, of a text, keys.
        let big = #"{"a":""# + String(repeating: "x", count: 128 * 1024) + #""}"#
        #expect(refusal(["en.json": big]) == "en.json: is larger than 131072 bytes")
        #expect(refusal(["en.json": #"{"a":""# + String(repeating: "я", count: 1_001) + #""}"#]) == "en.json: a is longer than 2000 bytes")
        let many = "{" + (0...2_000).map { #""k\#($0)":"""# }.joined(separator: ",") + "}"
        #expect(refusal(["en.json": many]) == "en.json: has more than 2000 keys")
        // Each file within its bounds, yet a reply could pass 1 MiB: 10 languages with long texts
        // for 110 keys each, so that one list of them all takes a long text for each of 1,100 keys.
        let tags = ["da", "de", "es", "fi", "fr", "it", "nl", "no", "pt", "sv"]
        var heavy = ["en.json": "{" + (0..<1_100).map { #""k\#($0)":"x""# }.joined(separator: ",") + "}"]
        for (i, tag) in tags.enumerated() {
            heavy["\(tag).json"] = "{" + (i * 110..<(i + 1) * 110).map { #""k\#($0)":"\#(String(repeating: "я", count: 500))""# }.joined(separator: ",") + "}"
        }
        #expect(refusal(heavy)?.hasPrefix("strings: a reply could reach ") == true)
        heavy["sv.json"] = "{}"
        heavy["pt.json"] = "{}"
        #expect(refusal(heavy) == nil)
    }

    @Test func aDirectoryOfTooManyFilesIsRefusedBeforeReadingThem() throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("strings-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        try Data(#"{"a":"One"}"#.utf8).write(to: folder.appendingPathComponent("en.json"))
        #expect(try InterfaceStrings(directory: folder.path).tables.keys.sorted() == ["en"])
        for i in 0..<41 { try Data("{}".utf8).write(to: folder.appendingPathComponent("x\(i).json")) }
        #expect(throws: InterfaceStringsError(folder.path, "has more than 40 language files")) { try InterfaceStrings(directory: folder.path) }
        #expect(throws: InterfaceStringsError(folder.path + "/none", "cannot be read as a directory of string files")) {
            try InterfaceStrings(directory: folder.path + "/none")
        }
    }

    @Test func theVersionFollowsTheFiles() throws {
        let a = try InterfaceStrings(files: files(["en.json": #"{"a":"One"}"#]))
        let b = try InterfaceStrings(files: files(["en.json": #"{"a":"One"}"#, "fallbacks.json": "{}"]))
        let c = try InterfaceStrings(files: files(["en.json": #"{"a":"Uno"}"#]))
        #expect(a.version.utf8.count == 16 && a.version == b.version && a.version != c.version)
    }
}
