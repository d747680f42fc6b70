import Bus
import Foundation

// The OpenRPC document of the gateway (`rpc.discover`, `tourbus openrpc`,
// Protocols/openrpc.json): every method a client may call, made from the declarations, with
// its params and result as JSON Schema draft-07 (what OpenRPC 1.x uses) and its errors.

/// The OpenRPC 1.3 document of the methods the gateway offers.
public enum OpenRPC {
    /// The OpenRPC specification the document follows.
    public static let specVersion = "1.3.2"
    /// The version of the API it describes.
    public static let apiVersion = "0.30.0"

    /// The document, as UTF-8 JSON with sorted keys on one line (the same bytes for the same
    /// declarations): what `rpc.discover` answers.
    public static let document: Data = written([])

    /// The same, indented for people: `tourbus openrpc` and Protocols/openrpc.json.
    public static let indentedDocument: Data = written(.prettyPrinted)

    private static func written(_ options: JSONSerialization.WritingOptions) -> Data {
        do {
            return try JSONSerialization.data(withJSONObject: object(Methods.offered), options: options.union([.sortedKeys, .withoutEscapingSlashes]))
        } catch {
            preconditionFailure("the OpenRPC document cannot be written: \(error)")
        }
    }

    /// The JSON-RPC error code of an error from the closed set: the standard codes where they
    /// fit, otherwise one fixed code each in the server range -32000…-32099.
    public static func code(of error: ErrorCode, field: String?) -> Int {
        switch error {
        case .invalidArgument: -32602
        case .notFound: field == "method" ? -32601 : -32001
        case .alreadyExists: -32002
        case .conflict: -32003
        case .unauthenticated: -32004
        case .permissionDenied: -32005
        case .rateLimited: -32006
        case .tooLarge: -32007
        case .unavailable: -32008
        case .deadlineExceeded: -32009
        case .internal: -32603
        }
    }

    /// The document of `methods` as a JSON object.
    static func object(_ methods: [MethodDeclaration]) throws -> [String: Any] {
        var common: [String: Any] = [:]
        for error in MethodError.anyMethod { common[error.code.rawValue] = errorObject(error) }
        return [
            "openrpc": specVersion,
            "info": [
                "title": "Tourbus",
                "version": apiVersion,
                "description": """
                The Tourbus gateway: JSON-RPC 2.0 lines and RESP on one TCP port (Protocols/gateway.md). Params are \
                by name; a param a method does not declare is refused. Every method also takes `token`, a session \
                token for that one request, unless it has a `token` of its own. Errors carry `data.code` (the \
                closed set of Protocols/envelope.md) and `data.field`, the param at fault. A signed-in connection \
                that subscribes to a topic hears its pushes as the notification `push`, params {topic, id, body}; \
                `x-notifications` lists the topics, each with the schema of its body.
                """,
            ],
            "methods": try methods.map(method),
            "x-notifications": try Pushes.all.map(notification),
            "components": ["errors": common],
        ]
    }

    private static func method(_ method: MethodDeclaration) throws -> [String: Any] {
        guard case .object(let params) = try SchemaProbe.shape(of: method.params) else {
            preconditionFailure("\(method.name)'s params are not an object")
        }
        // A session token is the gateway's param, never required: it fills it in from the
        // connection's session (auth.logout's) when none is given.
        var descriptors = params.members.filter { $0.name != "token" || method.ownsTokenParam }.map { member in
            ["name": member.name, "required": member.required, "schema": schema(member.schema, nullable: member.nullable || !member.required)] as [String: Any]
        }
        if !method.ownsTokenParam {
            descriptors.append([
                "name": "token", "required": false, "schema": ["type": "string"],
                "description": "a session token for this request alone (else the connection's)",
            ])
        }
        let errors: [Any] = method.errors.map(errorObject) + MethodError.anyMethod.map { ["$ref": "#/components/errors/\($0.code.rawValue)"] }
        var object: [String: Any] = [
            "name": method.name,
            "summary": method.summary,
            "paramStructure": "by-name",
            "params": descriptors,
            "result": ["name": "result", "schema": try resultSchema(method)],
            "errors": errors,
            "x-access": method.access.rawValue,
            "x-retry-safe": method.retrySafe,
        ]
        if method.kind == .read { object["x-read-only"] = true }
        if let example = examples[method.name] { object["examples"] = [try self.example(example)] }
        return object
    }

    /// An example pairing of Protocols' transcripts: the params by name, and the result.
    private static func example(_ example: (file: String, params: String, result: String)) throws -> [String: Any] {
        guard let params = try JSONSerialization.jsonObject(with: Data(example.params.utf8)) as? [String: Any] else {
            preconditionFailure("an example's params are not an object: \(example.params)")
        }
        return [
            "name": "from \(example.file)",
            "params": params.keys.sorted().map { ["name": $0, "value": params[$0] as Any] },
            "result": ["name": "result", "value": try JSONSerialization.jsonObject(with: Data(example.result.utf8), options: .fragmentsAllowed)],
        ]
    }

