import ContentImport
import Foundation
import Testing
import TestSupport

@Suite struct ZipArchiveTests {
    func open(_ bytes: [UInt8], _ limits: ZipLimits = roomyZipLimits) throws(ZipError) -> ZipArchive {
        try ZipArchive(bytes: Data(bytes), limits: limits)
    }

    /// Python's zipfile: stored, deflated at levels 1 and 9, empty files, a directory, an
    /// archive comment, 3,000 entries, UTF-8 names.
    @Test(.enabled(if: ZipFixtures.pythonPresent)) func readsWhatPythonWrites() throws {
        let (folder, manifest) = try ZipFixtures.get()
        #expect(manifest.zips.count == 7)
        for (name, listed) in manifest.zips {
            let archive = try open(try ZipFixtures.bytes("zips/\(name).zip"))
            #expect(archive.entries.map(\.name) == listed.map { $0[0] }, "\(name)")
            for (entry, item) in zip(archive.entries, listed) {
                #expect(entry.method == (name.contains("stored") || item[1].isEmpty ? .stored : .deflated), "\(name)/\(entry.name)")
                let expected = item[1].isEmpty ? Data() : try Data(contentsOf: folder.appendingPathComponent("contents/\(item[1])"))
                #expect(entry.isDirectory == item[1].isEmpty)
                #expect(entry.uncompressedSize == expected.count)
                #expect(try archive.read(entry) == expected, "\(name)/\(entry.name)")
                #expect(archive.entry(named: entry.name) == entry)
            }
        }
        let utf8 = try open(try ZipFixtures.bytes("zips/utf8.zip"))
        #expect(utf8.entry(named: "Сидней/опера.jpg")?.uncompressedSize == 2_000)
        #expect(utf8.entry(named: "bus-🚌.txt")?.uncompressedSize == 0)
    }

    @Test func readsAHandMadeArchive() throws {
        let stream = BitWriter.bomb(matches: 3)
        let original = [UInt8](repeating: 65, count: 1 + 3 * 258)
        let archive = try open(TestZip(entries: [.stored("a.txt", Array("hello".utf8)), .deflated("b/c.txt", stream, original: original)]).bytes)
        #expect(archive.entries.map(\.name) == ["a.txt", "b/c.txt"])
        #expect(archive.entries.map(\.method) == [.stored, .deflated])
        #expect(try archive.read(archive.entries[0]) == Data("hello".utf8))
        #expect(try archive.read(archive.entries[1]) == Data(original))
        #expect(try open(TestZip(entries: []).bytes).entries.isEmpty)
    }

