import Bus
import Foundation
import Testing
import TestSupport

/// One exchange of a protocol transcript: a request and the reply the docs promise.
struct Exchange {
    var line: Int
    var type: String
    var body: String
    var expected: String
}

/// Reads every ```transcript block of a Markdown file in `Protocols/`.
func transcript(_ file: String) throws -> [Exchange] {
    let text = try String(contentsOf: protocolsFolder().appendingPathComponent(file), encoding: .utf8)
    var exchanges: [Exchange] = []
    var inside = false
    var pending: (Int, String, String)?
    for (number, line) in text.components(separatedBy: "\n").enumerated() {
        if line.hasPrefix("```") {
            inside = line == "```transcript"
            continue
        }
        guard inside else { continue }
        if line.hasPrefix("> ") {
            let request = line.dropFirst(2)
            let space = request.firstIndex(of: " ") ?? request.endIndex
            pending = (number + 1, String(request[..<space]), String(request[space...]).trimmingCharacters(in: .whitespaces))
        } else if line.hasPrefix("< "), let (at, type, body) = pending {
            exchanges.append(Exchange(line: at, type: type, body: body.isEmpty ? "{}" : body, expected: String(line.dropFirst(2))))
            pending = nil
        }
    }
    return exchanges
}

@Suite struct TranscriptTests {
    @Test(arguments: ["catalog.md", "envelope.md"])
    func transcriptsMatchTheService(file: String) throws {
        let exchanges = try transcript(file)
        #expect(exchanges.count >= 3)
        let catalog = try CatalogFixture()
        for exchange in exchanges {
            var actual: [String: Any]
            do {
                let reply = try catalog.client.request(type: exchange.type, body: Data(exchange.body.utf8), timeoutMilliseconds: 5_000)
                actual = try JSONSerialization.jsonObject(with: reply.envelope) as? [String: Any] ?? [:]
            } catch let error as ServiceError {
                actual = ["v": 1, "id": "x", "ok": false,
                          "error": try JSONSerialization.jsonObject(with: try JSONEncoder().encode(error))]
            }
            actual.removeValue(forKey: "v")
            actual.removeValue(forKey: "id")
            let expected = try JSONSerialization.jsonObject(with: Data(exchange.expected.utf8))
            let shown = String(decoding: try JSONSerialization.data(withJSONObject: actual, options: [.sortedKeys]), as: UTF8.self)
            #expect(transcriptMatches(expected, actual), "\(file) line \(exchange.line): \(exchange.type) answered \(shown)")
        }
    }
}
