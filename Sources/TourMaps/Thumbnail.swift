import Foundation

extension RGBImage {
    /// The largest square centred in the image (the middle of a wide image, the middle of a
    /// tall one), resampled to `side`×`side` pixels (`side` at least 1).
    ///
    /// Resampling is separable with a triangle (tent) filter whose width grows with the scale,
    /// as image libraries' "bilinear" resize does (Pillow's, for one): shrinking, each pixel is
    /// a weighted mean of all the source pixels it covers and their neighbours, so nothing
    /// aliases and no pixel is skipped; enlarging, it is plain bilinear interpolation.
    public func centreSquare(side: Int) -> RGBImage {
        precondition(side >= 1, "a square has at least one pixel")
        let crop = min(width, height)
        let left = (width - crop) / 2
        let top = (height - crop) / 2
        let columns = ResampleWeights(from: left, length: crop, to: side)
        let rows = ResampleWeights(from: top, length: crop, to: side)
        // Across first, over the crop's rows only: `crop` rows of `side` pixels, as floats.
        var across = [Float](repeating: 0, count: crop * side * 3)
        pixels.withUnsafeBufferPointer { source in
            across.withUnsafeMutableBufferPointer { target in
                for row in 0..<crop {
                    let sourceRow = (top + row) * width * 3
                    let targetRow = row * side * 3
                    for x in 0..<side {
                        var red: Float = 0
                        var green: Float = 0
                        var blue: Float = 0
                        columns.forEach(x) { column, weight in
                            let offset = sourceRow + column * 3
                            red += weight * Float(source[offset])
                            green += weight * Float(source[offset + 1])
                            blue += weight * Float(source[offset + 2])
                        }
                        let offset = targetRow + x * 3
                        target[offset] = red
                        target[offset + 1] = green
                        target[offset + 2] = blue
                    }
                }
            }
        }
        // Then down: each output row from the rows of `across` its weights name.
        let count = side * side * 3
        let output = [UInt8](unsafeUninitializedCapacity: count) { target, initialized in
            across.withUnsafeBufferPointer { across in
                var sums = [Float](repeating: 0, count: side * 3)
                for y in 0..<side {
                    for index in sums.indices { sums[index] = 0 }
                    rows.forEach(y) { row, weight in
                        // `rows` counts from `top`; `across` holds the crop's rows from 0.
                        let offset = (row - top) * side * 3
                        for index in 0..<(side * 3) { sums[index] += weight * across[offset + index] }
                    }
                    for index in 0..<(side * 3) { target[y * side * 3 + index] = UInt8(min(255, max(0, sums[index].rounded()))) }
                }
            }
            initialized = count
        }
        return RGBImage(uncheckedWidth: side, height: side, pixels: output)
    }
}

/// For each output pixel along one axis, the source pixels it is made of and their weights
/// (a tent filter, summing to 1).
struct ResampleWeights {
    private var first: [Int] = []
    private var counts: [Int] = []
    private var weights: [Float] = []
    private var stride = 0

    /// Weights that map `length` source pixels starting at `start` onto `outputs` pixels.
    init(from start: Int, length: Int, to outputs: Int) {
        let scale = Double(length) / Double(outputs)
        let radius = max(scale, 1)
        stride = Int(radius.rounded(.up)) * 2 + 2
        weights = [Float](repeating: 0, count: outputs * stride)
        for output in 0..<outputs {
            // Centres in source coordinates: pixel j covers [j, j + 1).
            let centre = (Double(output) + 0.5) * scale
            let low = max(0, Int((centre - radius).rounded(.down)))
            let high = min(length, Int((centre + radius).rounded(.up)))
            var total = 0.0
            var raw: [Double] = []
            for source in low..<high {
                let weight = max(0, 1 - abs((Double(source) + 0.5 - centre) / radius))
                raw.append(weight)
                total += weight
            }
            // The tent is never empty: the pixel under the centre has a positive weight.
            for (index, weight) in raw.enumerated() { weights[output * stride + index] = Float(weight / total) }
            first.append(start + low)
            counts.append(raw.count)
        }
    }

    /// Calls `body` with each source pixel of output pixel `output` and its weight.
    @inline(__always)
    func forEach(_ output: Int, _ body: (Int, Float) -> Void) {
        let base = output * stride
        for index in 0..<counts[output] { body(first[output] + index, weights[base + index]) }
    }
}

extension JPEGImage {
    /// Checks `data` as `check` does and answers a centred square of it for each of `sides`
    /// (see `RGBImage.centreSquare`), each a baseline JPEG at `quality` with 4:2:0 chroma: the
    /// image is decoded once, at the smallest fast scale that keeps the largest side
    /// (`decode(_:limits:minimumSide:)`). What social keeps of a profile photo.
    public static func squares(of data: Data, limits: JPEGLimits = JPEGLimits(), sides: [Int], quality: Int) throws(JPEGError) -> [Data] {
        let image = try decode(data, limits: limits, minimumSide: sides.max() ?? 1)
        var squares: [Data] = []
        for side in sides { squares.append(try image.centreSquare(side: side).jpeg(quality: quality)) }
        return squares
    }
}
