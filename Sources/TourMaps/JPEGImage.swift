import CTurboJPEG
import Foundation

/// The largest tour map accepted: bytes of the file, pixels of the image and scans.
///
/// Pixels are checked from the header before any pixel memory is allocated; a decoded
/// image takes 3 bytes a pixel (40 megapixels: 120 MB). Scans bound the time: a progressive
/// file is decoded once per scan over the whole image, and a baseline file has one scan.
public struct JPEGLimits: Sendable, Equatable {
    /// At most this many bytes of JPEG data (default 30 MiB, 31,457,280 bytes).
    public var maxBytes: Int
    /// At most this many pixels, width × height (default 40,000,000).
    public var maxPixels: Int
    /// At most this many scans, start-of-scan markers (default 64; libjpeg's progressive
    /// files have about 10).
    public var maxScans: Int
    /// At most this many times longer than wide or wide than long (nil: any): an elongated
    /// image must decode near full size for its short side to keep its pixels.
    public var maxAspectRatio: Int?
    /// At most this many pixels in a progressive file (default: `maxPixels`): libjpeg holds
    /// every DCT coefficient of a progressive image, 2 bytes a sample of each component
    /// (6 bytes a pixel at 4:4:4), whatever scale it decodes at.
    public var maxProgressivePixels: Int
    /// At most this many pixels decoded, at the scale the image is decoded at (default:
    /// `maxPixels`), checked before the pixel memory is allocated.
    public var maxDecodedPixels: Int

    public init(
        maxBytes: Int = 30 * 1024 * 1024, maxPixels: Int = 40_000_000, maxScans: Int = 64,
        maxAspectRatio: Int? = nil, maxProgressivePixels: Int? = nil, maxDecodedPixels: Int? = nil
    ) {
        self.maxBytes = maxBytes
        self.maxPixels = maxPixels
        self.maxScans = maxScans
        self.maxAspectRatio = maxAspectRatio
        self.maxProgressivePixels = maxProgressivePixels ?? maxPixels
        self.maxDecodedPixels = maxDecodedPixels ?? maxPixels
    }
}

/// Why JPEG data was refused, or an image could not be made.
///
/// `tooManyBytes`, `tooManyPixels` and `tooManyScans` are limits (a service answers `too_large`); the other
/// refusals are bad input (`invalid_argument`); `library` is a failure of libjpeg-turbo
/// itself on data it had accepted (`internal`).
public enum JPEGError: Error, Sendable, Equatable, CustomStringConvertible {
    /// No bytes at all.
    case empty
    /// More bytes than `JPEGLimits.maxBytes`.
    case tooManyBytes(size: Int, limit: Int)
    /// The data does not start like a JPEG file (the SOI marker FF D8 FF).
    case notJPEG
    /// The header could not be read; the message is libjpeg-turbo's.
    case unreadableHeader(String)
    /// The data ends before its frame header (such as the 3 bytes FF D8 FF alone).
    case incomplete
    /// The header gives a width or a height of 0.
    case zeroSize(width: Int, height: Int)
    /// One side more than `JPEGLimits.maxAspectRatio` times the other.
    case tooElongated(width: Int, height: Int, limit: Int)
    /// A progressive file, or one of several scans, of more pixels than
    /// `JPEGLimits.maxProgressivePixels` (libjpeg keeps every coefficient of either).
    case tooManyProgressivePixels(width: Int, height: Int, limit: Int)
    /// More pixels at the scale it would decode at than `JPEGLimits.maxDecodedPixels`.
    case tooManyDecodedPixels(width: Int, height: Int, limit: Int)
    /// More pixels than `JPEGLimits.maxPixels`, from the header, before decoding.
    case tooManyPixels(width: Int, height: Int, limit: Int)
    /// More scans than `JPEGLimits.maxScans` (start-of-scan markers counted before decoding).
    case tooManyScans(count: Int, limit: Int)
    /// A CMYK (or YCCK) JPEG, as made for print: libjpeg-turbo cannot turn it into RGB.
    case cmyk
    /// The image data is truncated or corrupt: decoding it failed or warned; the message is
    /// libjpeg-turbo's (such as "Premature end of JPEG file").
    case corrupt(String)
    /// libjpeg-turbo failed on something other than the input's data (a handle, compressing).
    case library(TurboJPEGError)

    /// A message for the person who sent the file, calling it a map image.
    public var description: String { description(of: "the map image") }

