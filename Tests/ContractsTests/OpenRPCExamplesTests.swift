import Bus
import Contracts
import Foundation
import Testing
import TestSupport

/// The OpenRPC document's examples are taken from Protocols' transcripts: for each offered
/// method, the first exchange (files by name, then in order) that the docs show answered, whose
/// reply leaves nothing open (`"<ts>"`, `"<any>"`) and that is short enough to read at a glance.
/// They are kept in Sources/Contracts/OpenRPCExamples.swift, since a binary cannot read
/// Protocols; `TOURBUS_WRITE_OPENRPC=1` writes that file anew.
@Suite struct OpenRPCExamplesTests {
    /// The longest example, its params and result together, in bytes.
    static let maxExampleBytes = 1_200

    @Test func theExamplesAreTheTranscripts() throws {
        let file = packageRoot.appendingPathComponent("Sources/Contracts/OpenRPCExamples.swift")
        let written = try Self.source(of: Self.examples())
        if ProcessInfo.processInfo.environment["TOURBUS_WRITE_OPENRPC"] == "1" { try Data(written.utf8).write(to: file) }
        #expect(try String(contentsOf: file, encoding: .utf8) == written,
                "Sources/Contracts/OpenRPCExamples.swift differs from Protocols' transcripts: run the test with TOURBUS_WRITE_OPENRPC=1")
        // Most client methods have one: the transcripts show nearly every method answered.
        #expect(OpenRPC.examples.count * 10 >= Methods.offered.count * 7, "\(OpenRPC.examples.count) of \(Methods.offered.count)")
    }

    /// Each example as the document carries it: its params by name and its result.
    @Test func theDocumentCarriesThem() throws {
        let document = try #require(try JSONSerialization.jsonObject(with: OpenRPC.document) as? [String: Any])
        let methods = try #require(document["methods"] as? [[String: Any]])
        let get = try #require(methods.first { $0["name"] as? String == Methods.Catalog.get.name })
        let example = try #require((get["examples"] as? [[String: Any]])?.first)
        let params = try #require(example["params"] as? [[String: Any]])
        #expect(params.contains { $0["name"] as? String == "id" && $0["value"] is Int })
        #expect(((example["result"] as? [String: Any])?["value"] as? [String: Any])?["name"] is String)
        #expect(methods.filter { $0["examples"] != nil }.count == OpenRPC.examples.count)
    }

    /// method → (file, params, result) from the transcripts.
    static func examples() throws -> [(method: String, file: String, params: String, result: String)] {
        let offered = Set(Methods.offered.map(\.name))
        let files = try FileManager.default.contentsOfDirectory(atPath: protocolsFolder().path).filter { $0.hasSuffix(".md") }.sorted()
        var found: [String: (file: String, params: String, result: String)] = [:]
        for file in files {
            for answered in try answered(in: file) where offered.contains(answered.method) && found[answered.method] == nil {
                guard let result = answered.result.map(filledIn), !leavesOpen(result) else { continue }
                let paramsText = try canonical(answered.params), resultText = try canonical(result)
                guard paramsText.utf8.count + resultText.utf8.count <= maxExampleBytes else { continue }
                found[answered.method] = (file, paramsText, resultText)
            }
        }
        return found.sorted { $0.key < $1.key }.map { ($0.key, $0.value.file, $0.value.params, $0.value.result) }
    }

    /// The exchanges of `file` that the docs show answered, in order: its service transcripts
    /// (`> type body`, `< {"ok":true,"body":…}`) and its JSON-RPC blocks (a request and the
    /// reply of the same id with a `result`).
    static func answered(in file: String) throws -> [(method: String, params: [String: Any], result: Any?)] {
        func object(_ text: some StringProtocol) -> [String: Any]? {
            try? JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any]
        }
        var out: [(method: String, params: [String: Any], result: Any?)] = []
        for exchange in try serviceTranscript(file) {
            guard let params = object(exchange.body), let reply = object(exchange.expected), reply["ok"] as? Bool == true else { continue }
            out.append((exchange.type, params, reply["body"]))
        }
        for block in try gatewayTranscriptBlocks(file) where block.kind == "jsonrpc" {
            var asked: [Int: (method: String, params: [String: Any])] = [:]
            for (_, line) in block.lines {
                guard let message = object(line.dropFirst(2)), let id = message["id"] as? Int else { continue }
                if line.hasPrefix("> "), let method = message["method"] as? String {
                    asked[id] = (method, message["params"] as? [String: Any] ?? [:])
                } else if let request = asked.removeValue(forKey: id), let result = message["result"] {
                    out.append((request.method, request.params, result))
                }
            }
        }
        return out
    }

    /// A reply with each `"<ts>"` (any timestamp, in the transcripts) given one.
    static func filledIn(_ value: Any) -> Any {
        switch value {
        case let text as String where text == "<ts>": "2026-06-01T09:30:00.000Z"
        case let array as [Any]: array.map(filledIn)
        case let object as [String: Any]: object.mapValues(filledIn)
        default: value
        }
    }

    /// Whether a transcript's reply leaves a value open (`"<any>"`, `"<token>"`).
    static func leavesOpen(_ value: Any) -> Bool {
        switch value {
        case let text as String: text.wholeMatch(of: /<\w+>/) != nil
        case let array as [Any]: array.contains(where: leavesOpen)
        case let object as [String: Any]: object.values.contains(where: leavesOpen)
        default: false
        }
    }

    static func canonical(_ value: Any) throws -> String {
        String(decoding: try JSONSerialization.data(withJSONObject: value, options: [.sortedKeys, .withoutEscapingSlashes, .fragmentsAllowed]), as: UTF8.self)
    }

    static func source(of examples: [(method: String, file: String, params: String, result: String)]) throws -> String {
        func literal(_ text: String) -> String {
            var hashes = "#"
            while text.contains("\"" + hashes) { hashes += "#" }
            return hashes + "\"" + text + "\"" + hashes
        }
        var out = """
            // swift-format-ignore-file
            // Made from Protocols' transcripts by ContractsTests' OpenRPCExamplesTests; do not edit
            // (`TOURBUS_WRITE_OPENRPC=1 swift test --filter OpenRPCExamplesTests` writes it anew).

            extension OpenRPC {
                /// For each method that has one, an example from Protocols' transcripts: the file, its
                /// params and its result, as JSON.
                public static let examples: [String: (file: String, params: String, result: String)] = [

            """
        for example in examples {
            out += "        \"\(example.method)\": (\"\(example.file)\", \(literal(example.params)),\n"
            out += "            \(literal(example.result))),\n"
        }
        out += "    ]\n}\n"
        return out
    }
}
