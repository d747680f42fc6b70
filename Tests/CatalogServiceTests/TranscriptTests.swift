import Bus
@testable import CatalogService
import Foundation
import Testing
import TestSupport

@Suite struct TranscriptTests {
    @Test(arguments: ["catalog.md", "envelope.md", "tours.md", "import.md", "strings.md"])
    func transcriptsMatchTheService(file: String) throws {
        let exchanges = try serviceTranscript(file)
        #expect(exchanges.count >= 3)
        // A file with `strings-file NAME` blocks is replayed on a catalog with those strings.
        var options = CatalogOptions()
        let files = try stringsFiles(file)
        if !files.isEmpty { options.strings = try InterfaceStrings(files: files) }
        let catalog = try CatalogFixture(options: options)
        for exchange in exchanges {
            let mismatch = try transcriptMismatch(exchange, try replay(exchange, on: catalog.client), file: file)
            #expect(mismatch == nil, "\(mismatch ?? "")")
        }
    }

    /// The ```strings-file NAME blocks of a Protocols file: each NAME's lines, with a final newline.
    func stringsFiles(_ file: String) throws -> [String: Data] {
        let text = try String(contentsOf: protocolsFolder().appendingPathComponent(file), encoding: .utf8)
        var files: [String: Data] = [:]
        var current: (name: String, lines: [String])?
        for line in text.components(separatedBy: "\n") {
            if let block = current {
                if line == "```" {
                    files[block.name] = Data((block.lines.joined(separator: "\n") + "\n").utf8)
                    current = nil
                } else {
                    current?.lines.append(line)
                }
            } else if line.hasPrefix("```strings-file ") {
                current = (String(line.dropFirst("```strings-file ".count)), [])
            }
        }
        return files
    }
}
