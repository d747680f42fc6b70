import Bus
import Foundation
import Testing
import TestSupport

@Suite struct TranscriptTests {
    @Test(arguments: ["catalog.md", "envelope.md", "tours.md", "import.md"])
    func transcriptsMatchTheService(file: String) throws {
        let exchanges = try serviceTranscript(file)
        #expect(exchanges.count >= 3)
        let catalog = try CatalogFixture()
        for exchange in exchanges {
            let mismatch = try transcriptMismatch(exchange, try replay(exchange, on: catalog.client), file: file)
            #expect(mismatch == nil, "\(mismatch ?? "")")
        }
    }
}
