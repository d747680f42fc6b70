import ContentImport
import Foundation
import Testing

/// Debian's `xmllint` (package `libxml2-utils`), which `./deploy/local/test` installs.
enum XMLLint {
    static let path = ["/usr/bin/xmllint", "/usr/local/bin/xmllint"].first { FileManager.default.isExecutableFile(atPath: $0) }
    /// CI sets CI=true: there a missing xmllint is a failure, not a reason to skip.
    static var inCI: Bool { ProcessInfo.processInfo.environment["CI"] == "true" }
    static let schema = ImportDocumentation.protocols.appendingPathComponent("import.rng")

    /// `xmllint --relaxng import.rng` on `text`: nil when it validates, else what it said.
    /// Waits at most 30 seconds.
    static func problems(_ text: String) throws -> String? {
        guard let path else { return nil }
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("xmllint-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let input = folder.appendingPathComponent("example.xml"), output = folder.appendingPathComponent("said.txt")
        try Data(text.utf8).write(to: input)
        FileManager.default.createFile(atPath: output.path, contents: nil)
        let said = try FileHandle(forWritingTo: output)
        let process = Process()
        process.executableURL = URL(fileURLWithPath: path)
        process.arguments = ["--noout", "--relaxng", schema.path, input.path]
        process.standardOutput = said
        process.standardError = said
        try process.run()
        let deadline = ContinuousClock.now + .seconds(30)
        while process.isRunning, ContinuousClock.now < deadline { Thread.sleep(forTimeInterval: 0.01) }
        if process.isRunning {
            process.terminate()
            return "xmllint did not finish in 30 s"
        }
        try said.close()
        let message = (try? String(contentsOf: output, encoding: .utf8)) ?? ""
        return process.terminationStatus == 0 ? nil : "xmllint exit \(process.terminationStatus): \(message)"
    }
}

/// Protocols/import.md, read by the tests.
enum ImportDocumentation {
    static let protocols = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("Protocols")

    /// The fenced blocks of import.md with their language: (`xml`, text) …
    static func blocks() throws -> [(language: String, text: String)] {
        let lines = try String(contentsOf: protocols.appendingPathComponent("import.md"), encoding: .utf8).components(separatedBy: "\n")
        var blocks: [(String, String)] = []
        var open: (language: String, lines: [String])?
        for line in lines {
            if line.hasPrefix("```") {
                if let block = open {
                    blocks.append((block.language, block.lines.joined(separator: "\n") + "\n"))
                    open = nil
                } else {
                    open = (String(line.dropFirst(3)), [])
                }
            } else {
                open?.lines.append(line)
            }
        }
        return blocks
    }

    static func xmlExamples() throws -> [String] {
        try blocks().filter { $0.language == "xml" }.map(\.text)
    }
}

@Suite struct ImportDocumentationTests {
    /// Every ```xml example of import.md is a content file `ContentDocument` reads.
    @Test func everyXMLExampleReads() throws {
        let examples = try ImportDocumentation.xmlExamples()
        #expect(examples.count >= 2)
        for example in examples {
            #expect(throws: Never.self, "\(example.prefix(200))") { try ContentDocument.parse(Array(example.utf8)) }
        }
    }

    @Test(.enabled(if: XMLLint.path != nil || XMLLint.inCI, "needs xmllint (Debian libxml2-utils), which ./deploy/local/test installs"))
    func everyXMLExampleValidatesAgainstTheSchema() throws {
        try #require(XMLLint.path != nil, "CI=true but xmllint is missing: ./deploy/local/test should have installed it")
        let examples = try ImportDocumentation.xmlExamples()
        #expect(examples.count >= 2)
        for example in examples {
            #expect(try XMLLint.problems(example) == nil)
        }
    }

    /// Each case breaks the first example one way: the reader and the schema both refuse it, so
    /// neither is looser than the other on that point.
    @Test(.enabled(if: XMLLint.path != nil || XMLLint.inCI, "needs xmllint (Debian libxml2-utils), which ./deploy/local/test installs"))
    func theSchemaAndTheReaderRefuseTheSameMistakes() throws {
        try #require(XMLLint.path != nil, "CI=true but xmllint is missing: ./deploy/local/test should have installed it")
        let example = try #require(try ImportDocumentation.xmlExamples().first)
        let breaks: [(String, String)] = [
            (#"lat="-33.8568""#, #"lat="91""#),
            (#"lat="-33.8568""#, #"lat="+33.8568""#),
            (#"lat="-33.8568""#, #"lat="1e1""#),
            (#"lon="151.2153""#, #"lon="-180.5""#),
            ("<price>3</price>", "<price>5</price>"),
            ("<price>3</price>", "<price>3</price><price>3</price>"),
            (#"<poi id="opera-house" "#, "<poi "),
            (#"<poi id="opera-house" "#, #"<poi id="opera house" "#),
            (#"category="attraction" lat="-33.8568""#, #"lat="-33.8568""#),
            ("<phone>+61 2 9250 7111</phone>", "<rating>5</rating>"),
            (#"<name lang="ru">"#, #"<name lang="russian!">"#),
            (#"<name lang="en">Sydney Harbour Bridge</name>"#, ""),
            ("<name lang=\"en\">Sydney Opera House</name>", "<name lang=\"en\">  </name>"),
            ("<website>https://www.sydneyoperahouse.com/</website>", "<website>ftp://example.org/</website>"),
            (#"url="https://example.org/photos/opera.jpg""#, #"url="example.org/opera.jpg""#),
            (#"<stop ref="harbour-bridge"/>"#, "<stop/>"),
            (#"<stop ref="opera-house"/>"# + "\n    " + #"<stop ref="harbour-bridge"/>"#, ""),
            (#"<map file="harbour-walk.jpg">"#, #"<map file="../harbour-walk.jpg">"#),
            (#"<map file="harbour-walk.jpg">"#, #"<map file="harbour-walk.png">"#),
            (#"<point x="0" y="1200" lat="-33.8600" lon="151.2050"/>"#, ""),
            (#"<point x="0" y="0""#, #"<point x="-1" y="0""#),
            (#"xmlns="urn:tourbus:content:1""#, #"xmlns="urn:tourbus:content:2""#),
            (#" source="sydney-walks""#, ""),
            ("<price>3</price>", "<price>3</price>Text"),
        ]
        for (from, to) in breaks {
            let broken = example.replacingOccurrences(of: from, with: to)
            #expect(broken != example, "\(from) is not in the example")
            #expect(throws: ContentErrors.self, "\(to)") { try ContentDocument.parse(Array(broken.utf8)) }
            #expect(try XMLLint.problems(broken) != nil, "the schema accepts \(to)")
        }
    }

    /// A ```text block that is a content file, followed by a ```text block of errors: reading the
    /// file gives exactly those errors.
    @Test func theErrorExampleIsWhatReadingSays() throws {
        let blocks = try ImportDocumentation.blocks()
        var checked = 0
        for (file, said) in zip(blocks, blocks.dropFirst()) where file.language == "text" && file.text.hasPrefix("<content") {
            #expect(said.language == "text")
            do {
                _ = try ContentDocument.parse(Array(file.text.utf8))
                Issue.record("read: \(file.text)")
            } catch {
                #expect(error.description + "\n" == said.text)
            }
            checked += 1
        }
        #expect(checked == 1)
    }
}
