import Foundation
import Testing
import TestSupport


func sameJSON(_ expected: String, _ actual: String) -> Bool {
    guard let e = try? JSONSerialization.jsonObject(with: Data(expected.utf8), options: [.fragmentsAllowed]),
          let a = try? JSONSerialization.jsonObject(with: Data(actual.utf8), options: [.fragmentsAllowed]) else { return false }
    return transcriptMatches(e, a)
}

@Suite struct GatewayTranscriptTests {
    @Test func gatewayDocumentMatchesTheRunningSuite() throws {
        let blocks = try gatewayTranscriptBlocks()
        #expect(blocks.contains { $0.kind == "jsonrpc" } && blocks.contains { $0.kind == "resp" })
        try replay(blocks, file: "gateway.md", on: try SuiteFixture())
    }

    @Test func searchDocumentMatchesTheRunningSuite() throws {
        let blocks = try gatewayTranscriptBlocks("search.md")
        let fixture = blocks.filter { $0.kind == "fixture" }.flatMap(\.lines)
        #expect(fixture.count == 5 && blocks.contains { $0.kind == "jsonrpc" })
        let suite = try SuiteFixture(withSearch: true)
        let c = try suite.adminConnection()
        for (i, place) in fixture.enumerated() {
            #expect(c.reply(#"{"jsonrpc":"2.0","id":\#(i),"method":"catalog.create","params":\#(place.text)}"#).succeeded)
        }
        // Wait (bounded) until search has indexed all of them.
        var indexed = 0
        for _ in 0..<200 where indexed < fixture.count {
            let reply = json(c.call(#"{"jsonrpc":"2.0","id":0,"method":"search.viewport","params":{"bbox":{"south":-34,"west":151,"north":-33.5,"east":151.5},"limit":50}}"#))
            indexed = ((reply["result"] as? [String: Any])?["hits"] as? [Any])?.count ?? 0
            if indexed < fixture.count { usleep(50_000) }
        }
        #expect(indexed == fixture.count)
        try replay(blocks.filter { $0.kind != "fixture" }, file: "search.md", on: suite)
    }

    func replay(_ blocks: [TranscriptBlock], file: String, on suite: SuiteFixture) throws {
        for block in blocks {
            let connection = try GatewayConnection(port: suite.port)
            for (number, line) in block.lines {
                let text = String(line.dropFirst(2))
                if line.hasPrefix("> ") {
                    if block.kind == "jsonrpc" {
                        connection.send(text + "\n")
                    } else {
                        let words = (RESPWords.split(text) ?? []).map { String(decoding: $0, as: UTF8.self) }
                        connection.send(GatewayConnection.resp(words))
                    }
                    continue
                }
                if block.kind == "jsonrpc" {
                    let actual = connection.line() ?? "(nothing)"
                    #expect(sameJSON(text, actual), "\(file) line \(number): got \(actual)")
                } else {
                    let actual = connection.respReply() ?? "(nothing)"
                    if text.hasPrefix("$") && actual.hasPrefix("$") {
                        #expect(sameJSON(String(text.dropFirst()), String(actual.dropFirst())), "\(file) line \(number): got \(actual)")
                    } else {
                        #expect(text == actual, "\(file) line \(number): got \(actual)")
                    }
                }
            }
        }
    }
}

/// redis-cli's way of splitting a typed line into words: spaces, "double" quotes with escapes, 'single' quotes.
enum RESPWords {
    static func split(_ line: String) -> [[UInt8]]? {
        var words: [[UInt8]] = []
        var current: [UInt8] = []
        var inWord = false
        var quote: Character?
        var chars = Array(line)
        var i = 0
        while i < chars.count {
            let c = chars[i]
            if let q = quote {
                if c == q {
                    quote = nil
                } else if q == "\"" && c == "\\" && i + 1 < chars.count {
                    i += 1
                    switch chars[i] {
                    case "n": current.append(0x0A)
                    case "t": current.append(0x09)
                    default: current += Array(String(chars[i]).utf8)
                    }
                } else {
                    current += Array(String(c).utf8)
                }
            } else if c == "\"" || c == "'" {
                quote = c
                inWord = true
            } else if c == " " {
                if inWord { words.append(current) }
                current = []
                inWord = false
            } else {
                current += Array(String(c).utf8)
                inWord = true
            }
            i += 1
        }
        chars = []
        if quote != nil { return nil }
        if inWord { words.append(current) }
        return words
    }
}
