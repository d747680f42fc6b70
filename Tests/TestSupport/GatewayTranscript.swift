import Foundation

/// One block of a Protocols page (`gateway.md`, `search.md`, `http.md`): its kind (`jsonrpc`,
/// `resp`, `http`, `fixture`) and its lines (`> ` requests, `< ` replies, a bare `>` or `<` the
/// empty line that ends an HTTP head; a fixture's every line).
public struct TranscriptBlock: Sendable {
    public var kind: String
    public var firstLine: Int
    public var lines: [(number: Int, text: String)]
}

/// The `jsonrpc`, `resp`, `http` and `fixture` blocks of a Markdown file of `Protocols/`, in order.
public func gatewayTranscriptBlocks(_ file: String = "gateway.md") throws -> [TranscriptBlock] {
    let text = try String(contentsOf: protocolsFolder().appendingPathComponent(file), encoding: .utf8)
    var blocks: [TranscriptBlock] = []
    var current: TranscriptBlock?
    for (index, line) in text.components(separatedBy: "\n").enumerated() {
        if line.hasPrefix("```") {
            if let block = current { blocks.append(block) }
            current = nil
            let kind = String(line.dropFirst(3))
            if ["jsonrpc", "resp", "fixture", "http"].contains(kind) { current = TranscriptBlock(kind: kind, firstLine: index + 1, lines: []) }
            continue
        }
        if current?.kind == "fixture" && !line.isEmpty {
            current?.lines.append((index + 1, line))
        } else if line.hasPrefix("> ") || line.hasPrefix("< ") || (current?.kind == "http" && (line == ">" || line == "<")) {
            current?.lines.append((index + 1, line))
        }
    }
    return blocks
}
