import Bus
import Contracts
import Foundation

/// JSON-RPC 2.0 over a WebSocket (RFC 6455), after `HTTPFraming` upgraded the connection: a
/// state machine over bytes, frames in, calls out; outcomes in, text frames out.
///
/// - Each text message is one JSON-RPC request or batch, read as one line of the line
///   protocol (the same checks and batch rules); each response or batch is one text frame,
///   and each push a notification in one.
/// - A client's frames must be masked, carry no extension bits, and keep control frames
///   whole and at most 125 bytes; a message (all its fragments) is at most
///   `maxRequestBytes`, and a text message is UTF-8. Anything else closes the connection
///   with the code that says why (1002 protocol error, 1003 binary data, 1007 not UTF-8,
///   1009 too big), after a close frame naming it.
/// - A ping is answered with a pong (between whole replies); a close is answered once the
///   replies owed are written; after it nothing more is read or sent.
final class WebSocketFraming: Framing {
    let limits: FramingLimits
    private let rpc: JSONRPCFraming

    /// The close codes this side sends (RFC 6455 §7.4.1).
    enum CloseCode: UInt16 {
        case normal = 1000
        case protocolError = 1002
        case unsupportedData = 1003
        case invalidText = 1007
        case tooBig = 1009
    }

    /// The opcode of a message being received in fragments, and its payload so far.
    private var fragmented: (opcode: UInt8, payload: [UInt8])?
    /// A whole text message that waits for room (a batch larger than it).
    private var waitingMessage: [UInt8]?
    /// The close frame to send once no reply is owed (the client closed).
    private var pendingClose: [UInt8]?
    /// A close frame was sent: nothing more is read or written.
    private var closeSent = false

    init(limits: FramingLimits) {
        self.limits = limits
        rpc = JSONRPCFraming(limits: limits)
    }

    var outstanding: Int { rpc.outstanding }
    var heldBytes: Int { rpc.heldBytes }

    /// What one frame's head says.
    struct FrameHead: Equatable {
        var fin: Bool
        var opcode: UInt8
        /// Where the payload starts, from the frame's start, and its length.
        var headLength: Int
        var payloadLength: Int
        var mask: [UInt8]
    }

    enum HeadReading: Equatable {
        case incomplete
        case frame(FrameHead)
        case refused(CloseCode, String)
    }

    /// Reads the head of the frame at the front of `input`, checked as a server checks a client's.
    static func head(_ input: ArraySlice<UInt8>, maxPayload: Int) -> HeadReading {
        guard input.count >= 2 else { return .incomplete }
        let first = input[input.startIndex]
        let second = input[input.startIndex + 1]
        let opcode = first & 0x0F
        guard first & 0x70 == 0 else { return .refused(.protocolError, "no extension was agreed: reserved bits must be 0") }
        guard [0, 1, 2, 8, 9, 10].contains(opcode) else { return .refused(.protocolError, "unknown opcode \(opcode)") }
        guard second & 0x80 != 0 else { return .refused(.protocolError, "a client's frames must be masked") }
        let fin = first & 0x80 != 0
        var length = Int(second & 0x7F)
        var at = input.startIndex + 2
        if opcode >= 8 {
            guard fin else { return .refused(.protocolError, "a control frame cannot be fragmented") }
            guard length <= 125 else { return .refused(.protocolError, "a control frame carries at most 125 bytes") }
        }
        if length >= 126 {
            let size = length == 126 ? 2 : 8
            guard input.endIndex - at >= size else { return .incomplete }
            var value: UInt64 = 0
            for byte in input[at..<(at + size)] { value = value << 8 | UInt64(byte) }
            at += size
            guard value >> 63 == 0 else { return .refused(.protocolError, "a frame's length has its top bit set") }
            guard value <= UInt64(maxPayload) else { return .refused(.tooBig, "a message is at most \(maxPayload) bytes") }
            length = Int(value)
        }
        guard input.endIndex - at >= 4 else { return .incomplete }
        let mask = Array(input[at..<(at + 4)])
        return .frame(FrameHead(fin: fin, opcode: opcode, headLength: at + 4 - input.startIndex, payloadLength: length, mask: mask))
    }

