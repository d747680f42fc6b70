import ContentImport
import Foundation
import Testing
import TestSupport

/// Reads `text` to its end: every event, or the error that stopped it. At most one event per
/// byte and one more (an empty-element tag gives two events for its four or more bytes).
func readAll(_ text: String, limits: XMLLimits = XMLLimits(maxBytes: 1 << 20)) -> (events: [XMLEvent], error: XMLError?) {
    readAll(Array(text.utf8), limits: limits)
}

func readAll(_ bytes: [UInt8], limits: XMLLimits = XMLLimits(maxBytes: 1 << 20)) -> (events: [XMLEvent], error: XMLError?) {
    var reader = XMLReader(bytes: bytes, limits: limits)
    var events: [XMLEvent] = []
    for _ in 0...(bytes.count + 1) {
        do {
            guard let event = try reader.next() else { return (events, nil) }
            events.append(event)
        } catch {
            return (events, error)
        }
    }
    Issue.record("more events than bytes")
    return (events, nil)
}

/// The error reading `text` stops at; records an issue if it reads through.
func failure(_ text: String, limits: XMLLimits = XMLLimits(maxBytes: 1 << 20)) -> XMLError? {
    let (_, error) = readAll(text, limits: limits)
    if error == nil { Issue.record("read without an error: \(text.prefix(80))") }
    return error
}

func at(_ line: Int, _ column: Int) -> XMLPosition { XMLPosition(line: line, column: column) }