    /// A message for the person who sent the file, calling it `image` ("the map image",
    /// "the photo").
    public func description(of image: String) -> String {
        switch self {
        case .empty: "\(image) is empty (0 bytes)"
        case .tooManyBytes(let size, let limit): "\(image) has \(size) bytes, more than the limit of \(limit)"
        case .notJPEG: "\(image) is not a JPEG file (it must start with the bytes FF D8 FF)"
        case .unreadableHeader(let message): "\(image)'s JPEG header cannot be read: \(message)"
        case .incomplete: "\(image) is not a complete JPEG file (it ends before its frame header)"
        case .zeroSize(let width, let height): "\(image) has no pixels (\(width)×\(height))"
        case .tooElongated(let width, let height, let limit):
            "\(image) is \(width)×\(height), more elongated than \(limit):1: crop it"
        case .tooManyProgressivePixels(let width, let height, let limit):
            "\(image) is a progressive or multi-scan JPEG of \(width)×\(height) = \(width * height) pixels, more than the limit of \(limit) for such files (save it as a baseline JPEG or smaller)"
        case .tooManyDecodedPixels(let width, let height, let limit):
            "\(image) would decode to \(width)×\(height) = \(width * height) pixels, more than the limit of \(limit)"
        case .tooManyPixels(let width, let height, let limit):
            "\(image) is \(width)×\(height) = \(width * height) pixels, more than the limit of \(limit)"
        case .tooManyScans(let count, let limit):
            "\(image) has \(count) scans, more than the limit of \(limit) (save it as a baseline JPEG)"
        case .cmyk: "\(image) is a CMYK JPEG (made for print): save it as RGB"
        case .corrupt(let message): "\(image) is truncated or corrupt: \(message)"
        case .library(let error): "libjpeg-turbo failed: \(error)"
        }
    }
}

/// A JPEG file that passed every check: its size and what its header says.
public struct JPEGImage: Sendable, Equatable {
    /// Width in pixels, at least 1.
    public let width: Int
    /// Height in pixels, at least 1.
    public let height: Int
    /// Bytes of the JPEG data.
    public let byteCount: Int

    /// Checks that `data` is one complete, undamaged JPEG within `limits` and returns its size.
    ///
    /// In order: not empty, at most `maxBytes`, starts with SOI, a readable header with a
    /// non-zero size of at most `maxPixels` (read before any pixel memory is allocated), at
    /// most `maxScans` scans, RGB or grey (not CMYK), and then the whole image decodes without
    /// an error or warning. That last step decodes at
    /// 1/8 scale: libjpeg still reads and entropy-decodes every byte of every scan, so
    /// truncation and corrupt data are found, while the pixels take 1/64 of the memory.
    public static func check(_ data: Data, limits: JPEGLimits = JPEGLimits()) throws(JPEGError) -> JPEGImage {
        let decoder = try makeDecoder()
        let header = try checkedHeader(data, limits: limits, decoder: decoder)
        let width = (header.width + 7) / 8
        let height = (header.height + 7) / 8
        try checkDecoded(width: width, height: height, limits: limits)
        var scratch = [UInt8](repeating: 0, count: width * height * 3)
        try decodeData(data, decoder: decoder, into: &scratch, width: width, height: height)
        return JPEGImage(width: header.width, height: header.height, byteCount: data.count)
    }

    /// Checks `data` as `check` does and decodes it at full size.
    public static func decode(_ data: Data, limits: JPEGLimits = JPEGLimits()) throws(JPEGError) -> RGBImage {
        let decoder = try makeDecoder()
        let header = try checkedHeader(data, limits: limits, decoder: decoder)
        try checkDecoded(width: header.width, height: header.height, limits: limits)
        let count = header.width * header.height * 3
        // No zero fill: the decoder writes every byte (or fails, and the buffer is dropped).
        var pixels = [UInt8](unsafeUninitializedCapacity: count) { _, initialized in initialized = count }
        try decodeData(data, decoder: decoder, into: &pixels, width: header.width, height: header.height)
        return RGBImage(uncheckedWidth: header.width, height: header.height, pixels: pixels)
    }

    /// Checks `data` as `check` does and decodes it at the smallest of libjpeg-turbo's fast
    /// scales, 1/8, 1/4, 1/2 or 1, whose shorter side still has at least `minimumSide` pixels
    /// (full size when none has). The scaling happens in the inverse DCT, so it is both fast and
    /// a proper low-pass (no aliasing), and every scan is still decoded in full, so truncated
    /// or corrupt data is found as by `check`. A 40-megapixel photo wanted at 512 px decodes at
    /// 1/8: some 2 MB of pixels instead of 120 MB.
    public static func decode(_ data: Data, limits: JPEGLimits = JPEGLimits(), minimumSide: Int) throws(JPEGError) -> RGBImage {
        try decode(data, limits: limits) { width, height in min(width, height) >= minimumSide }
    }

