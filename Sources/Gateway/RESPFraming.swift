import Bus
import Contracts
import Foundation

/// The Redis serialization protocol (RESP2), as far as clients send it: arrays of bulk
/// strings, and inline commands (a line of space-separated words, quotes allowed).
enum RESP {
    /// What the parser found at the front of the input.
    enum Parsed: Equatable {
        /// A whole command and how many input bytes it used.
        case command([[UInt8]], consumed: Int)
        /// More input is needed.
        case incomplete
        /// The input breaks the protocol; the connection cannot continue after this.
        case protocolError(String)
        /// A bulk string or line over the size limit; the connection cannot continue after this.
        case tooLarge(String)
    }

    /// Most arguments in one command.
    static let maxArguments = 4_096

    /// How far an array command that has not all come yet was read: the bulk strings
    /// complete so far, and where the next one starts (from the array's first byte). The next
    /// read goes on from there, so a command trickled in byte by byte is read once in all,
    /// not again from its start on every read.
    struct ArrayProgress: Equatable {
        var count: Int
        var arguments: [[UInt8]]
        /// Where the next bulk string starts, counted from the array's `*`.
        var offset: Int
        var total: Int
    }

    /// Parses one command from `input` starting at `start`; `atEnd`: nothing more will come,
    /// so an inline command without its LF is complete.
    /// `searched`: bytes from `start` already known to hold no LF. `progress`: how far an
    /// earlier call read the array command at `start` (kept there when this one is incomplete
    /// too, else cleared).
    static func parse(
        _ input: ArraySlice<UInt8>, from start: Int, maxBytes: Int, atEnd: Bool = false, searched: Int = 0,
        progress: inout ArrayProgress?
    ) -> Parsed {
        guard start < input.endIndex else { return .incomplete }
        if input[start] == UInt8(ascii: "*") {
            let parsed = parseArray(input, start, maxBytes, &progress)
            if parsed != .incomplete { progress = nil }
            return parsed
        }
        progress = nil
        return parseInline(input, start, maxBytes, atEnd: atEnd, searched: searched)
    }

    static func parse(_ input: [UInt8], from start: Int, maxBytes: Int) -> Parsed {
        var progress: ArrayProgress?
        return parse(input[...], from: start, maxBytes: maxBytes, progress: &progress)
    }

    /// The line at `start`: where its text ends and the next begins, or nil when its LF has
    /// not come within `limit` bytes. A header of an array (`crlf`: `*N` or `$N`, whose first
    /// byte is the type) that ends in a bare LF reads as holding no number, so it is refused
    /// as malformed: Redis wants CR LF there.
    private static func line(_ input: ArraySlice<UInt8>, _ start: Int, limit: Int, searched: Int = 0, crlf: Bool = false) -> (end: Int, next: Int)? {
        var i = min(input.endIndex, start + searched)
        let stop = min(input.endIndex, start + limit + 2)
        while i < stop {
            if input[i] == 0x0A {
                let carriage = i > start && input[i - 1] == 0x0D
                if crlf && !carriage { return (start + 1, i + 1) }
                return (carriage ? i - 1 : i, i + 1)
            }
            i += 1
        }
        return nil
    }

    /// A length as Redis reads it: an optional `-` and digits without a leading zero, nothing
    /// else (`+5`, ` 5`, `05` and `-0` are refused).
    private static func integer(_ bytes: ArraySlice<UInt8>) -> Int? {
        guard !bytes.isEmpty, bytes.count <= 18 else { return nil }
        let negative = bytes.first == UInt8(ascii: "-")
        let digits = negative ? bytes.dropFirst() : bytes
        guard !digits.isEmpty, digits.allSatisfy({ (0x30...0x39).contains($0) }),
            digits.first != UInt8(ascii: "0") || (digits.count == 1 && !negative)
        else { return nil }
        return Int(String(decoding: bytes, as: UTF8.self))
    }