@Suite struct XMLReaderParsingTests {
    @Test func elementsAttributesTextReferencesAndCDATA() throws {
        let text = """
        <?xml version="1.0" encoding="utf-8" standalone='yes'?>
        <!-- a comment before the root -->
        <a x="1" y='it&apos;s'>hi<b/>&lt;&#65;&#x42;&#x1F600;<![CDATA[<raw> & ]]><!-- inside -->tail<?pi data?>!</a>
        <!-- after -->
        """
        let (events, error) = readAll(text)
        #expect(error == nil)
        #expect(events == [
            .start(name: "a", attributes: [XMLAttribute(name: "x", value: "1"), XMLAttribute(name: "y", value: "it's")], position: at(3, 1)),
            .text("hi", position: at(3, 24)),
            .start(name: "b", attributes: [], position: at(3, 26)),
            .end(name: "b", position: at(3, 28)),
            .text("<AB😀<raw> & tail!", position: at(3, 30)),
            .end(name: "a", position: at(3, 105)),
        ])
    }

    @Test func columnsCountCharactersNotBytes() {
        let (events, error) = readAll("<a>\nδδé<b/>😀<c/></a>")
        #expect(error == nil)
        #expect(events.contains(.start(name: "b", attributes: [], position: at(2, 4))))
        #expect(events.contains(.start(name: "c", attributes: [], position: at(2, 9))))
    }

    @Test func lineBreaksAreLineFeedsInTextAndSpacesInAttributes() {
        let (events, error) = readAll("<a v=\"1\t2\r\n3\n4\r5\">x\r\ny\rz<![CDATA[p\r\nq]]><b/>\r<c/></a>")
        #expect(error == nil)
        #expect(events[0] == .start(name: "a", attributes: [XMLAttribute(name: "v", value: "1 2 3 4 5")], position: at(1, 1)))
        // Lines: `<a v="1⇥2`, `3`, `4`, `5">x`, `y`, `z<![CDATA[p`, `q]]><b/>`, `<c/></a>`.
        #expect(events[1] == .text("x\ny\nzp\nq", position: at(4, 4)))
        #expect(events[2] == .start(name: "b", attributes: [], position: at(7, 5)))
        #expect(events.contains(.start(name: "c", attributes: [], position: at(8, 1))))
    }

    @Test func whiteSpaceBetweenElementsIsText() {
        let (events, error) = readAll("<a>\n  <b />\n</a>\n")
        #expect(error == nil)
        #expect(events == [
            .start(name: "a", attributes: [], position: at(1, 1)),
            .text("\n  ", position: at(1, 4)),
            .start(name: "b", attributes: [], position: at(2, 3)),
            .end(name: "b", position: at(2, 6)),
            .text("\n", position: at(2, 8)),
            .end(name: "a", position: at(3, 1)),
        ])
    }

    /// Text runs and columns are scanned eight bytes at a time: a special byte or a line break in
    /// any of the eight lanes is still seen.
    @Test func everyLaneOfAnEightByteStride() {
        for count in 0..<16 {
            let run = String(repeating: "x", count: count)
            #expect(readAll("<a>\(run)&lt;\(run)<b/></a>").events[1] == .text("\(run)<\(run)", position: at(1, 4)))
            #expect(readAll("<a>\(run)\r\(run)</a>").events[1] == .text("\(run)\n\(run)", position: at(1, 4)))
            #expect(readAll("<a>\(run)]\(run)</a>").events[1] == .text("\(run)]\(run)", position: at(1, 4)))
            #expect(failure("<a>\(run)]]>\(run)</a>") == XMLError(.syntax("']]>' is not allowed in text"), at: at(1, 4 + count)))
            #expect(readAll("<a>\(run)<b/>\(run)\n<c/>\(run)\r<d/></a>").events.filter {
                if case .start = $0 { true } else { false }
            } == [.start(name: "a", attributes: [], position: at(1, 1)), .start(name: "b", attributes: [], position: at(1, 4 + count)),
                  .start(name: "c", attributes: [], position: at(2, 1)), .start(name: "d", attributes: [], position: at(3, 1))])
        }
    }

    @Test func aByteOrderMarkIsSkippedAndNoColumn() {
        let (events, error) = readAll([0xEF, 0xBB, 0xBF] + Array("<a/>".utf8))
        #expect(error == nil)
        #expect(events.first == .start(name: "a", attributes: [], position: at(1, 1)))
    }

    @Test func defaultNamespaceIsInScopeUntilRedeclared() throws {
        var reader = XMLReader(bytes: Array(#"<content xmlns="urn:tourbus:content:1"><poi><x xmlns=""/></poi><y xmlns="urn:other"/></content>"#.utf8),
                               limits: XMLLimits(maxBytes: 1000))
        var seen: [String] = []
        for _ in 0..<20 {
            guard let event = try reader.next() else { break }
            switch event {
            case .start(let name, _, _): seen.append("\(name)=\(reader.namespace ?? "none")")
            case .end(let name, _): seen.append("/\(name)=\(reader.namespace ?? "none")")
            case .text: break
            }
        }
        #expect(seen == ["content=urn:tourbus:content:1", "poi=urn:tourbus:content:1", "x=none", "/x=urn:tourbus:content:1",
                         "/poi=urn:tourbus:content:1", "y=urn:other", "/y=urn:tourbus:content:1", "/content=none"])
    }

    @Test func attributesAreFoundByName() {
        let attributes = [XMLAttribute(name: "id", value: "7"), XMLAttribute(name: "lat", value: "1.5")]
        #expect(attributes["lat"] == "1.5")
        #expect(attributes["lon"] == nil)
    }

    @Test func nextGivesNilAfterTheEndAndTheSameErrorAfterAnError() throws {
        var reader = XMLReader(bytes: Array("<a/>".utf8), limits: XMLLimits(maxBytes: 10))
        _ = try reader.next()
        _ = try reader.next()
        #expect(try reader.next() == nil)
        #expect(try reader.next() == nil)
        var broken = XMLReader(bytes: Array("<a><b></a>".utf8), limits: XMLLimits(maxBytes: 100))
        var first: XMLError?
        for _ in 0..<5 {
            do { _ = try broken.next() } catch {
                first = error
                break
            }
        }
        let error = try #require(first)
        #expect(throws: error) { _ = try broken.next() }
    }
}

/// Files written to hurt: each refused with its reason and position, or read within its bound.
@Suite struct XMLReaderHostileTests {
    @Test func billionLaughsIsRefusedNotExpanded() {
        let text = """
        <?xml version="1.0"?>
        <!DOCTYPE lolz [
         <!ENTITY lol "lol">
         <!ENTITY lol1 "&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;">
         <!ENTITY lol2 "&lol1;&lol1;&lol1;&lol1;&lol1;&lol1;&lol1;&lol1;&lol1;&lol1;">
         <!ENTITY lol3 "&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;">
         <!ENTITY lol9 "&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;">
        ]>
        <lolz>&lol9;</lolz>
        """
        #expect(failure(text) == XMLError(.declarationRefused, at: at(2, 1)))
    }

