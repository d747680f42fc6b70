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
            let mismatch = try transcriptMismatch(exchange, try replay(exchange, on: f.client), file: "notify.md")
            #expect(mismatch == nil, "\(mismatch ?? "")")
            f.advance(1_000)
        }
    }
}
