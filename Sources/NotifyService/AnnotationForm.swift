import Bus
import Contracts
import Foundation
import Geo
import ServiceKit

/// The form of pickers through which users submit annotations (issue 12, **Form**): decoded
/// strictly from JSON, every bound checked before the work it limits.
///
/// The JSON shape (`deploy/notify-form.json` is an example):
///
/// ```json
/// {"version": 3,
///  "fields": [
///    {"name": "kind", "labels": {"en": "What happened?", "fr": "Que se passe-t-il ?"},
///     "choices": [{"value": "transit", "labels": {"en": "Transit"}}]},
///    {"name": "detail", "labels": {"en": "Detail"}, "depends_on": "kind", "required": false,
///     "choices": [{"value": "delay", "parent": "transit", "labels": {"en": "Delay"}}]},
///    {"name": "line", "labels": {"en": "Line"},
///     "choices": [{"value": "t1", "labels": {"en": "T1"},
///                  "region": {"lat": -33.8688, "lon": 151.2093, "radius_m": 5000}}]}]}
/// ```
///
/// - `version`: an integer from 1 to `maxVersion`.
/// - `fields`: 1 to `maxFields`, in the order the client shows them. A field's `name` and a
///   choice's `value` are 1 to `maxNameBytes` bytes of `a-z`, `0-9` and `_`; names are unique
///   in the form, values in their field.
/// - `labels`: language tag to label, `en` required, at most `maxLanguages` tags (2 to 8
///   ASCII letters or `-`, beginning and ending with a letter, case ignored), each label 1 to
///   `maxLabelBytes` UTF-8 bytes on one line.
/// - `required`: default true. A field with nothing to pick at the position (see `validate`)
///   is not required there.
/// - `choices`: 1 to `maxChoices` per field.
/// - `depends_on`: the name of an earlier field. Each choice then names in `parent` a value of
///   that field: the choice can be picked only when the parent field holds that value.
/// - `region` (optional, per choice): where the choice exists, a circle
///   `{lat, lon, radius_m}` (radius at most `maxRadiusMeters`) or a box
///   `{south, west, north, east}` in degrees; a box with `west > east` crosses the 180th
///   meridian. A choice without a region exists everywhere.
///
/// Unknown keys are refused, so a misspelt `depends_on` is an error rather than a field
/// that silently depends on nothing. Every refusal is a `FormError` naming the path of what
/// is wrong (`fields[2].choices[5].parent`).
public struct AnnotationForm: Sendable, Equatable {
    /// The form's version, which `annotations.form.set` raises when an admin replaces it.
    public let version: Int
    /// The pickers, in order.
    public let fields: [Field]
    /// Where each field is in `fields`, by name.
    private let fieldIndex: [String: Int]

    /// A form file is at most 256 KiB.
    public static let maxBytes = 262_144
    /// Nesting levels of a form: root, `fields`, a field, `choices`, a choice, its labels or region.
    public static let maxDepth = 6
    /// The largest version number.
    public static let maxVersion = Int(Int32.max)
    /// Fields in a form.
    public static let maxFields = 32
    /// Choices in one field.
    public static let maxChoices = 256
    /// Languages of one label set.
    public static let maxLanguages = 16
    /// UTF-8 bytes of one label.
    public static let maxLabelBytes = 200
    /// UTF-8 bytes of a field's name or a choice's value.
    public static let maxNameBytes = 32
    /// The largest radius of a circle region: 100 km.
    public static let maxRadiusMeters = 100_000.0
    /// Entries in the values of a submission.
    public static let maxValues = 32
    /// UTF-8 bytes of each key and each value of a submission.
    public static let maxValueBytes = 64

    /// One picker.
    public struct Field: Sendable, Equatable {
        /// Its key in a submission's values.
        public let name: String
        /// Its label by lower-case language tag; always has `en`.
        public let labels: [String: String]
        /// Whether a submission must hold a value for it wherever it has something to pick.
        public let required: Bool
        /// The earlier field whose value selects this field's choices, if any.
        public let dependsOn: String?
        /// What can be picked, in order.
        public let choices: [Choice]
        /// Where each choice is in `choices`, by value.
        let choiceIndex: [String: Int]

        /// The choice with `value`, if the field has one.
        public func choice(_ value: String) -> Choice? {
            choiceIndex[value].map { choices[$0] }
        }

        /// Whether some choice exists only in a region.
        public var isLocationDependent: Bool { choices.contains { $0.region != nil } }
    }

