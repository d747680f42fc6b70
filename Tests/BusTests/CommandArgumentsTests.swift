import Foundation
@testable import Bus
import TestSupport
import Testing

/// Command-line style arguments, as RESP commands and `tourbus call` give them.
@Suite struct CommandArgumentsTests {
    func params(_ words: [String]) -> [String: Any]? {
        guard case .success(let data) = CommandArguments.params(words.map { Array($0.utf8) }) else { return nil }
        return try? JSONSerialization.jsonObject(with: data) as? [String: Any]
    }

    @Test func pairsWithTypedValues() {
        let p = params(["id", "7", "lat", "-33.86", "ok", "true", "gone", "null", "phone", "+61292507111", "hex", "0x1A",
                        "name", #""2046""#, "hours", #"[{"day":1}]"#, "word", "Sydney"])
        #expect(p?["id"] as? Int == 7)
        #expect(p?["lat"] as? Double == -33.86)
        #expect(p?["ok"] as? Bool == true)
        #expect(p?["gone"] is NSNull)
        #expect(p?["phone"] as? String == "+61292507111")
        #expect(p?["hex"] as? String == "0x1A")
        #expect(p?["name"] as? String == "2046")
        #expect((p?["hours"] as? [[String: Any]])?.first?["day"] as? Int == 1)
        #expect(p?["word"] as? String == "Sydney")
    }

    /// A dotted key gives a member of a nested object: the members of one object stay
    /// together, in the order their first key came, each level counted against the depth.
    @Test func dottedKeysNestObjects() throws {
        let written = { (words: [String], depth: Int) in
            CommandArguments.params(words.map { Array($0.utf8) }, maxDepth: depth).map { String(decoding: $0, as: UTF8.self) }
        }
        #expect(try written(["near.lat", "-33.86", "radius_m", "500", "near.lon", "151.21"], 8).get()
                == #"{"near":{"lat":-33.86,"lon":151.21},"radius_m":500}"#)
        #expect(try written(["a.b.c", "1", "a.d", "x", "a.b.e", "[2]"], 8).get() == #"{"a":{"b":{"c":1,"e":[2]},"d":"x"}}"#)
        // A repeated dotted key is refused by name; a free key of a dictionary is named too.
        #expect(written(["near.lat", "1", "near.lat", "2"], 8) == .failure(ServiceError(.invalidArgument, "is given twice", field: "near.lat")))
        #expect(try written(["name_i18n.fr", "Opéra", "name_i18n.en", "Opera"], 8).get() == #"{"name_i18n":{"fr":"Opéra","en":"Opera"}}"#)
        // A member given whole and by its members, an empty name, and too deep are refused by key.
        #expect(written(["near", #"{"lat":1}"#, "near.lon", "2"], 8)
                == .failure(ServiceError(.invalidArgument, "is given whole and by its members too (near.lon)", field: "near")))
        #expect(written(["near..lat", "1"], 8) == .failure(ServiceError(.invalidArgument, "a dotted key names members by non-empty names (near.lat)", field: "near..lat")))
        #expect(written([".lat", "1"], 8).map { _ in "" } == .failure(ServiceError(.invalidArgument, "a dotted key names members by non-empty names (near.lat)", field: ".lat")))
        // An empty key names no member, with or without a dotted key beside it.
        #expect(written(["", "1"], 8).map { _ in "" } == .failure(ServiceError(.invalidArgument, "a dotted key names members by non-empty names (near.lat)", field: "")))
        #expect(written(["", "1", "a.b", "2"], 8).map { _ in "" } == .failure(ServiceError(.invalidArgument, "a dotted key names members by non-empty names (near.lat)", field: "")))
        #expect(written(["a.b.c", "1"], 2) == .failure(ServiceError(.invalidArgument, "nests deeper than 2 levels", field: "a.b.c")))
        #expect(throws: Never.self) { try written(["a.b", "[[1]]"], 3).get() }
        #expect((try? written(["a.b", "[[1]]"], 2).get()) == nil)
        // Two levels fit a depth of two exactly; a trailing dot or a lone dot names nothing.
        #expect(try written(["a.b", "1"], 2).get() == #"{"a":{"b":1}}"#)
        for key in ["near.", "."] {
            #expect(written([key, "1"], 8) == .failure(ServiceError(.invalidArgument, "a dotted key names members by non-empty names (near.lat)", field: key)))
        }
        // A clash names the whole key and the first member given, whichever came first, at any level.
        #expect(written(["near.lon", "2", "near.lat", "1", "near", "{}"], 8)
                == .failure(ServiceError(.invalidArgument, "is given whole and by its members too (near.lon)", field: "near")))
        #expect(written(["a.b.c", "2", "a.b", "1"], 8) == .failure(ServiceError(.invalidArgument, "is given whole and by its members too (a.b.c)", field: "a.b")))
        // A repeated dotted key is refused; keys that are not UTF-8 are repaired before they are grouped.
        #expect(written(["near.lat", "1", "near.lon", "2", "near.lat", "3"], 8) == .failure(ServiceError(.invalidArgument, "is given twice", field: "near.lat")))
        let repaired = try CommandArguments.params([[0xFF, 0x2E, 0x78], Array("1".utf8), [0xFE, 0x2E, 0x79], Array("2".utf8)]).get()
        #expect(String(decoding: repaired, as: UTF8.self) == "{\"\u{FFFD}\":{\"x\":1,\"y\":2}}")
    }

