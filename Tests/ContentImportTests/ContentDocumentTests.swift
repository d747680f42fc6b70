import ContentImport
import Foundation
import Testing

/// `body` inside a `<content>` root of source `test`, the root on line 1 so lines count from the body's first as 2.
func content(_ body: String, source: String = "test") -> [UInt8] {
    Array("<content xmlns=\"urn:tourbus:content:1\" source=\"\(source)\">\n\(body)\n</content>\n".utf8)
}

/// The errors `bytes` is refused with, as (kind, line, column); records an issue if it is read.
func refusal(_ bytes: [UInt8], limits: ContentLimits = ContentLimits()) -> [(ContentError.Kind, Int, Int)] {
    do {
        let document = try ContentDocument.parse(bytes, limits: limits)
        Issue.record("read: \(document)")
        return []
    } catch {
        return error.errors.map { ($0.kind, $0.line, $0.column) }
    }
}

func same(_ a: [(ContentError.Kind, Int, Int)], _ b: [(ContentError.Kind, Int, Int)]) -> Bool {
    a.count == b.count && zip(a, b).allSatisfy { $0.0 == $1.0 && $0.1 == $1.1 && $0.2 == $1.2 }
}

let minimalPOI = #"<poi id="p" category="museum" lat="1" lon="2"><name lang="en">P</name></poi>"#

