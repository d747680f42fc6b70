import Foundation

/// The envelope version this code speaks.
public let envelopeVersion = 1

/// The closed set of error codes every service and the gateway use.
public enum ErrorCode: String, Codable, Sendable, CaseIterable {
    case invalidArgument = "invalid_argument"
    case notFound = "not_found"
    case alreadyExists = "already_exists"
    case conflict
    case unauthenticated
    case permissionDenied = "permission_denied"
    case rateLimited = "rate_limited"
    case tooLarge = "too_large"
    case unavailable
    case deadlineExceeded = "deadline_exceeded"
    case `internal`
}

/// An error from the closed set, as it travels in a reply: code, message and the field at fault.
public struct ServiceError: Error, Codable, Sendable, Equatable, CustomStringConvertible {
    public var code: ErrorCode
    public var message: String
    /// The request field the error concerns (`lat`, `name`), when there is one.
    public var field: String?
    /// Set only by a replica of a replicated service that is not its leader, and so did
    /// nothing with the request: the replica number (1 and up) of the leader it knows of, or 0
    /// when it knows of none yet. The request may be sent again to that replica; clients of
    /// the bus do so themselves (`RPCClient`), and never pass it on.
    public var leader: Int?

    public init(_ code: ErrorCode, _ message: String, field: String? = nil) {
        self.code = code
        self.message = message
        self.field = field
    }

    /// `unavailable` from a replica that is not the leader: it did nothing, and names the
    /// leader it knows of (`leader`, 0 for none).
    public static func notLeader(_ message: String, leader: Int) -> ServiceError {
        var error = ServiceError(.unavailable, message)
        error.leader = max(0, leader)
        return error
    }

    public var description: String { field.map { "\(code.rawValue): \($0): \(message)" } ?? "\(code.rawValue): \(message)" }

    /// `invalid_argument` naming a field.
    public static func invalid(_ field: String, _ message: String) -> ServiceError {
        ServiceError(.invalidArgument, message, field: field)
    }

    /// Turns a decoding failure into `invalid_argument` naming the field at fault.
    /// `dropping` leading path components (such as `body`) are left out of the field.
    public static func decoding(_ error: DecodingError, dropping prefix: Set<String> = ["body"]) -> ServiceError {
        func fieldName(_ path: [CodingKey]) -> String? {
            var names = path.map { $0.intValue.map { "[\($0)]" } ?? $0.stringValue }
            while let first = names.first, prefix.contains(first) { names.removeFirst() }
            guard !names.isEmpty else { return nil }
            return names.reduce("") { $0.isEmpty || $1.hasPrefix("[") ? $0 + $1 : $0 + "." + $1 }
        }
        switch error {
        case .keyNotFound(let key, let context):
            let field = fieldName(context.codingPath + [key])
            return ServiceError(.invalidArgument, "missing required field \(field ?? key.stringValue)", field: field)
        case .typeMismatch(let type, let context):
            return ServiceError(.invalidArgument, "expected \(describe(type))", field: fieldName(context.codingPath))
        case .valueNotFound(let type, let context):
            return ServiceError(.invalidArgument, "expected \(describe(type)), found null", field: fieldName(context.codingPath))
        case .dataCorrupted(let context):
            let field = fieldName(context.codingPath)
            let message = context.codingPath.isEmpty ? "malformed JSON" : context.debugDescription
            return ServiceError(.invalidArgument, message, field: field)
        @unknown default:
            return ServiceError(.invalidArgument, "malformed request")
        }
    }

    private static func describe(_ type: Any.Type) -> String {
        switch type {
        case is String.Type: "a string"
        case is Bool.Type: "a boolean"
        case is Int.Type, is Int64.Type, is Int32.Type: "an integer"
        case is Double.Type, is Float.Type: "a number"
        default:
            String(describing: type).hasPrefix("Array") ? "an array" : "an object"
        }
    }
}

/// Who is asking, as established by the gateway; services never trust ids from request bodies.
public struct Auth: Codable, Sendable, Equatable {
    public var userId: String
    public var role: String
    /// The client connection the request came on (`<gateway>/<connection>`), as the gateway
    /// names it, so that a push the request causes can leave that connection out.
    public var origin: String?

