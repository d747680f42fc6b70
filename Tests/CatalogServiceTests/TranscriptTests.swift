import Bus
import Foundation
import Testing
import TestSupport

@Suite struct TranscriptTests {
    @Test(arguments: ["catalog.md", "envelope.md"])
    func transcriptsMatchTheService(file: String) throws {
        let exchanges = try serviceTranscript(file)
        #expect(exchanges.count >= 3)
        let catalog = try CatalogFixture()
        for exchange in exchanges {
            var actual: [String: Any]
            do {
                let reply = try catalog.client.request(type: exchange.type, body: Data(exchange.body.utf8), timeoutMilliseconds: 5_000)
                actual = try JSONSerialization.jsonObject(with: reply.envelope) as? [String: Any] ?? [:]
            } catch let error as ServiceError {
                actual = ["v": 1, "id": "x", "ok": false,
                          "error": try JSONSerialization.jsonObject(with: try JSONEncoder().encode(error))]
            }
            actual.removeValue(forKey: "v")
            actual.removeValue(forKey: "id")
            let expected = try JSONSerialization.jsonObject(with: Data(exchange.expected.utf8))
            let shown = String(decoding: try JSONSerialization.data(withJSONObject: actual, options: [.sortedKeys]), as: UTF8.self)
            #expect(transcriptMatches(expected, actual), "\(file) line \(exchange.line): \(exchange.type) answered \(shown)")
        }
    }
}
