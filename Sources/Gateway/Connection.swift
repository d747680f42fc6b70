import Bus
import Foundation
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// Limits every client connection lives within.
public struct ConnectionLimits: Sendable {
    /// Longest JSON-RPC line, RESP bulk string or inline command.
    public var maxRequestBytes = 1 << 20
    /// Requests of one connection waiting for their answers; more get `rate_limited`.
    public var maxInFlight = 128
    /// Unsent output past which a client that does not read is disconnected.
    public var maxPendingOutput = 8 << 20
    /// A connection with nothing to do for this long is closed.
    public var idleTimeoutMilliseconds = 300_000

    public init() {}
}

/// Answers that other threads hand to a connection's thread: a queue and an eventfd.
final class Inbox: Sendable {
    let wakeup: Wakeup
    private let queue = Mutex<[(slot: Int, outcome: Outcome, change: SessionChange?)]>([])

    init() throws(SystemError) { wakeup = try Wakeup() }

    func post(_ slot: Int, _ outcome: Outcome, _ change: SessionChange?) {
        queue.withLock { $0.append((slot, outcome, change)) }
        wakeup.signal()
    }

    func take() -> [(slot: Int, outcome: Outcome, change: SessionChange?)] {
        wakeup.drain()
        return queue.withLock { q in
            defer { q.removeAll(keepingCapacity: true) }
            return q
        }
    }
}

/// One client connection, served by its own thread from the first byte to close.
///
/// The framing is fixed by the first byte: `{` or `[` is JSON-RPC, anything else RESP.
/// Requests go to the dispatcher as they are parsed (pipelining), except that those after
/// a sign-in or sign-out wait for its answer; answers come back through the inbox. RESP
/// answers leave in request order, JSON-RPC ones as they come.
final class Connection {
    enum Framing { case jsonRPC, resp }

    private let socket: TCPSocket
    private let dispatcher: Dispatcher
    private let limits: ConnectionLimits
    private let logger: Logger
    private let stopping: StopFlag
    private let inbox: Inbox

    private var framing: Framing?
    private var input: [UInt8] = []
    private var scratch = [UInt8](repeating: 0, count: 65_536)
    private var inputStart = 0
    private var discardingLine = false
    private var output: [UInt8] = []
    private var outputSent = 0
    private var inFlight = 0
    private var peerClosed = false
    private var closeAfterFlush = false
    private var lastProgress = monotonicNanos()
    /// The token this connection signed in with (auth.login, auth.resume, AUTH), if any.
    private var token: String?
    /// RESP slots of AUTH commands, answered `+OK` as Redis clients expect.
    private var authSlots = Set<Int>()
    /// The slot of a sign-in or sign-out under way: requests after it wait for its answer, so
    /// they run as whoever it leaves signed in.
    private var sessionSlot: Int?
    private var held: [(slot: Int, method: String, params: Data, deadline: Int?)] = []
    static let sessionMethods: Set<String> = ["auth.login", "auth.resume", "auth.logout"]
    /// Answered at once, whoever is signed in.
    static let builtIns: Set<String> = ["ping", "help", "gateway.status"]

    // RESP: answers in request order.
    private var nextSlot = 0
    private var nextToSend = 0
    private var readyReplies: [Int: [UInt8]] = [:]
    // JSON-RPC: the id of each slot, and batches waiting for all their members.
    private var slotIds: [Int: Data?] = [:]
    private var slotBatch: [Int: Int] = [:]
    private var batches: [Int: (waiting: Int, responses: [Int: [UInt8]])] = [:]
    private var nextBatch = 0

    init(socket: TCPSocket, dispatcher: Dispatcher, limits: ConnectionLimits, logger: Logger, stopping: StopFlag) throws {
        self.socket = socket
        self.dispatcher = dispatcher
        self.limits = limits
        self.logger = logger
        self.stopping = stopping
        self.inbox = try Inbox()
    }

