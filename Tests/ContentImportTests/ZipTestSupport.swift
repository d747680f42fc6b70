import ContentImport
import Foundation
import Testing

/// The fixtures Scripts/make_zip_fixtures.py writes (zlib streams, zipfile archives), made once
/// per test run in a temporary directory by /usr/bin/python3, Debian's.
///
/// Without python3 the tests that need them are skipped, except under CI=true, where
/// `pythonIsPresentInCI` fails.
enum ZipFixtures {
    static let python = "/usr/bin/python3"
    static let script = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("Scripts/make_zip_fixtures.py")
    static var inCI: Bool { ProcessInfo.processInfo.environment["CI"] == "true" }
    static var pythonPresent: Bool { FileManager.default.isExecutableFile(atPath: python) }

    /// What manifest.json lists.
    struct Manifest: Decodable {
        var inflate: [String]
        /// Archive → [[entry name, contents file under contents/, "" for a directory]].
        var zips: [String: [[String]]]
    }

    /// The directory and its manifest, or why there are none (the script failed or took over 120 s).
    static let made: Result<(URL, Manifest), FixtureError> = make()

    struct FixtureError: Error, CustomStringConvertible { var description: String }

    static func make() -> Result<(URL, Manifest), FixtureError> {
        guard pythonPresent else { return .failure(FixtureError(description: "no \(python)")) }
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("zip-fixtures-\(UUID().uuidString)")
        do {
            try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
            let process = Process()
            process.executableURL = URL(fileURLWithPath: python)
            process.arguments = [script.path, folder.path]
            try process.run()
            let deadline = ContinuousClock.now + .seconds(120)
            while process.isRunning, ContinuousClock.now < deadline { Thread.sleep(forTimeInterval: 0.02) }
            if process.isRunning {
                process.terminate()
                return .failure(FixtureError(description: "make_zip_fixtures.py took over 120 s"))
            }
            guard process.terminationStatus == 0 else {
                return .failure(FixtureError(description: "make_zip_fixtures.py exited with \(process.terminationStatus)"))
            }
            let manifest = try JSONDecoder().decode(Manifest.self, from: Data(contentsOf: folder.appendingPathComponent("manifest.json")))
            return .success((folder, manifest))
        } catch {
            return .failure(FixtureError(description: "\(error)"))
        }
    }

    /// The fixtures; throws when they could not be made (tests needing them are enabled only with python3).
    static func get() throws -> (folder: URL, manifest: Manifest) {
        try made.get()
    }

    static func bytes(_ relative: String) throws -> [UInt8] {
        [UInt8](try Data(contentsOf: try get().folder.appendingPathComponent(relative)))
    }
}


/// Writes DEFLATE bits, first bit lowest, to craft streams zlib would never make.
struct BitWriter {
    var bytes: [UInt8] = []
    var pending: UInt64 = 0
    var pendingCount = 0

    /// `count` bits of `value`, lowest first (header fields and extra bits).
    mutating func bits(_ value: Int, _ count: Int) {
        pending |= UInt64(value) << UInt64(pendingCount)
        pendingCount += count
        while pendingCount >= 8 {
            bytes.append(UInt8(pending & 0xFF))
            pending >>= 8
            pendingCount -= 8
        }
    }

    /// A Huffman code of `length` bits, sent from its top bit.
    mutating func code(_ code: Int, _ length: Int) {
        for shift in stride(from: length - 1, through: 0, by: -1) { bits(code >> shift & 1, 1) }
    }

    /// A literal/length symbol of the fixed code (RFC 1951 3.2.6).
    mutating func fixed(_ symbol: Int) {
        switch symbol {
        case 0..<144: code(0x30 + symbol, 8)
        case 144..<256: code(0x190 + symbol - 144, 9)
        case 256..<280: code(symbol - 256, 7)
        default: code(0xC0 + symbol - 280, 8)
        }
    }

    /// The bytes, the last one padded with zero bits.
    mutating func finish() -> [UInt8] {
        if pendingCount > 0 { bits(0, 8 - pendingCount) }
        return bytes
    }

    /// One final fixed block: the literal `A`, then `matches` matches of 258 bytes at distance 1.
    /// About 13 bits make 258 bytes, so 10,000 bytes of it make 1.6 MB.
    static func bomb(matches: Int) -> [UInt8] {
        var writer = BitWriter()
        writer.bits(1, 1)
        writer.bits(1, 2)
        writer.fixed(Int(UInt8(ascii: "A")))
        for _ in 0..<matches {
            writer.fixed(285)
            writer.code(0, 5)
        }
        writer.fixed(256)
        return writer.finish()
    }

