import Bus
import Contracts
import Foundation

/// JSON-RPC 2.0 over newline-delimited JSON: request parsing, responses and error codes.
enum JSONRPC {
    /// A request, or why it is not one.
    enum Request {
        /// `id` is the JSON of the request id (nil for a notification, which gets no reply).
        case call(id: Data?, Call)
        case invalid(id: Data?, ServiceError, code: Int)
    }

    /// Longest method name, in bytes.
    static let maxMethodBytes = 128
    /// Longest request id, in bytes as written.
    static let maxIdBytes = 256

    static let parseError = -32700
    static let invalidRequest = -32600
    static let invalidParams = -32602

    /// The JSON-RPC code of an error from the closed set: the standard codes where they
    /// fit, otherwise one fixed code each in the server range -32000…-32099.
    static func code(of error: ServiceError) -> Int { OpenRPC.code(of: error.code, field: error.field) }

    /// Reads one request (a whole line, or one member of a batch) from `json`, which
    /// `StrictJSON` has checked: by span, so params are passed on as the bytes the client
    /// sent, never parsed and written again (cheap whatever they hold).
    static func request(_ json: Data) -> Request {
        // Invalid requests are answered with a null id when they have none; a notification
        // whose params are wrong gets no answer, as JSON-RPC says of every notification.
        guard json.first == UInt8(ascii: "{"), let list = JSONSpan.members(of: json) else {
            return .invalid(id: Data("null".utf8), ServiceError(.invalidArgument, "a request is a JSON object"), code: invalidRequest)
        }
        // A repeated member counts with its last value.
        var members: [String: Range<Int>] = [:]
        for (key, value) in list { members[key] = value }
        func bytes(_ range: Range<Int>) -> Data { json.subdata(in: range) }
        var id: Data?
        if let raw = members["id"] {
            let lead = json[raw.lowerBound]
            guard lead == UInt8(ascii: "\"") || lead == UInt8(ascii: "-") || (0x30...0x39).contains(lead) || bytes(raw) == Data("null".utf8) else {
                return .invalid(id: Data("null".utf8), ServiceError(.invalidArgument, "id must be a string, a number or null", field: "id"), code: invalidRequest)
            }
            // Echoed as the client wrote it, within reason.
            guard raw.count <= maxIdBytes else {
                return .invalid(id: Data("null".utf8), ServiceError(.invalidArgument, "id is longer than \(maxIdBytes) bytes", field: "id"), code: invalidRequest)
            }
            id = bytes(raw)
        }
        guard let version = members["jsonrpc"], JSONSpan.string(at: version, in: json) == "2.0" else {
            return .invalid(id: id ?? Data("null".utf8), ServiceError(.invalidArgument, "jsonrpc must be \"2.0\"", field: "jsonrpc"), code: invalidRequest)
        }
        guard let methodRange = members["method"], json[methodRange.lowerBound] == UInt8(ascii: "\""), methodRange.count > 2 else {
            return .invalid(id: id ?? Data("null".utf8), ServiceError(.invalidArgument, "method must be a non-empty string", field: "method"), code: invalidRequest)
        }
        guard methodRange.count <= 6 * maxMethodBytes + 2, let method = JSONSpan.string(at: methodRange, in: json), method.utf8.count <= maxMethodBytes else {
            let shown = String(decoding: json[methodRange].dropFirst().prefix(maxMethodBytes + 1), as: UTF8.self)
            return .invalid(
                id: id ?? Data("null".utf8), ServiceError(.invalidArgument, "method '\(Echo.clip(shown))' is longer than \(maxMethodBytes) bytes", field: "method"),
                code: invalidRequest)
        }
        var params = Data("{}".utf8)
        if let raw = members["params"], bytes(raw) != Data("null".utf8) {
            guard json[raw.lowerBound] == UInt8(ascii: "{") else {
                return .invalid(id: id, ServiceError(.invalidArgument, "params must be an object of named parameters", field: "params"), code: invalidParams)
            }
            params = bytes(raw)
        }
        var deadline: Int?
        if let raw = members["deadline_ms"] {
            guard raw.count <= 32, JSONNumber.isValid(json[raw]), let number = Double(String(decoding: json[raw], as: UTF8.self)),
                let value = Int(exactly: number)
            else {
                return .invalid(id: id, ServiceError(.invalidArgument, "deadline_ms must be an integer", field: "deadline_ms"), code: invalidParams)
            }
            deadline = value
        }
        return .call(id: id, Call(method: method, params: params, deadlineMilliseconds: deadline))
    }

    /// The id of a response this gateway wrote (`{"jsonrpc":"2.0","id":…,`).
    static func id(in response: [UInt8]) -> Data? {
        let data = Data(response)
        return JSONSpan.member("id", in: data).map { data.subdata(in: $0) }
    }

