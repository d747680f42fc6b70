import Foundation
import Geo

/// A point of a map image tied to the place on Earth it shows.
///
/// Pixel coordinates are continuous: x to the right, y down, (0, 0) the top-left corner of
/// the top-left pixel, so the centre of the pixel in column i, row j is (i + 0.5, j + 0.5)
/// and the whole image is [0, width] × [0, height]. JSON: `{"x":…,"y":…,"lat":…,"lon":…}`.
public struct ControlPoint: Sendable, Hashable, Codable {
    public let x: Double
    public let y: Double
    public let coordinate: Coordinate

    public init(x: Double, y: Double, coordinate: Coordinate) {
        self.x = x
        self.y = y
        self.coordinate = coordinate
    }

    private enum CodingKeys: String, CodingKey { case x, y, lat, lon }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        x = try container.decode(Double.self, forKey: .x)
        y = try container.decode(Double.self, forKey: .y)
        coordinate = try Coordinate(from: decoder)
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(x, forKey: .x)
        try container.encode(y, forKey: .y)
        try container.encode(coordinate.latitude, forKey: .lat)
        try container.encode(coordinate.longitude, forKey: .lon)
    }
}

/// A 2-D affine map: (u, v) = (a·x + b·y + c, d·x + e·y + f).
public struct Affine2D: Sendable, Hashable, Codable {
    public var a, b, c, d, e, f: Double

    public init(a: Double, b: Double, c: Double, d: Double, e: Double, f: Double) {
        (self.a, self.b, self.c, self.d, self.e, self.f) = (a, b, c, d, e, f)
    }

    /// a·e − b·d: zero when the map squashes the plane onto a line.
    public var determinant: Double { a * e - b * d }

    /// The image of (x, y).
    public func apply(_ x: Double, _ y: Double) -> (Double, Double) {
        (a * x + b * y + c, d * x + e * y + f)
    }

    /// The inverse map; nil when the determinant is zero or not finite.
    public var inverse: Affine2D? {
        let det = determinant
        guard det != 0, det.isFinite else { return nil }
        let ia = e / det
        let ib = -b / det
        let id = -d / det
        let ie = a / det
        return Affine2D(a: ia, b: ib, c: -(ia * c + ib * f), d: id, e: ie, f: -(id * c + ie * f))
    }
}

/// A flat frame in metres around an origin: east and north distances by the
/// equirectangular projection (x = R·cos(lat₀)·Δlon, y = R·Δlat, in radians).
///
/// Over the few kilometres of a tour map it differs from great-circle distances by far
/// less than a metre, and because it is linear in latitude and longitude, an affine map
/// from pixels to this frame is also an affine map from pixels to degrees (the world file).
public struct LocalMetricFrame: Sendable, Hashable, Codable {
    /// The frame's (0, 0).
    public let origin: Coordinate
    /// Metres per degree of longitude at the origin's latitude.
    let metersPerDegreeEast: Double
    /// Metres per degree of latitude.
    let metersPerDegreeNorth: Double

    private enum CodingKeys: String, CodingKey { case origin }

    public init(origin: Coordinate) {
        self.origin = origin
        metersPerDegreeNorth = Earth.meanRadiusMeters * .pi / 180
        metersPerDegreeEast = metersPerDegreeNorth * cos(origin.latitude * .pi / 180)
    }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        self.init(origin: try container.decode(Coordinate.self, forKey: .origin))
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(origin, forKey: .origin)
    }

    /// (east, north) of `coordinate` in metres; longitudes are taken the short way round, so
    /// a map across the 180th meridian works.
    public func project(_ coordinate: Coordinate) -> (east: Double, north: Double) {
        var deltaLon = coordinate.longitude - origin.longitude
        if deltaLon > 180 { deltaLon -= 360 } else if deltaLon < -180 { deltaLon += 360 }
        return (deltaLon * metersPerDegreeEast, (coordinate.latitude - origin.latitude) * metersPerDegreeNorth)
    }

    /// The coordinate at (east, north) metres; latitude clamped to ±90, longitude wrapped
    /// into [-180, 180].
    public func unproject(east: Double, north: Double) -> Coordinate {
        let latitude = min(90, max(-90, origin.latitude + north / metersPerDegreeNorth))
        var longitude = origin.longitude + east / metersPerDegreeEast
        if !(-180...180).contains(longitude) {
            longitude = (longitude + 180).truncatingRemainder(dividingBy: 360)
            if longitude < 0 { longitude += 360 }
            longitude -= 180
        }
        return Coordinate(uncheckedLatitude: latitude, longitude: longitude)
    }
}

