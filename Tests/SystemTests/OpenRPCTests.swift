import Contracts
import Foundation
import Testing
import TestSupport

/// The OpenRPC document: what `rpc.discover` answers through a running gateway, and what an
/// outside tool (PyPI jsonschema) makes of it.
@Suite(.serialized) struct OpenRPCTests {
    static let resources = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("Resources")

    /// The document validates against the OpenRPC meta-schema, each method's params and result
    /// schemas and each push's body schema are draft-07 schemas, each example holds to its
    /// method's schemas, and so does every request and reply of Protocols' transcripts and
    /// JSON-RPC blocks (a refusal's code is one the method declares).
    @Test(.enabled(if: RedisPy.isInstalled || RedisPy.inCI, "needs jsonschema in .build/pyenv, which ./deploy/local/test makes"))
    func theDocumentValidatesAgainstTheMetaSchema() throws {
        let document = RedisPy.packageRoot.appendingPathComponent("Protocols/openrpc.json").path
        let run = try BoundedRun(RedisPy.python, [OpenRPCTests.resources.appendingPathComponent("openrpc_check.py").path, document,
                                                  OpenRPCTests.resources.appendingPathComponent("openrpc-meta-schema.json").path,
                                                  RedisPy.packageRoot.appendingPathComponent("Protocols").path])
        #expect(run.exit == .status(0), "\(run.output)\n\(run.errors)")
        let summary = try JSONSerialization.jsonObject(with: Data(run.output.utf8)) as? [String: Any]
        #expect(summary?["methods"] as? Int == Methods.offered.count)
        #expect((summary?["schemas"] as? Int ?? 0) > 2 * Methods.offered.count)
        #expect((summary?["exchanges"] as? Int ?? 0) > 400)
        #expect(summary?["examples"] as? Int == OpenRPC.examples.count && summary?["notifications"] as? Int == Pushes.all.count)
        // The check can fail: a document that breaks the meta-schema is refused.
        let folder = TemporaryFolder("openrpc")
        defer { withExtendedLifetime(folder) {} }
        let broken = folder.file("broken.json")
        try Data(#"""
            {"openrpc":"9.9","info":{"title":"x"},"methods":[{"name":"a","params":[{"name":"n","schema":{"type":"integer"}}],
             "result":{"name":"r","schema":{"type":7}},"examples":[{"name":"e","params":[{"name":"n","value":"x"}]}]}],
             "x-notifications":[{"name":"p","summary":"s","body":{"type":7}}]}
            """#.utf8)
            .write(to: URL(fileURLWithPath: broken))
        let refused = try BoundedRun(RedisPy.python, [OpenRPCTests.resources.appendingPathComponent("openrpc_check.py").path, broken,
                                                      OpenRPCTests.resources.appendingPathComponent("openrpc-meta-schema.json").path])
        #expect(refused.exit == .status(1), "\(refused.output)")
        #expect(refused.output.contains("document/openrpc") && refused.output.contains("document/info"), "\(refused.output)")
        #expect(refused.output.contains("push p:") && refused.output.contains("a example: params"), "\(refused.output)")
    }

    /// `rpc.discover` answers the document over JSON-RPC (as the result) and RESP (a bulk
    /// string), whoever asks, and refuses a param it does not take.
    @Test func rpcDiscoverAnswersTheDocument() throws {
        let suite = try SuiteFixture()
        let line = try GatewayConnection(port: suite.port)
        let reply = try #require(line.call(#"{"jsonrpc":"2.0","id":1,"method":"rpc.discover"}"#))
        let object = try #require(try JSONSerialization.jsonObject(with: Data(reply.utf8)) as? [String: Any])
        let result = try #require(object["result"] as? [String: Any])
        let expected = try #require(try JSONSerialization.jsonObject(with: OpenRPC.document) as? [String: Any])
        #expect(NSDictionary(dictionary: result).isEqual(to: expected))
        let resp = try GatewayConnection(port: suite.port)
        resp.send(GatewayConnection.resp(["rpc.discover"]))
        let bulk = try #require(resp.respBytes())
        #expect(Data(bulk) == OpenRPC.document)
        let stray = line.rpc("rpc.discover", #"{"verbose":true}"#)
        #expect(stray.failure?.data?.code == "invalid_argument" && stray.failure?.data?.field == "verbose", "\(stray)")
        #expect(line.rpc(Methods.Gateway.help.name, #"{"method":"x"}"#).failure?.data?.field == "method")
    }

    /// Property-based, as an outside tool would test us (openrpc_property.py, PyPI
    /// hypothesis-jsonschema): every client method gets 200 params generated from its schema
    /// and 200 mutated ones (a wrong type, out of range, an unknown member, a required one
    /// missing), each through the gateway as a fresh user. Every answer is a result that
    /// holds to the result schema or a documented error, a mutated call is refused naming
    /// its mutated member, at least 80 % of the generated calls reach their handler, every
    /// push heard holds to its topic's schema, and no process crashes or restarts. Limits are
    /// raised so that the per-address sign-in and sign-up limits do not end the calls.
    @Test(.enabled(if: RedisPy.isInstalled || RedisPy.inCI, "needs hypothesis-jsonschema in .build/pyenv, which ./deploy/local/test makes"))
    func generatedParamsGetDocumentedAnswers() throws {
        try #require(RedisPy.isInstalled, "CI=true but \(RedisPy.python) is missing: ./deploy/local/test should have made it")
        // Each method's connection stays open to hear pushes: more than the 128 one address may hold.
        let suite = try SuiteFixture(gatewayArguments: ["--logins-per-minute-per-address", "1000000", "--registrations-per-minute-per-address", "1000000",
                                                        "--max-connections-per-address", "1000"],
                                     everything: true)
        let document = RedisPy.packageRoot.appendingPathComponent("Protocols/openrpc.json").path
        let run = try BoundedRun(RedisPy.python, [OpenRPCTests.resources.appendingPathComponent("openrpc_property.py").path, document, "\(suite.port)",
                                                  SuiteFixture.admin.username, SuiteFixture.admin.password],
                                 timeout: 300)
        #expect(run.exit == .status(0) && !run.timedOut, "\(run.output)\n\(run.errors.suffix(3_000))\ngateway: \(suite.gateway.log.suffix(2_000))")
        let summary = try #require(try JSONSerialization.jsonObject(with: Data(run.output.utf8)) as? [String: Any], "\(run.output)\n\(run.errors.suffix(3_000))")
        print("openrpc_property.py: \(run.output)")  // its figures, for the record
        #expect(summary["methods"] as? Int == Methods.offered.count)
        #expect(summary["valid"] as? Int == 200 * Methods.offered.count && summary["mutated"] as? Int == 200 * Methods.offered.count, "\(summary)")
        #expect(summary["reached_share"] as? Double ?? 0 >= 0.8, "\(summary)")
        #expect(summary["pushes"] as? Int ?? 0 > 0, "\(summary)")
        for process in suite.processes { #expect(process.unexpectedEnd() == nil, "\(process.name)") }
    }
}
