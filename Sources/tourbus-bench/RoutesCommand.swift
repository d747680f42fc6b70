import ContentImport
import Foundation
import Geo
import Routing

#if canImport(Glibc)
    import Glibc
#endif

/// `tourbus-bench routes FILE.osm`: the routing engine alone (no bus, no gateway) on an
/// OpenStreetMap extract: the street network's read, then per profile the graph's build time and
/// memory, random routes (p50, p99, max), and 25 × 25 matrices.
///
///   tourbus-bench routes FILE.osm [--pairs 500] [--matrices 5] [--seed 33]
///
/// Routes go between random street nodes of the profile's network (a node on a street it may
/// travel, picked uniformly); pairs no path joins are counted as `none` and left out of the
/// percentiles. Memory is the growth of the resident set while the graph is built (peak) and
/// once it is (kept). Prints one line of `key=value` pairs per profile.
enum RoutesCommand {
    static func run(_ arguments: [String]) -> Never {
        guard let file = arguments.first else {
            FileHandle.standardError.write(Data("usage: tourbus-bench routes FILE.osm [--pairs 500] [--matrices 5] [--seed 33]\n".utf8))
            exit(2)
        }
        func option(_ name: String, _ fallback: Int) -> Int {
            arguments.firstIndex(of: name).flatMap { $0 + 1 < arguments.count ? Int(arguments[$0 + 1]) : nil } ?? fallback
        }
        let pairs = option("--pairs", 500)
        let matrices = option("--matrices", 5)
        var random = Random(state: UInt64(option("--seed", 33)))
        let clock = ContinuousClock()
        var streets = OSMStreets(nodes: [], ways: [], restrictions: [])
        do {
            var bytes: [UInt8] = []
            let read = try clock.measure {
                bytes = [UInt8](try Data(contentsOf: URL(fileURLWithPath: file)))
                streets = try OSMStreets(bytes: bytes)
            }
            print(
                "file=\(file) bytes=\(bytes.count) street_nodes=\(streets.nodes.count) ways=\(streets.ways.count)",
                "restrictions=\(streets.restrictions.count) read_s=\(String(format: "%.3f", seconds(read)))")
        } catch {
            FileHandle.standardError.write(Data("tourbus-bench routes: \(error)\n".utf8))
            exit(1)
        }
        var engines: [RouteEngine] = []
        for profile in RouteProfile.allCases {
            let before = memoryKB("VmRSS")
            try? "5".write(toFile: "/proc/self/clear_refs", atomically: false, encoding: .utf8)
            var built: RouteEngine?
            let build = clock.measure { built = RouteEngine(streets: streets, profile: profile) }
            let engine = built!
            engines.append(engine)
            let peak = memoryKB("VmHWM") - before
            let kept = memoryKB("VmRSS") - before
            let nodes = engine.streetNodes
            var times: [Double] = []
            var none = 0
            for _ in 0..<pairs {
                let from = nodes[Int(random.next() % UInt64(nodes.count))]
                let to = nodes[Int(random.next() % UInt64(nodes.count))]
                var found = false
                let time = clock.measure { found = (try? engine.route(from: from, to: to)) != nil }
                if found { times.append(seconds(time) * 1000) } else { none += 1 }
            }
            var matrixTimes: [Double] = []
            for _ in 0..<matrices {
                let points = (0..<25).map { _ in nodes[Int(random.next() % UInt64(nodes.count))] }
                matrixTimes.append(seconds(clock.measure { _ = engine.matrix(sources: points, destinations: points) }) * 1000)
            }
            times.sort()
            matrixTimes.sort()
            func at(_ q: Double) -> String { times.isEmpty ? "-" : String(format: "%.3f", times[min(times.count - 1, Int(q * Double(times.count)))]) }
            print(
                "profile=\(profile.rawValue) nodes=\(engine.nodeCount) edges=\(engine.edgeCount) shortcuts=\(engine.shortcutCount)",
                "restrictions_applied=\(engine.restrictionsApplied) build_s=\(String(format: "%.3f", seconds(build))) peak_mb=\(peak / 1024) kept_mb=\(kept / 1024)",
                "routes=\(times.count) none=\(none) p50_ms=\(at(0.5)) p99_ms=\(at(0.99)) max_ms=\(times.last.map { String(format: "%.3f", $0) } ?? "-")",
                "matrix25_ms_median=\(matrixTimes.isEmpty ? "-" : String(format: "%.1f", matrixTimes[matrixTimes.count / 2]))",
                "matrix25_ms_max=\(matrixTimes.last.map { String(format: "%.1f", $0) } ?? "-")")
        }
        withExtendedLifetime(engines) {}
        exit(0)
    }

    static func seconds(_ duration: Duration) -> Double {
        Double(duration.components.seconds) + Double(duration.components.attoseconds) / 1e18
    }

    static func memoryKB(_ field: String) -> Int {
        guard let status = try? String(contentsOfFile: "/proc/self/status", encoding: .utf8) else { return 0 }
        for line in status.split(separator: "\n") where line.hasPrefix(field + ":") {
            return Int(line.split(separator: " ").dropFirst().first ?? "") ?? 0
        }
        return 0
    }
}