    func read(_ input: ArraySlice<UInt8>, atEnd: Bool, room: Int, bytes: Int) -> Reading {
        var reading = Reading()
        var position = input.startIndex
        var room = room
        frames: while !closeSent && pendingClose == nil {
            guard rpc.heldBytes + reading.output.count < bytes else {
                reading.waiting = true
                break
            }
            if let message = waitingMessage {
                guard let used = deliver(message, room: room, into: &reading) else {
                    reading.waiting = true
                    break
                }
                waitingMessage = nil
                room -= used
                continue
            }
            guard room > 0 else {
                reading.waiting = position < input.endIndex
                break
            }
            let head: FrameHead
            switch WebSocketFraming.head(input[position...], maxPayload: limits.maxRequestBytes) {
            case .incomplete:
                reading.consumed = position - input.startIndex
                reading.partial = fragmented != nil
                return reading
            case .refused(let code, let reason):
                fail(code, reason, into: &reading)
                position = input.endIndex
                continue
            case .frame(let frame): head = frame
            }
            guard input.endIndex - position - head.headLength >= head.payloadLength else { break frames }
            let start = position + head.headLength
            var payload = Array(input[start..<(start + head.payloadLength)])
            position = start + head.payloadLength
            WebSocketFraming.unmask(&payload, with: head.mask)
            switch head.opcode {
            // Control frames are not requests: like blank lines, they neither keep a connection
            // from idling nor a message's fragments from their timeout.
            case 9: reading.output += WebSocketFraming.frame(opcode: 10, payload[...])
            case 10: break
            case 8: receivedClose(payload, into: &reading)
            default:
                // A data frame: a message whole, or one of its fragments.
                if head.opcode == 0 {
                    guard fragmented != nil else {
                        fail(.protocolError, "a continuation frame with no message to continue", into: &reading)
                        continue
                    }
                } else if fragmented != nil {
                    fail(.protocolError, "a new message before the last one's final fragment", into: &reading)
                    continue
                }
                var message = fragmented ?? (head.opcode, [])
                // The payload so far has one owner while it grows: appending to a copy that
                // `fragmented` still shares would copy it whole for each fragment.
                fragmented = nil
                guard message.payload.count + payload.count <= limits.maxRequestBytes else {
                    fail(.tooBig, "a message is at most \(limits.maxRequestBytes) bytes", into: &reading)
                    continue
                }
                message.payload += payload
                guard head.fin else {
                    fragmented = message
                    continue
                }
                fragmented = nil
                reading.requests += 1
                guard message.opcode == 1 else {
                    fail(.unsupportedData, "messages are JSON-RPC text", into: &reading)
                    continue
                }
                guard String(validating: message.payload, as: UTF8.self) != nil else {
                    fail(.invalidText, "a text message must be UTF-8", into: &reading)
                    continue
                }
                guard let used = deliver(message.payload, room: room, into: &reading) else {
                    waitingMessage = message.payload
                    reading.waiting = true
                    break frames
                }
                room -= used
            }
        }
        reading.consumed = min(position, input.endIndex) - input.startIndex
        reading.partial = fragmented != nil || waitingMessage != nil
        if closeSent || pendingClose != nil { reading.close = true }
        return reading
    }

