import Bus
import Foundation

/// One JSON-RPC reply line from the gateway, read into types for assertions: the result
/// decoded as the test expects it, or the error with Tourbus's own code and field.
///
/// A line that is missing or is not a JSON-RPC reply has neither a result nor an error; its
/// text shows in failure messages.
public struct RPCReply: CustomStringConvertible, Sendable {
    /// The `error` member.
    public struct Failure: Decodable, Equatable, Sendable {
        /// The JSON-RPC code (-32602 and so on).
        public var code: Int
        public var message: String
        /// Tourbus's own details, when the error comes from a service or the gateway.
        public var data: Detail?
    }

    /// `error.data`: the Tourbus error code (`not_found`) and the field at fault.
    public struct Detail: Decodable, Equatable, Sendable {
        public var code: String?
        public var field: String?
    }

    /// The line as it came (empty when none came).
    public let line: String
    /// The error, if the reply is one.
    public let failure: Failure?
    private let result: Data?

    public init(_ line: String?) {
        let line = line ?? ""
        self.line = line
        let data = Data(line.utf8)
        result = JSONSpan.member("result", in: data).map { data.subdata(in: $0) }
        failure = JSONSpan.member("error", in: data).flatMap { try? JSONCoding.decoder.decode(Failure.self, from: data.subdata(in: $0)) }
    }

    /// Whether the reply has a result.
    public var succeeded: Bool { result != nil }

    /// The result decoded as `type`; nil when there is none or it has another shape.
    public func result<T: Decodable>(_ type: T.Type) -> T? {
        result.flatMap { try? JSONCoding.decoder.decode(T.self, from: $0) }
    }

    /// The result's member `key` decoded as `type` (`reply.field("id", Int.self)`).
    public func field<T: Decodable>(_ key: String, _ type: T.Type) -> T? {
        guard let result, let range = JSONSpan.member(key, in: result) else { return nil }
        return try? JSONCoding.decoder.decode(T.self, from: result.subdata(in: range))
    }

    /// The Tourbus error code (`unavailable`), from `error.data.code`.
    public var errorCode: String? { failure?.data?.code }

    public var description: String { line.isEmpty ? "(no reply)" : line }
}
