import Foundation
import Synchronization

/// Reads the JSON shape of a `Decodable` type from its own `init(from:)`: a decoder that
/// answers every required member with a stand-in value (an empty string, zero, false, one item
/// of an array, the first case of an enum), every optional one as absent, and writes down what
/// was asked — which keys, of which types, which with `decode` (required) and which with
/// `decodeIfPresent` or after `contains` (optional, and null where `decodeNil` was asked). A decoder must therefore ask for every
/// member whatever the others hold (decode what is optional, then check combinations), and
/// accept the stand-ins; `SchemaProbe.shape` throws for one that refuses them.
public enum SchemaProbe {
    /// The shape of `type` with its declared limits (`DeclaredShape.fieldRules`), read once
    /// and kept.
    public static func shape<T: DeclaredShape>(of type: T.Type) throws -> Schema {
        let key = ObjectIdentifier(type)
        if let known = cache.withLock({ $0[key] }) { return known }
        let shape = try plainShape(of: type).applying(T.fieldRules)
        cache.withLock { $0[key] = shape }
        return shape
    }

    /// The shape of `type` as its decoder asks for it, with no limits.
    public static func plainShape<T: Decodable>(of type: T.Type) throws -> Schema {
        let node = ProbeNode()
        _ = try ProbeNode.value(T.self, into: node, path: [])
        return try node.schema(path: String(describing: type))
    }

    private static let cache = Mutex<[ObjectIdentifier: Schema]>([:])
}

/// A type the probe cannot read by decoding: it is said whole.
struct ProbeRefusal: Error, CustomStringConvertible {
    let description: String
}

/// What was asked of one value.
final class ProbeNode {
    enum Kind {
        case unknown, string, number, boolean, any
        /// An integer of a type whose values are `range` (as far as Int64 holds them).
        case integer(ClosedRange<Int64>)
        /// A type that says its shape itself (`SaysItsShape`).
        case said(Schema)
        case enumeration([String])
        case array(ProbeNode)
        case dictionary(ProbeNode)
        case object
    }

    var kind: Kind = .unknown
    /// The limits a nested type declares for itself (a point's latitude), applied to its shape.
    var rules: [FieldRule] = []
    /// The members asked for, in the order first asked; `optional` once `contains` asked for it,
    /// so a `decode` after it does not make it required.
    var members: [(name: String, node: ProbeNode, required: Bool, nullable: Bool, optional: Bool)] = []

    func member(_ name: String) -> Int {
        if let index = members.firstIndex(where: { $0.name == name }) { return index }
        members.append((name, ProbeNode(), false, false, false))
        return members.count - 1
    }

    func schema(path: String) throws -> Schema {
        switch kind {
        case .unknown: throw ProbeRefusal(description: "\(path): nothing was decoded")
        case .string: return .string(StringBounds())
        case .integer(let range): return .integer(IntegerBounds(range))
        case .number: return .number(NumberBounds())
        case .boolean: return .boolean
        case .any: return .any
        case .said(let schema): return schema
        case .enumeration(let cases): return .enumeration(cases)
        case .array(let element): return .array(of: try element.schema(path: path + "[]"), items: CountBounds())
        case .dictionary(let value): return .dictionary(of: try value.schema(path: path + "[]"), entries: CountBounds())
        case .object:
            let object = Schema.object(
                ObjectSchema(
                    try members.map { member in
                        ObjectSchema.Member(member.name, try member.node.schema(path: path + "." + member.name), required: member.required, nullable: member.nullable)
                    }))
            do {
                return try object.applying(rules)
            } catch {
                throw ProbeRefusal(description: "\(path): \(error)")
            }
        }
    }