    /// `{"jsonrpc":"2.0","id":…,"result":…}`.
    static func result(id: Data, _ result: Data) -> [UInt8] {
        var out = Array(#"{"jsonrpc":"2.0","id":"#.utf8)
        out.reserveCapacity(out.count + id.count + result.count + 12)
        // Copied from their contiguous bytes: element by element, `Data` costs several instructions a byte.
        id.withUnsafeBytes { out.append(contentsOf: $0) }
        out.append(contentsOf: #","result":"#.utf8)
        result.withUnsafeBytes { out.append(contentsOf: $0) }
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

/// JSON-RPC 2.0 on a connection, as a state machine over bytes: lines in, calls out;
/// outcomes in, response lines out (a batch's as one line once all its members are done).
///
/// Every line is checked by `StrictJSON` (strict grammar, bounded depth, no key twice) before anything
/// parses it; every response is bounded by `maxReplyBytes`.
final class JSONRPCFraming: Framing {
    let limits: FramingLimits
    private var discardingLine = false
    /// Bytes at the front of the unread input already searched for a newline (so a long
    /// line arriving in small pieces is searched once, not once per piece).
    private var searched = 0
    private var nextSlot = 0
    /// The id of each call not yet answered; nil for a notification.
    private var ids: [Int: Data?] = [:]
    private var slotBatch: [Int: Int] = [:]
    private var batches: [Int: (waiting: Int, responses: [Int: [UInt8]])] = [:]
    private var nextBatch = 0
    private(set) var heldBytes = 0

    init(limits: FramingLimits) { self.limits = limits }

    var outstanding: Int { ids.count }

    func read(_ input: ArraySlice<UInt8>, atEnd: Bool, room: Int, bytes: Int) -> Reading {
        var reading = Reading()
        var position = input.startIndex
        var room = room
        while room > 0 && heldBytes + reading.output.count < bytes {
            var end: Int
            var next: Int
            let from = position == input.startIndex ? min(input.endIndex, position + searched) : position
            if let newline = input[from...].firstIndex(of: 0x0A) {
                end = newline
                next = newline + 1
            } else if atEnd && position < input.endIndex {
                // A last line without its LF, after the client half-closed: still a line.
                end = input.endIndex
                next = input.endIndex
            } else {
                if input.endIndex - position > limits.maxRequestBytes {
                    if !discardingLine { reject(ServiceError(.tooLarge, "line exceeds \(limits.maxRequestBytes) bytes"), into: &reading) }
                    discardingLine = true
                    position = input.endIndex
                }
                searched = input.endIndex - position
                reading.consumed = position - input.startIndex
                return reading
            }
            let line = input[position..<end]
            searched = 0
            if discardingLine {
                discardingLine = false
                position = next
                continue
            }
            if line.count > limits.maxRequestBytes {
                reject(ServiceError(.tooLarge, "line exceeds \(limits.maxRequestBytes) bytes"), into: &reading)
                position = next
                continue
            }
            guard line.contains(where: { $0 != 0x20 && $0 != 0x0D && $0 != 0x09 }) else {
                position = next
                continue
            }
            // A batch waits, unread, until there is room for all of it.
            guard let used = handle(line, room: room, into: &reading) else {
                reading.waiting = true
                break
            }
            room -= used
            reading.requests += 1
            position = next
        }
        reading.consumed = position - input.startIndex
        if position < input.endIndex && (room == 0 || heldBytes + reading.output.count >= bytes) { reading.waiting = true }
        return reading
    }

    /// Handles one line; the calls it started, or nil when it is a batch that must wait for room.
    private func handle(_ line: ArraySlice<UInt8>, room: Int, into reading: inout Reading) -> Int? {
        do {
            // I-JSON (RFC 7493): an object giving a key twice is refused, whichever copy a reader would take.
            try StrictJSON.check(line, maxDepth: limits.maxDepth, uniqueKeys: true)
        } catch {
            reject(ServiceError(.invalidArgument, "parse error: \(error.message)"), code: JSONRPC.parseError, into: &reading)
            return 0
        }
        let json = Data(line.drop { $0 == 0x20 || $0 == 0x09 || $0 == 0x0D })
        guard json.first == UInt8(ascii: "["), let elements = JSONSpan.elements(at: 0..<json.count, in: json) else {
            submit(JSONRPC.request(json), batch: nil, into: &reading)
            return 1
        }
        guard !elements.isEmpty else {
            reject(ServiceError(.invalidArgument, "empty batch"), code: JSONRPC.invalidRequest, into: &reading)
            return 0
        }
        guard elements.count <= limits.maxBatch else {
            reject(ServiceError(.tooLarge, "batch of \(elements.count) requests exceeds \(limits.maxBatch)"), into: &reading)
            return 0
        }
        // A batch waits for room, unless nothing is owed: then it goes whole, so it never waits forever.
        guard elements.count <= room || ids.isEmpty else { return nil }
        let batchId = nextBatch
        nextBatch += 1
        batches[batchId] = (elements.count, [:])
        for element in elements { submit(JSONRPC.request(json.subdata(in: element)), batch: batchId, into: &reading) }
        return elements.count
    }

    /// An error about the input itself, answered with a null id.
    private func reject(_ error: ServiceError, code: Int? = nil, into reading: inout Reading) {
        reading.output += JSONRPC.error(id: Data("null".utf8), error, code: code) + [0x0A]
    }

    private func submit(_ request: JSONRPC.Request, batch: Int?, into reading: inout Reading) {
        let slot = nextSlot
        nextSlot += 1
        if let batch { slotBatch[slot] = batch }
        switch request {
        case .invalid(let id, let error, let code):
            ids[slot] = id
            reading.output += finish(slot, JSONRPC.error(id: id ?? Data("null".utf8), error, code: code))
        case .call(let id, let call):
            ids[slot] = id
            reading.calls.append((slot, call))
        }
    }

    func answer(_ slot: Int, _ outcome: Outcome) -> [UInt8] {
        guard let entry = ids[slot] else { return [] }
        let id = entry ?? Data("null".utf8)
        switch outcome {
        case .result(let body) where body.count > limits.maxReplyBytes:
            return finish(slot, JSONRPC.error(id: id, .replyTooLarge(body.count, limit: limits.maxReplyBytes)))
        case .result(let body): return finish(slot, JSONRPC.result(id: id, body))
        case .bytes(let raw) where (raw.count + 2) / 3 * 4 + 2 > limits.maxReplyBytes:
            return finish(slot, JSONRPC.error(id: id, .replyTooLarge((raw.count + 2) / 3 * 4 + 2, limit: limits.maxReplyBytes)))
        case .bytes(let raw): return finish(slot, JSONRPC.result(id: id, Data(("\"" + raw.base64EncodedString() + "\"").utf8)))
        case .pong: return finish(slot, JSONRPC.result(id: id, Data("\"pong\"".utf8)))
        case .failure(let error): return finish(slot, JSONRPC.error(id: id, error))
        case .subscription(let change): return finish(slot, JSONRPC.result(id: id, change.json))
        }
    }

    /// `{"jsonrpc":"2.0","method":"push","params":{"topic":…,"id":…,"body":{…}}}`, a notification line.
    func push(_ push: Push, pattern: String?) -> [UInt8] {
        Array(#"{"jsonrpc":"2.0","method":"push","params":"#.utf8) + push.clientJSON + Array("}\n".utf8)
    }

    /// Files a response: written at once, or kept until its batch is complete. Notifications get none.
    private func finish(_ slot: Int, _ response: [UInt8]) -> [UInt8] {
        let notification = ids.removeValue(forKey: slot).map { $0 == nil } ?? true
        guard let batchId = slotBatch.removeValue(forKey: slot) else { return notification ? [] : response + [0x0A] }
        guard var batch = batches[batchId] else { return [] }
        batch.waiting -= 1
        if !notification {
            batch.responses[slot] = response
            heldBytes += response.count
        }
        if batch.waiting > 0 {
            batches[batchId] = batch
            return []
        }
        batches.removeValue(forKey: batchId)
        heldBytes -= batch.responses.values.reduce(0) { $0 + $1.count }
        // A batch of notifications only gets no answer at all.
        guard !batch.responses.isEmpty else { return [] }
        // The members' slots are consecutive: sorting by slot gives the batch's own order.
        var members = batch.responses.keys.sorted().compactMap { batch.responses[$0] }
        // The whole line is bounded too: the largest members give way to errors until it fits.
        var total = members.reduce(members.count + 1) { $0 + $1.count }
        while total > limits.maxReplyBytes, let largest = members.indices.max(by: { members[$0].count < members[$1].count }),
            members[largest].count > 256
        {
            let id = JSONRPC.id(in: members[largest]) ?? Data("null".utf8)
            let replaced = JSONRPC.error(id: id, ServiceError(.tooLarge, "the batch's replies exceed the limit of \(limits.maxReplyBytes) bytes; send fewer at once"))
            total += replaced.count - members[largest].count
            members[largest] = replaced
        }
        var out: [UInt8] = [UInt8(ascii: "[")]
        for (i, member) in members.enumerated() {
            if i > 0 { out.append(UInt8(ascii: ",")) }
            out += member
        }
        out += [UInt8(ascii: "]"), 0x0A]
        return out
    }
}
