import Foundation
import Testing
import TestSupport

/// Groups and their live map through the suite with two gateways: a position sent on one
/// gateway reaches members on the other, throttled to one push a second with the latest, and
/// blocking hides the pair from each other both ways.
@Suite(.serialized) struct GroupSuiteTests {
    /// The `group.position` pushes a connection hears within `seconds`: each one's latitude
    /// and when it came.
    static func positions(on connection: GatewayConnection, for seconds: TimeInterval) -> [(lat: Double, at: Date)] {
        var heard: [(lat: Double, at: Date)] = []
        let end = Date().addingTimeInterval(seconds)
        while Date() < end {
            guard let line = connection.line() else { continue }
            let params = json(line)["params"] as? [String: Any]
            guard params?["topic"] as? String == "group.position", let lat = (params?["body"] as? [String: Any])?["lat"] as? Double else { continue }
            heard.append((lat, Date()))
        }
        return heard
    }

    @Test func positionsAreThrottledAcrossTwoGatewaysAndBlocksHidePositionsBothWays() throws {
        let suite = try SuiteFixture()
        let other = try ChildProcess("tourbus-gateway", folder: suite.folder, arguments: ["--listen", "127.0.0.1:0"] + suite.gatewayArguments)
        let otherPort = UInt16((other.endpoints["listen"] as? String ?? "").split(separator: ":").last ?? "") ?? 0

        let ann = try GatewayConnection(port: suite.port, timeoutMilliseconds: 1_000)
        let annId = PushDeliveryTests.signIn("ann", on: ann).id
        let ben = try GatewayConnection(port: otherPort, timeoutMilliseconds: 1_000)
        let benId = PushDeliveryTests.signIn("ben", on: ben).id
        let cat = try GatewayConnection(port: otherPort, timeoutMilliseconds: 1_000)
        let catId = PushDeliveryTests.signIn("cat", on: cat).id
        #expect(annId > 0 && benId > 0 && catId > 0)

        let group = ann.rpc("groups.create", #"{"name":"Harbour walk"}"#).field("id", Int64.self) ?? 0
        for (name, connection) in [("ben", ben), ("cat", cat)] {
            #expect(ann.rpc("groups.invite", #"{"group_id":\#(group),"username":"\#(name)"}"#).succeeded)
            #expect(connection.rpc("groups.accept", #"{"group_id":\#(group)}"#).succeeded, "\(name)")
        }
        #expect(ann.rpc("groups.sharing", #"{"group_id":\#(group),"on":true}"#).succeeded)
        // Cat blocks Ann, through either gateway: Ann no longer exists for Cat; Ann is told nothing.
        #expect(cat.rpc("social.block", #"{"user_id":\#(annId)}"#).succeeded)
        #expect(cat.rpc("profile.get", #"{"user_id":\#(annId)}"#).errorCode == "not_found")
        #expect(ann.rpc("profile.get", #"{"user_id":\#(catId)}"#).succeeded)
        // Ann owns the group, so she still sees every member, Cat too.
        let members = ann.rpc("groups.get", #"{"group_id":\#(group)}"#).field("members", [[String: AnyDecodable]].self)?.count
        #expect(members == 3)
        for connection in [ben, cat] { #expect(connection.rpc("subscribe", #"{"topics":["group.position"]}"#).succeeded) }

        // A burst of eight positions on gateway 1: Ben, on gateway 2, hears the first at once
        // and the latest when its second has passed; Cat hears none.
        let started = Date()
        for i in 1...8 { #expect(ann.rpc("groups.position", #"{"lat":\#(i),"lon":151.2}"#).succeeded) }
        let burst = Date().timeIntervalSince(started)
        let heard = GroupSuiteTests.positions(on: ben, for: 2.5)
        #expect(heard.first?.lat == 1 && heard.last?.lat == 8, "\(heard.map(\.lat))")
        if burst < 0.8 {
            #expect(heard.count == 2, "\(heard.map(\.lat)) after a burst of \(burst) s")
        }
        for (earlier, later) in zip(heard, heard.dropFirst()) {
            #expect(later.at.timeIntervalSince(earlier.at) >= 0.8, "pushes \(earlier.lat) and \(later.lat) closer than a second")
        }
        #expect(GroupSuiteTests.positions(on: cat, for: 0.5).isEmpty)
        // Ann's dot is on Ben's map, not on Cat's.
        #expect(ben.rpc("groups.map", #"{"group_id":\#(group)}"#).field("positions", [[String: AnyDecodable]].self)?.count == 1)
        #expect(cat.rpc("groups.map", #"{"group_id":\#(group)}"#).field("positions", [[String: AnyDecodable]].self)?.count == 0)
        _ = other
    }
}

/// Any JSON value, decoded only to be counted.
struct AnyDecodable: Decodable {
    init(from decoder: Decoder) throws {}
}
