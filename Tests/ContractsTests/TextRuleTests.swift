import Bus
import Contracts
import Testing

@Suite struct TextRuleTests {
    let name = TextRule("name", maxCharacters: 10)
    let text = TextRule("text", maxCharacters: 10, lines: .multiple)

    @Test func bytesAreCheckedBeforeCharacters() throws {
        #expect(name.maxBytes == 40 && TextRule("x", maxCharacters: 10, maxBytes: 12).maxBytes == 12)
        let bomb = String(repeating: "e" + String(repeating: "\u{301}", count: 50), count: 3)
        #expect(bomb.count == 3)
        #expect(throws: ServiceError.invalid("name", "must be at most 40 bytes")) { try name.check(bomb) }
        #expect(throws: ServiceError.invalid("name", "must be at most 40 bytes")) { try name.checkBytesAndCharacters(bomb) }
        #expect(throws: ServiceError.invalid("name", "must be at most 10 characters")) { try name.check("abcdefghijk") }
        try name.check("🎭🎭🎭🎭🎭🎭🎭🎭🎭🎭")  // 10 characters, 40 bytes
        #expect(throws: ServiceError.invalid("name", "must be at most 40 bytes")) { try name.check("🎭🎭🎭🎭🎭🎭🎭🎭🎭🎭a") }
        try name.check(nil as String?)
    }

    @Test func controlAndBidirectionalCharactersAreRefused() {
        let refused: [Unicode.Scalar] = [
            "\u{0}", "\u{1}", "\u{1F}", "\u{7F}", "\u{80}", "\u{85}", "\u{9F}", "\u{61C}", "\u{200E}", "\u{200F}",
            "\u{202A}", "\u{202B}", "\u{202C}", "\u{202D}", "\u{202E}", "\u{2066}", "\u{2067}", "\u{2068}", "\u{2069}",
        ]
        for scalar in refused {
            #expect(TextRule.hasForbiddenScalar("a\(scalar)b", lines: .single), "\(scalar.value)")
            #expect(TextRule.hasForbiddenScalar("a\(scalar)b", lines: .multiple), "\(scalar.value)")
        }
        for kept in ["Zoë Ångström", "Café", "東京", "🇦🇺", "👩‍👩‍👧", "a\u{200B}b", "a\u{A0}b", "x\u{200D}y", "Ma\u{200C}ryam"] {
            #expect(!TextRule.hasForbiddenScalar(kept, lines: .single), "\(kept)")
        }
    }

    @Test func onlyMultiLineTextKeepsLineBreaksAndTabs() {
        for line in ["a\nb", "a\tb", "a\r\nb", "a\u{2028}b", "a\u{2029}b", "a\rb"] {
            #expect(TextRule.hasForbiddenScalar(line, lines: .single), "\(Array(line.unicodeScalars))")
        }
        for kept in ["a\nb", "a\tb", "a\r\nb", "\n\n", "\r\n", "a\u{2028}b"] {
            #expect(!TextRule.hasForbiddenScalar(kept, lines: .multiple), "\(Array(kept.unicodeScalars))")
        }
        for lone in ["a\rb", "a\r", "\r", "\r\r\n", "a\u{B}b", "a\u{C}b"] {
            #expect(TextRule.hasForbiddenScalar(lone, lines: .multiple), "\(Array(lone.unicodeScalars))")
        }
        #expect(throws: ServiceError.invalid("text", "must not contain control or bidirectional formatting characters other than line breaks and tabs")) {
            try text.check("a\u{0}")
        }
        #expect(throws: ServiceError.invalid("name", "must be one line without control or bidirectional formatting characters")) {
            try name.check("a\nb")
        }
    }

    @Test func trimmingChecksTheBytesSentThenTheTrimmedValue() throws {
        #expect(try name.trimmed("  \n Ann Lee \t ") == "Ann Lee")
        #expect(try name.trimmed(" \n ") == "")
        #expect(throws: ServiceError.invalid("name", "must be at most 40 bytes")) { try name.trimmed(String(repeating: " ", count: 41) + "a") }
        #expect(throws: ServiceError.invalid("name", "must be one line without control or bidirectional formatting characters")) {
            try name.trimmed(" Ann\u{202E} ")
        }
    }
}
