import Foundation
import Geo

/// The colours and sizes of a drawn tour map. Sizes are clamped to 1…64 pixels.
public struct MapStyle: Sendable, Equatable {
    public var background = RGBColor(red: 244, green: 240, blue: 228)
    public var grid = RGBColor(red: 214, green: 208, blue: 194)
    public var route = RGBColor(red: 200, green: 40, blue: 40)
    public var stop = RGBColor(red: 20, green: 60, blue: 160)
    /// The ring around each stop's dot, so it stands out on the route.
    public var stopRing = RGBColor(red: 255, green: 255, blue: 255)
    public var label = RGBColor(red: 20, green: 20, blue: 20)
    public var labelBackground = RGBColor(red: 255, green: 255, blue: 255)
    /// Width of the route line in pixels.
    public var routeWidth: Int { didSet { routeWidth = Self.clamped(routeWidth) } }
    /// Radius of a stop's dot in pixels (the ring adds 2).
    public var stopRadius: Int { didSet { stopRadius = Self.clamped(stopRadius) } }
    /// Pixels between grid lines, which pass through the image's centre.
    public var gridSpacing: Int { didSet { gridSpacing = Self.clamped(gridSpacing) } }
    /// Each pixel of the 5×7 digit font becomes a square this many pixels wide.
    public var labelScale: Int { didSet { labelScale = Self.clamped(labelScale) } }

    public init(routeWidth: Int = 6, stopRadius: Int = 9, gridSpacing: Int = 64, labelScale: Int = 2) {
        self.routeWidth = Self.clamped(routeWidth)
        self.stopRadius = Self.clamped(stopRadius)
        self.gridSpacing = Self.clamped(gridSpacing)
        self.labelScale = Self.clamped(labelScale)
    }

    private static func clamped(_ value: Int) -> Int { min(64, max(1, value)) }
}

/// A tour map drawn by `MapCanvas`: the JPEG and where its pixels are on Earth.
public struct DrawnMap: Sendable {
    /// The map, a baseline JPEG of `width`×`height` pixels (4:4:4, so thin lines keep colour).
    public let jpeg: Data
    public let width: Int
    public let height: Int
    /// The image's four corners, (0, 0), (width, 0), (0, height) and (width, height), with
    /// the places the drawing put there: `MapGeoreference.fit` of them has an RMS of about 0.
    public let controlPoints: [ControlPoint]
    /// Where each stop was drawn, in continuous pixel coordinates (see `ControlPoint`), in
    /// the order given.
    public let stopPixels: [PixelPoint]
    /// Metres on the ground per pixel, the same across and down.
    public let metersPerPixel: Double
}

/// A position on an image in continuous pixel coordinates (see `ControlPoint`).
public struct PixelPoint: Sendable, Hashable {
    public let x: Double
    public let y: Double

    public init(x: Double, y: Double) {
        self.x = x
        self.y = y
    }
}

/// Why a map could not be drawn.
public enum MapCanvasError: Error, Sendable, Equatable, CustomStringConvertible {
    /// No stops, or more than `MapCanvas.maxStops`.
    case stopCount(Int, maximum: Int)
    /// A side outside `MapCanvas.sideRange`, or more pixels than `MapCanvas.maxPixels`.
    case invalidSize(width: Int, height: Int)
    /// Compressing the drawing failed (in libjpeg-turbo).
    case encoding(JPEGError)

    public var description: String {
        switch self {
        case .stopCount(let count, let maximum): "a drawn map needs between 1 and \(maximum) stops, got \(count)"
        case .invalidSize(let width, let height):
            "a drawn map's sides must be in \(MapCanvas.sideRange) pixels and at most \(MapCanvas.maxPixels) pixels in all, got \(width)×\(height)"
        case .encoding(let error): "the drawn map could not be compressed: \(error)"
        }
    }
}

/// Draws a tour's map on a blank canvas, for the demo's tours (no map tiles, so nothing
/// copyrighted): a background, a grid, the route as a thick line through the stops in
/// order, a dot for each stop and its number beside it.
///
/// The projection is north-up and equirectangular around the stops' bounding box (the same
/// metres per pixel across and down), fitted inside a margin; a single stop, or stops closer
/// together than `minimumSpanMeters`, get a map `minimumSpanMeters` across.
public enum MapCanvas {
    /// The sides a drawn map may have, in pixels.
    public static let sideRange = 16...8192
    /// The most pixels a drawn map may have (as a map upload).
    public static let maxPixels = 40_000_000
    /// The most stops a drawn map may have.
    public static let maxStops = 100
    /// The least ground a map shows across its stops, in metres.
    public static let minimumSpanMeters = 100.0