    /// 42.zip-style: a few kB whose entries would expand to many MB. With honest headers the
    /// declared sizes are refused before any inflating; with lying ones the inflater stops at the
    /// declared size.
    @Test func zipBombsAreRefused() throws {
        let stream = BitWriter.bomb(matches: 40_000) // 10 MB from 65 kB
        let original = [UInt8](repeating: 65, count: 1 + 40_000 * 258)
        let limits = ZipLimits(maxArchiveBytes: 1 << 20, maxEntryBytes: 4 << 20, maxTotalBytes: 16 << 20, maxCompressionRatio: 1_000)
        let honest = TestZip(entries: [.deflated("bomb.txt", stream, original: original)]).bytes
        #expect(zipError { try open(honest, limits) } == .entryTooLarge("bomb.txt", bytes: original.count, limit: 4 << 20))

        // Each entry under the entry limit, together over the total.
        let quarter = BitWriter.bomb(matches: 10_000), quarterOriginal = [UInt8](repeating: 65, count: 1 + 10_000 * 258)
        let many = TestZip(entries: (0..<8).map { .deflated("part\($0).txt", quarter, original: quarterOriginal) }).bytes
        #expect(many.count < 150_000)
        #expect(zipError { try open(many, limits) } == .totalTooLarge(bytes: 7 * quarterOriginal.count, limit: 16 << 20))

        // Under the size limits, but expanding 158 times with the ratio limit at 100.
        let ratioLimits = ZipLimits(maxArchiveBytes: 1 << 20, maxEntryBytes: 16 << 20, maxTotalBytes: 16 << 20, maxCompressionRatio: 100)
        let one = TestZip(entries: [.deflated("part.txt", quarter, original: quarterOriginal)]).bytes
        #expect(zipError { try open(one, ratioLimits) } == .compressionRatioTooHigh("part.txt", compressed: quarter.count, uncompressed: quarterOriginal.count, limit: 100))
        // Small entries are exempt from the ratio.
        let smallBomb = BitWriter.bomb(matches: 300), smallOriginal = [UInt8](repeating: 65, count: 1 + 300 * 258)
        let small = try open(TestZip(entries: [.deflated("s.txt", smallBomb, original: smallOriginal)]).bytes, ratioLimits)
        #expect(try small.read(small.entries[0]) == Data(smallOriginal))

        // A header lying small: the inflater stops at the declared 1,000 bytes.
        var liar = TestZip.Entry.deflated("bomb.txt", stream, original: original)
        liar.uncompressedSize = 1_000
        let lying = try open(TestZip(entries: [liar]).bytes, limits)
        #expect(zipError { try lying.read(lying.entries[0]) } == .inflate("bomb.txt", .outputLimitExceeded(limit: 1_000)))
        // Lying large: the output is short of it.
        var short = TestZip.Entry.deflated("short.txt", BitWriter.bomb(matches: 2), original: [UInt8](repeating: 65, count: 517))
        short.uncompressedSize = 600
        let shortArchive = try open(TestZip(entries: [short]).bytes, limits)
        #expect(zipError { try shortArchive.read(shortArchive.entries[0]) } == .sizeMismatch("short.txt"))
        // A compressed size that leaves bytes after the stream.
        let padded = TestZip.Entry.deflated("padded.txt", BitWriter.bomb(matches: 2) + [0, 0], original: [UInt8](repeating: 65, count: 517))
        let paddedArchive = try open(TestZip(entries: [padded]).bytes, limits)
        #expect(zipError { try paddedArchive.read(paddedArchive.entries[0]) } == .sizeMismatch("padded.txt"))
        // A stored entry whose sizes differ.
        var stored = TestZip.Entry.stored("s.bin", [1, 2, 3])
        stored.uncompressedSize = 300
        #expect(zipError { try open(TestZip(entries: [stored]).bytes) } == .sizeMismatch("s.bin"))
    }

    @Test func limitsOnTheArchiveAndItsEntries() throws {
        let archive = TestZip(entries: [.stored("a", [1]), .stored("b", [2])]).bytes
        let tight = ZipLimits(maxArchiveBytes: archive.count - 1, maxEntryBytes: 10, maxTotalBytes: 10)
        #expect(zipError { try open(archive, tight) } == .archiveTooLarge(bytes: archive.count, limit: archive.count - 1))
        let fewEntries = ZipLimits(maxArchiveBytes: 1 << 20, maxEntryBytes: 10, maxTotalBytes: 10, maxEntries: 1)
        #expect(zipError { try open(archive, fewEntries) } == .tooManyEntries(count: 2, limit: 1))
        // The count is checked from the end record, before the directory is read.
        var claims = TestZip(entries: [.stored("a", [1])])
        claims.declaredCount = 10_001
        #expect(zipError { try open(claims.bytes) } == .tooManyEntries(count: 10_001, limit: 10_000))
        let longName = String(repeating: "n", count: 513)
        #expect(zipError { try open(TestZip(entries: [.stored(longName, [])]).bytes) } == .unsafeName(String(longName.prefix(256)), reason: "513 bytes, over the limit of 512"))
        // Bytes, not characters: 200 three-byte characters are 600 bytes.
        let wide = String(repeating: "東", count: 200)
        #expect(zipError { try open(TestZip(entries: [.stored(wide, [])]).bytes) } == .unsafeName(String(repeating: "東", count: 85) + "\u{FFFD}", reason: "600 bytes, over the limit of 512"))
    }

