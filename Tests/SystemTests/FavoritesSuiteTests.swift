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
}
