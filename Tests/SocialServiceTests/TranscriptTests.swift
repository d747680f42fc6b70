import Bus
import Foundation
import Testing
import TestSupport

@Suite struct TranscriptTests {
    /// Replays `social.md` against one fresh service whose clock starts at 2026-06-01T00:00:00Z
    /// and moves 100 ms after each exchange. `"<token>"` in a request stands for the token of
    /// the last successful `auth.login`.
    @Test func socialTranscriptMatchesTheService() throws {
        let exchanges = try serviceTranscript("social.md")
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
