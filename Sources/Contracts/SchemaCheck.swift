import Bus
import Foundation

/// Holds a JSON value to a `Schema` before anything decodes it: every member known, of its
/// type, within its limits, and every required one there. The first fault is answered as
/// `invalid_argument` naming its field (`near.lat`, `stops[2]`); an unknown member is named
/// with the member it was probably meant to be. Bytes are counted before characters.
///
/// The value must already be strict JSON within the request's depth (the server checks the
/// whole envelope before a handler runs), so this walks it by spans, over slices of the one
/// buffer: a 512 KiB upload chunk is not copied to be looked at.
public enum SchemaCheck {
    /// Checks `json` against `schema`; a request's params (`{}` when it has none).
    public static func check(_ json: Data, against schema: Schema) throws(ServiceError) {
        try check(json, schema, path: "")
    }

    private static func check(_ json: Data, _ schema: Schema, path: String) throws(ServiceError) {
        switch schema {
        case .any:
            return
        case .anyOf(let shapes):
            // Held to the shapes of its JSON type; when none takes it, the first one's fault is answered.
            let candidates = shapes.filter { sameType(json, $0) }
            guard let first = candidates.first else { throw expected(describe(schema), json, path) }
            for shape in candidates.dropFirst() where (try? check(json, shape, path: path)) != nil { return }
            try check(json, first, path: path)
        case .object(let object):
            guard let members = JSONSpan.members(of: json) else { throw expected("an object", json, path) }
            try checkMembers(members, of: json, object, path: path)
        case .dictionary(let value, let entries):
            guard let members = JSONSpan.members(of: json) else { throw expected("an object", json, path) }
            try count(members.count, entries, path, noun: "entries")
            for member in members { try check(json[member.value], value, path: join(path, member.key)) }
        case .array(let element, let items):
            guard let elements = JSONSpan.elements(at: json.startIndex..<json.endIndex, in: json) else { throw expected("an array", json, path) }
            try count(elements.count, items, path, noun: "items")
            for (i, range) in elements.enumerated() { try check(json[range], element, path: path + "[\(i)]") }
        case .string(let bounds):
            // The value is strict JSON: one that opens with a quote is a string. Only a bounded one is read.
            guard json.first == UInt8(ascii: "\"") else { throw expected("a string", json, path) }
            guard bounds.maxBytes != nil || bounds.characters != nil else { return }
            guard let text = JSONSpan.string(at: json.startIndex..<json.endIndex, in: json) else { throw expected("a string", json, path) }
            try checkString(text, bounds, path: path)
        case .enumeration(let cases):
            guard let text = JSONSpan.string(at: json.startIndex..<json.endIndex, in: json) else { throw expected("a string", json, path) }
            guard cases.contains(text) else {
                let name = path.split(separator: ".").last.map(String.init) ?? "value"
                throw fault(path, "unknown \(name) '\(Echo.clip(text, maxBytes: 40))'; use \(list(cases))")
            }
        case .boolean:
            guard json.elementsEqual("true".utf8) || json.elementsEqual("false".utf8) else { throw expected("a boolean", json, path) }
        case .integer(let bounds):
            guard isNumber(json) else { throw expected("an integer", json, path) }
            let literal = String(decoding: json, as: UTF8.self)
            // A whole number written with a fraction or an exponent (`4.0`, `1e1`) is one, as the
            // decoder reads it; the literal is read exactly (`1e-400` is a fraction, not 0, and
            // one past the end of the range is out of it, however it is written).
            let value: Int64
            switch DecimalLiteral(literal)?.integer {
            case .whole(let whole): value = whole
            case .fraction: throw fault(path, "expected an integer")
            case .tooLarge, nil: throw fault(path, "number \(Echo.clip(literal, maxBytes: 40)) is out of range")
            }
            if let range = bounds.range, !range.contains(value) {
                throw fault(path, range.upperBound == .max ? "must be \(range.lowerBound) or more" : "must be \(range.lowerBound) to \(range.upperBound)")
            }
        case .number(let bounds):
            guard isNumber(json) else { throw expected("a number", json, path) }
            let literal = String(decoding: json, as: UTF8.self)
            // Too large for a double, or too small to be told from 0 (`1e-400`): the decoder
            // could not read it as written either.
            guard let value = Double(literal), value.isFinite, value != 0 || DecimalLiteral(literal)?.isZero == true else {
                throw fault(path, "number \(Echo.clip(literal, maxBytes: 40)) is out of range")
            }
            if let range = bounds.range {
                if bounds.exclusiveMinimum, !(value > range.lowerBound && value <= range.upperBound) {
                    throw fault(path, "must be more than \(plain(range.lowerBound)) and at most \(plain(range.upperBound))")
                }
                if !range.contains(value) {
                    throw fault(path, "must be a number in [\(plain(range.lowerBound)), \(plain(range.upperBound))]")
                }
            }
        }
    }