    /// As `decode(_:limits:minimumSide:)`, at the smallest fast scale whose longer side still
    /// has at least `minimumLongSide` pixels: what fitting the whole image within that needs.
    public static func decode(_ data: Data, limits: JPEGLimits = JPEGLimits(), minimumLongSide: Int) throws(JPEGError) -> RGBImage {
        try decode(data, limits: limits) { width, height in max(width, height) >= minimumLongSide }
    }

    /// Decodes at the smallest of 1/8, 1/4, 1/2 and 1 whose scaled size `keeps` holds for (full
    /// size when none does), the size read from the checked header.
    private static func decode(_ data: Data, limits: JPEGLimits, keeps: (Int, Int) -> Bool) throws(JPEGError) -> RGBImage {
        let decoder = try makeDecoder()
        let header = try checkedHeader(data, limits: limits, decoder: decoder)
        var denominator = 8
        while denominator > 1, !keeps((header.width + denominator - 1) / denominator, (header.height + denominator - 1) / denominator) { denominator /= 2 }
        let width = (header.width + denominator - 1) / denominator
        let height = (header.height + denominator - 1) / denominator
        try checkDecoded(width: width, height: height, limits: limits)
        let count = width * height * 3
        var pixels = [UInt8](unsafeUninitializedCapacity: count) { _, initialized in initialized = count }
        try decodeData(data, decoder: decoder, into: &pixels, width: width, height: height)
        return RGBImage(uncheckedWidth: width, height: height, pixels: pixels)
    }

    /// `tooManyDecodedPixels` unless `width`×`height` is within `maxDecodedPixels`.
    private static func checkDecoded(width: Int, height: Int, limits: JPEGLimits) throws(JPEGError) {
        guard width * height <= limits.maxDecodedPixels else {
            throw .tooManyDecodedPixels(width: width, height: height, limit: limits.maxDecodedPixels)
        }
    }

    private static func makeDecoder() throws(JPEGError) -> TurboJPEGDecoder {
        do { return try TurboJPEGDecoder() } catch { throw .library(error) }
    }

    /// The size and signature checks, then the header and its pixel count.
    private static func checkedHeader(_ data: Data, limits: JPEGLimits, decoder: TurboJPEGDecoder) throws(JPEGError) -> JPEGHeader {
        guard !data.isEmpty else { throw .empty }
        guard data.count <= limits.maxBytes else { throw .tooManyBytes(size: data.count, limit: limits.maxBytes) }
        guard data.count >= 3, data.prefix(3).elementsEqual([0xFF, 0xD8, 0xFF]) else { throw .notJPEG }
        let result = data.withUnsafeBytes { bytes in Result { () throws(TurboJPEGError) in try decoder.header(bytes) } }
        let header: JPEGHeader
        switch result {
        case .success(let value): header = value
        case .failure(let error):
            // libjpeg refuses a 0 height or width in the frame header itself ("Empty JPEG image").
            if let frame = frameHeader(data), frame.width == 0 || frame.height == 0 {
                throw .zeroSize(width: frame.width, height: frame.height)
            }
            throw .unreadableHeader(error.message)
        }
        let frame = frameHeader(data)
        guard header.width > 0, header.height > 0 else {
            // libjpeg answers 0×0 for data that ends before any frame header.
            guard frame != nil else { throw .incomplete }
            throw .zeroSize(width: header.width, height: header.height)
        }
        // Both are below 65,536 (16-bit fields), so the product cannot overflow.
        guard header.width * header.height <= limits.maxPixels else {
            throw .tooManyPixels(width: header.width, height: header.height, limit: limits.maxPixels)
        }
        if let ratio = limits.maxAspectRatio, max(header.width, header.height) > ratio * min(header.width, header.height) {
            throw .tooElongated(width: header.width, height: header.height, limit: ratio)
        }
        let scans = scanCount(data)
        // A baseline file of several scans (one a component, say) makes libjpeg keep every
        // coefficient as a progressive one does.
        if frame?.progressive ?? false || scans > 1, header.width * header.height > limits.maxProgressivePixels {
            throw .tooManyProgressivePixels(width: header.width, height: header.height, limit: limits.maxProgressivePixels)
        }
        guard header.colorspace != Int32(TJCS_CMYK.rawValue), header.colorspace != Int32(TJCS_YCCK.rawValue) else {
            throw .cmyk
        }
        guard scans <= limits.maxScans else { throw .tooManyScans(count: scans, limit: limits.maxScans) }
        return header
    }

