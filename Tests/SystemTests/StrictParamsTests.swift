import Contracts
import Foundation
import Testing
import TestSupport

/// Every method the gateway offers, sent through it with a member no method has, is refused
/// as `invalid_argument` naming that member: by the owning service, which holds params to
/// their declared shape before anything reads them.
@Suite(.serialized) struct StrictParamsTests {
    /// A member no method has.
    static let stray = "zz_not_a_parameter"

    @Test func everyServiceMethodRefusesAnUnknownParameter() throws {
        let suite = try SuiteFixture(everything: true)
        let admin = try suite.adminConnection()
        // Methods that end the admin's session are called last, each on a connection of its own.
        let endsSession: Set<String> = [Methods.Auth.logout.name, Methods.Auth.delete.name]
        let methods = Methods.offered.filter { $0.owner != .gateway }
        #expect(methods.count > 100)
        var refused: [String] = [], wrong: [String] = []
        for method in methods {
            let line = endsSession.contains(method.name) ? try suite.adminConnection() : admin
            let reply = line.rpc(method.name, #"{"\#(StrictParamsTests.stray)":1}"#)
            if reply.failure?.data?.code == "invalid_argument", reply.failure?.data?.field == StrictParamsTests.stray,
               reply.failure?.message.hasPrefix("unknown parameter '\(StrictParamsTests.stray)'") == true {
                refused.append(method.name)
            } else {
                wrong.append("\(method.name): \(reply)")
            }
        }
        #expect(wrong.isEmpty, "not refused:\n\(wrong.joined(separator: "\n"))")
        #expect(refused.count == methods.count)
    }

    /// The issue's example: `search.popular` takes its point as `near`, and a top-level `lat` is
    /// refused with the member it belongs in, where it used to be ignored.
    @Test func aMisplacedParameterIsNamedWithWhereItBelongs() throws {
        let suite = try SuiteFixture(withSearch: true)
        let line = try GatewayConnection(port: suite.port)
        let reply = line.rpc(Methods.Search.popular.name, #"{"lat":-33.86,"lon":151.21}"#)
        #expect(reply.failure?.data?.code == "invalid_argument" && reply.failure?.data?.field == "lat", "\(reply)")
        #expect(reply.failure?.message == "unknown parameter 'lat'; did you mean 'near'?", "\(reply)")
        let nearby = line.rpc(Methods.Search.nearby.name, #"{"near":{"lat":-33.86,"lon":151.21},"radius_m":500,"limt":5}"#)
        #expect(nearby.failure?.message == "unknown parameter 'limt'; did you mean 'limit'?", "\(nearby)")
        // The same as a Redis client says it (README's example).
        let resp = try GatewayConnection(port: suite.port)
        resp.send(GatewayConnection.resp([Methods.Search.popular.name, "lat", "-33.86", "lon", "151.21"]))
        #expect(resp.respReply() == "-INVALID_ARGUMENT lat: unknown parameter 'lat'; did you mean 'near'?")
    }

    /// The gateway's own built-ins hold their params to their declared shapes too: a misspelt
    /// `topics` no longer reads as "every topic", and dotted keys nest in RESP.
    @Test func theBuiltInsRefuseWhatTheyDoNotDeclare() throws {
        let suite = try SuiteFixture(withSearch: true)
        let line = try GatewayConnection(port: suite.port)
        let typo = line.rpc(Methods.Gateway.unsubscribe.name, #"{"topic":["alpha"]}"#)
        #expect(typo.failure?.data?.field == "topic" && typo.failure?.message == "unknown parameter 'topic'; did you mean 'topics'?", "\(typo)")
        // A key given twice is refused as the line is read (I-JSON), before any method sees it.
        let twice = line.rpc(Methods.Gateway.subscribe.name, #"{"topics":["a"],"topics":["b"]}"#)
        #expect(twice.failure?.code == -32700 && twice.failure?.message.hasPrefix("parse error: duplicate key at byte") == true, "\(twice)")
        let resume = line.rpc(Methods.Auth.resume.name, #"{"token":"x","user":"y"}"#)
        #expect(resume.failure?.data?.field == "user", "\(resume)")
        #expect(line.rpc(Methods.Gateway.status.name, #"{"verbose":1}"#).failure?.data?.field == "verbose")
        #expect(line.rpc(Methods.Gateway.ping.name, #"{"message":"hi"}"#).failure?.data?.field == "message")
        #expect(line.rpc(Methods.Gateway.ping.name, "{}").failure == nil)
        // A session token may come with any call, as the OpenRPC document says.
        #expect(line.rpc(Methods.Gateway.ping.name, #"{"token":"tb1_x"}"#).failure == nil)
        #expect(line.rpc(Methods.Gateway.help.name, #"{"token":"tb1_x"}"#).failure == nil)
        // RESP's dotted keys: the point is nested, and a member given whole and by parts is refused.
        let resp = try GatewayConnection(port: suite.port)
        resp.send(GatewayConnection.resp([Methods.Search.nearby.name, "near.lat", "-33.86", "near.lon", "151.21", "radius_m", "500", "limt", "5"]))
        #expect(resp.respReply() == "-INVALID_ARGUMENT limt: unknown parameter 'limt'; did you mean 'limit'?")
        resp.send(GatewayConnection.resp([Methods.Search.nearby.name, "near", #"{"lat":1,"lon":2}"#, "near.lat", "3", "radius_m", "500"]))
        #expect(resp.respReply() == "-INVALID_ARGUMENT near: is given whole and by its members too (near.lat)")
    }
}
