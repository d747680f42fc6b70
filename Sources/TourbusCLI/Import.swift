import Bus
import ContentImport
import Contracts
import Foundation

/// `tourbus import`: sends a content file (with the map images beside it, in a directory or a
/// zip) or an OpenStreetMap extract to the catalog in chunks, then waits for its report.
extension TourbusCommand {
    /// Bytes per `catalog.import.append` (the catalog's largest chunk).
    static let importChunk = 512 * 1024
    /// Bytes of one file read from the operator's machine, at most (the catalog's largest document).
    static let importMaxFile = 256 << 20

    /// What an import sends: the document, and map images by name.
    struct ImportFiles {
        var document: Data
        var images: [(name: String, bytes: Data)] = []
    }

    static func importCommand(_ arguments: [String]) -> Int32 {
        var args = arguments
        var dryRun = false
        if let flag = args.firstIndex(of: "--dry-run") {
            args.remove(at: flag)
            dryRun = true
        }
        guard let path = args.first, !path.hasPrefix("--") else {
            printError("import needs a PATH: a file, or a directory holding one .xml and its map images\n\(usage)")
            return 2
        }
        guard
            let flags = options(
                Array(args.dropFirst()),
                allowed: ["--format", "--service", "--data-dir", "--curve-key", "--server-key", "--timeout-ms"])
        else { return 2 }
        let format = flags["--format"] ?? "content"
        guard format == "content" || format == "osm" else {
            printError("--format takes content (our XML, Protocols/import.md) or osm (OpenStreetMap XML)")
            return 2
        }
        guard let timeout = longTimeout(flags) else { return 2 }
        let dataDirectory = flags["--data-dir"] ?? ProcessInfo.processInfo.environment["TOURBUS_DATA_DIR"] ?? "data"
        guard let endpoint = flags["--service"] ?? SuiteEndpoints.read(dataDirectory)?["catalog"]?.rpc else {
            printError("no catalog: give --service ENDPOINT, or --data-dir of a running `tourbus up`")
            return 2
        }
        let curve: CurveClientKeys?
        switch curveKeys(keyFile: flags["--curve-key"] ?? ProcessInfo.processInfo.environment["TOURBUS_CURVE_KEY"], serverKey: flags["--server-key"]) {
        case .success(let keys): curve = keys
        case .failure(let status): return status.code
        }
        let files: ImportFiles
        do {
            files = try importFiles(path)
        } catch let error as ImportFileError {
            printError(error.message)
            return 2
        } catch {
            printError("\(path): \(error)")
            return 2
        }
        return withService(endpoint: endpoint, curve: curve) { client in
            try sendImport(files, format: format, dryRun: dryRun, client: client, timeoutMilliseconds: timeout)
        }
    }

    /// Why a path cannot be imported.
    struct ImportFileError: Error {
        let message: String
    }