    /// Serves the connection until the client leaves, a limit is crossed or the gateway stops.
    func run() {
        var poller = [pollfd(fd: socket.descriptor, events: 0, revents: 0), pollfd(fd: inbox.wakeup.descriptor, events: Int16(POLLIN), revents: 0)]
        while true {
            // Stopping: take no more requests, but answer those in flight (the server waits a while).
            if stopping.isSet { closeAfterFlush = true }
            let reading = !peerClosed && !closeAfterFlush
            if !reading && inFlight == 0 && outputSent == output.count { return }
            poller[0].events = Int16(reading ? POLLIN : 0) | Int16(outputSent < output.count ? POLLOUT : 0)
            let idle = UInt64(limits.idleTimeoutMilliseconds) * 1_000_000
            let now = monotonicNanos()
            if now - lastProgress > idle && inFlight == 0 {
                logger.debug("closing idle connection", [:])
                return
            }
            let rc = poll(&poller, 2, 200)
            if rc < 0 && errno != EINTR { return }
            if poller[1].revents != 0 { collectAnswers() }
            if poller[0].revents & Int16(POLLIN | POLLHUP | POLLERR) != 0 && reading {
                guard readInput() else { return }
            }
            if outputSent < output.count {
                guard flush() else { return }
            }
            if output.count - outputSent > limits.maxPendingOutput {
                logger.warn("disconnecting a client that does not read its replies", ["pending_bytes": output.count - outputSent])
                return
            }
        }
    }

    // MARK: Input

    private func readInput() -> Bool {
        do {
            guard let count = try socket.read(appendingTo: &input, scratch: &scratch) else { return true }
            if count == 0 {
                peerClosed = true
                return true
            }
            lastProgress = monotonicNanos()
        } catch {
            return false
        }
        if framing == nil {
            while inputStart < input.count, [0x20, 0x0A, 0x0D, 0x09].contains(input[inputStart]) { inputStart += 1 }
            guard inputStart < input.count else { return true }
            framing = input[inputStart] == UInt8(ascii: "{") || input[inputStart] == UInt8(ascii: "[") ? .jsonRPC : .resp
        }
        switch framing {
        case .jsonRPC?: parseLines()
        case .resp?: parseCommands()
        case nil: break
        }
        if inputStart > 0 && (inputStart == input.count || inputStart > 65_536) {
            input.removeFirst(inputStart)
            inputStart = 0
        }
        return true
    }

    private func parseLines() {
        while !closeAfterFlush {
            guard let newline = input[inputStart...].firstIndex(of: 0x0A) else {
                if input.count - inputStart > limits.maxRequestBytes {
                    if !discardingLine { reject(ServiceError(.tooLarge, "line exceeds \(limits.maxRequestBytes) bytes")) }
                    discardingLine = true
                    inputStart = input.count
                }
                return
            }
            let line = input[inputStart..<newline]
            inputStart = newline + 1
            if discardingLine {
                discardingLine = false
                continue
            }
            if line.count > limits.maxRequestBytes {
                reject(ServiceError(.tooLarge, "line exceeds \(limits.maxRequestBytes) bytes"))
                continue
            }
            guard line.contains(where: { ![0x20, 0x0D, 0x09].contains($0) }) else { continue }
            handleLine(Data(line))
        }
    }

    private func handleLine(_ line: Data) {
        let parsed: Any
        do {
            parsed = try JSONSerialization.jsonObject(with: line, options: [.fragmentsAllowed])
        } catch {
            reject(ServiceError(.invalidArgument, "parse error: not valid JSON"), code: JSONRPC.parseError)
            return
        }
        guard let batch = parsed as? [Any] else {
            submit(JSONRPC.request(from: parsed), batch: nil)
            return
        }
        guard !batch.isEmpty else {
            reject(ServiceError(.invalidArgument, "empty batch"), code: JSONRPC.invalidRequest)
            return
        }
        guard batch.count <= limits.maxInFlight else {
            reject(ServiceError(.tooLarge, "batch of \(batch.count) requests exceeds \(limits.maxInFlight)"))
            return
        }
        let batchId = nextBatch
        nextBatch += 1
        batches[batchId] = (batch.count, [:])
        for element in batch { submit(JSONRPC.request(from: element), batch: batchId) }
    }

    /// An error about the input itself, with a null id (JSON-RPC) or as the next reply (RESP).
    private func reject(_ error: ServiceError, code: Int? = nil) {
        switch framing {
        case .jsonRPC?: append(JSONRPC.error(id: Data("null".utf8), error, code: code) + [0x0A])
        default: append(RESP.error(error.code.rawValue.uppercased(), error.message))
        }
    }

    private func submit(_ request: JSONRPC.Request, batch: Int?) {
        let slot = takeSlot()
        if let batch { slotBatch[slot] = batch }
        switch request {
        case .invalid(let id, let error, let code):
            slotIds[slot] = id
            finishJSON(slot, JSONRPC.error(id: id ?? Data("null".utf8), error, code: code), notification: id == nil)
        case .call(let id, let method, let params, let deadline):
            slotIds[slot] = id
            start(slot, method: method, params: params, deadline: deadline)
        }
    }

