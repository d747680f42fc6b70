import Bus

/// Which language a reply's localized texts came from, when the request gave `lang`: the tag
/// of `name_i18n` (`description_i18n`) that `name` (`description`) was taken from. A member
/// is absent when that text is the place's or tour's own `name` (`description`), because it
/// has none in the languages asked for nor in `en`. The catalog writes it on places, tours and
/// tour stops, search on hits and suggestions (Protocols/catalog.md, "Languages").
public struct TextLanguages: Codable, Sendable, Equatable {
    public var name: String?
    public var description: String?

    public init(name: String? = nil, description: String? = nil) {
        self.name = name
        self.description = description
    }
}
