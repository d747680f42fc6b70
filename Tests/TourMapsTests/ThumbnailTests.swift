import Foundation
import Testing
@testable import TourMaps

/// Profile photos' squares: the decode at libjpeg-turbo's fast scales and the centred,
/// filtered resampling.
@Suite struct ThumbnailTests {
    @Test func theSquareIsTheMiddleOfTheImage() throws {
        // Red grows left to right over 300 columns: the square is columns 100 to 199.
        let image = try #require(RGBImage(width: 300, height: 100, pixels: TestImages.gradientPixels(width: 300, height: 100)))
        let square = image.centreSquare(side: 50)
        #expect(square.width == 50 && square.height == 50)
        let left = Int(square.color(x: 0, y: 25).red), right = Int(square.color(x: 49, y: 25).red)
        #expect(abs(left - 100 * 255 / 299) <= 3, "\(left)")
        #expect(abs(right - 199 * 255 / 299) <= 3, "\(right)")
        // A tall image: the middle rows (green grows downwards).
        let tall = try #require(RGBImage(width: 100, height: 300, pixels: TestImages.gradientPixels(width: 100, height: 300)))
        #expect(abs(Int(tall.centreSquare(side: 50).color(x: 25, y: 0).green) - 100 * 255 / 299) <= 3)
    }

    /// One-pixel black and white stripes shrunk 8 times: every pixel is the grey mean. Taking
    /// the nearest pixel instead would give black or white (it aliases).
    @Test func shrinkingAveragesRatherThanPicksPixels() throws {
        var pixels = [UInt8](repeating: 0, count: 512 * 512 * 3)
        for y in 0..<512 { for x in stride(from: 1, to: 512, by: 2) { for c in 0..<3 { pixels[(y * 512 + x) * 3 + c] = 255 } } }
        let square = try #require(RGBImage(width: 512, height: 512, pixels: pixels)).centreSquare(side: 64)
        for x in 0..<64 {
            // The filter is cut at the image's edges, so the first and last columns lean a little.
            #expect(abs(Int(square.color(x: x, y: 32).red) - 128) <= (x == 0 || x == 63 ? 8 : 1), "column \(x): \(square.color(x: x, y: 32))")
        }
    }

    @Test func enlargingInterpolates() throws {
        // 2×2: black, white / black, white, enlarged to 8×8: grey steps between, not two blocks.
        let image = try #require(RGBImage(width: 2, height: 2, pixels: [0, 0, 0, 255, 255, 255, 0, 0, 0, 255, 255, 255]))
        let square = image.centreSquare(side: 8)
        let row = (0..<8).map { Int(square.color(x: $0, y: 4).red) }
        #expect(row.first == 0 && row.last == 255)
        #expect(Set(row).count >= 5, "\(row)")
        #expect(row == row.sorted())
    }

    @Test func decodingPicksTheSmallestScaleThatKeepsTheSide() throws {
        let wide = try TestImages.gradientJPEG(width: 2000, height: 1200)
        // 1/2 keeps 600 rows (1/4 would leave 300).
        let half = try JPEGImage.decode(wide, minimumSide: 512)
        #expect(half.width == 1000 && half.height == 600)
        let eighth = try JPEGImage.decode(wide, minimumSide: 96)
        #expect(eighth.width == 250 && eighth.height == 150)
        // Smaller than asked: full size, never enlarged.
        let small = try JPEGImage.decode(try TestImages.gradientJPEG(width: 300, height: 200), minimumSide: 512)
        #expect(small.width == 300 && small.height == 200)
        // The checks are check's: a CMYK file is refused by name.
        let cmyk = try [UInt8](repeating: 40, count: 32 * 32 * 4).withUnsafeBufferPointer { buffer in
            try TurboJPEGEncoder().encode(buffer, offset: 0, width: 32, rowBytes: 128, height: 32, quality: 90, subsampling: 0, cmyk: true)
        }
        #expect(throws: JPEGError.cmyk) { try JPEGImage.decode(cmyk, minimumSide: 512) }
        #expect(JPEGError.cmyk.description(of: "the photo") == "the photo is a CMYK JPEG (made for print): save it as RGB")
        #expect(JPEGError.cmyk.description == "the map image is a CMYK JPEG (made for print): save it as RGB")
    }
}

/// Place photos' sizes (`fitted`) and the demo's drawings (`PlaceDrawing`).
@Suite struct FittedPhotoTests {
    @Test func theWholeImageIsFittedWithItsShapeAndNeverEnlarged() throws {
        let image = try #require(RGBImage(width: 300, height: 100, pixels: TestImages.gradientPixels(width: 300, height: 100)))
        let fitted = image.fitted(longest: 150)
        #expect(fitted.width == 150 && fitted.height == 50)
        // The whole width, not a crop: the ends keep the gradient's ends.
        #expect(Int(fitted.color(x: 0, y: 25).red) <= 4 && Int(fitted.color(x: 149, y: 25).red) >= 251)
        let small = image.fitted(longest: 1280)
        #expect(small.width == 300 && small.height == 100)
    }