    @Test func externalEntitiesAreRefusedWithTheirDeclarationAndUndefinedWithout() {
        let declared = #"<!DOCTYPE foo [ <!ENTITY xxe SYSTEM "file:///etc/passwd"> ]><foo>&xxe;</foo>"#
        #expect(failure(declared) == XMLError(.declarationRefused, at: at(1, 1)))
        #expect(failure("<foo>\n  &xxe;</foo>") == XMLError(.undefinedEntity("xxe"), at: at(2, 3)))
        #expect(failure("<foo>&nbsp;</foo>")?.reason == .undefinedEntity("nbsp"))
        #expect(failure("<foo a='&xxe;'/>")?.reason == .undefinedEntity("xxe"))
    }

    @Test func everyDeclarationIsRefusedInsideTheRootToo() {
        #expect(failure("<!DOCTYPE html><html/>") == XMLError(.declarationRefused, at: at(1, 1)))
        #expect(failure("<a>\n<!ENTITY x \"y\"></a>") == XMLError(.declarationRefused, at: at(2, 1)))
        #expect(failure("<a/>\n<!ELEMENT a ANY>") == XMLError(.declarationRefused, at: at(2, 1)))
    }

    @Test func aDocumentOverTheLimitIsRefusedBeforeReading() {
        // 100 MB of zero bytes (not even XML) against a limit of 50 MB: refused at once, before
        // the first byte is looked at (a read would stop at the first NUL, at 1:1 too, but as a
        // forbidden character).
        let claimed = [UInt8](repeating: 0, count: 100 << 20)
        let start = ContinuousClock.now
        #expect(readAll(claimed, limits: XMLLimits(maxBytes: 50 << 20)).error == XMLError(.tooLarge(bytes: 100 << 20, limit: 50 << 20), at: at(1, 1)))
        #expect(ContinuousClock.now - start < .seconds(1))
        let document = Array("<a>1234</a>".utf8)
        #expect(readAll(document, limits: XMLLimits(maxBytes: document.count)).error == nil)
        #expect(readAll(document, limits: XMLLimits(maxBytes: document.count - 1)).error?.reason == .tooLarge(bytes: document.count, limit: document.count - 1))
    }

    @Test func nestingTenThousandDeepStopsAtTheLimit() {
        let deep = String(repeating: "<a>", count: 10_000) + String(repeating: "</a>", count: 10_000)
        // The 33rd <a> starts at column 3 * 32 + 1.
        #expect(failure(deep) == XMLError(.tooDeep(limit: 32), at: at(1, 97)))
        let limit = String(repeating: "<a>", count: 32) + String(repeating: "</a>", count: 32)
        #expect(readAll(limit).error == nil)
        #expect(failure(limit, limits: XMLLimits(maxBytes: 1000, maxDepth: 31))?.reason == .tooDeep(limit: 31))
    }

    @Test func aHugeAttributeValueStopsAtTheLimitCountedInBytesAfterReferences() {
        let limits = XMLLimits(maxBytes: 1 << 20, maxAttributeValueBytes: 1000)
        #expect(readAll("<a v='\(String(repeating: "x", count: 1000))'/>", limits: limits).error == nil)
        #expect(failure("<a v='\(String(repeating: "x", count: 1001))'/>", limits: limits) == XMLError(.attributeValueTooLong(limit: 1000), at: at(1, 6)))
        // 500 two-byte characters are 1000 bytes; one more is over, though far below 1000 characters.
        #expect(readAll("<a v='\(String(repeating: "é", count: 500))'/>", limits: limits).error == nil)
        #expect(failure("<a v='\(String(repeating: "é", count: 501))'/>", limits: limits)?.reason == .attributeValueTooLong(limit: 1000))
        // References count as what they stand for: 1001 ampersands from 5005 bytes.
        #expect(failure("<a v='\(String(repeating: "&amp;", count: 1001))'/>", limits: limits)?.reason == .attributeValueTooLong(limit: 1000))
        #expect(readAll("<a v='\(String(repeating: "&amp;", count: 1000))'/>", limits: limits).error == nil)
    }

    @Test func manyAttributesStopAtTheLimit() {
        func tag(_ count: Int) -> String { "<a " + (0..<count).map { "a\($0)=''" }.joined(separator: " ") + "/>" }
        #expect(readAll(tag(32)).error == nil)
        #expect(failure(tag(33)) == XMLError(.tooManyAttributes(limit: 32), at: at(1, 1)))
        // Where a caller allows thousands, a duplicate is still found (through a set), quickly.
        let limits = XMLLimits(maxBytes: 1 << 20, maxAttributes: 20_000)
        let start = ContinuousClock.now
        #expect(readAll(tag(10_000), limits: limits).error == nil)
        #expect(failure(String(tag(10_000).dropLast(2)) + " a9999=''/>", limits: limits)?.reason == .duplicateAttribute("a9999"))
        #expect(ContinuousClock.now - start < .seconds(5))
    }

