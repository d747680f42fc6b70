import Bus
import Contracts
import Foundation
import Testing
import TestSupport

/// The hand-written place JSON against Foundation's coders: a `catalog.create` body read by
/// spans must read exactly what `JSONDecoder` reads (or be left to it), and a place written by
/// hand must be the bytes `JSONCoding.encoder` writes. Generated and hostile inputs, bounded in
/// count.
@Suite struct PlaceJSONTests {
    // MARK: Reading PlaceInput

    /// A request envelope around `body`, as the gateway sends it.
    static func envelope(_ body: String) -> Data {
        Data(#"{"v":1,"id":"t-1","type":"catalog.create","auth":{"user_id":"1","role":"admin"},"body":\#(body)}"#.utf8)
    }

    /// What the catalog's handler reads: by spans from the body the server's header scan found,
    /// else the decoder. The server checks the envelope as strict JSON first.
    static func read(_ envelope: Data) -> Result<PlaceInput, ServiceError> {
        Result { () throws(ServiceError) in
            let scanned = (try? RequestHeader.scan(envelope))??.bodyRange.map { envelope.subdata(in: $0) }
            if let scanned, let input = PlaceInput(spans: scanned) { return input }
            return try JSONCoding.decodeBody(PlaceInput.self, fromEnvelope: envelope)
        }
    }

    static func decoded(_ envelope: Data) -> Result<PlaceInput, ServiceError> {
        Result { () throws(ServiceError) in try JSONCoding.decodeBody(PlaceInput.self, fromEnvelope: envelope) }
    }

    static func spans(_ body: String) -> PlaceInput? { PlaceInput(spans: Data(body.utf8)) }

    /// The two readings agree: the same value (the encoder's bytes of it, so -0 and 0 differ)
    /// or the same error. Answers whether the spans read it.
    @discardableResult
    static func expectSameReading(_ body: String) -> Bool {
        let envelope = envelope(body)
        guard (try? StrictJSON.check(envelope)) != nil else { return false }
        let (read, decoded) = (read(envelope), decoded(envelope))
        switch (read, decoded) {
        case (.failure(let a), .failure(let b)) where a.field != b.field:
            // The decoder reads a dictionary's members in its own order, which varies: with two
            // bad external ids (or texts by language) either may be named (with its own message).
            let dictionary = ["external_ids.", "name_i18n.", "description_i18n."].first { a.field?.hasPrefix($0) == true }
            #expect(a.code == b.code && dictionary != nil && b.field?.hasPrefix(dictionary ?? "-") == true,
                    "\(a.description.debugDescription) vs \(b.description.debugDescription): \(body.debugDescription)")
        default:
            #expect(read == decoded, "\(body)")
        }
        if case .success(let a) = read, case .success(let b) = decoded {
            #expect(try! JSONCoding.encoder.encode(a) == JSONCoding.encoder.encode(b), "\(body)")
        }
        let fast = (try? RequestHeader.scan(envelope))??.bodyRange.flatMap { PlaceInput(spans: envelope.subdata(in: $0)) }
        if fast != nil, case .failure(let error) = decoded { Issue.record("read by spans, refused by the decoder (\(error)): \(body)") }
        return fast != nil
    }