    /// How many scans (start-of-scan segments, FF DA) the data holds, found by walking the
    /// marker segments as libjpeg does (`walkMarkers`), so an FF DA inside a segment's payload
    /// (a comment, an embedded thumbnail) is not counted, and padding libjpeg skips (garbage,
    /// fill, FF 00) hides none.
    static func scanCount(_ data: Data) -> Int {
        data.withUnsafeBytes { bytes in
            var count = 0
            walkMarkers(bytes) { marker, _ in
                if marker == 0xDA { count += 1 }
                return true
            }
            return count
        }
    }

    /// Calls `body` with each marker segment of the data before the end of image, walking it as
    /// libjpeg's `next_marker` does: bytes that are not FF are skipped (garbage), FF fill before
    /// a marker is skipped, and FF 00 outside a scan is not a marker but garbage too; a marker
    /// without a length (RST0…7, TEM) has an empty payload. After a scan's header (SOS) its
    /// entropy-coded data runs up to the next FF that is followed by neither 00 (a stuffed byte)
    /// nor a restart marker. `body` gets the marker and its payload's range (after the length
    /// field), and answers false to stop. Bounded by the data: every step moves forward.
    static func walkMarkers(_ bytes: UnsafeRawBufferPointer, _ body: (_ marker: UInt8, _ payload: Range<Int>) -> Bool) {
        var index = 2  // after SOI
        while index < bytes.count {
            // Garbage, then fill: up to a byte after one or more FFs.
            while index < bytes.count, bytes[index] != 0xFF { index += 1 }
            while index + 1 < bytes.count, bytes[index + 1] == 0xFF { index += 1 }
            guard index + 1 < bytes.count else { return }
            let marker = bytes[index + 1]
            index += 2
            if marker == 0x00 { continue }  // FF 00: not a marker
            if marker == 0xD9 { return }  // end of image
            if marker == 0x01 || (0xD0...0xD7).contains(marker) {
                guard body(marker, index..<index) else { return }
                continue
            }
            guard index + 1 < bytes.count else { return }
            let length = Int(bytes[index]) << 8 | Int(bytes[index + 1])
            guard length >= 2 else { return }  // a broken length: libjpeg refuses the file
            let end = min(bytes.count, index + length)
            guard body(marker, (index + 2)..<end) else { return }
            index = end
            if marker == 0xDA {
                while index + 1 < bytes.count, !(bytes[index] == 0xFF && bytes[index + 1] != 0x00 && !(0xD0...0xD7).contains(bytes[index + 1])) {
                    index += 1
                }
            }
        }
    }

    private static func decodeData(
        _ data: Data, decoder: TurboJPEGDecoder, into pixels: inout [UInt8], width: Int, height: Int
    ) throws(JPEGError) {
        let result = data.withUnsafeBytes { jpeg in
            pixels.withUnsafeMutableBytes { target in
                Result { () throws(TurboJPEGError) in try decoder.decode(jpeg, into: target, width: width, height: height) }
            }
        }
        if case .failure(let error) = result { throw .corrupt(error.message) }
    }

    /// The orientation an Exif block (APP1 `Exif\0\0`, before the first scan) gives the image,
    /// 1 to 8 as TIFF's tag 274 numbers them; 1 (as stored) when there is none or it is not
    /// one of those. Cameras store a portrait as a landscape image turned by this tag, and
    /// libjpeg ignores it.
    static func exifOrientation(_ data: Data) -> Int {
        data.withUnsafeBytes { bytes in
            var orientation = 1
            walkMarkers(bytes) { marker, payload in
                if marker == 0xDA { return false }
                guard marker == 0xE1, payload.count >= 6, bytes[payload.prefix(6)].elementsEqual(Array("Exif\0\0".utf8)) else { return true }
                orientation = Self.orientation(inTIFF: Array(bytes[payload.dropFirst(6)]))
                return false
            }
            return orientation
        }
    }

    /// Tag 274 of the first IFD of a TIFF structure (Exif's payload), or 1.
    private static func orientation(inTIFF tiff: [UInt8]) -> Int {
        guard tiff.count >= 8, tiff[0] == tiff[1], tiff[0] == 0x49 || tiff[0] == 0x4D else { return 1 }
        let little = tiff[0] == 0x49
        func read(_ at: Int, _ size: Int) -> Int? {
            guard at >= 0, at + size <= tiff.count else { return nil }
            let field = tiff[at..<(at + size)]
            return (little ? field.reversed() : Array(field)).reduce(0) { $0 << 8 | Int($1) }
        }
        guard let first = read(4, 4), let count = read(first, 2) else { return 1 }
        for entry in 0..<min(count, 512) {
            let at = first + 2 + entry * 12
            guard let tag = read(at, 2) else { return 1 }
            // SHORT (3), one value, in the entry's first two bytes.
            if tag == 0x0112, read(at + 2, 2) == 3, let value = read(at + 8, 2), (1...8).contains(value) { return value }
        }
        return 1
    }

