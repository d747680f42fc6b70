import Bus
import ServiceKit

/// Texts by language (`name_i18n`, `description_i18n` of places and tours): the rules of their
/// tags and texts, the name chosen from them, and the text of a requested language.
enum LanguageTexts {
    /// At most this many languages per field.
    static let maxLanguages = 50

    /// The `name` of a place or tour: as given (trimmed), or else its English name, or else the
    /// name of the first language in alphabetical order (a JSON object's members have no order
    /// that decoding keeps; an import passes the file's first name as `given`).
    /// `invalid_argument` when it has none.
    static func name(_ given: String?, _ names: [String: String]?) throws(ServiceError) -> String {
        if let given { return PlaceRules.trimmed(given) }
        guard let names, let chosen = names["en"] ?? names.min(by: { $0.key < $1.key })?.value else {
            throw .invalid("name", "give name or name_i18n")
        }
        return PlaceRules.trimmed(chosen)
    }

    /// At most `maxLanguages` texts, each tag a language tag, each text not blank and by `rule`.
    static func check(_ texts: [String: String]?, field: String, rule: TextRule) throws(ServiceError) {
        guard let texts else { return }
        guard texts.count <= maxLanguages else { throw .invalid(field, "at most \(maxLanguages) languages") }
        for (tag, text) in texts.sorted(by: { $0.key < $1.key }) {
            guard isTag(tag) else {
                throw .invalid(field, "'\(tag.prefix(40))' is not a language tag (such as en, ru or pt-BR)")
            }
            guard !PlaceRules.trimmed(text).isEmpty else { throw .invalid("\(field).\(tag)", "must not be empty") }
            try TextRule("\(field).\(tag)", maxCharacters: rule.maxCharacters, lines: rule.lines).check(text)
        }
    }

    /// A BCP 47 tag as we take them: a primary language of 2 or 3 lower-case letters, then
    /// subtags of 1 to 8 ASCII letters or digits after `-` (`en`, `pt-BR`, `zh-Hant-TW`), 35 bytes at most.
    static func isTag(_ tag: String) -> Bool {
        guard tag.utf8.count <= 35 else { return false }
        let parts = tag.utf8.split(separator: UInt8(ascii: "-"), omittingEmptySubsequences: false)
        guard let primary = parts.first, (2...3).contains(primary.count), primary.allSatisfy({ (0x61...0x7A).contains($0) }) else { return false }
        return parts.dropFirst().allSatisfy { part in
            (1...8).contains(part.count) && part.allSatisfy { (0x30...0x39).contains($0) || (0x41...0x5A).contains($0) || (0x61...0x7A).contains($0) }
        }
    }

    /// A language a request asks for (`lang`): a language tag in any case, as BCP 47 allows,
    /// its primary language lower-cased; nil when absent, `invalid_argument` when not a tag.
    static func requested(_ lang: String?) throws(ServiceError) -> String? {
        guard let lang else { return nil }
        var parts = lang.split(separator: "-", omittingEmptySubsequences: false).map(String.init)
        if let primary = parts.first, primary.utf8.count <= 3 { parts[0] = primary.lowercased() }
        let tag = parts.joined(separator: "-")
        guard isTag(tag) else { throw .invalid("lang", "not a language tag (such as en, ru or pt-BR)") }
        return tag
    }

    /// The text of `lang` among `texts` (tags compared without case), or of its primary
    /// language (`pt` for `pt-BR`), or nil.
    static func localized(_ texts: [String: String]?, _ lang: String?) -> String? {
        guard let texts, let lang else { return nil }
        func text(_ tag: String) -> String? {
            texts[tag] ?? texts.first { $0.key.caseInsensitiveCompare(tag) == .orderedSame }?.value
        }
        if let found = text(lang) { return found }
        guard let primary = lang.split(separator: "-").first, primary.count < lang.count else { return nil }
        return text(String(primary))
    }
}
