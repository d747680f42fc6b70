import Bus
import Contracts
import Foundation
import SocialService
import Storage
import TestSupport

extension SocialFixture {
    /// Sends a raw JSON body as `user` from the gateway connection `origin`; the reply body.
    @discardableResult
    func call(_ type: String, _ json: String, as user: Int64, origin: String) throws(ServiceError) -> [String: Any] {
        let reply = try client.request(type: type, body: Data(json.utf8), auth: Auth(userId: String(user), role: "user", origin: origin),
                                       timeoutMilliseconds: 5_000)
        return (try? JSONSerialization.jsonObject(with: reply.bodyJSON)) as? [String: Any] ?? [:]
    }

    /// `code field` of the error `call` throws, or `ok`.
    func refusal(_ type: String, _ json: String = "{}", as user: Int64? = nil) -> String {
        guard let error = error(type, json, as: user) else { return "ok" }
        return [error.code.rawValue, error.field].compactMap { $0 }.joined(separator: " ")
    }

    /// Adds `count` accounts straight into the database (no password hashing): `prefix0`,
    /// `prefix1`, …; returns their ids in order. For limits that need many users.
    func addUsers(_ count: Int, prefix: String) throws -> [Int64] {
        let db = try Database(path: databasePath)
        return try db.transaction {
            try (0..<count).map { i in
                try db.run("INSERT INTO users (username, email, name, password_hash, role, created_at) VALUES (?, ?, ?, 'x', 'user', '2026-06-01T00:00:00.000Z')",
                           "\(prefix)\(i)", "\(prefix)\(i)@example.com", "\(prefix.capitalized) \(i)")
                return db.lastInsertRowID
            }
        }
    }

    /// How many rows of `table` match `condition` (with `args`), read from the service's file.
    func count(_ table: String, _ condition: String = "1", _ args: (any SQLBindable)?...) throws -> Int64 {
        try Database(path: databasePath).scalarInt("SELECT count(*) FROM \(table) WHERE \(condition)", args) ?? -1
    }

    /// The service's pushes, as a gateway hears them.
    func pushes() throws -> PushListener { try PushListener(context, endpoints: runtime.endpoints.publish) }

    /// Creates a group owned by `owner`; its id.
    func group(_ name: String, owner: Int64) throws -> Int64 {
        int(try call("groups.create", #"{"name":\#(try json(name))}"#, as: owner)["id"])
    }

    /// Invites `username` to `group` as `member`, and accepts as `invitee`.
    func join(_ group: Int64, _ username: String, id invitee: Int64, invitedBy member: Int64) throws {
        try call("groups.invite", #"{"group_id":\#(group),"username":"\#(username)"}"#, as: member)
        try call("groups.accept", #"{"group_id":\#(group)}"#, as: invitee)
    }

    /// The ids of the users under `key` (each `{"user":{"id"}}` or a summary) of a reply.
    func ids(_ reply: [String: Any], _ key: String) -> [Int64] {
        (reply[key] as? [[String: Any]] ?? []).map { item in int((item["user"] as? [String: Any] ?? item)["id"]) }
    }
}

/// A JSON number as an Int64 (-1 when it is not one).
func int(_ value: Any?) -> Int64 { (value as? NSNumber)?.int64Value ?? -1 }

/// A push's body as a dictionary.
func pushBody(_ push: Push?) -> [String: Any] {
    push.flatMap { (try? JSONSerialization.jsonObject(with: $0.body)) as? [String: Any] } ?? [:]
}
