import Contracts
import Foundation
import Geo

extension AnnotationForm {
    /// The longest language tag a client may ask for (BCP 47 asks implementations to take
    /// 35 characters); a longer one gets English.
    public static let maxRequestedLanguageBytes = 35

    /// The form as a client at `position` reading `language` gets it.
    ///
    /// Labels: the tag asked for (case ignored), then that tag with its last `-` subtag cut,
    /// repeatedly (`fr-CA`, then `fr`), then English. A tag longer than
    /// `maxRequestedLanguageBytes` gets English. A malformed tag matches nothing the form has
    /// (its tags are letters and `-`), but its well-formed head does (`fr-C_A` gets `fr`).
    ///
    /// With a position: only choices whose region contains it, and in a dependent field only
    /// choices whose parent value is itself shown. A field left with no choice is left out
    /// (it is not required there, see `validate`). Without a position, every choice.
    public func view(at position: Coordinate?, language: String?) -> FormView {
        let languages = Self.languageFallbacks(language)
        func label(_ labels: [String: String]) -> String {
            languages.lazy.compactMap { labels[$0] }.first ?? ""
        }
        var shownValues: [String: Set<String>] = [:]
        var shownFields: [FormView.Field] = []
        for field in fields {
            let choices = field.choices.filter { choice in
                guard let position else { return true }
                guard choice.isAvailable(at: position) else { return false }
                guard let parentName = field.dependsOn, let parent = choice.parent else { return true }
                return shownValues[parentName]?.contains(parent) ?? false
            }
            guard !choices.isEmpty else { continue }
            shownValues[field.name] = Set(choices.map(\.value))
            shownFields.append(
                FormView.Field(
                    name: field.name, label: label(field.labels), required: field.required, dependsOn: field.dependsOn,
                    choices: choices.map { FormView.Choice(value: $0.value, label: label($0.labels), parent: $0.parent, region: $0.region) }))
        }
        return FormView(version: version, fields: shownFields)
    }

    /// The lower-case tags to look labels up by, most specific first, English last.
    static func languageFallbacks(_ requested: String?) -> [String] {
        guard let requested, (1...maxRequestedLanguageBytes).contains(requested.utf8.count) else { return ["en"] }
        var chain: [String] = []
        var tag = Substring(requested.lowercased())
        while !tag.isEmpty {  // at most one turn per byte of a tag of 35 bytes
            chain.append(String(tag))
            guard let dash = tag.lastIndex(of: "-") else { break }
            tag = tag[..<dash]
        }
        chain.append("en")
        return chain
    }
}