    @Test func aHugeNameStopsAtTheLimit() {
        #expect(readAll("<\(String(repeating: "n", count: 256))/>").error == nil)
        #expect(failure("<a>\n<\(String(repeating: "n", count: 257))/></a>") == XMLError(.nameTooLong(limit: 256), at: at(2, 2)))
        #expect(failure("<a \(String(repeating: "n", count: 300))='1'/>")?.reason == .nameTooLong(limit: 256))
        #expect(failure("<a>&\(String(repeating: "n", count: 300));</a>")?.reason == .nameTooLong(limit: 256))
    }

    @Test func aHugeTextStopsAtTheLimitWithItsCDATAAndReferences() {
        let limits = XMLLimits(maxBytes: 1 << 20, maxTextBytes: 100)
        #expect(readAll("<a>\(String(repeating: "x", count: 100))</a>", limits: limits).error == nil)
        #expect(failure("<a>\n\(String(repeating: "x", count: 101))</a>", limits: limits) == XMLError(.textTooLong(limit: 100), at: at(1, 4)))
        // 50 + 50 across a comment and a CDATA section is 100; one reference more is over.
        let split = String(repeating: "x", count: 50) + "<!-- -->" + "<![CDATA[" + String(repeating: "y", count: 50) + "]]>"
        #expect(readAll("<a>\(split)</a>", limits: limits).error == nil)
        #expect(failure("<a>\(split)&lt;</a>", limits: limits)?.reason == .textTooLong(limit: 100))
        // Each text node has its own budget.
        #expect(readAll("<a>\(String(repeating: "x", count: 100))<b/>\(String(repeating: "x", count: 100))</a>", limits: limits).error == nil)
    }
}

@Suite struct XMLReaderErrorTests {
    @Test func tagsThatDoNotMatchOrNeverClose() {
        #expect(failure("<a>\n  <b></a>") == XMLError(.mismatchedEndTag(expected: "b", found: "a", opened: at(2, 3)), at: at(2, 6)))
        #expect(failure("<a>\n <b>text") == XMLError(.unclosedElement("b"), at: at(2, 2)))
        #expect(failure("</a>") == XMLError(.unexpectedEndTag("a"), at: at(1, 1)))
        #expect(failure("<a/></a>") == XMLError(.unexpectedEndTag("a"), at: at(1, 5)))
        #expect(failure("<a><b></bb></a>")?.reason == .mismatchedEndTag(expected: "b", found: "bb", opened: at(1, 4)))
    }

    @Test func bytesThatAreNotUTF8OrCharactersXMLForbids() {
        let cases: [([UInt8], XMLError)] = [
            (Array("<a>\n".utf8) + [0xFF] + Array("</a>".utf8), XMLError(.invalidUTF8, at: at(2, 1))),
            (Array("<a>é".utf8) + [0xC0, 0x80] + Array("</a>".utf8), XMLError(.invalidUTF8, at: at(1, 5))),  // overlong NUL
            (Array("<a>".utf8) + [0xED, 0xA0, 0x80] + Array("</a>".utf8), XMLError(.invalidUTF8, at: at(1, 4))),  // a surrogate
            (Array("<a>".utf8) + [0xF4, 0x90, 0x80, 0x80] + Array("</a>".utf8), XMLError(.invalidUTF8, at: at(1, 4))),  // above U+10FFFF
            (Array("<a>".utf8) + [0xE2, 0x82], XMLError(.invalidUTF8, at: at(1, 4))),  // cut short
            (Array("<a>\u{1}</a>".utf8), XMLError(.forbiddenCharacter(1), at: at(1, 4))),
            (Array("<a b='\u{0}'/>".utf8), XMLError(.forbiddenCharacter(0), at: at(1, 7))),
            (Array("<a>\u{FFFF}</a>".utf8), XMLError(.forbiddenCharacter(0xFFFF), at: at(1, 4))),
            ([0xFF, 0xFE] + Array("<\0a\0/\0>\0".utf8), XMLError(.unsupportedEncoding("UTF-16"), at: at(1, 1))),
        ]
        for (bytes, expected) in cases {
            #expect(readAll(bytes).error == expected, "\(bytes)")
        }
        // Eight-byte strides do not skip a bad byte in any lane.
        for lane in 0..<8 {
            let bytes = Array("<a>".utf8) + [UInt8](repeating: UInt8(ascii: "x"), count: 13 + lane) + [0x07] + Array("xxxxxxxxxxx</a>".utf8)
            #expect(readAll(bytes).error == XMLError(.forbiddenCharacter(7), at: at(1, 17 + lane)))
        }
    }

