import Foundation
import Testing
import TestSupport
#if canImport(Glibc)
import Glibc
#endif

/// redis-py, the Python Redis client, in the virtual environment `./deploy/local/test` makes.
enum RedisPy {
    static let packageRoot = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
    /// The virtual environment's interpreter, which has redis-py.
    static let python = packageRoot.appendingPathComponent(".build/pyenv/bin/python").path
    /// The script that drives the gateway with redis-py and prints a JSON summary.
    static let script = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("Resources/redis_py_client.py").path
    static var isInstalled: Bool { FileManager.default.isExecutableFile(atPath: python) }
    /// CI sets CI=true: there a missing environment is a failure, not a reason to skip.
    static var inCI: Bool { ProcessInfo.processInfo.environment["CI"] == "true" }
}

/// Real Redis clients through the gateway: redis-py as an application uses it, and
/// `redis-cli --pipe` as a bulk loader does.
@Suite(.serialized) struct RedisClientTests {
    /// Places the admin creates for the clients to read; their ids and names.
    func makePlaces(_ suite: SuiteFixture, _ names: [String]) throws -> [(id: Int, name: String)] {
        let admin = try suite.adminConnection()
        return try names.enumerated().map { i, name in
            let reply = admin.reply(#"{"jsonrpc":"2.0","id":\#(i),"method":"catalog.create","params":{"name":"\#(name)","category":"attraction","lat":-33.85,"lon":\#(151.2 + Double(i) / 1000)}}"#)
            let id = try #require(reply.field("id", Int.self), "catalog.create: \(reply)")
            return (id, name)
        }
    }

    @Test(.enabled(if: RedisPy.isInstalled || RedisPy.inCI, "needs redis-py in .build/pyenv, which ./deploy/local/test makes"))
    func redisPyConnectsPipelinesAndSignsIn() throws {
        try #require(RedisPy.isInstalled, "CI=true but \(RedisPy.python) is missing: ./deploy/local/test should have made it")
        let suite = try SuiteFixture()
        let places = try makePlaces(suite, ["Opera House", "Harbour Bridge", "Luna Park"])
        let user = (username: "pyuser", password: "Py-Pass-1")
        let anyone = try GatewayConnection(port: suite.port)
        let registered = anyone.reply(#"{"jsonrpc":"2.0","id":1,"method":"auth.register","params":{"username":"\#(user.username)","email":"py@example.org","name":"Py","password":"\#(user.password)"}}"#)
        #expect(registered.succeeded, "\(registered)")

        let plan: [String: Any] = ["host": "127.0.0.1", "port": Int(suite.port), "pipeline": 300,
                                   "places": places.map { ["id": $0.id, "name": $0.name] },
                                   "user": ["username": user.username, "password": user.password]]
        let planText = String(decoding: try JSONSerialization.data(withJSONObject: plan), as: UTF8.self)
        let run = try BoundedRun(RedisPy.python, [RedisPy.script, planText], environment: ["PYTHONDONTWRITEBYTECODE": "1"], timeout: 120)
        try #require(run.succeeded, "the script \(run.ending): \(run.digest)")
        let summaryLine = run.output.split(separator: "\n").last { $0.hasPrefix("{") }.map(String.init)
        let summary = json(summaryLine)
        let runs = try #require(summary["runs"] as? [String: [String: Any]], "no summary: \(run.digest)")

        // "default" is redis.Redis(host, port) as it comes (redis-py 8 speaks RESP3: HELLO 3);
        // "resp2" the same with protocol=2.
        for name in ["default", "resp2"] {
            let steps = runs[name] ?? [:]
            let about = "redis-py \(summary["library"] ?? "?") (\(name))"
            #expect(steps["ping"] as? Bool == true, "\(about) ping: \(steps["ping"] ?? "nothing")")
            let categories = (steps["categories"] as? [String: Any])?["categories"] as? [[String: Any]]
            #expect(categories?.compactMap { $0["count"] as? Int }.reduce(0, +) == places.count, "\(about) catalog.categories: \(steps["categories"] ?? "nothing")")
            let got = steps["get"] as? [String: Any]
            #expect(got?["id"] as? Int == places[0].id && got?["name"] as? String == places[0].name, "\(about) catalog.get: \(steps["get"] ?? "nothing")")
            let pipeline = steps["pipeline"] as? [String: Any]
            #expect(pipeline?["replies"] as? Int == 300 && pipeline?["correct"] as? Int == 300 && (pipeline?["errors"] as? [String: Any])?.isEmpty == true,
                    "\(about) pipeline of 300 catalog.get: \(pipeline ?? [:])")
            #expect((steps["login"] as? [String: Any])?["token_received"] as? Bool == true, "\(about) auth.login: \(steps["login"] ?? "nothing")")
            #expect((steps["token_profile"] as? [String: Any])?["username"] as? String == user.username,
                    "\(about) password=<token>, then profile.get: \(steps["token_profile"] ?? "nothing")")
            #expect((steps["user_password_profile"] as? [String: Any])?["username"] as? String == user.username,
                    "\(about) username=, password=, then profile.get: \(steps["user_password_profile"] ?? "nothing")")
        }
    }

    @Test func redisCLIPipeLoadsAHundredThousandCommands() throws {
        let suite = try SuiteFixture()
        _ = try makePlaces(suite, ["Opera House"])
        // 100,000 `catalog.get id 1` as RESP arrays, as a bulk loader writes them.
        let command = GatewayConnection.resp(["catalog.get", "id", "1"])
        var bytes: [UInt8] = []
        bytes.reserveCapacity(command.count * 100_000)
        for _ in 0..<100_000 { bytes += command }
        let input = suite.folder + "/pipe.resp"
        #expect(FileManager.default.createFile(atPath: input, contents: Data(bytes)))
        // redis-cli ends its input with an ECHO of a random marker and stops at its answer (or
        // after --pipe-timeout, 30 s, with nothing coming); 120 s bounds it whatever happens.
        let run = try BoundedRun("/usr/bin/env", ["redis-cli", "-h", "127.0.0.1", "-p", String(suite.port), "--pipe"],
                                 inputFile: input, timeout: 120)
        try #require(run.exit != .status(127), "redis-cli is missing: ./deploy/local/test installs redis-tools")
        #expect(run.succeeded, "redis-cli --pipe \(run.ending): \(run.digest)")
        let tally = (run.output + "\n" + run.errors).split(separator: "\n").last { $0.hasPrefix("errors: ") }.map(String.init)
        #expect(tally == "errors: 0, replies: 100000", "redis-cli --pipe: \(run.digest)")
    }
}