    /// Draws the map of `stops` (in tour order) at `width`×`height` and compresses it at
    /// `quality` (clamped to 1…100). `marginPixels` is kept free around the stops (at most a
    /// quarter of the shorter side).
    public static func draw(
        stops: [Coordinate], width: Int, height: Int, style: MapStyle = MapStyle(), marginPixels: Int = 48,
        quality: Int = 90
    ) throws(MapCanvasError) -> DrawnMap {
        guard (1...maxStops).contains(stops.count) else { throw .stopCount(stops.count, maximum: maxStops) }
        guard sideRange.contains(width), sideRange.contains(height), width * height <= maxPixels else {
            throw .invalidSize(width: width, height: height)
        }
        let projection = CanvasProjection(stops: stops, width: width, height: height, margin: min(max(0, marginPixels), min(width, height) / 4))
        let stopPixels = stops.map(projection.pixel)
        var canvas = Canvas(width: width, height: height, fill: style.background)
        canvas.drawGrid(spacing: style.gridSpacing, color: style.grid)
        for (from, to) in zip(stopPixels, stopPixels.dropFirst()) {
            canvas.drawLine(from: from, to: to, width: Double(style.routeWidth), color: style.route)
        }
        // Labels before dots, so a label never covers a stop's dot.
        let scale = style.labelScale
        for (index, point) in stopPixels.enumerated() {
            canvas.drawNumber(
                index + 1, left: Int(point.x.rounded(.down)) + style.stopRadius + 4,
                top: Int(point.y.rounded(.down)) - 7 * scale / 2, scale: scale, color: style.label,
                background: style.labelBackground)
        }
        for point in stopPixels {
            canvas.fillDisk(center: point, radius: Double(style.stopRadius + 2), color: style.stopRing)
            canvas.fillDisk(center: point, radius: Double(style.stopRadius), color: style.stop)
        }
        let jpeg: Data
        do {
            jpeg = try RGBImage(uncheckedWidth: width, height: height, pixels: canvas.pixels).jpeg(quality: quality, fullColor: true)
        } catch {
            throw .encoding(error)
        }
        let corners = [(0.0, 0.0), (Double(width), 0.0), (0.0, Double(height)), (Double(width), Double(height))]
        return DrawnMap(
            jpeg: jpeg, width: width, height: height,
            controlPoints: corners.map { ControlPoint(x: $0.0, y: $0.1, coordinate: projection.coordinate(x: $0.0, y: $0.1)) },
            stopPixels: stopPixels, metersPerPixel: projection.metersPerPixel)
    }
}

/// Places to pixels and back for a drawn map: a `LocalMetricFrame` scaled and centred.
struct CanvasProjection {
    let frame: LocalMetricFrame
    let metersPerPixel: Double
    /// The metres (east, north) at the image's centre.
    let centerEast: Double, centerNorth: Double
    let width: Int, height: Int

    init(stops: [Coordinate], width: Int, height: Int, margin: Int) {
        frame = LocalMetricFrame(origin: meanCoordinate(stops))
        let projected = stops.map(frame.project)
        let east = projected.map(\.east)
        let north = projected.map(\.north)
        let (minEast, maxEast) = (east.min() ?? 0, east.max() ?? 0)
        let (minNorth, maxNorth) = (north.min() ?? 0, north.max() ?? 0)
        let spanEast = max(maxEast - minEast, MapCanvas.minimumSpanMeters)
        let spanNorth = max(maxNorth - minNorth, MapCanvas.minimumSpanMeters)
        metersPerPixel = max(spanEast / Double(width - 2 * margin), spanNorth / Double(height - 2 * margin))
        centerEast = (minEast + maxEast) / 2
        centerNorth = (minNorth + maxNorth) / 2
        self.width = width
        self.height = height
    }

    func pixel(_ coordinate: Coordinate) -> PixelPoint {
        let (east, north) = frame.project(coordinate)
        return PixelPoint(
            x: Double(width) / 2 + (east - centerEast) / metersPerPixel,
            y: Double(height) / 2 - (north - centerNorth) / metersPerPixel)
    }

    func coordinate(x: Double, y: Double) -> Coordinate {
        frame.unproject(
            east: centerEast + (x - Double(width) / 2) * metersPerPixel,
            north: centerNorth - (y - Double(height) / 2) * metersPerPixel)
    }
}

/// An RGB drawing surface; every drawing call clips to it.
struct Canvas {
    let width: Int
    let height: Int
    /// `width * height * 3` bytes, rows top to bottom.
    var pixels: [UInt8]

    init(width: Int, height: Int, fill: RGBColor) {
        self.width = width
        self.height = height
        pixels = [UInt8](repeating: 0, count: width * height * 3)
        for offset in stride(from: 0, to: pixels.count, by: 3) {
            pixels[offset] = fill.red
            pixels[offset + 1] = fill.green
            pixels[offset + 2] = fill.blue
        }
    }

