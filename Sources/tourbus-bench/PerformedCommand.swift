import Bus
import Contracts
import Foundation
import Synchronization

#if canImport(Glibc)
    import Glibc
#endif

/// `tourbus-bench performed`: `search.text` throughput at the service, anonymous and signed in
/// (issue 16: a signed-in text search also hands `search.performed` to search's deferred outbox
/// writer), so the cost of recording shows beside the search itself.
///
///   tourbus-bench performed [--bin DIR] [--places N] [--requests N] [--window N] [--rounds N]
///
/// Starts `DIR/tourbus-catalog` and `DIR/tourbus-search` (default: the folder of this program;
/// another folder runs binaries built from another revision) on a scratch folder, creates
/// `--places` places (default 5,000) with names of two words from a list of 40, waits until
/// search has indexed them, then sends `--requests` (default 20,000) `search.text` requests of
/// one or two of those words with `--window` (default 32) in flight, anonymous and then with an
/// `auth` of one of 1,000 users, `--rounds` times (default 3) alternating. Prints requests/s of
/// each run and search's CPU time per request (from /proc, so a busy machine slows the rate but
/// not the CPU figure), and, after the signed-in runs, how many `search.performed` events
/// search's outbox holds (an older search publishes none: its `sys.stats` has no outbox).
enum PerformedCommand {
    static let words = [
        "harbour", "bridge", "opera", "house", "garden", "museum", "beach", "park", "tower", "market",
        "gallery", "church", "castle", "river", "island", "lookout", "station", "square", "palace", "theatre",
        "library", "bay", "hill", "lake", "falls", "forest", "wharf", "pier", "cafe", "bar",
        "kiosk", "arcade", "chapel", "fort", "mill", "quay", "terrace", "walk", "zoo", "aquarium",
    ]