    private func parseCommands() {
        while !closeAfterFlush {
            switch RESP.parse(input, from: inputStart, maxBytes: limits.maxRequestBytes) {
            case .incomplete:
                return
            case .command(let words, let consumed):
                inputStart += consumed
                if !words.isEmpty { handleCommand(words) }
            case .protocolError(let message):
                // In its turn after the replies still owed, then the connection closes.
                finishRESP(takeSlot(), RESP.error("ERR", "Protocol error: \(message)"))
                closeAfterFlush = true
            case .tooLarge(let message):
                finishRESP(takeSlot(), RESP.error("TOO_LARGE", message))
                closeAfterFlush = true
            }
        }
    }

    private func takeSlot() -> Int {
        defer { nextSlot += 1 }
        return nextSlot
    }

    private func handleCommand(_ words: [[UInt8]]) {
        let slot = takeSlot()
        let method = String(decoding: words[0], as: UTF8.self).lowercased()
        // What Redis tools send besides commands: answered so they work unchanged.
        switch method {
        case "quit":
            finishRESP(slot, RESP.simple("OK"))
            closeAfterFlush = true
            return
        case "command", "config":
            finishRESP(slot, RESP.emptyArray)
            return
        case "ping" where words.count == 2:
            finishRESP(slot, RESP.bulk(words[1]))
            return
        case "auth":
            // AUTH <token> resumes a session; AUTH <username> <password> (Redis 6's form) logs in.
            let arguments = words.dropFirst().map { String(decoding: $0, as: UTF8.self) }
            let request: (String, [String: String])? = switch arguments.count {
            case 1: ("auth.resume", ["token": arguments[0]])
            case 2: ("auth.login", ["username": arguments[0], "password": arguments[1]])
            default: nil
            }
            guard let (method, params) = request, let body = try? JSONSerialization.data(withJSONObject: params) else {
                finishRESP(slot, RESP.error("ERR", "AUTH takes a token, or a username and a password"))
                return
            }
            authSlots.insert(slot)
            start(slot, method: method, params: body, deadline: nil)
            return
        default:
            break
        }
        switch CommandArguments.params(Array(words.dropFirst())) {
        case .success(let params):
            start(slot, method: method, params: params, deadline: nil)
        case .failure(let error):
            finishRESP(slot, RESP.error(error.code.rawValue.uppercased(), error.field.map { "\($0): \(error.message)" } ?? error.message))
        }
    }

    // MARK: Dispatch and answers

    private func start(_ slot: Int, method: String, params: Data, deadline: Int?) {
        if sessionSlot != nil && !Connection.builtIns.contains(method) && inFlight + held.count < limits.maxInFlight {
            held.append((slot, method, params, deadline))
            return
        }
        guard inFlight + held.count < limits.maxInFlight else {
            complete(slot, .failure(ServiceError(.rateLimited, "more than \(limits.maxInFlight) requests in flight on this connection")))
            return
        }
        if Connection.sessionMethods.contains(method) { sessionSlot = slot }
        inFlight += 1
        let inbox = self.inbox
        if let immediate = dispatcher.dispatch(method: method, params: params, deadlineMilliseconds: deadline, token: token,
                                               completion: { inbox.post(slot, $0, $1) }) {
            inFlight -= 1
            complete(slot, immediate)
        }
    }

    private func collectAnswers() {
        for (slot, outcome, change) in inbox.take() {
            inFlight -= 1
            complete(slot, outcome, change)
        }
        lastProgress = monotonicNanos()
    }

    private func complete(_ slot: Int, _ outcome: Outcome, _ change: SessionChange? = nil) {
        // Requests sent after this answer carry the identity it leaves.
        switch change {
        case .signedIn(let newToken)?: token = newToken
        case .signedOut(let oldToken)?: if token == oldToken { token = nil }
        case nil: break
        }
        answer(slot, outcome)
        // The session is settled: what waited for it goes now, in order, until another sign-in.
        guard sessionSlot == slot else { return }
        sessionSlot = nil
        while sessionSlot == nil, !held.isEmpty {
            let next = held.removeFirst()
            start(next.slot, method: next.method, params: next.params, deadline: next.deadline)
        }
    }

    private func answer(_ slot: Int, _ outcome: Outcome) {
        if authSlots.remove(slot) != nil, case .result = outcome {
            finishRESP(slot, RESP.simple("OK"))
            return
        }
        switch framing {
        case .jsonRPC?:
            let id = slotIds[slot] ?? nil
            let bytes: [UInt8]
            switch outcome {
            case .result(let body): bytes = JSONRPC.result(id: id ?? Data("null".utf8), body)
            case .pong: bytes = JSONRPC.result(id: id ?? Data("null".utf8), Data("\"pong\"".utf8))
            case .failure(let error): bytes = JSONRPC.error(id: id ?? Data("null".utf8), error)
            }
            finishJSON(slot, bytes, notification: id == nil)
        default:
            switch outcome {
            case .result(let body): finishRESP(slot, RESP.bulk(body))
            case .pong: finishRESP(slot, RESP.simple("PONG"))
            case .failure(let error):
                finishRESP(slot, RESP.error(error.code.rawValue.uppercased(), error.field.map { "\($0): \(error.message)" } ?? error.message))
            }
        }
    }