/// Why control points were refused.
public enum AffineFitError: Error, Sendable, Equatable, CustomStringConvertible {
    /// Fewer than 3 points, or more than the bound.
    case pointCount(Int, minimum: Int, maximum: Int)
    /// The image size is not at least 1×1.
    case invalidImageSize(width: Int, height: Int)
    /// A point's pixel is not finite or lies outside [0, width] × [0, height].
    case pointOutsideImage(index: Int, x: Double, y: Double, width: Int, height: Int)
    /// A point is further than 85° from the equator, where a flat frame stops working.
    case tooCloseToPole(index: Int, latitude: Double)
    /// The points' pixels (`side` "pixel") or places (`side` "geographic") lie on or near one
    /// line: the spread across is `conditionNumber` times smaller than along, over the bound.
    case nearlyCollinear(side: String, conditionNumber: Double, limit: Double)
    /// The points do not agree with any affine map: the RMS residual is over the bound.
    case residualTooLarge(rmsMeters: Double, limitMeters: Double, residualsMeters: [Double])

    /// A message for the person who placed the points.
    public var description: String {
        switch self {
        case .pointCount(let count, let minimum, let maximum):
            "a map needs between \(minimum) and \(maximum) control points, got \(count)"
        case .invalidImageSize(let width, let height):
            "the image size \(width)×\(height) is not at least 1×1"
        case .pointOutsideImage(let index, let x, let y, let width, let height):
            "control point \(index) at pixel (\(x), \(y)) is outside the \(width)×\(height) image"
        case .tooCloseToPole(let index, let latitude):
            "control point \(index) at latitude \(latitude) is beyond ±85°, where the map projection fails"
        case .nearlyCollinear(let side, let condition, let limit):
            "the control points' \(side) positions are (nearly) on one line (condition number "
                + "\(condition.isFinite ? String(format: "%.1f", condition) : "infinite") over \(String(format: "%.0f", limit))): "
                + "spread them out across the map"
        case .residualTooLarge(let rms, let limit, let residuals):
            "the control points do not fit one map: RMS residual \(String(format: "%.1f", rms)) m over \(String(format: "%.0f", limit)) m; "
                + "residuals in metres: " + residuals.map { String(format: "%.1f", $0) }.joined(separator: ", ")
        }
    }
}

/// The bounds an affine fit enforces.
public struct AffineFitLimits: Sendable, Equatable {
    /// The largest RMS residual accepted, in metres (default 25).
    public var maxRMSMeters: Double
    /// The largest condition number of the points' spread accepted, on either side (default
    /// 100): the ratio of the spread along the points' main direction to the spread across it.
    /// Three points in a right triangle with legs of 1000 and 100 pixels have about 10.
    public var maxConditionNumber: Double
    /// The most control points accepted (default 100).
    public var maxPoints: Int

    public init(maxRMSMeters: Double = 25, maxConditionNumber: Double = 100, maxPoints: Int = 100) {
        self.maxRMSMeters = maxRMSMeters
        self.maxConditionNumber = maxConditionNumber
        self.maxPoints = maxPoints
    }
}

/// A map image tied to the Earth: an affine map from its pixels to a `LocalMetricFrame`,
/// fitted to control points by least squares, and the way back.
///
/// Codable, to be stored as `fit` made it; decoding trusts the stored numbers (it does not fit
/// again), so decode only what this module encoded, or keep the control points and fit again.
public struct MapGeoreference: Sendable, Hashable, Codable {
    /// The image's width in pixels.
    public let width: Int
    /// The image's height in pixels.
    public let height: Int
    /// The metric frame, around the mean of the control points.
    public let frame: LocalMetricFrame
    /// Pixel (x, y) → (east, north) metres in `frame`.
    public let pixelToMeters: Affine2D
    /// (east, north) metres → pixel (x, y).
    public let metersToPixel: Affine2D
    /// Each control point's residual in metres, in the order given: the distance between
    /// its place and where the fitted map puts its pixel.
    public let residualsMeters: [Double]
    /// The root mean square of `residualsMeters`.
    public let rmsMeters: Double