    private static func parseArray(_ input: ArraySlice<UInt8>, _ start: Int, _ maxBytes: Int, _ progress: inout ArrayProgress?) -> Parsed {
        if progress == nil {
            guard let header = line(input, start, limit: 32, crlf: true) else {
                return input.endIndex - start > 34 ? .protocolError("invalid multibulk length") : .incomplete
            }
            guard let count = integer(input[(start + 1)..<header.end]), count <= maxArguments else {
                return .protocolError("invalid multibulk length")
            }
            var arguments: [[UInt8]] = []
            arguments.reserveCapacity(max(count, 0))
            progress = ArrayProgress(count: max(count, 0), arguments: arguments, offset: header.next - start, total: 0)
        }
        guard var read = progress else { return .incomplete }
        // Handed back in the progress when the array is not all here yet.
        progress = nil
        defer { if read.arguments.count < read.count { progress = read } }
        var i = start + read.offset
        while read.arguments.count < read.count {
            read.offset = i - start
            guard i < input.endIndex else { return .incomplete }
            guard input[i] == UInt8(ascii: "$") else {
                return .protocolError("expected '$', got '\(Character(Unicode.Scalar(input[i])))'")
            }
            guard let sizeLine = line(input, i, limit: 32, crlf: true) else {
                return input.endIndex - i > 34 ? .protocolError("invalid bulk length") : .incomplete
            }
            guard let size = integer(input[(i + 1)..<sizeLine.end]), size >= 0 else { return .protocolError("invalid bulk length") }
            let total = read.total + size
            guard size <= maxBytes, total <= maxBytes else {
                return .tooLarge(
                    size > maxBytes
                        ? "bulk string of \(size) bytes exceeds the limit of \(maxBytes)"
                        : "command of more than \(maxBytes) bytes exceeds the limit")
            }
            let dataStart = sizeLine.next
            guard input.endIndex >= dataStart + size + 2 else { return .incomplete }
            guard input[dataStart + size] == 0x0D, input[dataStart + size + 1] == 0x0A else {
                return .protocolError("bulk string longer than its declared length \(size)")
            }
            read.arguments.append(Array(input[dataStart..<(dataStart + size)]))
            read.total = total
            i = dataStart + size + 2
        }
        return .command(read.arguments, consumed: i - start)
    }

    private static func parseInline(_ input: ArraySlice<UInt8>, _ start: Int, _ maxBytes: Int, atEnd: Bool, searched: Int) -> Parsed {
        if let found = line(input, start, limit: maxBytes, searched: searched) { return parseInlineLine(input, start, found) }
        if input.endIndex - start > maxBytes { return .tooLarge("inline command over \(maxBytes) bytes") }
        guard atEnd else { return .incomplete }
        // The client half-closed after a last line without its LF: still a command.
        let end = input[input.endIndex - 1] == 0x0D ? input.endIndex - 1 : input.endIndex
        return parseInlineLine(input, start, (end, input.endIndex))
    }

    private static func parseInlineLine(_ input: ArraySlice<UInt8>, _ start: Int, _ found: (end: Int, next: Int)) -> Parsed {
        guard let words = split(input[start..<found.end]) else { return .protocolError("unbalanced quotes in request") }
        return .command(words, consumed: found.next - start)
    }

    /// Splits an inline command into words: spaces separate, "double" quotes allow
    /// escapes (\n \t \" \\ \xHH), 'single' quotes are literal.
    static func split(_ line: ArraySlice<UInt8>) -> [[UInt8]]? {
        var words: [[UInt8]] = []
        var i = line.startIndex
        while i < line.endIndex {
            while i < line.endIndex, line[i] == 0x20 || line[i] == 0x09 { i += 1 }
            guard i < line.endIndex else { break }
            var word: [UInt8] = []
            let quote = line[i]
            if quote == UInt8(ascii: "\"") || quote == UInt8(ascii: "'") {
                i += 1
                var closed = false
                while i < line.endIndex {
                    let c = line[i]
                    if c == quote {
                        closed = true
                        i += 1
                        break
                    }
                    if quote == UInt8(ascii: "\""), c == UInt8(ascii: "\\"), i + 1 < line.endIndex {
                        let next = line[i + 1]
                        switch next {
                        case UInt8(ascii: "n"): word.append(0x0A)
                        case UInt8(ascii: "r"): word.append(0x0D)
                        case UInt8(ascii: "t"): word.append(0x09)
                        case UInt8(ascii: "x") where i + 3 < line.endIndex:
                            if let v = UInt8(String(decoding: line[(i + 2)...(i + 3)], as: UTF8.self), radix: 16) {
                                word.append(v)
                                i += 4
                                continue
                            }
                            word.append(next)
                        default: word.append(next)
                        }
                        i += 2
                        continue
                    }
                    word.append(c)
                    i += 1
                }
                guard closed, i == line.endIndex || line[i] == 0x20 || line[i] == 0x09 else { return nil }
            } else {
                while i < line.endIndex, line[i] != 0x20, line[i] != 0x09 {
                    word.append(line[i])
                    i += 1
                }
            }
            words.append(word)
        }
        return words
    }