    /// A stand-in value of `type`, recording its shape in `node`.
    static func value<T: Decodable>(_ type: T.Type, into node: ProbeNode, path: [CodingKey]) throws -> T {
        if let stand = standIn(type, node) { return stand }
        // A type that contains itself (or `URL`, whose decoder reads an optional base URL) would
        // be probed without end; no params are nested this deep.
        guard path.count < 16 else { throw ProbeRefusal(description: "\(type) nests deeper than 16 levels (a recursive type?)") }
        if let any = AnyJSON() as? T {
            node.kind = .any
            return any
        }
        if let said = type as? any SaysItsShape.Type {
            node.kind = .said(try said.shape())
            guard let example = said.example as? T else { throw ProbeRefusal(description: "\(type)'s example is of another type") }
            return example
        }
        if let enumeration = type as? any (CaseIterable & RawRepresentable).Type, let (value, cases) = firstCase(enumeration) {
            node.kind = .enumeration(cases)
            if let value = value as? T { return value }
        }
        if let dictionary = type as? any ProbedDictionary.Type {
            let value = ProbeNode()
            node.kind = .dictionary(value)
            guard let empty = try dictionary.probe(value: value, path: path) as? T else { throw ProbeRefusal(description: "\(type) is no dictionary") }
            return empty
        }
        if let optional = type as? any ProbedOptional.Type {
            // `decode(Optional<X>.self)`: X, which may be null.
            guard let none = try optional.probeWrapped(into: node, path: path) as? T else { throw ProbeRefusal(description: "\(type) is no optional") }
            return none
        }
        let value = try T(from: ProbeDecoder(node: node, codingPath: path))
        if let declared = type as? any DeclaredShape.Type { node.rules = declared.fieldRules }
        // A type that reads nothing (`Empty`) is an object with no members.
        if case .unknown = node.kind { node.kind = .object }
        return value
    }

    /// An integer of type `I`: its values' range (as far as Int64 holds them), and a zero to stand in.
    private static func integer<I: FixedWidthInteger, T>(_ type: I.Type, _ node: ProbeNode) -> T? {
        node.kind = .integer(Int64(clamping: I.min)...Int64(clamping: I.max))
        return I.zero as? T
    }

    private static func standIn<T>(_ type: T.Type, _ node: ProbeNode) -> T? {
        switch type {
        case is String.Type:
            node.kind = .string
            return "" as? T
        case is Bool.Type:
            node.kind = .boolean
            return false as? T
        case is Double.Type:
            node.kind = .number
            return 0.0 as? T
        case is Float.Type:
            node.kind = .number
            return Float(0) as? T
        case is Int.Type: return integer(Int.self, node)
        case is Int64.Type: return integer(Int64.self, node)
        case is Int32.Type: return integer(Int32.self, node)
        case is Int16.Type: return integer(Int16.self, node)
        case is Int8.Type: return integer(Int8.self, node)
        case is UInt.Type: return integer(UInt.self, node)
        case is UInt64.Type: return integer(UInt64.self, node)
        case is UInt32.Type: return integer(UInt32.self, node)
        case is UInt16.Type: return integer(UInt16.self, node)
        case is UInt8.Type: return integer(UInt8.self, node)
        default: return nil
        }
    }

    private static func firstCase<E: CaseIterable & RawRepresentable>(_ type: E.Type) -> (Any, [String])? {
        let cases = type.allCases.compactMap { $0.rawValue as? String }
        guard let first = type.allCases.first, cases.count == type.allCases.count else { return nil }
        return (first, cases)
    }
}

/// A dictionary with string keys, probed as one stand-in entry.
protocol ProbedDictionary {
    static func probe(value: ProbeNode, path: [CodingKey]) throws -> Any
}

extension Dictionary: ProbedDictionary where Key == String, Value: Decodable {
    static func probe(value node: ProbeNode, path: [CodingKey]) throws -> Any {
        _ = try ProbeNode.value(Value.self, into: node, path: path)
        return [String: Value]()
    }
}

/// An optional, probed as what it wraps.
protocol ProbedOptional {
    static func probeWrapped(into node: ProbeNode, path: [CodingKey]) throws -> Any
}

