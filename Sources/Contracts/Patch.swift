import Bus

/// One field of a partial update: left alone, cleared (`null`), or set.
public enum Patch<Value: Sendable>: Sendable {
    case absent
    case null
    case value(Value)

    /// Applies the patch to a current value of an optional field.
    public func applied(to current: Value?) -> Value? {
        switch self {
        case .absent: current
        case .null: nil
        case .value(let v): v
        }
    }

    /// Applies the patch to a required field; `null` is refused naming `field`.
    public func applied(to current: Value, field: String) throws(ServiceError) -> Value {
        switch self {
        case .absent: return current
        case .null: throw ServiceError.invalid(field, "cannot be null")
        case .value(let v): return v
        }
    }
}

extension KeyedDecodingContainer {
    /// Decodes a field of a partial update, telling a missing key from an explicit `null`.
    public func decodePatch<Value: Decodable & Sendable>(_ type: Value.Type, forKey key: Key) throws -> Patch<Value> {
        guard contains(key) else { return .absent }
        if try decodeNil(forKey: key) { return .null }
        return .value(try decode(type, forKey: key))
    }
}
