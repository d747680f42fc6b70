import Foundation

/// Command-line style arguments as a params object: `key value` pairs (numbers, booleans,
/// null and JSON objects or arrays recognised) or a single JSON object. RESP commands and
/// `tourbus call` both read their arguments this way.
public enum CommandArguments {
    /// The params object as JSON, or `invalid_argument`. JSON words are checked strictly and
    /// nested at most `maxDepth` deep before anything parses them.
    public static func params(_ words: [[UInt8]], maxDepth: Int = StrictJSON.defaultMaxDepth) -> Result<Data, ServiceError> {
        if words.isEmpty { return .success(Data("{}".utf8)) }
        if words.count == 1 {
            let data = Data(words[0])
            do {
                // The object is the params themselves: one level less deep than a value in it.
                try StrictJSON.check(data, maxDepth: maxDepth + 1)
            } catch let error where error.reason == .tooDeep(limit: maxDepth + 1) {
                return .failure(ServiceError(.invalidArgument, error.message))
            } catch {
                return .failure(ServiceError(.invalidArgument, "arguments are key value pairs or one JSON object"))
            }
            guard let object = try? JSONSerialization.jsonObject(with: data), object is [String: Any] else {
                return .failure(ServiceError(.invalidArgument, "arguments are key value pairs or one JSON object"))
            }
            return .success(data)
        }
        guard words.count % 2 == 0 else {
            return .failure(ServiceError(.invalidArgument, "arguments are key value pairs; '\(Echo.clip(String(decoding: words[words.count - 1], as: UTF8.self)))' has no value"))
        }
        var object: [String: Any] = [:]
        for i in stride(from: 0, to: words.count, by: 2) {
            let key = String(decoding: words[i], as: UTF8.self)
            switch value(words[i + 1], maxDepth: maxDepth) {
            case .success(let value): object[key] = value
            case .failure(let error): return .failure(ServiceError(.invalidArgument, error.message, field: Echo.clip(key)))
            }
        }
        guard let data = try? JSONSerialization.data(withJSONObject: object, options: [.withoutEscapingSlashes]) else {
            return .failure(ServiceError(.invalidArgument, "arguments do not form a JSON object"))
        }
        return .success(data)
    }

    /// A word as a JSON value: number, boolean, null, object or array when it reads as one,
    /// else a string; a word that starts like JSON but nests deeper than `maxDepth` is refused.
    static func value(_ bytes: [UInt8], maxDepth: Int) -> Result<Any, JSONSyntaxError> {
        let word = String(decoding: bytes, as: UTF8.self)
        switch word {
        case "true": return .success(true)
        case "false": return .success(false)
        case "null": return .success(NSNull())
        default: break
        }
        // Numbers as JSON writes them (so "+61…" and "0x1A" stay strings).
        if let kind = jsonNumber(bytes) {
            if kind == .integer, let int = Int(word) { return .success(int) }
            if let double = Double(word), double.isFinite { return .success(double) }
        }
        // A JSON object, array or string literal ("\"2046\"" forces a string).
        if let first = bytes.first, first == UInt8(ascii: "{") || first == UInt8(ascii: "[") || first == UInt8(ascii: "\"") {
            do {
                try StrictJSON.check(bytes, maxDepth: maxDepth)
                if let json = try? JSONSerialization.jsonObject(with: Data(bytes), options: [.fragmentsAllowed]) { return .success(json) }
            } catch let error where error.reason == .tooDeep(limit: maxDepth) {
                return .failure(error)
            } catch {
                // Not JSON: the word is a string.
            }
        }
        return .success(word)
    }
}

extension CommandArguments {
    /// The kinds of number JSON writes.
    enum NumberKind { case integer, fraction }

    /// Whether `bytes` is a number as JSON writes it (`-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?`),
    /// and which kind: one pass over the bytes, whatever their length.
    static func jsonNumber(_ bytes: [UInt8]) -> NumberKind? {
        var i = 0
        func digits() -> Int {
            let start = i
            while i < bytes.count, (0x30...0x39).contains(bytes[i]) { i += 1 }
            return i - start
        }
        if i < bytes.count, bytes[i] == UInt8(ascii: "-") { i += 1 }
        let integerStart = i
        guard digits() > 0, bytes[integerStart] != UInt8(ascii: "0") || i == integerStart + 1 else { return nil }
        var kind = NumberKind.integer
        if i < bytes.count, bytes[i] == UInt8(ascii: ".") {
            i += 1
            guard digits() > 0 else { return nil }
            kind = .fraction
        }
        if i < bytes.count, bytes[i] == UInt8(ascii: "e") || bytes[i] == UInt8(ascii: "E") {
            i += 1
            if i < bytes.count, bytes[i] == UInt8(ascii: "+") || bytes[i] == UInt8(ascii: "-") { i += 1 }
            guard digits() > 0 else { return nil }
            kind = .fraction
        }
        return i == bytes.count ? kind : nil
    }
}

/// Cuts client-sent text that an error message repeats, so a reply never carries back more
/// than a little of what was sent.
public enum Echo {
    /// The text cut to at most `maxBytes` UTF-8 bytes (on a character boundary), `…` marking a cut.
    public static func clip(_ text: some StringProtocol, maxBytes: Int = 100) -> String {
        guard text.utf8.count > maxBytes else { return String(text) }
        var out = ""
        var used = 0
        for scalar in text.unicodeScalars {
            let size = String(scalar).utf8.count
            guard used + size <= maxBytes else { break }
            out.unicodeScalars.append(scalar)
            used += size
        }
        return out + "…"
    }
}