    @Test func aJPEGIsDecodedOnceAtAFastScaleAndFittedToEachSize() throws {
        let jpeg = try #require(RGBImage(width: 2400, height: 1600, pixels: TestImages.gradientPixels(width: 2400, height: 1600))).jpeg(quality: 90)
        let versions = try JPEGImage.fitted(of: jpeg, longest: [1280, 320], quality: 85)
        #expect(versions.map { "\($0.width)x\($0.height)" } == ["1280x853", "320x213"])
        for version in versions {
            let checked = try JPEGImage.check(version.jpeg)
            #expect(checked.width == version.width && checked.height == version.height)
        }
        // A panorama past the limits' ratio is refused.
        let strip = try #require(RGBImage(width: 900, height: 100, pixels: TestImages.gradientPixels(width: 900, height: 100))).jpeg()
        #expect(throws: JPEGError.self) { try JPEGImage.fitted(of: strip, limits: JPEGLimits(maxAspectRatio: 8), longest: [320], quality: 85) }
    }

    @Test func aDrawingIsTheSameForTheSameSeedAndDiffersByKind() throws {
        let opera = try PlaceDrawing.jpeg(category: "attraction", seed: "syd-001", width: 320, height: 200)
        #expect(try PlaceDrawing.jpeg(category: "attraction", seed: "syd-001", width: 320, height: 200) == opera)
        let kinds = try ["attraction", "beach", "park", "viewpoint", "bar"].map { try PlaceDrawing.jpeg(category: $0, seed: "syd-001", width: 320, height: 200) }
        #expect(Set(kinds).count == kinds.count)
        for drawing in kinds {
            let checked = try JPEGImage.check(drawing)
            #expect(checked.width == 320 && checked.height == 200)
        }
        // A beach is sand at the bottom and sky at the top; a bar's street stands under a night sky.
        let beach = try JPEGImage.decode(kinds[1])
        #expect(beach.color(x: 160, y: 195).distance(to: RGBColor(red: 236, green: 214, blue: 160)) < 12)
        #expect(beach.color(x: 5, y: 2).blue > 180)
        let bar = try JPEGImage.decode(kinds[4])
        #expect(Int(bar.color(x: 2, y: 2).blue) < 100)
    }
}

/// Exif orientation: a camera's portrait is a landscape image and a tag that turns it.
@Suite struct ExifOrientationTests {
    /// `jpeg` with an Exif block after its SOI whose first IFD holds orientation `value`,
    /// in big-endian (`MM`) or little-endian (`II`) order.
    static func tagged(_ jpeg: Data, orientation value: Int, littleEndian: Bool = false) -> Data {
        func u16(_ n: Int) -> [UInt8] { littleEndian ? [UInt8(n & 0xFF), UInt8(n >> 8)] : [UInt8(n >> 8), UInt8(n & 0xFF)] }
        func u32(_ n: Int) -> [UInt8] { littleEndian ? [UInt8(n & 0xFF), 0, 0, UInt8(n >> 24)] : [UInt8(n >> 24), 0, 0, UInt8(n & 0xFF)] }
        let tiff: [UInt8] = (littleEndian ? [0x49, 0x49] : [0x4D, 0x4D]) + u16(42) + u32(8) + u16(1) + u16(0x0112) + u16(3) + u32(1) + u16(value) + [0, 0] + u32(0)
        let payload = Array("Exif\0\0".utf8) + tiff
        let segment: [UInt8] = [0xFF, 0xE1] + [UInt8((payload.count + 2) >> 8), UInt8((payload.count + 2) & 0xFF)] + payload
        return Data(jpeg.prefix(2)) + Data(segment) + Data(jpeg.dropFirst(2))
    }

    @Test func theTagIsReadInEitherByteOrder() throws {
        let jpeg = try #require(RGBImage(width: 40, height: 20, pixels: TestImages.gradientPixels(width: 40, height: 20))).jpeg()
        #expect(JPEGImage.exifOrientation(jpeg) == 1)
        for value in 1...8 {
            #expect(JPEGImage.exifOrientation(Self.tagged(jpeg, orientation: value)) == value)
            #expect(JPEGImage.exifOrientation(Self.tagged(jpeg, orientation: value, littleEndian: true)) == value)
        }
        #expect(JPEGImage.exifOrientation(Self.tagged(jpeg, orientation: 9)) == 1, "not an orientation")
    }

