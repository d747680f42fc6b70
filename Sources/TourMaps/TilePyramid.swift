import CTurboJPEG
import Foundation

/// One 256×256 JPEG tile of a map's zoom pyramid: column `x` and row `y` (from 0 at the top
/// left) of level `z`.
public struct MapTile: Sendable, Equatable {
    public let z: Int
    public let x: Int
    public let y: Int
    /// A baseline JPEG of exactly `TilePyramid.tileSize` × `TilePyramid.tileSize` pixels.
    public let jpeg: Data
}

/// The size of one level of a zoom pyramid and how many tiles cover it.
public struct PyramidLevel: Sendable, Equatable {
    /// The zoom level: 0 is the smallest, one tile.
    public let z: Int
    /// The level's image width in pixels: ⌈image width / 2^(maxZoom − z)⌉.
    public let width: Int
    /// The level's image height in pixels: ⌈image height / 2^(maxZoom − z)⌉.
    public let height: Int
    /// Tiles across: ⌈width / 256⌉.
    public let columns: Int
    /// Tiles down: ⌈height / 256⌉.
    public let rows: Int
}

/// The zoom pyramid of a map image, made tile by tile so a phone never loads the whole image.
///
/// Level `maxZoom` is the image at full resolution; each level below halves both sides
/// (rounding up, each pixel the mean of a 2×2 block, the last row or column of an odd side
/// counted twice), down to level 0, whose longer side fits in one tile. Every tile is 256×256:
/// the image starts at the top-left corner of tile (0, 0), and the right and bottom edge
/// tiles are padded with `padding` beyond the image (never cropped, so a map viewer can place
/// every tile on the same grid).
///
/// Memory: the image is decoded once at full size (3 bytes a pixel: 120 MB at 40 megapixels),
/// each level is made from the one above, which is then dropped (at most 1.25× the full image
/// at once), and each tile is compressed as it is asked for, so no two tiles' JPEGs are held
/// here. `nextTile()` hands out the tiles in order: level `maxZoom` first, then down to 0;
/// within a level row by row, left to right. Not thread-safe: use one pyramid from one thread.
public final class TilePyramid {
    /// The side of every tile, in pixels.
    public static let tileSize = 256

    /// The full image's width in pixels.
    public let width: Int
    /// The full image's height in pixels.
    public let height: Int
    /// The levels, indexed by `z`.
    public let levels: [PyramidLevel]

    private let quality: Int
    private let padding: RGBColor
    private let encoder: TurboJPEGEncoder
    /// The level being tiled: `levels[z]`'s pixels.
    private var image: RGBImage
    private var z: Int
    private var nextX = 0, nextY = 0
    /// A tile's pixels, for edge tiles (padding and the part of the image they show).
    private var edgeTile: [UInt8]

    /// The highest zoom level, the full image.
    public var maxZoom: Int { levels.count - 1 }
    /// How many levels there are: `maxZoom + 1`.
    public var levelCount: Int { levels.count }
    /// How many tiles all levels have together.
    public var tileCount: Int { levels.reduce(0) { $0 + $1.columns * $1.rows } }

    /// Checks and decodes `jpeg` (see `JPEGImage.check`) so its tiles can be made; slow for a
    /// large image (the full decode).
    ///
    /// `quality` (clamped to 1…100) is the tiles' JPEG quality; they use 4:2:0 chroma
    /// subsampling, as photos and maps on phones do.
    public init(
        jpeg: Data, limits: JPEGLimits = JPEGLimits(), quality: Int = 85,
        padding: RGBColor = RGBColor(red: 238, green: 238, blue: 238)
    ) throws(JPEGError) {
        let image = try JPEGImage.decode(jpeg, limits: limits)
        do { encoder = try TurboJPEGEncoder() } catch { throw .library(error) }
        self.image = image
        width = image.width
        height = image.height
        levels = Self.levels(width: image.width, height: image.height)
        z = levels.count - 1
        self.quality = min(100, max(1, quality))
        self.padding = padding
        edgeTile = [UInt8](repeating: 0, count: Self.tileSize * Self.tileSize * 3)
    }

    /// The levels of the pyramid of a `width`×`height` image (both at least 1), indexed by z:
    /// the smallest `maxZoom` with both sides at most 256 · 2^maxZoom.
    public static func levels(width: Int, height: Int) -> [PyramidLevel] {
        precondition(width >= 1 && height >= 1, "an image has at least one pixel")
        var maxZoom = 0
        while max(width, height) > tileSize << maxZoom { maxZoom += 1 }
        return (0...maxZoom).map { z in
            let shift = maxZoom - z
            let levelWidth = (width + (1 << shift) - 1) >> shift
            let levelHeight = (height + (1 << shift) - 1) >> shift
            return PyramidLevel(
                z: z, width: levelWidth, height: levelHeight,
                columns: (levelWidth + tileSize - 1) / tileSize, rows: (levelHeight + tileSize - 1) / tileSize)
        }
    }