    // MARK: Replies

    static func simple(_ text: String) -> [UInt8] { Array("+\(text)\r\n".utf8) }

    /// `-CODE message`; CR and LF in the message become spaces.
    static func error(_ code: String, _ message: String) -> [UInt8] {
        let clean = message.replacingOccurrences(of: "\r", with: " ").replacingOccurrences(of: "\n", with: " ")
        return Array("-\(code) \(clean)\r\n".utf8)
    }

    /// An error from the closed set: `-CODE message`, or `-CODE field: message`.
    static func error(_ error: ServiceError) -> [UInt8] {
        RESP.error(error.code.rawValue.uppercased(), error.field.map { "\($0): \(error.message)" } ?? error.message)
    }

    /// `:n`.
    static func integer(_ value: Int) -> [UInt8] { Array(":\(value)\r\n".utf8) }

    static func bulk(_ bytes: [UInt8]) -> [UInt8] {
        bytes.withUnsafeBytes { bulk($0) }
    }

    /// A reply body, copied from its contiguous bytes (element by element, `Data` costs
    /// several instructions a byte).
    static func bulk(_ bytes: Data) -> [UInt8] {
        bytes.withUnsafeBytes { bulk($0) }
    }

    private static func bulk(_ bytes: UnsafeRawBufferPointer) -> [UInt8] {
        var out: [UInt8] = [UInt8(ascii: "$")]
        out.reserveCapacity(bytes.count + 24)
        JSONText.append(Int64(bytes.count), to: &out)
        out += [0x0D, 0x0A]
        out.append(contentsOf: bytes)
        out += [0x0D, 0x0A]
        return out
    }

    static let emptyArray: [UInt8] = Array("*0\r\n".utf8)
    static let nullBulk: [UInt8] = Array("$-1\r\n".utf8)
    /// RESP3's null.
    static let null3: [UInt8] = Array("_\r\n".utf8)

    /// The head of a pub/sub message of `parts`: an array in RESP2, a push frame in RESP3.
    private static func pubSubHead(_ version: Int, _ parts: Int = 3) -> [UInt8] { Array("\(version == 3 ? ">" : "*")\(parts)\r\n".utf8) }

    /// `subscribe`/`unsubscribe` confirmations as Redis sends them: one per topic named, with
    /// the connection's count of topics and patterns after it (`unsubscribe`, nil and the count
    /// when there was none to drop).
    static func subscription(_ change: SubscriptionChange, version: Int) -> [UInt8] {
        let kind = bulk(Array(change.kind.utf8))
        guard !change.topics.isEmpty else { return pubSubHead(version) + kind + (version == 3 ? null3 : nullBulk) + integer(change.total) }
        var out: [UInt8] = []
        for (topic, count) in zip(change.topics, change.counts) {
            out += pubSubHead(version) + kind + bulk(Array(topic.utf8)) + integer(count)
        }
        return out
    }

    /// A push as Redis delivers a published message: `message`, the topic, the payload; or,
    /// heard by a pattern, `pmessage`, the pattern, the topic, the payload.
    static func message(_ push: Push, pattern: String?, version: Int) -> [UInt8] {
        guard let pattern else { return pubSubHead(version) + bulk(Array("message".utf8)) + bulk(Array(push.topic.utf8)) + bulk(push.clientJSON) }
        return pubSubHead(version, 4) + bulk(Array("pmessage".utf8)) + bulk(Array(pattern.utf8)) + bulk(Array(push.topic.utf8)) + bulk(push.clientJSON)
    }
}