    @Test func characterReferences() {
        #expect(readAll("<a>&#9;&#xA;&#13;&#x10FFFF;&#x20;</a>").events[1] == .text("\t\n\r\u{10FFFF} ", position: at(1, 4)))
        for bad in ["&#0;", "&#x1;", "&#xD800;", "&#xFFFE;", "&#x110000;", "&#;", "&#x;", "&#65", "&#99999999999999999999;", "&#x-1;", "&#X41;"] {
            #expect(failure("<a>\n  \(bad)</a>") == XMLError(.invalidCharacterReference, at: at(2, 3)), "\(bad)")
        }
    }

    @Test func duplicateAttributesAndSyntax() {
        #expect(failure("<a x=\"1\" x='2'/>") == XMLError(.duplicateAttribute("x"), at: at(1, 10)))
        #expect(readAll("<a x='1' X='2' a:x='3'/>").error == nil)
        let syntax: [(String, XMLPosition)] = [
            ("<a>fish & chips</a>", at(1, 9)),
            ("<a v=\"<\"/>", at(1, 7)),
            ("<a v=1/>", at(1, 6)),
            ("<a v/>", at(1, 5)),
            ("<a x='1'y='2'/>", at(1, 9)),
            ("<a>]]></a>", at(1, 4)),
            ("<a><!-- a -- b --></a>", at(1, 11)),
            ("<a><!-- never closed", at(1, 4)),
            ("<a><![CDATA[ never closed", at(1, 4)),
            ("<a><?pi never closed", at(1, 4)),
            ("<a/><?xml version='1.0'?>", at(1, 5)),
            ("<?xml version='1.0'?><a/><?XmL?>", at(1, 26)),
            ("<?xml encoding='UTF-8'?><a/>", at(1, 1)),
            ("<a v='1", at(1, 6)),
            ("<a", at(1, 1)),
            ("<1a/>", at(1, 2)),
            ("<a></ a>", at(1, 6)),
            ("<a>&#65;&</a>", at(1, 9)),
        ]
        for (text, position) in syntax {
            let error = failure(text)
            guard case .syntax = error?.reason else {
                Issue.record("\(text): \(String(describing: error))")
                continue
            }
            #expect(error?.position == position, "\(text): \(String(describing: error))")
        }
    }

    @Test func outsideTheRoot() {
        #expect(failure("hello<a/>") == XMLError(.textOutsideRoot, at: at(1, 1)))
        #expect(failure("<a/>\njunk") == XMLError(.textOutsideRoot, at: at(2, 1)))
        #expect(failure("<a/><![CDATA[x]]>") == XMLError(.textOutsideRoot, at: at(1, 5)))
        #expect(failure("<a/>\n<b/>") == XMLError(.secondRootElement("b"), at: at(2, 1)))
        #expect(failure("") == XMLError(.noRootElement, at: at(1, 1)))
        #expect(failure("<?xml version='1.0'?>\n<!-- only -->\n") == XMLError(.noRootElement, at: at(3, 1)))
    }

    @Test func encodingsOtherThanUTF8AreRefused() {
        #expect(failure("<?xml version=\"1.0\" encoding=\"ISO-8859-1\"?><a/>") == XMLError(.unsupportedEncoding("ISO-8859-1"), at: at(1, 31)))
        // Said before the first byte that is not UTF-8 (é in Latin-1) would be refused.
        #expect(readAll(Array("<?xml version='1.0' encoding='latin1'?>\n<a>caf".utf8) + [0xE9] + Array("</a>".utf8)).error
                == XMLError(.unsupportedEncoding("latin1"), at: at(1, 31)))
        #expect(readAll(Array("<?xml version='1.0' encoding='\u{1}x'?><a/>".utf8)).error?.reason == .unsupportedEncoding("(not a name)"))
    }

    @Test func messagesSayWhereAndWhat() {
        let error = failure("<a>\n  <b></a>")
        #expect(error?.description == "line 2, column 6: end tag </a> does not close <b> (opened at line 2, column 3)")
        #expect(failure("<!DOCTYPE x><x/>")?.description == "line 1, column 1: document type and entity declarations (<!DOCTYPE, <!ENTITY) are refused")
        #expect(failure("<a>\u{1}</a>")?.message == "character U+0001 is not allowed in XML")
    }
}

