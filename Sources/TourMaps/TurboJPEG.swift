import CTurboJPEG
import Foundation

/// A TurboJPEG call that failed: the function's name and libjpeg-turbo's own message
/// (`tjGetErrorStr2`).
public struct TurboJPEGError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The TurboJPEG function that returned an error, such as `tjDecompress2`.
    public let function: String
    /// The library's message for this handle, such as "Premature end of JPEG file".
    public let message: String
    /// Whether the library called it a warning (`TJERR_WARNING`: the data had a problem the
    /// decoder could work around, such as a truncated file) rather than a fatal error.
    public let isWarning: Bool

    /// "function: message".
    public var description: String { "\(function): \(message)" }
}

/// The pixel layout every buffer in this module uses: 3 bytes a pixel, red, green, blue,
/// rows top to bottom with no padding between them.
let rgbPixelFormat = Int32(TJPF_RGB.rawValue)

/// One TurboJPEG handle, owned by this object and destroyed with it.
///
/// Not thread-safe (a tjhandle keeps per-call state, its error message among it): use one
/// from one thread at a time. `TurboJPEGDecoder` and `TurboJPEGEncoder` give each kind of
/// handle its own calls.
final class TurboJPEGHandle {
    /// The C handle; valid until `deinit`.
    let raw: tjhandle

    /// Makes a handle with `initialize` (`tjInitDecompress` or `tjInitCompress`).
    init(_ function: String, _ initialize: () -> tjhandle?) throws(TurboJPEGError) {
        guard let raw = initialize() else {
            // Without a handle the library keeps the message in a global (tjGetErrorStr2(NULL)).
            throw TurboJPEGError(function: function, message: String(cString: tjGetErrorStr2(nil)), isWarning: false)
        }
        self.raw = raw
    }

    deinit { tjDestroy(raw) }

    /// Turns a TurboJPEG return code into nothing (0) or the handle's error.
    func check(_ code: Int32, _ function: String) throws(TurboJPEGError) {
        guard code != 0 else { return }
        throw TurboJPEGError(
            function: function, message: String(cString: tjGetErrorStr2(raw)),
            isWarning: tjGetErrorCode(raw) == Int32(TJERR_WARNING.rawValue))
    }
}

/// What a JPEG's header says, read without decoding the image.
struct JPEGHeader {
    let width: Int
    let height: Int
    /// TurboJPEG's chroma subsampling constant (`TJSAMP_*`), -1 when unknown.
    let subsampling: Int32
    /// TurboJPEG's colour space constant (`TJCS_*`).
    let colorspace: Int32
}

/// Decompresses JPEG data with one TurboJPEG decompressor handle.
final class TurboJPEGDecoder {
    private let handle: TurboJPEGHandle

    init() throws(TurboJPEGError) {
        handle = try TurboJPEGHandle("tjInitDecompress") { tjInitDecompress() }
    }

    /// Reads the header only (`tjDecompressHeader3`): no pixel memory is allocated.
    func header(_ jpeg: UnsafeRawBufferPointer) throws(TurboJPEGError) -> JPEGHeader {
        var width: Int32 = 0
        var height: Int32 = 0
        var subsampling: Int32 = 0
        var colorspace: Int32 = 0
        let base = jpeg.baseAddress?.assumingMemoryBound(to: UInt8.self)
        try handle.check(
            tjDecompressHeader3(handle.raw, base, UInt(jpeg.count), &width, &height, &subsampling, &colorspace),
            "tjDecompressHeader3")
        return JPEGHeader(width: Int(width), height: Int(height), subsampling: subsampling, colorspace: colorspace)
    }

    /// Decodes into `destination` as RGB at `width`×`height`, which must be the image's size
    /// or a size libjpeg can scale to (such as ⌈w/8⌉×⌈h/8⌉); `destination` must hold
    /// `width * height * 3` bytes.
    ///
    /// Warnings are errors: libjpeg-turbo returns -1 after one (a truncated or corrupt file
    /// would otherwise decode with grey blocks), and `TJFLAG_STOPONWARNING` makes it stop at the
    /// first instead of decoding on. Progressive files are limited to 500 scans
    /// (`TJFLAG_LIMITSCANS`), so a small file cannot keep the decoder busy for minutes.
    func decode(
        _ jpeg: UnsafeRawBufferPointer, into destination: UnsafeMutableRawBufferPointer, width: Int, height: Int
    ) throws(TurboJPEGError) {
        precondition(destination.count >= width * height * 3, "destination buffer too small")
        let base = jpeg.baseAddress?.assumingMemoryBound(to: UInt8.self)
        let target = destination.baseAddress?.assumingMemoryBound(to: UInt8.self)
        try handle.check(
            tjDecompress2(
                handle.raw, base, UInt(jpeg.count), target, Int32(width), Int32(width * 3), Int32(height),
                rgbPixelFormat, TJFLAG_STOPONWARNING | TJFLAG_LIMITSCANS),
            "tjDecompress2")
    }
}

/// Compresses RGB pixels to JPEG with one TurboJPEG compressor handle.
final class TurboJPEGEncoder {
    private let handle: TurboJPEGHandle

    init() throws(TurboJPEGError) {
        handle = try TurboJPEGHandle("tjInitCompress") { tjInitCompress() }
    }

    /// Compresses the `width`×`height` RGB region of `pixels` that starts at byte `offset`,
    /// its rows `rowBytes` apart (`tjCompress2`), at `quality` (1…100) with `subsampling` (a
    /// `TJSAMP_*` constant), baseline unless `progressive`. The region must lie inside `pixels`.
    /// With `cmyk` the pixels are 4 bytes each, C, M, Y, K, and the file is a CMYK (YCCK) JPEG
    /// as print publishers make them (used by the tests; tour maps are RGB).
    func encode(
        _ pixels: UnsafeBufferPointer<UInt8>, offset: Int, width: Int, rowBytes: Int, height: Int, quality: Int,
        subsampling: Int32, progressive: Bool = false, cmyk: Bool = false
    ) throws(TurboJPEGError) -> Data {
        let bytesPerPixel = cmyk ? 4 : 3
        precondition(
            width >= 1 && height >= 1 && offset >= 0
                && offset + (height - 1) * rowBytes + width * bytesPerPixel <= pixels.count,
            "the region to compress is outside the pixel buffer")
        guard let base = pixels.baseAddress else {
            throw TurboJPEGError(function: "tjCompress2", message: "no pixels to compress", isWarning: false)
        }
        var output: UnsafeMutablePointer<UInt8>? = nil
        var size: UInt = 0
        // The library allocates the output (tjAlloc) and may grow it; it is freed here either way.
        defer { if let output { tjFree(output) } }
        try handle.check(
            tjCompress2(
                handle.raw, base + offset, Int32(width), Int32(rowBytes), Int32(height),
                cmyk ? Int32(TJPF_CMYK.rawValue) : rgbPixelFormat,
                &output, &size, subsampling, Int32(quality), progressive ? TJFLAG_PROGRESSIVE : 0),
            "tjCompress2")
        guard let output else {
            throw TurboJPEGError(function: "tjCompress2", message: "returned no output buffer", isWarning: false)
        }
        return Data(bytes: output, count: Int(size))
    }
}
