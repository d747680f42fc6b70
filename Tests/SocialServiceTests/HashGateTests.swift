import Bus
@testable import SocialService
import Testing

@Suite struct HashGateTests {
    @Test func passwordHashesLeaveOneReaderFree() throws {
        let gate = HashGate()
        // Two readers: one hash at a time; a second, while the first runs, is refused at once.
        let nested = try gate.run(readers: 2) { () -> ServiceError? in
            do {
                _ = try gate.run(readers: 2) { 1 }
                return nil
            } catch let error as ServiceError {
                return error
            }
        }
        #expect(nested?.code == .unavailable)
        #expect(try gate.run(readers: 2) { 7 } == 7)  // the slot is free again
        // Three readers: two at a time.
        #expect(try gate.run(readers: 3) { try gate.run(readers: 3) { 2 } } == 2)
    }
}
