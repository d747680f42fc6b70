import Bus
import Foundation
import Sealing
import Testing
import TourMaps
import TestSupport
#if canImport(Glibc)
import Glibc
#endif

/// The fields of a logfmt line (`key=value`, `key="quoted value"`).
func logfmt(_ line: Substring) -> [String: String] {
    var fields: [String: String] = [:]
    var rest = line[...]
    while let equals = rest.firstIndex(of: "=") {
        let key = String(rest[..<equals]).trimmingCharacters(in: .whitespaces)
        rest = rest[rest.index(after: equals)...]
        var value = ""
        if rest.first == "\"" {
            rest = rest.dropFirst()
            var escaped = false
            while let c = rest.popFirst() {
                if escaped { value.append(c == "n" ? "\n" : c); escaped = false } else if c == "\\" { escaped = true } else if c == "\"" { break } else { value.append(c) }
            }
        } else {
            let end = rest.firstIndex(of: " ") ?? rest.endIndex
            value = String(rest[..<end])
            rest = rest[end...]
        }
        fields[key] = value
        rest = rest.drop { $0 == " " }
    }
    return fields
}

@Suite(.serialized) struct TourbusUpTests {
    /// The pids of the direct children of `parent` named `name`.
    func children(of parent: Int32, named name: String) -> [Int32] {
        let entries = (try? FileManager.default.contentsOfDirectory(atPath: "/proc")) ?? []
        return entries.compactMap(Int32.init).filter { pid in
            guard let stat = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
                  let close = stat.lastIndex(of: ")") else { return false }
            let comm = stat[stat.index(after: stat.firstIndex(of: "(") ?? stat.startIndex)..<close]
            let fields = stat[stat.index(close, offsetBy: 2)...].split(separator: " ")
            return comm.hasPrefix(name.prefix(15)) && fields.count > 1 && Int32(fields[1]) == parent
        }
    }

    /// Stops `up` as Ctrl-C would (bounded), then kills whatever of it is left.
    func stopUp(_ process: Process) {
        guard process.isRunning else { return }
        let left = children(of: process.processIdentifier, named: "tourbus-")
        kill(process.processIdentifier, SIGTERM)
        for _ in 0..<300 where process.isRunning { usleep(50_000) }
        if process.isRunning {
            kill(process.processIdentifier, SIGKILL)
            left.forEach { kill($0, SIGKILL) }
        }
    }

