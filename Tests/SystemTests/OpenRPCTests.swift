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
}
