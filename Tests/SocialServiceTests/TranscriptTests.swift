import Bus
import Foundation
import Testing
import TestSupport

@Suite struct TranscriptTests {
    /// A transcript block left open would swallow the sections after it on the page while the
    /// replay went on as if nothing were wrong: the reader refuses it, and a fence that opens
    /// inside a block.
    @Test func aBlockLeftOpenIsRefused() throws {
        let exchange = "```transcript\n> sys.ping {}\n< {\"ok\":true,\"body\":{}}\n"
        #expect(try serviceTranscript(text: exchange + "```\n\n## Next\n", file: "good.md").count == 1)
        #expect(throws: UnclosedFence.self) { try serviceTranscript(text: exchange + "\n## Next\n", file: "open.md") }
        #expect(throws: UnclosedFence.self) { try serviceTranscript(text: exchange + exchange + "```\n", file: "nested.md") }
    }

    /// Replays `social.md` against one fresh service whose clock starts at 2026-06-01T00:00:00Z
    /// and moves 100 ms after each exchange. `"<token>"` in a request stands for the token of
    /// the last successful `auth.login`, `"<upload_id>"` for the upload id of the last
    /// successful `profile.photo.upload.begin`. A `fake.emit` goes to the stand-in favorites,
    /// which publishes the event it holds; the replay goes on once social has applied it.
    @Test func socialTranscriptMatchesTheService() throws {
        let exchanges = try serviceTranscript("social.md")
        #expect(exchanges.count >= 20)
        let f = try SocialFixture(favorites: true)
        var token = "", upload = ""
        for exchange in exchanges {
            let body = exchange.body.replacingOccurrences(of: "\"<token>\"", with: try json(token))
                .replacingOccurrences(of: "\"<upload_id>\"", with: try json(upload))
            if exchange.type == "fake.emit", let favorites = f.favoritesClient {
                let actual = try replay(exchange, on: favorites, body: body)
                let mismatch = try transcriptMismatch(exchange, actual, file: "social.md")
                #expect(mismatch == nil, "\(mismatch ?? "")")
                let seq = (actual["body"] as? NSNumber)?.int64Value ?? .max
                #expect(try f.eventually { try f.applied(from: "favorites") >= seq }, "social.md line \(exchange.line): never applied")
                continue
            }
            let actual = try replay(exchange, on: f.client, body: body)
            if exchange.type == "auth.login", let issued = (actual["body"] as? [String: Any])?["token"] as? String { token = issued }
            if exchange.type == "profile.photo.upload.begin", let begun = (actual["body"] as? [String: Any])?["upload_id"] as? String { upload = begun }
            let mismatch = try transcriptMismatch(exchange, actual, file: "social.md")
            #expect(mismatch == nil, "\(mismatch ?? "")")
            f.clock.advance(0.1)
        }
    }
}
