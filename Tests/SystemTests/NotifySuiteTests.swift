import Bus
import Foundation
import Testing
import TestSupport

/// The notify service through a real gateway: `tourbus-notify` started next to the suite
/// (with the shipped form), the gateway told of it with `--peer` and `--peer-pub`.
@Suite(.serialized) struct NotifySuiteTests {

    /// Values of the shipped form that hold anywhere: a hazard has no line or venue to pick.
    static let values = #"{"kind":"hazard","detail":"flooding","severity":"minor"}"#

    @Test func anAnnotationAlertsAnotherUserOnTheirConnectionOnAnotherGatewayAndWaitsInTheirInbox() throws {
        let scratch = TemporaryFolder("notify-suite")
        let notify = try ChildProcess("tourbus-notify", folder: scratch.path, arguments: ["--form", SuiteFixture.notifyFormPath])
        defer { notify.tearDown() }
        let publish = (notify.endpoints["publish"] as? [String])?.first ?? ""
        let suite = try SuiteFixture(gatewayArguments: ["--peer", "notify=\(notify.rpc)", "--peer-pub", "notify=\(publish)"])
        // Wait (bounded) until the gateway knows notify's methods.
        var known = false
        for _ in 0..<100 where !known {
            known = (try? GatewayConnection(port: suite.port).call(#"{"jsonrpc":"2.0","id":0,"method":"help"}"#))?.contains("notify.location") == true
            if !known { usleep(50_000) }
        }
        #expect(known)

        // Ben's listening phone is on a second gateway.
        let second = try ChildProcess("tourbus-gateway", folder: scratch.path, arguments: ["--listen", "127.0.0.1:0"] + suite.gatewayArguments)
        defer { second.tearDown() }
        let secondPort = UInt16((second.endpoints["listen"] as? String ?? "").split(separator: ":").last ?? "") ?? 0
        let ann = try GatewayConnection(port: suite.port)
        PushDeliveryTests.signIn("ann", on: ann)
        let benListening = try GatewayConnection(port: secondPort, timeoutMilliseconds: 100)
        let ben = PushDeliveryTests.signIn("ben", on: benListening).id
        #expect(benListening.rpc("subscribe", #"{"topics":["notify.alert"]}"#).succeeded)
        // And a Redis client of his, as redis-cli SUBSCRIBE is, on the second gateway too.
        let benRedis = try GatewayConnection(port: secondPort, timeoutMilliseconds: 100)
        benRedis.send(GatewayConnection.resp(["AUTH", "ben", "Pass-ben-1"]))
        #expect(benRedis.respReply() == "+OK")
        benRedis.send(GatewayConnection.resp(["SUBSCRIBE", "notify.alert"]))
        #expect([benRedis.line(), benRedis.respReply(), benRedis.respReply(), benRedis.respReply()] == ["*3", "$subscribe", "$notify.alert", ":1"])
        let benReporting = try GatewayConnection(port: suite.port, timeoutMilliseconds: 300)
        let login = benReporting.rpc("auth.login", #"{"username":"ben","password":"Pass-ben-1"}"#)
        #expect(login.succeeded)
        // The reporting phone listens too, but has its alerts in the answer: no push for it.
        #expect(benReporting.rpc("subscribe", #"{"topics":["notify.alert"]}"#).succeeded)
        // Anyone reads the form; a client that is not signed in cannot report.
        #expect(try GatewayConnection(port: suite.port).rpc("annotations.form", #"{"near":{"lat":-33.8568,"lon":151.2153}}"#).succeeded)
        #expect(try GatewayConnection(port: suite.port).rpc("notify.location", #"{"lat":-33.8568,"lon":151.2153}"#).failure?.data?.code == "unauthenticated")

        // Ann posts; Ben reports there and hears the alert on his other connection. A push is
        // at most once: should the gateway's subscription not be up yet, try again 1 km further
        // on (out of reach of the last alert's suppression), at most 5 times.
        var pushLine: String?
        var annotationId: Int64 = 0
        for step in 0..<5 where pushLine == nil {
            let lat = -33.8568 - Double(step) * 0.009
            let submitted = ann.rpc("annotations.submit", #"{"lat":\#(lat),"lon":151.2153,"values":\#(NotifySuiteTests.values),"text":"Water over the path"}"#)
            annotationId = ((json(submitted.line)["result"] as? [String: Any])?["id"] as? NSNumber)?.int64Value ?? 0
            #expect(annotationId > 0, "\(submitted.line)")
            let reply = benReporting.rpc("notify.location", #"{"lat":\#(lat),"lon":151.2153}"#)
            let alerts = (json(reply.line)["result"] as? [String: Any])?["alerts"] as? [[String: Any]] ?? []
            #expect(alerts.compactMap { ($0["id"] as? NSNumber)?.int64Value } == [annotationId], "\(reply.line)")
            for _ in 0..<20 where pushLine == nil { pushLine = benListening.line() }
        }
        let push = (json(pushLine)["params"] as? [String: Any]) ?? [:]
        #expect(json(pushLine)["method"] as? String == "push" && push["topic"] as? String == "notify.alert", "\(pushLine ?? "no push")")
        let pushed = ((push["body"] as? [String: Any])?["alerts"] as? [[String: Any]]) ?? []
        #expect(pushed.compactMap { ($0["id"] as? NSNumber)?.int64Value } == [annotationId])
        #expect(pushed.first?["text"] as? String == "Water over the path" && pushed.first?["distance_m"] as? Double == 0)

        #expect(benReporting.line() == nil)
        var redisLines: [String] = []
        for _ in 0..<30 where redisLines.count < 7 { if let line = benRedis.line() { redisLines.append(line) } }
        #expect(Array(redisLines.prefix(5)) == ["*3", "$7", "message", "$12", "notify.alert"] && redisLines.last?.contains(#""topic":"notify.alert""#) == true,
                "\(redisLines)")

        // The same alert waits in Ben's inbox until he acknowledges it; Ann's is empty.
        let inbox = (json(benReporting.rpc("notify.inbox").line)["result"] as? [String: Any])?["entries"] as? [[String: Any]] ?? []
        #expect(inbox.last.flatMap { (($0["alert"] as? [String: Any])?["id"] as? NSNumber)?.int64Value } == annotationId)
        let annInbox = (json(ann.rpc("notify.inbox").line)["result"] as? [String: Any])?["entries"] as? [Any]
        #expect(annInbox?.isEmpty == true)
        #expect(ben > 0)
        _ = suite
    }

    @Test func thePollIntervalsAreSetByFlags() throws {
        let scratch = TemporaryFolder("notify-flags")
        let notify = try ChildProcess("tourbus-notify", folder: scratch.path, arguments: ["--day-poll-s", "77", "--night-poll-s", "88"])
        defer { notify.tearDown() }
        let client = try RPCClient(context: try ZMQContext(), endpoints: [notify.rpc], logger: Logger(component: "test", level: .error))
        defer { client.close() }
        let hour = Calendar(identifier: .gregorian).dateComponents(in: TimeZone(identifier: "UTC")!, from: Date()).hour ?? 0
        let reply = try client.request(type: "annotations.sync", body: Data("{}".utf8), timeoutMilliseconds: 5_000)
        let poll = (try JSONSerialization.jsonObject(with: reply.bodyJSON) as? [String: Any])?["next_poll_s"] as? Int
        // Not signed in: UTC's hour decides (a request at the turn of 05:00 or 23:00 may see either).
        #expect(poll == ((5..<23).contains(hour) ? 77 : 88) || [4, 5, 22, 23].contains(hour) && [77, 88].contains(poll ?? 0), "\(String(describing: poll)) at \(hour) h UTC")
        let bad = try BoundedRun(try ChildProcess.executable("tourbus-notify").path, ["--night-poll-s", "0"], timeout: 30)
        #expect(bad.exit == .status(2) && bad.errors.contains("--night-poll-s takes 1 to 86400 seconds"), "\(bad.digest)")
    }
}
