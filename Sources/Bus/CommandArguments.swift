import Foundation

/// Command-line style arguments as a params object: `key value` pairs (numbers, booleans,
/// null and JSON objects or arrays recognised) or a single JSON object. A dotted key gives a
/// member of a nested object (`near.lat -33.86 near.lon 151.21` is `{"near":{"lat":-33.86,
/// "lon":151.21}}`). RESP commands and `tourbus call` both read their arguments this way.
public enum CommandArguments {
    /// The params object as JSON, or `invalid_argument`. JSON words are checked strictly and
    /// nested at most `maxDepth` deep, then passed on as written: nothing is parsed and
    /// written again, so the cost is one pass over the bytes whatever they hold.
    public static func params(_ words: [[UInt8]], maxDepth: Int = StrictJSON.defaultMaxDepth) -> Result<Data, ServiceError> {
        if words.isEmpty { return .success(Data("{}".utf8)) }
        if words.count == 1 {
            do {
                // The object is the params themselves: one level less deep than a value in it.
                try StrictJSON.check(words[0], maxDepth: maxDepth + 1, uniqueKeys: true)
            } catch let error where error.reason == .tooDeep(limit: maxDepth + 1) || error.reason == .duplicateKey {
                return .failure(ServiceError(.invalidArgument, error.message))
            } catch {
                return .failure(ServiceError(.invalidArgument, "arguments are key value pairs or one JSON object"))
            }
            guard words[0].first(where: { $0 != 0x20 && $0 != 0x09 && $0 != 0x0A && $0 != 0x0D }) == UInt8(ascii: "{") else {
                return .failure(ServiceError(.invalidArgument, "arguments are key value pairs or one JSON object"))
            }
            return .success(Data(words[0]))
        }
        guard words.count % 2 == 0 else {
            return .failure(ServiceError(.invalidArgument, "arguments are key value pairs; '\(Echo.clip(String(decoding: words[words.count - 1], as: UTF8.self)))' has no value"))
        }
        let pairs = words.count / 2
        // Keys as they will be written (bytes that are not UTF-8 repaired), so two that are
        // written alike are one key.
        let keys = (0..<pairs).map { pair in
            let word = words[2 * pair]
            return word.allSatisfy { $0 < 0x80 } ? word : Array(String(decoding: word, as: UTF8.self).utf8)
        }
        // A key given twice is refused, as a JSON object with a key twice is (I-JSON, RFC 7493):
        // keys compare as Swift strings do, so canonically equivalent ones (é and e + U+0301,
        // K and the Kelvin sign) are one key, as they are in the dictionaries that read them.
        var seen = Set<String>()
        for pair in 0..<pairs where !seen.insert(String(decoding: keys[pair], as: UTF8.self)).inserted {
            return .failure(ServiceError(.invalidArgument, "is given twice", field: Echo.clip(String(decoding: keys[pair], as: UTF8.self))))
        }
        var object: [UInt8] = []
        object.reserveCapacity(words.reduce(16) { $0 + $1.count + 4 })
        // A field as an error names it: the key as given, cut.
        func field(_ pair: Int) -> String { Echo.clip(String(decoding: keys[pair], as: UTF8.self)) }
        guard keys.contains(where: { $0.isEmpty || $0.contains(UInt8(ascii: ".")) }) else {
            // No dotted (or empty) key: the members in order, written as they come.
            object.append(UInt8(ascii: "{"))
            for pair in 0..<pairs {
                switch value(words[2 * pair + 1], maxDepth: maxDepth) {
                case .success(let value):
                    if object.count > 1 { object.append(UInt8(ascii: ",")) }
                    appendString(keys[pair], to: &object)
                    object.append(UInt8(ascii: ":"))
                    object += value
                case .failure(let error):
                    return .failure(ServiceError(.invalidArgument, error.message, field: field(pair)))
                }
            }
            object.append(UInt8(ascii: "}"))
            return .success(Data(object))
        }
        var members: [Member] = []
        members.reserveCapacity(pairs)
        for pair in 0..<pairs {
            let key = keys[pair]
            // A closure, not `\.isEmpty`: a key path here cost more than the rest of the pair.
            var levels = 1
            var empty = key.isEmpty || key[0] == UInt8(ascii: ".") || key[key.count - 1] == UInt8(ascii: ".")
            for at in key.indices where key[at] == UInt8(ascii: ".") {
                levels += 1
                if at > 0 && key[at - 1] == UInt8(ascii: ".") { empty = true }
            }
            guard !empty else {
                return .failure(ServiceError(.invalidArgument, "a dotted key names members by non-empty names (near.lat)", field: field(pair)))
            }
            guard levels <= maxDepth else {
                return .failure(ServiceError(.invalidArgument, "nests deeper than \(maxDepth) levels", field: field(pair)))
            }
            // A value inside nested objects has that many levels fewer to nest in itself.
            switch value(words[2 * pair + 1], maxDepth: maxDepth - (levels - 1)) {
            case .success(let value): members.append(Member(key: key, from: 0, value: value, pair: pair))
            case .failure(let error): return .failure(ServiceError(.invalidArgument, error.message, field: field(pair)))
            }
        }
        if let clash = write(members, to: &object) {
            let (whole, part) = clash
            return .failure(ServiceError(.invalidArgument, "is given whole and by its members too (\(field(part)))", field: field(whole)))
        }
        return .success(Data(object))
    }

