import Foundation
import Storage
import Testing

/// `Outbox.redact`: a user's events of some types are blanked, through `outbox_by_user`.
@Suite struct OutboxRedactionTests {
    func outbox() throws -> Outbox {
        let db = try Database(path: ":memory:")
        try db.migrate(OutboxSchema.migrations + [OutboxSchema.userIndex(domain: "things", version: 1)])
        return Outbox(database: db)
    }

    func append(_ outbox: Outbox, _ events: [(String, String)]) throws {
        try outbox.database.transaction {
            for (type, body) in events { try outbox.append(type: type, body: Data(body.utf8)) }
        }
    }

    func stored(_ outbox: Outbox) throws -> [String] {
        try outbox.read(after: 0, limit: 100).map { "\($0.seq) \($0.type) \(String(decoding: $0.body, as: UTF8.self))" }
    }

    @Test func onlyTheUsersEventsOfTheTypesAreBlankedAndTheirSeqsKept() throws {
        let box = try outbox()
        try append(box, [
            ("seen", #"{"user_id":7,"x":1}"#), ("seen", #"{"user_id":8}"#), ("kept", #"{"user_id":7}"#),
            ("gone", #"{"user_id":7}"#), ("seen", "not json"), ("seen", #"{"user_id":"7"}"#),
        ])
        #expect(try box.database.transaction { try box.redact(user: 7, types: ["seen", "gone"], as: "redacted") } == 2)
        #expect(try stored(box) == [
            "1 redacted {}", #"2 seen {"user_id":8}"#, #"3 kept {"user_id":7}"#,
            "4 redacted {}", "5 seen not json", #"6 seen {"user_id":"7"}"#,
        ])
        // No types: every event that still names the user, whatever its type.
        #expect(try box.database.transaction { try box.redact(user: 7, as: "redacted") } == 1)
        #expect(try stored(box).filter { $0.hasSuffix("{}") }.count == 3)
    }

    @Test(arguments: [0, 1, 3]) func theRedactionReadsTheIndex(types: Int) throws {
        let box = try outbox()
        let arguments: [(any SQLBindable)?] = ["redacted", Int64(7)] + (0..<types).map { "type \($0)" }
        let plan = try box.database.query("EXPLAIN QUERY PLAN " + Outbox.redaction(types: types), arguments).decode("detail", as: String.self)
        #expect(plan.contains { $0.contains("USING INDEX outbox_by_user") }, "\(plan)")
    }
}
