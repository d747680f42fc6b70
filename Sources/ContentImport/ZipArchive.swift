import Foundation

/// The bounds a `ZipArchive` keeps to, all in bytes or counts, checked on the archive's
/// own claims before any entry is inflated and again by the inflater's output limit.
///
/// The sizes have no default: the caller knows what it expects to read.
public struct ZipLimits: Sendable, Equatable {
    /// The archive itself.
    public var maxArchiveBytes: Int
    /// One entry, uncompressed.
    public var maxEntryBytes: Int
    /// All entries together, uncompressed.
    public var maxTotalBytes: Int
    /// Entries in the central directory, directories included.
    public var maxEntries: Int
    /// One entry's name, in UTF-8 bytes.
    public var maxNameBytes: Int
    /// Uncompressed bytes per compressed byte, for entries larger than `ratioCheckedAbove`
    /// (a small file of one repeated byte compresses a hundredfold and harms no one).
    public var maxCompressionRatio: Int
    /// Entries of at most this many uncompressed bytes are not held to `maxCompressionRatio`.
    public var ratioCheckedAbove: Int

    public init(
        maxArchiveBytes: Int, maxEntryBytes: Int, maxTotalBytes: Int, maxEntries: Int = 10_000,
        maxNameBytes: Int = 512, maxCompressionRatio: Int = 200, ratioCheckedAbove: Int = 1 << 20
    ) {
        self.maxArchiveBytes = maxArchiveBytes
        self.maxEntryBytes = maxEntryBytes
        self.maxTotalBytes = maxTotalBytes
        self.maxEntries = maxEntries
        self.maxNameBytes = maxNameBytes
        self.maxCompressionRatio = maxCompressionRatio
        self.ratioCheckedAbove = ratioCheckedAbove
    }
}

/// How an entry's bytes are stored; the only two methods a `ZipArchive` reads.
public enum ZipMethod: UInt16, Sendable, Hashable {
    case stored = 0
    case deflated = 8
}

/// One file or directory of a zip archive, as its central directory describes it.
public struct ZipEntry: Sendable, Hashable {
    /// The path inside the archive, `/`-separated, relative; a directory's ends with `/`.
    public let name: String
    public let method: ZipMethod
    public let compressedSize: Int
    public let uncompressedSize: Int
    /// The CRC-32 the archive gives; `read` checks the bytes against it.
    public let crc32: UInt32
    /// Where the entry's (compressed) bytes start in the archive.
    let dataOffset: Int

    /// Whether the entry is a directory (its name ends with `/`).
    public var isDirectory: Bool { name.hasSuffix("/") }
}

/// Why a zip archive, or one of its entries, was refused.
public enum ZipError: Error, Sendable, Hashable, CustomStringConvertible {
    /// The archive is larger than `maxArchiveBytes`.
    case archiveTooLarge(bytes: Int, limit: Int)
    /// No end of central directory record: not a zip file, or a truncated one.
    case notZip
    /// A zip64 archive (over 4 GiB or 65,535 entries), which this reader does not read.
    case zip64Unsupported
    /// An archive split over several disks.
    case multiDiskUnsupported
    /// A record that does not fit where its header says, or lacks its signature: what was wrong.
    case malformed(String)
    /// More entries than `maxEntries`.
    case tooManyEntries(count: Int, limit: Int)
    /// An entry name that is not UTF-8, too long, absolute, has a `..`, `.` or empty component,
    /// a backslash or a NUL: the name as far as it could be read, and why.
    case unsafeName(String, reason: String)
    /// Two entries with the same name.
    case duplicateName(String)
    /// An encrypted entry.
    case encrypted(String)
    /// An entry compressed by a method other than stored (0) and deflated (8): its name and the method's.
    case unsupportedMethod(String, method: String)
    /// An entry larger, uncompressed, than `maxEntryBytes`.
    case entryTooLarge(String, bytes: Int, limit: Int)
    /// Entries together larger, uncompressed, than `maxTotalBytes`.
    case totalTooLarge(bytes: Int, limit: Int)
    /// An entry that claims to expand more than `maxCompressionRatio` times.
    case compressionRatioTooHigh(String, compressed: Int, uncompressed: Int, limit: Int)
    /// Two entries whose bytes overlap in the archive (the overlapping-files zip bomb).
    case overlappingEntries(String, String)
    /// An entry whose bytes differ from the sizes its header declares.
    case sizeMismatch(String)
    /// An entry whose local header disagrees with its central directory record: what differs.
    case localHeaderMismatch(String, field: String)
    /// An entry whose bytes do not have the CRC-32 the archive gives.
    case crcMismatch(String, expected: UInt32, actual: UInt32)
    /// An entry's deflated bytes could not be decoded.
    case inflate(String, InflateError)
    /// `read` was given an entry that is not this archive's.
    case notAnEntry(String)