    private static func checkMembers(_ members: [(key: String, value: Range<Int>)], of json: Data, _ object: ObjectSchema, path: String) throws(ServiceError) {
        var seen: Set<String> = []
        for (key, range) in members {
            guard let member = object.member(key) else { throw unknown(key, in: object, path: path) }
            // Which of two copies counts is the decoder's guess: neither is taken.
            guard seen.insert(key).inserted else { throw fault(join(path, key), "is given twice") }
            let value = json[range]
            if value.elementsEqual("null".utf8) {
                guard member.nullable || !member.required else {
                    throw fault(join(path, key), "expected \(describe(member.schema)), found null")
                }
                continue
            }
            try check(value, member.schema, path: join(path, key))
        }
        if let missing = object.members.first(where: { $0.required && !seen.contains($0.name) }) {
            let field = join(path, missing.name)
            throw ServiceError(.invalidArgument, "missing required field \(field)", field: field)
        }
    }

    private static func checkString(_ text: String, _ bounds: StringBounds, path: String) throws(ServiceError) {
        let bytes = text.utf8.count
        if let maxBytes = bounds.maxBytes, bytes > maxBytes { throw fault(path, "must be at most \(maxBytes) bytes") }
        guard let range = bounds.characters else { return }
        // A string of more bytes than its limit (or, without one, than characters allowed four
        // times over) is refused before it is counted.
        let counted = bounds.trimmed ? text.trimmingCharacters(in: .whitespacesAndNewlines) : text
        if bytes > (bounds.maxBytes ?? range.upperBound * 4) || !range.contains(counted.count) {
            throw fault(
                path,
                range.lowerBound == 1 && text.isEmpty
                    ? "must not be empty"
                    : range.lowerBound == 0
                        ? "must be at most \(range.upperBound) characters"
                        : "must be \(range.lowerBound) to \(range.upperBound) characters")
        }
    }

    private static func count(_ count: Int, _ bounds: CountBounds, _ path: String, noun: String) throws(ServiceError) {
        guard let range = bounds.range, !range.contains(count) else { return }
        throw fault(path, "must hold \(range.lowerBound) to \(range.upperBound) \(noun)")
    }

    /// `unknown parameter 'lat'; did you mean 'near'?`: the member whose own members include
    /// the key, else the known name nearest in spelling.
    static func unknown(_ key: String, in object: ObjectSchema, path: String) -> ServiceError {
        let field = join(path, Echo.clip(key, maxBytes: 64))
        var message = "unknown parameter '\(field)'"
        if let hint = suggestion(for: key, in: object) { message += "; did you mean '\(join(path, hint))'?" }
        return fault(field, message)
    }

    static func suggestion(for key: String, in object: ObjectSchema) -> String? {
        let lowered = key.lowercased()
        guard lowered.utf8.count <= 64 else { return nil }
        if let parent = object.members.first(where: { if case .object(let inner) = $0.schema { inner.member(lowered) != nil } else { false } }) {
            return parent.name
        }
        // Near enough: a third of the letters off, or two when the first letter is right (`lng`, `lon`).
        let scored = object.members.map { ($0.name, distance(lowered, $0.name)) }.filter { name, off in
            off * 3 <= name.count || (off <= 2 && name.count >= 3 && name.first == lowered.first)
        }
        // Ties go to the name sharing more letters with the key (`lng` is `lon`, not `lat`).
        func shared(_ name: String) -> Int {
            name.utf8.reduce(into: (0, Array(lowered.utf8))) { acc, byte in
                if let i = acc.1.firstIndex(of: byte) {
                    acc.0 += 1
                    acc.1.remove(at: i)
                }
            }.0
        }
        return scored.min { $0.1 != $1.1 ? $0.1 < $1.1 : shared($0.0) > shared($1.0) }?.0
    }

