import Bus
import Contracts
import Foundation
import ServiceKit

/// A failure to load the strings directory at start: what is wrong, and with which file.
public struct InterfaceStringsError: Error, CustomStringConvertible, Equatable {
    public let description: String
    init(_ file: String, _ message: String) { description = "\(file): \(message)" }
}

/// The apps' interface strings, read at start from a directory of `<tag>.json` files (the
/// repo's `i18n/`), each a flat JSON object of key to text; `en.json` has every key, the
/// others may lack some, and then fall back along the request's `lang` and to `en`.
/// `fallbacks.json` lists, per language, the keys that fall back on purpose (`"*"`: all of
/// them, as `en-AU`, which says only what Australians say differently); the completeness
/// test reads it (`missing`), the service does not need it to answer.
public struct InterfaceStrings: Sendable, Equatable {
    /// Bytes of one file, at most.
    static let maxFileBytes = 128 * 1024
    /// Keys of one file, at most.
    static let maxKeys = 2_000
    /// Language files, at most.
    static let maxFiles = 40
    /// Bytes of a key (`[a-z0-9_.]`, starting with a letter), at most.
    static let maxKeyBytes = 64
    /// Bytes of a text, at most.
    static let maxTextBytes = 2_000
    /// Bytes of the largest reply `strings.get` can give, at most: checked at load.
    static let maxReplyBytes = 1 << 20

    /// Texts by key, by language tag (as the file is named: `en`, `en-AU`).
    public let tables: [String: [String: String]]
    /// Keys that fall back on purpose, by language (`"*"` for all).
    public let fallbacks: [String: [String: String]]
    /// 16 hex digits, from the files' names and bytes: changes whenever a table does.
    public let version: String

    /// Reads `directory`; `InterfaceStringsError` naming the file when one is refused.
    public init(directory: String) throws {
        let url = URL(fileURLWithPath: directory, isDirectory: true)
        let names: [String]
        do {
            names = try FileManager.default.contentsOfDirectory(atPath: url.path).filter { $0.hasSuffix(".json") }.sorted()
        } catch {
            throw InterfaceStringsError(directory, "cannot be read as a directory of string files")
        }
        // Language files and fallbacks.json: a directory of more is refused before any is read.
        guard names.count <= Self.maxFiles + 1 else { throw InterfaceStringsError(directory, "has more than \(Self.maxFiles) language files") }
        var files: [String: Data] = [:]
        for name in names {
            let file = url.appendingPathComponent(name)
            let size = (try? FileManager.default.attributesOfItem(atPath: file.path)[.size] as? Int) ?? nil
            guard let size, size <= Self.maxFileBytes else { throw InterfaceStringsError(name, "is larger than \(Self.maxFileBytes) bytes") }
            guard let data = FileManager.default.contents(atPath: file.path) else { throw InterfaceStringsError(name, "cannot be read") }
            files[name] = data
        }
        try self.init(files: files)
    }

    /// Reads files by name (`en.json`, `fallbacks.json`, …) as `init(directory:)` does.
    public init(files: [String: Data]) throws {
        var tables: [String: [String: String]] = [:]
        var fallbackFile: Data?
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for (name, data) in files.sorted(by: { $0.key < $1.key }) {
            guard data.count <= Self.maxFileBytes else { throw InterfaceStringsError(name, "is larger than \(Self.maxFileBytes) bytes") }
            if name == "fallbacks.json" {
                fallbackFile = data
                continue
            }
            let tag = String(name.dropLast(".json".count))
            guard name.hasSuffix(".json"), LanguagePreference.isTag(tag), LanguagePreference.canonical(tag) == tag else {
                throw InterfaceStringsError(name, "is not named <language tag>.json (such as en.json, en-AU.json) nor fallbacks.json")
            }
            tables[tag] = try Self.table(data, file: name)
            // FNV-1a over each name and its bytes, in order of name.
            for byte in Array(name.utf8) + [0] + Array(data) + [0] { hash = (hash ^ UInt64(byte)) &* 0x100_0000_01b3 }
        }
        guard tables.count <= Self.maxFiles else { throw InterfaceStringsError("strings", "at most \(Self.maxFiles) language files") }
        guard let english = tables[LanguagePreference.fallback] else { throw InterfaceStringsError("en.json", "is missing: English has every key") }
        for (tag, table) in tables.sorted(by: { $0.key < $1.key }) {
            if let key = table.keys.sorted().first(where: { english[$0] == nil }) {
                throw InterfaceStringsError("\(tag).json", "has key '\(key)', which en.json lacks")
            }
        }
        var fallbacks: [String: [String: String]] = [:]
        if let fallbackFile {
            guard let members = JSONSpan.members(of: fallbackFile), (try? StrictJSON.check(fallbackFile)) != nil else {
                throw InterfaceStringsError("fallbacks.json", "must be a JSON object of language to {key: reason}")
            }
            for (tag, range) in members {
                guard let keys = PlaceJSON.strings(at: range, in: fallbackFile) else {
                    throw InterfaceStringsError("fallbacks.json", "\(tag.prefix(40)) must be an object of key to the reason it falls back")
                }
                guard tables[tag] != nil, tag != LanguagePreference.fallback else {
                    throw InterfaceStringsError("fallbacks.json", "'\(tag.prefix(40))' is not a language file other than en")
                }
                if let key = keys.keys.sorted().first(where: { $0 != "*" && english[$0] == nil }) {
                    throw InterfaceStringsError("fallbacks.json", "\(tag) lists '\(key.prefix(80))', which en.json lacks")
                }
                fallbacks[tag] = keys
            }
        }
        self.tables = tables
        self.fallbacks = fallbacks
        version = String(hash, radix: 16).leftPadded(to: 16)
        // The largest reply: every key with the longest text any file has for it, from the longest tag.
        let longestTag = tables.keys.max { $0.utf8.count < $1.utf8.count } ?? LanguagePreference.fallback
        var strings: [String: String] = [:]
        for key in english.keys {
            strings[key] = tables.values.compactMap { $0[key] }.max { $0.utf8.count < $1.utf8.count }
        }
        let worst = try JSONCoding.encoder.encode(
            StringsReply(
                version: version, lang: longestTag, strings: strings,
                from: strings.mapValues { _ in longestTag })
        ).count
        guard worst <= Self.maxReplyBytes else {
            throw InterfaceStringsError("strings", "a reply could reach \(worst) bytes, more than \(Self.maxReplyBytes)")
        }
    }

