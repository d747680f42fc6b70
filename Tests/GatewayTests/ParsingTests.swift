import Bus
import Foundation
@testable import Gateway
import Testing

@Suite struct RESPParserTests {
    func words(_ text: String) -> [String]? {
        guard case .command(let words, _) = RESP.parse(Array(text.utf8), from: 0, maxBytes: 1 << 20) else { return nil }
        return words.map { String(decoding: $0, as: UTF8.self) }
    }

    @Test func arraysAndInlineCommands() {
        #expect(words("*2\r\n$4\r\nPING\r\n$2\r\nhi\r\n") == ["PING", "hi"])
        #expect(words("*1\r\n$0\r\n\r\n") == [""])
        #expect(words("catalog.get id 1\r\n") == ["catalog.get", "id", "1"])
        #expect(words("catalog.get   id\t1\n") == ["catalog.get", "id", "1"])
        #expect(words(#"x name "Caf\xc3\xa9 \"Sydney\"" note 'it''s'"# + "\r\n") == nil)  // quotes must end a word
        #expect(words(#"x name "Caf\xc3\xa9 \"Sydney\"" note 'plain \n'"# + "\r\n") == ["x", "name", "Café \"Sydney\"", "note", "plain \\n"])
    }

    @Test func incompleteInputWaits() {
        for partial in ["*2\r\n$4\r\nPI", "*2\r\n", "*2", "PING", "*1\r\n$4\r\nPING\r"] {
            #expect(RESP.parse(Array(partial.utf8), from: 0, maxBytes: 1 << 20) == .incomplete, "\(partial)")
        }
    }

    /// An array that comes a few bytes at a time is read on from where the last read stopped:
    /// each bulk string is read once, not again from the array's start on every read (which
    /// let one trickling client keep its event loop busy), and the result is the same command
    /// even when the buffer before it was dropped in between.
    @Test func aTrickledArrayIsReadOnFromWhereItStopped() {
        let words = (0..<300).map { i in String(repeating: Character(Unicode.Scalar(UInt8(97 + i % 26))), count: i % 7) }
        let whole = Array(("*\(words.count)\r\n" + words.map { "$\($0.utf8.count)\r\n\($0)\r\n" }.joined()).utf8)
        let junk: [UInt8] = Array("PING\r\n".utf8)
        // Where each bulk string ends in `whole`.
        var ends: [Int] = []
        var offset = "*\(words.count)\r\n".utf8.count
        for word in words {
            offset += "$\(word.utf8.count)\r\n".utf8.count + word.utf8.count + 2
            ends.append(offset)
        }
        var progress: RESP.ArrayProgress?
        var complete: RESP.Parsed?
        for end in 1...whole.count {
            // The command sits after a varying amount of input already used, as in a buffer compacted now and then.
            let before = junk.prefix(end % junk.count)
            let input = (before + whole.prefix(end))[...]
            let parsed = RESP.parse(input, from: before.count, maxBytes: 1 << 20, progress: &progress)
            guard parsed == .incomplete else {
                complete = parsed
                #expect(end == whole.count)
                break
            }
            // Whatever bulk strings have fully come are kept, and where the next one starts.
            let read = progress?.arguments.count ?? 0
            let expected = ends.firstIndex { $0 > end } ?? words.count
            #expect(read == expected, "after \(end) bytes")
        }
        #expect(progress == nil)
        #expect(complete == .command(words.map { Array($0.utf8) }, consumed: whole.count))

        // What was read is not read again: the bulk strings before the stop are taken from the
        // progress even when those bytes now say something else.
        let half = whole.count / 2
        _ = RESP.parse(whole.prefix(half), from: 0, maxBytes: 1 << 20, progress: &progress)
        let kept = progress?.arguments.count ?? 0
        #expect(kept > 100)
        var changed = whole
        let stop = progress?.offset ?? 0
        for i in 0..<stop where (97...122).contains(changed[i]) { changed[i] = UInt8(ascii: "X") }
        let resumed = RESP.parse(changed[...], from: 0, maxBytes: 1 << 20, progress: &progress)
        #expect(resumed == .command(words.map { Array($0.utf8) }, consumed: whole.count))
    }

    @Test func brokenInputIsAProtocolError() {
        for broken in ["*x\r\n", "*1\r\n+PING\r\n", "*1\r\n$-3\r\n", "*1\r\n$2\r\nhello\r\n", "*99999999\r\n"] {
            guard case .protocolError = RESP.parse(Array(broken.utf8), from: 0, maxBytes: 1 << 20) else {
                Issue.record("accepted \(broken.debugDescription)")
                continue
            }
        }
        guard case .tooLarge = RESP.parse(Array("*1\r\n$2000\r\n".utf8), from: 0, maxBytes: 1_000) else {
            Issue.record("a bulk string over the limit was not refused")
            return
        }
    }
}


@Suite struct JSONSpanTests {
    @Test func findsTopLevelMembersOnly() {
        let envelope = Data(#"{"v":1,"id":"a\"}b","ok":true,"body":{"body":[1,"}"],"x":{"y":"z"}}}"#.utf8)
        let range = JSONSpan.member("body", in: envelope)
        #expect(range.map { String(decoding: envelope[$0], as: UTF8.self) } == #"{"body":[1,"}"],"x":{"y":"z"}}"#)
        #expect(JSONSpan.member("ok", in: envelope).map { String(decoding: envelope[$0], as: UTF8.self) } == "true")
        #expect(JSONSpan.member("missing", in: envelope) == nil)
        #expect(JSONSpan.member("body", in: Data("[1]".utf8)) == nil)
        #expect(JSONSpan.member("body", in: Data(#"{"body":"#.utf8)) == nil)
    }

    @Test func membersStringsAndElements() {
        let text = #" { "a" : "x\"y\\\u00e9\ud83d\ude00\n\/" , "b":[1, {"c":[2]} ,"]"], "\u0064":null,"e":[] } "#
        for json in [Data(text.utf8), Data(("xx" + text).utf8).dropFirst(2)] {  // also a slice not starting at 0
            let members = JSONSpan.members(of: json)
            #expect(members?.map(\.key) == ["a", "b", "d", "e"])
            guard let members, members.count == 4 else { return }
            #expect(JSONSpan.string(at: members[0].value, in: json) == "x\"y\\é😀\n/")
            #expect(JSONSpan.string(at: members[1].value, in: json) == nil)
            #expect(JSONSpan.elements(at: members[1].value, in: json)?.map { String(decoding: json[$0], as: UTF8.self) } == ["1", #"{"c":[2]}"#, #""]""#])
            #expect(JSONSpan.elements(at: members[3].value, in: json)?.isEmpty == true)
            #expect(JSONSpan.elements(at: members[0].value, in: json) == nil)
        }
        #expect(JSONSpan.members(of: Data("{}".utf8))?.isEmpty == true)
        for bad in ["[1]", #"{"a":1"#, #"{"a" 1}"#, #"{"a":1,}"#, #"{a:1}"#, "", #"{"a\x":1}"#, #"{"\ud800":1}"#, "{\"a\u{1}\":1}"] {
            #expect(JSONSpan.members(of: Data(bad.utf8)) == nil, "\(bad)")
        }
    }
}
