import Bus
import Foundation

/// One exchange of a service's transcript: who asks (if anyone), the request, and the reply the docs promise.
public struct Exchange: Sendable {
    public var line: Int
    public var auth: Auth?
    public var type: String
    public var body: String
    public var expected: String
}

/// A Markdown file whose code fences do not pair up: a block left open swallows the headings
/// and text after it, so the page shows less than the tests replay.
public struct UnclosedFence: Error, CustomStringConvertible {
    public var description: String
}

/// Reads every ```transcript block of a Markdown file in `Protocols/`. A request may start
/// with `[as ID:ROLE]`, the envelope's `auth`: `> [as 1:user] reviews.add {…}`.
/// `> type body` is a request straight to a service, `< envelope` its reply. A fence that
/// opens a block inside another, or a block still open at the end, is `UnclosedFence`.
public func serviceTranscript(_ file: String) throws -> [Exchange] {
    try serviceTranscript(text: try String(contentsOf: protocolsFolder().appendingPathComponent(file), encoding: .utf8), file: file)
}

/// `serviceTranscript(_:)` of Markdown `text`, named `file` in errors.
public func serviceTranscript(text: String, file: String) throws -> [Exchange] {
    var exchanges: [Exchange] = []
    var opened: Int?
    var inside = false
    var pending: Exchange?
    for (number, line) in text.components(separatedBy: "\n").enumerated() {
        if line.hasPrefix("```") {
            if let start = opened {
                guard line == "```" else {
                    throw UnclosedFence(description: "\(file) line \(number + 1): '\(line)' opens a block inside the one opened at line \(start)")
                }
                opened = nil
                inside = false
            } else {
                opened = number + 1
                inside = line == "```transcript"
            }
            continue
        }
        guard inside else { continue }
        if line.hasPrefix("> ") {
            var request = line.dropFirst(2)
            var auth: Auth?
            if let match = request.prefixMatch(of: #/\[as (\d+):(\w+)\] /#) {
                auth = Auth(userId: String(match.1), role: String(match.2))
                request = request[match.range.upperBound...]
            }
            let space = request.firstIndex(of: " ") ?? request.endIndex
            let body = request[space...].trimmingCharacters(in: .whitespaces)
            pending = Exchange(line: number + 1, auth: auth, type: String(request[..<space]), body: body.isEmpty ? "{}" : body, expected: "")
        } else if line.hasPrefix("< "), var exchange = pending {
            exchange.expected = String(line.dropFirst(2))
            exchanges.append(exchange)
            pending = nil
        }
    }
    if let start = opened { throw UnclosedFence(description: "\(file): the block opened at line \(start) is never closed") }
    return exchanges
}


/// Sends `exchange` to a service through `client` (with `body` in place of the exchange's own,
/// when given) and returns the reply as a transcript writes it: the envelope without `v` and
/// `id`, a refusal as `{"ok":false,"error":{…}}`.
public func replay(_ exchange: Exchange, on client: RPCClient, body: String? = nil) throws -> [String: Any] {
    var actual: [String: Any]
    do {
        let reply = try client.request(type: exchange.type, body: Data((body ?? exchange.body).utf8), auth: exchange.auth, timeoutMilliseconds: 5_000)
        actual = try JSONSerialization.jsonObject(with: reply.envelope) as? [String: Any] ?? [:]
    } catch let error as ServiceError {
        actual = ["ok": false, "error": try JSONSerialization.jsonObject(with: try JSONEncoder().encode(error))]
    }
    actual.removeValue(forKey: "v")
    actual.removeValue(forKey: "id")
    return actual
}

/// Whether `actual` (from `replay`) is the reply `exchange` promises; else a message saying
/// where in `file` and what came instead.
public func transcriptMismatch(_ exchange: Exchange, _ actual: [String: Any], file: String) throws -> String? {
    let expected = try JSONSerialization.jsonObject(with: Data(exchange.expected.utf8))
    guard !transcriptMatches(expected, actual) else { return nil }
    let shown = String(decoding: try JSONSerialization.data(withJSONObject: actual, options: [.sortedKeys, .withoutEscapingSlashes]), as: UTF8.self)
    return "\(file) line \(exchange.line): \(exchange.type) answered \(shown)"
}