    public init(userId: String, role: String, origin: String? = nil) {
        self.userId = userId
        self.role = role
        self.origin = origin
    }

    enum CodingKeys: String, CodingKey {
        case userId = "user_id"
        case role, origin
    }
}

/// The routing part of a request, decoded before the body's type is known.
public struct RequestHeader: Decodable, Sendable {
    public var v: Int
    public var id: String
    public var type: String
    public var auth: Auth?
    /// The client the request comes from, as the gateway counts it (an IPv4 address, an IPv6
    /// /64 network), so a service can share its threads fairly between clients; nil from
    /// callers on the bus itself.
    public var client: String?
    public var deadlineMs: Int?
    /// Where the `body` member's value lies in the envelope, when `scan` read the header (it
    /// saw the body once, or not at all); nil when the decoder read it.
    public var bodyRange: Range<Int>? = nil

    enum CodingKeys: String, CodingKey {
        case v, id, type, auth, client
        case deadlineMs = "deadline_ms"
    }
}

extension RequestHeader {
    /// Reads the header of a request envelope by span, without the decoder, when it is plainly
    /// shaped: each member once, `v` and `deadline_ms` integer literals, `id`, `type` and
    /// `client` strings, `auth` absent, `null` or `{"user_id":S,"role":S}`. Nil for anything else
    /// (a wrong type, a repeated key, a key written with escapes, an `auth` with other members):
    /// then decode the envelope, whose errors are the contract. The same walk checks the
    /// envelope as strict JSON nested at most `maxDepth` levels, and throws unless it is.
    public static func scan(_ envelope: Data, maxDepth: Int = StrictJSON.defaultMaxDepth) throws(JSONSyntaxError) -> RequestHeader? {
        var v: Int?
        var id: String?
        var type: String?
        var auth: Auth?
        var client: String?
        var deadlineMs: Int?
        var body: Range<Int>?
        // One bit per header member seen (and the body): a repeated one is left to the decoder.
        var seen: UInt8 = 0
        let plain = try StrictJSON.checkMembers(envelope, maxDepth: maxDepth) { key, value, range in
            // In strict JSON a value that starts with `n` is `null`.
            let isNull = value.first == UInt8(ascii: "n")
            func once(_ bit: UInt8) -> Bool {
                defer { seen |= bit }
                return seen & bit == 0
            }
            if JSONSpan.key(key, is: "v") {
                guard once(1), let number = JSONNumber.integer(value).map(Int.init) else { return false }
                v = number
            } else if JSONSpan.key(key, is: "id") {
                guard once(2), let string = JSONSpan.plainString(value) ?? JSONSpan.string(at: range, in: envelope) else { return false }
                id = string
            } else if JSONSpan.key(key, is: "type") {
                guard once(4), let string = JSONSpan.plainString(value) ?? JSONSpan.string(at: range, in: envelope) else { return false }
                type = string
            } else if JSONSpan.key(key, is: "deadline_ms") {
                guard once(8) else { return false }
                guard !isNull else { return true }
                guard let number = JSONNumber.integer(value).map(Int.init) else { return false }
                deadlineMs = number
            } else if JSONSpan.key(key, is: "auth") {
                guard once(16) else { return false }
                guard !isNull else { return true }
                guard let scanned = scanAuth(envelope.subdata(in: range)) else { return false }
                auth = scanned
            } else if JSONSpan.key(key, is: "body") {
                guard once(32) else { return false }
                body = range
            } else if JSONSpan.key(key, is: "client") {
                guard once(64) else { return false }
                guard !isNull else { return true }
                guard let string = JSONSpan.plainString(value) ?? JSONSpan.string(at: range, in: envelope) else { return false }
                client = string
            } else if JSONSpan.hasEscape(key) {
                // It might spell one of the above.
                return false
            }
            return true
        }
        guard plain, let v, let id, let type else { return nil }
        return RequestHeader(v: v, id: id, type: type, auth: auth, client: client, deadlineMs: deadlineMs, bodyRange: body)
    }