    @Test func eachOrientationPutsTheFirstRowOnTop() throws {
        // 3×2: a, b, c / d, e, f, each pixel's red its letter.
        let image = try #require(RGBImage(width: 3, height: 2, pixels: (1...6).flatMap { [UInt8($0), 0, 0] }))
        func rows(_ oriented: RGBImage) -> [[Int]] {
            (0..<oriented.height).map { y in (0..<oriented.width).map { Int(oriented.color(x: $0, y: y).red) } }
        }
        #expect(rows(image.oriented(1)) == [[1, 2, 3], [4, 5, 6]])
        #expect(rows(image.oriented(2)) == [[3, 2, 1], [6, 5, 4]])
        #expect(rows(image.oriented(3)) == [[6, 5, 4], [3, 2, 1]])
        #expect(rows(image.oriented(4)) == [[4, 5, 6], [1, 2, 3]])
        #expect(rows(image.oriented(5)) == [[1, 4], [2, 5], [3, 6]])
        #expect(rows(image.oriented(6)) == [[4, 1], [5, 2], [6, 3]], "a quarter turn clockwise")
        #expect(rows(image.oriented(7)) == [[6, 3], [5, 2], [4, 1]])
        #expect(rows(image.oriented(8)) == [[3, 6], [2, 5], [1, 4]], "a quarter turn anticlockwise")
    }

    @Test func aTurnedPhotoIsKeptUpright() throws {
        let landscape = try #require(RGBImage(width: 2000, height: 1500, pixels: TestImages.gradientPixels(width: 2000, height: 1500))).jpeg(quality: 90)
        let versions = try JPEGImage.fitted(of: Self.tagged(landscape, orientation: 6), longest: [1280, 320], quality: 85)
        #expect(versions.map { "\($0.width)x\($0.height)" } == ["960x1280", "240x320"])
        let squares = try JPEGImage.squares(of: Self.tagged(landscape, orientation: 8), sides: [96], quality: 85)
        #expect(try JPEGImage.check(try #require(squares.first)).width == 96)
    }

    /// A long strip whose 1/8 scale would leave its longer side a few pixels short of 1280.
    @Test func theLargeSizeIsFullAtAnyShape() throws {
        let strip = try #require(RGBImage(width: 10184, height: 1273, pixels: [UInt8](repeating: 90, count: 10184 * 1273 * 3))).jpeg()
        let versions = try JPEGImage.fitted(of: strip, longest: [1280, 320], quality: 85)
        #expect(versions.map { "\($0.width)x\($0.height)" } == ["1280x160", "320x40"])
    }
}

/// The frame header and the scans are found however the file is padded, as libjpeg skips it:
/// garbage bytes, FF fill and FF 00 pairs before a marker, and segments past the first MiB.
@Suite struct PaddedJPEGTests {
    static func padded(_ jpeg: Data, with padding: [UInt8]) -> Data { Data(jpeg.prefix(2)) + Data(padding) + Data(jpeg.dropFirst(2)) }

    @Test func paddingHidesNeitherTheFrameNorTheScans() throws {
        let image = try #require(RGBImage(width: 64, height: 48, pixels: TestImages.gradientPixels(width: 64, height: 48)))
        let progressive = try image.jpeg(progressive: true)
        let scans = JPEGImage.scanCount(progressive)
        #expect(scans > 1)
        // A comment of 64 KiB, twenty times: 1.3 MB before the frame header.
        let comment: [UInt8] = [0xFF, 0xFE, 0xFF, 0xFF] + [UInt8](repeating: 0x41, count: 65_533)
        let paddings: [(String, [UInt8])] = [
            ("FF 00 pairs", [UInt8](repeating: 0, count: 2_000).enumerated().map { $0.offset % 2 == 0 ? 0xFF : 0x00 }),
            ("garbage", [0x00, 0x12, 0xFF, 0x00, 0x34]),
            ("fill", [UInt8](repeating: 0xFF, count: 1_000)),
            ("comments past 1 MiB", Array((0..<20).map { _ in comment }.joined())),
        ]
        for (name, padding) in paddings {
            let file = Self.padded(progressive, with: padding)
            #expect(JPEGImage.scanCount(file) == scans, "\(name)")
            let frame = JPEGImage.frameHeader(file)
            #expect(frame?.width == 64 && frame?.height == 48 && frame?.progressive == true, "\(name)")
            // So the progressive bound holds before anything is decoded (libjpeg-turbo's header read
            // refuses extraneous bytes itself, and garbage first fails the signature).
            let refusal = #expect(throws: JPEGError.self, "\(name)") { try JPEGImage.check(file, limits: JPEGLimits(maxProgressivePixels: 1_000)) }
            if name == "fill" || name.hasPrefix("comments") {
                #expect(refusal == .tooManyProgressivePixels(width: 64, height: 48, limit: 1_000), "\(name)")
            }
        }
        // The Exif block is found behind padding too.
        let tagged = ExifOrientationTests.tagged(try image.jpeg(), orientation: 6)
        #expect(JPEGImage.exifOrientation(Self.padded(tagged, with: [0xFF, 0x00, 0xFF, 0xFF])) == 6)
    }
}