/// RESP on a connection, as a state machine over bytes: commands in, calls out; outcomes
/// in, replies out in the order the commands came (as Redis clients expect of a pipeline).
///
/// The Redis commands that tools and libraries send on their own (`HELLO`, `CLIENT`,
/// `SELECT`, `ECHO`, `COMMAND`, …) are answered here, so they work unchanged.
final class RESPFraming: Framing {
    let limits: FramingLimits
    private var nextSlot = 0
    private var nextToSend = 0
    private var ready: [Int: [UInt8]] = [:]
    private(set) var heldBytes = 0
    /// Slots of AUTH commands, answered `+OK` as Redis clients expect, and of HELLO … AUTH,
    /// answered with the server's description once signed in.
    private var authSlots: [Int: [UInt8]] = [:]
    /// The name `CLIENT SETNAME` (or `HELLO … SETNAME`) gave the connection.
    private var name: String?
    /// The RESP version `HELLO` chose: 2, or 3 (maps, a null of its own, later push frames).
    private var version = 2
    private var closing = false
    /// RESP2's pub/sub mode: from a SUBSCRIBE until no topic is left (and none is being
    /// subscribed), only the pub/sub commands, PING and QUIT are taken; RESP3 keeps every
    /// command, and a `HELLO 2` while subscribed comes back to the mode.
    private var listening: Bool { version == 2 && (heard > 0 || !subscribeSlots.isEmpty) }
    /// Topics and patterns the connection hears, as the last answer to a (un)subscription said.
    private var heard = 0
    /// Slots of SUBSCRIBE commands not answered yet (a refused one may end the pub/sub mode).
    private var subscribeSlots: Set<Int> = []
    /// Bytes at the front of the unread input already searched for the LF of an inline command.
    private var searched = 0
    /// How far the array command at the front of the unread input was read.
    private var array: RESP.ArrayProgress?

    init(limits: FramingLimits) { self.limits = limits }

    var outstanding: Int { nextSlot - nextToSend }

    func read(_ input: ArraySlice<UInt8>, atEnd: Bool, room: Int, bytes: Int) -> Reading {
        var reading = Reading()
        var position = input.startIndex
        var room = room
        while room > 0 && !closing && heldBytes + reading.output.count < bytes {
            let known = position == input.startIndex ? searched : 0
            if position != input.startIndex { array = nil }
            switch RESP.parse(input, from: position, maxBytes: limits.maxRequestBytes, atEnd: atEnd, searched: known, progress: &array) {
            case .incomplete:
                searched = input.endIndex - position
                reading.consumed = position - input.startIndex
                return reading
            case .command(let words, let consumed):
                searched = 0
                position += consumed
                guard !words.isEmpty else { continue }
                reading.requests += 1
                room -= 1
                command(words, into: &reading)
            case .protocolError(let message):
                // In its turn after the replies still owed, then the connection closes.
                reading.output += file(takeSlot(), RESP.error("ERR", "Protocol error: \(message)"))
                close(&reading)
            case .tooLarge(let message):
                reading.output += file(takeSlot(), RESP.error("TOO_LARGE", message))
                close(&reading)
            }
        }
        reading.consumed = closing ? input.count : position - input.startIndex
        reading.waiting = !closing && position < input.endIndex
        return reading
    }

    private func close(_ reading: inout Reading) {
        closing = true
        reading.close = true
    }

    private func takeSlot() -> Int {
        defer { nextSlot += 1 }
        return nextSlot
    }