/// Mutated documents: whatever the bytes, the reader ends with nil or an `XMLError` whose position
/// lies inside the text, within its bounds, and never crashes or loops.
@Suite struct XMLReaderFuzzTests {

    static let seeds: [String] = [
        #"<?xml version="1.0" encoding="UTF-8"?><content xmlns="urn:tourbus:content:1" source="s"><poi id="p1" category="museum" lat="-33.85" lon="151.2"><name lang="en">Caf&#xE9; &amp; Co</name><photo url="http://x/y.jpg"/></poi></content>"#,
        "<a x='1' y=\"2\">t<![CDATA[c]]><!--c--><?p q?>&#x41;&lt;<b/>\r\n<c>é😀</c></a>",
        "<osm><node id='1' lat='1' lon='2'><tag k='name' v='A &amp; B'/></node><way id='2'><nd ref='1'/></way></osm>",
    ]
    static let pieces: [[UInt8]] = ["<", ">", "&", ";", "&#", "&#x", "]]>", "<!DOCTYPE a>", "<!--", "-->", "<![CDATA[", "</a>", "<a>",
                                    "\"", "'", "=", "/>", "<?", "?>", "\r", "\u{0}", "é", "xmlns=''", "&amp;"].map { Array($0.utf8) }
        + [[0xFF], [0xC3], [0xED, 0xA0, 0x80], [0xEF, 0xBB, 0xBF]]

    @Test func mutatedInputsEndInAnEventsEndOrAPositionedError() {
        var generator = SplitMix64(seed: 15)
        let limits = XMLLimits(maxBytes: 4096, maxDepth: 8, maxAttributes: 4, maxNameBytes: 16, maxAttributeValueBytes: 32, maxTextBytes: 64)
        let deadline = ContinuousClock.now + .seconds(10)
        var refused = 0, read = 0
        for round in 0..<3000 where ContinuousClock.now < deadline {
            var bytes = Array(Self.seeds[round % Self.seeds.count].utf8)
            for _ in 0..<Int.random(in: 1...3, using: &generator) {
                let index = bytes.isEmpty ? 0 : Int.random(in: 0..<bytes.count, using: &generator)
                switch Int.random(in: 0..<5, using: &generator) {
                case 0 where !bytes.isEmpty: bytes[index] = UInt8.random(in: 0...255, using: &generator)
                case 1: bytes.insert(contentsOf: Self.pieces.randomElement(using: &generator) ?? [], at: index)
                case 2 where !bytes.isEmpty: bytes.removeSubrange(index..<min(bytes.count, index + Int.random(in: 1...8, using: &generator)))
                case 3 where !bytes.isEmpty:
                    let end = min(bytes.count, index + Int.random(in: 1...40, using: &generator))
                    bytes.insert(contentsOf: bytes[index..<end], at: index)
                default: bytes.insert(UInt8.random(in: 0...127, using: &generator), at: index)
                }
            }
            let (events, error) = readAll(bytes, limits: limits)
            if let error {
                refused += 1
                let lines = bytes.split(separator: UInt8(ascii: "\n"), omittingEmptySubsequences: false).count
                #expect(error.line >= 1 && error.line <= lines + bytes.filter { $0 == 0x0D }.count && error.column >= 1 && error.column <= bytes.count + 1,
                        "\(error) in \(bytes)")
            } else {
                read += 1
                var depth = 0
                for event in events {
                    switch event {
                    case .start: depth += 1
                    case .end: depth -= 1
                    case .text(let text, _): #expect(!text.isEmpty && text.utf8.count <= 64)
                    }
                    #expect(depth >= 0 && depth <= 8)
                }
                #expect(depth == 0)
            }
        }
        // Both kinds of outcome happen, so neither check above is idle.
        #expect(refused > 100 && read > 100, "refused \(refused), read \(read)")
    }
}