    /// One thing a picker offers.
    public struct Choice: Sendable, Equatable {
        /// What a submission sends.
        public let value: String
        /// Its label by lower-case language tag; always has `en`.
        public let labels: [String: String]
        /// The parent field's value this choice belongs to, when its field has `depends_on`.
        public let parent: String?
        /// Where the choice exists; nil for everywhere.
        public let region: ChoiceRegion?

        /// Whether the choice can be picked at `position`.
        public func isAvailable(at position: Coordinate) -> Bool {
            region?.contains(position) ?? true
        }
    }

    /// Decodes and checks a form; the bytes are bounded (`maxBytes`, `maxDepth`) before they
    /// are parsed, and each count before the elements it counts are read.
    public init(json: Data) throws(FormError) {
        guard json.count <= Self.maxBytes else {
            throw FormError("", "a form is at most \(Self.maxBytes) bytes, this one is \(json.count)")
        }
        do {
            try StrictJSON.check(json, maxDepth: Self.maxDepth)
        } catch {
            throw FormError("", "malformed JSON: \(error.message)")
        }
        let text = json.trimmingWhitespace()
        let tree = try FormJSON.read(text, text.startIndex..<text.endIndex, at: "")
        let root = try tree.object(at: "", keys: ["version", "fields"])
        version = try Self.readInteger(root["version"], at: "version", in: 1...Self.maxVersion)
        let fieldValues = try tree.member("fields", at: "").array(at: "fields", count: 1...Self.maxFields)
        var fields: [Field] = []
        var fieldIndex: [String: Int] = [:]
        for (i, value) in fieldValues.enumerated() {
            let field = try Self.readField(value, at: "fields[\(i)]", earlier: fields, index: fieldIndex)
            fieldIndex[field.name] = i
            fields.append(field)
        }
        self.fields = fields
        self.fieldIndex = fieldIndex
    }

    /// The field called `name`, if the form has one.
    public func field(_ name: String) -> Field? {
        fieldIndex[name].map { fields[$0] }
    }

    /// Checks a submission's `values` (field name to choice value) made at `position`.
    ///
    /// Refused, with the path of the value at fault (`values.kind`):
    /// - more than `maxValues` entries, or a key or value over `maxValueBytes` bytes;
    /// - a key that names no field, a value that names no choice of its field;
    /// - a dependent field's value when its parent field has no value, or whose `parent` is
    ///   not the parent field's value;
    /// - a choice whose region does not contain `position`;
    /// - no value for a required field that has something to pick: a choice available at
    ///   `position` and, for a dependent field, belonging to its parent's value. So a
    ///   location-dependent field with no choice here is not required here, nor is a
    ///   dependent field whose parent's value has no choices (or no value).
    public func validate(values: [String: String], at position: Coordinate) throws(FormError) {
        guard values.count <= Self.maxValues else {
            throw FormError("values", "at most \(Self.maxValues) values, got \(values.count)")
        }
        guard values.keys.allSatisfy({ $0.utf8.count <= Self.maxValueBytes }) else {
            throw FormError("values", "each key is at most \(Self.maxValueBytes) bytes")
        }
        let keys = values.keys.sorted()
        for key in keys {
            guard Self.isName(key) else {
                throw FormError("values", "each key is a field name: 1 to \(Self.maxNameBytes) bytes of a-z, 0-9 and _")
            }
            guard let value = values[key], value.utf8.count <= Self.maxValueBytes else {
                throw FormError("values.\(key)", "is at most \(Self.maxValueBytes) bytes")
            }
            guard field(key) != nil else { throw FormError("values.\(key)", "is not a field of this form") }
        }
        for field in fields {
            let path = "values.\(field.name)"
            let parentValue = field.dependsOn.flatMap { values[$0] }
            guard let value = values[field.name] else {
                let somethingToPick = field.choices.contains { choice in
                    choice.isAvailable(at: position) && (field.dependsOn == nil || choice.parent == parentValue)
                }
                if field.required && somethingToPick { throw FormError(path, "is required") }
                continue
            }
            guard let choice = field.choice(value) else {
                throw FormError(path, "is not one of the choices of \(field.name)")
            }
            if let parentName = field.dependsOn {
                guard let parentValue else { throw FormError(path, "needs a value for \(parentName) first") }
                guard choice.parent == parentValue else {
                    throw FormError(path, "'\(value)' does not belong to \(parentName) '\(parentValue)'")
                }
            }
            guard choice.isAvailable(at: position) else {
                throw FormError(path, "'\(value)' is not available here")
            }
        }
    }
}