    /// A push topic: its name, summary, owner, the schema of its body (open, as a result's), and
    /// its coalescing key when a slow connection keeps only the latest.
    private static func notification(_ push: PushDeclaration) throws -> [String: Any] {
        var object: [String: Any] = [
            "name": push.name,
            "summary": push.summary,
            "x-owner": push.owner.rawValue,
            "body": schema(try SchemaProbe.plainShape(of: push.body), nullable: false, closed: false),
        ]
        if let coalesce = push.coalesce { object["coalesce"] = coalesce }
        return object
    }

    private static func resultSchema(_ method: MethodDeclaration) throws -> [String: Any] {
        if ObjectIdentifier(method.result) == ObjectIdentifier(OpenRPCDocument.self) {
            return ["$ref": "https://meta.open-rpc.org/", "description": "this document"]
        }
        return schema(try SchemaProbe.plainShape(of: method.result), nullable: false, closed: false)
    }

    private static func errorObject(_ error: MethodError) -> [String: Any] {
        var data: [String: Any] = ["code": error.code.rawValue]
        if let field = error.field { data["field"] = field }
        return ["code": code(of: error.code, field: error.field), "message": error.when, "data": data]
    }

    /// `schema` as JSON Schema draft-07. A params object is closed (`additionalProperties`
    /// false, as the services refuse what it does not name); a result is left open, so a
    /// member added later breaks no client.
    static func schema(_ schema: Schema, nullable: Bool, closed: Bool = true) -> [String: Any] {
        var out: [String: Any]
        switch schema {
        case .string(let bounds):
            out = ["type": "string"]
            if let characters = bounds.characters {
                if characters.lowerBound > 0 { out["minLength"] = characters.lowerBound }
                out["maxLength"] = characters.upperBound
                // White space around the text is not counted (the document is the stricter).
                if bounds.trimmed { out["x-trimmed"] = true }
            }
            if let bytes = bounds.maxBytes { out["x-maxBytes"] = bytes }
            if let format = bounds.format { out["format"] = format }
        case .integer(let bounds):
            out = ["type": "integer"]
            // Always bounded: a client's integers must fit the server's (Int64 at most).
            let range = bounds.range ?? Int64.min...Int64.max
            out["minimum"] = range.lowerBound
            out["maximum"] = range.upperBound
        case .number(let bounds):
            out = ["type": "number"]
            if let range = bounds.range {
                out[bounds.exclusiveMinimum ? "exclusiveMinimum" : "minimum"] = range.lowerBound
                out["maximum"] = range.upperBound
            }
        case .boolean:
            out = ["type": "boolean"]
        case .enumeration(let cases):
            out = ["type": "string", "enum": cases]
        case .array(let items, let count):
            out = ["type": "array", "items": self.schema(items, nullable: false, closed: closed)]
            if let range = count.range {
                if range.lowerBound > 0 { out["minItems"] = range.lowerBound }
                out["maxItems"] = range.upperBound
            }
        case .object(let object):
            var properties: [String: Any] = [:]
            // An optional member may be null, as the decoders read it (`decodeIfPresent`), and
            // as the services read null for one: the same as leaving it out.
            for member in object.members {
                properties[member.name] = self.schema(member.schema, nullable: member.nullable || !member.required, closed: closed)
            }
            out = ["type": "object", "properties": properties]
            let required = object.members.filter(\.required).map(\.name)
            if !required.isEmpty { out["required"] = required }
            if closed { out["additionalProperties"] = false }
        case .dictionary(let value, let count):
            out = ["type": "object", "additionalProperties": self.schema(value, nullable: false, closed: closed)]
            if let range = count.range {
                if range.lowerBound > 0 { out["minProperties"] = range.lowerBound }
                out["maxProperties"] = range.upperBound
            }
        case .anyOf(let shapes):
            out = ["anyOf": shapes.map { self.schema($0, nullable: false, closed: closed) }]
        case .any:
            out = [:]
        }
        guard nullable else { return out }
        if let type = out["type"] as? String {
            out["type"] = [type, "null"]
            return out
        }
        return ["anyOf": [out, ["type": "null"]]]
    }
}

/// `rpc.discover`'s result: an OpenRPC document (`OpenRPC.document`), taken whole.
public struct OpenRPCDocument: Codable, Sendable {
    public init() {}
    public init(from decoder: any Decoder) throws {}
    public func encode(to encoder: any Encoder) throws {}
}