    static func run(_ arguments: [String]) -> Never {
        func value(_ name: String) -> String? {
            arguments.firstIndex(of: name).flatMap { $0 + 1 < arguments.count ? arguments[$0 + 1] : nil }
        }
        let own = URL(fileURLWithPath: CommandLine.arguments[0]).resolvingSymlinksInPath().deletingLastPathComponent()
        let bin = value("--bin").map { URL(fileURLWithPath: $0) } ?? own
        let places = value("--places").flatMap(Int.init) ?? 5_000
        let requests = value("--requests").flatMap(Int.init) ?? 20_000
        let window = value("--window").flatMap(Int.init) ?? 32
        let rounds = value("--rounds").flatMap(Int.init) ?? 3
        let scratch = NSTemporaryDirectory() + "tourbus-bench-performed-\(getpid())"
        try? FileManager.default.createDirectory(atPath: scratch, withIntermediateDirectories: true)
        let logger = Logger(component: "bench", level: .error)
        var children: [Process] = []
        func stop() {
            for child in children {
                child.terminate()
                child.waitUntilExit()
            }
            try? FileManager.default.removeItem(atPath: scratch)
        }
        /// CPU seconds (user and system) process `pid` has used, from /proc: robust to a shared machine.
        func cpuSeconds(_ pid: Int32) -> Double {
            guard let stat = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
                let close = stat.lastIndex(of: ")")
            else { return 0 }
            let fields = stat[stat.index(after: close)...].split(separator: " ")
            // After the name: state is field 3, utime 14 and stime 15 (1-based) of the whole line.
            guard fields.count > 12, let user = Double(fields[11]), let system = Double(fields[12]) else { return 0 }
            return (user + system) / Double(sysconf(Int32(_SC_CLK_TCK)))
        }
        func start(_ name: String, _ args: [String]) -> [String] {
            let ready = scratch + "/\(name).ready"
            let process = Process()
            process.executableURL = bin.appendingPathComponent("tourbus-\(name)")
            process.arguments = ["--data-dir", scratch, "--ready-file", ready, "--log-level", "error"] + args
            process.standardOutput = FileHandle.nullDevice
            do { try process.run() } catch {
                stop()
                fail("cannot start \(bin.path)/tourbus-\(name): \(error)")
            }
            children.append(process)
            for _ in 0..<600 {
                if let d = FileManager.default.contents(atPath: ready), let o = try? JSONSerialization.jsonObject(with: d) as? [String: Any] {
                    return [(o["rpc"] as? [String])?.first ?? "", (o["publish"] as? [String])?.first ?? ""]
                }
                usleep(50_000)
            }
            stop()
            fail("tourbus-\(name) did not start")
        }
        do {
            let context = try ZMQContext()
            let catalogEndpoints = start("catalog", [])
            let catalog = try RPCClient(context: context, endpoints: [catalogEndpoints[0]], logger: logger)
            var rng = Random(state: 16)
            let inFlight = DispatchSemaphore(value: 256)
            let created = DispatchGroup()
            let failures = Mutex(0)
            for i in 0..<places {
                let name = "\(rng.pick(words).capitalized) \(rng.pick(words).capitalized) \(i)"
                let body = #"{"name":"\#(name)","category":"attraction","lat":\#(-34 + rng.unit()),"lon":\#(150.5 + rng.unit())}"#
                inFlight.wait()
                created.enter()
                catalog.send(type: Methods.Catalog.create.name, body: Data(body.utf8), timeoutMilliseconds: 60_000) { result in
                    if case .failure = result { failures.withLock { $0 += 1 } }
                    inFlight.signal()
                    created.leave()
                }
            }
            created.wait()
            guard failures.withLock({ $0 }) == 0 else {
                stop()
                fail("catalog.create failed")
            }
            let searchEndpoints = start("search", ["--peer", "catalog=\(catalogEndpoints[0])", "--peer-pub", "catalog=\(catalogEndpoints[1])"])
            let search = try RPCClient(context: context, endpoints: [searchEndpoints[0]], logger: logger)
            struct Stats: Decodable {
                struct Subscription: Decodable {
                    var source: String
                    var seq: Int64
                }
                struct Outbox: Decodable { var head: Int64 }
                var subscriptions: [Subscription]?
                var outbox: Outbox?
            }
            func stats() -> Stats? { try? search.call(Methods.System.stats.name, Empty(), as: Stats.self, timeoutMilliseconds: 5_000) }
            while (stats()?.subscriptions?.first { $0.source == "catalog" }?.seq ?? 0) < Int64(places) { usleep(50_000) }

            let searchPid = children.last?.processIdentifier ?? 0
            /// Requests per second of `requests` text searches, `window` in flight, and search's
            /// CPU microseconds per request (its threads', the deferred writer's and relay's included).
            func measure(signedIn: Bool) -> (rate: Double, cpu: Double) {
                let cpuBefore = cpuSeconds(searchPid)
                var rng = Random(state: signedIn ? 7 : 8)
                let slots = DispatchSemaphore(value: window)
                let done = DispatchGroup()
                let errors = Mutex(0)
                let started = monotonicNanos()
                for _ in 0..<requests {
                    let q = rng.unit() < 0.5 ? rng.pick(words) : "\(rng.pick(words)) \(rng.pick(words))"
                    let auth = signedIn ? Auth(userId: String(1 + rng.next() % 1_000), role: "user") : nil
                    slots.wait()
                    done.enter()
                    search.send(type: Methods.Search.text.name, body: Data(#"{"q":"\#(q)","limit":10}"#.utf8), auth: auth, timeoutMilliseconds: 30_000) { result in
                        if case .failure = result { errors.withLock { $0 += 1 } }
                        slots.signal()
                        done.leave()
                    }
                }
                done.wait()
                let seconds = Double(monotonicNanos() - started) / 1e9
                if errors.withLock({ $0 }) > 0 { print("  (\(errors.withLock { $0 }) requests failed)") }
                if signedIn { usleep(200_000) }  // the last group appended and published, and counted
                return (Double(requests) / seconds, (cpuSeconds(searchPid) - cpuBefore) * 1e6 / Double(requests))
            }
            print("search.text at the service: \(places) places, \(requests) requests per run, \(window) in flight, binaries in \(bin.path)")
            _ = measure(signedIn: false)  // warm: page cache, prepared statements, the catalog's categories
            var recorded = 0
            for round in 1...rounds {
                let anonymous = measure(signedIn: false)
                let signedIn = measure(signedIn: true)
                recorded += requests
                print(
                    String(
                        format: "round %d: anonymous %.0f req/s (%.0f µs CPU each), signed in %.0f req/s (%.0f µs CPU each)",
                        round, anonymous.rate, anonymous.cpu, signedIn.rate, signedIn.cpu))
            }
            let wanted = Int64(recorded)
            var head = stats()?.outbox?.head
            let waitStart = monotonicNanos()
            while let h = head, h < wanted, monotonicNanos() - waitStart < 10_000_000_000 {
                usleep(20_000)
                head = stats()?.outbox?.head
            }
            if let head {
                print("search.performed in search's outbox: \(head) of \(recorded) signed-in searches")
            } else {
                print("search.performed: none (this search publishes nothing)")
            }
            catalog.close()
            search.close()
        } catch {
            stop()
            fail("\(error)")
        }
        stop()
        exit(0)
    }
}
