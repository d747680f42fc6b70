import Foundation
@testable import SocialService
import Storage
import Testing

/// Erasing an account finds the outbox rows that name the user through an index, not by
/// reading the whole outbox inside its transaction.
@Suite struct OutboxRedactionPlanTests {
    @Test func theRedactionReadsTheIndexNotTheOutbox() throws {
        let f = try SocialFixture()
        try f.register("ann")
        let db = try Database(path: f.databasePath)
        var plan: [String] = []
        try db.forEachRow("EXPLAIN QUERY PLAN " + AccountStore.redactOutbox, ["social.redacted", Int64(1)]) { row in
            plan.append(try row.decode("detail", as: String.self))
        }
        #expect(plan.contains { $0.contains("USING INDEX outbox_by_user") }, "\(plan)")
        #expect(!plan.contains { $0 == "SCAN outbox" }, "\(plan)")
    }
}
