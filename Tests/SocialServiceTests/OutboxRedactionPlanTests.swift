import Foundation
@testable import SocialService
import Storage
import TestSupport
import Testing

/// Erasing an account finds the outbox rows that name the user through an index, not by
/// reading the whole outbox inside its transaction.
@Suite struct OutboxRedactionPlanTests {
    @Test func theRedactionReadsTheIndexNotTheOutbox() throws {
        let f = try SocialFixture()
        try f.register("ann")
        let plan = try outboxRedactionPlan(types: 0, path: f.databasePath)
        #expect(plan.contains { $0.contains("USING INDEX outbox_by_user") }, "\(plan)")
        #expect(!plan.contains { $0 == "SCAN outbox" }, "\(plan)")
    }
}
