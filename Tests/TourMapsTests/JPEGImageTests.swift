import Foundation
import Testing
@testable import TourMaps

@Suite struct JPEGImageTests {
    @Test func aGoodJPEGGivesItsSize() throws {
        let data = try TestImages.gradientJPEG(width: 300, height: 200)
        let image = try JPEGImage.check(data)
        #expect(image == JPEGImage(width: 300, height: 200, byteCount: data.count))
        let decoded = try JPEGImage.decode(data)
        #expect(decoded.width == 300 && decoded.height == 200 && decoded.pixels.count == 300 * 200 * 3)
        #expect(decoded.color(x: 299, y: 0).distance(to: TestImages.gradientColor(x: 299, y: 0, width: 300, height: 200)) <= 8)
    }

    @Test func anImageNeedsExactlyThreeBytesAPixel() throws {
        #expect(RGBImage(width: 2, height: 3, pixels: [UInt8](repeating: 0, count: 18)) != nil)
        #expect(RGBImage(width: 2, height: 3, pixels: [UInt8](repeating: 0, count: 17)) == nil)
        #expect(RGBImage(width: 3, height: 3, pixels: [UInt8](repeating: 0, count: 18)) == nil)
        #expect(RGBImage(width: 0, height: 3, pixels: []) == nil)
        #expect(RGBImage(width: Int.max, height: 1, pixels: [0, 0, 0]) == nil)
    }

    @Test func noBytesIsEmpty() {
        #expect(throws: JPEGError.empty) { try JPEGImage.check(Data()) }
    }

    @Test func notAJPEGIsRefusedByItsFirstBytes() {
        let png = Data([0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A] + [UInt8](repeating: 0, count: 100))
        #expect(throws: JPEGError.notJPEG) { try JPEGImage.check(png) }
        #expect(throws: JPEGError.notJPEG) { try JPEGImage.check(Data([0xFF, 0xD8])) }
        #expect(throws: JPEGError.notJPEG) { try JPEGImage.check(Data("<svg/>".utf8)) }
    }