/// Why a form or a submission was refused: where, and what is wrong, in words fit for a client.
///
/// The path names the value at fault as the JSON holds it: `fields[2].choices[5].parent` in
/// a form, `values.line` in a submission, empty for the whole document (too large, not JSON).
/// Paths and messages quote no text that failed its checks: a key that is not a name is not
/// echoed, only names and values the form itself defines.
public struct FormError: Error, Sendable, Equatable, CustomStringConvertible, ServiceErrorConvertible {
    /// The path of the value at fault; empty for the whole document.
    public let path: String
    /// What is wrong with it.
    public let message: String

    /// An error at `path`.
    public init(_ path: String, _ message: String) {
        self.path = path
        self.message = message
    }

    /// `invalid_argument`, with the path as its field (none for the whole document).
    public var serviceError: ServiceError {
        ServiceError(.invalidArgument, message, field: path.isEmpty ? nil : path)
    }

    public var description: String { path.isEmpty ? message : "\(path): \(message)" }
}

// MARK: - Reading the form

extension AnnotationForm {
    static func readField(_ value: FormJSON, at path: String, earlier: [Field], index: [String: Int]) throws(FormError) -> Field {
        let members = try value.object(at: path, keys: ["name", "labels", "required", "depends_on", "choices"])
        let name = try readName(value.member("name", at: path), at: "\(path).name")
        if let other = index[name] { throw FormError("\(path).name", "'\(name)' is already the name of fields[\(other)]") }
        let labels = try readLabels(value.member("labels", at: path), at: "\(path).labels")
        var required = true
        if let flag = members["required"] {
            guard case .bool(let value) = flag else { throw FormError("\(path).required", "must be true or false") }
            required = value
        }
        var parentField: Field?
        if let dependsOn = members["depends_on"] {
            guard case .string(let parentName) = dependsOn, let at = index[parentName] else {
                throw FormError("\(path).depends_on", "must be the name of an earlier field")
            }
            parentField = earlier[at]
        }
        let choiceValues = try value.member("choices", at: path).array(at: "\(path).choices", count: 1...maxChoices)
        var choices: [Choice] = []
        var choiceIndex: [String: Int] = [:]
        for (j, choiceValue) in choiceValues.enumerated() {
            let choice = try readChoice(choiceValue, at: "\(path).choices[\(j)]", parentField: parentField)
            if let other = choiceIndex[choice.value] {
                throw FormError("\(path).choices[\(j)].value", "'\(choice.value)' is already the value of choices[\(other)]")
            }
            choiceIndex[choice.value] = j
            choices.append(choice)
        }
        return Field(
            name: name, labels: labels, required: required, dependsOn: parentField?.name,
            choices: choices, choiceIndex: choiceIndex)
    }

    static func readChoice(_ value: FormJSON, at path: String, parentField: Field?) throws(FormError) -> Choice {
        let members = try value.object(at: path, keys: ["value", "labels", "parent", "region"])
        let choiceValue = try readName(value.member("value", at: path), at: "\(path).value")
        let labels = try readLabels(value.member("labels", at: path), at: "\(path).labels")
        var parent: String?
        if let parentField {
            guard case .string(let parentValue) = try value.member("parent", at: path), parentField.choice(parentValue) != nil else {
                throw FormError("\(path).parent", "must be a value of \(parentField.name), the field this one depends on")
            }
            parent = parentValue
        } else if members["parent"] != nil {
            throw FormError("\(path).parent", "only a field with depends_on has choices with a parent")
        }
        var region: ChoiceRegion?
        if let regionValue = members["region"] { region = try readRegion(regionValue, at: "\(path).region") }
        return Choice(value: choiceValue, labels: labels, parent: parent, region: region)
    }

