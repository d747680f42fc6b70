import Foundation
import Testing
import TestSupport

/// Travelling together through the real suite with two gateways: a group's messages reach
/// members on the other gateway in order, a block hides each side from the other in every
/// part of it (profiles, photos, chat, invitations, group views, the map, people at a place),
/// and no method of it answers a client that is not signed in. (Direct chat across gateways:
/// `ChatSuiteTests`; throttled positions: `GroupSuiteTests`.)
@Suite(.serialized) struct TravelTogetherSuiteTests {

    /// The result object of a reply (empty when it failed).
    static func result(_ reply: RPCReply) -> [String: Any] { json(reply.line)["result"] as? [String: Any] ?? [:] }

    /// A second gateway like the suite's, and its port.
    static func secondGateway(_ suite: SuiteFixture) throws -> (process: ChildProcess, port: UInt16) {
        let second = try ChildProcess("tourbus-gateway", folder: suite.folder, arguments: ["--listen", "127.0.0.1:0"] + suite.gatewayArguments)
        let port = UInt16((second.endpoints["listen"] as? String ?? "").split(separator: ":").last ?? "") ?? 0
        return (second, port)
    }

    /// The pushes of `topic` that arrive on `connection` within `seconds` (bounded: 200 lines).
    static func pushes(_ topic: String, on connection: GatewayConnection, for seconds: Double) -> [[String: Any]] {
        var found: [[String: Any]] = []
        let end = Date().addingTimeInterval(seconds)
        for _ in 0..<200 where Date() < end {
            guard let line = connection.line() else { continue }
            let params = json(line)["params"] as? [String: Any] ?? [:]
            if params["topic"] as? String == topic, let body = params["body"] as? [String: Any] { found.append(body) }
        }
        return found
    }