    @Test func unsafeNamesAreRefused() throws {
        let cases: [([UInt8], String)] = [
            (Array("../evil.xml".utf8), "a '..' component"),
            (Array("maps/../../evil.xml".utf8), "a '..' component"),
            (Array("maps/..".utf8), "a '..' component"),
            (Array("/etc/passwd".utf8), "an absolute path"),
            (Array("C:/Windows/evil".utf8), "a drive letter"),
            (Array("maps\\..\\evil".utf8), "a backslash"),
            (Array("a\u{0}b".utf8), "a NUL byte"),
            ([], "empty"),
            (Array("./a".utf8), "a '.' component"),
            (Array("a//b".utf8), "an empty component"),
            ([0x61, 0xFF, 0x62], "not UTF-8"),
            ([0x61, 0xC0, 0xAF], "not UTF-8"), // overlong "/"
        ]
        for (name, reason) in cases {
            let entry = TestZip.Entry(name: name, payload: [], crc: 0, compressedSize: 0, uncompressedSize: 0)
            let error = zipError { try open(TestZip(entries: [entry]).bytes) }
            guard case .unsafeName(_, let said) = error else {
                Issue.record("\(name): \(String(describing: error))")
                continue
            }
            #expect(said == reason, "\(name)")
        }
        // A directory may end with a slash; a file in it is fine.
        let fine = try open(TestZip(entries: [.stored("maps/", []), .stored("maps/a..b.jpg", [1])]).bytes)
        #expect(fine.entries.map(\.isDirectory) == [true, false])
    }

    @Test func duplicatesEncryptionAndMethodsAreRefusedByName() {
        #expect(zipError { try open(TestZip(entries: [.stored("a.xml", [1]), .stored("a.xml", [2])]).bytes) } == .duplicateName("a.xml"))
        var encrypted = TestZip.Entry.stored("secret.xml", [1])
        encrypted.flags = 1
        #expect(zipError { try open(TestZip(entries: [encrypted]).bytes) } == .encrypted("secret.xml"))
        var bzip2 = TestZip.Entry.stored("b.xml", [1])
        bzip2.method = 12
        #expect(zipError { try open(TestZip(entries: [bzip2]).bytes) } == .unsupportedMethod("b.xml", method: "bzip2 (method 12)"))
        bzip2.method = 93
        #expect(zipError { try open(TestZip(entries: [bzip2]).bytes) }?.description == #"zip entry "b.xml" is compressed with Zstandard (method 93); only stored and deflated are read"#)
        var notADirectory = TestZip.Entry.stored("dir/", [1])
        notADirectory.name = Array("dir/".utf8)
        #expect(zipError { try open(TestZip(entries: [notADirectory]).bytes) } == .malformed(#"directory entry "dir/" has contents"#))
    }

    @Test func badCRCIsRefusedOnRead() throws {
        var entry = TestZip.Entry.stored("a.xml", Array("<content/>".utf8))
        let truth = entry.crc
        entry.crc ^= 1
        let archive = try open(TestZip(entries: [entry]).bytes)
        #expect(zipError { try archive.read(archive.entries[0]) } == .crcMismatch("a.xml", expected: truth ^ 1, actual: truth))
    }

    @Test func localHeadersMustBeInsideAndApart() throws {
        // Entry a claims 10 more bytes than it has, so it reaches into b's local header.
        var a = TestZip.Entry.stored("a", [UInt8](repeating: 1, count: 20))
        a.compressedSize = 30
        a.uncompressedSize = 30
        let b = TestZip.Entry.stored("b", [UInt8](repeating: 2, count: 20))
        #expect(zipError { try open(TestZip(entries: [a, b]).bytes) } == .overlappingEntries("a", "b"))
        // Two central records, one local header: the classic overlapping-files bomb.
        var twin = TestZip.Entry.stored("c", [UInt8](repeating: 3, count: 20))
        twin.localOffset = 0
        #expect(zipError { try open(TestZip(entries: [b, twin]).bytes) } == .localHeaderMismatch("c", field: "name"))
        // An offset past the archive, and one into the central directory.
        var far = TestZip.Entry.stored("far", [1])
        far.localOffset = 1_000_000
        #expect(zipError { try open(TestZip(entries: [far]).bytes) } == .malformed(#"the local header of "far" is missing or outside the archive"#))
        far.localOffset = 34 // where the central directory starts: 30 + "far" + 1 byte
        #expect(zipError { try open(TestZip(entries: [far]).bytes) } == .malformed(#"the local header of "far" is missing or outside the archive"#))
        // A compressed size that runs into the central directory.
        var long = TestZip.Entry.stored("long", [1])
        long.compressedSize = 40
        long.uncompressedSize = 40
        #expect(zipError { try open(TestZip(entries: [long]).bytes) } == .malformed(#"the bytes of "long" run past the start of the central directory"#))
        // A local header with another method.
        let stream = BitWriter.storedStream([7])
        let method = TestZip.Entry.deflated("m", stream, original: [7])
        let good = TestZip(entries: [method]).bytes
        #expect(try open(good).read(open(good).entries[0]) == Data([7]))
        var bytes = good
        bytes[8] = 0 // the local header's method
        #expect(zipError { try open(bytes) } == .localHeaderMismatch("m", field: "method"))
    }