    /// One `key value` pair: its key (whose names from `from` on are still to be written: one,
    /// or a dotted key's), the value's JSON, and which pair it was (for an error's field).
    private struct Member {
        var key: [UInt8]
        var from: Int
        var value: [UInt8]
        var pair: Int

        /// Where the first name still to be written ends: at a dot, or the key's end (then the
        /// name is the last, and the value is written under it).
        var nameEnd: Int { key[from...].firstIndex(of: UInt8(ascii: ".")) ?? key.count }
    }

    /// Writes `members` as one object, in the order their first names came; members whose
    /// paths share a first name make one nested object, which no plain value may also give.
    /// Answers the pairs that clash (the whole value's and a member's), or nil once written.
    private static func write(_ members: [Member], to out: inout [UInt8]) -> (whole: Int, part: Int)? {
        // The groups by first name, in first-seen order, each a chain of its members (its first,
        // then each one's next), so writing is one pass however many there are. A few members
        // are grouped by a scan, many through a dictionary. The chains live in one temporary
        // buffer (on the stack when small): first[g], last[g], next[m] and each name's end.
        let count = members.count
        return withUnsafeTemporaryAllocation(of: Int.self, capacity: 4 * count) { buffer -> (whole: Int, part: Int)? in
            let (first, last, next, ends) = (0, count, 2 * count, 3 * count)
            func name(_ member: Int) -> ArraySlice<UInt8> { members[member].key[members[member].from..<buffer[ends + member]] }
            var groups = 0
            var index: [ArraySlice<UInt8>: Int] = [:]
            for at in 0..<count {
                buffer[ends + at] = members[at].nameEnd
                buffer[next + at] = -1
                let group = count <= 16 ? (0..<groups).first { name(buffer[first + $0]) == name(at) } : index[name(at)]
                if let group {
                    buffer[next + buffer[last + group]] = at
                    buffer[last + group] = at
                } else {
                    if count > 16 { index[name(at)] = groups }
                    buffer[first + groups] = at
                    buffer[last + groups] = at
                    groups += 1
                }
            }
            out.append(UInt8(ascii: "{"))
            for group in 0..<groups {
                if group > 0 { out.append(UInt8(ascii: ",")) }
                let head = buffer[first + group]
                appendString(name(head), to: &out)
                out.append(UInt8(ascii: ":"))
                if head == buffer[last + group] && buffer[ends + head] == members[head].key.count {
                    out += members[head].value
                    continue
                }
                var inner: [Member] = []
                var whole: Int?
                var part: Int?
                var at = head
                while at >= 0 {
                    if buffer[ends + at] == members[at].key.count {
                        whole = whole ?? members[at].pair
                    } else {
                        part = part ?? members[at].pair
                        inner.append(Member(key: members[at].key, from: buffer[ends + at] + 1, value: members[at].value, pair: members[at].pair))
                    }
                    at = buffer[next + at]
                }
                if let whole, let part { return (whole, part) }
                if let clash = write(inner, to: &out) { return clash }
            }
            out.append(UInt8(ascii: "}"))
            return nil
        }
    }

