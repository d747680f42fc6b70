import Foundation
import Testing
@testable import TourMaps

/// JPEG files for the tests, made with the module's own encoder.
enum TestImages {
    /// A smooth gradient (red grows to the right, green downwards, blue 128), so JPEG loss is
    /// small and every pixel's expected colour is known.
    static func gradientPixels(width: Int, height: Int) -> [UInt8] {
        var pixels = [UInt8](repeating: 128, count: width * height * 3)
        for y in 0..<height {
            for x in 0..<width {
                let offset = (y * width + x) * 3
                pixels[offset] = UInt8(x * 255 / max(1, width - 1))
                pixels[offset + 1] = UInt8(y * 255 / max(1, height - 1))
            }
        }
        return pixels
    }

    /// The gradient's expected colour at (x, y).
    static func gradientColor(x: Int, y: Int, width: Int, height: Int) -> RGBColor {
        RGBColor(red: UInt8(x * 255 / max(1, width - 1)), green: UInt8(y * 255 / max(1, height - 1)), blue: 128)
    }

    /// `pixels` (RGB) compressed at quality 95 with 4:4:4 chroma.
    static func jpeg(_ pixels: [UInt8], width: Int, height: Int) throws -> Data {
        let image = try #require(RGBImage(width: width, height: height, pixels: pixels))
        return try image.jpeg(quality: 95, fullColor: true)
    }

    static func gradientJPEG(width: Int, height: Int) throws -> Data {
        try jpeg(gradientPixels(width: width, height: height), width: width, height: height)
    }

    /// The offset of the height field of the first frame header (SOF0), found by walking
    /// the marker segments from SOI; the width follows 2 bytes later.
    static func frameSizeOffset(_ data: Data) -> Int? {
        let bytes = [UInt8](data)
        var index = 2
        while index + 4 <= bytes.count, bytes[index] == 0xFF {
            if bytes[index + 1] == 0xC0 { return index + 5 }
            index += 2 + (Int(bytes[index + 2]) << 8 | Int(bytes[index + 3]))
        }
        return nil
    }

    /// `data` with its frame header claiming `width`×`height`; the scan data stays as it was.
    static func withClaimedSize(_ data: Data, width: Int, height: Int) throws -> Data {
        guard let offset = frameSizeOffset(data) else { throw TestImageError.noFrameHeader }
        var bytes = [UInt8](data)
        bytes[offset] = UInt8(height >> 8); bytes[offset + 1] = UInt8(height & 0xFF)
        bytes[offset + 2] = UInt8(width >> 8); bytes[offset + 3] = UInt8(width & 0xFF)
        return Data(bytes)
    }

    /// The offset of the first byte of entropy-coded data: after the SOS segment.
    static func scanDataOffset(_ data: Data) -> Int? {
        let bytes = [UInt8](data)
        var index = 2
        while index + 4 <= bytes.count, bytes[index] == 0xFF {
            let length = Int(bytes[index + 2]) << 8 | Int(bytes[index + 3])
            if bytes[index + 1] == 0xDA { return index + 2 + length }
            index += 2 + length
        }
        return nil
    }
}

enum TestImageError: Error { case noFrameHeader }
