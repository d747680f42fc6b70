import Bus
import Foundation
import Testing
import TestSupport

@Suite struct NotifyTranscriptTests {
    /// Replays `notify.md` against one fresh service whose clock starts at
    /// 2026-06-01T00:00:00Z and moves 1 s after each exchange.
    @Test func notifyTranscriptMatchesTheService() throws {
        let exchanges = try serviceTranscript("notify.md")
        #expect(exchanges.count >= 30)
        let f = try NotifyFixture()
        for exchange in exchanges {
            var actual: [String: Any]
            do {
                let reply = try f.client.request(type: exchange.type, body: Data(exchange.body.utf8), auth: exchange.auth, timeoutMilliseconds: 5_000)
                actual = try JSONSerialization.jsonObject(with: reply.envelope) as? [String: Any] ?? [:]
            } catch let error as ServiceError {
                actual = ["ok": false, "error": try JSONSerialization.jsonObject(with: try JSONEncoder().encode(error))]
            }
            actual.removeValue(forKey: "v")
            actual.removeValue(forKey: "id")
            let expected = try JSONSerialization.jsonObject(with: Data(exchange.expected.utf8))
            let shown = String(decoding: try JSONSerialization.data(withJSONObject: actual, options: [.sortedKeys, .withoutEscapingSlashes]), as: UTF8.self)
            #expect(transcriptMatches(expected, actual), "notify.md line \(exchange.line): \(exchange.type) answered \(shown)")
            f.advance(1_000)
        }
    }
}