    @Test func moreBytesThanTheLimitAreRefusedBeforeDecoding() throws {
        // 30 MiB + 1 of bytes that start like a JPEG: the size alone refuses them.
        let limit = JPEGLimits().maxBytes
        #expect(limit == 30 * 1024 * 1024)
        var big = Data([0xFF, 0xD8, 0xFF, 0xE0])
        big.append(Data(count: limit + 1 - big.count))
        #expect(throws: JPEGError.tooManyBytes(size: limit + 1, limit: limit)) { try JPEGImage.check(big) }
        // The bound is inclusive: a real file at exactly the limit passes, one byte less fails.
        let data = try TestImages.gradientJPEG(width: 64, height: 64)
        #expect(try JPEGImage.check(data, limits: JPEGLimits(maxBytes: data.count)).width == 64)
        #expect(throws: JPEGError.tooManyBytes(size: data.count, limit: data.count - 1)) {
            try JPEGImage.check(data, limits: JPEGLimits(maxBytes: data.count - 1))
        }
    }

    @Test func aHeaderClaiming60000By60000IsRefusedBeforeAnyPixelIsAllocated() throws {
        // 3.6 gigapixels (10.8 GB decoded) in a file of a few kilobytes: the header says so, and
        // the refusal must come from it; decoding first would allocate, then call it corrupt.
        let crafted = try TestImages.withClaimedSize(try TestImages.gradientJPEG(width: 64, height: 64), width: 60000, height: 60000)
        let refusal = JPEGError.tooManyPixels(width: 60000, height: 60000, limit: 40_000_000)
        #expect(throws: refusal) { try JPEGImage.check(crafted) }
        #expect(throws: refusal) { try JPEGImage.decode(crafted) }
        #expect(throws: refusal) { try TilePyramid(jpeg: crafted) }
    }

    /// Print publishers' files: the header says CMYK, which libjpeg-turbo cannot make RGB.
    @Test func aCMYKFileIsRefusedByName() throws {
        let pixels = [UInt8](repeating: 40, count: 32 * 32 * 4)
        let cmyk = try pixels.withUnsafeBufferPointer { buffer in
            try TurboJPEGEncoder().encode(buffer, offset: 0, width: 32, rowBytes: 128, height: 32, quality: 90, subsampling: 0 /* TJSAMP_444 */, cmyk: true)
        }
        #expect(throws: JPEGError.cmyk) { try JPEGImage.check(cmyk) }
        #expect(throws: JPEGError.cmyk) { try JPEGImage.decode(cmyk) }
        // Grey is fine: it decodes to RGB.
        let grey = try TestImages.gradientPixels(width: 32, height: 32).withUnsafeBufferPointer { buffer in
            try TurboJPEGEncoder().encode(buffer, offset: 0, width: 32, rowBytes: 96, height: 32, quality: 90, subsampling: 3 /* TJSAMP_GRAY */)
        }
        #expect(try JPEGImage.decode(grey).pixels.count == 32 * 32 * 3)
    }

    @Test func thePixelLimitIsInclusive() throws {
        let data = try TestImages.gradientJPEG(width: 40, height: 30)
        #expect(try JPEGImage.check(data, limits: JPEGLimits(maxPixels: 1200)).height == 30)
        #expect(throws: JPEGError.tooManyPixels(width: 40, height: 30, limit: 1199)) {
            try JPEGImage.check(data, limits: JPEGLimits(maxPixels: 1199))
        }
    }

    @Test func aZeroHeightOrWidthIsRefused() throws {
        let data = try TestImages.gradientJPEG(width: 64, height: 64)
        #expect(throws: JPEGError.zeroSize(width: 64, height: 0)) {
            try JPEGImage.check(try TestImages.withClaimedSize(data, width: 64, height: 0))
        }
        #expect(throws: JPEGError.zeroSize(width: 0, height: 64)) {
            try JPEGImage.check(try TestImages.withClaimedSize(data, width: 0, height: 64))
        }
    }

    @Test func aTruncatedFileIsRefusedAsCorrupt() throws {
        let data = try TestImages.gradientJPEG(width: 256, height: 256)
        let scan = try #require(TestImages.scanDataOffset(data))
        // Cut in the middle of the scan: the header is whole, the image is not.
        let cut = data.prefix(scan + (data.count - scan) / 2)
        let error = try #require(throws: JPEGError.self) { try JPEGImage.check(cut) }
        guard case .corrupt(let message) = error else { Issue.record("expected corrupt, got \(error)"); return }
        #expect(message.contains("Premature end"))
        #expect(throws: JPEGError.self) { try JPEGImage.decode(cut) }
        // Cut inside the header: it cannot be read at all.
        let headerError = try #require(throws: JPEGError.self) { try JPEGImage.check(data.prefix(scan - 10)) }
        guard case .unreadableHeader = headerError else { Issue.record("expected unreadableHeader, got \(headerError)"); return }
    }

    /// Damage libjpeg can see is refused; the decoder only warns about it and would otherwise
    /// deliver an image with grey blocks. (Random bytes that happen to be valid Huffman codes
    /// decode to wrong pixels and cannot be told apart from a real image.)
    @Test(arguments: ["a run of FF bytes", "zeroed scan start", "end of image mid-scan"])
    func corruptScanDataIsRefused(damage: String) throws {
        let data = try TestImages.gradientJPEG(width: 256, height: 256)
        let scan = try #require(TestImages.scanDataOffset(data))
        var bytes = [UInt8](data)
        let middle = scan + (data.count - scan) / 2
        switch damage {
        case "a run of FF bytes": for index in middle..<(middle + 16) { bytes[index] = 0xFF }
        case "zeroed scan start": for index in scan..<(scan + 64) { bytes[index] = 0 }
        default: (bytes[middle], bytes[middle + 1]) = (0xFF, 0xD9)
        }
        #expect(bytes.count == data.count)
        let error = try #require(throws: JPEGError.self) { try JPEGImage.check(Data(bytes)) }
        guard case .corrupt(let message) = error else { Issue.record("expected corrupt, got \(error)"); return }
        #expect(message.contains("Corrupt JPEG data"))
        #expect(throws: JPEGError.self) { try JPEGImage.decode(Data(bytes)) }
    }
}

/// Files made to keep the decoder busy: each is refused, and quickly.
@Suite struct JPEGDecoderTimeTests {
    /// A progressive 64×64 JPEG (libjpeg's scan script: 10 scans for 3 components).
    static func progressiveJPEG() throws -> Data {
        let pixels = TestImages.gradientPixels(width: 64, height: 64)
        return try pixels.withUnsafeBufferPointer { buffer in
            try TurboJPEGEncoder().encode(
                buffer, offset: 0, width: 64, rowBytes: 192, height: 64, quality: 90, subsampling: 0, progressive: true)
        }
    }

    @Test func aProgressiveFileIsAccepted() throws {
        let data = try Self.progressiveJPEG()
        #expect(JPEGImage.scanCount(data) == 10)
        #expect(try JPEGImage.check(data).width == 64)
    }