    /// One text message, as a line of the line protocol: the calls it started, or nil when its
    /// batch waits for room.
    private func deliver(_ message: [UInt8], room: Int, into reading: inout Reading) -> Int? {
        // A line break in JSON is white space, or a raw control character inside a string:
        // a carriage return is both of those too, and does not end the line.
        var line = message.map { $0 == 0x0A ? 0x0D : $0 }
        line.append(0x0A)
        let read = rpc.read(line[...], atEnd: true, room: room, bytes: .max)
        guard read.consumed > 0 else { return nil }
        if read.requests == 0 {
            // Nothing but white space: JSON-RPC's parse error, as an empty body is over HTTP.
            let error = ServiceError(.invalidArgument, "parse error: the message holds no JSON")
            reading.output += WebSocketFraming.text(JSONRPC.error(id: Data("null".utf8), error, code: JSONRPC.parseError) + [0x0A])
        }
        reading.output += WebSocketFraming.text(read.output)
        reading.calls += read.calls
        return read.calls.count
    }

    /// The client closed: the answer echoes its code once the replies owed are written.
    private func receivedClose(_ payload: [UInt8], into reading: inout Reading) {
        guard payload.count != 1 else { return fail(.protocolError, "a close frame's code is two bytes", into: &reading) }
        if payload.count >= 2 {
            let code = UInt16(payload[0]) << 8 | UInt16(payload[1])
            guard WebSocketFraming.validClose(code) else { return fail(.protocolError, "close code \(code) is not one a client may send", into: &reading) }
            guard String(validating: payload.dropFirst(2), as: UTF8.self) != nil else { return fail(.invalidText, "a close reason must be UTF-8", into: &reading) }
        }
        pendingClose = WebSocketFraming.frame(opcode: 8, payload.prefix(2))
        reading.output += flushClose()
    }

    /// Codes a peer may send in a close frame (RFC 6455 §7.4).
    static func validClose(_ code: UInt16) -> Bool {
        (1000...1003).contains(code) || (1007...1011).contains(code) || (3000...4999).contains(code)
    }

    /// Closes at once with `code`: what is owed is dropped.
    private func fail(_ code: CloseCode, _ reason: String, into reading: inout Reading) {
        guard !closeSent else { return }
        var payload = [UInt8(code.rawValue >> 8), UInt8(code.rawValue & 0xFF)]
        payload += Array(reason.utf8.prefix(123))
        reading.output += WebSocketFraming.frame(opcode: 8, payload[...])
        closeSent = true
        pendingClose = nil
        reading.close = true
    }

    /// The close frame that waited for the replies owed, once none is.
    private func flushClose() -> [UInt8] {
        guard let frame = pendingClose, rpc.outstanding == 0 else { return [] }
        pendingClose = nil
        closeSent = true
        return frame
    }

    func answer(_ slot: Int, _ outcome: Outcome) -> [UInt8] {
        let lines = rpc.answer(slot, outcome)
        guard !closeSent else { return [] }
        return WebSocketFraming.text(lines) + flushClose()
    }

    func push(_ push: Push, pattern: String?) -> [UInt8] {
        guard !closeSent && pendingClose == nil else { return [] }
        return WebSocketFraming.text(rpc.push(push, pattern: pattern))
    }

    /// Each line of `lines` (the line protocol's replies) as a text frame.
    static func text(_ lines: [UInt8]) -> [UInt8] {
        var out: [UInt8] = []
        for line in lines.split(separator: 0x0A) { out += frame(opcode: 1, line) }
        return out
    }

    /// A server's frame: final, unmasked.
    static func frame(opcode: UInt8, _ payload: ArraySlice<UInt8>) -> [UInt8] {
        var out: [UInt8] = [0x80 | opcode]
        out.reserveCapacity(payload.count + 10)
        switch payload.count {
        case ..<126: out.append(UInt8(payload.count))
        case ..<65_536: out += [126, UInt8(payload.count >> 8), UInt8(payload.count & 0xFF)]
        default:
            out.append(127)
            for shift in stride(from: 56, through: 0, by: -8) { out.append(UInt8(truncatingIfNeeded: UInt64(payload.count) >> UInt64(shift))) }
        }
        out += payload
        return out
    }

    /// Undoes a client's masking (RFC 6455 §5.3).
    static func unmask(_ payload: inout [UInt8], with mask: [UInt8]) {
        for i in payload.indices { payload[i] ^= mask[i & 3] }
    }
}