    private func finishJSON(_ slot: Int, _ response: [UInt8], notification: Bool) {
        slotIds.removeValue(forKey: slot)
        guard let batchId = slotBatch.removeValue(forKey: slot) else {
            if !notification { append(response + [0x0A]) }
            return
        }
        guard var batch = batches[batchId] else { return }
        batch.waiting -= 1
        if !notification { batch.responses[slot] = response }
        if batch.waiting > 0 {
            batches[batchId] = batch
            return
        }
        batches.removeValue(forKey: batchId)
        // A batch of notifications only gets no answer at all.
        guard !batch.responses.isEmpty else { return }
        // The members' slots are consecutive: sorting by slot gives the batch's own order.
        var out: [UInt8] = [UInt8(ascii: "[")]
        for (i, slot) in batch.responses.keys.sorted().enumerated() {
            if i > 0 { out.append(UInt8(ascii: ",")) }
            out += batch.responses[slot] ?? []
        }
        out += [UInt8(ascii: "]"), 0x0A]
        append(out)
    }

    private func finishRESP(_ slot: Int, _ reply: [UInt8]) {
        readyReplies[slot] = reply
        while let next = readyReplies.removeValue(forKey: nextToSend) {
            append(next)
            nextToSend += 1
        }
    }

    // MARK: Output

    private func append(_ bytes: [UInt8]) {
        if outputSent == output.count {
            output.removeAll(keepingCapacity: true)
            outputSent = 0
        }
        output += bytes
    }

    private func flush() -> Bool {
        do {
            let sent = try socket.write(output, from: outputSent)
            if sent > 0 { lastProgress = monotonicNanos() }
            outputSent += sent
            if outputSent > 1 << 20 {
                output.removeFirst(outputSent)
                outputSent = 0
            }
            return true
        } catch {
            return false
        }
    }
}

/// Command-line style arguments as a params object: `key value` pairs (numbers, booleans,
/// null and JSON objects or arrays recognised) or a single JSON object. RESP commands and
/// `tourbus call` both read their arguments this way.
public enum CommandArguments {
    /// The params object as JSON, or `invalid_argument`.
    public static func params(_ words: [[UInt8]]) -> Result<Data, ServiceError> {
        if words.isEmpty { return .success(Data("{}".utf8)) }
        if words.count == 1 {
            let data = Data(words[0])
            guard let object = try? JSONSerialization.jsonObject(with: data), object is [String: Any] else {
                return .failure(ServiceError(.invalidArgument, "arguments are key value pairs or one JSON object"))
            }
            return .success(data)
        }
        guard words.count % 2 == 0 else {
            return .failure(ServiceError(.invalidArgument, "arguments are key value pairs; '\(String(decoding: words[words.count - 1], as: UTF8.self))' has no value"))
        }
        var object: [String: Any] = [:]
        for i in stride(from: 0, to: words.count, by: 2) {
            let key = String(decoding: words[i], as: UTF8.self)
            object[key] = value(String(decoding: words[i + 1], as: UTF8.self))
        }
        guard let data = try? JSONSerialization.data(withJSONObject: object, options: [.withoutEscapingSlashes]) else {
            return .failure(ServiceError(.invalidArgument, "arguments do not form a JSON object"))
        }
        return .success(data)
    }

    /// A word as a JSON value: number, boolean, null, object or array when it reads as one, else a string.
    static func value(_ word: String) -> Any {
        switch word {
        case "true": return true
        case "false": return false
        case "null": return NSNull()
        default: break
        }
        // Numbers as JSON writes them (so "+61…" and "0x1A" stay strings).
        if word.wholeMatch(of: /-?(0|[1-9][0-9]*)/) != nil, let int = Int(word) { return int }
        if word.wholeMatch(of: /-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?/) != nil, let double = Double(word), double.isFinite { return double }
        // A JSON object, array or string literal ("\"2046\"" forces a string).
        if let first = word.first, first == "{" || first == "[" || first == "\"",
           let json = try? JSONSerialization.jsonObject(with: Data(word.utf8), options: [.fragmentsAllowed]) { return json }
        return word
    }
}