    /// `owner` makes a group and each of `members` joins it on their connection; its id.
    static func group(_ name: String, owner: GatewayConnection, members: [(name: String, connection: GatewayConnection)]) -> Int64 {
        let created = result(owner.rpc("groups.create", #"{"name":"\#(name)"}"#))
        let id = (created["id"] as? NSNumber)?.int64Value ?? 0
        for member in members {
            #expect(owner.rpc("groups.invite", #"{"group_id":\#(id),"username":"\#(member.name)"}"#).succeeded)
            #expect(member.connection.rpc("groups.accept", #"{"group_id":\#(id)}"#).succeeded)
        }
        return id
    }

    @Test func aMessageSentOnOneGatewayArrivesOnTheOtherInOrderAndIsInTheHistory() throws {
        let suite = try SuiteFixture()
        let (second, secondPort) = try TravelTogetherSuiteTests.secondGateway(suite)
        defer { second.tearDown() }
        let ann = try GatewayConnection(port: suite.port)
        _ = PushDeliveryTests.signIn("ann", on: ann)
        let ben = try GatewayConnection(port: secondPort)
        let benId = PushDeliveryTests.signIn("ben", on: ben).id
        let benListening = try GatewayConnection(port: secondPort, timeoutMilliseconds: 100)
        #expect(benListening.rpc("auth.login", #"{"username":"ben","password":"Pass-ben-1"}"#).succeeded)
        #expect(benListening.rpc("subscribe", #"{"topics":["chat.message"]}"#).succeeded)
        let group = TravelTogetherSuiteTests.group("Harbour walk", owner: ann, members: [("ben", ben)])
        #expect(group > 0)

        // Pushes are at most once: until the second gateway's subscription to social is up, a
        // message may pass it by. Send (bounded) until one arrives, then three more.
        var heard: [[String: Any]] = []
        for attempt in 0..<20 where heard.isEmpty {
            #expect(ann.rpc("chat.send", #"{"to":"group:\#(group)","text":"Ferry at 10?","client_msg_id":"warm-\#(attempt)"}"#).succeeded)
            heard = TravelTogetherSuiteTests.pushes("chat.message", on: benListening, for: 0.3)
        }
        #expect(!heard.isEmpty)
        var sent: [Int64] = []
        for n in 1...3 {
            let reply = TravelTogetherSuiteTests.result(ann.rpc("chat.send", #"{"to":"group:\#(group)","text":"message \#(n)","client_msg_id":"m-\#(n)"}"#))
            sent.append((reply["seq"] as? NSNumber)?.int64Value ?? 0)
        }
        let arrived = TravelTogetherSuiteTests.pushes("chat.message", on: benListening, for: 1.5)
        #expect(arrived.compactMap { ($0["seq"] as? NSNumber)?.int64Value }.suffix(3) == sent.suffix(3), "\(arrived)")
        #expect(arrived.last?["text"] as? String == "message 3" && arrived.last?["conversation"] as? String == "group:\(group)")
        #expect(zip(sent, sent.dropFirst()).allSatisfy { $1 == $0 + 1 }, "\(sent)")
        // A direct message, too, and both are in Ben's history and conversations.
        #expect(ann.rpc("chat.send", #"{"to":"user:\#(benId)","text":"See you there","client_msg_id":"direct-1"}"#).succeeded)
        let direct = TravelTogetherSuiteTests.pushes("chat.message", on: benListening, for: 1.5)
        #expect(direct.last?["text"] as? String == "See you there", "\(direct)")
        let history = TravelTogetherSuiteTests.result(ben.rpc("chat.history", #"{"conversation":"group:\#(group)","limit":3}"#))
        #expect((history["messages"] as? [[String: Any]])?.compactMap { $0["text"] as? String } == ["message 3", "message 2", "message 1"], "\(history)")
        let conversations = TravelTogetherSuiteTests.result(ben.rpc("chat.conversations"))["conversations"] as? [[String: Any]] ?? []
        #expect(conversations.count == 2, "\(conversations)")
    }

    @Test func aBlockHidesTheBlockedFromTheBlockerAndWhereEachIsAndIsNeverTold() throws {
        let suite = try SuiteFixture()
        let (second, secondPort) = try TravelTogetherSuiteTests.secondGateway(suite)
        defer { second.tearDown() }
        let ann = try GatewayConnection(port: suite.port)
        let annId = PushDeliveryTests.signIn("ann", on: ann).id
        let ben = try GatewayConnection(port: suite.port)
        _ = PushDeliveryTests.signIn("ben", on: ben)
        let cid = try GatewayConnection(port: secondPort)
        let cidId = PushDeliveryTests.signIn("cid", on: cid).id
        let annListening = try GatewayConnection(port: suite.port, timeoutMilliseconds: 100)
        #expect(annListening.rpc("auth.login", #"{"username":"ann","password":"Pass-ann-1"}"#).succeeded)
        #expect(annListening.rpc("subscribe", #"{"topics":["chat.message","group.position","group.invited"]}"#).succeeded)
        let cidListening = try GatewayConnection(port: secondPort, timeoutMilliseconds: 100)
        #expect(cidListening.rpc("auth.login", #"{"username":"cid","password":"Pass-cid-1"}"#).succeeded)
        #expect(cidListening.rpc("subscribe", #"{"topics":["chat.message","group.position"]}"#).succeeded)
        // All three travel in Ben's group, sharing positions with it.
        let group = TravelTogetherSuiteTests.group("Blue Mountains", owner: ben, members: [("ann", ann), ("cid", cid)])
        for member in [ann, cid] { #expect(member.rpc("groups.sharing", #"{"group_id":\#(group),"on":true}"#).succeeded) }
        for (member, lat) in [(ann, -33.7120), (cid, -33.7125)] {
            #expect(member.rpc("groups.position", #"{"lat":\#(lat),"lon":150.3110}"#).succeeded)
        }
        #expect(cid.rpc("profile.update", #"{"discoverable":true}"#).succeeded)
        #expect(ann.rpc("profile.update", #"{"discoverable":true}"#).succeeded)

        #expect(TravelTogetherSuiteTests.result(ann.rpc("social.block", #"{"user_id":\#(cidId)}"#))["blocked"] as? Bool == true)

        // Profiles: Cid no longer exists for Ann; Cid sees Ann's as anyone does.
        #expect(ann.rpc("profile.get", #"{"user_id":\#(cidId)}"#).failure?.data?.code == "not_found")
        #expect(cid.rpc("profile.get", #"{"user_id":\#(annId)}"#).succeeded)
        // Cid's message is answered as any other, and Ann never hears of it.
        let toAnn = cid.rpc("chat.send", #"{"to":"user:\#(annId)","text":"hello?","client_msg_id":"c-1"}"#)
        #expect(toAnn.succeeded && TravelTogetherSuiteTests.result(toAnn)["seq"] != nil, "\(toAnn)")
        // Cid's invitation to his own group, too.
        let cidGroup = (TravelTogetherSuiteTests.result(cid.rpc("groups.create", #"{"name":"Cid's"}"#))["id"] as? NSNumber)?.int64Value ?? 0
        #expect(cid.rpc("groups.invite", #"{"group_id":\#(cidGroup),"username":"ann"}"#).succeeded)
        // In the shared group, Ann no longer sees Cid; Cid sees Ann as a member not sharing.
        // Neither gets the other's messages or positions.
        #expect(cid.rpc("chat.send", #"{"to":"group:\#(group)","text":"Cid here","client_msg_id":"c-2"}"#).succeeded)
        #expect(ann.rpc("chat.send", #"{"to":"group:\#(group)","text":"Ann here","client_msg_id":"a-1"}"#).succeeded)
        let annHeard = TravelTogetherSuiteTests.pushes("chat.message", on: annListening, for: 1.0)
        #expect(!annHeard.contains { $0["text"] as? String == "hello?" || $0["text"] as? String == "Cid here" }, "\(annHeard)")
        let cidHeard = TravelTogetherSuiteTests.pushes("chat.message", on: cidListening, for: 1.0)
        #expect(!cidHeard.contains { $0["text"] as? String == "Ann here" }, "\(cidHeard)")
        let annHistory = ann.rpc("chat.history", #"{"conversation":"group:\#(group)"}"#).line
        #expect(!annHistory.contains("Cid here") && annHistory.contains("Ann here"), "\(annHistory)")
        #expect(!cid.rpc("chat.history", #"{"conversation":"group:\#(group)"}"#).line.contains("Ann here"))
        #expect(!ann.rpc("chat.conversations").line.contains("hello?"))
        #expect(!ann.rpc("groups.list").line.contains("Cid's"))
        let annSees = ann.rpc("groups.get", #"{"group_id":\#(group)}"#).line
        #expect(annSees.contains(#""name":"ben""#) && !annSees.contains(#""username":"cid""#), "\(annSees)")
        let cidSees = cid.rpc("groups.get", #"{"group_id":\#(group)}"#).line
        #expect(cidSees.contains(#""role":"member","sharing":false,"user":{"id":\#(annId),"#), "\(cidSees)")
        #expect(!ann.rpc("groups.map", #"{"group_id":\#(group)}"#).line.contains(#""user_id":\#(cidId)"#))
        #expect(!cid.rpc("groups.map", #"{"group_id":\#(group)}"#).line.contains(#""user_id":\#(annId)"#))
        #expect(!ann.rpc("social.people_at", #"{"near":{"lat":-33.7120,"lon":150.3110},"radius_m":500}"#).line.contains(#""username":"cid""#))
        #expect(!cid.rpc("social.people_at", #"{"near":{"lat":-33.7120,"lon":150.3110},"radius_m":500}"#).line.contains(#""username":"ann""#))
        // Ben still sees both of them near.
        let benSees = ben.rpc("social.people_at", #"{"near":{"lat":-33.7120,"lon":150.3110},"radius_m":500}"#).line
        #expect(benSees.contains(#""username":"ann""#) && benSees.contains(#""username":"cid""#), "\(benSees)")
        // The blocker must unblock before messaging; then they talk again.
        #expect(ann.rpc("chat.send", #"{"to":"user:\#(cidId)","text":"hi","client_msg_id":"a-2"}"#).failure?.data?.code == "conflict")
        #expect(ann.rpc("social.unblock", #"{"user_id":\#(cidId)}"#).succeeded)
        #expect(ann.rpc("chat.send", #"{"to":"user:\#(cidId)","text":"hi","client_msg_id":"a-3"}"#).succeeded)
        #expect(ann.rpc("profile.get", #"{"user_id":\#(cidId)}"#).succeeded)
    }
}

extension TravelTogetherSuiteTests {
    /// Every method of groups, live map, chat and people, as a client that is not signed in.
    @Test func everyTravelTogetherMethodRefusesAnAnonymousClient() throws {
        let suite = try SuiteFixture()
        let anonymous = try GatewayConnection(port: suite.port)
        let calls: [(String, String)] = [
            ("groups.create", #"{"name":"x"}"#), ("groups.invite", #"{"group_id":1,"username":"admin"}"#),
            ("groups.accept", #"{"group_id":1}"#), ("groups.decline", #"{"group_id":1}"#), ("groups.leave", #"{"group_id":1}"#),
            ("groups.remove", #"{"group_id":1,"user_id":1}"#), ("groups.list", "{}"), ("groups.get", #"{"group_id":1}"#),
            ("groups.position", #"{"lat":1,"lon":1}"#), ("groups.sharing", #"{"group_id":1,"on":true}"#), ("groups.map", #"{"group_id":1}"#),
            ("groups.follow", #"{"group_id":1,"user_id":1}"#), ("social.block", #"{"user_id":1}"#), ("social.unblock", #"{"user_id":1}"#),
            ("social.blocks", "{}"), ("chat.send", #"{"to":"user:1","text":"x","client_msg_id":"1"}"#),
            ("chat.history", #"{"conversation":"user:1"}"#), ("chat.conversations", "{}"), ("chat.read", #"{"conversation":"user:1","up_to":1}"#),
            ("social.people_at", #"{"near":{"lat":1,"lon":1},"radius_m":100}"#), ("profile.photo.upload.begin", "{}"),
            ("profile.photo.upload.append", #"{"upload_id":"x","chunk":"AA=="}"#), ("profile.photo.upload.commit", #"{"upload_id":"x"}"#),
            ("profile.photo.delete", "{}"),
        ]
        for (method, params) in calls {
            let reply = anonymous.rpc(method, params)
            #expect(reply.failure?.data?.code == "unauthenticated", "\(method): \(reply.line)")
        }
    }
}
