import Foundation
import TourMaps

/// `tourbus-bench maps`: how long a tour map of the largest accepted size takes to check and to
/// cut into its tile pyramid, and the memory it takes, on a generated image.
///
///   tourbus-bench maps [--width 8000] [--height 5000] [--quality 90] [--noise 24]
///
/// The image is a map-like drawing (a gradient, a grid of lines every 40 pixels) with seeded
/// noise of ±`--noise` per channel, so that its JPEG has about as much detail to decode as a
/// scanned map (`--noise 0` gives a flat drawing, the cheapest case). Prints one line of
/// `key=value` pairs; peak RSS is measured from after the image was made and compressed.
enum MapsCommand {
    static func run(_ arguments: [String]) -> Never {
        func value(_ name: String, _ fallback: Int) -> Int { option(arguments, name, fallback) }
        let width = value("--width", 8000)
        let height = value("--height", 5000)
        let quality = value("--quality", 90)
        let noise = max(0, min(127, value("--noise", 24)))
        do {
            let started = Date()
            let jpeg = try generatedJPEG(width: width, height: height, quality: quality, noise: noise)
            let made = Date().timeIntervalSince(started)
            // Forget the generator's peak (its pixels are gone): VmHWM from here on is the pipeline's.
            try? "5".write(toFile: "/proc/self/clear_refs", atomically: false, encoding: .utf8)
            let checkStart = Date()
            let checked = try JPEGImage.check(jpeg)
            let checkSeconds = Date().timeIntervalSince(checkStart)
            let decodeStart = Date()
            let pyramid = try TilePyramid(jpeg: jpeg)
            let decodeSeconds = Date().timeIntervalSince(decodeStart)
            let tileStart = Date()
            var tiles = 0
            var tileBytes = 0
            try pyramid.tiles { tile in
                tiles += 1
                tileBytes += tile.jpeg.count
            }
            let tileSeconds = Date().timeIntervalSince(tileStart)
            print(
                "maps width=\(checked.width) height=\(checked.height) megapixels=\(String(format: "%.1f", Double(width * height) / 1e6))"
                    + " jpeg_bytes=\(jpeg.count) make_s=\(fmt(made)) check_s=\(fmt(checkSeconds)) decode_s=\(fmt(decodeSeconds))"
                    + " tiles_s=\(fmt(tileSeconds)) pyramid_s=\(fmt(decodeSeconds + tileSeconds)) levels=\(pyramid.levelCount)"
                    + " tiles=\(tiles) tile_bytes=\(tileBytes) peak_rss_mb=\(peakRSSMegabytes().map(String.init) ?? "?")")
            exit(0)
        } catch {
            FileHandle.standardError.write(Data("tourbus-bench maps: \(error)\n".utf8))
            exit(1)
        }
    }