    /// `{"user_id":S,"role":S}` or `{"user_id":S,"role":S,"origin":S}` with nothing else, or nil.
    private static func scanAuth(_ json: Data) -> Auth? {
        guard let members = JSONSpan.members(of: json), members.count == 2 || members.count == 3 else { return nil }
        var userId: String?
        var role: String?
        var origin: String?
        for (key, range) in members {
            switch key {
            case "user_id": userId = JSONSpan.string(at: range, in: json)
            case "role": role = JSONSpan.string(at: range, in: json)
            case "origin":
                guard let text = JSONSpan.string(at: range, in: json) else { return nil }
                origin = text
            default: return nil
            }
        }
        guard let userId, let role, members.count == 2 || origin != nil else { return nil }
        return Auth(userId: userId, role: role, origin: origin)
    }
}

/// Decodes only the `body` of an envelope as `Body`; a missing or null body reads as `{}`.
struct BodyOf<Body: Decodable>: Decodable {
    var body: Body

    enum CodingKeys: String, CodingKey { case body }

    init(from decoder: Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        if c.contains(.body), try !c.decodeNil(forKey: .body) {
            body = try c.decode(Body.self, forKey: .body)
        } else {
            body = try JSONCoding.decoder.decode(Body.self, from: Data("{}".utf8))
        }
    }
}

/// The head of a reply: whether it succeeded and, if not, why.
public struct ReplyHeader: Decodable, Sendable {
    public var v: Int
    public var id: String?
    public var ok: Bool
    public var error: ServiceError?
    /// Where the `body` member's value lies in the envelope, when `read` took the header by
    /// span; nil when the decoder read it.
    public var bodyRange: Range<Int>? = nil

    enum CodingKeys: String, CodingKey {
        case v, id, ok, error
    }

    /// Reads a reply's head: a success in one walk of the envelope's members (its body, often
    /// large, is only stepped over; whoever wants it takes `bodyRange`), anything else by
    /// decoding. A success that is not plainly shaped (`v` not an integer, `id` not a string
    /// without escapes, a member repeated) is decoded too. Nil when malformed. The same walk
    /// checks the envelope as strict JSON nested at most `maxDepth` levels, and throws unless it
    /// is: the decoder only ever sees checked text.
    public static func read(_ envelope: Data, maxDepth: Int = StrictJSON.defaultMaxDepth) throws(JSONSyntaxError) -> ReplyHeader? {
        var v: Int?
        var id: String?
        var ok: Bool?
        var body: Range<Int>?
        // One bit per member seen: a repeated one (or an escaped key) is left to the decoder.
        var seen: UInt8 = 0
        let plain = try StrictJSON.checkMembers(envelope, maxDepth: maxDepth) { key, value, range in
            func once(_ bit: UInt8) -> Bool {
                defer { seen |= bit }
                return seen & bit == 0
            }
            if JSONSpan.key(key, is: "v") {
                guard once(1) else { return false }
                v = JSONNumber.integer(value).map(Int.init)
            } else if JSONSpan.key(key, is: "id") {
                guard once(2) else { return false }
                id = JSONSpan.plainString(value)
            } else if JSONSpan.key(key, is: "ok") {
                guard once(4) else { return false }
                // In strict JSON a value that starts with `t` is `true`.
                ok = value.first == UInt8(ascii: "t")
            } else if JSONSpan.key(key, is: "body") {
                guard once(8) else { return false }
                body = range
            } else if JSONSpan.hasEscape(key) {
                return false
            }
            return true
        }
        if plain, ok == true, let v, let id {
            return ReplyHeader(v: v, id: id, ok: true, error: nil, bodyRange: body)
        }
        return try? JSONCoding.decoder.decode(ReplyHeader.self, from: envelope)
    }
}