    static func readRegion(_ value: FormJSON, at path: String) throws(FormError) -> ChoiceRegion {
        guard case .object(let members) = value else { throw FormError(path, "must be an object") }
        let circleKeys: Set<String> = ["lat", "lon", "radius_m"]
        let boxKeys: Set<String> = ["south", "west", "north", "east"]
        if members.keys.contains(where: circleKeys.contains) {
            _ = try value.object(at: path, keys: circleKeys)
            let lat = try readNumber(value.member("lat", at: path), at: "\(path).lat", in: -90...90)
            let lon = try readNumber(value.member("lon", at: path), at: "\(path).lon", in: -180...180)
            let radius = try readNumber(value.member("radius_m", at: path), at: "\(path).radius_m", in: 0...maxRadiusMeters)
            guard radius > 0 else { throw FormError("\(path).radius_m", "must be greater than 0") }
            return .circle(center: Coordinate(uncheckedLatitude: lat, longitude: lon), radiusMeters: radius)
        }
        if members.keys.contains(where: boxKeys.contains) {
            _ = try value.object(at: path, keys: boxKeys)
            let south = try readNumber(value.member("south", at: path), at: "\(path).south", in: -90...90)
            let west = try readNumber(value.member("west", at: path), at: "\(path).west", in: -180...180)
            let north = try readNumber(value.member("north", at: path), at: "\(path).north", in: -90...90)
            let east = try readNumber(value.member("east", at: path), at: "\(path).east", in: -180...180)
            guard south <= north else { throw FormError("\(path).north", "must not be less than south") }
            do {
                return .box(try BoundingBox(south: south, west: west, north: north, east: east))
            } catch {
                throw FormError(path, error.description)
            }
        }
        throw FormError(path, "must be a circle {lat, lon, radius_m} or a box {south, west, north, east}")
    }

    /// Labels by lower-case language tag: the count first, then each tag and label.
    static func readLabels(_ value: FormJSON, at path: String) throws(FormError) -> [String: String] {
        guard case .object(let members) = value else { throw FormError(path, "must be an object of language tag to label") }
        guard members.count <= maxLanguages else { throw FormError(path, "at most \(maxLanguages) languages") }
        var labels: [String: String] = [:]
        for (tag, label) in members.sorted(by: { $0.key < $1.key }) {
            guard isLanguageTag(tag) else {
                throw FormError(path, "each language tag is 2 to 8 ASCII letters or '-', beginning and ending with a letter")
            }
            let key = tag.lowercased()
            guard labels[key] == nil else { throw FormError("\(path).\(tag)", "is a second label for \(key)") }
            guard case .string(let text) = label else { throw FormError("\(path).\(tag)", "must be a string") }
            guard text.utf8.count <= maxLabelBytes else {
                throw FormError("\(path).\(tag)", "is at most \(maxLabelBytes) bytes of UTF-8, this one is \(text.utf8.count)")
            }
            guard !text.isEmpty else { throw FormError("\(path).\(tag)", "must not be empty") }
            guard !TextRule.hasForbiddenScalar(text, lines: .single) else {
                throw FormError("\(path).\(tag)", "must be one line without control or bidirectional formatting characters")
            }
            labels[key] = text
        }
        guard labels["en"] != nil else { throw FormError("\(path).en", "an English label is required") }
        return labels
    }

    static func readName(_ value: FormJSON, at path: String) throws(FormError) -> String {
        guard case .string(let name) = value, isName(name) else {
            throw FormError(path, "must be 1 to \(maxNameBytes) bytes of a-z, 0-9 and _")
        }
        return name
    }

    static func readNumber(_ value: FormJSON, at path: String, in range: ClosedRange<Double>) throws(FormError) -> Double {
        guard case .number(let number) = value else { throw FormError(path, "must be a number") }
        guard range.contains(number) else {
            throw FormError(path, "must be in [\(range.lowerBound.formatted()), \(range.upperBound.formatted())]")
        }
        return number
    }

    static func readInteger(_ value: FormJSON?, at path: String, in range: ClosedRange<Int>) throws(FormError) -> Int {
        guard let value else { throw FormError(path, "is missing") }
        guard case .number(let number) = value, number.rounded() == number,
            Double(range.lowerBound) <= number, number <= Double(range.upperBound)
        else {
            throw FormError(path, "must be an integer from \(range.lowerBound) to \(range.upperBound)")
        }
        return Int(number)
    }

    /// 1 to `maxNameBytes` bytes of `a-z`, `0-9` and `_`.
    static func isName(_ text: String) -> Bool {
        let bytes = text.utf8
        return (1...maxNameBytes).contains(bytes.count)
            && bytes.allSatisfy { (UInt8(ascii: "a")...UInt8(ascii: "z")).contains($0) || (UInt8(ascii: "0")...UInt8(ascii: "9")).contains($0) || $0 == UInt8(ascii: "_") }
    }

    /// 2 to 8 ASCII letters or `-`, beginning and ending with a letter.
    static func isLanguageTag(_ text: String) -> Bool {
        let bytes = Array(text.utf8)
        guard (2...8).contains(bytes.count), let first = bytes.first, let last = bytes.last else { return false }
        return isASCIILetter(first) && isASCIILetter(last) && bytes.allSatisfy { isASCIILetter($0) || $0 == UInt8(ascii: "-") }
    }
}