    /// `tourbus up --demo helsinki`: the extract's places, streets and addresses instead of
    /// Sydney's places, so a newcomer can try a route and an address.
    @Test(.enabled(if: FileManager.default.fileExists(atPath: ".build/osm/helsinki.osm"), "deploy/local/helsinki-osm has not made the extract"))
    func upWithTheHelsinkiDemoRoutesAndFindsAddresses() throws {
        let scratch = TemporaryFolder("up-helsinki")
        defer { withExtendedLifetime(scratch) {} }
        let port = Int(try HTTPProbe.freePort())
        let process = Process()
        process.executableURL = try ChildProcess.executable("tourbus")
        process.arguments = ["up", "--demo", "helsinki", "--data-dir", scratch.path, "--listen", "127.0.0.1:\(port)"]
        let outFile = scratch.path + "/up.out"
        _ = FileManager.default.createFile(atPath: outFile, contents: nil)
        process.standardOutput = try FileHandle(forWritingTo: URL(fileURLWithPath: outFile))
        process.standardError = FileHandle.nullDevice
        try process.run()
        defer { stopUp(process) }
        var output = ""
        for _ in 0..<1_200 where !output.contains("Tourbus is up") {
            usleep(50_000)
            output = (try? String(contentsOfFile: outFile, encoding: .utf8)) ?? ""
        }
        #expect(output.contains("imported the Helsinki extract") && !output.contains("Sydney"), "\(output)")
        #expect(output.contains("directions.get"), "the welcome shows a route to try: \(output)")
        let c = try GatewayConnection(port: UInt16(port))
        var status = ""
        for _ in 0..<300 where status != "routed" {
            let route = json(c.rpc("directions.get", #"{"from":{"lat":60.1710,"lon":24.9414},"to":{"lat":60.1694,"lon":24.9522}}"#).line)
            status = (route["result"] as? [String: Any])?["status"] as? String ?? ""
            if status != "routed" { usleep(100_000) }
        }
        #expect(status == "routed")
        let hits = (json(c.rpc("geo.search", #"{"q":"Mannerheimintie 13"}"#).line)["result"] as? [String: Any])?["hits"] as? [[String: Any]]
        #expect(hits?.first?["label"] as? String == "Mannerheimintie 13A, 00100 Helsinki", "\(hits ?? [])")
    }

    @Test func upStartsTheSuiteLoadsTheDemoRestartsCrashesAndStopsCleanly() throws {
        let scratch = TemporaryFolder("up")
        defer { withExtendedLifetime(scratch) {} }  // the folder lives to the end of the scope
        let folder = scratch.path
        // Free now (a fixed port could be an ephemeral one another test's socket holds).
        let port = Int(try HTTPProbe.freePort())
        let process = Process()
        process.executableURL = try ChildProcess.executable("tourbus")
        process.arguments = ["up", "--data-dir", folder, "--listen", "127.0.0.1:\(port)"]
        let outFile = folder + "/up.out", errFile = folder + "/up.err"
        _ = FileManager.default.createFile(atPath: outFile, contents: nil)
        _ = FileManager.default.createFile(atPath: errFile, contents: nil)
        process.standardOutput = try FileHandle(forWritingTo: URL(fileURLWithPath: outFile))
        process.standardError = try FileHandle(forWritingTo: URL(fileURLWithPath: errFile))
        let restartsFile = folder + "/restarts.log"
        /// The lines of restarts.log: every restart of a child, which only this test's own kill may cause.
        func restarts() -> [Substring] {
            ((try? String(contentsOfFile: restartsFile, encoding: .utf8)) ?? "").split(separator: "\n")
        }
        try process.run()
        // A test that failed half-way: `up` stopped all the same.
        defer { stopUp(process) }

        var output = ""
        for _ in 0..<600 where !output.contains("Tourbus is up") {
            usleep(50_000)
            output = (try? String(contentsOfFile: outFile, encoding: .utf8)) ?? ""
        }
        #expect(output.contains("loaded 246 Sydney places"), "\(output)")
        #expect(output.contains("loaded 3 Sydney walking tours"), "\(output)")
        #expect(output.contains("posted 5 Sydney annotations"), "\(output)")
        #expect(output.contains("added the demo's drawings to the 20 most popular places"), "\(output)")
        #expect(output.contains("gateway at 127.0.0.1:\(port)"))
        #expect(FileManager.default.fileExists(atPath: restartsFile) && restarts().isEmpty, "\(restarts())")
        let before = Dictionary(uniqueKeysWithValues: ["catalog", "social", "search", "notify", "favorites", "gateway"].map { ($0, children(of: process.processIdentifier, named: "tourbus-\($0)")) })
        #expect(before.values.allSatisfy { $0.count == 1 }, "\(before)")

        let c = try GatewayConnection(port: UInt16(port))
        let categories = json(c.call(#"{"jsonrpc":"2.0","id":1,"method":"catalog.categories"}"#))
        let counts = ((categories["result"] as? [String: Any])?["categories"] as? [[String: Any]])?.compactMap { $0["count"] as? Int }
        // The places, and the three tours as the itineraries.
        #expect(counts?.reduce(0, +) == 249)
        let itineraries = ((categories["result"] as? [String: Any])?["categories"] as? [[String: Any]])?.first { $0["id"] as? String == "itinerary" }
        #expect(itineraries?["count"] as? Int == 3, "\(categories)")
        let walk = json(c.call(#"{"jsonrpc":"2.0","id":1,"method":"tours.list","params":{"near":{"lat":-33.8915,"lon":151.2767},"radius_m":2000}}"#))
        let walks = (walk["result"] as? [String: Any])?["tours"] as? [[String: Any]]
        #expect(walks?.map { $0["name"] as? String } == ["Bondi to Coogee Coastal Walk"], "\(walk)")
        #expect((walks?.first?["stops"] as? [Any])?.count == 8)
        // The most popular places have the demo's drawings, hosted by the catalog and labelled as
        // drawings; a browser GETs them, a Redis client takes their bytes.
        let operaHouse = (json(c.call(#"{"jsonrpc":"2.0","id":1,"method":"catalog.get","params":{"id":1}}"#))["result"] as? [String: Any]) ?? [:]
        let drawing = try #require((operaHouse["hosted_photos"] as? [[String: Any]])?.first, "\(operaHouse)")
        #expect((drawing["attribution"] as? String)?.contains("drawing") == true && drawing["width"] as? Int == 960, "\(drawing)")
        let drawingId = try #require(drawing["id"] as? Int)
        let browser = try GatewayConnection(port: UInt16(port))
        browser.send("GET /places/1/photos/\(drawingId)/320.jpg HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
        let served = try #require(browser.httpResponse())
        #expect(served.status == 200 && served.headers["content-type"] == "image/jpeg" && served.headers["cache-control"] == "public, max-age=86400")
        #expect(try JPEGImage.check(Data(served.body)).width == 320)
        let redis = try GatewayConnection(port: UInt16(port))
        redis.send(GatewayConnection.resp(["catalog.photo", #"{"place_id":1,"photo_id":\#(drawingId),"size":320}"#]))
        #expect(redis.respBytes() == served.body)
        let drawn = (1...246).filter { id in
            let place = (json(c.call(#"{"jsonrpc":"2.0","id":1,"method":"catalog.get","params":{"id":\#(id)}}"#))["result"] as? [String: Any]) ?? [:]
            return place["hosted_photos"] != nil
        }
        #expect(drawn.count == 20, "\(drawn)")
        // Each walk has its map, drawn by `up`, placed by its own control points, cut into tiles.
        for id in 1...3 {
            var map: [String: Any] = [:]
            for _ in 0..<100 where map["tiles_ready"] as? Bool != true {
                map = (json(c.call(#"{"jsonrpc":"2.0","id":1,"method":"tours.map.get","params":{"tour_id":\#(id)}}"#))["result"] as? [String: Any]) ?? [:]
                if map["tiles_ready"] as? Bool != true { usleep(100_000) }
            }
            #expect(map["width"] as? Int == 2048 && (map["rms_m"] as? Double).map { $0 < 1 } == true && map["tiles_ready"] as? Bool == true, "\(map)")
        }
        // The catalog signs downloads with the key `up` made in the data folder; a demo walk
        // with its 2048-pixel map comes down to a registered device in pieces and opens there.
        var keyInfo = stat()
        #expect(stat(folder + "/catalog.sign.key", &keyInfo) == 0 && keyInfo.st_mode & 0o777 == 0o600)
        let signing = try SigningKey(keyFile: folder + "/catalog.sign.key")
        let published = json(c.call(#"{"jsonrpc":"2.0","id":1,"method":"library.key"}"#))
        #expect((published["result"] as? [String: Any])?["public_key"] as? String == signing.publicKeyBase64, "\(published)")
        let traveller = try GatewayConnection(port: UInt16(port))
        _ = traveller.rpc("auth.register", #"{"username":"walker","email":"walker@example.org","name":"Walker","password":"Walk-Pass-1"}"#)
        #expect(traveller.rpc("auth.login", #"{"username":"walker","password":"Walk-Pass-1"}"#).succeeded)
        let device = try Sodium.boxKeyPair()
        #expect(traveller.rpc("devices.register", #"{"device_id":"demo-phone","public_key":"\#(Data(device.publicKey).base64EncodedString())"}"#).succeeded)
        var manifest: [String: Any] = [:]
        for _ in 0..<100 where manifest["package_id"] == nil {
            manifest = (json(traveller.rpc("library.add", #"{"tour_id":1,"device_id":"demo-phone"}"#).line)["result"] as? [String: Any]) ?? [:]
            if manifest["package_id"] == nil { usleep(50_000) }
        }
        var sealed: [UInt8] = []
        for piece in 0..<(manifest["pieces"] as? Int ?? 0) {
            let reply = traveller.rpc("library.package", #"{"package_id":"\#(manifest["package_id"] as? String ?? "")","piece":\#(piece)}"#)
            sealed += Data(base64Encoded: reply.field("data", String.self) ?? "") ?? Data()
        }
        #expect(sealed.count == manifest["bytes"] as? Int && (manifest["tiles"] as? Int ?? 0) > 0, "\(manifest)")
        let opened = try Sodium.open(sealed, publicKey: device.publicKey, secretKey: device.secretKey)
        let content = opened.flatMap { try? JSONSerialization.jsonObject(with: Data($0)) as? [String: Any] }
        #expect((content?["places"] as? [Any])?.count == (manifest["places"] as? [Any])?.count && content?["tour_id"] as? Int == 1)
        // Search follows the catalog's tours: found by name, in Russian too (Mrs Macquarie's Chair,
        // named in Russian as well, is left out by the category).
        var found: [[String: Any]] = []
        for _ in 0..<100 where found.isEmpty {
            let reply = json(c.call(#"{"jsonrpc":"2.0","id":1,"method":"search.text","params":{"q":"Маккуори","categories":["itinerary"]}}"#))
            found = ((reply["result"] as? [String: Any])?["hits"] as? [[String: Any]]) ?? []
            if found.isEmpty { usleep(100_000) }
        }
        #expect(found.first?["kind"] as? String == "tour" && found.first?["name"] as? String == "Macquarie Street and Hyde Park", "\(found)")
        // The top places have Russian and German names: a Russian name finds one, named in German.
        var opera: [[String: Any]] = []
        for _ in 0..<100 where opera.isEmpty {
            let reply = json(c.call(#"{"jsonrpc":"2.0","id":1,"method":"search.text","params":{"q":"Сиднейский оперный театр","lang":"de-DE,de;q=0.9"}}"#))
            opera = ((reply["result"] as? [String: Any])?["hits"] as? [[String: Any]]) ?? []
            if opera.isEmpty { usleep(100_000) }
        }
        #expect(opera.first?["name"] as? String == "Opernhaus Sydney" && (opera.first?["lang"] as? [String: Any])?["name"] as? String == "de", "\(opera)")
        // The catalog answers the repository's interface strings.
        let strings = (json(c.call(#"{"jsonrpc":"2.0","id":1,"method":"strings.get","params":{"lang":"ru-RU"}}"#))["result"] as? [String: Any]) ?? [:]
        #expect(strings["lang"] as? String == "ru" && (strings["strings"] as? [String: String])?["favorites.empty"] == "Нет избранного", "\(strings)")
        // The demo's events, their days read in Sydney (the catalog's default zone): the fireworks
        // on New Year's Eve, gone on 2 January there (still 1 January in UTC).
        let events = ((categories["result"] as? [String: Any])?["categories"] as? [[String: Any]])?.first { $0["id"] as? String == "event" }
        #expect(events?["count"] as? Int == 4, "\(categories)")
        func popular(_ at: String) -> [[String: Any]] {
            let reply = json(c.call(#"{"jsonrpc":"2.0","id":1,"method":"search.popular","params":{"at":"\#(at)","limit":5}}"#))
            return ((reply["result"] as? [String: Any])?["hits"] as? [[String: Any]]) ?? []
        }
        var newYear: [[String: Any]] = []
        for _ in 0..<100 where newYear.first?["name"] as? String != "Sydney New Year's Eve Fireworks" {
            newYear = popular("2026-12-31T12:00:00Z")
            if newYear.first?["name"] as? String != "Sydney New Year's Eve Fireworks" { usleep(100_000) }
        }
        #expect(newYear.first?["name"] as? String == "Sydney New Year's Eve Fireworks" && newYear.first?["in_season"] as? Bool == true, "\(newYear)")
        #expect(!popular("2027-01-01T14:00:00Z").contains { $0["name"] as? String == "Sydney New Year's Eve Fireworks" })
        // The notify service runs with the shipped form, and the demo's annotations are live.
        let form = json(c.call(#"{"jsonrpc":"2.0","id":1,"method":"annotations.form","params":{"lang":"en"}}"#))
        #expect((form["result"] as? [String: Any])?["version"] != nil, "\(form)")
        let nearby = json(c.call(#"{"jsonrpc":"2.0","id":1,"method":"annotations.nearby","params":{"near":{"lat":-33.8688,"lon":151.2093},"radius_m":10000}}"#))
        #expect(((nearby["result"] as? [String: Any])?["annotations"] as? [Any])?.count == 5, "\(nearby)")

        // The first admin, made by the CLI from the endpoints `up` wrote, can write places.
        let admin = try BoundedRun(try ChildProcess.executable("tourbus").path,
                                   ["admin", "create", "--data-dir", folder, "--username", "admin", "--email", "admin@example.org", "--name", "Admin"],
                                   input: "Admin-Pass-1\n", timeout: 30)
        #expect(admin.succeeded, "\(admin.ending): \(admin.digest)")
        let login = c.reply(#"{"jsonrpc":"2.0","id":2,"method":"auth.login","params":{"username":"admin","password":"Admin-Pass-1"}}"#)
        #expect(login.field("token", String.self) != nil)
        let created = c.reply(#"{"jsonrpc":"2.0","id":3,"method":"catalog.create","params":{"name":"Luna Park","category":"attraction","lat":-33.8475,"lon":151.2098}}"#)
        #expect(created.field("id", Int.self) == 247)
        // Favorites runs: the admin saves the place just made (favorites asks the catalog for it).
        let saved = c.reply(#"{"jsonrpc":"2.0","id":4,"method":"favorites.toggle","params":{"place_id":247}}"#)
        #expect(saved.field("saved", Bool.self) == true, "\(saved)")

        // Kill the catalog: the supervisor brings it back on the same endpoint.
        let catalogs = children(of: process.processIdentifier, named: "tourbus-catalog")
        #expect(catalogs.count == 1)
        for pid in catalogs { kill(pid, SIGKILL) }
        var back = false
        for i in 0..<100 where !back {
            usleep(100_000)
            back = c.reply(#"{"jsonrpc":"2.0","id":\#(i),"method":"catalog.get","params":{"id":1}}"#).succeeded
        }
        #expect(back)
        let restarted = children(of: process.processIdentifier, named: "tourbus-catalog")
        #expect(restarted.count == 1 && restarted != catalogs)

        // The restart is one logfmt line in restarts.log and on up's standard error: which
        // service, the pid that died and how, the new pid, when. Nothing else restarted.
        let logged = restarts()
        #expect(logged.count == 1, "\(logged)")
        let line = logfmt(logged.first ?? "")
        #expect(line["msg"] == "restarted" && line["service"] == "catalog" && line["level"] == "warn", "\(line)")
        #expect(line["old_pid"] == catalogs.first.map(String.init) && line["new_pid"] == restarted.first.map(String.init), "\(line)")
        #expect(line["signal"] == "SIGKILL" && line["status"] == nil, "\(line)")
        #expect(line["ts"].map { $0.wholeMatch(of: /\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z/) != nil } == true, "\(line)")
        let errors = (try? String(contentsOfFile: errFile, encoding: .utf8)) ?? ""
        #expect(errors.split(separator: "\n").contains(logged.first ?? "-"), "\(errors)")
        #expect(errors.contains("msg=\"exited; restarting\" service=catalog pid=\(catalogs.first ?? 0) signal=SIGKILL"), "\(errors)")
        // The gateway follows social's events, so sign-ins end at once everywhere.
        #expect(!errors.contains("no event endpoint for the accounts service"), "\(errors)")
        for name in ["social", "search", "notify", "favorites", "gateway"] {
            #expect(children(of: process.processIdentifier, named: "tourbus-\(name)") == before[name], "tourbus-\(name) restarted")
        }
        _ = logged

        // A crash (SIGSEGV, as a fault would raise it) is restarted too: Swift's crash handler
        // would start a helper that outlives the child and hides its end from the supervisor.
        let favorites = children(of: process.processIdentifier, named: "tourbus-favorites")
        for pid in favorites { kill(pid, SIGSEGV) }
        var crashRestarted = false
        for _ in 0..<150 where !crashRestarted {
            usleep(100_000)
            crashRestarted = restarts().contains { $0.contains("service=favorites") }
        }
        #expect(crashRestarted, "a crashed favorites was not restarted: \(restarts())")
        let logged2 = restarts()

        // Ctrl-C (SIGINT here) stops everything and exits 0.
        let all = children(of: process.processIdentifier, named: "tourbus-")
        kill(process.processIdentifier, SIGINT)
        for _ in 0..<300 where process.isRunning { usleep(50_000) }
        #expect(!process.isRunning && process.terminationStatus == 0)
        #expect(all.allSatisfy { kill($0, 0) != 0 })
        #expect(restarts() == logged2, "stopping restarted something: \(restarts())")
    }
}

@Suite struct TourbusCallTests {
    /// Runs the CLI (30 s at most); its exit status (-1 if it did not exit by itself), standard output and error.
    /// A gateway port another process holds: `up` says so and stops, rather than reporting the
    /// suite up while a stranger's server answers on that port and its own gateway restarts forever.
    @Test func upStopsWhenTheGatewayCannotListen() throws {
        let scratch = TemporaryFolder("up-port")
        // A listening socket on a port of our own.
        let holder = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(holder) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(holder, $0, length) == 0 && getsockname(holder, $0, &length) == 0 }
        }
        #expect(bound && listen(holder, 16) == 0)
        let port = UInt16(bigEndian: address.sin_port)
        let run = try BoundedRun(try ChildProcess.executable("tourbus").path,
                                 ["up", "--data-dir", scratch.path, "--listen", "127.0.0.1:\(port)", "--no-demo"], timeout: 30)
        #expect(run.exit == .status(1), "\(run.digest)")
        #expect(run.errors.contains("Address already in use") && run.errors.contains("gateway stopped while starting"), "\(run.digest)")
        #expect(!run.output.contains("Tourbus is up"), "\(run.digest)")
        // Nothing of that suite is left running.
        let left = (try FileManager.default.contentsOfDirectory(atPath: "/proc")).filter { pid in
            Int32(pid) != nil && ((try? String(contentsOfFile: "/proc/\(pid)/cmdline", encoding: .utf8)) ?? "").contains(scratch.path)
        }
        #expect(left.isEmpty, "\(left)")
        left.compactMap { Int32($0) }.forEach { kill($0, SIGKILL) }  // a failed run leaves nothing behind
    }

    func tourbus(_ arguments: [String], input: String? = nil, token: String? = nil) throws -> (status: Int32, out: String, err: String) {
        let run = try BoundedRun(try ChildProcess.executable("tourbus").path, arguments, input: input,
                                 environment: ["TOURBUS_TOKEN": token], timeout: 30)
        guard !run.timedOut, case .status(let status)? = run.exit else { return (-1, run.output, run.errors + "\n" + run.ending) }
        return (status, run.output, run.errors)
    }

    @Test func callThroughTheGatewayAndStraightToAService() throws {
        let suite = try SuiteFixture()
        let gateway = "127.0.0.1:\(suite.port)"
        let place = ["catalog.create", "name", "Luna Park", "category", "attraction", "lat", "-33.8475", "lon", "151.2098"]
        let anonymous = try tourbus(["call", "--gateway", gateway] + place)
        #expect(anonymous.status == 1 && anonymous.err.contains("unauthenticated"))
        // A second admin, made by the CLI straight at the social service, signs in and writes.
        let made = try tourbus(["admin", "create", "--service", suite.social.rpc, "--username", "ops", "--email", "ops@example.org", "--name", "Ops"],
                               input: "Ops-Pass-42\n")
        #expect(made.status == 0 && json(made.out)["role"] as? String == "admin", "\(made.err)")
        let login = try tourbus(["call", "--gateway", gateway, "auth.login", "username", "ops", "password", "Ops-Pass-42"])
        let token = json(login.out)["token"] as? String ?? ""
        #expect(login.status == 0 && token.hasPrefix("tb1_"))
        let created = try tourbus(["call", "--gateway", gateway] + place, token: token)
        #expect(created.status == 0 && json(created.out)["name"] as? String == "Luna Park")
        #expect(try tourbus(["admin", "create", "--service", suite.social.rpc, "--username", "x", "--email", "x@example.org", "--name", "X"]).status == 2)  // no password
        let got = try tourbus(["call", "--gateway", gateway, "catalog.get", #"{"id":1}"#])
        #expect(got.status == 0 && json(got.out)["lat"] as? Double == -33.8475)
        let missing = try tourbus(["call", "--gateway", gateway, "catalog.get", "id", "5"])
        #expect(missing.status == 1 && missing.err.contains("not_found: no place with id 5 (field id)"))
        let direct = try tourbus(["call", "--service", suite.catalogEndpoint, "catalog.get", "id", "1"])
        #expect(direct.status == 0 && json(direct.out)["name"] as? String == "Luna Park")
        let nowhere = try tourbus(["call", "--gateway", "127.0.0.1:1", "ping"])
        #expect(nowhere.status == 1 && nowhere.err.contains("cannot reach the gateway"))
        let keys = try tourbus(["keys"])
        #expect(keys.status == 0 && keys.out.components(separatedBy: "\n").filter { !$0.isEmpty }.map(\.count) == [48, 48])  // "public: " + 40 Z85 characters
        #expect(try tourbus(["frobnicate"]).status == 2)
    }
}

/// `tourbus up --config FILE --only …`: a host's share of a suite, its mistakes refused before
/// anything starts. (deploy/multihost/test runs three of them on three network namespaces.)
@Suite struct TourbusUpShareTests {
    func up(_ arguments: [String]) throws -> BoundedRun {
        try BoundedRun(try ChildProcess.executable("tourbus").path, ["up"] + arguments, timeout: 30)
    }

    @Test func mistakesInAHostsShareAreRefused() throws {
        let scratch = TemporaryFolder("up-share")
        let file = scratch.path + "/suite.json"
        try Data(#"{"services":{"search":{"bind":["tcp://127.0.0.1:0"]},"gateway-b":{"listen":"127.0.0.1:0"},"favorites":{"bind":["tcp://127.0.0.1:0","tcp://127.0.0.1:0"]},"catalog":{"bind":["tcp://127.0.0.1:0","tcp://127.0.0.1:0"],"publish":["tcp://127.0.0.1:0","tcp://127.0.0.1:0"],"raft":["127.0.0.1:1","127.0.0.1:2"]}}}"#.utf8).write(to: URL(fileURLWithPath: file))
        let metered = scratch.path + "/metered.json"
        try Data(#"{"services":{"search":{"bind":["tcp://127.0.0.1:0","tcp://127.0.0.1:0"],"metrics_listen":"127.0.0.1:0"}}}"#.utf8).write(to: URL(fileURLWithPath: metered))
        let unpublished = scratch.path + "/unpublished.json"
        try Data(#"{"services":{"search":{"bind":["tcp://127.0.0.1:0","tcp://127.0.0.1:0"]}}}"#.utf8).write(to: URL(fileURLWithPath: unpublished))
        let cases: [([String], String)] = [
            (["--only", "catalog"], "--only and --keys need --config FILE"),
            (["--config", file], "--config needs --only NAME"),
            (["--config", file, "--only", "kitchen"], "--only kitchen: not a service"),
            (["--config", file, "--only", "search*0"], "NAME*N takes N from 1 to 16"),
            (["--config", file, "--only", "search*2"], "services.search.bind lists 1 endpoint(s), one per replica is needed"),
            (["--config", file, "--only", "gateway-b*2"], "a gateway has no replicas"),
            (["--config", file, "--only", "search*2*3"], "write NAME, NAME*N or NAME@N"),
            (["--config", file, "--only", "catalog@3"], "--replica 3: there are 2 Raft addresses"),
            (["--config", file, "--only", "catalog@0"], "--only catalog@0: write NAME@N, N a replica number from 1"),
            (["--config", file, "--only", "search@1"], "--replica needs the replicas' Raft addresses"),
            (["--config", file, "--only", "catalog@1,catalog@1"], "--only names catalog@1 twice"),
            (["--config", file, "--only", "catalog,catalog@2"], "--only names catalog@2 twice, or beside catalog itself"),
            (["--config", file, "--only", "catalog@2,catalog"], "--only names catalog twice"),
            (["--config", file, "--only", "favorites*2"], "favorites owns its data (it publishes events), so it has no replicas"),
            (["--config", metered, "--only", "search*2"], "replicas would all bind services.search.metrics_listen"),
            (["--config", unpublished, "--only", "search*2"], "services.search.publish lists 1 endpoint(s), one per replica is needed"),
            (["--config", file, "--only", "search,search"], "--only names search twice"),
            (["--config", file, "--only", "gateway-b,search,gateway-b"], "--only names gateway-b twice"),
            (["--demo", "mars"], "--demo is sydney (the default: places, tours, no streets) or helsinki"),
        ]
        for (arguments, message) in cases {
            let run = try up(arguments + ["--data-dir", scratch.path])
            #expect(run.exit == .status(2), "\(arguments): \(run.digest)")
            #expect(run.errors.contains(message), "\(arguments): \(run.digest)")
        }
        // A gateway named after a section the file lacks stops while starting, saying why.
        let run = try up(["--config", file, "--only", "gateway-c", "--data-dir", scratch.path])
        #expect(run.exit == .status(1), "\(run.digest)")
        #expect(run.errors.contains("--name gateway-c: the config file has no services.gateway-c section"), "\(run.digest)")
    }

    @Test func aShareRunsReplicasEachOnItsOwnEndpointAndDatabase() throws {
        let scratch = TemporaryFolder("up-replicas")
        let file = scratch.path + "/suite.json"
        let ports = try (0..<2).map { _ in try HTTPProbe.freePort() }
        // Secured, so that a SIGHUP shows in the members' logs (they reload their keys).
        let keys = try CurveKeyPair.generate()
        try FileManager.default.createDirectory(atPath: scratch.path + "/keys", withIntermediateDirectories: true)
        try keys.write(keyFile: scratch.path + "/keys/search.key", name: "search")
        try Data(#"{"curve":{"keys":{"search":["\#(try CurveKeyPair.z85(keys.publicKey))"]}},"services":{"search":{"bind":["tcp://127.0.0.1:\#(ports[0])","tcp://127.0.0.1:\#(ports[1])"],"publish":["tcp://127.0.0.1:0","tcp://127.0.0.1:0"]}}}"#.utf8)
            .write(to: URL(fileURLWithPath: file))
        let process = Process()
        process.executableURL = try ChildProcess.executable("tourbus")
        process.arguments = ["up", "--config", file, "--only", "search*2", "--keys", scratch.path + "/keys", "--data-dir", scratch.path]
        process.standardOutput = FileHandle.nullDevice
        let log = scratch.path + "/up.log"
        _ = FileManager.default.createFile(atPath: log, contents: nil)
        process.standardError = try FileHandle(forWritingTo: URL(fileURLWithPath: log))
        try process.run()
        defer {
            process.terminate()
            process.waitUntilExit()
        }
        let context = try ZMQContext()
        for port in ports {
            var options = RPCClientOptions()
            options.curve = CurveClientKeys(keys, serverKey: keys.publicKey)
            let client = try RPCClient(context: context, endpoints: ["tcp://127.0.0.1:\(port)"], options: options, logger: Logger(component: "test", level: .error))
            defer { client.close() }
            var answered = false
            for _ in 0..<100 where !answered {
                answered = (try? client.request(type: "sys.ping", body: Data("{}".utf8), timeoutMilliseconds: 200)) != nil
            }
            #expect(answered, "replica on port \(port)")
        }
        for i in 1...2 { #expect(FileManager.default.fileExists(atPath: scratch.path + "/search-\(i).sqlite")) }
        // Each replica publishes the searches it answered on an event endpoint of its own.
        let published = (1...2).map { i -> [String] in
            let ready = (try? Data(contentsOf: URL(fileURLWithPath: scratch.path + "/search-\(i).ready.json"))) ?? Data()
            return ((try? JSONSerialization.jsonObject(with: ready)) as? [String: Any])?["publish"] as? [String] ?? []
        }
        #expect(published.allSatisfy { $0.count == 1 } && Set(published.flatMap { $0 }).count == 2, "\(published)")
        // A SIGHUP (a key rotation) goes on to the members: the supervisor survives it, and so do they.
        let pids = (1...2).map { (try? String(contentsOfFile: scratch.path + "/search-\($0).ready.json", encoding: .utf8)) ?? "" }
        kill(process.processIdentifier, SIGHUP)
        var reloads = 0
        for _ in 0..<50 where reloads < 2 {
            usleep(100_000)
            reloads = ((try? String(contentsOfFile: log, encoding: .utf8)) ?? "").components(separatedBy: "CURVE keys reloaded").count - 1
        }
        #expect(reloads == 2, "both members reloaded their keys")
        #expect(process.isRunning, "tourbus up survives a SIGHUP")
        #expect((1...2).map { (try? String(contentsOfFile: scratch.path + "/search-\($0).ready.json", encoding: .utf8)) ?? "" } == pids, "no member restarted")
        #expect(FileManager.default.fileExists(atPath: scratch.path + "/search-1.ready.json"))
    }
}