    public var description: String {
        switch self {
        case .archiveTooLarge(let bytes, let limit): "the zip archive has \(bytes) bytes, over the limit of \(limit)"
        case .notZip: "not a zip archive (no end of central directory record), or a truncated one"
        case .zip64Unsupported: "a zip64 archive, which is not read; make a plain zip (under 4 GiB and 65,535 entries)"
        case .multiDiskUnsupported: "a zip archive split over several disks"
        case .malformed(let what): "a malformed zip archive: \(what)"
        case .tooManyEntries(let count, let limit): "the zip archive has \(count) entries, over the limit of \(limit)"
        case .unsafeName(let name, let reason): "zip entry name \(name.debugDescription) refused: \(reason)"
        case .duplicateName(let name): "zip entry \(name.debugDescription) appears twice"
        case .encrypted(let name): "zip entry \(name.debugDescription) is encrypted"
        case .unsupportedMethod(let name, let method): "zip entry \(name.debugDescription) is compressed with \(method); only stored and deflated are read"
        case .entryTooLarge(let name, let bytes, let limit): "zip entry \(name.debugDescription) has \(bytes) bytes, over the limit of \(limit)"
        case .totalTooLarge(let bytes, let limit): "the zip entries have \(bytes) bytes together, over the limit of \(limit)"
        case .compressionRatioTooHigh(let name, let compressed, let uncompressed, let limit):
            "zip entry \(name.debugDescription) expands \(compressed) bytes to \(uncompressed), more than \(limit) times"
        case .overlappingEntries(let first, let second): "zip entries \(first.debugDescription) and \(second.debugDescription) overlap"
        case .sizeMismatch(let name): "zip entry \(name.debugDescription) does not have the size its header declares"
        case .localHeaderMismatch(let name, let field): "zip entry \(name.debugDescription): the local header's \(field) differs from the central directory's"
        case .crcMismatch(let name, let expected, let actual):
            "zip entry \(name.debugDescription) is corrupt: CRC-32 \(String(actual, radix: 16)), expected \(String(expected, radix: 16))"
        case .inflate(let name, let error): "zip entry \(name.debugDescription) is corrupt: \(error)"
        case .notAnEntry(let name): "\(name.debugDescription) is not an entry of this zip archive"
        }
    }
}

/// A zip archive in memory, read from its central directory (APPNOTE.TXT 6.3).
///
/// Every entry is checked when the archive is opened: names, sizes and ratio against the
/// limits, encryption and method, and that its local header lies inside the archive before the
/// central directory, agrees with the central record, and overlaps no other entry. `read`
/// inflates one entry, never past its declared size, and checks its CRC-32.
public struct ZipArchive: Sendable {
    /// The entries in central directory order.
    public let entries: [ZipEntry]
    let bytes: [UInt8]
    let byName: [String: Int]

    static let endSignature: UInt32 = 0x0605_4B50
    static let zip64LocatorSignature: UInt32 = 0x0706_4B50
    static let centralSignature: UInt32 = 0x0201_4B50
    static let localSignature: UInt32 = 0x0403_4B50