    @Test func zip64AndMultiDiskAreRefused() {
        var bytes = TestZip(entries: [.stored("a", [1])]).bytes
        let end = bytes.count - 22
        var zip64 = bytes
        zip64[end + 8] = 0xFF; zip64[end + 9] = 0xFF; zip64[end + 10] = 0xFF; zip64[end + 11] = 0xFF
        #expect(zipError { try open(zip64) } == .zip64Unsupported)
        let locator = Array(bytes[..<end]) + le32(0x0706_4B50) + [UInt8](repeating: 0, count: 16) + Array(bytes[end...])
        #expect(zipError { try open(locator) } == .zip64Unsupported)
        bytes[end + 4] = 1
        #expect(zipError { try open(bytes) } == .multiDiskUnsupported)
        #expect(zipError { try open(Array("not a zip at all, just some text that is long enough".utf8)) } == .notZip)
    }

    @Test func entriesOfAnotherArchiveAreRefused() throws {
        let one = try open(TestZip(entries: [.stored("a", [1, 2, 3])]).bytes)
        let other = try open(TestZip(entries: [.stored("b", [1]), .stored("a", [9])]).bytes)
        #expect(zipError { try one.read(other.entries[1]) } == .notAnEntry("a"))
    }

    /// Every prefix of an archive is refused (sampled), never misread.
    @Test(.enabled(if: ZipFixtures.pythonPresent)) func truncatedArchivesAreRefused() throws {
        for name in ["small", "small-stored"] {
            let archive = try ZipFixtures.bytes("zips/\(name).zip")
            for length in 0..<archive.count {
                #expect(zipError { try open(Array(archive[..<length])) } != nil)
            }
        }
    }

    /// Random changes of 1 to 4 bytes of a valid archive: each run gives a typed error, or the
    /// entries' true contents (a change in a field no check covers, such as a date).
    @Test(.enabled(if: ZipFixtures.pythonPresent)) func mutatedArchivesGiveErrorsOrTheTruth() throws {
        var random = SplitMix64(seed: 42)
        var counts: [String: Int] = [:]
        for name in ["small", "small-stored"] {
            let valid = try ZipFixtures.bytes("zips/\(name).zip")
            let original = try open(valid)
            let truth = try original.entries.map { try original.read($0) }
            for _ in 0..<1_500 {
                var bytes = valid
                for _ in 0..<Int.random(in: 1...4, using: &random) {
                    bytes[Int.random(in: 0..<bytes.count, using: &random)] ^= UInt8.random(in: 1...255, using: &random)
                }
                do {
                    let archive = try open(bytes)
                    // Fewer only if both counts of the end record changed alike.
                    #expect(archive.entries.count <= truth.count)
                    for (entry, expected) in zip(archive.entries, truth) {
                        do {
                            #expect(try archive.read(entry) == expected)
                            counts["read", default: 0] += 1
                        } catch {
                            counts["entry error", default: 0] += 1
                        }
                    }
                } catch {
                    counts["archive error", default: 0] += 1
                }
            }
        }
        #expect(counts.count == 3, "\(counts)")
    }

    @Test(.enabled(if: ZipFixtures.pythonPresent)) func manyEntriesAgainstTheLimit() throws {
        let bytes = try ZipFixtures.bytes("zips/many.zip")
        #expect(try open(bytes).entries.count == 3_000)
        let limits = ZipLimits(maxArchiveBytes: 1 << 24, maxEntryBytes: 1 << 20, maxTotalBytes: 1 << 24, maxEntries: 2_999)
        #expect(zipError { try open(bytes, limits) } == .tooManyEntries(count: 3_000, limit: 2_999))
    }
}
