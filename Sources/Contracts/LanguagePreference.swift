import Bus

/// A request's `lang`: one BCP 47 language tag (`ru-RU`) or an HTTP Accept-Language list
/// (`ru-RU,ru;q=0.9,en;q=0.8`), read into the languages to try, best first. The catalog's
/// strings, its places and tours, and search's hits all negotiate with it, so one `lang`
/// falls back the same way everywhere.
///
/// The list's entries are ordered by q-value (1 when absent; ties keep their order), entries
/// with `q=0` and the wildcard `*` are dropped (`*` accepts any language, and the fallback
/// below is one). Each entry is followed by its shorter forms (`zh-Hant-TW`, `zh-Hant`, `zh`),
/// duplicates are dropped, and `en` closes the chain: `ru-RU` tries `ru-RU`, `ru`, `en`.
public struct LanguagePreference: Sendable, Equatable {
    /// UTF-8 bytes of `lang`, at most.
    public static let maxBytes = 256
    /// Entries of an Accept-Language list, at most.
    public static let maxEntries = 16
    /// The language every chain ends with.
    public static let fallback = "en"

    /// The tags to try, best first, in their conventional case (`ru-RU`, `zh-Hant`), ending with `en`.
    public let chain: [String]

    /// Reads `text` as a tag or an Accept-Language list; `invalid_argument` on `field` when it is neither.
    public init(_ text: String, field: String = "lang") throws(ServiceError) {
        guard text.utf8.count <= Self.maxBytes else { throw .invalid(field, "must be at most \(Self.maxBytes) bytes") }
        let entries = text.split(separator: ",", omittingEmptySubsequences: false)
        guard entries.count <= Self.maxEntries else { throw .invalid(field, "at most \(Self.maxEntries) languages") }
        var ranked: [(tag: String, q: Int)] = []
        for entry in entries {
            let parts = entry.split(separator: ";", omittingEmptySubsequences: false).map { Self.trimmed($0) }
            guard parts.count <= 2, let range = parts.first, range == "*" || Self.isTag(range, anyCase: true) else {
                throw .invalid(field, "not a language tag or Accept-Language list (such as ru-RU or ru-RU,ru;q=0.9,en;q=0.8)")
            }
            var q = 1000
            if parts.count == 2 {
                guard let weight = Self.qValue(parts[1]) else {
                    throw .invalid(field, "'\(parts[1].prefix(20))' is not a q-value (q=0 to q=1, at most 3 decimals)")
                }
                q = weight
            }
            if range != "*", q > 0 { ranked.append((Self.canonical(range), q)) }
        }
        var chain: [String] = []
        var seen = Set<String>()
        // A stable sort: equal q-values keep the list's order.
        for (tag, _) in ranked.enumerated().sorted(by: { ($0.element.q, -$0.offset) > ($1.element.q, -$1.offset) }).map(\.element) {
            var subtags = tag.split(separator: "-").map(String.init)
            while !subtags.isEmpty {
                let form = subtags.joined(separator: "-")
                if seen.insert(form.lowercased()).inserted { chain.append(form) }
                subtags.removeLast()
            }
        }
        if seen.insert(Self.fallback).inserted { chain.append(Self.fallback) }
        self.chain = chain
    }

    /// The preference `lang` states, or nil when absent.
    public static func read(_ lang: String?, field: String = "lang") throws(ServiceError) -> LanguagePreference? {
        guard let lang else { return nil }
        return try LanguagePreference(lang, field: field)
    }

    /// The first tag of the chain that `texts` has (keys compared without case), with its text:
    /// the tag as `texts` spells it. Nil when it has none of them (not even `en`).
    public func pick<Value>(_ texts: [String: Value]?) -> (tag: String, value: Value)? {
        guard let texts, !texts.isEmpty else { return nil }
        for tag in chain { if let value = texts[tag] { return (tag, value) } }
        var byLowered: [String: (String, Value)] = [:]
        for (key, value) in texts where byLowered[key.lowercased()] == nil { byLowered[key.lowercased()] = (key, value) }
        for tag in chain { if let (key, value) = byLowered[tag.lowercased()] { return (key, value) } }
        return nil
    }

    /// A well-formed tag as we take them: a primary language of 2 or 3 letters (lower-case
    /// unless `anyCase`), then subtags of 1 to 8 ASCII letters or digits after `-` (`en`,
    /// `pt-BR`, `zh-Hant-TW`), 35 bytes at most.
    public static func isTag<Text: StringProtocol>(_ tag: Text, anyCase: Bool = false) -> Bool {
        guard tag.utf8.count <= 35 else { return false }
        func lower(_ b: UInt8) -> Bool { (0x61...0x7A).contains(b) }
        func upper(_ b: UInt8) -> Bool { (0x41...0x5A).contains(b) }
        func digit(_ b: UInt8) -> Bool { (0x30...0x39).contains(b) }
        let parts = tag.utf8.split(separator: UInt8(ascii: "-"), omittingEmptySubsequences: false)
        guard let primary = parts.first, (2...3).contains(primary.count),
            primary.allSatisfy({ lower($0) || (anyCase && upper($0)) })
        else { return false }
        return parts.dropFirst().allSatisfy { part in (1...8).contains(part.count) && part.allSatisfy { lower($0) || upper($0) || digit($0) } }
    }

    /// A tag in BCP 47's conventional case: the language lower-case, a 4-letter script
    /// title-case, a 2-letter region upper-case, the rest lower-case (`EN-au` is `en-AU`).
    public static func canonical<Text: StringProtocol>(_ tag: Text) -> String {
        tag.split(separator: "-").enumerated().map { index, part in
            let lowered = part.lowercased()
            guard index > 0 else { return lowered }
            if part.count == 2, part.allSatisfy(\.isLetter) { return lowered.uppercased() }
            if part.count == 4, part.allSatisfy(\.isLetter) { return lowered.prefix(1).uppercased() + lowered.dropFirst() }
            return lowered
        }.joined(separator: "-")
    }

    /// `q=W` (case of `q` ignored) as thousandths, or nil: W is `0` or `1`, or either with a
    /// point and at most 3 digits, at most 1.
    private static func qValue(_ parameter: String) -> Int? {
        let bytes = Array(parameter.utf8)
        guard bytes.count >= 3, bytes[0] | 0x20 == UInt8(ascii: "q"), bytes[1] == UInt8(ascii: "=") else { return nil }
        let value = bytes[2...]
        guard let whole = value.first, whole == UInt8(ascii: "0") || whole == UInt8(ascii: "1") else { return nil }
        var thousandths = Int(whole - 0x30) * 1000
        let rest = value.dropFirst()
        if !rest.isEmpty {
            let digits = rest.dropFirst()
            guard rest.first == UInt8(ascii: "."), digits.count <= 3, digits.allSatisfy({ (0x30...0x39).contains($0) }) else { return nil }
            for (i, d) in digits.enumerated() { thousandths += Int(d - 0x30) * [100, 10, 1][i] }
        }
        return thousandths <= 1000 ? thousandths : nil
    }

    /// An entry or parameter without the spaces and tabs around it (HTTP's optional white space).
    private static func trimmed(_ text: Substring) -> String {
        var slice = text[...]
        while let first = slice.first, first == " " || first == "\t" { slice = slice.dropFirst() }
        while let last = slice.last, last == " " || last == "\t" { slice = slice.dropLast() }
        return String(slice)
    }
}
