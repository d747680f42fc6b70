import Bus
import Foundation
import Testing
import TestSupport

/// One exchange of a social transcript: who asks (if anyone), the request, and the reply the docs promise.
struct Exchange {
    var line: Int
    var auth: Auth?
    var type: String
    var body: String
    var expected: String
}

/// Reads every ```transcript block of a Markdown file in `Protocols/`. A request may start
/// with `[as ID:ROLE]`, the envelope's `auth`: `> [as 1:user] reviews.add {…}`.
func transcript(_ file: String) throws -> [Exchange] {
    let text = try String(contentsOf: protocolsFolder().appendingPathComponent(file), encoding: .utf8)
    var exchanges: [Exchange] = []
    var inside = false
    var pending: Exchange?
    for (number, line) in text.components(separatedBy: "\n").enumerated() {
        if line.hasPrefix("```") {
            inside = line == "```transcript"
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
    return exchanges
}

@Suite struct TranscriptTests {
    /// Replays `social.md` against one fresh service whose clock starts at 2026-06-01T00:00:00Z
    /// and moves 100 ms after each exchange. `"<token>"` in a request stands for the token of
    /// the last successful `auth.login`.
    @Test func socialTranscriptMatchesTheService() throws {
        let exchanges = try transcript("social.md")
        #expect(exchanges.count >= 20)
        let f = try SocialFixture()
        var token = ""
        for exchange in exchanges {
            let body = exchange.body.replacingOccurrences(of: "\"<token>\"", with: try json(token))
            var actual: [String: Any]
            do {
                let reply = try f.client.request(type: exchange.type, body: Data(body.utf8), auth: exchange.auth, timeoutMilliseconds: 5_000)
                actual = try JSONSerialization.jsonObject(with: reply.envelope) as? [String: Any] ?? [:]
            } catch let error as ServiceError {
                actual = ["ok": false, "error": try JSONSerialization.jsonObject(with: try JSONEncoder().encode(error))]
            }
            actual.removeValue(forKey: "v")
            actual.removeValue(forKey: "id")
            if exchange.type == "auth.login", let issued = (actual["body"] as? [String: Any])?["token"] as? String { token = issued }
            let expected = try JSONSerialization.jsonObject(with: Data(exchange.expected.utf8))
            let shown = String(decoding: try JSONSerialization.data(withJSONObject: actual, options: [.sortedKeys]), as: UTF8.self)
            #expect(transcriptMatches(expected, actual), "social.md line \(exchange.line): \(exchange.type) answered \(shown)")
            f.clock.advance(0.1)
        }
    }
}