/// `A-Z` or `a-z`.
private func isASCIILetter(_ byte: UInt8) -> Bool { (0x41...0x5A).contains(byte) || (0x61...0x7A).contains(byte) }

extension Data {
    /// The bytes without JSON's white space around them; not empty for strict JSON.
    fileprivate func trimmingWhitespace() -> Data {
        func isSpace(_ byte: UInt8) -> Bool { byte == 0x20 || byte == 0x09 || byte == 0x0A || byte == 0x0D }
        let start = firstIndex { !isSpace($0) } ?? endIndex
        let end = lastIndex { !isSpace($0) }.map { index(after: $0) } ?? start
        return self[start..<end]
    }
}

extension Double {
    /// `100000` rather than `100000.0` in a message.
    fileprivate func formatted() -> String {
        rounded() == self && abs(self) < 1e15 ? String(Int64(self)) : String(self)
    }
}

/// A JSON value as the form reader walks it, read by span (`JSONSpan`) from text that
/// `StrictJSON` has checked, so its depth is bounded and every key is seen, a repeated one too.
enum FormJSON: Equatable {
    case null
    case bool(Bool)
    case number(Double)
    case string(String)
    case array([FormJSON])
    case object([String: FormJSON])

    /// The value at `range` of `json`, strict JSON; `path` names it in a refusal.
    static func read(_ json: Data, _ range: Range<Int>, at path: String) throws(FormError) -> FormJSON {
        switch json[range.lowerBound] {
        case UInt8(ascii: "{"):
            guard let members = JSONSpan.members(of: json[range]) else { throw FormError(path, "malformed object") }
            var object: [String: FormJSON] = [:]
            for (key, value) in members {
                // A key that is not a name is refused later as unknown, without being echoed.
                let memberPath = AnnotationForm.isName(key) ? (path.isEmpty ? key : "\(path).\(key)") : path
                guard object[key] == nil else { throw FormError(memberPath, "appears twice") }
                object[key] = try read(json, value, at: memberPath)
            }
            return .object(object)
        case UInt8(ascii: "["):
            guard let ranges = JSONSpan.elements(at: range, in: json) else { throw FormError(path, "malformed array") }
            var elements: [FormJSON] = []
            for (i, element) in ranges.enumerated() { elements.append(try read(json, element, at: "\(path)[\(i)]")) }
            return .array(elements)
        case UInt8(ascii: "\""):
            guard let text = JSONSpan.string(at: range, in: json) else { throw FormError(path, "malformed string") }
            return .string(text)
        case UInt8(ascii: "t"): return .bool(true)
        case UInt8(ascii: "f"): return .bool(false)
        case UInt8(ascii: "n"): return .null
        default:
            guard let number = JSONNumber.finite(json[range]) else { throw FormError(path, "is a number out of range") }
            return .number(number)
        }
    }

    /// The members of an object, refusing keys outside `keys` (in sorted order, so the
    /// refusal is the same every time).
    func object(at path: String, keys: Set<String>) throws(FormError) -> [String: FormJSON] {
        guard case .object(let members) = self else { throw FormError(path, "must be an object") }
        if let unknown = members.keys.filter({ !keys.contains($0) }).min() {
            let allowed = keys.sorted().joined(separator: ", ")
            guard AnnotationForm.isName(unknown) else { throw FormError(path, "has an unknown key; the keys are \(allowed)") }
            throw FormError(path.isEmpty ? unknown : "\(path).\(unknown)", "is not a key here; the keys are \(allowed)")
        }
        return members
    }

    /// The member `key` of an object, which must be there.
    func member(_ key: String, at path: String) throws(FormError) -> FormJSON {
        guard case .object(let members) = self else { throw FormError(path, "must be an object") }
        guard let value = members[key] else { throw FormError(path.isEmpty ? key : "\(path).\(key)", "is missing") }
        return value
    }

    /// The elements of an array whose count is in `count`.
    func array(at path: String, count: ClosedRange<Int>) throws(FormError) -> [FormJSON] {
        guard case .array(let elements) = self else { throw FormError(path, "must be an array") }
        guard count.contains(elements.count) else {
            throw FormError(path, "must hold \(count.lowerBound) to \(count.upperBound) entries, this one holds \(elements.count)")
        }
        return elements
    }
}
