import Foundation
import Geo
import Testing
import TourMaps

/// Four stops of a walk around Circular Quay, Sydney.
let quayWalk = [
    Coordinate(uncheckedLatitude: -33.8568, longitude: 151.2153),  // Opera House
    Coordinate(uncheckedLatitude: -33.8610, longitude: 151.2110),  // Circular Quay
    Coordinate(uncheckedLatitude: -33.8599, longitude: 151.2090),  // The Rocks
    Coordinate(uncheckedLatitude: -33.8523, longitude: 151.2108),  // Harbour Bridge
]

@Suite struct MapCanvasTests {
    @Test func aDrawnMapDecodesAtItsSizeWithEachStopsDotWhereItsPlaceIs() throws {
        let style = MapStyle()
        let map = try MapCanvas.draw(stops: quayWalk, width: 800, height: 600, style: style)
        let checked = try JPEGImage.check(map.jpeg)
        #expect(checked.width == 800 && checked.height == 600 && map.width == 800 && map.height == 600)
        let image = try JPEGImage.decode(map.jpeg)
        #expect(map.stopPixels.count == 4)
        for stop in map.stopPixels {
            #expect((48...752).contains(stop.x) && (48...552).contains(stop.y), "inside the margin: \(stop)")
            let color = image.color(x: Int(stop.x), y: Int(stop.y))
            #expect(color.distance(to: style.stop) <= 24, "dot at \(stop): \(color)")
        }
        // Midway along the first leg, away from the dots: the route.
        let (a, b) = (map.stopPixels[0], map.stopPixels[1])
        #expect(image.color(x: Int((a.x + b.x) / 2), y: Int((a.y + b.y) / 2)).distance(to: style.route) <= 24)
        // A corner, off the grid lines (which pass through the centre every 64 px): background.
        #expect(image.color(x: 5, y: 5).distance(to: style.background) <= 12)
        #expect(image.color(x: 400, y: 5).distance(to: style.grid) <= 12)
    }

    @Test func theControlPointsGiveTheDrawingsOwnProjection() throws {
        let map = try MapCanvas.draw(stops: quayWalk, width: 1024, height: 768)
        #expect(map.controlPoints.map { [$0.x, $0.y] } == [[0, 0], [1024, 0], [0, 768], [1024, 768]])
        let fit = try MapGeoreference.fit(map.controlPoints, width: 1024, height: 768)
        #expect(fit.rmsMeters < 1e-6)
        for (stop, pixel) in zip(quayWalk, map.stopPixels) {
            let located = fit.pixel(of: stop)
            #expect(abs(located.x - pixel.x) < 1e-6 && abs(located.y - pixel.y) < 1e-6)
        }
        // North up, the same scale both ways, and the scale is the real one: the Opera House to
        // the Harbour Bridge is about 650 m.
        let (opera, bridge) = (map.stopPixels[0], map.stopPixels[3])
        let pixels = ((opera.x - bridge.x) * (opera.x - bridge.x) + (opera.y - bridge.y) * (opera.y - bridge.y)).squareRoot()
        #expect(abs(pixels * map.metersPerPixel - quayWalk[0].distance(to: quayWalk[3])) < 2)
        #expect(bridge.y < opera.y && bridge.x < opera.x)  // north-west of it
    }

    @Test func oneStopIsDrawnInTheMiddle() throws {
        let map = try MapCanvas.draw(stops: [quayWalk[0]], width: 300, height: 200)
        #expect(map.stopPixels == [PixelPoint(x: 150, y: 100)])
        #expect(abs(map.metersPerPixel - MapCanvas.minimumSpanMeters / 104) < 1e-9)  // 200 − 2·48 pixels
        let image = try JPEGImage.decode(map.jpeg)
        #expect(image.color(x: 150, y: 100).distance(to: MapStyle().stop) <= 24)
    }

    @Test func sizesAndStopCountsOutsideTheBoundsAreRefused() throws {
        #expect(throws: MapCanvasError.stopCount(0, maximum: 100)) { try MapCanvas.draw(stops: [], width: 100, height: 100) }
        let many = (0..<101).map { Coordinate(uncheckedLatitude: -33.85 + Double($0) * 1e-4, longitude: 151.2) }
        #expect(throws: MapCanvasError.stopCount(101, maximum: 100)) { try MapCanvas.draw(stops: many, width: 100, height: 100) }
        #expect(try MapCanvas.draw(stops: Array(many.prefix(100)), width: 100, height: 100).stopPixels.count == 100)
        for (width, height) in [(15, 100), (100, 8193), (7000, 7000), (-1, 100)] {
            #expect(throws: MapCanvasError.invalidSize(width: width, height: height)) {
                try MapCanvas.draw(stops: quayWalk, width: width, height: height)
            }
        }
    }
}