    public init(bytes data: Data, limits: ZipLimits) throws(ZipError) {
        if data.count > limits.maxArchiveBytes { throw .archiveTooLarge(bytes: data.count, limit: limits.maxArchiveBytes) }
        let bytes = [UInt8](data)
        let reader = ByteReader(bytes: bytes)
        let end = try ZipArchive.endRecord(reader)
        let directoryOffset = end.directoryOffset
        let directorySize = end.directorySize
        if end.entryCount > limits.maxEntries { throw .tooManyEntries(count: end.entryCount, limit: limits.maxEntries) }
        guard directoryOffset <= end.offset, directorySize <= end.offset - directoryOffset else {
            throw .malformed("the central directory lies outside the archive")
        }

        var entries: [ZipEntry] = []
        var byName: [String: Int] = [:]
        var spans: [(start: Int, end: Int, name: String)] = []
        entries.reserveCapacity(end.entryCount)
        var total = 0
        var position = directoryOffset
        let directoryEnd = directoryOffset + directorySize
        for _ in 0..<end.entryCount {
            guard directoryEnd - position >= 46, reader.u32(position) == ZipArchive.centralSignature else {
                throw .malformed("central directory record \(entries.count + 1) is missing or cut short")
            }
            let flags = reader.u16(position + 8)
            let methodCode = reader.u16(position + 10)
            let crc = reader.u32(position + 16)
            let compressed = Int(reader.u32(position + 20))
            let uncompressed = Int(reader.u32(position + 24))
            let nameLength = Int(reader.u16(position + 28))
            let extraLength = Int(reader.u16(position + 30))
            let commentLength = Int(reader.u16(position + 32))
            let disk = reader.u16(position + 34)
            let localOffset = Int(reader.u32(position + 42))
            let recordLength = 46 + nameLength + extraLength + commentLength
            guard directoryEnd - position >= recordLength else {
                throw .malformed("central directory record \(entries.count + 1) runs past the directory")
            }
            let name = try ZipArchive.checkedName(bytes[(position + 46)..<(position + 46 + nameLength)], limit: limits.maxNameBytes)
            position += recordLength

            if compressed == 0xFFFF_FFFF || uncompressed == 0xFFFF_FFFF || localOffset == 0xFFFF_FFFF || disk == 0xFFFF {
                throw .zip64Unsupported
            }
            if disk != 0 { throw .multiDiskUnsupported }
            if byName[name] != nil { throw .duplicateName(name) }
            // Bit 0: traditional encryption; bit 6: strong encryption; bit 13: encrypted directory.
            if flags & 0x2041 != 0 { throw .encrypted(name) }
            guard let method = ZipMethod(rawValue: methodCode) else {
                throw .unsupportedMethod(name, method: ZipArchive.methodName(methodCode))
            }
            if uncompressed > limits.maxEntryBytes { throw .entryTooLarge(name, bytes: uncompressed, limit: limits.maxEntryBytes) }
            total += uncompressed
            if total > limits.maxTotalBytes { throw .totalTooLarge(bytes: total, limit: limits.maxTotalBytes) }
            if method == .stored, compressed != uncompressed { throw .sizeMismatch(name) }
            let (ratioBound, overflow) = max(compressed, 1).multipliedReportingOverflow(by: limits.maxCompressionRatio)
            if uncompressed > limits.ratioCheckedAbove, !overflow, uncompressed > ratioBound {
                throw .compressionRatioTooHigh(name, compressed: compressed, uncompressed: uncompressed, limit: limits.maxCompressionRatio)
            }
            if name.hasSuffix("/"), uncompressed != 0 { throw .malformed("directory entry \(name.debugDescription) has contents") }

            // The local header: inside the archive, before the central directory, agreeing with it.
            guard localOffset <= directoryOffset, directoryOffset - localOffset >= 30, reader.u32(localOffset) == ZipArchive.localSignature else {
                throw .malformed("the local header of \(name.debugDescription) is missing or outside the archive")
            }
            let localNameLength = Int(reader.u16(localOffset + 26))
            let localExtraLength = Int(reader.u16(localOffset + 28))
            let dataOffset = localOffset + 30 + localNameLength + localExtraLength
            guard dataOffset <= directoryOffset, compressed <= directoryOffset - dataOffset else {
                throw .malformed("the bytes of \(name.debugDescription) run past the start of the central directory")
            }
            if bytes[(localOffset + 30)..<(localOffset + 30 + localNameLength)] != bytes[(position - recordLength + 46)..<(position - recordLength + 46 + nameLength)] {
                throw .localHeaderMismatch(name, field: "name")
            }
            if reader.u16(localOffset + 8) != methodCode { throw .localHeaderMismatch(name, field: "method") }
            if reader.u16(localOffset + 6) & 0x2041 != 0 { throw .encrypted(name) }

            byName[name] = entries.count
            entries.append(
                ZipEntry(
                    name: name, method: method, compressedSize: compressed, uncompressedSize: uncompressed,
                    crc32: crc, dataOffset: dataOffset))
            spans.append((localOffset, dataOffset + compressed, name))
        }
        spans.sort { $0.start < $1.start }
        for (earlier, later) in zip(spans, spans.dropFirst()) where later.start < earlier.end {
            throw .overlappingEntries(earlier.name, later.name)
        }
        self.entries = entries
        self.bytes = bytes
        self.byName = byName
    }

    /// The entry called `name`, if there is one.
    public func entry(named name: String) -> ZipEntry? {
        byName[name].map { entries[$0] }
    }

    /// The uncompressed bytes of `entry`, checked against its size and CRC-32.
    public func read(_ entry: ZipEntry) throws(ZipError) -> Data {
        guard let index = byName[entry.name], entries[index] == entry else { throw .notAnEntry(entry.name) }
        let range = entry.dataOffset..<(entry.dataOffset + entry.compressedSize)
        let result: Result<[UInt8], ZipError> = bytes.withUnsafeBufferPointer { archive in
            let slice = UnsafeBufferPointer(rebasing: archive[range])
            switch entry.method {
            case .stored: return .success(Array(slice))
            case .deflated:
                do throws(InflateError) {
                    return .success(try Inflate.decompress(slice, maxOutputBytes: entry.uncompressedSize, sizeHint: entry.uncompressedSize))
                } catch .trailingBytes {
                    return .failure(.sizeMismatch(entry.name))
                } catch {
                    return .failure(.inflate(entry.name, error))
                }
            }
        }
        let contents = try result.get()
        if contents.count != entry.uncompressedSize { throw .sizeMismatch(entry.name) }
        let crc = CRC32.checksum(contents)
        if crc != entry.crc32 { throw .crcMismatch(entry.name, expected: entry.crc32, actual: crc) }
        return Data(contents)
    }