    /// The next tile in order (see the type's comment), or nil after the last one (tile (0, 0)
    /// of level 0). Going down a level halves the image first.
    public func nextTile() throws(JPEGError) -> MapTile? {
        guard z >= 0 else { return nil }
        let level = levels[z]
        let tile = MapTile(z: z, x: nextX, y: nextY, jpeg: try encodeTile(column: nextX, row: nextY))
        nextX += 1
        if nextX == level.columns {
            nextX = 0
            nextY += 1
        }
        if nextY == level.rows {
            nextY = 0
            z -= 1
            if z >= 0 { image = Self.halved(image) }
        }
        return tile
    }

    /// Calls `body` with every tile in order, as it is made; `body` can store it and let it go.
    /// Rethrows the first error, of making a tile (a `JPEGError`) or of `body`.
    public func tiles(_ body: (MapTile) throws -> Void) throws {
        while let tile = try nextTile() { try body(tile) }
    }

    /// Compresses tile (`column`, `row`) of the current level.
    private func encodeTile(column: Int, row: Int) throws(JPEGError) -> Data {
        let size = Self.tileSize
        let left = column * size
        let top = row * size
        let tileWidth = min(size, image.width - left)
        let tileHeight = min(size, image.height - top)
        let rowBytes = image.width * 3
        let subsampling = Int32(TJSAMP_420.rawValue)
        let result: Result<Data, TurboJPEGError>
        if tileWidth == size && tileHeight == size {
            // Inside the image: compress straight from the level's pixels.
            result = image.pixels.withUnsafeBufferPointer { pixels in
                Result { () throws(TurboJPEGError) in
                    try encoder.encode(
                        pixels, offset: top * rowBytes + left * 3, width: size, rowBytes: rowBytes, height: size,
                        quality: quality, subsampling: subsampling)
                }
            }
        } else {
            fillEdgeTile(left: left, top: top, width: tileWidth, height: tileHeight)
            result = edgeTile.withUnsafeBufferPointer { pixels in
                Result { () throws(TurboJPEGError) in
                    try encoder.encode(
                        pixels, offset: 0, width: size, rowBytes: size * 3, height: size,
                        quality: quality, subsampling: subsampling)
                }
            }
        }
        switch result {
        case .success(let data): return data
        case .failure(let error): throw .library(error)
        }
    }

    /// Puts the image's `width`×`height` block at (`left`, `top`) into `edgeTile`'s top-left
    /// corner and `padding` everywhere else.
    private func fillEdgeTile(left: Int, top: Int, width: Int, height: Int) {
        let size = Self.tileSize
        let sourceRowBytes = image.width * 3
        let padding = padding
        image.pixels.withUnsafeBufferPointer { source in
            edgeTile.withUnsafeMutableBufferPointer { tile in
                for offset in stride(from: 0, to: tile.count, by: 3) {
                    tile[offset] = padding.red
                    tile[offset + 1] = padding.green
                    tile[offset + 2] = padding.blue
                }
                for row in 0..<height {
                    let from = (top + row) * sourceRowBytes + left * 3
                    let to = row * size * 3
                    _ = UnsafeMutableBufferPointer(rebasing: tile[to..<(to + width * 3)])
                        .update(fromContentsOf: source[from..<(from + width * 3)])
                }
            }
        }
    }

    /// The image at half size, each side rounded up; each pixel the rounded mean of a 2×2
    /// block, the last row or column of an odd side standing in for its missing neighbour.
    static func halved(_ image: RGBImage) -> RGBImage {
        let width = (image.width + 1) / 2
        let height = (image.height + 1) / 2
        let count = width * height * 3
        let sourceRowBytes = image.width * 3
        let pixels = [UInt8](unsafeUninitializedCapacity: count) { target, initialized in
            image.pixels.withUnsafeBufferPointer { source in
                for y in 0..<height {
                    let top = 2 * y * sourceRowBytes
                    let bottom = 2 * y + 1 < image.height ? top + sourceRowBytes : top
                    var out = y * width * 3
                    for x in 0..<width {
                        let left = 2 * x * 3
                        let right = 2 * x + 1 < image.width ? left + 3 : left
                        for channel in 0..<3 {
                            let sum =
                                Int(source[top + left + channel]) + Int(source[top + right + channel])
                                + Int(source[bottom + left + channel]) + Int(source[bottom + right + channel])
                            target[out + channel] = UInt8((sum + 2) >> 2)
                        }
                        out += 3
                    }
                }
            }
            initialized = count
        }
        return RGBImage(uncheckedWidth: width, height: height, pixels: pixels)
    }
}