    /// Edit distance (insertions, deletions, substitutions, and a swap of two neighbours) of two short names.
    static func distance(_ a: String, _ b: String) -> Int {
        let a = Array(a.utf8)
        let b = Array(b.utf8)
        guard !a.isEmpty else { return b.count }
        guard !b.isEmpty else { return a.count }
        var previous2 = [Int](repeating: 0, count: b.count + 1)
        var previous = Array(0...b.count)
        for i in 1...a.count {
            var current = [i] + [Int](repeating: 0, count: b.count)
            for j in 1...b.count {
                current[j] = min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1))
                if i > 1, j > 1, a[i - 1] == b[j - 2], a[i - 2] == b[j - 1] { current[j] = min(current[j], previous2[j - 2] + 1) }
            }
            previous2 = previous
            previous = current
        }
        return previous[b.count]
    }

    /// `123` of `123.000`, or nil for any other literal.

    private static func isNumber(_ json: Data) -> Bool {
        guard let first = json.first else { return false }
        return first == UInt8(ascii: "-") || (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(first)
    }

    private static func expected(_ what: String, _ json: Data, _ path: String) -> ServiceError {
        fault(path, json.elementsEqual("null".utf8) ? "expected \(what), found null" : "expected \(what)")
    }

    static func describe(_ schema: Schema) -> String {
        switch schema {
        case .string, .enumeration: "a string"
        case .integer: "an integer"
        case .number: "a number"
        case .boolean: "a boolean"
        case .array: "an array"
        case .object, .dictionary: "an object"
        case .anyOf(let shapes): shapes.map(describe).joined(separator: " or ")
        case .any: "a value"
        }
    }

    /// Whether `json`'s JSON type is the one `schema` wants.
    private static func sameType(_ json: Data, _ schema: Schema) -> Bool {
        switch (json.first, schema) {
        case (UInt8(ascii: "{"), .object), (UInt8(ascii: "{"), .dictionary), (UInt8(ascii: "["), .array), (UInt8(ascii: "\""), .string),
            (UInt8(ascii: "\""), .enumeration), (UInt8(ascii: "t"), .boolean), (UInt8(ascii: "f"), .boolean):
            true
        case (let byte?, .integer), (let byte?, .number): byte == UInt8(ascii: "-") || (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte)
        default: false
        }
    }

    /// `invalid_argument` at `path` (the whole value when it is empty).
    private static func fault(_ path: String, _ message: String) -> ServiceError {
        ServiceError(.invalidArgument, message, field: path.isEmpty ? nil : path)
    }

    private static func join(_ path: String, _ key: String) -> String { path.isEmpty ? key : path + "." + key }

    private static func list(_ names: [String]) -> String {
        names.count < 2 ? names.joined() : names.dropLast().joined(separator: ", ") + " or " + (names.last ?? "")
    }

    /// A bound as people write it: `90`, not `90.0`.
    private static func plain(_ value: Double) -> String {
        value == value.rounded() && abs(value) < 1e15 ? String(Int64(value)) : String(value)
    }
}

/// A JSON number literal read exactly: its significant digits and the power of ten they are
/// multiplied by (`-12.50e3` is -125 × 10²).
struct DecimalLiteral {
    var negative: Bool
    /// The digits without leading or trailing zeros (empty for zero).
    var digits: Substring
    var exponent: Int

    /// What the literal is as an integer.
    enum Integer: Equatable {
        case whole(Int64)
        case fraction, tooLarge
    }

    /// Nil for text that is not a JSON number, or whose exponent is beyond reason.
    init?(_ literal: String) {
        var text = Substring(literal)
        negative = text.first == "-"
        if negative { text = text.dropFirst() }
        var exponent = 0
        if let e = text.firstIndex(where: { $0 == "e" || $0 == "E" }) {
            guard let power = Int(text[text.index(after: e)...].drop { $0 == "+" }), abs(power) < 100_000 else { return nil }
            exponent = power
            text = text[..<e]
        }
        var mantissa = text
        if let dot = text.firstIndex(of: ".") {
            let fraction = text[text.index(after: dot)...]
            exponent -= fraction.count
            mantissa = text[..<dot] + fraction
        }
        guard !mantissa.isEmpty, mantissa.allSatisfy(\.isASCII), mantissa.allSatisfy(\.isNumber) else { return nil }
        let significant = mantissa.drop { $0 == "0" }
        let trailing = significant.reversed().prefix { $0 == "0" }.count
        digits = significant.dropLast(trailing)
        self.exponent = digits.isEmpty ? 0 : exponent + trailing
    }

    var isZero: Bool { digits.isEmpty }

    var integer: Integer {
        if digits.isEmpty { return .whole(0) }
        if exponent < 0 { return .fraction }
        guard digits.count + exponent <= 19, let magnitude = UInt64(digits + String(repeating: "0", count: exponent)) else { return .tooLarge }
        if negative { return magnitude <= UInt64(Int64.max) + 1 ? .whole(magnitude == UInt64(Int64.max) + 1 ? .min : -Int64(magnitude)) : .tooLarge }
        return magnitude <= UInt64(Int64.max) ? .whole(Int64(magnitude)) : .tooLarge
    }
}