    /// The most a RESP command carries (2,048 pairs), every key nested to the depth limit
    /// under one name: grouped in one pass per level (each level's chains in a temporary
    /// buffer), and written whole.
    @Test func theLargestCommandNestedToTheLimitIsWritten() throws {
        let depth = StrictJSON.defaultMaxDepth
        let prefix = Array(repeating: "a", count: depth - 1).joined(separator: ".")
        let words = (0..<2_048).flatMap { [Array("\(prefix).k\($0)".utf8), Array("1".utf8)] }
        let written = try CommandArguments.params(words).get()
        try StrictJSON.check(Array(written), maxDepth: depth + 1)
        #expect(written.count == (depth - 1) * 6 + 2 + (0..<2_048).reduce(0) { $0 + "\"k\($1)\":1".utf8.count + 1 } - 1)
    }

    /// Random dotted keys, beyond 16 pairs too (grouped through a dictionary then), against a
    /// reference written apart: the first key given twice, or the nested object in first-seen
    /// order, or the first clash of a key given whole and by its members, depth first.
    @Test func randomDottedKeysNestAsTheReferenceDoes() throws {
        // The reference: (key, value) pairs already deduplicated, at one level.
        func build(_ pairs: [(path: [String], key: String, value: String)]) -> Result<String, ServiceError> {
            var names: [String] = []
            var groups: [String: [(path: [String], key: String, value: String)]] = [:]
            for pair in pairs {
                if groups[pair.path[0]] == nil { names.append(pair.path[0]) }
                groups[pair.path[0], default: []].append(pair)
            }
            var members: [String] = []
            for name in names {
                let group = groups[name] ?? []
                if group.count == 1, group[0].path.count == 1 {
                    members.append("\"\(name)\":\(group[0].value)")
                    continue
                }
                if let whole = group.first(where: { $0.path.count == 1 }), let part = group.first(where: { $0.path.count > 1 }) {
                    return .failure(ServiceError(.invalidArgument, "is given whole and by its members too (\(part.key))", field: whole.key))
                }
                switch build(group.map { (Array($0.path.dropFirst()), $0.key, $0.value) }) {
                case .success(let inner): members.append("\"\(name)\":\(inner)")
                case .failure(let error): return .failure(error)
                }
            }
            return .success("{" + members.joined(separator: ",") + "}")
        }
        var rng = SplitMix64(seed: 0xD07)
        let keys = ["a", "a.b", "a.c", "a.b.x", "d.e", "d.f", "g", "h.i.j", "h.i.k", "h.l"] + (0..<20).map { "k\($0).v" }
        for _ in 0..<500 {
            var words: [String] = []
            var pairs: [(path: [String], key: String, value: String)] = []
            var repeated: String?
            for _ in 0..<Int(rng.next() % 40 + 1) {
                let key = keys[Int(rng.next() % UInt64(keys.count))], value = String(rng.next() % 100)
                words += [key, value]
                if pairs.contains(where: { $0.key == key }) {
                    repeated = repeated ?? key
                } else {
                    pairs.append((key.split(separator: ".").map(String.init), key, value))
                }
            }
            let got = CommandArguments.params(words.map { Array($0.utf8) }).map { String(decoding: $0, as: UTF8.self) }
            // A key given twice is refused first, by name.
            let want = repeated.map { Result<String, ServiceError>.failure(ServiceError(.invalidArgument, "is given twice", field: $0)) } ?? build(pairs)
            #expect(got == want, "\(words)")
        }
    }