    /// `data` as one final stored block (at most 65,535 bytes).
    static func storedStream(_ data: [UInt8]) -> [UInt8] {
        let length = data.count
        return [1, UInt8(length & 0xFF), UInt8(length >> 8), UInt8(~length & 0xFF), UInt8(~length >> 8 & 0xFF)] + data
    }
}

/// Builds zip archives field by field, so tests can make every lie a hostile archive tells.
struct TestZip {
    /// One entry; the declared fields default to the truth about `payload`.
    struct Entry {
        var name: [UInt8]
        /// The bytes as stored in the archive (compressed for method 8).
        var payload: [UInt8]
        var method: UInt16 = 0
        var flags: UInt16 = 0
        var crc: UInt32
        var compressedSize: UInt32
        var uncompressedSize: UInt32
        /// The central directory's local header offset, if it should lie.
        var localOffset: UInt32? = nil

        /// A stored entry.
        static func stored(_ name: String, _ data: [UInt8]) -> Entry {
            Entry(name: Array(name.utf8), payload: data, crc: CRC32.checksum(data), compressedSize: UInt32(data.count), uncompressedSize: UInt32(data.count))
        }

        /// A deflated entry: `stream` decodes to `original`.
        static func deflated(_ name: String, _ stream: [UInt8], original: [UInt8]) -> Entry {
            Entry(name: Array(name.utf8), payload: stream, method: 8, crc: CRC32.checksum(original),
                  compressedSize: UInt32(stream.count), uncompressedSize: UInt32(original.count))
        }
    }

    var entries: [Entry]
    /// What the end record says about the entry count, if it should lie.
    var declaredCount: UInt16? = nil

    /// The archive: local headers and payloads, the central directory, the end record.
    var bytes: [UInt8] {
        var out: [UInt8] = [], central: [UInt8] = []
        for entry in entries {
            let offset = UInt32(out.count)
            out += le32(0x0403_4B50) + le16(20) + le16(entry.flags) + le16(entry.method) + le16(0) + le16(0x21)
            out += le32(entry.crc) + le32(entry.compressedSize) + le32(entry.uncompressedSize)
            out += le16(UInt16(entry.name.count)) + le16(0) + entry.name + entry.payload
            central += le32(0x0201_4B50) + le16(0x031E) + le16(20) + le16(entry.flags) + le16(entry.method) + le16(0) + le16(0x21)
            central += le32(entry.crc) + le32(entry.compressedSize) + le32(entry.uncompressedSize)
            central += le16(UInt16(entry.name.count)) + le16(0) + le16(0) + le16(0) + le16(0) + le32(0)
            central += le32(entry.localOffset ?? offset) + entry.name
        }
        let directoryOffset = UInt32(out.count)
        out += central
        let count = declaredCount ?? UInt16(entries.count)
        out += le32(0x0605_4B50) + le16(0) + le16(0) + le16(count) + le16(count)
        out += le32(UInt32(central.count)) + le32(directoryOffset) + le16(0)
        return out
    }
}

func le16(_ value: UInt16) -> [UInt8] { [UInt8(value & 0xFF), UInt8(value >> 8)] }
func le32(_ value: UInt32) -> [UInt8] { (0..<4).map { UInt8(value >> (8 * UInt32($0)) & 0xFF) } }

/// Generous limits for the tests that are not about limits.
let roomyZipLimits = ZipLimits(maxArchiveBytes: 64 << 20, maxEntryBytes: 16 << 20, maxTotalBytes: 64 << 20)

/// The error `body` throws, or nil (recording an issue) if it throws none.
/// (Closures are inferred to throw `any Error`; the cast checks the error is a `ZipError`.)
func zipError<T>(_ body: () throws -> T, sourceLocation: SourceLocation = #_sourceLocation) -> ZipError? {
    do {
        let value = try body()
        Issue.record("no error; got \(value)", sourceLocation: sourceLocation)
        return nil
    } catch let error as ZipError {
        return error
    } catch {
        Issue.record("not a ZipError: \(error)", sourceLocation: sourceLocation)
        return nil
    }
}

/// The same for the inflater.
func inflateError(_ input: [UInt8], limit: Int = 1 << 24, sourceLocation: SourceLocation = #_sourceLocation) -> InflateError? {
    do {
        let value = try Inflate.decompress(input, maxOutputBytes: limit)
        Issue.record("no error; decoded \(value.count) bytes", sourceLocation: sourceLocation)
        return nil
    } catch {
        return error
    }
}
