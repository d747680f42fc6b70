import Bus

// The shape of a wire value: its JSON type and limits. A params type's shape is read from its
// `Decodable` conformance (`SchemaProbe`: its keys, their types, which are required) and its
// limits from its `FieldRule`s; `SchemaCheck` holds a request body to both before the body is
// decoded. So a field's type and limits are said once, where the type is, and a document that
// describes the params to clients can be written from the same shape.

/// What a JSON value may be.
public indirect enum Schema: Sendable, Equatable {
    case string(StringBounds)
    case integer(IntegerBounds)
    case number(NumberBounds)
    case boolean
    /// One of these strings (a Swift enum of `String` raw values).
    case enumeration([String])
    case array(of: Schema, items: CountBounds)
    case object(ObjectSchema)
    /// An object whose keys are free (`{"en":…, "ru":…}`), each value of one shape.
    case dictionary(of: Schema, entries: CountBounds)
    /// Any of these shapes (a place id or a point), as a decoder that tries one then another reads it.
    case anyOf([Schema])
    /// Any JSON value, checked by the method itself (a form definition).
    case any
}

/// Limits of a string: in characters (Swift `Character`s, as users count) and in UTF-8 bytes.
public struct StringBounds: Sendable, Equatable {
    public var characters: ClosedRange<Int>?
    /// Whether `characters` counts the text once the white space around it is trimmed (a
    /// name), as its handler does, rather than as sent.
    public var trimmed = false
    public var maxBytes: Int?
    /// A JSON Schema `format` (`date-time`, `uri`) or a documented one of ours.
    public var format: String?

    public init(characters: ClosedRange<Int>? = nil, maxBytes: Int? = nil, format: String? = nil) {
        self.characters = characters
        self.maxBytes = maxBytes
        self.format = format
    }
}

/// Limits of an integer.
public struct IntegerBounds: Sendable, Equatable {
    public var range: ClosedRange<Int64>?
    public init(_ range: ClosedRange<Int64>? = nil) { self.range = range }
}

/// Limits of a number; `exclusiveMinimum` makes the lower bound itself refused (a radius > 0).
public struct NumberBounds: Sendable, Equatable {
    public var range: ClosedRange<Double>?
    public var exclusiveMinimum: Bool

    public init(_ range: ClosedRange<Double>? = nil, exclusiveMinimum: Bool = false) {
        self.range = range
        self.exclusiveMinimum = exclusiveMinimum
    }
}

/// How many items an array (or entries an object) may hold.
public struct CountBounds: Sendable, Equatable {
    public var range: ClosedRange<Int>?
    public init(_ range: ClosedRange<Int>? = nil) { self.range = range }
}

/// An object's members: each known one with its shape; any other is refused.
public struct ObjectSchema: Sendable, Equatable {
    public struct Member: Sendable, Equatable {
        public var name: String
        public var schema: Schema
        public var required: Bool
        /// Whether `null` is accepted (an optional member may be cleared by null where the method says so).
        public var nullable: Bool

        public init(_ name: String, _ schema: Schema, required: Bool, nullable: Bool = false) {
            self.name = name
            self.schema = schema
            self.required = required
            self.nullable = nullable
        }
    }

    public var members: [Member]

    public init(_ members: [Member]) { self.members = members }

    /// The member named `name`.
    public func member(_ name: String) -> Member? { members.first { $0.name == name } }
}

/// A limit on one field of a params type, named by its path (`limit`, `near.lat`,
/// `stops[]` for each item of `stops`): declared once beside the type, checked by `SchemaCheck`
/// and written into the JSON Schema.
public struct FieldRule: Sendable {
    public enum Limit: Sendable {
        case integer(ClosedRange<Int64>)
        case number(ClosedRange<Double>, exclusiveMinimum: Bool)
        case characters(ClosedRange<Int>)
        /// Characters counted once the white space around the text is trimmed.
        case trimmedCharacters(ClosedRange<Int>)
        case bytes(Int)
        case format(String)
        case items(ClosedRange<Int>)
        /// The field is any of these types, each read by its own decoder (the probe sees only
        /// the first a decoder tries).
        case anyOf([any Decodable.Type])
    }

    public let path: String
    public let limits: [Limit]

    public init(_ path: String, _ limits: Limit...) {
        self.path = path
        self.limits = limits
    }

