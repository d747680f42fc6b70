import Bus
@testable import Contracts
import Foundation
import Testing

/// A params type's shape is read from its decoder, its limits from its rules, and a body is
/// held to both before it is decoded.
@Suite struct SchemaTests {
    struct Point: Codable, Sendable, Equatable {
        var lat: Double
        var lon: Double
    }

    enum Mode: String, Codable, CaseIterable, Sendable { case walking, driving }

    struct Query: DeclaredShape, Equatable {
        var near: Point
        var radiusM: Double?
        var limit: Int?
        var q: String
        var tags: [String]?
        var mode: Mode?
        var names: [String: String]?
        var open: Bool?

        enum CodingKeys: String, CodingKey {
            case near, limit, q, tags, mode, names, open
            case radiusM = "radius_m"
        }

        static let fieldRules: [FieldRule] = [
            .number("near.lat", -90...90), .number("near.lon", -180...180),
            .number("radius_m", 0...50_000, exclusiveMinimum: true),
            .integer("limit", 1...100),
            .string("q", characters: 1...10, bytes: 40),
            FieldRule("tags", .items(0...3)), .string("tags[]", characters: 1...5, bytes: 20),
            FieldRule("names", .items(0...2)),
        ]
    }

    /// An update whose `note` may be cleared by null, as catalog.update's optional fields are.
    struct Update: DeclaredShape {
        var id: Int64
        var note: String??

        enum CodingKeys: String, CodingKey { case id, note }

        init(from decoder: Decoder) throws {
            let c = try decoder.container(keyedBy: CodingKeys.self)
            id = try c.decode(Int64.self, forKey: .id)
            if c.contains(.note) { note = try c.decodeNil(forKey: .note) ? .some(nil) : .some(try c.decode(String.self, forKey: .note)) }
        }
    }

