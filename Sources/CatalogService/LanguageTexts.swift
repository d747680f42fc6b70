import Bus
import Contracts
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
            guard LanguagePreference.isTag(tag) else {
                throw .invalid(field, "'\(tag.prefix(40))' is not a language tag (such as en, ru or pt-BR)")
            }
            guard !PlaceRules.trimmed(text).isEmpty else { throw .invalid("\(field).\(tag)", "must not be empty") }
            try TextRule("\(field).\(tag)", maxCharacters: rule.maxCharacters, lines: rule.lines).check(text)
        }
    }

    /// The text of `texts` that `lang` prefers (`LanguagePreference.pick`), or else `own`, and
    /// the tag it came from (nil for `own`). Without a preference: `own`, no tag.
    static func localized(_ texts: [String: String]?, _ lang: LanguagePreference?, own: String?) -> (text: String?, tag: String?) {
        guard let lang, let (tag, text) = lang.pick(texts) else { return (own, nil) }
        return (text, tag)
    }
}

extension LocalizedPlace {
    /// `place` with its texts in `lang` (`LanguageTexts.localized`).
    init(_ place: Place, _ lang: LanguagePreference) {
        let name = LanguageTexts.localized(place.nameI18n, lang, own: place.name)
        let description = LanguageTexts.localized(place.descriptionI18n, lang, own: place.description)
        var localized = place
        localized.name = name.text ?? place.name
        localized.description = description.text
        self.init(place: localized, lang: TextLanguages(name: name.tag, description: description.tag))
    }
}

extension TourListItem {
    /// The item with its tour's texts in `lang` (unchanged without one).
    func localized(_ lang: LanguagePreference?) -> TourListItem {
        guard lang != nil else { return self }
        var item = self
        item.lang = TourRules.localize(&item.tour, lang)
        return item
    }
}
