import Contracts
import Foundation
import LoadKit

/// `tourbus-bench load`: an open-loop load on a running gateway at one rate (see `OpenLoop`),
/// printing one line of latency percentiles from each request's due time.
///
///   tourbus-bench load --gateway HOST:PORT --rate R --seconds D --mix ping|get|nearby|mixed
///                      [--connections N] [--places N] [--cities CSV] [--admin USER:PASSWORD] [--resp | --http]
///
/// `--http` sends each request as an HTTP/1.1 `POST /rpc` (kept alive, pipelined) instead of a
/// JSON-RPC line: the same load, from the same generator, over the gateway's HTTP face.
/// `--resp` sends Redis's inline `PING` instead (the mix must be `ping`): the same load on a
/// redis-server, as a peer in the same run.
/// `get` asks `catalog.get` of ids 1…places; `nearby` asks `search.nearby` (50 km, 20 nearest)
/// around real towns of the CSV; `mixed` is 90% reads (both kinds, half each) and 10%
/// `catalog.create`, which needs `--admin` (each connection signs in first).
enum LoadCommand {
    static func run(_ arguments: [String]) -> Never {
        func value(_ name: String) -> String? {
            guard let i = arguments.firstIndex(of: name), i + 1 < arguments.count else { return nil }
            return arguments[i + 1]
        }
        guard let gateway = value("--gateway"), let rate = value("--rate").flatMap(Double.init), rate > 0,
            let seconds = value("--seconds").flatMap(Double.init), seconds > 0, let mix = value("--mix")
        else {
            fail("load needs --gateway HOST:PORT --rate R --seconds D --mix ping|get|nearby|mixed")
        }
        let places = value("--places").flatMap(Int.init) ?? 1_000
        var random = Random(state: 2026)
        let towns = value("--cities").map(Town.read) ?? []
        func get() -> (String, String) { (Methods.Catalog.get.name, #"{"id":\#(1 + Int(random.next() % UInt64(max(1, places))))}"#) }
        func nearby() -> (String, String) {
            guard !towns.isEmpty else { fail("--mix nearby and mixed need --cities CSV") }
            let town = random.pick(towns)
            return (Methods.Search.nearby.name, #"{"near":{"lat":\#(town.lat),"lon":\#(town.lon)},"radius_m":50000,"limit":20}"#)
        }
        // A pool of requests, cycled: the draws are made before the clock starts.
        var pool: [(method: String, params: String)] = []
        for i in 0..<4_096 {
            switch mix {
            case "ping": pool.append(("ping", "{}"))
            case "get": pool.append(get())
            case "nearby": pool.append(nearby())
            case "mixed":
                if i % 10 == 9 {
                    pool.append((Methods.Catalog.create.name, #"{"name":"Load \#(i)","category":"park","lat":\#(-33.9 + Double(i % 100) / 1000),"lon":151.2}"#))
                } else {
                    pool.append(i % 2 == 0 ? get() : nearby())
                }
            default: fail("--mix takes ping, get, nearby or mixed, not \(mix)")
            }
        }
        var plan = OpenLoop.Plan(gateway: gateway, rate: rate, seconds: seconds, requests: pool)
        if arguments.contains("--resp") {
            guard mix == "ping" else { fail("--resp takes only --mix ping (Redis's PING)") }
            plan.resp = true
            plan.requests = [("PING", "")]
        }
        plan.http = arguments.contains("--http")
        plan.connections = value("--connections").flatMap(Int.init) ?? 16
        if let admin = value("--admin") {
            let parts = admin.split(separator: ":", maxSplits: 1).map(String.init)
            guard parts.count == 2 else { fail("--admin takes USER:PASSWORD") }
            // One sign-in (the gateway limits logins per address), then every connection resumes its session.
            let login = #"{"jsonrpc":"2.0","id":-1,"method":"auth.login","params":{"username":"\#(parts[0])","password":"\#(parts[1])"}}"#
            let reply: String
            do { reply = try OpenLoop.exchange(gateway, login) } catch { fail(error.description) }
            guard let object = try? JSONSerialization.jsonObject(with: Data(reply.utf8)) as? [String: Any],
                let token = (object["result"] as? [String: Any])?["token"] as? String
            else { fail("admin sign-in refused: \(reply.prefix(200))") }
            plan.setup = [#"{"jsonrpc":"2.0","id":-1,"method":"auth.resume","params":{"token":"\#(token)"}}"#]
        } else if mix == "mixed" {
            fail("--mix mixed writes: it needs --admin USER:PASSWORD")
        }
        let outcome: OpenLoop.Outcome
        do { outcome = try OpenLoop.run(plan) } catch { fail(error.description) }
        let ms = { (p: Double) in String(format: "%.3f", Double(outcome.latency.percentile(p)) / 1e6) }
        let errors = outcome.errors.isEmpty ? "none" : outcome.errors.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }.joined(separator: ",")
        print(
            "mix=\(plan.resp ? "redis-ping" : mix)\(plan.http ? " framing=http" : "") rate=\(Int(rate)) achieved=\(Int(outcome.achievedRate)) sent=\(outcome.sent) answered=\(outcome.answered) "
                + "p50_ms=\(ms(0.5)) p99_ms=\(ms(0.99)) p999_ms=\(ms(0.999)) max_ms=\(String(format: "%.3f", Double(outcome.latency.max) / 1e6)) "
                + "late_sends=\(outcome.lateSends) errors=\(errors)")
        exit(0)
    }
}