@Suite struct ContentDocumentTests {
    @Test func everyFieldOfPOIsAndToursWithPositions() throws {
        let bytes = content("""
          <poi id="opera" category="attraction" lat="-33.8568" lon="151.2153">
            <name lang="ru">Сиднейский оперный театр</name>
            <name lang="en">  Sydney Opera House
            </name>
            <description lang="en">Sails on the harbour &amp; a <![CDATA[<stage>]]>.</description>
            <address>Bennelong Point, Sydney NSW 2000</address>
            <phone>+61 2 9250 7111</phone>
            <website>https://www.sydneyoperahouse.com/</website>
            <price>3</price>
            <photo url="https://example.org/a.jpg" attribution="A. Photographer, CC BY 4.0"/>
            <photo url="http://example.org/b.jpg"/>
          </poi>
          <tour id="harbour"><name lang="en">Harbour walk</name><description lang="de">Am Hafen</description>
            <stop ref="opera"/><stop ref="bridge"/><stop ref="opera"/>
            <map file="Harbour.JPEG"><point x="0" y="0" lat="-33.85" lon="151.2"/><point x="1024.5" y="0" lat="-33.85" lon="151.23"/>
              <point x="0" y="768" lat="-33.87" lon="-0"/></map>
          </tour>
          <poi id="bridge" category="attraction" lat="-33.8523" lon="151.2108"><name lang="en">Harbour Bridge</name></poi>
        """, source: "sydney-walks")
        let document = try ContentDocument.parse(bytes)
        #expect(document.source == "sydney-walks")
        #expect(document.pois == [
            ContentPOI(id: "opera", category: "attraction", lat: -33.8568, lon: 151.2153,
                       names: [LocalizedText(lang: "ru", text: "Сиднейский оперный театр", position: at(3, 5)),
                               LocalizedText(lang: "en", text: "Sydney Opera House", position: at(4, 5))],
                       descriptions: [LocalizedText(lang: "en", text: "Sails on the harbour & a <stage>.", position: at(6, 5))],
                       address: "Bennelong Point, Sydney NSW 2000", phone: "+61 2 9250 7111", website: "https://www.sydneyoperahouse.com/", price: 3,
                       photos: [ContentPhoto(url: "https://example.org/a.jpg", attribution: "A. Photographer, CC BY 4.0", position: at(11, 5)),
                                ContentPhoto(url: "http://example.org/b.jpg", attribution: nil, position: at(12, 5))],
                       position: at(2, 3)),
            ContentPOI(id: "bridge", category: "attraction", lat: -33.8523, lon: 151.2108,
                       names: [LocalizedText(lang: "en", text: "Harbour Bridge", position: at(19, 72))], position: at(19, 3)),
        ])
        #expect(document.pois[0].names.preferred == "Sydney Opera House")
        #expect(document.tours == [
            ContentTour(id: "harbour", names: [LocalizedText(lang: "en", text: "Harbour walk", position: at(14, 22))],
                        descriptions: [LocalizedText(lang: "de", text: "Am Hafen", position: at(14, 57))],
                        stops: [ContentStop(ref: "opera", position: at(15, 5)), ContentStop(ref: "bridge", position: at(15, 24)),
                                ContentStop(ref: "opera", position: at(15, 44))],
                        map: ContentMap(file: "Harbour.JPEG", points: [
                            ContentMapPoint(x: 0, y: 0, lat: -33.85, lon: 151.2, position: at(16, 30)),
                            ContentMapPoint(x: 1024.5, y: 0, lat: -33.85, lon: 151.23, position: at(16, 75)),
                            ContentMapPoint(x: 0, y: 768, lat: -33.87, lon: 0, position: at(17, 7)),
                        ], position: at(16, 5)),
                        position: at(14, 3)),
        ])
        #expect(document.unresolvedStops.isEmpty)
        #expect(document.tours[0].map?.points[2].lon.sign == .plus)
    }

    @Test func stopsNamingNoPOIOfTheFileAreListedNotRefused() throws {
        let document = try ContentDocument.parse(content("""
        \(minimalPOI)
        <tour id="t"><name lang="en">T</name><stop ref="p"/><stop ref="old-7"/>
          <stop ref="old-8"/></tour>
        """))
        #expect(document.unresolvedStops == [UnresolvedStop(tour: "t", ref: "old-7", position: at(3, 53)), UnresolvedStop(tour: "t", ref: "old-8", position: at(4, 3))])
        #expect(document.tours[0].stops.map(\.ref) == ["p", "old-7", "old-8"])
    }

    /// XML's white space (space, tab, line feed, carriage return) around a text goes, whatever
    /// characters are at its ends; other spaces stay.
    @Test func textsAreTrimmedOfWhiteSpaceOnly() throws {
        let document = try ContentDocument.parse(content("""
        <poi id="p" category="m" lat="1" lon="2"><name lang="en">\t Cafe\u{301}\r\n </name><name lang="fr">\u{A0}Été\u{A0}</name><name lang="de">ü</name></poi>
        """))
        #expect(document.pois[0].names.map(\.text) == ["Cafe\u{301}", "\u{A0}Été\u{A0}", "ü"])
    }

    @Test func anEmptyFileOfASourceIsRead() throws {
        #expect(try ContentDocument.parse(content("")) == ContentDocument(source: "test", pois: [], tours: [], unresolvedStops: []))
    }

    @Test func everyErrorIsListedWithItsLineAndColumn() {
        let bytes = content("""
        <poi id="a" category="museum" lat="91" lon="abc" colour="red"><name lang="en">A</name><price>5</price></poi>
        <poi category="museum" lat="1" lon="2"><name lang="en">No id</name><name lang="EN">Again</name></poi>
        <poi id="a" category="museum" lat="1" lon="2"><name lang="en">Second a</name></poi>
        <poi id="b" category="museum" lat="1" lon="2">stray text<rating>5</rating></poi>
        <poi id="c" category="two words" lat="-90.0001" lon="180"><name lang="english!">C</name><website>ftp://x</website>
          <address>  </address><address>again</address><photo url="https://x/p.jpg" alt="x"/></poi>
        <tour id="t"><name lang="en">T</name><map file="../up.jpg"><point x="-1" y="0" lat="0" lon="0"/><point x="1" y="1" lat="1" lon="1"/></map></tour>
        <tour id="u"><name lang="en">U</name><stop/><map file="u.png"><point x="0" y="0" lat="0" lon="0"/></map><map file="again.jpg"/></tour>
        <tour id="v"><stop ref="a"/></tour>
        <other xmlns="urn:else"/>
        """)
        let expected: [(ContentError.Kind, Int, Int)] = [
            (.unknownAttribute(element: "poi", attribute: "colour"), 2, 1),
            (.invalidValue(field: "lat", why: "must be a decimal number from -90 to 90"), 2, 1),
            (.invalidValue(field: "lon", why: "must be a decimal number from -180 to 180"), 2, 1),
            (.invalidValue(field: "price", why: "must be a whole number from 0 to 4"), 2, 87),
            (.missingAttribute(element: "poi", attribute: "id"), 3, 1),
            (.duplicateLanguage(element: "name", lang: "EN", first: at(3, 40)), 3, 68),
            (.duplicateID(element: "poi", id: "a", first: at(2, 1)), 4, 1),
            (.missingElement(element: "poi", child: "name"), 5, 1),
            (.unexpectedText(element: "poi"), 5, 47),
            (.unknownElement(name: "rating", parent: "poi"), 5, 57),
            (.invalidValue(field: "category", why: "must be 1 to 64 bytes without white space"), 6, 1),
            (.invalidValue(field: "lat", why: "must be a decimal number from -90 to 90"), 6, 1),
            (.invalidValue(field: "lang", why: "must be a language tag such as en or pt-BR"), 6, 59),
            (.invalidValue(field: "website", why: "must be an http:// or https:// URL without white space"), 6, 89),
            (.invalidValue(field: "address", why: "must not be empty"), 7, 3),
            (.duplicateElement(element: "poi", child: "address"), 7, 24),
            (.unknownAttribute(element: "photo", attribute: "alt"), 7, 48),
            (.missingElement(element: "tour", child: "stop"), 8, 1),
            (.invalidValue(field: "file", why: "must be a file name without a directory, ending in .jpg or .jpeg, at most 255 bytes"), 8, 38),
            (.tooFewMapPoints(count: 2), 8, 38),
            (.invalidValue(field: "x", why: "must be a decimal number of pixels from 0 to 1000000"), 8, 60),
            (.missingAttribute(element: "stop", attribute: "ref"), 9, 38),
            (.invalidValue(field: "file", why: "must be a file name without a directory, ending in .jpg or .jpeg, at most 255 bytes"), 9, 45),
            (.tooFewMapPoints(count: 1), 9, 45),
            (.duplicateElement(element: "tour", child: "map"), 9, 105),
            (.missingElement(element: "tour", child: "name"), 10, 1),
            (.unknownElement(name: "other", parent: "content"), 11, 1),
        ]
        let found = refusal(bytes)
        #expect(same(found, expected), "\(found.map { "\($0.0) \($0.1):\($0.2)" }.joined(separator: "\n"))")
    }

    @Test func theRootMustBeContentInItsNamespaceWithASource() {
        #expect(same(refusal(Array("<content source='s'/>".utf8)), [(.wrongRoot, 1, 1)]))
        #expect(same(refusal(Array("<other xmlns='urn:tourbus:content:1' source='s'/>".utf8)), [(.wrongRoot, 1, 1)]))
        #expect(same(refusal(Array("<content xmlns='urn:tourbus:content:1'/>".utf8)), [(.missingAttribute(element: "content", attribute: "source"), 1, 1)]))
        #expect(same(refusal(content("", source: String(repeating: "s", count: 51))),
                     [(.invalidValue(field: "source", why: "must be 1 to 50 bytes without white space"), 1, 1)]))
    }

    @Test func anXMLErrorEndsTheListAfterWhatCameBefore() {
        let bytes = content("<poi id='a' category='m' lat='1' lon='2' x='1'><name lang='en'>A</name></poi>\n<poi></tour>")
        #expect(same(refusal(bytes), [
            (.unknownAttribute(element: "poi", attribute: "x"), 2, 1),
            (.missingAttribute(element: "poi", attribute: "id"), 3, 1),
            (.missingAttribute(element: "poi", attribute: "category"), 3, 1),
            (.missingAttribute(element: "poi", attribute: "lat"), 3, 1),
            (.missingAttribute(element: "poi", attribute: "lon"), 3, 1),
            (.xml(.mismatchedEndTag(expected: "poi", found: "tour", opened: at(3, 1))), 3, 6),
        ]))
        #expect(same(refusal(content("") + Array("<x/>".utf8)), [(.xml(.secondRootElement("x")), 4, 1)]))
    }

    @Test func hostileFilesAreRefusedThroughTheDocumentToo() {
        let laughs = "<?xml version='1.0'?>\n<!DOCTYPE c [<!ENTITY a 'aaaaaaaaaa'><!ENTITY b '&a;&a;&a;&a;&a;&a;&a;&a;&a;&a;'>]>\n<content xmlns='urn:tourbus:content:1' source='s'>&b;</content>"
        #expect(same(refusal(Array(laughs.utf8)), [(.xml(.declarationRefused), 2, 1)]))
        let limits = ContentLimits(xml: XMLLimits(maxBytes: 100))
        #expect(same(refusal(content(String(repeating: " ", count: 100)), limits: limits), [(.xml(.tooLarge(bytes: 166, limit: 100)), 1, 1)]))
        let deep = content(String(repeating: "<poi>", count: 10_000))
        let missing = ["id", "category", "lat", "lon"].map { (ContentError.Kind.missingAttribute(element: "poi", attribute: $0), 2, 1) }
        #expect(same(refusal(deep), missing + [(.unknownElement(name: "poi", parent: "poi"), 2, 6), (.xml(.tooDeep(limit: 8)), 2, 36)]))
    }

    @Test func countsAreBounded() {
        let limits = ContentLimits(maxPOIs: 3, maxTours: 2, maxStopsPerTour: 4, maxNamesPerElement: 2, maxPhotosPerPOI: 2, maxMapPoints: 4)
        let pois = (0..<5).map { #"<poi id="p\#($0)" category="m" lat="1" lon="2"><name lang="en">P</name></poi>"# }.joined(separator: "\n")
        #expect(same(refusal(content(pois), limits: limits), [(.tooMany(what: "POIs in a file", limit: 3), 5, 1)]))
        let tours = (0..<3).map { #"<tour id="t\#($0)"><name lang="en">T</name><stop ref="p"/></tour>"# }.joined(separator: "\n")
        #expect(same(refusal(content(tours), limits: limits), [(.tooMany(what: "tours in a file", limit: 2), 4, 1)]))
        let stops = #"<tour id="t"><name lang="en">T</name>"# + String(repeating: #"<stop ref="p"/>"#, count: 6) + "</tour>"
        #expect(same(refusal(content(stops), limits: limits), [(.tooMany(what: "stops in one <tour>", limit: 4), 2, 98)]))
        let names = #"<poi id="p" category="m" lat="1" lon="2"><name lang="en">A</name><name lang="de">B</name><name lang="fr">C</name><name lang="it">D</name></poi>"#
        #expect(same(refusal(content(names), limits: limits), [(.tooMany(what: "<name> elements in one <poi>", limit: 2), 2, 90)]))
        let photos = #"<poi id="p" category="m" lat="1" lon="2"><name lang="en">A</name>"# + String(repeating: #"<photo url="http://x/y"/>"#, count: 4) + "</poi>"
        #expect(same(refusal(content(photos), limits: limits), [(.tooMany(what: "photos in one <poi>", limit: 2), 2, 116)]))
        let points = #"<tour id="t"><name lang="en">T</name><stop ref="p"/><map file="m.jpg">"# + String(repeating: #"<point x="1" y="1" lat="1" lon="1"/>"#, count: 6) + "</map></tour>"
        #expect(same(refusal(content(points), limits: limits), [(.tooMany(what: "points in one <map>", limit: 4), 2, 215)]))
        // The limits in force by default.
        let defaults = ContentLimits()
        #expect(defaults.maxStopsPerTour == 500 && defaults.maxNamesPerElement == 50 && defaults.maxPOIs >= 100_000)
        let many = #"<tour id="t"><name lang="en">T</name>"# + String(repeating: #"<stop ref="p"/>"#, count: 501) + "</tour>"
        #expect(refusal(content(many)).map(\.0) == [.tooMany(what: "stops in one <tour>", limit: 500)])
    }

    @Test func fieldsAreBoundedInBytes() {
        let long = String(repeating: "é", count: 401)  // 802 bytes, 401 characters
        #expect(same(refusal(content(#"<poi id="p" category="m" lat="1" lon="2"><name lang="en">\#(long)</name></poi>"#)),
                     [(.tooLong(field: "name", limit: 800), 2, 42)]))
        let id = String(repeating: "i", count: 201)
        #expect(refusal(content(#"<poi id="\#(id)" category="m" lat="1" lon="2"><name lang="en">P</name></poi>"#)).map(\.0)
                == [.invalidValue(field: "id", why: "must be 1 to 200 bytes without white space")])
    }

    @Test func theErrorListIsBounded() {
        let bad = (0..<30).map { #"<poi id="p\#($0)" category="m" lat="100" lon="2"><name lang="en">P</name></poi>"# }.joined(separator: "\n")
        let found = refusal(content(bad), limits: ContentLimits(maxErrors: 5))
        #expect(found.count == 6)
        #expect(found.last?.0 == .tooManyErrors(limit: 5))
        #expect(found.dropLast().allSatisfy { $0.0 == .invalidValue(field: "lat", why: "must be a decimal number from -90 to 90") })
    }

    @Test func numbersFollowTheirGrammar() {
        // Over the bound as written, though a Double rounds it to 90.
        let justOver = ["90.0000000000000001", "-90.00000000000000001", "0090.1", "91", "100000000000000000000"]
        for bad in ["+1", ".5", "1.", "1e2", "NaN", "inf", "0x10", " 1", "1 ", "--1", "", String(repeating: "1", count: 33)] + justOver {
            #expect(refusal(content(#"<poi id="p" category="m" lat="\#(bad)" lon="2"><name lang="en">P</name></poi>"#)).map(\.0)
                    == [.invalidValue(field: "lat", why: "must be a decimal number from -90 to 90")], "\(bad)")
        }
        for good in ["0", "-0", "90", "-90.000", "12.345678901234", "0090.000", "89.99999999999999999"] {
            #expect((try? ContentDocument.parse(content(#"<poi id="p" category="m" lat="\#(good)" lon="2"><name lang="en">P</name></poi>"#))) != nil, "\(good)")
        }
    }
}