    /// The same file with its frame header (SOF2) claiming 6000×6000, 36 megapixels, under the
    /// limit: every scan finds too little data for its blocks. libjpeg would warn and carry on
    /// through each scan over all 36 megapixels (about a second here); the check stops at the
    /// first warning.
    @Test func aProgressiveFileClaimingManyMorePixelsThanItsScansHoldStopsAtOnce() throws {
        var bytes = [UInt8](try Self.progressiveJPEG())
        let sof = try #require((2..<(bytes.count - 9)).first { bytes[$0] == 0xFF && bytes[$0 + 1] == 0xC2 })
        (bytes[sof + 5], bytes[sof + 6], bytes[sof + 7], bytes[sof + 8]) = (0x17, 0x70, 0x17, 0x70)
        let started = Date()
        let error = try #require(throws: JPEGError.self) { try JPEGImage.check(Data(bytes)) }
        guard case .corrupt = error else { Issue.record("expected corrupt, got \(error)"); return }
        #expect(throws: JPEGError.self) { try JPEGImage.decode(Data(bytes)) }
        #expect(Date().timeIntervalSince(started) < 0.5)
    }

    /// Each scan is a pass over the whole image, so scans are counted before decoding: the last
    /// scan repeated until there are 65 (libjpeg-turbo itself only stops at 500).
    @Test func moreScansThanTheLimitAreRefusedBeforeDecoding() throws {
        let data = try Self.progressiveJPEG()
        let bytes = [UInt8](data)
        let lastScan = try #require((0..<(bytes.count - 1)).last { bytes[$0] == 0xFF && bytes[$0 + 1] == 0xDA })
        let scan = bytes[lastScan..<(bytes.count - 2)], end = bytes.suffix(2)
        #expect(Array(end) == [0xFF, 0xD9])
        let repeated = Data(bytes[..<lastScan] + Array(repeating: scan, count: 56).joined() + end)
        #expect(throws: JPEGError.tooManyScans(count: 65, limit: 64)) { try JPEGImage.check(repeated) }
        #expect(throws: JPEGError.tooManyScans(count: 10, limit: 9)) { try JPEGImage.check(data, limits: JPEGLimits(maxScans: 9)) }
    }
}

/// The bounds a service adds for images it decodes at a scale (profile photos): elongation,
/// progressive pixels, decoded pixels; and what counts as a scan.
@Suite struct JPEGBudgetTests {
    @Test func theStartOfAJPEGAloneIsNotACompleteFile() {
        #expect(throws: JPEGError.incomplete) { try JPEGImage.check(Data([0xFF, 0xD8, 0xFF])) }
        #expect(JPEGError.incomplete.description(of: "the photo") == "the photo is not a complete JPEG file (it ends before its frame header)")
    }

