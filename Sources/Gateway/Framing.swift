import Bus
import Contracts
import Foundation
import ServiceCore

/// A connection's wire format, as a state machine over bytes: it reads calls from the input
/// and writes the outcomes of calls as reply bytes, in whatever order the format needs.
/// Independent of how the socket is driven.
protocol Framing: AnyObject {
    /// Reads what it can from the front of `input`, taking at most `room` requests (a JSON-RPC
    /// batch that does not fit waits unread) and stopping once the replies it made itself and
    /// holds pass `bytes`. `atEnd`: the client will send nothing more, so a last line without
    /// its LF counts.
    func read(_ input: ArraySlice<UInt8>, atEnd: Bool, room: Int, bytes: Int) -> Reading
    /// The reply bytes that `slot`'s outcome makes ready to write (maybe with earlier ones it
    /// released, maybe none yet).
    func answer(_ slot: Int, _ outcome: Outcome) -> [UInt8]
    /// A push's bytes in this framing, written between whole replies; `pattern`: heard by that
    /// pattern (RESP's `pmessage`), nil: by its topic's name.
    func push(_ push: Push, pattern: String?) -> [UInt8]
    /// Replies owed to the client: calls read and not yet answered or written.
    var outstanding: Int { get }
    /// Bytes of replies ready but held back (behind an earlier RESP reply, or until a batch is
    /// complete): they count against the connection's output bound like unsent output.
    var heldBytes: Int { get }
    /// Whether a sign-in holds for the connection's later calls (HTTP's requests each carry their own).
    var signsIn: Bool { get }
}

extension Framing {
    var signsIn: Bool { true }
}

/// What one `Framing.read` found.
struct Reading {
    /// Input bytes used up.
    var consumed = 0
    /// Calls to dispatch, each with the slot its outcome is answered under.
    var calls: [(slot: Int, call: Call)] = []
    /// Replies ready now (errors about the input, commands answered by the framing itself).
    var output: [UInt8] = []
    /// Requests seen (not blank lines), answered by a call or by the framing.
    var requests = 0
    /// The connection closes once the replies owed are written (QUIT, a protocol error).
    var close = false
    /// Reading stopped for want of room or bytes, not of input: more may be ready to read.
    var waiting = false
    /// The framing holds a request, or part of one, that is not in the input left (a body read
    /// as it arrives, a request waiting for room): the input is not all used up.
    var partial = false
    /// The `X-Forwarded-For` of the last HTTP request read: the client a proxy names, taken
    /// only from a trusted one.
    var forwardedFor: String?
    /// The framing the connection speaks from the end of `consumed` on (HTTP's upgrade to a WebSocket).
    var upgrade: (any Framing)?
}

/// The limits a framing applies to what it reads and writes: the suite-wide request size
/// and depth, and the gateway's batch and reply limits (defaults from their declarations).
struct FramingLimits: Sendable {
    var maxRequestBytes = CommonConfig(name: "gateway").maxRequestBytes
    var maxDepth = StrictJSON.defaultMaxDepth
    var maxBatch = GatewayLimits().maxBatch
    var maxReplyBytes = GatewayLimits().maxReplyBytes
    /// Origins besides the gateway's own whose pages may call it (`WebOrigin`), normalized.
    var allowedOrigins: Set<String> = []
    /// The web app's files, served over HTTP; none when the gateway serves no app.
    var web: WebFiles?
}

extension ServiceError {
    /// A reply over the gateway's reply limit, answered instead of it.
    static func replyTooLarge(_ size: Int, limit: Int) -> ServiceError {
        ServiceError(.tooLarge, "reply of \(size) bytes exceeds the limit of \(limit); ask for a smaller page")
    }
}

extension Push {
    /// What a client receives of a push: `{"topic":…,"id":…,"body":{…}}` (JSON-RPC's params,
    /// RESP's message payload).
    var clientJSON: [UInt8] {
        var out: [UInt8] = Array(#"{"topic":"#.utf8)
        JSONText.append(topic, to: &out)
        out += Array(#","id":"#.utf8)
        JSONText.append(id, to: &out)
        out += Array(#","body":"#.utf8)
        body.withUnsafeBytes { out.append(contentsOf: $0) }
        out.append(UInt8(ascii: "}"))
        return out
    }
}