extension Optional: ProbedOptional where Wrapped: Decodable {
    static func probeWrapped(into node: ProbeNode, path: [CodingKey]) throws -> Any {
        Optional(try ProbeNode.value(Wrapped.self, into: node, path: path)) as Any
    }
}

private struct ProbeDecoder: Decoder {
    let node: ProbeNode
    var codingPath: [CodingKey]
    var userInfo: [CodingUserInfoKey: Any] { [:] }

    func container<Key: CodingKey>(keyedBy type: Key.Type) throws -> KeyedDecodingContainer<Key> {
        node.kind = .object
        return KeyedDecodingContainer(ProbeKeyed<Key>(node: node, codingPath: codingPath))
    }

    func unkeyedContainer() throws -> UnkeyedDecodingContainer {
        let element = ProbeNode()
        node.kind = .array(element)
        return ProbeUnkeyed(element: element, codingPath: codingPath)
    }

    func singleValueContainer() throws -> SingleValueDecodingContainer { ProbeSingle(node: node, codingPath: codingPath) }
}

private struct ProbeKeyed<Key: CodingKey>: KeyedDecodingContainerProtocol {
    let node: ProbeNode
    var codingPath: [CodingKey]
    var allKeys: [Key] { [] }

    func contains(_ key: Key) -> Bool {
        node.members[node.member(key.stringValue)].optional = true
        return true
    }

    func decodeNil(forKey key: Key) throws -> Bool {
        node.members[node.member(key.stringValue)].nullable = true
        return false
    }

    func decode<T: Decodable>(_ type: T.Type, forKey key: Key) throws -> T {
        let index = node.member(key.stringValue)
        let member = node.members[index]
        node.members[index].required = !member.nullable && !member.optional && !(type is any ProbedOptional.Type)
        if type is any ProbedOptional.Type { node.members[index].nullable = true }
        return try ProbeNode.value(type, into: node.members[index].node, path: codingPath + [key])
    }

    /// Records the member and answers that it is absent: a decoder's checks of optional
    /// members never see stand-ins, and what it does without them is what it always does.
    func decodeIfPresent<T: Decodable>(_ type: T.Type, forKey key: Key) throws -> T? { try absent(type, key) }
    // The protocol's own overloads for the standard types would ask `decode` for a stand-in.
    func decodeIfPresent(_ type: Bool.Type, forKey key: Key) throws -> Bool? { try absent(type, key) }
    func decodeIfPresent(_ type: String.Type, forKey key: Key) throws -> String? { try absent(type, key) }
    func decodeIfPresent(_ type: Double.Type, forKey key: Key) throws -> Double? { try absent(type, key) }
    func decodeIfPresent(_ type: Float.Type, forKey key: Key) throws -> Float? { try absent(type, key) }
    func decodeIfPresent(_ type: Int.Type, forKey key: Key) throws -> Int? { try absent(type, key) }
    func decodeIfPresent(_ type: Int8.Type, forKey key: Key) throws -> Int8? { try absent(type, key) }
    func decodeIfPresent(_ type: Int16.Type, forKey key: Key) throws -> Int16? { try absent(type, key) }
    func decodeIfPresent(_ type: Int32.Type, forKey key: Key) throws -> Int32? { try absent(type, key) }
    func decodeIfPresent(_ type: Int64.Type, forKey key: Key) throws -> Int64? { try absent(type, key) }
    func decodeIfPresent(_ type: UInt.Type, forKey key: Key) throws -> UInt? { try absent(type, key) }
    func decodeIfPresent(_ type: UInt8.Type, forKey key: Key) throws -> UInt8? { try absent(type, key) }
    func decodeIfPresent(_ type: UInt16.Type, forKey key: Key) throws -> UInt16? { try absent(type, key) }
    func decodeIfPresent(_ type: UInt32.Type, forKey key: Key) throws -> UInt32? { try absent(type, key) }
    func decodeIfPresent(_ type: UInt64.Type, forKey key: Key) throws -> UInt64? { try absent(type, key) }