    /// Fits pixels to places by least squares and checks the result.
    ///
    /// Refuses fewer than 3 points (or more than `limits.maxPoints`), a pixel outside
    /// [0, width] × [0, height], a point beyond ±85° latitude, points whose pixels or places
    /// are on or near one line (condition number over `limits.maxConditionNumber`), and an RMS
    /// residual over `limits.maxRMSMeters`.
    public static func fit(
        _ points: [ControlPoint], width: Int, height: Int, limits: AffineFitLimits = AffineFitLimits()
    ) throws(AffineFitError) -> MapGeoreference {
        guard width >= 1, height >= 1 else { throw .invalidImageSize(width: width, height: height) }
        guard (3...max(3, limits.maxPoints)).contains(points.count) else {
            throw .pointCount(points.count, minimum: 3, maximum: max(3, limits.maxPoints))
        }
        for (index, point) in points.enumerated() {
            guard point.x.isFinite, point.y.isFinite, (0...Double(width)).contains(point.x), (0...Double(height)).contains(point.y)
            else { throw .pointOutsideImage(index: index, x: point.x, y: point.y, width: width, height: height) }
            guard abs(point.coordinate.latitude) <= 85 else {
                throw .tooCloseToPole(index: index, latitude: point.coordinate.latitude)
            }
        }
        let frame = LocalMetricFrame(origin: meanCoordinate(points.map(\.coordinate)))
        let pixels = points.map { ($0.x, $0.y) }
        let meters = points.map { frame.project($0.coordinate) }.map { ($0.east, $0.north) }
        let pixelSpread = Spread(pixels)
        let meterSpread = Spread(meters)
        for (side, spread) in [("pixel", pixelSpread), ("geographic", meterSpread)] {
            let condition = spread.conditionNumber
            guard condition <= limits.maxConditionNumber else {
                throw .nearlyCollinear(side: side, conditionNumber: condition, limit: limits.maxConditionNumber)
            }
        }
        // With centred pixels the normal equations split: the linear part solves the 2×2 system
        // of the pixel spread for each output, and the constant is the outputs' mean.
        let (mx, my) = pixelSpread.mean
        let (me, mn) = meterSpread.mean
        var sxe = 0.0
        var sye = 0.0
        var sxn = 0.0
        var syn = 0.0
        for (pixel, meter) in zip(pixels, meters) {
            let dx = pixel.0 - mx
            let dy = pixel.1 - my
            sxe += dx * (meter.0 - me)
            sye += dy * (meter.0 - me)
            sxn += dx * (meter.1 - mn)
            syn += dy * (meter.1 - mn)
        }
        let (sxx, sxy, syy) = (pixelSpread.sxx, pixelSpread.sxy, pixelSpread.syy)
        let det = sxx * syy - sxy * sxy  // > 0: the condition check passed
        let a = (syy * sxe - sxy * sye) / det
        let b = (sxx * sye - sxy * sxe) / det
        let d = (syy * sxn - sxy * syn) / det
        let e = (sxx * syn - sxy * sxn) / det
        let forward = Affine2D(a: a, b: b, c: me - a * mx - b * my, d: d, e: e, f: mn - d * mx - e * my)
        guard let inverse = forward.inverse else {
            // Unreachable after both condition checks; kept as a typed refusal, not a trap.
            throw .nearlyCollinear(side: "geographic", conditionNumber: .infinity, limit: limits.maxConditionNumber)
        }
        let residuals = zip(pixels, meters).map { pixel, meter in
            let (east, north) = forward.apply(pixel.0, pixel.1)
            return ((east - meter.0) * (east - meter.0) + (north - meter.1) * (north - meter.1)).squareRoot()
        }
        let rms = (residuals.map { $0 * $0 }.reduce(0, +) / Double(residuals.count)).squareRoot()
        guard rms <= limits.maxRMSMeters else {
            throw .residualTooLarge(rmsMeters: rms, limitMeters: limits.maxRMSMeters, residualsMeters: residuals)
        }
        return MapGeoreference(
            width: width, height: height, frame: frame, pixelToMeters: forward, metersToPixel: inverse,
            residualsMeters: residuals, rmsMeters: rms)
    }

    /// The place shown at pixel (x, y) (continuous coordinates, as in `ControlPoint`).
    public func coordinate(x: Double, y: Double) -> Coordinate {
        let (east, north) = pixelToMeters.apply(x, y)
        return frame.unproject(east: east, north: north)
    }

    /// The pixel (continuous coordinates) that shows `coordinate`; it may be off the image.
    public func pixel(of coordinate: Coordinate) -> (x: Double, y: Double) {
        let (east, north) = frame.project(coordinate)
        let (x, y) = metersToPixel.apply(east, north)
        return (x, y)
    }

    /// The direction on the image of the compass bearing `bearingDegrees` (0 north, 90 east),
    /// in degrees [0, 360) clockwise from the image's up: what a phone turns a heading arrow by
    /// on a map that is not drawn north-up. The same everywhere on the map (the map is affine).
    public func imageAngle(ofBearing bearingDegrees: Double) -> Double {
        let radians = bearingDegrees * .pi / 180
        let m = metersToPixel
        // A step along the bearing in metres, (east, north), through the linear part only.
        let (east, north) = (sin(radians), cos(radians))
        let dx = m.a * east + m.b * north
        let dy = m.d * east + m.e * north
        var angle = atan2(dx, -dy) * 180 / .pi
        if angle < 0 { angle += 360 }
        return angle < 360 ? angle : 0
    }

