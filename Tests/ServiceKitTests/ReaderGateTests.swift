import Bus
import ServiceKit
import Testing

@Suite struct ReaderGateTests {
    @Test func slowWorkLeavesOneReaderFree() throws {
        let gate = ReaderGate()
        let busy = ServiceError(.unavailable, "busy")
        // Two readers: one slow request at a time; a second, while the first runs, is refused at once.
        let nested = try gate.run(readers: 2, refusal: busy) { () -> ServiceError? in
            do {
                _ = try gate.run(readers: 2, refusal: busy) { 1 }
                return nil
            } catch let error as ServiceError {
                return error
            }
        }
        #expect(nested?.code == .unavailable)
        #expect(try gate.run(readers: 2, refusal: busy) { 7 } == 7)  // the slot is free again
        // Three readers: two at a time.
        #expect(try gate.run(readers: 3, refusal: busy) { try gate.run(readers: 3, refusal: busy) { 2 } } == 2)
    }
}