    mutating func set(_ x: Int, _ y: Int, _ color: RGBColor) {
        guard x >= 0, y >= 0, x < width, y < height else { return }
        let offset = (y * width + x) * 3
        pixels[offset] = color.red
        pixels[offset + 1] = color.green
        pixels[offset + 2] = color.blue
    }

    /// One-pixel lines every `spacing` pixels, through the centre.
    mutating func drawGrid(spacing: Int, color: RGBColor) {
        for x in stride(from: (width / 2) % spacing, to: width, by: spacing) {
            for y in 0..<height { set(x, y, color) }
        }
        for y in stride(from: (height / 2) % spacing, to: height, by: spacing) {
            for x in 0..<width { set(x, y, color) }
        }
    }

    /// Every pixel whose centre is within `radius` of `center`.
    mutating func fillDisk(center: PixelPoint, radius: Double, color: RGBColor) {
        let top = Int((center.y - radius).rounded(.down))
        let bottom = Int((center.y + radius).rounded(.up))
        let left = Int((center.x - radius).rounded(.down))
        let right = Int((center.x + radius).rounded(.up))
        let (firstRow, lastRow) = (max(0, top), min(height - 1, bottom))
        let (firstColumn, lastColumn) = (max(0, left), min(width - 1, right))
        guard firstRow <= lastRow, firstColumn <= lastColumn else { return }  // off the canvas
        for y in firstRow...lastRow {
            for x in firstColumn...lastColumn {
                let dx = Double(x) + 0.5 - center.x
                let dy = Double(y) + 0.5 - center.y
                if dx * dx + dy * dy <= radius * radius { set(x, y, color) }
            }
        }
    }

    /// A line `width` pixels thick with round ends: disks a pixel apart along it.
    mutating func drawLine(from: PixelPoint, to: PixelPoint, width: Double, color: RGBColor) {
        let length = ((to.x - from.x) * (to.x - from.x) + (to.y - from.y) * (to.y - from.y)).squareRoot()
        let steps = max(1, Int(length.rounded(.up)))
        for step in 0...steps {
            let t = Double(step) / Double(steps)
            fillDisk(
                center: PixelPoint(x: from.x + (to.x - from.x) * t, y: from.y + (to.y - from.y) * t),
                radius: width / 2, color: color)
        }
    }

    /// `number`'s decimal digits in the 5×7 font, each font pixel a `scale`-wide square, on a
    /// `background` box with a one-square border, its top-left corner at (`left`, `top`).
    mutating func drawNumber(_ number: Int, left: Int, top: Int, scale: Int, color: RGBColor, background: RGBColor) {
        let digits = String(number).compactMap { $0.wholeNumberValue }
        let advance = 6 * scale
        for y in (top - scale)..<(top + 8 * scale) {
            for x in (left - scale)..<(left + digits.count * advance) { set(x, y, background) }
        }
        for (position, digit) in digits.enumerated() {
            for (row, bits) in digitFont[digit].enumerated() {
                for column in 0..<5 where bits & (0b10000 >> column) != 0 {
                    for dy in 0..<scale {
                        for dx in 0..<scale {
                            set(left + position * advance + column * scale + dx, top + row * scale + dy, color)
                        }
                    }
                }
            }
        }
    }
}

/// The digits 0–9 in a 5×7 pixel font: 7 rows each, the leftmost pixel the highest of 5 bits.
let digitFont: [[UInt8]] = [
    [0b01110, 0b10001, 0b10011, 0b10101, 0b11001, 0b10001, 0b01110],
    [0b00100, 0b01100, 0b00100, 0b00100, 0b00100, 0b00100, 0b01110],
    [0b01110, 0b10001, 0b00001, 0b00010, 0b00100, 0b01000, 0b11111],
    [0b11111, 0b00010, 0b00100, 0b00010, 0b00001, 0b10001, 0b01110],
    [0b00010, 0b00110, 0b01010, 0b10010, 0b11111, 0b00010, 0b00010],
    [0b11111, 0b10000, 0b11110, 0b00001, 0b00001, 0b10001, 0b01110],
    [0b00110, 0b01000, 0b10000, 0b11110, 0b10001, 0b10001, 0b01110],
    [0b11111, 0b00001, 0b00010, 0b00100, 0b01000, 0b01000, 0b01000],
    [0b01110, 0b10001, 0b10001, 0b01110, 0b10001, 0b10001, 0b01110],
    [0b01110, 0b10001, 0b10001, 0b01111, 0b00001, 0b00010, 0b01100],
]
