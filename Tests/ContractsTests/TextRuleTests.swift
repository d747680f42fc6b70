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

    /// Every character that shows nothing by itself is invisible, wherever Unicode puts it
    /// (those an attack found getting through the first list among them); the bidirectional
    /// formatting characters are not (they are refused, not trimmed), nor is anything that shows.
    @Test func invisibleCharactersAreUnicodesIgnorablesAndFormatCharacters() throws {
        let invisible: [UInt32] = [
            0x00AD, 0x034F, 0x115F, 0x1160, 0x17B4, 0x180E, 0x200B, 0x200C, 0x200D, 0x2060, 0x2064, 0x3164, 0xFE0F, 0xFEFF, 0xFFA0,
            0xFFF9, 0xFFFB, 0x13430, 0x1343F, 0x1BCA0, 0x1D173, 0x2800, 0xE0001, 0xE0020, 0xE007F, 0xE0100, 0xE01EF, 0xE0FFF,
        ]
        for value in invisible {
            let scalar = try #require(Unicode.Scalar(value))
            #expect(TextRule.isInvisible(scalar), "U+\(String(value, radix: 16))")
            let name = TextRule("name", maxCharacters: 100)
            #expect(try name.trimmed(" \(Character(scalar))\(Character(scalar)) ") == "", "U+\(String(value, radix: 16))")
            #expect(try name.trimmed("\(Character(scalar))Ann\(Character(scalar))") == "Ann", "U+\(String(value, radix: 16))")
        }
        for value: UInt32 in [0x41, 0xE9, 0x301, 0x1F600, 0x4E2D, 0x061C, 0x200E, 0x202E, 0x2066] {
            #expect(!TextRule.isInvisible(try #require(Unicode.Scalar(value))), "U+\(String(value, radix: 16))")
        }
        // A joiner inside an emoji sequence stays.
        #expect(try TextRule("name", maxCharacters: 100).trimmed(" 👨\u{200D}👩\u{200D}👧 ") == "👨\u{200D}👩\u{200D}👧")
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
