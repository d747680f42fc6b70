import ContentImport
import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// `tourbus-bench inflate DIR`: how fast ContentImport's own DEFLATE decoder, CRC-32 and zip
/// reader run, on the streams and archives Tests/ContentImportTests/Scripts/make_zip_fixtures.py
/// wrote into DIR (`bench/inflate` makes them).
///
///   tourbus-bench inflate DIR [--seconds 1]
///
/// Each stream is decoded over and over for `--seconds` of CPU time (not wall time: the
/// machine may be shared) and checked against its raw file. Prints one line of `key=value`
/// pairs per stream and per archive; rates are megabytes (10^6) of output per CPU second.
enum InflateCommand {
    static func run(_ arguments: [String]) -> Never {
        guard let folder = arguments.first.map({ URL(fileURLWithPath: $0) }) else {
            FileHandle.standardError.write(Data("usage: tourbus-bench inflate DIR [--seconds 1]\n".utf8))
            exit(2)
        }
        let seconds = arguments.firstIndex(of: "--seconds").flatMap { $0 + 1 < arguments.count ? Double(arguments[$0 + 1]) : nil } ?? 1
        do {
            let manifest = try JSONSerialization.jsonObject(with: Data(contentsOf: folder.appendingPathComponent("manifest.json"))) as? [String: Any]
            let streams = manifest?["inflate"] as? [String] ?? []
            for name in streams {
                let stream = [UInt8](try Data(contentsOf: folder.appendingPathComponent("inflate/\(name).deflate")))
                let raw = [UInt8](try Data(contentsOf: folder.appendingPathComponent("inflate/\(name).raw")))
                guard try Inflate.decompress(stream, maxOutputBytes: raw.count) == raw else { fail("\(name): wrong output") }
                let inflateRate = try rate(bytes: raw.count, seconds: seconds) { _ = try Inflate.decompress(stream, maxOutputBytes: raw.count) }
                let crcRate = try rate(bytes: raw.count, seconds: seconds) { _ = CRC32.checksum(raw) }
                print("stream=\(name) bytes=\(raw.count) compressed=\(stream.count) inflate_mb_s=\(inflateRate) crc32_mb_s=\(crcRate)")
            }
            let zips = (manifest?["zips"] as? [String: Any])?.keys.sorted() ?? []
            let limits = ZipLimits(maxArchiveBytes: 1 << 30, maxEntryBytes: 1 << 30, maxTotalBytes: 1 << 30)
            for name in zips {
                let bytes = try Data(contentsOf: folder.appendingPathComponent("zips/\(name).zip"))
                let archive = try ZipArchive(bytes: bytes, limits: limits)
                let total = archive.entries.reduce(0) { $0 + $1.uncompressedSize }
                let readRate = try rate(bytes: total, seconds: seconds) {
                    let archive = try ZipArchive(bytes: bytes, limits: limits)
                    for entry in archive.entries { _ = try archive.read(entry) }
                }
                print("zip=\(name) entries=\(archive.entries.count) bytes=\(total) archive_bytes=\(bytes.count) open_and_read_mb_s=\(readRate)")
            }
        } catch {
            fail("\(error)")
        }
        exit(0)
    }

    /// Megabytes per CPU second of running `body` (which handles `bytes`) for about `seconds`.
    static func rate(bytes: Int, seconds: Double, _ body: () throws -> Void) throws -> String {
        let start = cpuSeconds()
        var rounds = 0
        repeat {
            try body()
            rounds += 1
        } while cpuSeconds() - start < seconds
        let spent = cpuSeconds() - start
        return String(format: "%.0f", Double(bytes * rounds) / spent / 1e6)
    }

    /// The process's user and system CPU time so far.
    static func cpuSeconds() -> Double {
        var usage = rusage()
        getrusage(__rusage_who_t(RUSAGE_SELF.rawValue), &usage)
        return Double(usage.ru_utime.tv_sec + usage.ru_stime.tv_sec) + Double(usage.ru_utime.tv_usec + usage.ru_stime.tv_usec) / 1e6
    }
}