/// Reply and event framing built by concatenation, so a body already encoded (or stored,
/// as outbox rows are) is never decoded and encoded again. Each envelope is written into one
/// byte array sized for it and copied once into its `Data`: `Data`'s own appends cost
/// thousands of instructions each (callgrind-get, callgrind-create).
public enum EnvelopeCoding {
    /// `{"v":1,"id":…,"type":…,"auth":{…}|null,"client":…,"deadline_ms":…,"body":<body>}`,
    /// `auth` as `JSONCoding.encoder` writes it, `client` only when there is one.
    public static func request(id: String, type: String, auth: Auth?, client: String? = nil, deadlineMilliseconds: Int, body: Data) -> Data {
        var out = start(capacity: body.count + 224)
        JSONText.append(id, to: &out)
        out.append(contentsOf: #","type":"#.utf8)
        JSONText.append(type, to: &out)
        out.append(contentsOf: #","auth":"#.utf8)
        if let auth {
            // In the encoder's order: keys sorted.
            out.append(UInt8(ascii: "{"))
            if let origin = auth.origin {
                out.append(contentsOf: #""origin":"#.utf8)
                JSONText.append(origin, to: &out)
                out.append(UInt8(ascii: ","))
            }
            out.append(contentsOf: #""role":"#.utf8)
            JSONText.append(auth.role, to: &out)
            out.append(contentsOf: #","user_id":"#.utf8)
            JSONText.append(auth.userId, to: &out)
            out.append(UInt8(ascii: "}"))
        } else {
            out.append(contentsOf: "null".utf8)
        }
        if let client {
            out.append(contentsOf: #","client":"#.utf8)
            JSONText.append(client, to: &out)
        }
        out.append(contentsOf: #","deadline_ms":"#.utf8)
        JSONText.append(Int64(deadlineMilliseconds), to: &out)
        out.append(contentsOf: #","body":"#.utf8)
        return finish(out, body)
    }

    /// `{"v":1,"id":…,"ok":true,"body":<body>}`.
    public static func success(id: String?, body: Data) -> Data {
        var out = start(capacity: body.count + 64)
        appendQuoted(id, to: &out)
        out.append(contentsOf: #","ok":true,"body":"#.utf8)
        return finish(out, body)
    }

    /// `{"v":1,"id":…,"ok":false,"error":{…}}`.
    public static func failure(id: String?, error: ServiceError) -> Data {
        var out = start(capacity: 128)
        appendQuoted(id, to: &out)
        out.append(contentsOf: #","ok":false,"error":"#.utf8)
        return finish(out, (try? JSONCoding.encoder.encode(error)) ?? Data("{\"code\":\"internal\",\"message\":\"unencodable error\"}".utf8))
    }

    /// `{"v":1,"seq":…,"type":…,"ts":…,"epoch":…,"body":<body>}`.
    public static func event(seq: Int64, type: String, ts: String, epoch: String, body: Data) -> Data {
        var out: [UInt8] = []
        out.reserveCapacity(body.count + 128)
        out.append(contentsOf: #"{"v":"#.utf8)
        JSONText.append(Int64(envelopeVersion), to: &out)
        out.append(contentsOf: #","seq":"#.utf8)
        JSONText.append(seq, to: &out)
        out.append(contentsOf: #","type":"#.utf8)
        JSONText.append(type, to: &out)
        out.append(contentsOf: #","ts":"#.utf8)
        JSONText.append(ts, to: &out)
        out.append(contentsOf: #","epoch":"#.utf8)
        JSONText.append(epoch, to: &out)
        out.append(contentsOf: #","body":"#.utf8)
        return finish(out, body)
    }

    /// `{"v":1,"id":` in a buffer of `capacity`.
    private static func start(capacity: Int) -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(capacity)
        out.append(contentsOf: #"{"v":"#.utf8)
        JSONText.append(Int64(envelopeVersion), to: &out)
        out.append(contentsOf: #","id":"#.utf8)
        return out
    }

    /// `out`, then `value`, then the closing brace, as `Data`.
    private static func finish(_ out: [UInt8], _ value: Data) -> Data {
        var out = out
        value.withUnsafeBytes { out.append(contentsOf: $0) }
        out.append(UInt8(ascii: "}"))
        return Data(out)
    }

    /// A JSON string literal (or `null`), as `JSONCoding.encoder` writes it.
    private static func appendQuoted(_ s: String?, to out: inout [UInt8]) {
        guard let s else { return out.append(contentsOf: "null".utf8) }
        JSONText.append(s, to: &out)
    }
}

/// The head of an event: `{"v":1,"seq":…,"type":…,"ts":…,"epoch":…,"body":…}`.
public struct EventHeader: Decodable, Sendable, Equatable {
    public var v: Int
    public var seq: Int64
    public var type: String
    public var ts: String
    /// Names the publisher's outbox history; a new epoch means sequence numbers restarted.
    public var epoch: String

    public init(v: Int = envelopeVersion, seq: Int64, type: String, ts: String, epoch: String) {
        self.v = v
        self.seq = seq
        self.type = type
        self.ts = ts
        self.epoch = epoch
    }
}

extension EventHeader {
    /// Reads the header of an event envelope without parsing its body: the members are cut
    /// out by span, as `EnvelopeCoding.event` writes them. Nil when anything is not as
    /// expected (an escape in a string, a missing member); then decode the envelope instead.
    public static func scan(_ envelope: Data) -> EventHeader? {
        func integer(_ key: String) -> Int64? { JSONSpan.literal(key, in: envelope).flatMap { Int64($0) } }
        func text(_ key: String) -> String? { JSONSpan.plainString(key, in: envelope) }
        guard let v = integer("v"), let seq = integer("seq"), let type = text("type"), let ts = text("ts"), let epoch = text("epoch") else {
            return nil
        }
        return EventHeader(v: Int(v), seq: seq, type: type, ts: ts, epoch: epoch)
    }
}

/// Shared JSON coders. Foundation's coders are safe to share once configured.
public enum JSONCoding {
    /// Compact output, no escaped slashes.
    public static let encoder: JSONEncoder = {
        let e = JSONEncoder()
        e.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return e
    }()

    /// The default decoder.
    public static let decoder = JSONDecoder()

    /// Decodes `type` from the `body` member of an envelope; a missing body reads as `{}`.
    public static func decodeBody<Body: Decodable>(_ type: Body.Type, fromEnvelope data: Data) throws(ServiceError) -> Body {
        try decode(BodyOf<Body>.self, from: data).body
    }

    /// Decodes `type` from JSON, answering `invalid_argument` naming the field at fault.
    public static func decode<Value: Decodable>(_ type: Value.Type, from data: Data) throws(ServiceError) -> Value {
        do {
            return try decoder.decode(type, from: data)
        } catch let error as DecodingError {
            if case .dataCorrupted(let context) = error, context.codingPath.isEmpty {
                throw unrepresentableNumber(in: data)
            }
            throw ServiceError.decoding(error)
        } catch let error as ServiceError {
            // A body type that checks a value while decoding says precisely what is wrong.
            throw error
        } catch {
            throw ServiceError(.invalidArgument, "malformed body: \(error)")
        }
    }
}

extension JSONCoding {
    /// Foundation reports a number that fits no Swift type (`1e999`, or `2.5` for an integer)
    /// as invalid JSON with no path. This finds the out-of-range literal itself, walking the
    /// document by span (no error text is read), and names the member it is the value of.
    public static func unrepresentableNumber(in data: Data) -> ServiceError {
        do {
            try StrictJSON.check(data, maxDepth: 512)
        } catch {
            return ServiceError(.invalidArgument, "malformed JSON: \(error.message)")
        }
        if let (literal, field) = firstNonFiniteNumber(in: data, key: nil) {
            // Echoed cut, as every error cuts what a client sent: the literal may be a megabyte of digits.
            return ServiceError(.invalidArgument, "number \(Echo.clip(literal)) is out of range", field: field.map { Echo.clip($0) })
        }
        return ServiceError(.invalidArgument, "a number does not fit its field (an integer where a fraction was given?)")
    }

    /// The first number literal in document order that is no finite `Double`, with the key
    /// of the member it belongs to (nil inside a top-level array).
    private static func firstNonFiniteNumber(in json: Data, key: String?) -> (String, String?)? {
        guard let lead = json.first else { return nil }
        switch lead {
        case UInt8(ascii: "{"):
            for (member, range) in JSONSpan.members(of: json) ?? [] {
                if let found = firstNonFiniteNumber(in: json.subdata(in: range), key: member) { return found }
            }
        case UInt8(ascii: "["):
            for range in JSONSpan.elements(at: 0..<json.count, in: json) ?? [] {
                if let found = firstNonFiniteNumber(in: json.subdata(in: range), key: key) { return found }
            }
        case UInt8(ascii: "-"), 0x30...0x39:
            let literal = String(decoding: json, as: UTF8.self)
            if Double(literal)?.isFinite != true { return (literal, key) }
        default:
            break
        }
        return nil
    }
}

/// A body with no fields, for requests and replies that carry nothing.
public struct Empty: Codable, Sendable, Equatable {
    public init() {}
}
