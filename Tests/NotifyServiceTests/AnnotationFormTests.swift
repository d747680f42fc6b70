import Bus
import Foundation
import Geo
import Testing
@testable import NotifyService

// Builders of form JSON: `extra` is appended inside the object and starts with a comma.

/// A choice labelled with its own value.
private func choice(_ value: String, _ extra: String = "") -> String {
    #"{"value":"\#(value)","labels":{"en":"\#(value)"}\#(extra)}"#
}

/// A field labelled with its own name.
private func field(_ name: String, _ choices: [String], _ extra: String = "") -> String {
    #"{"name":"\#(name)","labels":{"en":"\#(name)"},"choices":[\#(choices.joined(separator: ","))]\#(extra)}"#
}

/// A form of version 1.
private func form(_ fields: [String]) -> String {
    #"{"version":1,"fields":[\#(fields.joined(separator: ","))]}"#
}

/// A field `kind` of choices a and b, then `detail` depending on it.
private let kindAndDetail = [
    field("kind", [choice("a"), choice("b")]),
    field("detail", [choice("a1", #","parent":"a""#), choice("b1", #","parent":"b""#)], #","depends_on":"kind""#),
]

private func decode(_ json: String) throws(FormError) -> AnnotationForm {
    try AnnotationForm(json: Data(json.utf8))
}

/// The refusal of `json`, or nil when it decodes.
private func refusal(_ json: String) -> FormError? {
    do {
        _ = try decode(json)
        return nil
    } catch {
        return error
    }
}

/// The refusal of `values` at `position`, or nil when they pass.
private func refusal(_ form: AnnotationForm, _ values: [String: String], at position: Coordinate) -> FormError? {
    do {
        try form.validate(values: values, at: position)
        return nil
    } catch {
        return error
    }
}

private func point(_ latitude: Double, _ longitude: Double) -> Coordinate {
    Coordinate(uncheckedLatitude: latitude, longitude: longitude)
}

/// The shipped form, deploy/notify-form.json.
private func shippedForm() throws -> AnnotationForm {
    let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
    return try AnnotationForm(json: Data(contentsOf: root.appendingPathComponent("deploy/notify-form.json")))
}

@Suite struct AnnotationFormDecodingTests {
    @Test func decodesFieldsChoicesDependenciesAndRegions() throws {
        let json = form([
            field("kind", [choice("a"), choice("b", #","region":{"south":-34,"west":150,"north":-33,"east":152}"#)],
                  #","required":false"#),
            field("detail", [choice("a1", #","parent":"a","region":{"lat":-33.9,"lon":151.2,"radius_m":500}"#)],
                  #","depends_on":"kind""#),
        ])
        let decoded = try decode(json)
        #expect(decoded.version == 1)
        #expect(decoded.fields.map(\.name) == ["kind", "detail"])
        #expect(decoded.fields[0].required == false)
        #expect(decoded.fields[1].required == true)
        #expect(decoded.fields[1].dependsOn == "kind")
        #expect(decoded.fields[1].choices[0].parent == "a")
        #expect(decoded.fields[0].choices[1].region == .box(try BoundingBox(south: -34, west: 150, north: -33, east: 152)))
        #expect(decoded.fields[1].choices[0].region == .circle(center: point(-33.9, 151.2), radiusMeters: 500))
        #expect(decoded.field("detail")?.choice("a1")?.labels == ["en": "a1"])
        #expect(decoded.field("kind")?.isLocationDependent == true)
        #expect(decoded.field("nope") == nil)
    }

    @Test func labelsAreKeptByLowerCaseTag() throws {
        let json = form([#"{"name":"kind","labels":{"en":"Kind","fr-CA":"Sorte"},"choices":[\#(choice("a"))]}"#])
        #expect(try decode(json).fields[0].labels == ["en": "Kind", "fr-ca": "Sorte"])
    }

    @Test(arguments: [
        // The document.
        ("[]", "", "must be an object"),
        (#"{"version":1,"fields":[\#(field("kind", [choice("a")])),]}"#, "", "trailing comma"),
        (#"{"version":1,"fields":[{"name":"kind","labels":{"en":"k"},"choices":[{"value":"a","labels":{"en":"a"},"region":{"lat":NaN,"lon":0,"radius_m":1}}]}]}"#, "", "malformed JSON"),
        (#"{"fields":[]}"#, "version", "missing"),
        (#"{"version":0,"fields":[\#(field("kind", [choice("a")]))]}"#, "version", "integer"),
        (#"{"version":1.5,"fields":[\#(field("kind", [choice("a")]))]}"#, "version", "integer"),
        (#"{"version":"1","fields":[\#(field("kind", [choice("a")]))]}"#, "version", "integer"),
        (#"{"version":2147483648,"fields":[\#(field("kind", [choice("a")]))]}"#, "version", "integer"),
        (#"{"version":1,"fields":[\#(field("kind", [choice("a")]))],"colour":1}"#, "colour", "not a key"),
        (#"{"version":1}"#, "fields", "missing"),
        (#"{"version":1,"fields":[]}"#, "fields", "1 to 32"),
        (#"{"version":1,"fields":{}}"#, "fields", "array"),
        // A field.
        (form(["[]"]), "fields[0]", "object"),
        (form([field("kind", [choice("a")], #","colour":1"#)]), "fields[0].colour", "not a key"),
        (form([field("kind", [choice("a")], #","Colour":1"#)]), "fields[0]", "unknown key"),
        (form([#"{"labels":{"en":"x"},"choices":[\#(choice("a"))]}"#]), "fields[0].name", "missing"),
        (form([field("Kind", [choice("a")])]), "fields[0].name", "a-z"),
        (form([field("kind-1", [choice("a")])]), "fields[0].name", "a-z"),
        (form([field("", [choice("a")])]), "fields[0].name", "a-z"),
        (form([field("kind", [choice("a")]), field("kind", [choice("a")])]), "fields[1].name", "fields[0]"),
        (form([field("kind", [choice("a")], #","required":1"#)]), "fields[0].required", "true or false"),
        (form([field("kind", [choice("a")], #","required":"yes""#)]), "fields[0].required", "true or false"),
        // Labels.
        (form([#"{"name":"kind","choices":[\#(choice("a"))]}"#]), "fields[0].labels", "missing"),
        (form([#"{"name":"kind","labels":{"fr":"Sorte"},"choices":[\#(choice("a"))]}"#]), "fields[0].labels.en", "English"),
        (form([#"{"name":"kind","labels":{"en":""},"choices":[\#(choice("a"))]}"#]), "fields[0].labels.en", "empty"),
        (form([#"{"name":"kind","labels":{"en":7},"choices":[\#(choice("a"))]}"#]), "fields[0].labels.en", "string"),
        (form([#"{"name":"kind","labels":{"en":"two\nlines"},"choices":[\#(choice("a"))]}"#]), "fields[0].labels.en", "one line"),
        (form([#"{"name":"kind","labels":{"en":"right\u202eto left"},"choices":[\#(choice("a"))]}"#]), "fields[0].labels.en", "one line"),
        (form([#"{"name":"kind","labels":["en"],"choices":[\#(choice("a"))]}"#]), "fields[0].labels", "object"),
        (form([#"{"name":"kind","labels":{"en":"k","f":"s"},"choices":[\#(choice("a"))]}"#]), "fields[0].labels", "language tag"),
        (form([#"{"name":"kind","labels":{"en":"k","abcdefghi":"s"},"choices":[\#(choice("a"))]}"#]), "fields[0].labels", "language tag"),
        (form([#"{"name":"kind","labels":{"en":"k","fr1":"s"},"choices":[\#(choice("a"))]}"#]), "fields[0].labels", "language tag"),
        (form([#"{"name":"kind","labels":{"en":"k","fr-":"s"},"choices":[\#(choice("a"))]}"#]), "fields[0].labels", "language tag"),
        (form([#"{"name":"kind","labels":{"en":"k","fr":"s","FR":"S"},"choices":[\#(choice("a"))]}"#]), "fields[0].labels.fr", "second label"),
        // Choices.
        (form([#"{"name":"kind","labels":{"en":"k"}}"#]), "fields[0].choices", "missing"),
        (form([field("kind", [])]), "fields[0].choices", "1 to 256"),
        (form([field("kind", [choice("a", #","colour":1"#)])]), "fields[0].choices[0].colour", "not a key"),
        (form([field("kind", [choice("a"), choice("A")])]), "fields[0].choices[1].value", "a-z"),
        (form([field("kind", [choice("a"), choice("b"), choice("a")])]), "fields[0].choices[2].value", "choices[0]"),
        (form([field("kind", [#"{"value":"a","labels":{"fr":"a"}}"#])]), "fields[0].choices[0].labels.en", "English"),
        // Dependencies.
        (form([field("kind", [choice("a", #","parent":"a""#)], #","depends_on":"kind""#)]), "fields[0].depends_on", "earlier field"),
        (form([field("detail", [choice("a1", #","parent":"a""#)], #","depends_on":"kind""#), field("kind", [choice("a")])]),
         "fields[0].depends_on", "earlier field"),
        (form([field("kind", [choice("a")]), field("detail", [choice("a1", #","parent":"a""#)], #","depends_on":"nope""#)]),
         "fields[1].depends_on", "earlier field"),
        (form([field("kind", [choice("a")]), field("detail", [choice("a1", #","parent":"a""#)], #","depends_on":1"#)]),
         "fields[1].depends_on", "earlier field"),
        (form([field("kind", [choice("a")]), field("detail", [choice("a1")], #","depends_on":"kind""#)]),
         "fields[1].choices[0].parent", "missing"),
        (form([field("kind", [choice("a")]), field("detail", [choice("a1", #","parent":"b""#)], #","depends_on":"kind""#)]),
         "fields[1].choices[0].parent", "a value of kind"),
        (form([field("kind", [choice("a")]), field("detail", [choice("a1", #","parent":1"#)], #","depends_on":"kind""#)]),
         "fields[1].choices[0].parent", "a value of kind"),
        (form([field("kind", [choice("a", #","parent":"a""#)])]), "fields[0].choices[0].parent", "depends_on"),
        // Regions.
        (form([field("kind", [choice("a", #","region":"here""#)])]), "fields[0].choices[0].region", "object"),
        (form([field("kind", [choice("a", #","region":{}"#)])]), "fields[0].choices[0].region", "a circle"),
        (form([field("kind", [choice("a", #","region":{"lat":91,"lon":0,"radius_m":1}"#)])]), "fields[0].choices[0].region.lat", "[-90, 90]"),
        (form([field("kind", [choice("a", #","region":{"lat":0,"lon":-180.5,"radius_m":1}"#)])]), "fields[0].choices[0].region.lon", "[-180, 180]"),
        (form([field("kind", [choice("a", #","region":{"lat":"0","lon":0,"radius_m":1}"#)])]), "fields[0].choices[0].region.lat", "number"),
        (form([field("kind", [choice("a", #","region":{"lat":0,"lon":0,"radius_m":0}"#)])]), "fields[0].choices[0].region.radius_m", "greater than 0"),
        (form([field("kind", [choice("a", #","region":{"lat":0,"lon":0,"radius_m":-5}"#)])]), "fields[0].choices[0].region.radius_m", "[0, 100000]"),
        (form([field("kind", [choice("a", #","region":{"lat":0,"lon":0,"radius_m":100000.5}"#)])]), "fields[0].choices[0].region.radius_m", "[0, 100000]"),
        (form([field("kind", [choice("a", #","region":{"lat":0,"lon":0,"radius_m":1e999}"#)])]), "fields[0].choices[0].region.radius_m", "out of range"),
        (form([field("kind", [choice("a", #","region":{"lat":0,"lon":0}"#)])]), "fields[0].choices[0].region.radius_m", "missing"),
        (form([field("kind", [choice("a", #","region":{"lat":0,"lon":0,"radius_m":1,"south":0}"#)])]), "fields[0].choices[0].region.south", "not a key"),
        (form([field("kind", [choice("a", #","region":{"south":1,"west":0,"north":0,"east":1}"#)])]), "fields[0].choices[0].region.north", "less than south"),
        (form([field("kind", [choice("a", #","region":{"south":-91,"west":0,"north":0,"east":1}"#)])]), "fields[0].choices[0].region.south", "[-90, 90]"),
        (form([field("kind", [choice("a", #","region":{"south":0,"west":0,"north":1,"east":181}"#)])]), "fields[0].choices[0].region.east", "[-180, 180]"),
        (form([field("kind", [choice("a", #","region":{"south":0,"west":0,"north":1}"#)])]), "fields[0].choices[0].region.east", "missing"),
    ])
    func refusesNamingThePath(json: String, path: String, says: String) {
        let error = refusal(json)
        #expect(error?.path == path, "\(json)")
        #expect(error?.message.contains(says) == true, "\(String(describing: error))")
    }

    /// The example of the brief: `fields[2].choices[5].parent`, a parent that does not exist.
    @Test func namesTheChoiceWhoseParentDoesNotExist() {
        let lines = (0..<5).map { choice("l\($0)", #","parent":"a""#) } + [choice("l5", #","parent":"c""#)]
        let json = form(kindAndDetail + [field("line", lines, #","depends_on":"kind""#)])
        #expect(refusal(json)?.path == "fields[2].choices[5].parent")
    }

    @Test func aKeyTwiceInOneObjectIsRefused() {
        let twice = #"{"version":1,"version":2,"fields":[\#(field("kind", [choice("a")]))]}"#
        #expect(refusal(twice)?.path == "version")
        let twiceInAChoice = form([field("kind", [#"{"value":"a","labels":{"en":"a"},"value":"b"}"#])])
        let error = refusal(twiceInAChoice)
        #expect(error?.path == "fields[0].choices[0].value")
        #expect(error?.message == "appears twice")
    }

    @Test func refusesADependencyOnALaterFieldEvenWhenItExists() {
        // `later` is defined after `detail`: depending on it is refused, though the name exists.
        let json = form([field("detail", [choice("x1", #","parent":"x""#)], #","depends_on":"later""#), field("later", [choice("x")])])
        #expect(refusal(json)?.path == "fields[0].depends_on")
        let reordered = form([field("later", [choice("x")]), field("detail", [choice("x1", #","parent":"x""#)], #","depends_on":"later""#)])
        #expect(refusal(reordered) == nil)
    }

    @Test func mapsToInvalidArgumentNamingTheField() {
        let error = refusal(form([field("kind", [choice("a"), choice("a")])]))
        #expect(error?.serviceError == ServiceError(.invalidArgument, error?.message ?? "", field: "fields[0].choices[1].value"))
        let whole = refusal("{")
        #expect(whole?.serviceError.code == .invalidArgument)
        #expect(whole?.serviceError.field == nil)
    }
}

/// Every bound, from the side of whoever writes the form file.
@Suite struct AnnotationFormBoundTests {
    @Test func aFileOf256KiBIsTakenAndOneByteMoreIsNot() throws {
        let json = form([field("kind", [choice("a")])])
        let padding = AnnotationForm.maxBytes - json.utf8.count
        #expect(try decode(json + String(repeating: " ", count: padding)).version == 1)
        let error = refusal(json + String(repeating: " ", count: padding + 1))
        #expect(error?.path == "")
        #expect(error?.message.contains("at most 262144 bytes") == true)
    }

    @Test func aLabelOf2MBIsRefusedForTheFileSize() {
        let label = String(repeating: "é", count: 1_000_000)  // 2,000,000 bytes
        let json = form([#"{"name":"kind","labels":{"en":"\#(label)"},"choices":[\#(choice("a"))]}"#])
        let error = refusal(json)
        #expect(error?.path == "")
        #expect(error?.message.contains("at most 262144 bytes") == true)
    }

    @Test func aLabelIsBoundedInBytesNotCharacters() throws {
        let label201 = String(repeating: "€", count: 67)  // 3 bytes each: 201 bytes, 67 characters
        #expect(label201.count == 67 && label201.utf8.count == 201)
        let refused = refusal(form([#"{"name":"kind","labels":{"en":"k","fr":"\#(label201)"},"choices":[\#(choice("a"))]}"#]))
        #expect(refused?.path == "fields[0].labels.fr")
        #expect(refused?.message.contains("at most 200 bytes") == true)
        let label200 = String(repeating: "€", count: 66) + "ab"
        #expect(label200.utf8.count == 200)
        let taken = try decode(form([#"{"name":"kind","labels":{"en":"k","fr":"\#(label200)"},"choices":[\#(choice("a"))]}"#]))
        #expect(taken.fields[0].labels["fr"] == label200)
    }

    @Test func tenThousandChoicesAreRefused() {
        let choices = (0..<10_000).map { #"{"value":"c\#($0)","labels":{"en":"c"}}"# }
        let error = refusal(form([field("kind", choices)]))
        #expect(error != nil)
        #expect(error?.path == "")  // over 256 KiB before a choice is read
    }

    @Test func aFieldHoldsAtMost256Choices() throws {
        let choices = (0..<257).map { #"{"value":"c\#($0)","labels":{"en":"c"}}"# }
        let json = form([field("kind", choices)])
        #expect(json.utf8.count < AnnotationForm.maxBytes)
        let error = refusal(json)
        #expect(error?.path == "fields[0].choices")
        #expect(error?.message.contains("holds 257") == true)
        #expect(try decode(form([field("kind", Array(choices.prefix(256)))])).fields[0].choices.count == 256)
    }

    @Test func aFormHoldsAtMost32Fields() throws {
        let fields = (0..<33).map { field("f\($0)", [choice("a")]) }
        #expect(refusal(form(fields))?.path == "fields")
        #expect(try decode(form(Array(fields.prefix(32)))).fields.count == 32)
    }

    @Test func aNameIsAtMost32Bytes() throws {
        let name32 = String(repeating: "n", count: 32)
        #expect(try decode(form([field(name32, [choice(name32)])])).fields[0].name == name32)
        let name33 = name32 + "n"
        #expect(refusal(form([field(name33, [choice("a")])]))?.path == "fields[0].name")
        #expect(refusal(form([field("kind", [choice(name33)])]))?.path == "fields[0].choices[0].value")
        // Non-ASCII letters are refused whatever their length.
        #expect(refusal(form([field("caf\u{E9}", [choice("a")])]))?.path == "fields[0].name")
    }

    @Test func labelsComeInAtMost16Languages() throws {
        let tags = (0..<16).map { "x" + String(UnicodeScalar(UInt8(ascii: "a") + UInt8($0))) }  // xa … xp
        func labels(_ tags: [String]) -> String {
            (["\"en\":\"k\""] + tags.map { "\"\($0)\":\"k\"" }).joined(separator: ",")
        }
        let fifteenMore = form([#"{"name":"kind","labels":{\#(labels(Array(tags.prefix(15))))},"choices":[\#(choice("a"))]}"#])
        #expect(try decode(fifteenMore).fields[0].labels.count == 16)
        let sixteenMore = form([#"{"name":"kind","labels":{\#(labels(tags))},"choices":[\#(choice("a"))]}"#])
        let error = refusal(sixteenMore)
        #expect(error?.path == "fields[0].labels")
        #expect(error?.message.contains("at most 16") == true)
    }

    @Test func nestingDeeperThanAFormIsRefusedBeforeParsing() {
        let json = form([field("kind", [choice("a", #","region":{"lat":[0],"lon":0,"radius_m":1}"#)])])
        let error = refusal(json)
        #expect(error?.path == "")
        #expect(error?.message.contains("nesting deeper than 6") == true)
    }

    @Test func aRadiusOf100kmIsTaken() throws {
        let json = form([field("kind", [choice("a", #","region":{"lat":0,"lon":0,"radius_m":100000}"#)])])
        #expect(try decode(json).fields[0].choices[0].region == .circle(center: point(0, 0), radiusMeters: 100_000))
    }
}

@Suite struct AnnotationFormViewTests {
    static let labelled = form([
        #"{"name":"kind","labels":{"en":"What","fr":"Quoi","zh":"什么"},"choices":[{"value":"a","labels":{"en":"A","fr":"Un"}},{"value":"b","labels":{"en":"B","fr-ca":"Bé"}}]}"#,
    ])

    @Test(arguments: [
        ("fr", "Quoi", "Un", "B"), ("fr-CA", "Quoi", "Un", "Bé"), ("FR-ca", "Quoi", "Un", "Bé"),
        ("fr-BE", "Quoi", "Un", "B"), ("zh", "什么", "A", "B"), ("de", "What", "A", "B"),
        ("fr_CA", "What", "A", "B"), ("fr-C_A", "Quoi", "Un", "B"), ("f\u{E9}-CA", "What", "A", "B"), ("fr-CA-x-" + String(repeating: "a", count: 28), "What", "A", "B"),
        ("fr-CA-x-" + String(repeating: "a", count: 27), "Quoi", "Un", "Bé"), ("", "What", "A", "B"),
    ])
    func labelsFallBackToTheShorterTagThenEnglish(language: String, field: String, a: String, b: String) throws {
        let view = try decode(Self.labelled).view(at: nil, language: language)
        #expect(view.fields[0].label == field)
        #expect(view.fields[0].choices.map(\.label) == [a, b])
    }

    @Test func withoutALanguageTheLabelsAreEnglish() throws {
        let view = try decode(Self.labelled).view(at: nil, language: nil)
        #expect(view.fields[0].label == "What")
        #expect(view.fields[0].choices.map(\.label) == ["A", "B"])
    }

    @Test func theJSONHasSortedKeysAndLeavesOutWhatIsNotThere() throws {
        let json = form([
            field("kind", [choice("a", #","region":{"lat":-33.5,"lon":151,"radius_m":500}"#)], #","required":false"#),
            field("detail", [choice("a1", #","parent":"a""#)], #","depends_on":"kind""#),
        ])
        let encoded = try JSONCoding.encoder.encode(try decode(json).view(at: nil, language: "en"))
        let expected = #"{"fields":[{"choices":[{"label":"a","region":{"lat":-33.5,"lon":151,"radius_m":500},"value":"a"}],"label":"kind","name":"kind","required":false},"#
            + #"{"choices":[{"label":"a1","parent":"a","value":"a1"}],"depends_on":"kind","label":"detail","name":"detail","required":true}],"version":1}"#
        #expect(String(decoding: encoded, as: UTF8.self) == expected)
    }

    /// One field `place` with a circle of 1 km around (-33.86, 151.21), a box around
    /// Sydney's harbour and a choice everywhere.
    static let places = form([field("place", [
        choice("circle", #","region":{"lat":-33.86,"lon":151.21,"radius_m":1000}"#),
        choice("box", #","region":{"south":-33.9,"west":151.1,"north":-33.8,"east":151.3}"#),
        choice("anywhere"),
    ])])

    private func shown(_ json: String, at position: Coordinate?) throws -> [String] {
        try decode(json).view(at: position, language: nil).fields.first?.choices.map(\.value) ?? []
    }

    @Test func withoutAPositionEveryChoiceIsShown() throws {
        #expect(try shown(Self.places, at: nil) == ["circle", "box", "anywhere"])
    }

    @Test func aCircleShowsItsChoiceInsideAndOnTheEdgeOnly() throws {
        let center = point(-33.86, 151.21)
        #expect(try shown(Self.places, at: center) == ["circle", "box", "anywhere"])
        let east = center.destination(bearingDegrees: 90, distanceMeters: 999)
        #expect(try shown(Self.places, at: east) == ["circle", "box", "anywhere"])
        let beyond = center.destination(bearingDegrees: 90, distanceMeters: 1001)
        #expect(try shown(Self.places, at: beyond) == ["box", "anywhere"])
        // Exactly on the edge: a radius equal to the point's computed distance.
        let edge = center.destination(bearingDegrees: 200, distanceMeters: 750)
        let distance = center.distance(to: edge)
        let exact = form([field("place", [choice("edge", #","region":{"lat":-33.86,"lon":151.21,"radius_m":\#(distance)}"#)])])
        #expect(try decode(exact).fields[0].choices[0].region == .circle(center: center, radiusMeters: distance))
        #expect(try shown(exact, at: edge) == ["edge"])
        let justShorter = form([field("place", [choice("edge", #","region":{"lat":-33.86,"lon":151.21,"radius_m":\#(distance.nextDown)}"#)])])
        #expect(try shown(justShorter, at: edge) == [])
    }

    @Test func aBoxShowsItsChoiceInsideAndOnItsEdges() throws {
        #expect(try shown(Self.places, at: point(-33.85, 151.25)) == ["box", "anywhere"])
        #expect(try shown(Self.places, at: point(-33.8, 151.3)) == ["box", "anywhere"])  // the north-east corner
        #expect(try shown(Self.places, at: point(-33.9, 151.1)) == ["box", "anywhere"])  // the south-west corner
        #expect(try shown(Self.places, at: point(-33.79, 151.25)) == ["anywhere"])
        #expect(try shown(Self.places, at: point(-33.85, 151.31)) == ["anywhere"])
        #expect(try shown(Self.places, at: point(-34.0, 151.25)) == ["anywhere"])
    }

    @Test func aBoxWithWestBeyondEastCrossesThe180thMeridian() throws {
        let fiji = form([field("place", [choice("fiji", #","region":{"south":-20,"west":176,"north":-15,"east":-178}"#)])])
        for longitude in [176.0, 179.9, 180, -180, -179.5, -178] {
            #expect(try shown(fiji, at: point(-17, longitude)) == ["fiji"], "lon \(longitude)")
        }
        for longitude in [175.9, -177.9, 0, 1] {
            #expect(try shown(fiji, at: point(-17, longitude)) == [], "lon \(longitude)")
        }
    }

    @Test func aDependentFieldShowsEveryChoiceWithItsParent() throws {
        let view = try decode(form(kindAndDetail)).view(at: nil, language: nil)
        #expect(view.fields[1].dependsOn == "kind")
        #expect(view.fields[1].choices.map(\.value) == ["a1", "b1"])
        #expect(view.fields[1].choices.map(\.parent) == ["a", "b"])
        #expect(view.fields[0].choices.map(\.parent) == [nil, nil])
    }

    @Test func atAPositionDependentChoicesOfAParentNotShownAreLeftOut() throws {
        let json = form([
            field("kind", [choice("a"), choice("b", #","region":{"south":0,"west":0,"north":1,"east":1}"#)]),
            field("detail", [choice("a1", #","parent":"a""#), choice("b1", #","parent":"b""#)], #","depends_on":"kind""#),
        ])
        let far = try decode(json).view(at: point(10, 10), language: nil)
        #expect(far.fields.map(\.name) == ["kind", "detail"])
        #expect(far.fields[1].choices.map(\.value) == ["a1"])
        let near = try decode(json).view(at: point(0.5, 0.5), language: nil)
        #expect(near.fields[1].choices.map(\.value) == ["a1", "b1"])
    }

    @Test func atAPositionAFieldWithNothingToPickIsLeftOut() throws {
        let json = form([
            field("kind", [choice("a")]),
            field("line", [choice("t1", #","region":{"lat":0,"lon":0,"radius_m":1000}"#)]),
            field("stop", [choice("s1", #","parent":"t1""#)], #","depends_on":"line""#),
        ])
        #expect(try decode(json).view(at: point(5, 5), language: nil).fields.map(\.name) == ["kind"])
        #expect(try decode(json).view(at: point(0, 0), language: nil).fields.map(\.name) == ["kind", "line", "stop"])
        #expect(try decode(json).view(at: nil, language: nil).fields.map(\.name) == ["kind", "line", "stop"])
    }
}

@Suite struct AnnotationFormValidationTests {
    /// kind (a, b), detail depending on it, optional extra, and line with one choice near (0, 0).
    static let json = form(kindAndDetail + [
        field("extra", [choice("x")], #","required":false"#),
        field("line", [choice("t1", #","region":{"lat":0,"lon":0,"radius_m":1000}"#), choice("t2", #","region":{"south":10,"west":10,"north":11,"east":11}"#)]),
    ])
    let here = point(0, 0)
    let far = point(5, 5)

    @Test func aCompleteSubmissionPasses() throws {
        let form = try decode(Self.json)
        #expect(refusal(form, ["kind": "a", "detail": "a1", "line": "t1"], at: here) == nil)
        #expect(refusal(form, ["kind": "b", "detail": "b1", "extra": "x", "line": "t1"], at: here) == nil)
        #expect(refusal(form, ["kind": "b", "detail": "b1", "line": "t2"], at: point(10.5, 10.5)) == nil)
    }

    @Test func aRequiredFieldMustHaveAValue() throws {
        let form = try decode(Self.json)
        let error = refusal(form, ["detail": "a1", "line": "t1"], at: here)
        #expect(error?.path == "values.kind")
        #expect(error?.message == "is required")
        #expect(refusal(form, ["kind": "a", "line": "t1"], at: here)?.path == "values.detail")
    }

    @Test func aLocationDependentFieldIsRequiredOnlyWhereItHasAChoice() throws {
        let form = try decode(Self.json)
        #expect(refusal(form, ["kind": "a", "detail": "a1"], at: here)?.path == "values.line")
        #expect(refusal(form, ["kind": "a", "detail": "a1"], at: far) == nil)
    }

    @Test func aDependentFieldIsNotRequiredWhenItsParentsValueHasNoChoices() throws {
        let json = form([
            field("kind", [choice("a"), choice("b")]),
            field("detail", [choice("a1", #","parent":"a""#)], #","depends_on":"kind""#),
        ])
        let form = try decode(json)
        #expect(refusal(form, ["kind": "b"], at: here) == nil)
        #expect(refusal(form, ["kind": "a"], at: here)?.path == "values.detail")
    }

    @Test func aDependentFieldIsNotRequiredWhenItsOptionalParentHasNoValue() throws {
        let json = form([
            field("kind", [choice("a")], #","required":false"#),
            field("detail", [choice("a1", #","parent":"a""#)], #","depends_on":"kind""#),
        ])
        let form = try decode(json)
        #expect(refusal(form, [:], at: here) == nil)
        let error = refusal(form, ["detail": "a1"], at: here)
        #expect(error?.path == "values.detail")
        #expect(error?.message == "needs a value for kind first")
    }

    @Test func anUnknownFieldIsNamed() throws {
        let error = refusal(try decode(Self.json), ["kind": "a", "detail": "a1", "line": "t1", "xyz": "1"], at: here)
        #expect(error?.path == "values.xyz")
        #expect(error?.message == "is not a field of this form")
    }

    @Test func aKeyThatIsNoNameIsRefusedWithoutBeingEchoed() throws {
        let error = refusal(try decode(Self.json), ["kind": "a", "détail\"}": "a1"], at: here)
        #expect(error?.path == "values")
        #expect(error?.message.contains("détail") == false)
    }

    @Test func anUnknownChoiceIsNamed() throws {
        let error = refusal(try decode(Self.json), ["kind": "c", "detail": "a1", "line": "t1"], at: here)
        #expect(error?.path == "values.kind")
        #expect(error?.message == "is not one of the choices of kind")
    }

    @Test func aDependentValueMustBelongToItsParentsValue() throws {
        let error = refusal(try decode(Self.json), ["kind": "a", "detail": "b1", "line": "t1"], at: here)
        #expect(error?.path == "values.detail")
        #expect(error?.message == "'b1' does not belong to kind 'a'")
    }

    @Test func aLocationDependentChoiceMustBeAvailableAtThePosition() throws {
        let form = try decode(Self.json)
        let error = refusal(form, ["kind": "a", "detail": "a1", "line": "t2"], at: here)
        #expect(error?.path == "values.line")
        #expect(error?.message == "'t2' is not available here")
        #expect(refusal(form, ["kind": "a", "detail": "a1", "line": "t1"], at: far)?.path == "values.line")
        #expect(error?.serviceError == ServiceError(.invalidArgument, "'t2' is not available here", field: "values.line"))
    }

    @Test func atMost32Values() throws {
        let form = try decode(Self.json)
        var values = Dictionary(uniqueKeysWithValues: (0..<32).map { ("k\($0)", "v") })
        #expect(refusal(form, values, at: here)?.path == "values.k0")  // 32 entries get as far as the names
        values["k32"] = "v"
        let error = refusal(form, values, at: here)
        #expect(error?.path == "values")
        #expect(error?.message.contains("at most 32") == true)
    }

    @Test func keysAndValuesAreAtMost64Bytes() throws {
        let form = try decode(Self.json)
        let value64 = String(repeating: "é", count: 32)  // 64 bytes
        let value65 = value64 + "a"
        #expect(refusal(form, ["kind": value64], at: here)?.message == "is not one of the choices of kind")
        let longValue = refusal(form, ["kind": value65], at: here)
        #expect(longValue?.path == "values.kind")
        #expect(longValue?.message == "is at most 64 bytes")
        let longKey = refusal(form, [value65: "a"], at: here)
        #expect(longKey?.path == "values")
        #expect(longKey?.message == "each key is at most 64 bytes")
        let huge = refusal(form, ["kind": String(repeating: "a", count: 2_000_000)], at: here)
        #expect(huge?.message == "is at most 64 bytes")
    }
}

/// The shipped form, deploy/notify-form.json, with submissions from around Sydney.
@Suite struct ShippedFormTests {
    let central = point(-33.8832, 151.2065)  // Central station
    let manlyWharf = point(-33.8003, 151.2843)
    let palmBeach = point(-33.5960, 151.3230)  // no line of the form comes this far
    let operaHouse = point(-33.8568, 151.2153)
    let parramatta = point(-33.8150, 151.0011)

    @Test func hasSixPickersInTheAppsLanguages() throws {
        let form = try shippedForm()
        #expect(form.fields.map(\.name) == ["kind", "detail", "line", "venue", "severity", "status"])
        #expect(form.field("detail")?.dependsOn == "kind")
        #expect(form.field("line")?.isLocationDependent == true)
        // The apps' languages (i18n/: en, ru, de; en-AU only where Australians say it otherwise) and French and Chinese.
        for field in form.fields {
            #expect(Set(field.labels.keys) == ["en", "ru", "de", "fr", "zh"], "\(field.name)")
            for choice in field.choices {
                #expect(Set(choice.labels.keys).subtracting(["en-au"]) == ["en", "ru", "de", "fr", "zh"], "\(field.name).\(choice.value)")
                if let australian = choice.labels["en-au"] { #expect(australian != choice.labels["en"], "\(choice.value)") }
            }
        }
        let russian = form.view(at: nil, language: "ru")
        #expect(russian.fields.first?.label == "Что случилось?")
        let australian = form.view(at: nil, language: "en-AU").fields.first { $0.name == "detail" }
        #expect(australian?.choices.first { $0.value == "replacement_bus" }?.label == "Trackwork: buses replace trains")
        #expect(australian?.choices.first { $0.value == "crash" }?.label == "Crash")
        #expect(form.view(at: nil, language: "de").fields.first?.label == "Was ist passiert?")
    }

    @Test func realisticSubmissionsPass() throws {
        let form = try shippedForm()
        let submissions: [([String: String], Coordinate)] = [
            (["kind": "transit", "detail": "delay", "line": "t1", "severity": "moderate"], central),
            (["kind": "transit", "detail": "crowded", "line": "l2", "severity": "minor", "status": "ongoing"], central),
            (["kind": "transit", "detail": "cancelled", "line": "f1", "severity": "severe"], manlyWharf),
            (["kind": "transit", "detail": "delay", "severity": "minor"], palmBeach),
            (["kind": "traffic", "detail": "crash", "severity": "severe"], parramatta),
            (["kind": "event", "detail": "concert", "venue": "opera_house", "severity": "minor"], operaHouse),
            (["kind": "event", "detail": "protest", "severity": "moderate"], central),
            (["kind": "hazard", "detail": "flooding", "severity": "severe", "status": "cleared"], palmBeach),
        ]
        for (values, position) in submissions {
            #expect(refusal(form, values, at: position) == nil, "\(values)")
        }
    }

    @Test(arguments: [
        (["kind": "transit", "detail": "delay", "severity": "moderate"], "values.line", "is required"),
        (["kind": "transit", "detail": "delay", "line": "f1", "severity": "moderate"], "values.line", "not available here"),
        (["kind": "transit", "detail": "crash", "line": "t1", "severity": "moderate"], "values.detail", "does not belong to kind 'transit'"),
        (["kind": "traffic", "detail": "crash", "line": "t1", "severity": "moderate"], "values.line", "does not belong to kind 'traffic'"),
        (["kind": "earthquake", "detail": "crash", "severity": "moderate"], "values.kind", "not one of the choices"),
        (["kind": "traffic", "detail": "crash"], "values.severity", "is required"),
        (["kind": "traffic", "detail": "crash", "severity": "moderate", "mood": "calm"], "values.mood", "not a field"),
        (["kind": "event", "detail": "sport", "venue": "scg", "severity": "minor"], "values.venue", "not available here"),
    ])
    func invalidSubmissionsAtCentralNameTheirField(values: [String: String], path: String, says: String) throws {
        let error = refusal(try shippedForm(), values, at: central)
        #expect(error?.path == path)
        #expect(error?.message.contains(says) == true, "\(String(describing: error))")
    }

    @Test func theViewAtCentralInCanadianFrench() throws {
        let view = try shippedForm().view(at: central, language: "fr-CA")
        #expect(view.fields.map(\.name) == ["kind", "detail", "line", "venue", "severity", "status"])
        #expect(view.fields[0].label == "Que se passe-t-il ?")
        #expect(view.fields[2].choices.map(\.value) == ["t1", "t4", "m1", "l2", "l3"])
        #expect(view.fields[3].choices.map(\.value) == ["elsewhere"])
        let atPalmBeach = try shippedForm().view(at: palmBeach, language: "zh")
        #expect(atPalmBeach.fields.map(\.name) == ["kind", "detail", "venue", "severity", "status"])
        #expect(atPalmBeach.fields[0].label == "发生了什么？")
    }
}