    private func absent<T: Decodable>(_ type: T.Type, _ key: Key) throws -> T? {
        let index = node.member(key.stringValue)
        _ = try ProbeNode.value(type, into: node.members[index].node, path: codingPath + [key])
        return nil
    }

    func nestedContainer<NestedKey: CodingKey>(keyedBy type: NestedKey.Type, forKey key: Key) throws -> KeyedDecodingContainer<NestedKey> {
        let index = node.member(key.stringValue)
        node.members[index].required = true
        return try ProbeDecoder(node: node.members[index].node, codingPath: codingPath + [key]).container(keyedBy: type)
    }

    func nestedUnkeyedContainer(forKey key: Key) throws -> UnkeyedDecodingContainer {
        let index = node.member(key.stringValue)
        node.members[index].required = true
        return try ProbeDecoder(node: node.members[index].node, codingPath: codingPath + [key]).unkeyedContainer()
    }

    func superDecoder() throws -> Decoder { ProbeDecoder(node: node, codingPath: codingPath) }
    func superDecoder(forKey key: Key) throws -> Decoder {
        ProbeDecoder(node: node.members[node.member(key.stringValue)].node, codingPath: codingPath + [key])
    }
}

/// An array of one stand-in item.
private struct ProbeUnkeyed: UnkeyedDecodingContainer {
    let element: ProbeNode
    var codingPath: [CodingKey]
    var count: Int? { 1 }
    var currentIndex = 0
    var isAtEnd: Bool { currentIndex > 0 }

    init(element: ProbeNode, codingPath: [CodingKey]) {
        self.element = element
        self.codingPath = codingPath
    }

    mutating func decodeNil() throws -> Bool { false }

    mutating func decode<T: Decodable>(_ type: T.Type) throws -> T {
        currentIndex += 1
        return try ProbeNode.value(type, into: element, path: codingPath + [ProbeKey.item])
    }

    mutating func nestedContainer<NestedKey: CodingKey>(keyedBy type: NestedKey.Type) throws -> KeyedDecodingContainer<NestedKey> {
        currentIndex += 1
        return try ProbeDecoder(node: element, codingPath: codingPath).container(keyedBy: type)
    }

    mutating func nestedUnkeyedContainer() throws -> UnkeyedDecodingContainer {
        currentIndex += 1
        return try ProbeDecoder(node: element, codingPath: codingPath).unkeyedContainer()
    }

    mutating func superDecoder() throws -> Decoder { ProbeDecoder(node: element, codingPath: codingPath) }
}

private struct ProbeSingle: SingleValueDecodingContainer {
    let node: ProbeNode
    var codingPath: [CodingKey]

    func decodeNil() -> Bool { false }

    func decode<T: Decodable>(_ type: T.Type) throws -> T {
        // The path grows here too, so a type that decodes itself from a single value is caught.
        try ProbeNode.value(type, into: node, path: codingPath + [ProbeKey.single])
    }
}

/// The steps of a probe's path that no key names: an item of an array, a single value.
private struct ProbeKey: CodingKey {
    static let item = ProbeKey(stringValue: "[]")
    static let single = ProbeKey(stringValue: "=")
    let stringValue: String
    var intValue: Int? { nil }
    init(stringValue: String) { self.stringValue = stringValue }
    init?(intValue: Int) { nil }
}

/// A type whose shape its decoder cannot show the probe: one of several forms (a circle or a
/// box), told apart by what the JSON holds. It says its shape, and gives a value to stand in.
public protocol SaysItsShape: Decodable {
    static func shape() throws -> Schema
    static var example: Self { get }
}

/// Any JSON value, left to the method to read (`Schema.any`): a form definition, say.
public struct AnyJSON: Decodable, Sendable {
    public init() {}
    public init(from decoder: Decoder) throws {}
}