    @Test func theShapeComesFromTheDecoder() throws {
        guard case .object(let object) = try SchemaProbe.shape(of: Query.self) else { Issue.record("not an object"); return }
        #expect(object.members.map(\.name) == ["near", "limit", "q", "tags", "mode", "names", "open", "radius_m"])
        #expect(object.members.filter(\.required).map(\.name) == ["near", "q"])
        #expect(object.member("near")?.schema == .object(ObjectSchema([
            .init("lat", .number(NumberBounds(-90...90)), required: true), .init("lon", .number(NumberBounds(-180...180)), required: true),
        ])))
        #expect(object.member("mode")?.schema == .enumeration(["walking", "driving"]))
        #expect(object.member("tags")?.schema == .array(of: .string(StringBounds(characters: 1...5, maxBytes: 20)), items: CountBounds(0...3)))
        #expect(object.member("names")?.schema == .dictionary(of: .string(StringBounds()), entries: CountBounds(0...2)))
        #expect(object.member("radius_m")?.schema == .number(NumberBounds(0...50_000, exclusiveMinimum: true)))

        guard case .object(let update) = try SchemaProbe.shape(of: Update.self) else { Issue.record("not an object"); return }
        #expect(update.member("id").map { $0.required && !$0.nullable } == true)
        #expect(update.member("note").map { !$0.required && $0.nullable } == true)
    }

    struct Small: Decodable { var a: Int8; var b: UInt16?; var c: UInt }
    final class Chain: Decodable { var next: Chain? }

    /// Each with its type's range, as far as Int64 holds it (a UInt's top is Int64's).
    @Test func everyIntegerTypeIsReadAndARecursiveTypeIsRefused() throws {
        guard case .object(let small) = try SchemaProbe.plainShape(of: Small.self) else { Issue.record("not an object"); return }
        #expect(small.members.map(\.name) == ["a", "b", "c"])
        #expect(small.members.map(\.schema) == [.integer(IntegerBounds(-128...127)), .integer(IntegerBounds(0...65_535)), .integer(IntegerBounds(0...Int64.max))])
        #expect(throws: (any Error).self) { try SchemaProbe.plainShape(of: Chain.self) }
        #expect(throws: (any Error).self) { try SchemaProbe.plainShape(of: URL.self) }
    }

    @Test func aRuleNamingNoFieldOrTheWrongTypeIsRefused() throws {
        let plain = try SchemaProbe.plainShape(of: Query.self)
        #expect(throws: SchemaRuleError.self) { try plain.applying([.integer("nowhere", 1...2)]) }
        #expect(throws: SchemaRuleError.self) { try plain.applying([.integer("q", 1...2)]) }
        #expect(throws: SchemaRuleError.self) { try plain.applying([FieldRule("q[]", .bytes(3))]) }
    }

    static func fault(_ body: String) -> ServiceError? {
        do {
            try SchemaCheck.check(Data(body.utf8), against: try SchemaProbe.shape(of: Query.self))
            return nil
        } catch let error as ServiceError {
            return error
        } catch {
            return ServiceError(.internal, "\(error)")
        }
    }

    @Test func aBodyWithinTheShapePassesAndDecodes() throws {
        let body = #"{"near":{"lat":-33.86,"lon":151.2},"radius_m":2000,"limit":100,"q":"café","tags":["a","bb"],"mode":"walking","names":{"en":"x"},"open":true}"#
        #expect(SchemaTests.fault(body) == nil)
        #expect(SchemaTests.fault(#"{"near":{"lat":90,"lon":-180},"q":"x","radius_m":null,"tags":[]}"#) == nil)
        // A whole number written with a fraction or an exponent is one, as the decoder reads it.
        for limit in ["5e0", "100.0", "1E1"] {
            let body = #"{"near":{"lat":1,"lon":0},"q":"x","limit":\#(limit)}"#
            #expect(SchemaTests.fault(body) == nil, "\(limit)")
            #expect((try? JSONDecoder().decode(Query.self, from: Data(body.utf8))) != nil, "\(limit)")
        }
        #expect(try JSONDecoder().decode(Query.self, from: Data(body.utf8)).mode == .walking)
    }

    @Test func eachFaultNamesItsField() {
        let cases: [(String, ServiceError)] = [
            (#"[]"#, ServiceError(.invalidArgument, "expected an object")),
            (#"{"q":"x"}"#, ServiceError(.invalidArgument, "missing required field near", field: "near")),
            (#"{"near":{"lat":1},"q":"x"}"#, ServiceError(.invalidArgument, "missing required field near.lon", field: "near.lon")),
            (#"{"near":null,"q":"x"}"#, .invalid("near", "expected an object, found null")),
            (#"{"near":{"lat":91,"lon":0},"q":"x"}"#, .invalid("near.lat", "must be a number in [-90, 90]")),
            (#"{"near":{"lat":"1","lon":0},"q":"x"}"#, .invalid("near.lat", "expected a number")),
            (#"{"near":{"lat":1e999,"lon":0},"q":"x"}"#, .invalid("near.lat", "number 1e999 is out of range")),
            (#"{"near":{"lat":1,"lon":0},"q":"x","radius_m":0}"#, .invalid("radius_m", "must be more than 0 and at most 50000")),
            (#"{"near":{"lat":1,"lon":0},"q":"x","limit":101}"#, .invalid("limit", "must be 1 to 100")),
            (#"{"near":{"lat":1,"lon":0},"q":"x","limit":2.5}"#, .invalid("limit", "expected an integer")),
            (#"{"near":{"lat":1,"lon":0},"q":"x","limit":1e20}"#, .invalid("limit", "number 1e20 is out of range")),
            (#"{"near":{"lat":1,"lon":0},"q":"x","limit":100.5}"#, .invalid("limit", "expected an integer")),
            (#"{"near":{"lat":1,"lon":0},"q":"x","limit":1e999}"#, .invalid("limit", "number 1e999 is out of range")),
            (#"{"near":{"lat":1,"lon":0},"q":"x","limit":99999999999999999999}"#, .invalid("limit", "number 99999999999999999999 is out of range")),
            (#"{"near":{"lat":1,"lon":0},"q":""}"#, .invalid("q", "must not be empty")),
            (#"{"near":{"lat":1,"lon":0},"q":"abcdefghijk"}"#, .invalid("q", "must be 1 to 10 characters")),
            // Bytes first: ten characters of four bytes are 40 bytes, and one more is refused by its bytes.
            (#"{"near":{"lat":1,"lon":0},"q":"😀😀😀😀😀😀😀😀😀😀😀"}"#, .invalid("q", "must be at most 40 bytes")),
            (#"{"near":{"lat":1,"lon":0},"q":"x","tags":["a","b","c","d"]}"#, .invalid("tags", "must hold 0 to 3 items")),
            (#"{"near":{"lat":1,"lon":0},"q":"x","tags":["a",""]}"#, .invalid("tags[1]", "must not be empty")),
            (#"{"near":{"lat":1,"lon":0},"q":"x","mode":"flying"}"#, .invalid("mode", "unknown mode 'flying'; use walking or driving")),
            (#"{"near":{"lat":1,"lon":0},"q":"x","names":{"en":1}}"#, .invalid("names.en", "expected a string")),
            (#"{"near":{"lat":1,"lon":0},"q":"x","open":"yes"}"#, .invalid("open", "expected a boolean")),
            (#"{"near":{"lat":1,"lon":0},"q":"x","lat":1}"#, .invalid("lat", "unknown parameter 'lat'; did you mean 'near'?")),
            (#"{"near":{"lat":1,"lon":0},"q":"x","limt":1}"#, .invalid("limt", "unknown parameter 'limt'; did you mean 'limit'?")),
            (#"{"near":{"lat":1,"lon":0,"lng":2},"q":"x"}"#, .invalid("near.lng", "unknown parameter 'near.lng'; did you mean 'near.lon'?")),
            (#"{"near":{"lat":1,"lon":0},"q":"x","zzzzzz":1}"#, .invalid("zzzzzz", "unknown parameter 'zzzzzz'")),
            (#"{"near":{"lat":1,"lon":0},"q":"x","foo":1}"#, .invalid("foo", "unknown parameter 'foo'")),
            (#"{"near":{"lat":1,"lon":0},"q":"x","limit":5,"limit":6}"#, .invalid("limit", "is given twice")),
            (#"{"near":{"lat":1,"lon":0,"l\u0061t":2},"q":"x"}"#, .invalid("near.lat", "is given twice")),
        ]
        for (body, error) in cases { #expect(SchemaTests.fault(body) == error, "\(body)") }
    }

    @Test func aWholeNumberWithZerosAfterThePointIsReadExactly() throws {
        let integer = Schema.integer(IntegerBounds())
        try SchemaCheck.check(Data("9223372036854775807.000".utf8), against: integer)
        try SchemaCheck.check(Data("-9223372036854775808.0".utf8), against: integer)
        #expect(throws: ServiceError(.invalidArgument, "number 9223372036854775808.0 is out of range")) {
            try SchemaCheck.check(Data("9223372036854775808.0".utf8), against: integer)
        }
    }

    /// Literals are read exactly, not through a double: a tiny fraction is not 0, and the
    /// integer one past either end of Int64 is out of range however it is written.
    @Test func numberLiteralsAreReadExactly() throws {
        let integer = Schema.integer(IntegerBounds()), number = Schema.number(NumberBounds())
        for (literal, expected) in [("1e-400", "expected an integer"), ("0.5e1", nil), ("25e-1", "expected an integer"), ("1e1", nil),
                                    ("-9223372036854775809", "number -9223372036854775809 is out of range"),
                                    ("-9.223372036854775808e18", nil), ("-9.223372036854775809e18", "number -9.223372036854775809e18 is out of range"),
                                    ("0e-400", nil), ("-0", nil), ("1230001e-4", "expected an integer"), ("1230000e-4", nil),
                                    ("100e-2", nil), ("1E+2", nil), ("0.000", nil)] as [(String, String?)] {
            #expect(SchemaTests.check(literal, integer) == expected, "\(literal)")
        }
        for (literal, expected) in [("1e-400", "number 1e-400 is out of range"), ("2e-324", "number 2e-324 is out of range"), ("1e-320", nil),
                                    ("0e-999", nil), ("-0.0", nil), ("0.0000", nil)] as [(String, String?)] {
            #expect(SchemaTests.check(literal, number) == expected, "\(literal)")
        }
        #expect(DecimalLiteral("-12.50e3").map { [$0.negative ? "-" : "+", String($0.digits), String($0.exponent)] } == ["-", "125", "2"])
        #expect(DecimalLiteral("1e99999999") == nil)
    }

    static func check(_ literal: String, _ schema: Schema) -> String? {
        do {
            try SchemaCheck.check(Data(literal.utf8), against: schema)
            return nil
        } catch {
            return error.message
        }
    }

    @Test func nameDistancesCountSwapsAsOne() {
        #expect(SchemaCheck.distance("limt", "limit") == 1)
        #expect(SchemaCheck.distance("lmiit", "limit") == 1)
        #expect(SchemaCheck.distance("", "abc") == 3)
        #expect(SchemaCheck.distance("radius", "radius_m") == 2)
    }
}