    /// An integer in `range`.
    public static func integer(_ path: String, _ range: ClosedRange<Int64>) -> FieldRule { FieldRule(path, .integer(range)) }
    /// A number in `range` (above its lower bound, when `exclusiveMinimum`).
    public static func number(_ path: String, _ range: ClosedRange<Double>, exclusiveMinimum: Bool = false) -> FieldRule {
        FieldRule(path, .number(range, exclusiveMinimum: exclusiveMinimum))
    }
    /// A string of `characters` characters and at most `bytes` UTF-8 bytes.
    public static func string(_ path: String, characters: ClosedRange<Int>, bytes: Int) -> FieldRule {
        FieldRule(path, .characters(characters), .bytes(bytes))
    }
    /// A text field held to `rule` (at `path`, else the rule's field): its bytes and characters
    /// as sent, in the schema and checked before the handler, which holds the text to the same
    /// rule for what a schema cannot say (control characters, trimming).
    /// `trimmed`: the handler counts the text once the white space around it is trimmed (a
    /// name), so the check does too.
    public static func text(_ rule: TextRule, at path: String? = nil, trimmed: Bool = false) -> FieldRule {
        let characters = 0...rule.maxCharacters
        return FieldRule(path ?? rule.field, trimmed ? .trimmedCharacters(characters) : .characters(characters), .bytes(rule.maxBytes))
    }
}

/// A type whose JSON shape is read from its `Decodable` conformance, with the limits its rules add.
public protocol DeclaredShape: Decodable, Sendable {
    /// The limits of its fields, each named by its path.
    static var fieldRules: [FieldRule] { get }
}

extension DeclaredShape {
    public static var fieldRules: [FieldRule] { [] }
}

/// A wrong rule: a path no field has, or a limit that does not fit the field's type.
public struct SchemaRuleError: Error, Sendable, Equatable, CustomStringConvertible {
    public let description: String
}

extension Schema {
    /// This shape with `rules` applied, each at its path.
    func applying(_ rules: [FieldRule]) throws(SchemaRuleError) -> Schema {
        var result = self
        for rule in rules {
            let path = rule.path.split(separator: ".", omittingEmptySubsequences: false).map(String.init)
            try result.apply(rule.limits, at: path[...], whole: rule.path)
        }
        return result
    }

    private mutating func apply(_ limits: [FieldRule.Limit], at path: ArraySlice<String>, whole: String) throws(SchemaRuleError) {
        guard let first = path.first else {
            for limit in limits { try apply(limit, whole: whole) }
            return
        }
        // `name[]` is each item of the array `name` (or each value of a dictionary).
        let items = first.hasSuffix("[]")
        let name = items ? String(first.dropLast(2)) : first
        guard case .object(var object) = self, let index = object.members.firstIndex(where: { $0.name == name }) else {
            throw SchemaRuleError(description: "no field '\(whole)'")
        }
        if items {
            switch object.members[index].schema {
            case .array(var element, let count):
                try element.apply(limits, at: path.dropFirst(), whole: whole)
                object.members[index].schema = .array(of: element, items: count)
            case .dictionary(var value, let count):
                try value.apply(limits, at: path.dropFirst(), whole: whole)
                object.members[index].schema = .dictionary(of: value, entries: count)
            default:
                throw SchemaRuleError(description: "'\(name)' in '\(whole)' is not an array")
            }
        } else {
            try object.members[index].schema.apply(limits, at: path.dropFirst(), whole: whole)
        }
        self = .object(object)
    }

    private mutating func apply(_ limit: FieldRule.Limit, whole: String) throws(SchemaRuleError) {
        switch (limit, self) {
        case (.integer(let range), .integer(var bounds)):
            bounds.range = range
            self = .integer(bounds)
        case (.number(let range, let exclusive), .number(var bounds)):
            bounds.range = range
            bounds.exclusiveMinimum = exclusive
            self = .number(bounds)
        case (.characters(let range), .string(var bounds)):
            bounds.characters = range
            self = .string(bounds)
        case (.trimmedCharacters(let range), .string(var bounds)):
            bounds.characters = range
            bounds.trimmed = true
            self = .string(bounds)
        case (.bytes(let bytes), .string(var bounds)):
            bounds.maxBytes = bytes
            self = .string(bounds)
        case (.format(let format), .string(var bounds)):
            bounds.format = format
            self = .string(bounds)
        case (.items(let range), .array(let element, _)):
            self = .array(of: element, items: CountBounds(range))
        case (.items(let range), .dictionary(let value, _)):
            self = .dictionary(of: value, entries: CountBounds(range))
        case (.anyOf(let types), _):
            do {
                self = .anyOf(try types.map { try SchemaProbe.plainShape(of: $0) })
            } catch {
                throw SchemaRuleError(description: "'\(whole)': \(error)")
            }
        default:
            throw SchemaRuleError(description: "\(limit) does not fit the field '\(whole)' (\(self))")
        }
    }
}

/// A method that takes no params takes none: `{}` only.
extension Empty: DeclaredShape {}