    /// Strings with every kind of escape and character, as JSON text.
    static let strings = [
        #""Harbour Café""#, #""""#, #"" ""#, #""a\"b\\c\/d""#, #""\b\f\n\r\t""#, #""\u0000\u001f\u007f""#, #""\u00e9\u00E9é""#,
        #""\ud83d\ude00 😀""#, #""東京 \u6771""#, #""line\u2028sep""#, #""tab\tx""#,
        #""https://example.org/a?b=c&d""#, #""  padded  ""#, #""\uDBFF\uDFFF""#, "\"" + String(repeating: "x", count: 300) + "\"",
    ]
    /// Number literals that are fine, odd or out of range for a Double or an Int.
    static let numbers = [
        "0", "-0", "5", "-5", "48.85", "-33.8568", "151.2153", "1e2", "1E2", "1e+2", "1e-2", "-0.0", "0.1", "0.30000000000000004",
        "2.0", "2.5", "90", "-180", "1e999", "-1e999", "1e-400", "4.9e-324", "1.7976931348623157e308", "1.7976931348623159e308",
        "123456789012345678901234567890", "9223372036854775807", "9223372036854775808", "-9223372036854775809",
        "0.1000000000000000055511151231257827021181583404541015625", "3", "4", "7", "12.25",
    ]
    /// Values of the wrong type for most members.
    static let others = ["null", "true", "false", "[]", "{}", #"["x"]"#, #"{"a":1}"#]

    static func pick<T>(_ options: [T], _ rng: inout SplitMix64) -> T { options[Int(rng.next() % UInt64(options.count))] }

    /// Numbers a place's members take.
    static let plainNumbers = ["0", "-0", "5", "48.85", "-33.8568", "151.2153", "1e2", "0.1", "90", "-180", "12.25", "4.9e-324", "0e-5"]

    static func value(for key: String, _ rng: inout SplitMix64) -> String {
        let roll = rng.next() % 40
        if roll == 0 { return pick(others + numbers + strings, &rng) }
        switch key {
        case "lat", "lon", "popularity": return roll < 4 ? pick(numbers + strings, &rng) : pick(plainNumbers, &rng)
        case "price_level": return roll < 4 ? pick(numbers + strings, &rng) : String(rng.next() % 5)
        case "opening_hours":
            let count = Int(rng.next() % 3)
            return "[" + (0..<count).map { _ in period(&rng) }.joined(separator: ",") + "]"
        case "photos":
            let count = Int(rng.next() % 3)
            return "[" + (0..<count).map { _ in photo(&rng) }.joined(separator: ",") + "]"
        case "seasons":
            let count = Int(rng.next() % 3)
            return "[" + (0..<count).map { _ in season(&rng) }.joined(separator: ",") + "]"
        case "external_ids", "name_i18n", "description_i18n":
            let count = Int(rng.next() % 4)
            var members = (0..<count).map { _ in "\(pick(strings + [#""osm""#, #""wikidata""#, #""Osm""#, #""é""#], &rng)):\(roll < 3 ? pick(others + numbers, &rng) : pick(strings, &rng))" }
            if count > 0, rng.next() % 8 == 0 { members.append(members[0]) }
            return "{" + members.joined(separator: ",") + "}"
        default: return pick(strings, &rng)
        }
    }

    static func period(_ rng: inout SplitMix64) -> String {
        var members = [#""day":\#(rng.next() % 20 == 0 ? pick(numbers + others, &rng) : String(1 + rng.next() % 7))"#,
                       #""open":\#(rng.next() % 20 == 0 ? pick(strings + others, &rng) : #""09:00""#)"#,
                       #""close":\#(rng.next() % 20 == 0 ? pick(strings + others, &rng) : #""17:30""#)"#]
        switch rng.next() % 24 {
        case 0: members.removeLast()
        case 1: members.append(#""note":"x""#)
        case 2: members.append(#""day":2"#)
        case 3: members.shuffle(using: &rng)
        default: break
        }
        return rng.next() % 40 == 0 ? pick(others, &rng) : "{" + members.joined(separator: ",") + "}"
    }

    static func season(_ rng: inout SplitMix64) -> String {
        var members = [#""from":\#(rng.next() % 20 == 0 ? pick(strings + others, &rng) : #""12-28""#)"#,
                       #""to":\#(rng.next() % 20 == 0 ? pick(strings + others, &rng) : #""2027-01-02""#)"#]
        switch rng.next() % 16 {
        case 0: members.removeLast()
        case 1: members.append(#""note":"x""#)
        case 2: members.append(members[0])
        case 3: members.reverse()
        default: break
        }
        return rng.next() % 40 == 0 ? pick(others, &rng) : "{" + members.joined(separator: ",") + "}"
    }

    static func photo(_ rng: inout SplitMix64) -> String {
        var members = [#""url":\#(rng.next() % 20 == 0 ? pick(others, &rng) : pick(strings, &rng))"#]
        switch rng.next() % 18 {
        case 0: members.append(#""attribution":\#(pick(strings + ["null", "1"], &rng))"#)
        case 1: members.insert(#""attribution":\#(pick(strings, &rng))"#, at: 0)
        case 2: members.append(#""width":1"#)
        case 3: members.append(members[0])
        case 4: members.removeAll()
        default: break
        }
        return "{" + members.joined(separator: ",") + "}"
    }

    static let members = ["name", "category", "lat", "lon", "address", "phone", "website", "price_level", "description",
                          "opening_hours", "photos", "popularity", "external_ids", "timezone", "name_i18n", "description_i18n", "seasons"]

    /// A generated body: required members mostly there, optional ones sometimes, now and then
    /// null, of the wrong type, repeated, unknown, spelt with an escape, or spaced out.
    static func body(_ rng: inout SplitMix64) -> String {
        var parts: [String] = []
        for key in members {
            let required = ["name", "category", "lat", "lon"].contains(key)
            guard rng.next() % (required ? 60 : 2) != 0 else { continue }
            let name = rng.next() % 40 == 0 ? key.replacingOccurrences(of: "a", with: #"\u0061"#) : key
            let text = rng.next() % (required ? 60 : 10) == 0 ? "null" : value(for: key, &rng)
            parts.append(#""\#(name)":\#(text)"#)
            if rng.next() % 80 == 0 { parts.append(#""\#(key)":\#(value(for: key, &rng))"#) }
        }
        if rng.next() % 20 == 0 { parts.append(pick([#""id":7"#, #""version":2"#, #""extra":{"a":[1e999]}"#, #""nam":"x""#], &rng)) }
        parts.shuffle(using: &rng)
        let spaced = rng.next() % 10 == 0
        return "{" + parts.joined(separator: spaced ? " ,\n\t" : ",") + (spaced ? " }" : "}")
    }

    @Test func generatedBodiesReadAsTheDecoderReadsThem() {
        var rng = SplitMix64(seed: 41)
        var bySpans = 0, refused = 0
        for _ in 0..<4_000 {
            let body = Self.body(&rng)
            if Self.expectSameReading(body) { bySpans += 1 }
            if case .failure = Self.decoded(Self.envelope(body)) { refused += 1 }
        }
        // Neither side of the comparison may be empty: many read by spans, many refused.
        #expect(bySpans > 800, "\(bySpans) of 4000 read by spans")
        #expect(refused > 800, "\(refused) of 4000 refused")
    }

    /// Plain bodies, as clients and the protocol's examples send them, are read by spans.
    @Test(arguments: [
        #"{"name":"Bench cafe","category":"cafe","lat":48.85,"lon":2.35}"#,
        #"{"name":"Sydney Opera House","category":"attraction","lat":-33.8568,"lon":151.2153,"address":"Bennelong Point, Sydney NSW 2000","phone":"+61 2 9250 7111","website":"https://www.sydneyoperahouse.com","price_level":3,"description":"Performing arts centre on Bennelong Point.","opening_hours":[{"day":1,"open":"09:00","close":"17:00"},{"day":5,"open":"19:00","close":"01:00"}],"photos":[{"url":"https://example.org/opera.jpg","attribution":"CC BY-SA"}],"external_ids":{"osm":"way/5163069"},"popularity":99.5}"#,
        #"{"lon":2.35,"lat":-0,"category":"cafe","name":"\u00c9t\u00e9 \ud83d\ude00","address":null,"price_level":null,"popularity":1e2,"photos":[{"url":"u","attribution":null}],"timezone":"Europe/Paris","external_ids":{}}"#,
        " {\n \"n\\u0061me\" : \"x\" , \"category\" : \"park\" , \"lat\" : 0 , \"lon\" : 0 , \"opening_hours\" : [ ] } ",
    ])
    func plainBodiesAreReadBySpans(body: String) throws {
        #expect(Self.spans(body) != nil)
        #expect(Self.expectSameReading(body))
    }

    /// Hostile or odd bodies: each is either read by spans exactly as the decoder reads it or
    /// left to the decoder, whose answer (often an error) stands.
    @Test(arguments: [
        "{}", "null", "[]", #""x""#, "5", #"{"name":"x","category":"c","lat":0}"#, #"{"name":null,"category":"c","lat":0,"lon":0}"#,
        #"{"name":"x","name":"y","category":"c","lat":0,"lon":0}"#, #"{"name":"x","category":"c","lat":0,"lon":0,"lat":1}"#,
        #"{"name":"x","category":"c","lat":1e999,"lon":0}"#, #"{"name":"x","category":"c","lat":"1","lon":0}"#,
        #"{"name":"x","category":"c","lat":0,"lon":0,"price_level":2.0}"#, #"{"name":"x","category":"c","lat":0,"lon":0,"price_level":1e0}"#,
        #"{"name":"x","category":"c","lat":0,"lon":0,"price_level":-0}"#, #"{"name":"x","category":"c","lat":0,"lon":0,"price_level":9223372036854775808}"#,
        #"{"name":"x","category":"c","lat":0,"lon":0,"price_level":"3"}"#, #"{"name":"x","category":"c","lat":0,"lon":0,"popularity":-1e999}"#,
        #"{"name":"x","category":"c","lat":1e-400,"lon":-0.0}"#, #"{"name":"x","category":"c","lat":0,"lon":0,"extra":1e999}"#,
        #"{"name":"x","category":"c","lat":0,"lon":0,"opening_hours":[{"day":1,"open":"09:00","close":"17:00","day":2}]}"#,
        #"{"name":"x","category":"c","lat":0,"lon":0,"opening_hours":[{"day":1.5,"open":"09:00","close":"17:00"}]}"#,
        #"{"name":"x","category":"c","lat":0,"lon":0,"opening_hours":[null]}"#, #"{"name":"x","category":"c","lat":0,"lon":0,"opening_hours":{}}"#,
        #"{"name":"x","category":"c","lat":0,"lon":0,"photos":[{"attribution":"a"}]}"#, #"{"name":"x","category":"c","lat":0,"lon":0,"photos":[{"url":"a","url":"b"}]}"#,
        #"{"name":"x","category":"c","lat":0,"lon":0,"external_ids":{"osm":"a","osm":"b"}}"#, #"{"name":"x","category":"c","lat":0,"lon":0,"external_ids":{"osm":1}}"#,
        #"{"name":"x","category":"c","lat":0,"lon":0,"external_ids":[]}"#, #"{"name":"\u0000","category":"c","lat":0,"lon":0}"#,
        #"{"name":"x","category":"c","lat":0,"lon":0,"address":1}"#, #"{"name":"x","category":"c","lat":0,"lon":0,"phone":true}"#,
    ])
    func oddBodiesReadAsTheDecoderReadsThem(body: String) {
        Self.expectSameReading(body)
    }

    // MARK: Writing Place

    static func place(_ rng: inout SplitMix64) -> Place {
        let texts = ["Harbour Café", "", "a\"b\\c/d", "\u{8}\u{c}\n\r\t", "\u{0}\u{1}\u{1f}\u{7f}", "東京 😀", "line\u{2028}sep", "é\u{301}",
                     "https://example.org/a?b=c&d", String(repeating: "x", count: 300)]
        func text() -> String { pick(texts, &rng) }
        func maybe<T>(_ value: @autoclosure () -> T) -> T? { rng.next() % 2 == 0 ? value() : nil }
        func number() -> Double {
            switch rng.next() % 4 {
            case 0: return pick([0, -0.0, 1, 12, 1e-5, 1.5e-7, 0.1, 3.0000000000000004, 1e15, 1e16, 1e17, .leastNonzeroMagnitude, .greatestFiniteMagnitude, -2.5], &rng)
            case 1: return Double.random(in: -180...180, using: &rng)
            case 2:
                let bits = Double(bitPattern: rng.next())
                return bits.isFinite ? bits : 7
            default: return Double(Int.random(in: -1000...1000, using: &rng))
            }
        }
        let idKeys = ["osm", "wikidata", "Osm", "é", "e", "z", "a b", "\u{1}", "東", "😀", "aa", "a"]
        var ids: [String: String] = [:]
        for _ in 0..<Int(rng.next() % 5) { ids[pick(idKeys, &rng)] = text() }
        func byLanguage() -> [String: String]? {
            guard rng.next() % 2 == 0 else { return nil }
            var byTag: [String: String] = [:]
            for _ in 0..<Int(rng.next() % 4) { byTag[pick(idKeys, &rng)] = text() }
            return byTag
        }
        return Place(id: Int64(bitPattern: rng.next()) >> Int64(rng.next() % 64), name: text(), category: text(), lat: number(), lon: number(),
                     address: maybe(text()), phone: maybe(text()), website: maybe(text()),
                     priceLevel: maybe(Int(truncatingIfNeeded: Int64(bitPattern: rng.next()) >> Int64(rng.next() % 64))),
                     description: maybe(text()),
                     openingHours: (0..<Int(rng.next() % 3)).map { _ in OpeningPeriod(day: Int(rng.next() % 9) - 1, open: text(), close: text()) },
                     photos: (0..<Int(rng.next() % 3)).map { _ in Photo(url: text(), attribution: maybe(text())) },
                     popularity: number(), externalIds: ids, createdAt: "2026-11-30T18:00:00.000Z", updatedAt: text(),
                     version: Int64(bitPattern: rng.next()) >> Int64(rng.next() % 64), timezone: maybe(text()),
                     nameI18n: byLanguage(), descriptionI18n: byLanguage(),
                     seasons: rng.next() % 2 == 0 ? nil : (0..<Int(rng.next() % 3)).map { _ in Season(from: text(), to: text()) },
                     hostedPhotos: rng.next() % 2 == 0 ? nil : (0..<Int(rng.next() % 3)).map { _ in
                         HostedPhoto(id: Int64(bitPattern: rng.next()) >> Int64(rng.next() % 64), width: Int(rng.next() % 5000),
                                     height: Int(rng.next() % 5000), attribution: maybe(text()), caption: maybe(text()))
                     })
    }

    @Test func generatedPlacesAreWrittenAsTheEncoderWritesThem() throws {
        var rng = SplitMix64(seed: 42)
        for _ in 0..<3_000 {
            let place = Self.place(&rng)
            let expected = try JSONCoding.encoder.encode(place)
            #expect(try PlaceJSON.encode(place) == expected, "\(String(decoding: expected, as: UTF8.self))")
            #expect(PlaceJSON.text(place.openingHours) == String(decoding: try JSONCoding.encoder.encode(place.openingHours), as: UTF8.self))
            #expect(PlaceJSON.text(place.photos) == String(decoding: try JSONCoding.encoder.encode(place.photos), as: UTF8.self))
            if let hosted = place.hostedPhotos {
                #expect(PlaceJSON.text(hosted) == String(decoding: try JSONCoding.encoder.encode(hosted), as: UTF8.self))
            }
            #expect(PlaceJSON.text(place.externalIds) == String(decoding: try JSONCoding.encoder.encode(place.externalIds), as: UTF8.self))
        }
    }

    /// Every byte a string may hold is escaped as the encoder escapes it.
    @Test func everyByteIsEscapedAsTheEncoderEscapesIt() throws {
        for scalar in (0..<0x80).compactMap(Unicode.Scalar.init) + ["é", "\u{2028}", "😀"] {
            let text = "a\(scalar)b"
            var written: [UInt8] = []
            JSONText.append(text, to: &written)
            #expect(written == Array(try JSONCoding.encoder.encode(text)), "\(scalar.value)")
        }
    }

    @Test func aNonFiniteNumberIsRefusedAsTheEncoderRefusesIt() {
        for bad in [Double.nan, .infinity, -.infinity] {
            let place = Place(id: 1, name: "x", category: "c", lat: 0, lon: 0, popularity: bad, createdAt: "t", updatedAt: "t")
            #expect(throws: EncodingError.self) { try JSONCoding.encoder.encode(place) }
            #expect(throws: EncodingError.self) { try PlaceJSON.encode(place) }
        }
    }
}