    @Test func anImageMoreElongatedThanTheLimitIsRefusedBeforeDecoding() throws {
        let limits = JPEGLimits(maxAspectRatio: 4)
        #expect(try JPEGImage.check(try TestImages.gradientJPEG(width: 400, height: 100), limits: limits).width == 400)
        #expect(try JPEGImage.check(try TestImages.gradientJPEG(width: 100, height: 400), limits: limits).height == 400)
        #expect(throws: JPEGError.tooElongated(width: 401, height: 100, limit: 4)) {
            try JPEGImage.check(try TestImages.gradientJPEG(width: 401, height: 100), limits: limits)
        }
        // The attack's 65500×610 (claimed by a small file's header) is refused by its header.
        let crafted = try TestImages.withClaimedSize(try TestImages.gradientJPEG(width: 64, height: 64), width: 65500, height: 610)
        #expect(throws: JPEGError.tooElongated(width: 65500, height: 610, limit: 4)) {
            try JPEGImage.decode(crafted, limits: JPEGLimits(maxAspectRatio: 4), minimumSide: 512)
        }
        // Without the bound (tour maps), any shape passes.
        #expect(try JPEGImage.check(try TestImages.gradientJPEG(width: 401, height: 100)).width == 401)
    }

    @Test func aProgressiveFileHasItsOwnPixelLimit() throws {
        let progressive = try JPEGDecoderTimeTests.progressiveJPEG()  // 64×64
        #expect(throws: JPEGError.tooManyProgressivePixels(width: 64, height: 64, limit: 4_095)) {
            try JPEGImage.check(progressive, limits: JPEGLimits(maxProgressivePixels: 4_095))
        }
        #expect(try JPEGImage.check(progressive, limits: JPEGLimits(maxProgressivePixels: 4_096)).width == 64)
        // A baseline file of the same size is not progressive.
        #expect(try JPEGImage.check(try TestImages.gradientJPEG(width: 64, height: 64), limits: JPEGLimits(maxProgressivePixels: 4_095)).width == 64)
        // A baseline file of one scan a component keeps every coefficient too (an attack's
        // 468 KB 12640×3160 one took 130 MB): the same limit.
        let multiScan = JPEGBudgetTests.multiScanBaseline(width: 64, height: 64)
        #expect(JPEGImage.scanCount(multiScan) == 3)
        #expect(throws: JPEGError.tooManyProgressivePixels(width: 64, height: 64, limit: 4_095)) {
            try JPEGImage.check(multiScan, limits: JPEGLimits(maxProgressivePixels: 4_095))
        }
        #expect(try JPEGImage.check(multiScan, limits: JPEGLimits(maxProgressivePixels: 4_096)).width == 64)
    }

    /// A flat grey baseline JPEG written by hand with one scan for each of its 3 components
    /// (each block's DC and AC coded as the one-bit codes for 0 and end of block).
    static func multiScanBaseline(width: Int, height: Int) -> Data {
        func segment(_ marker: UInt8, _ body: [UInt8]) -> [UInt8] {
            [0xFF, marker, UInt8((body.count + 2) >> 8), UInt8((body.count + 2) & 0xFF)] + body
        }
        var out: [UInt8] = [0xFF, 0xD8]
        out += segment(0xDB, [0] + [UInt8](repeating: 1, count: 64))
        out += segment(0xC0, [8, UInt8(height >> 8), UInt8(height & 0xFF), UInt8(width >> 8), UInt8(width & 0xFF), 3]
                             + (1...3).flatMap { [UInt8($0), 0x11, 0] })
        let oneCode: [UInt8] = [1] + [UInt8](repeating: 0, count: 15) + [0]
        out += segment(0xC4, [0x00] + oneCode)  // DC table 0: code '0' is category 0
        out += segment(0xC4, [0x10] + oneCode)  // AC table 0: code '0' is end of block
        let blocks = ((width + 7) / 8) * ((height + 7) / 8)
        var data = [UInt8](repeating: 0, count: (blocks * 2 + 7) / 8)
        if (blocks * 2) % 8 != 0 { data[data.count - 1] = UInt8((1 << (8 - (blocks * 2) % 8)) - 1) }
        for component in 1...3 { out += segment(0xDA, [1, UInt8(component), 0x00, 0, 63, 0]) + data }
        return Data(out + [0xFF, 0xD9])
    }

    @Test func thePixelsAsDecodedAreBoundedBeforeTheyAreAllocated() throws {
        // 1000×600 wanted with 512 on the short side decodes at full size (at 1/2 it has 300).
        let data = try TestImages.gradientJPEG(width: 1_000, height: 600)
        #expect(throws: JPEGError.tooManyDecodedPixels(width: 1_000, height: 600, limit: 599_999)) {
            try JPEGImage.decode(data, limits: JPEGLimits(maxDecodedPixels: 599_999), minimumSide: 512)
        }
        // Wanted with 64, it decodes at 1/8: 125×75.
        #expect(try JPEGImage.decode(data, limits: JPEGLimits(maxDecodedPixels: 9_375), minimumSide: 64).width == 125)
        #expect(throws: JPEGError.tooManyDecodedPixels(width: 1_000, height: 600, limit: 599_999)) {
            try JPEGImage.decode(data, limits: JPEGLimits(maxDecodedPixels: 599_999))
        }
    }

    /// An FF DA inside a segment (here a comment) is no scan: the segments are walked by their
    /// lengths up to each scan, whose entropy-coded data runs to the next marker.
    @Test func aStartOfScanInsideACommentIsNotCounted() throws {
        let data = try TestImages.gradientJPEG(width: 64, height: 64)
        let payload = [UInt8](repeating: 0x20, count: 10) + Array(repeating: [0xFF, 0xDA], count: 65).joined()
        let length = payload.count + 2
        let comment: [UInt8] = [0xFF, 0xFE, UInt8(length >> 8), UInt8(length & 0xFF)] + payload
        let commented = Data([UInt8](data.prefix(2)) + comment + [UInt8](data.dropFirst(2)))
        #expect(JPEGImage.scanCount(commented) == 1)
        #expect(try JPEGImage.check(commented).width == 64)
        // The progressive file's scans are still each counted, stuffed bytes and all.
        #expect(JPEGImage.scanCount(try JPEGDecoderTimeTests.progressiveJPEG()) == 10)
    }
}
