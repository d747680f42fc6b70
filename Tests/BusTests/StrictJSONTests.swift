import Bus
import Foundation
import Synchronization
import Testing
import TestSupport

/// Bytes of a string written with Swift escapes, plus raw bytes where a test needs invalid UTF-8.
private func bytes(_ text: String) -> [UInt8] { Array(text.utf8) }

/// What `StrictJSON.check` says about `input`: nil when it accepts.
private func verdict(_ input: [UInt8], maxDepth: Int = StrictJSON.defaultMaxDepth) -> JSONSyntaxError? {
    do {
        try StrictJSON.check(input, maxDepth: maxDepth)
        return nil
    } catch {
        return error
    }
}

/// Whether Foundation's JSONSerialization parses `input` (any top-level value).
private func foundationParses(_ input: [UInt8]) -> Bool {
    (try? JSONSerialization.jsonObject(with: Data(input), options: [.fragmentsAllowed])) != nil
}

@Suite struct StrictJSONTests {
    @Test(arguments: [
        "0", "-0", "7", "-12", "1.5", "-0.0", "1e5", "1E+5", "2.5e-3", "-12.34E+56", "123456789",
        #""""#, #""a""#, #""\"\\\/\b\f\n\r\t""#, #""\u00e9\u00E9\u0000\uFFFF""#, #""\uD83D\uDE00""#, #""\uDBFF\uDFFF""#,
        "\"é ü 😀 中\"", "\"\u{7F}\"", "\"\u{FFFF}\u{E000}\u{10FFFF}\"",
        "true", "false", "null", "[]", "{}", " \t\r\n[ 1 , 2 ]\n\r\t ", "[[[]]]", "[{}]",
        #"{"a":{"b":[null,true,false,0,"x"]},"c":-1.0e-0}"#, #"{"a":1,"a":2}"#, #"{ "" : "" }"#,
        "[1e999]", "[123456789012345678901234567890]",
    ])
    func acceptsStrictJSON(_ text: String) {
        #expect(verdict(bytes(text)) == nil, "\(text)")
    }

    @Test func acceptsRawUTF8AtEveryBoundary() {
        let edges: [[UInt8]] = [
            [0xC2, 0x80], [0xDF, 0xBF],  // U+0080, U+07FF
            [0xE0, 0xA0, 0x80], [0xED, 0x9F, 0xBF], [0xEE, 0x80, 0x80], [0xEF, 0xBF, 0xBF],  // U+0800, U+D7FF, U+E000, U+FFFF
            [0xF0, 0x90, 0x80, 0x80], [0xF4, 0x8F, 0xBF, 0xBF],  // U+10000, U+10FFFF
        ]
        for edge in edges {
            #expect(verdict([0x22] + edge + [0x22]) == nil, "\(edge)")
        }
    }