    /// Keys come in the order given; a key given twice (I-JSON, RFC 7493, for words too) is
    /// refused by name, whichever way it repeats (random pairs over few keys, so many repeat).
    @Test func aRepeatedKeyIsRefusedByName() throws {
        let twice = CommandArguments.params([Array("a".utf8), Array("1".utf8), Array("b".utf8), Array("x".utf8), Array("a".utf8), Array("[3]".utf8)])
        #expect(twice == .failure(ServiceError(.invalidArgument, "is given twice", field: "a")))
        // Canonically equivalent keys are one key, as in JSON.
        #expect(CommandArguments.params([Array("a.é".utf8), Array("1".utf8), Array("a.e\u{301}".utf8), Array("2".utf8)])
                == .failure(ServiceError(.invalidArgument, "is given twice", field: "a.e\u{301}")))
        #expect(CommandArguments.params([Array("K".utf8), Array("1".utf8), Array("\u{212A}".utf8), Array("2".utf8)])
                == .failure(ServiceError(.invalidArgument, "is given twice", field: "\u{212A}")))
        // Two keys that are not UTF-8 but are written alike (U+FFFD) are one key.
        let repaired = CommandArguments.params([[0xFF], Array("1".utf8), [0xFE], Array("2".utf8)])
        #expect(repaired == .failure(ServiceError(.invalidArgument, "is given twice", field: "\u{FFFD}")))
        var rng = SplitMix64(seed: 0xC0A5)
        let keys = ["id", "lat", "é", "a\"b", "n"], values = ["1", "-2.5", "true", "null", "word", #""s""#, "{\"k\":[1]}", "1e999"]
        for _ in 0..<500 {
            var words: [String] = []
            var expected: [(String, String)] = []
            var repeated: String?
            for _ in 0..<Int(rng.next() % 40 + 1) {  // beyond 16 pairs too, where repeats are found by hashing
                let key = keys[Int(rng.next() % UInt64(keys.count))], value = values[Int(rng.next() % UInt64(values.count))]
                words += [key, value]
                if expected.contains(where: { $0.0 == key }) { repeated = repeated ?? key } else { expected.append((key, value)) }
            }
            let got = CommandArguments.params(words.map { Array($0.utf8) }).map { String(decoding: $0, as: UTF8.self) }
            if let repeated {
                #expect(got == .failure(ServiceError(.invalidArgument, "is given twice", field: repeated)), "\(words)")
                continue
            }
            let written = expected.map { key, value -> String in
                let keyJSON = String(decoding: try! JSONEncoder().encode(key), as: UTF8.self)
                let valueJSON = value == "word" || value == "1e999" ? "\"\(value)\"" : value
                return keyJSON + ":" + valueJSON
            }
            #expect(got == .success("{" + written.joined(separator: ",") + "}"), "\(words)")
        }
    }

    @Test func oneJSONObjectOrNothing() {
        #expect(params([#"{"id":1}"#])?["id"] as? Int == 1)
        #expect(params([])?.isEmpty == true)
        guard case .failure(let odd) = CommandArguments.params([Array("id".utf8), Array("1".utf8), Array("x".utf8)]) else {
            Issue.record("an odd number of words was accepted")
            return
        }
        #expect(odd.code == .invalidArgument && odd.message.contains("'x' has no value"))
        guard case .failure = CommandArguments.params([Array("[1,2]".utf8)]) else {
            Issue.record("a single non-object word was accepted")
            return
        }
    }

    @Test func numbersAreReadAsJSONWritesThem() {
        let pattern = /-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?/
        let integer = /-?(0|[1-9][0-9]*)/
        var random = SplitMix64(seed: 9)
        let alphabet = Array("-+.eE0123456789x".utf8)
        for _ in 0..<20_000 {
            let word = (0..<Int(random.next() % 7 + 1)).map { _ in alphabet[Int(random.next() % UInt64(alphabet.count))] }
            let text = String(decoding: word, as: UTF8.self)
            let expected: CommandArguments.NumberKind? = text.wholeMatch(of: integer) != nil ? .integer : text.wholeMatch(of: pattern) != nil ? .fraction : nil
            #expect(CommandArguments.jsonNumber(word) == expected, "\(text)")
        }
    }

}

/// Numbers that fit no Swift type are named by their field, found by span, not by Foundation's error text.
@Suite struct UnrepresentableNumberTests {
    struct Point: Decodable { var lat: Double }
    struct Nested: Decodable { struct Inner: Decodable { var b: [Double] }; var a: Inner }
    struct Count: Decodable { var n: Int }

    @Test func theFieldOfAnOutOfRangeNumberIsNamed() {
        #expect(throws: ServiceError(.invalidArgument, "number 1e999 is out of range", field: "lat")) {
            try JSONCoding.decode(Point.self, from: Data(#"{"lat":1e999}"#.utf8))
        }
        #expect(throws: ServiceError(.invalidArgument, "number -2e400 is out of range", field: "b")) {
            try JSONCoding.decode(Nested.self, from: Data(#"{"a":{"b":[1, -2e400]}}"#.utf8))
        }
        // A megabyte of digits is echoed cut to 100 bytes, as every error cuts what a client sent.
        let digits = "1" + String(repeating: "0", count: 1_000_000)
        #expect(throws: ServiceError(.invalidArgument, "number \(digits.prefix(100))… is out of range", field: "lat")) {
            try JSONCoding.decode(Point.self, from: Data(#"{"lat":\#(digits)}"#.utf8))
        }
    }

    @Test func aFractionForAnIntegerIsSaidPlainly() throws {
        do {
            _ = try JSONCoding.decode(Count.self, from: Data(#"{"n":2.5}"#.utf8))
            Issue.record("2.5 decoded as an integer")
        } catch {
            #expect(error.code == .invalidArgument)
        }
    }
}