    /// A flat JSON object of key to text, every key once, each by the rules above.
    private static func table(_ data: Data, file: String) throws -> [String: String] {
        do {
            try StrictJSON.check(data, maxDepth: 2)
        } catch {
            throw InterfaceStringsError(file, "is not JSON: \(error.message)")
        }
        guard let members = JSONSpan.members(of: data) else { throw InterfaceStringsError(file, "must be one JSON object of key to text") }
        guard members.count <= maxKeys else { throw InterfaceStringsError(file, "has more than \(maxKeys) keys") }
        var table: [String: String] = [:]
        for (key, range) in members {
            guard isKey(key) else {
                throw InterfaceStringsError(file, "'\(key.prefix(80))' is not a key: 1 to \(maxKeyBytes) of a-z 0-9 _ . starting with a letter")
            }
            guard table[key] == nil else { throw InterfaceStringsError(file, "has key '\(key)' twice") }
            guard let text = JSONSpan.string(at: range, in: data) else { throw InterfaceStringsError(file, "\(key) must be a string") }
            guard text.utf8.count <= maxTextBytes else { throw InterfaceStringsError(file, "\(key) is longer than \(maxTextBytes) bytes") }
            table[key] = text
        }
        return table
    }

    static func isKey(_ key: String) -> Bool {
        let bytes = Array(key.utf8)
        guard (1...maxKeyBytes).contains(bytes.count), let first = bytes.first, (0x61...0x7A).contains(first) else { return false }
        return bytes.allSatisfy { (0x61...0x7A).contains($0) || (0x30...0x39).contains($0) || $0 == UInt8(ascii: "_") || $0 == UInt8(ascii: ".") }
    }

    /// Keys of `en` that a language file lacks without `fallbacks.json` listing them (or `"*"`),
    /// by language: empty when every file is complete or falls back on purpose.
    public func missing() -> [String: [String]] {
        guard let english = tables[LanguagePreference.fallback] else { return [:] }
        var missing: [String: [String]] = [:]
        for (tag, table) in tables where tag != LanguagePreference.fallback {
            let listed = fallbacks[tag] ?? [:]
            guard listed["*"] == nil else { continue }
            let lacking = english.keys.filter { table[$0] == nil && listed[$0] == nil }.sorted()
            if !lacking.isEmpty { missing[tag] = lacking }
        }
        return missing
    }

    /// `strings.get`: every key in the first language of `lang`'s chain that has a file (the
    /// reply's `lang`), each text from the first language of the chain that has it.
    func reply(_ request: StringsGet) throws(ServiceError) -> StringsReply {
        guard let text = request.lang else { throw .invalid("lang", "required: a language tag or Accept-Language list (such as ru-RU)") }
        let lang = try LanguagePreference(text)
        if let since = request.sinceVersion {
            guard since.utf8.count == 16, since.utf8.allSatisfy({ (0x30...0x39).contains($0) || (0x61...0x66).contains($0) }) else {
                throw .invalid("since_version", "must be a version from strings.get (16 hex digits)")
            }
        }
        let available = lang.chain.compactMap { tag in tables.keys.first { $0.lowercased() == tag.lowercased() } }
        let chosen = available.first ?? LanguagePreference.fallback
        if request.sinceVersion == version { return StringsReply(version: version, lang: chosen, unchanged: true) }
        var strings: [String: String] = [:]
        var from: [String: String] = [:]
        for key in (tables[LanguagePreference.fallback] ?? [:]).keys {
            for tag in available {
                if let text = tables[tag]?[key] {
                    strings[key] = text
                    from[key] = tag
                    break
                }
            }
        }
        return StringsReply(version: version, lang: chosen, strings: strings, from: from)
    }
}

extension String {
    /// The string with zeros before it up to `width` characters.
    fileprivate func leftPadded(to width: Int) -> String { String(repeating: "0", count: max(0, width - count)) + self }
}
