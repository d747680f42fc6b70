import Bus
import Foundation

/// JSON-RPC 2.0 over newline-delimited JSON: request parsing, responses and error codes.
enum JSONRPC {
    /// A request, or why it is not one.
    enum Request {
        /// `id` is the JSON of the request id (nil for a notification, which gets no reply).
        case call(id: Data?, method: String, params: Data, deadlineMilliseconds: Int?)
        case invalid(id: Data?, ServiceError, code: Int)
    }

    static let parseError = -32700
    static let invalidRequest = -32600
    static let methodNotFound = -32601
    static let invalidParams = -32602
    static let internalError = -32603

    /// The JSON-RPC code of an error from the closed set: the standard codes where they
    /// fit, otherwise one fixed code each in the server range -32000…-32099.
    static func code(of error: ServiceError) -> Int {
        switch error.code {
        case .invalidArgument: invalidParams
        case .notFound: error.field == "method" ? methodNotFound : -32001
        case .alreadyExists: -32002
        case .conflict: -32003
        case .unauthenticated: -32004
        case .permissionDenied: -32005
        case .rateLimited: -32006
        case .tooLarge: -32007
        case .unavailable: -32008
        case .deadlineExceeded: -32009
        case .internal: internalError
        }
    }

    /// Reads one element of a line (a whole line, or one member of a batch).
    static func request(from object: Any) -> Request {
        // Invalid requests are answered with a null id when they have none; a notification
        // whose params are wrong gets no answer, as JSON-RPC says of every notification.
        guard let dict = object as? [String: Any] else {
            return .invalid(id: Data("null".utf8), ServiceError(.invalidArgument, "a request is a JSON object"), code: invalidRequest)
        }
        var id: Data?
        if let raw = dict["id"] {
            guard raw is String || raw is NSNull || (raw is NSNumber && !isBool(raw)) else {
                return .invalid(id: Data("null".utf8), ServiceError(.invalidArgument, "id must be a string, a number or null", field: "id"), code: invalidRequest)
            }
            id = try? JSONSerialization.data(withJSONObject: raw, options: [.fragmentsAllowed])
        }
        guard dict["jsonrpc"] as? String == "2.0" else {
            return .invalid(id: id ?? Data("null".utf8), ServiceError(.invalidArgument, "jsonrpc must be \"2.0\"", field: "jsonrpc"), code: invalidRequest)
        }
        guard let method = dict["method"] as? String, !method.isEmpty else {
            return .invalid(id: id ?? Data("null".utf8), ServiceError(.invalidArgument, "method must be a non-empty string", field: "method"), code: invalidRequest)
        }
        var params = Data("{}".utf8)
        if let raw = dict["params"], !(raw is NSNull) {
            guard raw is [String: Any], let encoded = try? JSONSerialization.data(withJSONObject: raw, options: [.withoutEscapingSlashes]) else {
                return .invalid(id: id, ServiceError(.invalidArgument, "params must be an object of named parameters", field: "params"), code: invalidParams)
            }
            params = encoded
        }
        var deadline: Int?
        if let raw = dict["deadline_ms"], !(raw is NSNull) {
            guard let number = raw as? NSNumber, !isBool(raw), let value = Int(exactly: number.doubleValue) else {
                return .invalid(id: id, ServiceError(.invalidArgument, "deadline_ms must be an integer", field: "deadline_ms"), code: invalidParams)
            }
            deadline = value
        }
        return .call(id: id, method: method, params: params, deadlineMilliseconds: deadline)
    }

    private static func isBool(_ value: Any) -> Bool {
        // JSONSerialization gives booleans as NSNumber whose type encoding is "c" (char).
        guard let number = value as? NSNumber else { return false }
        return String(cString: number.objCType) == "c"
    }

    /// `{"jsonrpc":"2.0","id":…,"result":…}`.
    static func result(id: Data, _ result: Data) -> [UInt8] {
        var out = Array(#"{"jsonrpc":"2.0","id":"#.utf8)
        out.append(contentsOf: id)
        out.append(contentsOf: Array(#","result":"#.utf8))
        out.append(contentsOf: result)
        out.append(UInt8(ascii: "}"))
        return out
    }

    /// `{"jsonrpc":"2.0","id":…,"error":{"code":…,"message":…,"data":{"code":…,"field":…}}}`.
    static func error(id: Data, _ error: ServiceError, code: Int? = nil) -> [UInt8] {
        struct Body: Encodable {
            struct Detail: Encodable {
                var code: String
                var field: String?
            }
            var code: Int
            var message: String
            var data: Detail
        }
        let body = Body(code: code ?? JSONRPC.code(of: error), message: error.message, data: .init(code: error.code.rawValue, field: error.field))
        var out = Array(#"{"jsonrpc":"2.0","id":"#.utf8)
        out.append(contentsOf: id)
        out.append(contentsOf: Array(#","error":"#.utf8))
        out.append(contentsOf: (try? JSONCoding.encoder.encode(body)) ?? Data(#"{"code":-32603,"message":"internal error"}"#.utf8))
        out.append(UInt8(ascii: "}"))
        return out
    }
}