    /// One command: answered here (Redis housekeeping, AUTH's shape), or a call.
    private func command(_ words: [[UInt8]], into reading: inout Reading) {
        let slot = takeSlot()
        let method = String(decoding: words[0], as: UTF8.self).lowercased()
        var arguments: [String] { words.dropFirst().map { String(decoding: $0, as: UTF8.self) } }
        func reply(_ bytes: [UInt8]) { reading.output += file(slot, bytes) }
        if listening {
            switch method {
            case Methods.Gateway.subscribe.name, Methods.Gateway.unsubscribe.name, "psubscribe", "punsubscribe", "quit": break
            case Methods.Gateway.ping.name where words.count <= 2:
                reply(Array("*2\r\n".utf8) + RESP.bulk(Array("pong".utf8)) + RESP.bulk(words.count == 2 ? words[1] : []))
                return
            default:
                reply(RESP.error("ERR", "Can't execute '\(Echo.clip(method))': only SUBSCRIBE / UNSUBSCRIBE / PING / QUIT are allowed in this context"))
                return
            }
        }
        switch method {
        case "quit":
            reply(RESP.simple("OK"))
            close(&reading)
            return
        case Methods.Gateway.subscribe.name where words.count < 2, "psubscribe" where words.count < 2:
            reply(RESP.error("ERR", "wrong number of arguments for '\(method)' command"))
            return
        case Methods.Gateway.subscribe.name, Methods.Gateway.unsubscribe.name, "psubscribe", "punsubscribe":
            var params: [UInt8] = Array((method.hasPrefix("p") ? #"{"patterns":["# : #"{"topics":["#).utf8)
            for (i, word) in words.dropFirst().enumerated() {
                if i > 0 { params.append(UInt8(ascii: ",")) }
                JSONText.append(String(decoding: word, as: UTF8.self), to: &params)
            }
            params += Array("]}".utf8)
            if method.hasSuffix("subscribe") && !method.hasSuffix("unsubscribe") { subscribeSlots.insert(slot) }
            reading.calls.append((slot, Call(method: method, params: Data(params))))
            return
        case "ssubscribe", "sunsubscribe":
            reply(RESP.error("ERR", "\(method.uppercased()) is not supported: there are no shard channels here; use SUBSCRIBE"))
            return
        case Methods.Gateway.ping.name where words.count == 2, "echo" where words.count == 2:
            reply(RESP.bulk(words[1]))
            return
        case "echo":
            reply(RESP.error("ERR", "wrong number of arguments for 'echo' command"))
            return
        case "command", "config":
            // Asked by tools at connect time (COMMAND DOCS, CONFIG GET …): nothing to tell.
            reply(words.count > 1 && String(decoding: words[1], as: UTF8.self).lowercased() == "count" ? RESP.integer(0) : RESP.emptyArray)
            return
        case "select":
            reply(arguments == ["0"] ? RESP.simple("OK") : RESP.error("ERR", "DB index is out of range"))
            return
        case "client":
            reply(client(arguments))
            return
        case "hello":
            switch hello(arguments) {
            case .reply(let bytes): reply(bytes)
            case .signIn(let call, let description):
                authSlots[slot] = description
                reading.calls.append((slot, call))
            }
            return
        case "auth":
            // AUTH <token> resumes a session; AUTH <username> <password> (Redis 6's form) logs
            // in, except that the user `default` with a token resumes (redis-py's password=).
            let credentials = arguments
            guard (1...2).contains(credentials.count) else {
                reply(RESP.error("ERR", "AUTH takes a token, or a username and a password"))
                return
            }
            authSlots[slot] = RESP.simple("OK")
            reading.calls.append((slot, RESPFraming.signIn(credentials.count == 2 ? credentials[0] : nil, credentials[credentials.count - 1])))
            return
        default:
            break
        }
        guard words[0].count <= JSONRPC.maxMethodBytes else {
            reply(RESP.error(Dispatcher.unknownMethod(method)))
            return
        }
        // Counted as in a JSON-RPC request: the request and its params object are two levels.
        switch CommandArguments.params(Array(words.dropFirst()), maxDepth: limits.maxDepth - 2) {
        case .success(let params): reading.calls.append((slot, Call(method: method, params: params)))
        case .failure(let error): reply(RESP.error(error))
        }
    }

    /// `CLIENT SETNAME`, `SETINFO`, `GETNAME`, `ID`: what client libraries send at connect time.
    private func client(_ arguments: [String]) -> [UInt8] {
        switch (arguments.first?.lowercased(), arguments.count) {
        case ("setname", 2):
            return rename(arguments[1]) ?? RESP.simple("OK")
        case ("setinfo", 3): return RESP.simple("OK")
        case ("getname", 1): return name.map { RESP.bulk(Array($0.utf8)) } ?? (version == 3 ? RESP.null3 : RESP.nullBulk)
        default: return RESP.error("ERR", "unknown or malformed CLIENT subcommand; this gateway knows SETNAME, SETINFO and GETNAME")
        }
    }

    /// Names the connection (`CLIENT SETNAME`, `HELLO … SETNAME`; empty clears the name), or
    /// the error that refuses the name: at most 128 bytes, no spaces or line breaks.
    private func rename(_ newName: String) -> [UInt8]? {
        guard !newName.contains(where: { $0 == " " || $0.isNewline }), newName.utf8.count <= 128 else {
            return RESP.error("ERR", "Client names cannot contain spaces, newlines or special characters.")
        }
        name = newName.isEmpty ? nil : newName
        return nil
    }

    /// The call that signs in for `AUTH` or `HELLO … AUTH`: a token resumes a session (as the
    /// password of no user or of the user `default`), a username and password log in.
    private static func signIn(_ username: String?, _ secret: String) -> Call {
        let params = username == nil || username == "default" ? ["token": secret] : ["username": username ?? "", "password": secret]
        let method = params["token"] != nil ? Methods.Auth.resume.name : Methods.Auth.login.name
        return Call(method: method, params: Authenticator.json(params))
    }

    /// What `HELLO` leads to: a reply now, or a sign-in whose success is answered with `description`.
    private enum Hello {
        case reply([UInt8])
        case signIn(Call, description: [UInt8])
    }

    /// `HELLO [2|3] [AUTH username password] [SETNAME name]`: chooses the RESP version and
    /// answers the server's description (a map in RESP3), after signing in when asked.
    private func hello(_ arguments: [String]) -> Hello {
        var rest = arguments[...]
        if let first = rest.first {
            guard first == "2" || first == "3" else {
                return .reply(RESP.error("NOPROTO", "unsupported protocol version; this gateway speaks RESP2 and RESP3"))
            }
            rest = rest.dropFirst()
        }
        var signIn: Call?
        var newName: String?
        while let option = rest.first?.lowercased() {
            switch option {
            case "auth" where rest.count >= 3:
                signIn = RESPFraming.signIn(rest[rest.startIndex + 1], rest[rest.startIndex + 2])
                rest = rest.dropFirst(3)
            case "setname" where rest.count >= 2:
                newName = rest[rest.startIndex + 1]
                rest = rest.dropFirst(2)
            default:
                return .reply(RESP.error("ERR", "syntax error in HELLO option '\(Echo.clip(option))'"))
            }
        }
        if let newName, let refusal = rename(newName) { return .reply(refusal) }
        if let chosen = arguments.first { version = chosen == "3" ? 3 : 2 }
        let fields: [(String, [UInt8])] = [
            ("server", RESP.bulk(Array("tourbus".utf8))), ("version", RESP.bulk(Array("1.0.0".utf8))),
            ("proto", RESP.integer(version)), ("mode", RESP.bulk(Array("standalone".utf8))),
            ("role", RESP.bulk(Array("master".utf8))), ("modules", RESP.emptyArray),
        ]
        var description = Array((version == 3 ? "%\(fields.count)\r\n" : "*\(fields.count * 2)\r\n").utf8)
        for (key, value) in fields { description += RESP.bulk(Array(key.utf8)) + value }
        if let signIn { return .signIn(signIn, description: description) }
        return .reply(description)
    }

    func answer(_ slot: Int, _ outcome: Outcome) -> [UInt8] {
        if let success = authSlots.removeValue(forKey: slot), case .result = outcome { return file(slot, success) }
        subscribeSlots.remove(slot)
        switch outcome {
        case .result(let body) where body.count > limits.maxReplyBytes:
            return file(slot, RESP.error(.replyTooLarge(body.count, limit: limits.maxReplyBytes)))
        case .result(let body): return file(slot, RESP.bulk(body))
        case .bytes(let raw) where raw.count > limits.maxReplyBytes:
            return file(slot, RESP.error(.replyTooLarge(raw.count, limit: limits.maxReplyBytes)))
        case .bytes(let raw): return file(slot, RESP.bulk(raw))
        case .pong: return file(slot, RESP.simple("PONG"))
        case .failure(let error): return file(slot, RESP.error(error))
        case .subscription(let change):
            heard = change.total
            return file(slot, RESP.subscription(change, version: version))
        }
    }

    func push(_ push: Push, pattern: String?) -> [UInt8] { RESP.message(push, pattern: pattern, version: version) }

    /// Files a reply under its slot: the replies now ready in order.
    private func file(_ slot: Int, _ reply: [UInt8]) -> [UInt8] {
        if slot == nextToSend && ready.isEmpty {
            nextToSend += 1
            return reply
        }
        ready[slot] = reply
        heldBytes += reply.count
        var out: [UInt8] = []
        while let next = ready.removeValue(forKey: nextToSend) {
            heldBytes -= next.count
            out += next
            nextToSend += 1
        }
        return out
    }
}
