import Bus
import Foundation
import Testing
import TestSupport

/// Chat through the real suite with two gateways: a message sent on one arrives on the
/// other, at every connection of the recipient and at the sender's other connections but
/// not the one that sent it; a block keeps it from the blocker.
@Suite(.serialized) struct ChatSuiteTests {
    /// The `chat.message` pushes among the lines a connection has waiting: `seq text` each.
    static func messages(on connection: GatewayConnection) -> [String] {
        var seen: [String] = []
        while let line = connection.line() {
            guard let params = json(line)["params"] as? [String: Any], params["topic"] as? String == "chat.message",
                  let body = params["body"] as? [String: Any] else { continue }
            seen.append("\(body["conversation"] as? String ?? "?") \(body["seq"] as? Int ?? -1) \(body["text"] as? String ?? "?")")
        }
        return seen
    }

    @Test func aMessageSentOnOneGatewayArrivesOnTheOther() throws {
        let suite = try SuiteFixture()
        let other = try ChildProcess("tourbus-gateway", folder: suite.folder, arguments: ["--listen", "127.0.0.1:0"] + suite.gatewayArguments)
        let otherPort = UInt16((other.endpoints["listen"] as? String ?? "").split(separator: ":").last ?? "") ?? 0

        // Ann sends from her laptop on gateway 1 and has her phone on gateway 2; Ben is on gateway 2.
        let laptop = try GatewayConnection(port: suite.port, timeoutMilliseconds: 100)
        let ann = PushDeliveryTests.signIn("ann", on: laptop)
        let phone = try GatewayConnection(port: otherPort, timeoutMilliseconds: 100)
        #expect(phone.rpc("auth.resume", #"{"token":"\#(ann.token)"}"#).succeeded)
        let benLine = try GatewayConnection(port: otherPort, timeoutMilliseconds: 100)
        let ben = PushDeliveryTests.signIn("ben", on: benLine)
        for connection in [laptop, phone, benLine] {
            #expect(connection.rpc("subscribe", #"{"topics":["chat.message"]}"#).succeeded)
        }

        // Gateway 2 may still be joining social's pushes: Ann writes until Ben hears one (at most 15 in 10 s, under the rate).
        var heard: [String] = []
        var sent = 0
        while heard.isEmpty && sent < 15 {
            sent += 1
            let reply = laptop.rpc("chat.send", #"{"to":"user:\#(ben.id)","text":"hello \#(sent)","client_msg_id":"ann-\#(sent)"}"#)
            #expect(reply.field("seq", Int.self) == sent, "\(reply)")
            heard = ChatSuiteTests.messages(on: benLine)
        }
        #expect(!heard.isEmpty)
        let last = sent + 1
        #expect(laptop.rpc("chat.send", #"{"to":"user:\#(ben.id)","text":"Meet at 10","client_msg_id":"ann-last"}"#).field("seq", Int.self) == last)
        usleep(300_000)
        #expect(ChatSuiteTests.messages(on: benLine).last == "user:\(ann.id) \(last) Meet at 10")
        #expect(ChatSuiteTests.messages(on: phone).last == "user:\(ben.id) \(last) Meet at 10")
        // The sending connection hears none of its own messages.
        #expect(ChatSuiteTests.messages(on: laptop) == [])
        // Ben reads the conversation on gateway 2 as Ann left it.
        let history = benLine.rpc("chat.history", #"{"conversation":"user:\#(ann.id)","limit":1}"#)
        #expect(history.line.contains(#""text":"Meet at 10""#), "\(history)")

        // Ben blocks Ann: her next message is answered on gateway 1 and never reaches him on gateway 2.
        #expect(benLine.rpc("social.block", #"{"user_id":\#(ann.id)}"#).succeeded)
        #expect(laptop.rpc("chat.send", #"{"to":"user:\#(ben.id)","text":"Hello?","client_msg_id":"ann-blocked"}"#).field("seq", Int.self) == last + 1)
        #expect(benLine.rpc("chat.send", #"{"to":"user:\#(ann.id)","text":"Bye","client_msg_id":"ben-1"}"#).errorCode == "conflict")
        usleep(300_000)
        #expect(ChatSuiteTests.messages(on: phone) == ["user:\(ben.id) \(last + 1) Hello?"])
        #expect(ChatSuiteTests.messages(on: benLine) == [])
        _ = other
    }
}
