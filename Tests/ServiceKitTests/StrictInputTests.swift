import Bus
import Foundation
import ServiceKit
import Testing

@Suite struct StrictInputTests {
    @Test func eventsMustBeStrictAndShallow() throws {
        let good = EnvelopeCoding.event(seq: 1, type: "t.x", ts: "2026-01-01T00:00:00.000Z", epoch: "e", body: Data(#"{"a":[1]}"#.utf8))
        #expect(try ReceivedEvent(envelope: good).header.seq == 1)

        let trailing = EnvelopeCoding.event(seq: 2, type: "t.x", ts: "2026-01-01T00:00:00.000Z", epoch: "e", body: Data(#"{"a":1,}"#.utf8))
        #expect(EventHeader.scan(trailing) != nil)  // the span reader alone would have taken it
        #expect(throws: ServiceError(.invalidArgument, "malformed event envelope: trailing comma at byte \(trailing.count - 2)")) {
            try ReceivedEvent(envelope: trailing)
        }
        let deep = EnvelopeCoding.event(seq: 3, type: "t.x", ts: "2026-01-01T00:00:00.000Z", epoch: "e",
                                        body: Data((String(repeating: "[", count: 100_000) + String(repeating: "]", count: 100_000)).utf8))
        #expect(throws: ServiceError.self) { try ReceivedEvent(envelope: deep) }
        #expect(throws: ServiceError.self) { try ReceivedEvent(envelope: good, maxJSONDepth: 2) }
        #expect(try ReceivedEvent(envelope: good, maxJSONDepth: 3).header.seq == 1)
    }
}
