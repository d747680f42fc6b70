import Bus
import Contracts
import Foundation
import Geo
import Testing
import TestSupport

/// Every bound of `pins.*`, from the side of someone who sends what the rules refuse.
@Suite(.serialized) struct PinLimitTests {
    /// A JSON string literal of `text`.
    static func literal(_ text: String) -> String { String(decoding: try! JSONEncoder().encode(text), as: UTF8.self) }

    @Test func aUserKeepsAtMost1000Pins() throws {
        let f = try PinFixture()
        var last: Int64 = 0
        for i in 0..<1_000 { last = try f.add(#"{"lat":\#(-33 - Double(i) * 1e-4),"lon":151}"#, as: 2).id }
        let refused = f.error("pins.add", pinPoint(pinOpera), as: 2)
        #expect(pinRefusal(refused) == "conflict -")
        #expect(refused?.message == "at most 1000 pins per user; delete one to add another")
        #expect(try f.listAll(#""limit":200"#, as: 2).pins.count == 1_000)
        // Another user is not held back, and a deletion makes room again.
        #expect(try f.add(pinPoint(pinOpera), as: 3).id > last)
        try f.call("pins.delete", #"{"id":\#(last)}"#, as: 2)
        #expect(try f.add(pinPoint(pinOpera), as: 2).id > last)
        #expect(pinRefusal(f.error("pins.add", pinPoint(pinOpera), as: 2)) == "conflict -")
    }

    @Test func titlesAreOneLineOfAtMost100CharactersAnd1600Bytes() throws {
        let f = try PinFixture()
        func title(_ text: String) -> String { pinPoint(pinOpera, #""title":\#(Self.literal(text))"#) }
        #expect(try f.add(title(String(repeating: "t", count: 100)), as: 2).title?.count == 100)
        #expect(pinRefusal(f.error("pins.add", title(String(repeating: "t", count: 101)), as: 2)) == "invalid_argument title")
        // Multi-byte characters count as one each: 100 flags are 800 bytes.
        let flags = String(repeating: "🇦🇺", count: 100)
        #expect(try f.add(title(flags), as: 2).title == flags)
        #expect(pinRefusal(f.error("pins.add", title(flags + "🇦🇺"), as: 2)) == "invalid_argument title")
        // One character of 2,000 combining accents is refused by its bytes before anything counts it.
        let combining = "e" + String(repeating: "\u{301}", count: 2_000)
        #expect(combining.count == 1)
        let refused = f.error("pins.add", title(combining), as: 2)
        #expect(pinRefusal(refused) == "invalid_argument title" && refused?.message == "must be at most 1600 bytes")
        for bad in ["two\nlines", "tab\there", "nul\u{0}", "bidi\u{202E}txt", "sep\u{2028}"] {
            #expect(pinRefusal(f.error("pins.add", title(bad), as: 2)) == "invalid_argument title", "\(Array(bad.unicodeScalars))")
        }
        #expect(pinRefusal(f.error("pins.add", pinPoint(pinOpera, #""title":7"#), as: 2)) == "invalid_argument title")
        #expect(try f.list(as: 2).pins.count == 2)
    }

    @Test func notesAreAtMost500CharactersAnd8000Bytes() throws {
        let f = try PinFixture()
        func note(_ text: String) -> String { pinPoint(pinOpera, #""note":\#(Self.literal(text))"#) }
        #expect(try f.add(note(String(repeating: "n", count: 499) + "\n"), as: 2).note?.count == 500)
        #expect(pinRefusal(f.error("pins.add", note(String(repeating: "n", count: 501)), as: 2)) == "invalid_argument note")
        // 500 accented letters written as two scalars each (1,500 bytes) are 500 characters.
        let accented = String(repeating: "e\u{301}", count: 500)
        #expect(try f.add(note(accented), as: 2).note == accented)
        #expect(pinRefusal(f.error("pins.add", note(accented + "e"), as: 2)) == "invalid_argument note")
        // 400 family emoji are 400 characters but 10,000 bytes.
        let families = String(repeating: "👨‍👩‍👧‍👦", count: 400)
        #expect(families.count == 400 && families.utf8.count == 10_000)
        let refused = f.error("pins.add", note(families), as: 2)
        #expect(pinRefusal(refused) == "invalid_argument note" && refused?.message == "must be at most 8000 bytes")
        #expect(pinRefusal(f.error("pins.add", note("bell\u{7}"), as: 2)) == "invalid_argument note")
        // The same bounds in an update, and the pin stays as it was.
        let pin = try f.add(note("short"), as: 2)
        #expect(pinRefusal(f.error("pins.update", #"{"id":\#(pin.id),"note":\#(Self.literal(families))}"#, as: 2)) == "invalid_argument note")
        #expect(pinRefusal(f.error("pins.update", #"{"id":\#(pin.id),"title":\#(Self.literal(String(repeating: "t", count: 101)))}"#, as: 2)) == "invalid_argument title")
        #expect(try f.list(as: 2).pins.first == pin)
    }

    @Test func coordinatesAreCheckedNamingTheField() throws {
        let f = try PinFixture()
        let cases: [(String, String)] = [
            (#"{"lat":90.0001,"lon":0}"#, "invalid_argument lat"),
            (#"{"lat":-91,"lon":0}"#, "invalid_argument lat"),
            (#"{"lat":0,"lon":180.5}"#, "invalid_argument lon"),
            (#"{"lat":0,"lon":-181}"#, "invalid_argument lon"),
            (#"{"lat":1e999,"lon":0}"#, "invalid_argument lat"),
            (#"{"lat":0,"lon":-1e999}"#, "invalid_argument lon"),
            (#"{"lat":"NaN","lon":0}"#, "invalid_argument lat"),
            (#"{"lat":0}"#, "invalid_argument lon"),
            (#"{"lat":null,"lon":0}"#, "invalid_argument lat"),
        ]
        for (body, expected) in cases {
            #expect(pinRefusal(f.error("pins.add", body, as: 2)) == expected, "\(body)")
        }
        // The poles and the 180th meridian are points like any other.
        for body in [#"{"lat":90,"lon":180}"#, #"{"lat":-90,"lon":-180}"#] { #expect(throws: Never.self) { try f.add(body, as: 2) } }
        #expect(try f.list(as: 2).pins.count == 2)
    }

    @Test func listQueriesAreBounded() throws {
        let f = try PinFixture()
        let pin = try f.add(pinPoint(pinOpera), as: 2)
        let cases: [(String, String)] = [
            (#"{"near":{"lat":95,"lon":0}}"#, "invalid_argument near.lat"),
            (#"{"near":{"lat":0,"lon":-200}}"#, "invalid_argument near.lon"),
            (#"{"near":{"lat":0,"lon":0},"radius_m":0}"#, "invalid_argument radius_m"),
            (#"{"near":{"lat":0,"lon":0},"radius_m":-5}"#, "invalid_argument radius_m"),
            (#"{"near":{"lat":0,"lon":0},"radius_m":20000001}"#, "invalid_argument radius_m"),
            // A number no Double holds is named by its whole path, as the params' shape finds it.
            (#"{"near":{"lat":0,"lon":0},"radius_m":1e999}"#, "invalid_argument radius_m"),
            (#"{"near":{"lat":0}}"#, "invalid_argument near.lon"),
            (#"{"bbox":{"south":10,"west":0,"north":5,"east":1}}"#, "invalid_argument bbox.north"),
            (#"{"bbox":{"south":-91,"west":0,"north":5,"east":1}}"#, "invalid_argument bbox.south"),
            (#"{"bbox":{"south":0,"west":200,"north":5,"east":1}}"#, "invalid_argument bbox.west"),
            (#"{"bbox":{"south":0,"west":0,"north":5}}"#, "invalid_argument bbox.east"),
            (#"{"near":{"lat":0,"lon":0},"bbox":{"south":0,"west":0,"north":5,"east":1}}"#, "invalid_argument bbox"),
            (#"{"limit":0}"#, "invalid_argument limit"),
            (#"{"limit":201}"#, "invalid_argument limit"),
            (#"{"cursor":"not a cursor"}"#, "invalid_argument cursor"),
            (#"{"cursor":"cDA"}"#, "invalid_argument cursor"),
            (#"{"cursor":"\#(String(repeating: "A", count: 129))"}"#, "invalid_argument cursor"),
            // Few characters, many bytes: refused by its bytes.
            (#"{"cursor":"c\#(String(repeating: "\u{301}", count: 200))"}"#, "invalid_argument cursor"),
            (#"{"cursor":7}"#, "invalid_argument cursor"),
        ]
        for (body, expected) in cases {
            #expect(pinRefusal(f.error("pins.list", body, as: 2)) == expected, "\(body)")
        }
        // A limit no integer holds is refused too (the shared decoder names no field for it).
        #expect(f.error("pins.list", #"{"limit":1e30}"#, as: 2)?.code == .invalidArgument)
        // A cursor of one order is refused by the other.
        try f.add(pinPoint(pinOpera), as: 2)
        let byId = try f.list(#"{"limit":1}"#, as: 2).nextCursor ?? ""
        let byDistance = try f.list(#"{"limit":1,"near":\#(pinPoint(pinOpera))}"#, as: 2).nextCursor ?? ""
        #expect(pinRefusal(f.error("pins.list", #"{"near":\#(pinPoint(pinOpera)),"cursor":"\#(byId)"}"#, as: 2)) == "invalid_argument cursor")
        #expect(pinRefusal(f.error("pins.list", #"{"cursor":"\#(byDistance)"}"#, as: 2)) == "invalid_argument cursor")
        #expect(try f.list(#"{"cursor":"\#(byId)"}"#, as: 2).pins.map(\.id) == [pin.id])
    }

    @Test func idsAreChecked() throws {
        let f = try PinFixture()
        for type in ["pins.update", "pins.delete"] {
            #expect(pinRefusal(f.error(type, #"{"id":0}"#, as: 2)) == "invalid_argument id")
            #expect(pinRefusal(f.error(type, #"{"id":-4}"#, as: 2)) == "invalid_argument id")
            #expect(pinRefusal(f.error(type, #"{"id":"1"}"#, as: 2)) == "invalid_argument id")
            #expect(pinRefusal(f.error(type, #"{}"#, as: 2)) == "invalid_argument id")
            #expect(pinRefusal(f.error(type, #"{"id":99}"#, as: 2)) == "not_found id")
        }
    }

    @Test func everyMethodNeedsASignedInUser() throws {
        let f = try PinFixture()
        for (type, body) in [("pins.add", pinPoint(pinOpera)), ("pins.list", "{}"), ("pins.update", #"{"id":1}"#), ("pins.delete", #"{"id":1}"#)] {
            #expect(f.error(type, body, as: nil)?.code == .unauthenticated, "\(type)")
        }
    }
}
