import Foundation
import Testing
@testable import TourMaps

@Suite struct TilePyramidTests {
    @Test func levelsHalveUntilOneTileHoldsTheImage() {
        func sizes(_ width: Int, _ height: Int) -> [[Int]] {
            TilePyramid.levels(width: width, height: height).map { [$0.z, $0.width, $0.height, $0.columns, $0.rows] }
        }
        #expect(sizes(1, 1) == [[0, 1, 1, 1, 1]])
        #expect(sizes(256, 256) == [[0, 256, 256, 1, 1]])
        #expect(sizes(257, 1) == [[0, 129, 1, 1, 1], [1, 257, 1, 2, 1]])
        #expect(sizes(1000, 600) == [[0, 250, 150, 1, 1], [1, 500, 300, 2, 2], [2, 1000, 600, 4, 3]])
        // 40 megapixels, 8000×5000: 6 levels, the largest 32×20 tiles.
        let big = TilePyramid.levels(width: 8000, height: 5000)
        #expect(big.count == 6 && big[5].columns == 32 && big[5].rows == 20 && big[0].width == 250 && big[0].height == 157)
    }

    @Test func tilesComeLevelByLevelFromTheFullImageDown() throws {
        let (width, height) = (600, 300)
        let pyramid = try TilePyramid(jpeg: try TestImages.gradientJPEG(width: width, height: height))
        #expect(pyramid.maxZoom == 2 && pyramid.levelCount == 3 && pyramid.width == 600 && pyramid.height == 300)
        var order: [[Int]] = []
        var tiles: [MapTile] = []
        try pyramid.tiles { tile in
            order.append([tile.z, tile.x, tile.y])
            tiles.append(tile)
        }
        // z=2: 600×300 in 3×2 tiles; z=1: 300×150 in 2×1; z=0: 150×75 in 1.
        #expect(order == [[2, 0, 0], [2, 1, 0], [2, 2, 0], [2, 0, 1], [2, 1, 1], [2, 2, 1], [1, 0, 0], [1, 1, 0], [0, 0, 0]])
        #expect(tiles.count == pyramid.tileCount)
        #expect(try pyramid.nextTile() == nil)  // and it stays done
        for tile in tiles {
            let image = try JPEGImage.check(tile.jpeg)
            #expect(image.width == 256 && image.height == 256)
        }
    }

    @Test func tilePixelsShowTheImageAndEdgeTilesArePadded() throws {
        let (width, height) = (600, 300)
        let padding = RGBColor(red: 10, green: 200, blue: 30)
        let pyramid = try TilePyramid(jpeg: try TestImages.gradientJPEG(width: width, height: height), quality: 95, padding: padding)
        var decoded: [String: RGBImage] = [:]
        try pyramid.tiles { tile in decoded["\(tile.z)/\(tile.x)/\(tile.y)"] = try JPEGImage.decode(tile.jpeg) }
        func expectColor(_ tile: String, _ x: Int, _ y: Int, near color: RGBColor, within tolerance: Int = 12) throws {
            let image = try #require(decoded[tile])
            let actual = image.color(x: x, y: y)
            #expect(actual.distance(to: color) <= tolerance, "tile \(tile) pixel (\(x), \(y)): \(actual) vs \(color)")
        }
        let source = { (x: Int, y: Int) in TestImages.gradientColor(x: x, y: y, width: width, height: height) }
        // Full resolution: tile (1, 0) starts at image pixel (256, 0); tile (1, 1) at (256, 256).
        try expectColor("2/1/0", 10, 20, near: source(266, 20))
        try expectColor("2/1/1", 100, 30, near: source(356, 286))
        // The right edge tile (2, 0) shows image columns 512…599 and padding from tile column 88.
        try expectColor("2/2/0", 80, 100, near: source(592, 100))
        try expectColor("2/2/0", 120, 100, near: padding)
        // The bottom tiles show rows 256…299 and padding from tile row 44.
        try expectColor("2/0/1", 50, 40, near: source(50, 296))
        try expectColor("2/0/1", 50, 60, near: padding)
        try expectColor("2/2/1", 200, 200, near: padding)
        // Level 0 is the image at a quarter: 150×75, pixel (i, j) the mean of a 4×4 block.
        try expectColor("0/0/0", 100, 50, near: source(401, 201))
        // (Not the very last pixel: 4:2:0 chroma blends it with the padding next to it.)
        try expectColor("0/0/0", 146, 71, near: source(585, 285))
        try expectColor("0/0/0", 160, 50, near: padding)
        try expectColor("0/0/0", 100, 80, near: padding)
    }

    @Test func halvingAveragesBlocksAndCountsAnOddEdgeTwice() {
        // 3×3, one channel value per pixel (the same in r, g, b).
        let values: [UInt8] = [0, 102, 50, 200, 40, 11, 8, 17, 30]
        let image = RGBImage(uncheckedWidth: 3, height: 3, pixels: values.flatMap { [$0, $0, $0] })
        let half = TilePyramid.halved(image)
        #expect(half.width == 2 && half.height == 2)
        let red = stride(from: 0, to: half.pixels.count, by: 3).map { half.pixels[$0] }
        // Rounded: (0+102+200+40)/4 = 85.5; (50+50+11+11)/4 = 30.5; (8+17+8+17)/4 = 12.5; 30.
        #expect(red == [86, 31, 13, 30])
    }

    @Test func aFailingConsumerStopsTheTilesAndItsErrorComesOut() throws {
        struct Full: Error {}
        let pyramid = try TilePyramid(jpeg: try TestImages.gradientJPEG(width: 600, height: 300))
        var seen = 0
        #expect(throws: Full.self) {
            try pyramid.tiles { _ in
                seen += 1
                if seen == 2 { throw Full() }
            }
        }
        #expect(seen == 2)
        // The pull form carries on where it stopped: tile 3 of 9.
        let next = try #require(try pyramid.nextTile())
        #expect(next.z == 2 && next.x == 2 && next.y == 0)
    }

    @Test func aDamagedImageMakesNoPyramid() throws {
        let data = try TestImages.gradientJPEG(width: 300, height: 300)
        let error = try #require(throws: JPEGError.self) { try TilePyramid(jpeg: data.prefix(data.count / 2)) }
        guard case .corrupt = error else { Issue.record("got \(error)"); return }
        #expect(throws: JPEGError.tooManyBytes(size: data.count, limit: 100)) { try TilePyramid(jpeg: data, limits: JPEGLimits(maxBytes: 100)) }
    }
}
