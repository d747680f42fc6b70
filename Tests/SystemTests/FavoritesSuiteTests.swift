import Bus
import Foundation
import Storage
import Testing
import TestSupport

/// Issue 13 through the whole suite: the real executables of every service behind a gateway.
@Suite(.serialized) struct FavoritesSuiteTests {
    /// Values of the shipped annotation form that hold anywhere.
    static let formValues = #"{"kind":"hazard","detail":"flooding","severity":"minor"}"#

    /// Registers `username` (password `User-Pass-1`) and signs a new connection in as them.
    static func signedIn(_ suite: SuiteFixture, _ username: String) throws -> (connection: GatewayConnection, id: Int) {
        let c = try GatewayConnection(port: suite.port)
        let registered = c.rpc("auth.register", #"{"username":"\#(username)","email":"\#(username)@example.org","name":"\#(username) marker","password":"User-Pass-1"}"#)
        let login = c.rpc("auth.login", #"{"username":"\#(username)","password":"User-Pass-1"}"#)
        let id = (login.field("user", [String: Int?].self)?["id"] ?? nil) ?? 0
        guard registered.succeeded, login.succeeded, id > 0 else { throw ServiceError(.unauthenticated, "\(username): \(registered) \(login)") }
        return (c, id)
    }

    /// Creates a place as the admin and returns its id.
    static func place(_ admin: GatewayConnection, _ name: String, lat: Double, lon: Double, popularity: Double = 1) -> Int {
        admin.rpc("catalog.create", #"{"name":"\#(name)","category":"attraction","lat":\#(lat),"lon":\#(lon),"popularity":\#(popularity)}"#).field("id", Int.self) ?? 0
    }

    /// Polls (bounded: 10 s) until `condition` holds.
    static func eventually(_ condition: () throws -> Bool) rethrows -> Bool {
        for _ in 0..<200 {
            if try condition() { return true }
            usleep(50_000)
        }
        return false
    }

    /// Every row of every table of every service's database that holds the user: their id in a
    /// column that names a user, or their username, e-mail or the marker text they wrote
    /// anywhere. The outbox rows of `social.user.deleted` itself are the one exception.
    static func rowsOfUser(id: Int, markers: [String], in folder: String) throws -> [String] {
        var found: [String] = []
        let files = try FileManager.default.contentsOfDirectory(atPath: folder).filter { $0.hasSuffix(".sqlite") }.sorted()
        for file in files {
            let db = try Database(path: folder + "/" + file, readOnly: true)
            let tables = try db.query("SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'").decode("name", as: String.self)
            for table in tables {
                try db.forEachRow("SELECT * FROM \"\(table)\"") { row in
                    if table == "outbox", case .text(let type) = row.value("type"), type == "social.user.deleted" { return }
                    for (column, value) in zip(row.columnNames, row.values) {
                        let names = column == "user_id" || column.hasSuffix("_user_id") || column.hasPrefix("follow") || (table == "users" && column == "id")
                        let text: String? = switch value {
                        case .text(let t): t
                        case .blob(let b): String(decoding: b, as: UTF8.self)
                        default: nil
                        }
                        if names, value.integerValue == Int64(id) { found.append("\(file) \(table).\(column) = \(id)") }
                        if let text, let marker = markers.first(where: { text.contains($0) }) { found.append("\(file) \(table).\(column) holds '\(marker)'") }
                        if let text, text.contains(#""user_id":\#(id)"#) || text.contains(#""user_id":"\#(id)""#) { found.append("\(file) \(table).\(column) names user \(id)") }
                    }
                }
            }
        }
        return found
    }
}
