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
            let actual = try replay(exchange, on: f.client, body: body)
            if exchange.type == "auth.login", let issued = (actual["body"] as? [String: Any])?["token"] as? String { token = issued }
            let mismatch = try transcriptMismatch(exchange, actual, file: "social.md")
            #expect(mismatch == nil, "\(mismatch ?? "")")
            f.clock.advance(0.1)
        }
    }
}
