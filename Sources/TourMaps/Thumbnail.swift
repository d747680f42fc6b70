import Foundation

extension RGBImage {
    /// The largest square centred in the image (the middle of a wide image, the middle of a
    /// tall one), resampled to `side`×`side` pixels (`side` at least 1).
    public func centreSquare(side: Int) -> RGBImage {
        precondition(side >= 1, "a square has at least one pixel")
        let crop = min(width, height)
        return resampled(left: (width - crop) / 2, top: (height - crop) / 2, width: crop, height: crop, toWidth: side, toHeight: side)
    }

    /// The whole image, its shape kept, resampled so that its longer side is `longest` pixels
    /// (an image already that small is answered as it is: never enlarged).
    public func fitted(longest: Int) -> RGBImage {
        precondition(longest >= 1, "an image has at least one pixel")
        guard max(width, height) > longest else { return self }
        let scale = Double(longest) / Double(max(width, height))
        let (newWidth, newHeight) = (max(1, Int((Double(width) * scale).rounded())), max(1, Int((Double(height) * scale).rounded())))
        return resampled(left: 0, top: 0, width: width, height: height, toWidth: newWidth, toHeight: newHeight)
    }

    /// The image as Exif `orientation` (1 to 8) says to show it: turned and mirrored so that its
    /// first row is the top (2 mirrors, 3 turns half round, 4 flips, 5 to 8 swap the sides: 6 is
    /// a quarter turn clockwise, 8 anticlockwise, 5 and 7 those mirrored). 1 and anything else
    /// answer the image as it is.
    public func oriented(_ orientation: Int) -> RGBImage {
        guard (2...8).contains(orientation) else { return self }
        let (w, h) = (width, height)
        let swapped = orientation >= 5
        let (outWidth, outHeight) = swapped ? (h, w) : (w, h)
        let count = outWidth * outHeight * 3
        let output = [UInt8](unsafeUninitializedCapacity: count) { target, initialized in
            pixels.withUnsafeBufferPointer { source in
                for y in 0..<outHeight {
                    for x in 0..<outWidth {
                        let (sx, sy): (Int, Int) =
                            switch orientation {
                            case 2: (w - 1 - x, y)
                            case 3: (w - 1 - x, h - 1 - y)
                            case 4: (x, h - 1 - y)
                            case 5: (y, x)
                            case 6: (y, h - 1 - x)
                            case 7: (w - 1 - y, h - 1 - x)
                            default: (w - 1 - y, x)
                            }
                        let from = (sy * w + sx) * 3
                        let to = (y * outWidth + x) * 3
                        target[to] = source[from]
                        target[to + 1] = source[from + 1]
                        target[to + 2] = source[from + 2]
                    }
                }
            }
            initialized = count
        }
        return RGBImage(uncheckedWidth: outWidth, height: outHeight, pixels: output)
    }

    /// The `width`×`height` rectangle at (`left`, `top`) resampled to `toWidth`×`toHeight`.
    ///
    /// Resampling is separable with a triangle (tent) filter whose width grows with the scale,
    /// as image libraries' "bilinear" resize does (Pillow's, for one): shrinking, each pixel is
    /// a weighted mean of all the source pixels it covers and their neighbours, so nothing
    /// aliases and no pixel is skipped; enlarging, it is plain bilinear interpolation.
    func resampled(left: Int, top: Int, width cropWidth: Int, height cropHeight: Int, toWidth: Int, toHeight: Int) -> RGBImage {
        let columns = ResampleWeights(from: left, length: cropWidth, to: toWidth)
        let rows = ResampleWeights(from: top, length: cropHeight, to: toHeight)
        // Across first, over the crop's rows only: `cropHeight` rows of `toWidth` pixels, as floats.
        var across = [Float](repeating: 0, count: cropHeight * toWidth * 3)
        pixels.withUnsafeBufferPointer { source in
            across.withUnsafeMutableBufferPointer { target in
                for row in 0..<cropHeight {
                    let sourceRow = (top + row) * width * 3
                    let targetRow = row * toWidth * 3
                    for x in 0..<toWidth {
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
        let rowLength = toWidth * 3
        let count = toHeight * rowLength
        let output = [UInt8](unsafeUninitializedCapacity: count) { target, initialized in
            across.withUnsafeBufferPointer { across in
                var sums = [Float](repeating: 0, count: rowLength)
                for y in 0..<toHeight {
                    for index in sums.indices { sums[index] = 0 }
                    rows.forEach(y) { row, weight in
                        // `rows` counts from `top`; `across` holds the crop's rows from 0.
                        let offset = (row - top) * rowLength
                        for index in 0..<rowLength { sums[index] += weight * across[offset + index] }
                    }
                    for index in 0..<rowLength { target[y * rowLength + index] = UInt8(min(255, max(0, sums[index].rounded()))) }
                }
            }
            initialized = count
        }
        return RGBImage(uncheckedWidth: toWidth, height: toHeight, pixels: output)
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
    /// (`decode(_:limits:minimumSide:)`), and turned as its Exif orientation says. What social
    /// keeps of a profile photo.
    public static func squares(of data: Data, limits: JPEGLimits = JPEGLimits(), sides: [Int], quality: Int) throws(JPEGError) -> [Data] {
        let image = try decode(data, limits: limits, minimumSide: sides.max() ?? 1).oriented(exifOrientation(data))
        var squares: [Data] = []
        for side in sides { squares.append(try image.centreSquare(side: side).jpeg(quality: quality)) }
        return squares
    }
}

extension JPEGImage {
    /// Checks `data` as `check` does and answers the whole image fitted within each of
    /// `longest` (see `RGBImage.fitted`), each a baseline JPEG at `quality` with 4:2:0 chroma,
    /// with its size: the image is decoded once, at the smallest fast scale that keeps the
    /// largest, and turned as its Exif orientation says. What the catalog keeps of a place's photo.
    public static func fitted(of data: Data, limits: JPEGLimits = JPEGLimits(), longest: [Int], quality: Int) throws(JPEGError) -> [(jpeg: Data, width: Int, height: Int)] {
        let image = try decode(data, limits: limits, minimumLongSide: longest.max() ?? 1).oriented(exifOrientation(data))
        var versions: [(jpeg: Data, width: Int, height: Int)] = []
        for side in longest {
            let version = image.fitted(longest: side)
            versions.append((try version.jpeg(quality: quality), version.width, version.height))
        }
        return versions
    }
}