    /// The width and height of the first frame header (SOF0…SOF15 but DHT, JPG and DAC) and
    /// whether it is progressive (SOF2, 6, 10, 14), found by walking the marker segments as
    /// libjpeg does (`walkMarkers`, however the file is padded); nil when there is none before
    /// the first scan (libjpeg then refuses the file for what it is).
    static func frameHeader(_ data: Data) -> (width: Int, height: Int, progressive: Bool)? {
        data.withUnsafeBytes { bytes in
            var frame: (width: Int, height: Int, progressive: Bool)?
            walkMarkers(bytes) { marker, payload in
                if marker == 0xDA { return false }
                guard (0xC0...0xCF).contains(marker), ![0xC4, 0xC8, 0xCC].contains(marker) else { return true }
                if payload.count >= 5 {
                    let at = payload.lowerBound
                    frame = (Int(bytes[at + 3]) << 8 | Int(bytes[at + 4]), Int(bytes[at + 1]) << 8 | Int(bytes[at + 2]), [0xC2, 0xC6, 0xCA, 0xCE].contains(marker))
                }
                return false
            }
            return frame
        }
    }
}

/// An 8-bit-per-channel colour.
public struct RGBColor: Sendable, Hashable {
    public var red: UInt8
    public var green: UInt8
    public var blue: UInt8

    public init(red: UInt8, green: UInt8, blue: UInt8) {
        self.red = red
        self.green = green
        self.blue = blue
    }

    /// The largest difference of one channel to `other`'s (0…255): how far a JPEG's lossy
    /// colour is from the one drawn.
    public func distance(to other: RGBColor) -> Int {
        max(abs(Int(red) - Int(other.red)), abs(Int(green) - Int(other.green)), abs(Int(blue) - Int(other.blue)))
    }
}

/// A decoded image: RGB, 3 bytes a pixel, rows top to bottom with no padding.
public struct RGBImage: Sendable {
    public let width: Int
    public let height: Int
    /// `width * height * 3` bytes.
    public internal(set) var pixels: [UInt8]

    /// An image of `pixels`, which must hold `width * height * 3` bytes (nil otherwise, or
    /// when a side is below 1).
    public init?(width: Int, height: Int, pixels: [UInt8]) {
        let (rowBytes, overflow) = width.multipliedReportingOverflow(by: 3)
        guard width >= 1, height >= 1, !overflow, pixels.count % rowBytes == 0, pixels.count / rowBytes == height
        else { return nil }
        self.init(uncheckedWidth: width, height: height, pixels: pixels)
    }

    /// Wraps a buffer already known to hold `width * height * 3` bytes.
    init(uncheckedWidth width: Int, height: Int, pixels: [UInt8]) {
        self.width = width
        self.height = height
        self.pixels = pixels
    }

    /// The image as a baseline JPEG at `quality` (clamped to 1…100); `fullColor` keeps every
    /// pixel's chroma (4:4:4, for drawings with thin coloured lines) where the default
    /// shares it between 2×2 pixels (4:2:0, smaller, as for photos). `progressive` makes a
    /// progressive file instead (for tests and benchmarks of what users send).
    public func jpeg(quality: Int = 90, fullColor: Bool = false, progressive: Bool = false) throws(JPEGError) -> Data {
        let subsampling = Int32(fullColor ? TJSAMP_444.rawValue : TJSAMP_420.rawValue)
        let result = pixels.withUnsafeBufferPointer { buffer in
            Result { () throws(TurboJPEGError) in
                try TurboJPEGEncoder().encode(
                    buffer, offset: 0, width: width, rowBytes: width * 3, height: height,
                    quality: min(100, max(1, quality)), subsampling: subsampling, progressive: progressive)
            }
        }
        switch result {
        case .success(let data): return data
        case .failure(let error): throw .library(error)
        }
    }

    /// The colour of the pixel in column `x`, row `y` (both from 0 at the top left).
    public func color(x: Int, y: Int) -> RGBColor {
        precondition((0..<width).contains(x) && (0..<height).contains(y), "pixel (\(x), \(y)) is outside the image")
        let offset = (y * width + x) * 3
        return RGBColor(red: pixels[offset], green: pixels[offset + 1], blue: pixels[offset + 2])
    }
}