    /// The end of central directory record's fields that matter here.
    struct EndRecord {
        var offset: Int
        var entryCount: Int
        var directorySize: Int
        var directoryOffset: Int
    }

    /// The end of central directory record: the last one whose comment ends the archive.
    static func endRecord(_ reader: ByteReader) throws(ZipError) -> EndRecord {
        let count = reader.bytes.count
        guard count >= 22 else { throw .notZip }
        var offset = count - 22
        let lowest = max(0, count - 22 - 0xFFFF)
        while offset >= lowest {
            if reader.u32(offset) == endSignature, offset + 22 + Int(reader.u16(offset + 20)) == count { break }
            offset -= 1
        }
        guard offset >= lowest else { throw .notZip }
        if offset >= 20, reader.u32(offset - 20) == zip64LocatorSignature { throw .zip64Unsupported }
        let disk = reader.u16(offset + 4)
        let directoryDisk = reader.u16(offset + 6)
        let diskEntries = reader.u16(offset + 8)
        let entries = reader.u16(offset + 10)
        let size = reader.u32(offset + 12)
        let start = reader.u32(offset + 16)
        if entries == 0xFFFF || size == 0xFFFF_FFFF || start == 0xFFFF_FFFF { throw .zip64Unsupported }
        if disk != 0 || directoryDisk != 0 || diskEntries != entries { throw .multiDiskUnsupported }
        return EndRecord(offset: offset, entryCount: Int(entries), directorySize: Int(size), directoryOffset: Int(start))
    }

    /// `raw` as a name that is safe to use as a relative path, or why it is not.
    static func checkedName(_ raw: ArraySlice<UInt8>, limit: Int) throws(ZipError) -> String {
        let shown = String(decoding: raw.prefix(min(limit, 256)), as: UTF8.self)
        if raw.count > limit { throw .unsafeName(shown, reason: "\(raw.count) bytes, over the limit of \(limit)") }
        guard let name = String(validating: raw, as: UTF8.self) else { throw .unsafeName(shown, reason: "not UTF-8") }
        if raw.isEmpty { throw .unsafeName(name, reason: "empty") }
        if raw.contains(0) { throw .unsafeName(name, reason: "a NUL byte") }
        if raw.contains(UInt8(ascii: "\\")) { throw .unsafeName(name, reason: "a backslash") }
        if raw.first == UInt8(ascii: "/") { throw .unsafeName(name, reason: "an absolute path") }
        if raw.count >= 2, raw[raw.startIndex + 1] == UInt8(ascii: ":") { throw .unsafeName(name, reason: "a drive letter") }
        var components = name.split(separator: "/", omittingEmptySubsequences: false)
        if name.hasSuffix("/") { components.removeLast() }
        for component in components {
            if component == ".." { throw .unsafeName(name, reason: "a '..' component") }
            if component == "." { throw .unsafeName(name, reason: "a '.' component") }
            if component.isEmpty { throw .unsafeName(name, reason: "an empty component") }
        }
        return name
    }

    /// The APPNOTE's name of a compression method, with its number.
    static func methodName(_ code: UInt16) -> String {
        let names: [UInt16: String] = [
            1: "shrink", 2: "reduce", 3: "reduce", 4: "reduce", 5: "reduce", 6: "implode",
            9: "deflate64", 10: "PKWARE DCL implode", 12: "bzip2", 14: "LZMA", 18: "IBM TERSE",
            19: "IBM LZ77", 93: "Zstandard", 94: "MP3", 95: "XZ", 96: "JPEG", 97: "WavPack", 98: "PPMd",
            99: "AE-x encryption",
        ]
        return "\(names[code] ?? "an unknown method") (method \(code))"
    }
}

/// Little-endian fields of a byte array; reads outside it give 0, which no signature or
/// bound check accepts (callers check ranges before trusting lengths).
struct ByteReader {
    let bytes: [UInt8]

    func u16(_ offset: Int) -> UInt16 {
        guard offset >= 0, offset <= bytes.count - 2 else { return 0 }
        return UInt16(bytes[offset]) | UInt16(bytes[offset + 1]) << 8
    }

    func u32(_ offset: Int) -> UInt32 {
        guard offset >= 0, offset <= bytes.count - 4 else { return 0 }
        return UInt32(bytes[offset]) | UInt32(bytes[offset + 1]) << 8 | UInt32(bytes[offset + 2]) << 16 | UInt32(bytes[offset + 3]) << 24
    }
}
