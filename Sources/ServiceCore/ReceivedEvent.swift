import Bus
import Foundation

/// One event as a subscriber (or a follower) receives it, live or replayed: the header and the whole envelope.
public struct ReceivedEvent: Sendable {
    public let header: EventHeader
    public let envelope: Data

    /// Parses an event envelope's header (by span when it can: catching up means millions of these).
    /// An envelope that is not strict JSON, or nests deeper than `maxJSONDepth`, is malformed.
    public init(envelope: Data, maxJSONDepth: Int = StrictJSON.defaultMaxDepth) throws(ServiceError) {
        do throws(JSONSyntaxError) {
            try StrictJSON.check(envelope, maxDepth: maxJSONDepth)
        } catch {
            throw ServiceError(.invalidArgument, "malformed event envelope: \(error.message)")
        }
        try self.init(checkedEnvelope: envelope)
    }

    /// Parses the header of an envelope this process already checked as `init(envelope:)`
    /// does (a snapshot's item, staged and read back), without checking it again.
    package init(checkedEnvelope envelope: Data) throws(ServiceError) {
        if let scanned = EventHeader.scan(envelope) {
            header = scanned
        } else {
            do {
                header = try JSONCoding.decoder.decode(EventHeader.self, from: envelope)
            } catch {
                throw ServiceError(.invalidArgument, "malformed event envelope")
            }
        }
        self.envelope = envelope
    }

    /// Decodes the event's body as `Body`, parsing only the body's bytes.
    public func body<Body: Decodable>(_ type: Body.Type) throws(ServiceError) -> Body {
        guard let body = bodyBytes else { return try JSONCoding.decodeBody(type, fromEnvelope: envelope) }
        return try JSONCoding.decode(type, from: body)
    }

    /// The body's JSON text, cut out of the envelope, for readers faster than `Decodable`.
    public var bodyBytes: Data? { JSONSpan.member("body", in: envelope).map { envelope.subdata(in: $0) } }
}