    @Test(arguments: [
        // (input, reason, offset)
        ("", JSONSyntaxError.Reason.unexpectedEnd, 0),
        ("   ", .unexpectedEnd, 3),
        ("[1,]", .trailingComma, 2),
        (#"{"a":1,}"#, .trailingComma, 6),
        ("[1, 2 ,\n]", .trailingComma, 6),
        (#"{"a":[1,],"b":2}"#, .trailingComma, 7),
        ("[1,,2]", .unexpectedByte, 3),
        ("[,]", .unexpectedByte, 1),
        ("{,}", .unexpectedByte, 1),
        (#"{"a" 1}"#, .unexpectedByte, 5),
        ("{1:2}", .unexpectedByte, 1),
        (#"{"a":}"#, .unexpectedByte, 5),
        (#"{"a":1 "b":2}"#, .unexpectedByte, 7),
        ("[1 2]", .unexpectedByte, 3),
        ("[1}", .unexpectedByte, 2),
        (#"{"a":1]"#, .unexpectedByte, 6),
        ("]", .unexpectedByte, 0),
        ("'a'", .unexpectedByte, 0),
        ("[True]", .unexpectedByte, 1),
        ("trUe", .unexpectedByte, 2),
        ("nul", .unexpectedEnd, 3),
        ("[nulL]", .unexpectedByte, 4),
        ("\u{FEFF}[1]", .unexpectedByte, 0),
        ("[\u{0B}1]", .unexpectedByte, 1),
        ("01", .badNumber, 1),
        ("-01", .badNumber, 2),
        ("[00]", .badNumber, 2),
        ("1.", .unexpectedEnd, 2),
        ("[1.]", .badNumber, 3),
        ("[1.e5]", .badNumber, 3),
        (".5", .unexpectedByte, 0),
        ("+1", .unexpectedByte, 0),
        ("-", .unexpectedEnd, 1),
        ("[-]", .badNumber, 2),
        ("-a", .badNumber, 1),
        ("1e", .unexpectedEnd, 2),
        ("[1e+]", .badNumber, 4),
        ("1.2.3", .badNumber, 3),
        ("[1-2]", .badNumber, 2),
        ("1e5e", .badNumber, 3),
        ("0x10", .trailingData, 1),
        ("1 2", .trailingData, 2),
        ("{} x", .trailingData, 3),
        ("[]]", .trailingData, 2),
        ("null\n,", .trailingData, 5),
        (#""abc"#, .unexpectedEnd, 4),
        (#"["a\x"]"#, .badEscape, 3),
        (#""\u12G4""#, .badEscape, 1),
        (#""\u12""#, .badEscape, 1),
        (#""\'""#, .badEscape, 1),
        (#""\"#, .unexpectedEnd, 2),
        ("\"a\tb\"", .controlCharacter, 2),
        ("\"\n\"", .controlCharacter, 1),
        ("\"\u{0}\"", .controlCharacter, 1),
        (#""\uD800""#, .loneSurrogate, 1),
        (#""\uDC00""#, .loneSurrogate, 1),
        (#""\uD800\u0041""#, .loneSurrogate, 1),
        (#""x\uDBFF\uDBFF""#, .loneSurrogate, 2),
        (#""\uD800\n""#, .loneSurrogate, 1),
        (#""\uD800"#, .unexpectedEnd, 7),
        (#""\uD800\uZZZZ""#, .badEscape, 7),
    ])
    func refusesWithReasonAndOffset(_ text: String, reason: JSONSyntaxError.Reason, offset: Int) {
        #expect(verdict(bytes(text)) == JSONSyntaxError(reason, at: offset), "\(text.debugDescription)")
    }

    @Test func refusesInvalidUTF8AtTheSequenceStart() {
        let bad: [[UInt8]] = [
            [0x80], [0xBF],                        // continuation without a lead
            [0xC0, 0x80], [0xC1, 0xBF],            // overlong two-byte forms
            [0xE0, 0x80, 0x80], [0xE0, 0x9F, 0xBF],  // overlong three-byte forms
            [0xED, 0xA0, 0x80], [0xED, 0xBF, 0xBF],  // surrogates encoded in UTF-8
            [0xF0, 0x80, 0x80, 0x80], [0xF0, 0x8F, 0xBF, 0xBF],  // overlong four-byte forms
            [0xF4, 0x90, 0x80, 0x80], [0xF5, 0x80, 0x80, 0x80], [0xFF],  // above U+10FFFF, never a lead
            [0xC3, 0x28], [0xE2, 0x82, 0x28], [0xC3],  // a lead whose continuation is missing
        ]
        for sequence in bad {
            #expect(verdict(bytes(#"["ok","#) + [0x22] + sequence + [0x22, 0x5D]) == JSONSyntaxError(.invalidUTF8, at: 7), "\(sequence)")
        }
        // Cut off inside a sequence: the text ends inside a string.
        #expect(verdict([0x22, 0xE2, 0x82]) == JSONSyntaxError(.unexpectedEnd, at: 3))
    }

    @Test func messagesCountFromOneAndNeverQuoteTheInput() {
        #expect(verdict(bytes(#"{"a":1,}"#))?.message == "trailing comma at byte 7")
        #expect(verdict(bytes(String(repeating: "[", count: 65)))?.message == "nesting deeper than 64 levels at byte 65")
        #expect(verdict(bytes(#"{"a":"#))?.message == "unexpected end of input after 5 bytes")
        let secret = "hunter2-Secret"
        for text in [#"{"password":"\#(secret)\x"}"#, #"{"\#(secret)" "#, #""\#(secret)\#t""#, "[\(secret)]", #""\#(secret)"x"#] {
            let error = verdict(bytes(text))
            #expect(error != nil && !(error?.message.contains("hunter") ?? true), "\(text)")
        }
    }

    @Test func everyInputShapeGivesTheSameVerdict() throws {
        let text = bytes(#"  {"a":[1,2,{"b":"\u00e9"}],"c":null}  "#)
        try StrictJSON.check(text)
        try StrictJSON.check(Data(text))
        try StrictJSON.check(text[2...])
        try text.withUnsafeBytes { (raw: UnsafeRawBufferPointer) in try StrictJSON.check(raw) }
        // A slice is checked on its own: its start is offset 0.
        let padded = bytes("xx[1,]")
        #expect(throws: JSONSyntaxError(.trailingComma, at: 2)) { try StrictJSON.check(padded[2...]) }
        #expect(throws: JSONSyntaxError(.unexpectedEnd, at: 1)) { try StrictJSON.check(Data("[".utf8)) }
    }

    @Test func depthCountsContainersAndStopsAtTheFirstBracketTooMany() {
        #expect(verdict(bytes("[]"), maxDepth: 1) == nil)
        #expect(verdict(bytes("[[1]]"), maxDepth: 2) == nil)
        #expect(verdict(bytes("[[1]]"), maxDepth: 1) == JSONSyntaxError(.tooDeep(limit: 1), at: 1))
        #expect(verdict(bytes(#"{"a":[1,{"b":[]}],"c":{}}"#), maxDepth: 4) == nil)
        #expect(verdict(bytes(#"{"a":[1,{"b":[]}],"c":{}}"#), maxDepth: 3) == JSONSyntaxError(.tooDeep(limit: 3), at: 13))
        #expect(verdict(bytes("1"), maxDepth: 0) == nil)
        #expect(verdict(bytes("[]"), maxDepth: 0) == JSONSyntaxError(.tooDeep(limit: 0), at: 0))
        // Siblings do not add up; only nesting does.
        #expect(verdict(bytes("[" + String(repeating: "[[]],", count: 1_000) + "[]]"), maxDepth: 3) == nil)
        // The refusal comes at the (limit + 1)th bracket, however much follows: the rest is never read.
        let unclosed = [UInt8](repeating: UInt8(ascii: "["), count: 100_000)
        #expect(verdict(unclosed) == JSONSyntaxError(.tooDeep(limit: 64), at: 64))
        #expect(verdict(unclosed + [0xFF]) == JSONSyntaxError(.tooDeep(limit: 64), at: 64))
    }

    /// Every depth from 1 to 1 000, then powers of two to 100 000, of arrays and of objects,
    /// on a thread with a 512 KiB stack: a recursive checker would overflow it long before.
    @Test func deepNestingNeverRecursesOnASmallStack() {
        let failures = Mutex<[String]>([])
        let thread = WorkerThread(name: "strict-json-deep", stackSize: 512 << 10) {
            var depths = Array(1...1_000)
            var power = 1_024
            while power < 100_000 {
                depths.append(power)
                power *= 2
            }
            depths.append(100_000)
            func record(_ what: String) { failures.withLock { $0.append(what) } }
            for depth in depths {
                let array = [UInt8](repeating: UInt8(ascii: "["), count: depth) + [UInt8](repeating: UInt8(ascii: "]"), count: depth)
                let object = Array(String(repeating: #"{"a":"#, count: depth).utf8) + Array("null".utf8)
                    + [UInt8](repeating: UInt8(ascii: "}"), count: depth)
                let limit = StrictJSON.defaultMaxDepth
                let expectedArray = depth <= limit ? nil : JSONSyntaxError(.tooDeep(limit: limit), at: limit)
                let expectedObject = depth <= limit ? nil : JSONSyntaxError(.tooDeep(limit: limit), at: limit * 5)
                if verdict(array) != expectedArray { record("array \(depth): \(String(describing: verdict(array)))") }
                if verdict(object) != expectedObject { record("object \(depth): \(String(describing: verdict(object)))") }
                // With the limit lifted, the whole depth is walked, still without recursion.
                if depth >= 1_000 {
                    if verdict(array, maxDepth: .max) != nil { record("array \(depth) unlimited") }
                    if verdict(object, maxDepth: depth) != nil { record("object \(depth) at its own limit") }
                    if verdict(object, maxDepth: depth - 1) != JSONSyntaxError(.tooDeep(limit: depth - 1), at: (depth - 1) * 5) {
                        record("object \(depth) one over")
                    }
                }
            }
        }
        thread.join()
        #expect(failures.withLock { $0 } == [])
    }

    /// Random documents are accepted, and parse in Foundation. Random mutations of them
    /// (a byte deleted, inserted, doubled, swapped; a comma before a closing bracket; a cut):
    /// whatever StrictJSON accepts, JSONSerialization parses; whatever JSONSerialization
    /// parses and StrictJSON refuses is one of the documented differences.
    @Test func agreesWithFoundationOnRandomDocumentsAndMutations() {
        var rng = SplitMix64(seed: 0x7001_B005)
        var accepted = 0, refused = 0, documentedDifferences = 0
        for round in 0..<3_000 {
            let document = RandomJSON.document(&rng)
            guard verdict(document) == nil, foundationParses(document) else {
                Issue.record("generated document refused: \(String(decoding: document, as: UTF8.self))")
                continue
            }
            for _ in 0..<4 {
                let mutant = RandomJSON.mutate(document, &rng)
                let strict = verdict(mutant)
                let foundation = foundationParses(mutant)
                switch (strict, foundation) {
                case (nil, true):
                    accepted += 1
                case (nil, false):
                    Issue.record("round \(round): accepted what Foundation refuses: \(String(decoding: mutant, as: UTF8.self).debugDescription) from \(String(decoding: document, as: UTF8.self).debugDescription)")
                case (let error?, true):
                    switch error.reason {
                    case .trailingComma, .loneSurrogate, .tooDeep:
                        documentedDifferences += 1
                    case _ where mutant.prefix(4).contains(0):
                        // Foundation guesses UTF-16 or UTF-32 from NUL bytes at the start; JSON on the wire is UTF-8.
                        documentedDifferences += 1
                    default:
                        Issue.record("round \(round): refused (\(error.message)) what Foundation parses: \(String(decoding: mutant, as: UTF8.self).debugDescription)")
                    }
                case (_?, false):
                    refused += 1
                }
            }
        }
        // The mutations reach every outcome often enough to mean something.
        #expect(accepted > 500 && refused > 2_000 && documentedDifferences > 100, "\(accepted) \(refused) \(documentedDifferences)")
    }

    /// `checkMembers` gives the verdict `check` gives, and on an object the members
    /// `JSONSpan.walkMembers` finds: random objects of random values, and mutations of them.
    @Test func checkingMembersJudgesAsCheckAndVisitsAsTheWalk() throws {
        typealias Member = (key: [UInt8], value: [UInt8], range: Range<Int>)
        var rng = SplitMix64(seed: 0x3E3B_E125)
        var objects = 0, refused = 0, scalars = 0
        for _ in 0..<2_000 {
            var text = Array(" {".utf8)
            for index in 0..<Int(rng.next() % 5) {
                if index > 0 { text.append(UInt8(ascii: ",")) }
                text += Array(" \"k\(index)\"\t: ".utf8) + RandomJSON.document(&rng)
            }
            text += Array("} ".utf8)
            for input in [text, RandomJSON.mutate(text, &rng), RandomJSON.document(&rng)] {
                let data = Data(input)
                var visited: [Member] = []
                let outcome = Result { () throws(JSONSyntaxError) -> Bool in
                    try StrictJSON.checkMembers(data) { key, value, range in
                        visited.append((Array(key), Array(value), range))
                        return true
                    }
                }
                let expected = verdict(input)
                switch outcome {
                case .failure(let error):
                    #expect(error == expected, "\(String(decoding: input, as: UTF8.self).debugDescription)")
                    refused += 1
                case .success(let isObject):
                    #expect(expected == nil, "\(String(decoding: input, as: UTF8.self).debugDescription)")
                    var walked: [Member] = []
                    let walkedWhole = JSONSpan.walkMembers(of: data) { key, value, range in
                        walked.append((Array(key), Array(value), range))
                        return true
                    }
                    #expect(isObject == walkedWhole, "\(String(decoding: input, as: UTF8.self).debugDescription)")
                    #expect(visited.map(\.key) == walked.map(\.key) && visited.map(\.value) == walked.map(\.value)
                            && visited.map(\.range) == walked.map(\.range), "\(String(decoding: input, as: UTF8.self).debugDescription)")
                    if isObject { objects += 1 } else { scalars += 1 }
                }
            }
        }
        // A visitor that stops is not visited again, and the rest of the text is still checked.
        var calls = 0
        #expect(try StrictJSON.checkMembers(Data(#"{"a":1,"b":2}"#.utf8)) { _, _, _ in calls += 1; return false } == false)
        #expect(calls == 1)
        #expect(throws: JSONSyntaxError(.trailingComma, at: 13)) {
            try StrictJSON.checkMembers(Data(#"{"a":1,"b":[2,]}"#.utf8)) { _, _, _ in false }
        }
        #expect(objects > 1_000 && refused > 200 && scalars > 200, "\(objects) \(refused) \(scalars)")
    }
}

/// Random JSON text for property tests: every value kind, escapes, multi-byte UTF-8,
/// surrogate pairs, whitespace, and numbers small enough for any decoder.
enum RandomJSON {
    static func document(_ rng: inout SplitMix64) -> [UInt8] {
        var out: [UInt8] = []
        whitespace(&out, &rng)
        value(&out, depth: 0, &rng)
        whitespace(&out, &rng)
        return out
    }

    static func whitespace(_ out: inout [UInt8], _ rng: inout SplitMix64) {
        guard Int.random(in: 0..<4, using: &rng) == 0 else { return }
        for _ in 0..<Int.random(in: 1...3, using: &rng) { out.append([0x20, 0x09, 0x0A, 0x0D][Int.random(in: 0..<4, using: &rng)]) }
    }

    static func value(_ out: inout [UInt8], depth: Int, _ rng: inout SplitMix64) {
        let kind = depth > 5 ? Int.random(in: 0..<5, using: &rng) : Int.random(in: 0..<8, using: &rng)
        switch kind {
        case 0: out += Array(["true", "false", "null"][Int.random(in: 0..<3, using: &rng)].utf8)
        case 1, 2: number(&out, &rng)
        case 3, 4: string(&out, &rng)
        case 5, 6:
            out.append(UInt8(ascii: "{"))
            let count = Int.random(in: 0...4, using: &rng)
            for index in 0..<count {
                if index > 0 { out.append(UInt8(ascii: ",")) }
                whitespace(&out, &rng)
                string(&out, &rng)
                whitespace(&out, &rng)
                out.append(UInt8(ascii: ":"))
                whitespace(&out, &rng)
                value(&out, depth: depth + 1, &rng)
                whitespace(&out, &rng)
            }
            out.append(UInt8(ascii: "}"))
        default:
            out.append(UInt8(ascii: "["))
            let count = Int.random(in: 0...4, using: &rng)
            for index in 0..<count {
                if index > 0 { out.append(UInt8(ascii: ",")) }
                whitespace(&out, &rng)
                value(&out, depth: depth + 1, &rng)
                whitespace(&out, &rng)
            }
            out.append(UInt8(ascii: "]"))
        }
    }

    /// Runs of at most two digits: no single mutation (an `e` inserted, a digit doubled) can
    /// make an exponent of more than two digits, so every number stays in Double's range.
    static func number(_ out: inout [UInt8], _ rng: inout SplitMix64) {
        var text = Bool.random(using: &rng) ? "-" : ""
        text += Bool.random(using: &rng) ? "0" : String(Int.random(in: 1...99, using: &rng))
        if Bool.random(using: &rng) { text += "." + String(Int.random(in: 0...99, using: &rng)) }
        if Int.random(in: 0..<3, using: &rng) == 0 {
            text += ["e", "E", "e+", "e-", "E-"][Int.random(in: 0..<5, using: &rng)] + String(Int.random(in: 0...9, using: &rng))
        }
        out += Array(text.utf8)
    }

    static func string(_ out: inout [UInt8], _ rng: inout SplitMix64) {
        let pieces = [#"a"#, "Zz", " ", "é", "中", "😀", "\u{10FFFF}", #"\""#, #"\\"#, #"\/"#, #"\b"#, #"\f"#, #"\n"#, #"\r"#, #"\t"#,
                      #"\u0041"#, #"\u00e9"#, #"\uD83D\uDE00"#, #"\uDBFF\uDFFF"#, #"\u0000"#, "0", "}", "[", ",", ":"]
        out.append(UInt8(ascii: "\""))
        for _ in 0..<Int.random(in: 0...5, using: &rng) { out += Array(pieces[Int.random(in: 0..<pieces.count, using: &rng)].utf8) }
        out.append(UInt8(ascii: "\""))
    }

    /// One mutation: digits are never inserted or doubled twice, so numbers stay in range.
    static func mutate(_ document: [UInt8], _ rng: inout SplitMix64) -> [UInt8] {
        var mutant = document
        let interesting: [UInt8] = Array(#",,,:[]{}"\ -.eE0tnx"#.utf8) + [0x00, 0x09, 0x1F, 0x7F, 0x80, 0xBF, 0xC0, 0xED, 0xF4, 0xFF]
        let position = Int.random(in: 0...mutant.count, using: &rng)
        switch Int.random(in: 0..<7, using: &rng) {
        case 0 where position < mutant.count:
            mutant.remove(at: position)
        case 1:
            mutant.insert(interesting[Int.random(in: 0..<interesting.count, using: &rng)], at: position)
        case 2 where position < mutant.count:
            mutant.insert(mutant[position], at: position)
        case 3 where position + 1 < mutant.count:
            mutant.swapAt(position, position + 1)
        case 4:
            // A comma before some closing bracket: the mistake JSONSerialization forgives.
            let closers = mutant.indices.filter { mutant[$0] == UInt8(ascii: "]") || mutant[$0] == UInt8(ascii: "}") }
            if let closer = closers.randomElement(using: &rng) { mutant.insert(UInt8(ascii: ","), at: closer) }
        case 5:
            // Turn the low half of an escaped surrogate pair into something else.
            let text = String(decoding: mutant, as: UTF8.self)
            let replaced = Bool.random(using: &rng) ? text.replacingOccurrences(of: #"\uDE00"#, with: "x")
                                                    : text.replacingOccurrences(of: #"\uD83D\uDE00"#, with: #"\uDE00\uD83D"#)
            mutant = Array(replaced.utf8)
        default:
            mutant.removeLast(min(mutant.count, Int.random(in: 1...3, using: &rng)))
        }
        return mutant
    }
}

/// Strings are scanned eight bytes at a time (`ByteScan`) before byte by byte: whatever ends
/// a plain run must be found wherever it falls in a word, and near the end of the input.
@Suite struct WordAtATimeScanTests {
    @Test func everyStopIsFoundAtEveryOffset() throws {
        let stops: [(bytes: [UInt8], valid: Bool)] = [
            (Array(#"\""#.utf8), true), (Array(#"\\"#.utf8), true), (Array(#"\n"#.utf8), true), (Array("é".utf8), true),
            ([0x1F], false), ([0x0A], false), ([0x00], false), ([0xFF], false), ([0xC3], false),
        ]
        for stop in stops {
            for before in 0..<20 {
                for after in [0, 1, 7, 8, 9] {
                    let plain = Array(repeating: UInt8(ascii: "a"), count: before)
                    let text = Array(#"{"k":""#.utf8) + plain + stop.bytes + Array(repeating: UInt8(ascii: "b"), count: after) + Array(#"","n":1}"#.utf8)
                    #expect((verdict(text) == nil) == stop.valid, "\(stop.bytes) after \(before) bytes")
                    #expect((verdict(text) == nil) == foundationParses(text), "\(stop.bytes) after \(before) bytes")
                    guard stop.valid else { continue }
                    // The span reader finds the string's end, and the member after it, wherever the stop fell.
                    let data = Data(text)
                    let value = try #require(JSONSpan.member("k", in: data))
                    #expect(Array(data[value]) == [UInt8(ascii: "\"")] + plain + stop.bytes + Array(repeating: UInt8(ascii: "b"), count: after) + [UInt8(ascii: "\"")])
                    #expect(JSONSpan.literal("n", in: data) == "1")
                }
            }
        }
        // A string cut off inside a word, or at its end, is not JSON.
        for length in 0..<20 {
            #expect(verdict(Array(#"[""#.utf8) + Array(repeating: UInt8(ascii: "a"), count: length)) != nil)
            #expect(JSONSpan.member("k", in: Data(Array(#"{"k":""#.utf8) + Array(repeating: UInt8(ascii: "a"), count: length))) == nil)
        }
    }
}

/// I-JSON (RFC 7493): with `uniqueKeys`, an object giving a key twice is refused at the
/// second, escapes resolved; the same key in different objects is no repeat.
@Suite struct UniqueKeysTests {
    static func check(_ text: String) -> JSONSyntaxError? {
        do {
            try StrictJSON.check(Array(text.utf8), uniqueKeys: true)
            return nil
        } catch {
            return error
        }
    }

    @Test func aKeyTwiceInOneObjectIsRefusedAtTheSecond() {
        #expect(Self.check(#"{"a":1,"a":2}"#) == JSONSyntaxError(.duplicateKey, at: 7))
        #expect(Self.check(#"{"a":1,"\u0061":2}"#) == JSONSyntaxError(.duplicateKey, at: 7))
        #expect(Self.check(#"{"x":{"b":[{"c":1,"d":2,"c":3}]}}"#)?.reason == .duplicateKey)
        #expect(Self.check(#"[{"a":1},{"a":1}]"#) == nil)
        #expect(Self.check(#"{"a":{"a":{"a":1}},"b":{"a":2}}"#) == nil)
        #expect(Self.check(#"{"a":1,"A":2,"a ":3,"é":4}"#) == nil)
        // Keys canonically equivalent are one key to a Swift dictionary, so one here too.
        #expect(Self.check(#"{"é":4,"e\u0301":5}"#)?.reason == .duplicateKey)
        // An object closed and another opened at the same depth starts afresh.
        #expect(Self.check(#"{"l":[{"k":1},{"k":2}],"m":{"k":3}}"#) == nil)
        #expect(JSONSyntaxError(.duplicateKey, at: 7).message == "duplicate key at byte 8")
        // Without the option, a repeat is Foundation's business, as before.
        #expect((try? StrictJSON.check(Array(#"{"a":1,"a":2}"#.utf8))) != nil)
    }

    @Test func manyKeysAndDeepObjectsStayLinear() {
        let wide = "{" + (0..<5_000).map { #""k\#($0)":\#($0)"# }.joined(separator: ",") + "}"
        #expect(Self.check(wide) == nil)
        #expect(Self.check(String(wide.dropLast()) + #","k4999":1}"#)?.reason == .duplicateKey)
        let deep = String(repeating: #"{"a":"#, count: 60) + "1" + String(repeating: "}", count: 60)
        #expect(Self.check(deep) == nil)
    }
}
