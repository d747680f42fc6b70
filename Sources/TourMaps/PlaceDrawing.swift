import Foundation

/// A simple drawing of a kind of place: a sky, a sun or a moon, and a scene by category (a
/// beach, a park's hills and trees, a lookout's cliff over the sea, or a street of buildings),
/// in colours picked by a seed. What the demo shows where a place has no photo of its own: no
/// photo of Sydney is in any package here, so the demo hosts its own drawings, labelled as such.
public enum PlaceDrawing {
    /// A `width`×`height` JPEG (each side 16…4096) of a place of `category`; the same seed
    /// draws the same picture.
    public static func jpeg(category: String, seed: String, width: Int = 960, height: Int = 640) throws(JPEGError) -> Data {
        precondition((16...4096).contains(width) && (16...4096).contains(height), "a drawing is 16 to 4096 pixels a side")
        var random = SeedRandom(seed)
        var canvas = Canvas(width: width, height: height)
        let night = ["bar", "nightlife", "theatre"].contains(category)
        // Open country shows its ground; a street stands on a narrow pavement.
        let open = ["beach", "park", "viewpoint"].contains(category)
        let horizon = height * ((open ? 55 : 80) + random.next(8)) / 100
        canvas.gradient(
            top: night ? rgb(24, 28, 72) : rgb(70 + random.next(40), 140 + random.next(40), 220),
            bottom: night ? rgb(150, 80, 120) : rgb(250, 220, 170), from: 0, to: horizon)
        let sunX = width * (15 + random.next(70)) / 100
        canvas.circle(
            x: sunX, y: horizon * (30 + random.next(30)) / 100, radius: height / 12,
            night ? rgb(240, 240, 220) : rgb(255, 200, 60))
        switch category {
        case "beach":
            canvas.rect(x: 0, y: horizon, width: width, height: height - horizon, rgb(30, 110, 170))
            for band in 0..<6 { canvas.rect(x: 0, y: horizon + band * height / 40 + 6, width: width, height: 3, rgb(120, 190, 225)) }
            canvas.rect(x: 0, y: height * 82 / 100, width: width, height: height, rgb(236, 214, 160))
        case "park":
            canvas.rect(x: 0, y: horizon, width: width, height: height - horizon, rgb(90, 160, 70))
            canvas.circle(x: width / 4, y: height + height / 3, radius: height * 3 / 4, rgb(110, 175, 80))
            for _ in 0..<(4 + random.next(4)) {
                let (x, y) = (random.next(width), horizon + random.next(max(1, height - horizon - height / 6)))
                canvas.rect(x: x - 5, y: y, width: 10, height: height / 10, rgb(100, 70, 40))
                canvas.circle(x: x, y: y, radius: height / 14, rgb(40, 110 + random.next(40), 50))
            }
        case "viewpoint":
            canvas.rect(x: 0, y: horizon, width: width, height: height - horizon, rgb(30, 100, 160))
            canvas.rect(x: width * 60 / 100, y: horizon - height / 8, width: width, height: height, rgb(120, 100, 80))
            canvas.rect(x: width * 60 / 100, y: horizon - height / 8, width: width, height: height / 40, rgb(80, 140, 60))
        default:
            canvas.rect(x: 0, y: horizon, width: width, height: height - horizon, rgb(120, 120, 125))
            var x = -random.next(width / 10)
            while x < width {
                let (w, h) = (width / 12 + random.next(width / 8), height / 6 + random.next(horizon * 2 / 3))
                let shade = 60 + random.next(70)
                canvas.rect(x: x, y: horizon - h, width: w, height: h, rgb(shade, shade, shade + 20))
                // Windows, lit at night.
                let window = night ? rgb(250, 220, 120) : rgb(190, 215, 235)
                var wy = horizon - h + 12
                while wy < horizon - 20 {
                    var wx = x + 8
                    while wx < x + w - 14 {
                        canvas.rect(x: wx, y: wy, width: 8, height: 10, window)
                        wx += 18
                    }
                    wy += 22
                }
                x += w + random.next(width / 40)
            }
        }
        return try canvas.image.jpeg(quality: 85)
    }

    /// An RGB pixel buffer with the few shapes the drawings use, clipped to its edges.
    struct Canvas {
        let width: Int
        let height: Int
        var pixels: [UInt8]

        init(width: Int, height: Int) {
            self.width = width
            self.height = height
            pixels = [UInt8](repeating: 255, count: width * height * 3)
        }

        var image: RGBImage { RGBImage(uncheckedWidth: width, height: height, pixels: pixels) }

        mutating func set(_ x: Int, _ y: Int, _ color: RGBColor) {
            let offset = (y * width + x) * 3
            (pixels[offset], pixels[offset + 1], pixels[offset + 2]) = (color.red, color.green, color.blue)
        }

        mutating func rect(x: Int, y: Int, width w: Int, height h: Int, _ color: RGBColor) {
            for row in max(0, y)..<max(max(0, y), min(height, y + h)) {
                for column in max(0, x)..<max(max(0, x), min(width, x + w)) { set(column, row, color) }
            }
        }

        mutating func circle(x: Int, y: Int, radius: Int, _ color: RGBColor) {
            for row in max(0, y - radius)..<max(max(0, y - radius), min(height, y + radius + 1)) {
                for column in max(0, x - radius)..<max(max(0, x - radius), min(width, x + radius + 1))
                where (column - x) * (column - x) + (row - y) * (row - y) <= radius * radius {
                    set(column, row, color)
                }
            }
        }

        /// Rows `from`..<`to` blended from `top` to `bottom`.
        mutating func gradient(top: RGBColor, bottom: RGBColor, from: Int, to: Int) {
            for row in max(0, from)..<max(max(0, from), min(height, to)) {
                let t = Double(row - from) / Double(max(1, to - from - 1))
                func mix(_ a: UInt8, _ b: UInt8) -> Int { Int((Double(a) * (1 - t) + Double(b) * t).rounded()) }
                let color = rgb(mix(top.red, bottom.red), mix(top.green, bottom.green), mix(top.blue, bottom.blue))
                rect(x: 0, y: row, width: width, height: 1, color)
            }
        }
    }

    /// A small deterministic generator (SplitMix64) seeded by a string's bytes (FNV-1a).
    struct SeedRandom {
        private var state: UInt64

        init(_ seed: String) {
            state = seed.utf8.reduce(0xcbf2_9ce4_8422_2325) { ($0 ^ UInt64($1)) &* 0x100_0000_01b3 }
        }

        /// A number in 0..<bound (0 when bound is under 1).
        mutating func next(_ bound: Int) -> Int {
            state &+= 0x9e37_79b9_7f4a_7c15
            var z = state
            z = (z ^ (z >> 30)) &* 0xbf58_476d_1ce4_e5b9
            z = (z ^ (z >> 27)) &* 0x94d0_49bb_1331_11eb
            z ^= z >> 31
            return bound < 1 ? 0 : Int(z % UInt64(bound))
        }
    }
}

/// A colour from channels given as Int, clamped to 0…255.
private func rgb(_ red: Int, _ green: Int, _ blue: Int) -> RGBColor {
    RGBColor(red: UInt8(clamping: red), green: UInt8(clamping: green), blue: UInt8(clamping: blue))
}