    /// The document at `path`, or a directory's or zip archive's one `.xml` (or `.osm`) file and
    /// its `.jpg`/`.jpeg` images.
    static func importFiles(_ path: String) throws -> ImportFiles {
        var isDirectory: ObjCBool = false
        guard FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory) else {
            throw ImportFileError(message: "\(path): no such file or directory")
        }
        guard isDirectory.boolValue else {
            if path.lowercased().hasSuffix(".zip") { return try zipFiles(path) }
            return ImportFiles(document: try readBounded(path))
        }
        let names = try FileManager.default.contentsOfDirectory(atPath: path).sorted()
        return try collect(names, in: path) { try readBounded(path + "/" + $0) }
    }

    /// The one document among `names` (`.xml` or `.osm`) and the `.jpg`/`.jpeg` images, read by
    /// `read`; each sent under its last path component, as `<map file>` names it.
    static func collect(_ names: [String], in path: String, read: (String) throws -> Data) throws -> ImportFiles {
        func last(_ name: String) -> String { String(name.split(separator: "/").last ?? Substring(name)) }
        let documents = names.filter { $0.lowercased().hasSuffix(".xml") || $0.lowercased().hasSuffix(".osm") }
        guard documents.count == 1 else {
            throw ImportFileError(message: "\(path): an import holds exactly one .xml (or .osm) file; this has \(documents.count)")
        }
        var files = ImportFiles(document: try read(documents[0]))
        var seen = Set<String>()
        for name in names where name.lowercased().hasSuffix(".jpg") || name.lowercased().hasSuffix(".jpeg") {
            guard seen.insert(last(name)).inserted else {
                throw ImportFileError(message: "\(path): two images are called \(last(name)); a map names its image by file name alone")
            }
            files.images.append((last(name), try read(name)))
        }
        return files
    }

    /// The document and images of a zip archive (our own reader: stored and deflated entries,
    /// every bound checked before anything is inflated, each entry's CRC-32).
    static func zipFiles(_ path: String) throws -> ImportFiles {
        let bytes = try readBounded(path)
        let limits = ZipLimits(maxArchiveBytes: importMaxFile, maxEntryBytes: importMaxFile, maxTotalBytes: 2 * importMaxFile)
        let archive: ZipArchive
        do {
            archive = try ZipArchive(bytes: bytes, limits: limits)
        } catch {
            throw ImportFileError(message: "\(path): \(error)")
        }
        let entries = Dictionary(archive.entries.filter { !$0.isDirectory }.map { ($0.name, $0) }, uniquingKeysWith: { first, _ in first })
        return try collect(entries.keys.sorted(), in: path) { name in
            guard let entry = entries[name] else { throw ImportFileError(message: "\(path): no entry \(name)") }
            do {
                return try archive.read(entry)
            } catch {
                throw ImportFileError(message: "\(path): \(error)")
            }
        }
    }

    /// A regular file's bytes, refused over `importMaxFile` before it is read.
    static func readBounded(_ path: String) throws -> Data {
        let attributes = try FileManager.default.attributesOfItem(atPath: path)
        guard attributes[.type] as? FileAttributeType == .typeRegular else { throw ImportFileError(message: "\(path): not a regular file") }
        guard let size = attributes[.size] as? Int, size <= importMaxFile else {
            throw ImportFileError(message: "\(path): more than \(importMaxFile) bytes")
        }
        return try Data(contentsOf: URL(fileURLWithPath: path))
    }

    /// Sends the files in chunks, commits, and polls the status (every 200 ms) until the import
    /// is done or failed, or `timeoutMilliseconds` passed; answers the last status.
    static func sendImport(_ files: ImportFiles, format: String, dryRun: Bool, client: RPCClient, timeoutMilliseconds: Int) throws -> Data {
        func call(_ type: String, _ body: [String: Any]) throws -> [String: Any] {
            let reply = try client.request(type: type, body: try JSONSerialization.data(withJSONObject: body), timeoutMilliseconds: 30_000)
            return (try JSONSerialization.jsonObject(with: reply.bodyJSON) as? [String: Any]) ?? [:]
        }
        let begun = try call(Methods.Catalog.importBegin.name, ["format": format, "dry_run": dryRun])
        guard let id = begun["import_id"] as? String else { throw ServiceError(.internal, "catalog.import.begin answered no import_id") }
        for (name, bytes) in [("", files.document)] + files.images {
            let file = name.isEmpty ? "" : #","file":"# + String(decoding: try JSONCoding.encoder.encode(name), as: UTF8.self)
            try sendChunks(bytes) { offset, chunk in
                // Written, not serialized: base64 needs no escaping, and Foundation's writer
                // spent most of a chunk's time on its half a megabyte of text.
                let body = #"{"import_id":"\#(id)","offset":\#(offset)\#(file),"chunk":""# + chunk + #""}"#
                _ = try client.request(type: Methods.Catalog.importAppend.name, body: Data(body.utf8), timeoutMilliseconds: 30_000)
            }
        }
        _ = try call(Methods.Catalog.importCommit.name, ["import_id": id])
        let deadline = monotonicNanos() + UInt64(timeoutMilliseconds) * 1_000_000
        while true {
            let status = try client.request(type: Methods.Catalog.importStatus.name, body: Data(#"{"import_id":"\#(id)"}"#.utf8), timeoutMilliseconds: 30_000)
            let object = (try JSONSerialization.jsonObject(with: status.bodyJSON) as? [String: Any]) ?? [:]
            switch object["state"] as? String {
            case "done": return status.bodyJSON
            case "failed": throw ImportFailed(status: status.bodyJSON)
            default:
                guard monotonicNanos() < deadline else {
                    throw ServiceError(.deadlineExceeded, "import \(id) is still \(object["state"] ?? "running") after \(timeoutMilliseconds) ms; ask catalog.import.status")
                }
                usleep(200_000)
            }
        }
    }

    /// Hands `bytes` to `send` in base64 chunks of `importChunk` bytes, with the offset of each.
    static func sendChunks(_ bytes: Data, _ send: (_ offset: Int, _ chunk: String) throws -> Void) throws {
        var offset = 0
        while offset < bytes.count {
            let piece = bytes[offset..<min(bytes.count, offset + importChunk)]
            try send(offset, Data(piece).base64EncodedString())
            offset += piece.count
        }
    }

    /// An import the catalog refused: its status, with the report of every error.
    struct ImportFailed: Error, CustomStringConvertible {
        let status: Data
        var description: String { "the import failed, nothing was written:\n" + String(decoding: status, as: UTF8.self) }
    }
}