    /// Whether the pixel (x, y) lies on the image, [0, width) × [0, height).
    public func isOnMap(x: Double, y: Double) -> Bool {
        x >= 0 && y >= 0 && x < Double(width) && y < Double(height)
    }

    /// Pixel index (column i, row j) → degrees: lon = A·i + B·j + C, lat = D·i + E·j + F, where
    /// (C, F) is the centre of the top-left pixel; the world file's convention.
    public var pixelIndexToDegrees: Affine2D {
        let kEast = 1 / frame.metersPerDegreeEast
        let kNorth = 1 / frame.metersPerDegreeNorth
        let m = pixelToMeters
        // Pixel index i has its centre at x = i + 0.5.
        let (eastAtCentre, northAtCentre) = m.apply(0.5, 0.5)
        return Affine2D(
            a: kEast * m.a, b: kEast * m.b, c: frame.origin.longitude + kEast * eastAtCentre,
            d: kNorth * m.d, e: kNorth * m.e, f: frame.origin.latitude + kNorth * northAtCentre)
    }

    /// The ESRI world file (`.jgw`) for the image: six lines, A D B E C F, in degrees
    /// (longitude, latitude on WGS 84, EPSG:4326) per pixel, for
    /// lon = A·i + B·j + C and lat = D·i + E·j + F, with i the column and j the row of a pixel
    /// and (C, F) the centre of the top-left pixel. For a north-up map, B and D are 0 and E is
    /// negative. Numbers are written so that reading them back gives the same doubles.
    public var worldFile: String {
        let t = pixelIndexToDegrees
        return [t.a, t.d, t.b, t.e, t.c, t.f].map { "\($0)" }.joined(separator: "\n") + "\n"
    }

    /// Makes a georeference from a stored one's parts, as `fit` made them.
    init(
        width: Int, height: Int, frame: LocalMetricFrame, pixelToMeters: Affine2D, metersToPixel: Affine2D,
        residualsMeters: [Double], rmsMeters: Double
    ) {
        self.width = width
        self.height = height
        self.frame = frame
        self.pixelToMeters = pixelToMeters
        self.metersToPixel = metersToPixel
        self.residualsMeters = residualsMeters
        self.rmsMeters = rmsMeters
    }
}

/// The mean of coordinates, with longitudes taken relative to the first so that points on
/// both sides of the 180th meridian average to a point between them.
func meanCoordinate(_ coordinates: [Coordinate]) -> Coordinate {
    let reference = coordinates[0].longitude
    var latitude = 0.0
    var offset = 0.0
    for coordinate in coordinates {
        latitude += coordinate.latitude
        var delta = coordinate.longitude - reference
        if delta > 180 { delta -= 360 } else if delta < -180 { delta += 360 }
        offset += delta
    }
    let count = Double(coordinates.count)
    var longitude = reference + offset / count
    if longitude > 180 { longitude -= 360 } else if longitude < -180 { longitude += 360 }
    return Coordinate(uncheckedLatitude: latitude / count, longitude: longitude)
}

/// How points spread in a plane: their mean and the sums of squared deviations.
struct Spread {
    let mean: (Double, Double)
    let sxx: Double, sxy: Double, syy: Double

    init(_ points: [(Double, Double)]) {
        let count = Double(points.count)
        let mx = points.map(\.0).reduce(0, +) / count
        let my = points.map(\.1).reduce(0, +) / count
        var sxx = 0.0
        var sxy = 0.0
        var syy = 0.0
        for (x, y) in points {
            sxx += (x - mx) * (x - mx)
            sxy += (x - mx) * (y - my)
            syy += (y - my) * (y - my)
        }
        (mean, self.sxx, self.sxy, self.syy) = ((mx, my), sxx, sxy, syy)
    }

    /// The ratio of the largest to the smallest singular value of the centred points: 1 for
    /// points spread evenly in every direction, infinite for points on one line (or one point).
    var conditionNumber: Double {
        // Eigenvalues of [[sxx, sxy], [sxy, syy]], the squares of the singular values.
        let half = (sxx + syy) / 2
        let root = (((sxx - syy) / 2) * ((sxx - syy) / 2) + sxy * sxy).squareRoot()
        let largest = half + root
        let smallest = half - root
        guard largest > 0, smallest > largest * 1e-24 else { return .infinity }
        return (largest / smallest).squareRoot()
    }
}