    /// A word as JSON text: a number, boolean, null, object, array or string literal when it
    /// reads as one (as written), else the word as a JSON string; a word that starts like
    /// JSON but nests deeper than `maxDepth` is refused.
    static func value(_ bytes: [UInt8], maxDepth: Int) -> Result<[UInt8], JSONSyntaxError> {
        if bytes.elementsEqual("true".utf8) || bytes.elementsEqual("false".utf8) || bytes.elementsEqual("null".utf8) { return .success(bytes) }
        // Numbers as JSON writes them (so "+61…" and "0x1A" stay strings), if they are finite:
        // without an exponent, a number of fewer than 300 digits is.
        if let kind = jsonNumber(bytes),
            kind == .integer || (bytes.count < 300 && !bytes.contains { $0 | 0x20 == UInt8(ascii: "e") })
                || Double(String(decoding: bytes, as: UTF8.self))?.isFinite == true
        {
            return .success(bytes)
        }
        // A JSON object, array or string literal ("\"2046\"" forces a string).
        if let first = bytes.first, first == UInt8(ascii: "{") || first == UInt8(ascii: "[") || first == UInt8(ascii: "\"") {
            do {
                try StrictJSON.check(bytes, maxDepth: maxDepth, uniqueKeys: true)
                return .success(bytes)
            } catch let error where error.reason == .tooDeep(limit: maxDepth) || error.reason == .duplicateKey {
                return .failure(error)
            } catch {
                // Not JSON: the word is a string.
            }
        }
        var string: [UInt8] = []
        appendString(bytes, to: &string)
        return .success(string)
    }

    /// Appends `bytes` as a JSON string literal; bytes that are not UTF-8 become U+FFFD.
    static func appendString(_ bytes: some Collection<UInt8>, to out: inout [UInt8]) {
        guard bytes.allSatisfy({ $0 < 0x80 }) else {
            appendEscaped(String(decoding: bytes, as: UTF8.self).utf8, to: &out)
            return
        }
        appendEscaped(bytes, to: &out)
    }

    private static func appendEscaped(_ text: some Sequence<UInt8>, to out: inout [UInt8]) {
        out.append(UInt8(ascii: "\""))
        for byte in text {
            switch byte {
            case UInt8(ascii: "\""): out += [UInt8(ascii: "\\"), UInt8(ascii: "\"")]
            case UInt8(ascii: "\\"): out += [UInt8(ascii: "\\"), UInt8(ascii: "\\")]
            case 0x0A: out += [UInt8(ascii: "\\"), UInt8(ascii: "n")]
            case 0x0D: out += [UInt8(ascii: "\\"), UInt8(ascii: "r")]
            case 0x09: out += [UInt8(ascii: "\\"), UInt8(ascii: "t")]
            case 0..<0x20: out += Array(String(format: "\\u%04x", byte).utf8)
            default: out.append(byte)
            }
        }
        out.append(UInt8(ascii: "\""))
    }
}

extension CommandArguments {
    /// The kinds of number JSON writes.
    enum NumberKind { case integer, fraction }

    /// Whether `bytes` is a number as JSON writes it (`JSONNumber`'s grammar), and which kind.
    static func jsonNumber(_ bytes: [UInt8]) -> NumberKind? {
        guard JSONNumber.isValid(bytes) else { return nil }
        return bytes.contains { $0 == UInt8(ascii: ".") || $0 == UInt8(ascii: "e") || $0 == UInt8(ascii: "E") } ? .fraction : .integer
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
