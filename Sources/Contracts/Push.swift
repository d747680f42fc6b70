import Bus
import Foundation

/// A push: a message a service sends to one user, delivered by every gateway to each of that
/// user's connections that subscribed to its topic. Delivery is at most once; what must not be
/// lost a service keeps in its own store (notify's inbox, chat history), where a client finds it.
///
/// On the bus it goes out on the service's PUB socket, beside its events, as two frames:
/// `push.<topic>` and the envelope
/// `{"v":1,"id":"…","topic":"notify.alert","user_id":12,"coalesce":null,"origin":null,"body":{…}}`.
/// The prefix keeps pushes from event subscribers (they subscribe to their source's events);
/// gateways subscribe to the prefix only.
public struct Push: Sendable, Equatable {
    /// The first frame's prefix, before the topic.
    public static let framePrefix = "push."
    /// The most bytes of an envelope; a gateway drops a longer one.
    public static let maxEnvelopeBytes = 64 << 10
    public static let maxTopicBytes = 64
    public static let maxIdBytes = 128
    public static let maxCoalesceBytes = 128
    public static let maxOriginBytes = 128
    /// How deep an envelope nests (its body two levels less).
    public static let maxDepth = 32

    /// What clients subscribe to, e.g. `notify.alert`.
    public var topic: String
    /// The push's own id, unique for its sender (clients may drop one they saw).
    public var id: String
    /// The user it is for.
    public var userId: Int64
    /// A connection that cannot keep up keeps only the latest push with the same key.
    public var coalesce: String?
    /// The connection that made the change the push tells of (the request's `auth.origin`),
    /// which does not hear it: a device need not hear of its own change.
    public var origin: String?
    /// The body, a JSON object, as its bytes.
    public var body: Data

    public init(topic: String, id: String, userId: Int64, coalesce: String? = nil, origin: String? = nil, body: Data) {
        self.topic = topic
        self.id = id
        self.userId = userId
        self.coalesce = coalesce
        self.origin = origin
        self.body = body
    }

    /// Whether `topic` can be pushed and subscribed to: 1 to 64 bytes of `a-z 0-9 . _ -`,
    /// starting with a letter (`notify.alert`).
    public static func isValidTopic(_ topic: some StringProtocol) -> Bool {
        let bytes = topic.utf8
        guard (1...maxTopicBytes).contains(bytes.count), let first = bytes.first, (0x61...0x7A).contains(first) else { return false }
        return bytes.allSatisfy { (0x61...0x7A).contains($0) || (0x30...0x39).contains($0) || $0 == 0x2E || $0 == 0x5F || $0 == 0x2D }
    }

    /// Whether `origin` reads back as a push's origin: at most `maxOriginBytes`, no escapes.
    public static func isValidOrigin(_ origin: String) -> Bool {
        origin.utf8.count <= maxOriginBytes && !origin.utf8.contains(UInt8(ascii: "\"")) && !origin.utf8.contains(UInt8(ascii: "\\"))
    }

    /// The two frames that send it on a PUB socket. An origin that would not read back (see
    /// `isValidOrigin`) is written as none, so it cannot cost the push itself.
    public var frames: [Data] {
        var out: [UInt8] = Array(#"{"v":1,"id":"#.utf8)
        JSONText.append(id, to: &out)
        out += Array(#","topic":"#.utf8)
        JSONText.append(topic, to: &out)
        out += Array(#","user_id":"#.utf8)
        JSONText.append(userId, to: &out)
        out += Array(#","coalesce":"#.utf8)
        if let coalesce { JSONText.append(coalesce, to: &out) } else { out += Array("null".utf8) }
        out += Array(#","origin":"#.utf8)
        if let origin, Push.isValidOrigin(origin) { JSONText.append(origin, to: &out) } else { out += Array("null".utf8) }
        out += Array(#","body":"#.utf8)
        out += body
        out.append(UInt8(ascii: "}"))
        return [Data((Push.framePrefix + topic).utf8), Data(out)]
    }

    /// Why a received push was dropped.
    public struct Refusal: Error, Sendable, Equatable, CustomStringConvertible {
        public var description: String
        init(_ description: String) { self.description = description }
    }

    /// Reads a push from its two frames, checking everything a gateway relies on: the size,
    /// strict JSON within `maxDepth` and on one line, `v` 1, the topic valid and the same as the frame's, a
    /// positive user id, the bounded id, coalescing key and origin, and an object body.
    public static func read(_ frames: [Data]) throws(Refusal) -> Push {
        guard frames.count == 2 else { throw Refusal("\(frames.count) frames, not 2") }
        let envelope = frames[1]
        guard envelope.count <= maxEnvelopeBytes else { throw Refusal("envelope of \(envelope.count) bytes exceeds \(maxEnvelopeBytes)") }
        // Line breaks can only be white space between tokens here; a JSON-RPC client reads one
        // object per line, so a push that holds one would break its stream.
        guard !envelope.contains(0x0A), !envelope.contains(0x0D) else { throw Refusal("line breaks in the envelope") }
        var version: Int64?
        var id: String?
        var topic: String?
        var userId: Int64?
        var coalesce: String?
        var origin: String?
        var body: Range<Int>?
        var bad: String?
        let object: Bool
        do {
            object = try StrictJSON.checkMembers(envelope, maxDepth: maxDepth) { key, value, range in
                func text(_ limit: Int) -> String? {
                    guard let s = JSONSpan.plainString(value), s.utf8.count <= limit else { return nil }
                    return s
                }
                if JSONSpan.key(key, is: "v") {
                    version = JSONNumber.integer(value)
                } else if JSONSpan.key(key, is: "id") {
                    id = text(maxIdBytes)
                    if id == nil { bad = "id must be a string of at most \(maxIdBytes) bytes without escapes" }
                } else if JSONSpan.key(key, is: "topic") {
                    topic = text(maxTopicBytes)
                } else if JSONSpan.key(key, is: "user_id") {
                    userId = JSONNumber.integer(value)
                } else if JSONSpan.key(key, is: "coalesce") {
                    if value.first != UInt8(ascii: "n") {
                        coalesce = text(maxCoalesceBytes)
                        if coalesce == nil { bad = "coalesce must be null or a string of at most \(maxCoalesceBytes) bytes without escapes" }
                    }
                } else if JSONSpan.key(key, is: "origin") {
                    if value.first != UInt8(ascii: "n") {
                        origin = text(maxOriginBytes)
                        if origin == nil { bad = "origin must be null or a string of at most \(maxOriginBytes) bytes without escapes" }
                    }
                } else if JSONSpan.key(key, is: "body") {
                    guard value.first == UInt8(ascii: "{") else {
                        bad = "body must be an object"
                        return false
                    }
                    body = range
                }
                return bad == nil
            }
        } catch {
            throw Refusal("not strict JSON: \(error)")
        }
        if let bad { throw Refusal(bad) }
        guard object else { throw Refusal("not an object") }
        guard version == 1 else { throw Refusal("v must be 1") }
        let frameTopic = String(decoding: frames[0], as: UTF8.self)
        guard let topic, isValidTopic(topic), frameTopic == framePrefix + topic else {
            throw Refusal("topic must be valid and match the frame '\(Echo.clip(frameTopic))'")
        }
        guard let id else { throw Refusal("no id") }
        guard let userId, userId > 0 else { throw Refusal("user_id must be a positive integer") }
        guard let body else { throw Refusal("no body") }
        return Push(topic: topic, id: id, userId: userId, coalesce: coalesce, origin: origin, body: envelope.subdata(in: body))
    }
}