    /// `tourbus-bench photo`: how long social's commit of a profile photo takes on its largest
    /// accepted file: the check and decode of the JPEG and its two squares (`JPEGImage.squares`,
    /// 512 and 96 px, quality 85), on the same generated image, by default 7300×5470 (39.9
    /// megapixels) at quality 85 with noise 14, about 10 MB (`--save FILE` writes it, to upload it
    /// elsewhere). Prints one `key=value` line.
    ///
    /// `--progressive` makes a progressive 4:4:4 file instead; `--file FILE` reads one instead of
    /// making it. `--aspect N`, `--progressive-pixels N` and `--decoded-pixels N` add social's
    /// bounds of photos (4, 8000000 and 4194304), so the peak RSS can be compared with and
    /// without them (measure a saved file with `--file`, so generating it is not counted).
    ///
    ///   tourbus-bench photo [--width 7300] [--height 5470] [--quality 85] [--noise 14] [--runs 5] [--save FILE]
    ///                       [--progressive] [--file FILE] [--aspect N] [--progressive-pixels N] [--decoded-pixels N]
    static func runPhoto(_ arguments: [String]) -> Never {
        func value(_ name: String, _ fallback: Int) -> Int { option(arguments, name, fallback) }
        func given(_ name: String) -> Int? { arguments.contains(name) ? value(name, 0) : nil }
        let width = value("--width", 7300)
        let height = value("--height", 5470)
        let runs = max(1, value("--runs", 5))
        do {
            let jpeg: Data
            if let i = arguments.firstIndex(of: "--file"), i + 1 < arguments.count {
                jpeg = try Data(contentsOf: URL(fileURLWithPath: arguments[i + 1]))
            } else {
                jpeg = try generatedJPEG(
                    width: width, height: height, quality: value("--quality", 85), noise: max(0, min(127, value("--noise", 14))),
                    progressive: arguments.contains("--progressive"))
            }
            if let i = arguments.firstIndex(of: "--save"), i + 1 < arguments.count { try jpeg.write(to: URL(fileURLWithPath: arguments[i + 1])) }
            let limits = JPEGLimits(
                maxBytes: 10 * 1_024 * 1_024, maxAspectRatio: given("--aspect"), maxProgressivePixels: given("--progressive-pixels"),
                maxDecodedPixels: given("--decoded-pixels"))
            try? "5".write(toFile: "/proc/self/clear_refs", atomically: false, encoding: .utf8)
            var seconds: [Double] = []
            var squareBytes = 0
            for _ in 0..<runs {
                let started = Date()
                let squares: [Data]
                do {
                    squares = try JPEGImage.squares(of: jpeg, limits: limits, sides: [512, 96], quality: 85)
                } catch {
                    print("photo jpeg_bytes=\(jpeg.count) refused=\"\(error.description(of: "the photo"))\" peak_rss_mb=\(peakRSSMegabytes().map(String.init) ?? "?")")
                    exit(0)
                }
                seconds.append(Date().timeIntervalSince(started))
                squareBytes = squares.reduce(0) { $0 + $1.count }
            }
            seconds.sort()
            print(
                (arguments.contains("--file") ? "photo file" : "photo width=\(width) height=\(height) megapixels=\(String(format: "%.1f", Double(width * height) / 1e6))")
                    + " jpeg_bytes=\(jpeg.count)"
                    + " runs=\(runs) squares_s_min=\(fmt(seconds[0])) squares_s_median=\(fmt(seconds[seconds.count / 2]))"
                    + " square_bytes=\(squareBytes) peak_rss_mb=\(peakRSSMegabytes().map(String.init) ?? "?")")
            exit(0)
        } catch {
            FileHandle.standardError.write(Data("tourbus-bench photo: \(error)\n".utf8))
            exit(1)
        }
    }

    /// The integer after `name` in `arguments`, or `fallback`.
    private static func option(_ arguments: [String], _ name: String, _ fallback: Int) -> Int {
        guard let i = arguments.firstIndex(of: name), i + 1 < arguments.count, let v = Int(arguments[i + 1]) else { return fallback }
        return v
    }

    private static func fmt(_ seconds: Double) -> String { String(format: "%.3f", seconds) }

    /// The map-like test image described above, compressed (4:2:0).
    private static func generatedJPEG(width: Int, height: Int, quality: Int, noise: Int, progressive: Bool = false) throws -> Data {
        var pixels = [UInt8](repeating: 0, count: width * height * 3)
        var state: UInt64 = 0x9E37_79B9_7F4A_7C15
        for y in 0..<height {
            for x in 0..<width {
                let offset = (y * width + x) * 3
                let line = x % 40 == 0 || y % 40 == 0
                let base = line ? [90, 90, 110] : [200 + x * 40 / width, 190 + y * 40 / height, 170]
                for channel in 0..<3 {
                    state ^= state << 13
                    state ^= state >> 7
                    state ^= state << 17
                    let jitter = noise == 0 ? 0 : Int(state % UInt64(2 * noise + 1)) - noise
                    pixels[offset + channel] = UInt8(max(0, min(255, base[channel] + jitter)))
                }
            }
        }
        guard let image = RGBImage(width: width, height: height, pixels: pixels) else {
            throw BenchError.badSize(width, height)
        }
        return try image.jpeg(quality: quality, fullColor: progressive, progressive: progressive)
    }

    private enum BenchError: Error { case badSize(Int, Int) }

    /// The process's peak resident set (VmHWM) in MB, from /proc/self/status.
    private static func peakRSSMegabytes() -> Int? {
        guard let status = try? String(contentsOfFile: "/proc/self/status", encoding: .utf8),
            let line = status.split(separator: "\n").first(where: { $0.hasPrefix("VmHWM:") }),
            let kilobytes = line.split(separator: " ").compactMap({ Int($0) }).first
        else { return nil }
        return kilobytes / 1024
    }
}
