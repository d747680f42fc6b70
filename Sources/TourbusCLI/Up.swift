import Bus
import Contracts
import Foundation
import Geo
import Sealing
import ServiceCore
import TourMaps

#if canImport(Glibc)
    import Glibc
#endif

extension TourbusCommand {
    /// The services `up` starts when their executables are built, in start order.
    static let knownServices = ["catalog", "search", "favorites", "social", "notify"]
    /// Services that publish events.
    static let publishers: Set<String> = ["catalog", "social", "notify", "favorites", "search"]
    /// Publishers that may still run replicas: each replica's stream holds only what that
    /// replica did (search's `search.performed`, the searches it answered), and its followers
    /// follow every replica as a source of its own (`ServiceDefinition.perReplica`).
    static let replicable: Set<String> = ["search"]

    /// What `up` was asked to run: the whole suite on loopback, or, with a suite file, only
    /// this host's share of it.
    struct UpOptions {
        var dataDirectory = ProcessInfo.processInfo.environment["TOURBUS_DATA_DIR"] ?? "data"
        var listen = ProcessInfo.processInfo.environment["TOURBUS_GATEWAY_LISTEN"] ?? "127.0.0.1:7700"
        /// The demo loaded into an empty suite (`--demo-dir`): the repository's `deploy/demo`,
        /// from its root (where ./deploy/local/run starts), unless another is named or `--no-demo`.
        var demoDirectory: String? = FileManager.default.fileExists(atPath: "deploy/demo/places.json") ? "deploy/demo" : nil
        /// `--demo helsinki`: the Helsinki extract (`deploy/local/helsinki-osm` makes it) is
        /// imported instead of the Sydney places, with its streets and addresses: routes.
        var helsinkiExtract: String?
        /// The notify service's form when its database has none: the shipped one, from the
        /// repository's root (where ./deploy/local/run starts), unless another is named.
        var notifyForm: String? = FileManager.default.fileExists(atPath: "deploy/notify-form.json") ? "deploy/notify-form.json" : nil
        /// The catalog's interface strings (`--strings-dir`): the repository's `i18n/`, when
        /// there, unless another directory is named.
        var stringsDirectory: String? = FileManager.default.fileExists(atPath: "i18n/en.json") ? "i18n" : nil
        /// The web app the gateway serves at / (`--web-dir`): the repository's `web/`, when
        /// there, unless another directory is named or `--no-web`.
        var webDirectory: String? = FileManager.default.fileExists(atPath: "web/index.html") ? "web" : nil
        var config: String?
        var only: [String]?
        var keys: String?
        /// The catalog's signing key file; without one the whole-suite `up` makes
        /// DATA/catalog.sign.key the first time and uses it from then on.
        var signingKey: String?
    }

    static func up(_ arguments: [String]) -> Int32 {
        var options = UpOptions()
        var args = arguments[...]
        while let flag = args.popFirst() {
            switch flag {
            case "--no-demo": (options.demoDirectory, options.helsinkiExtract) = (nil, nil)
            case "--demo":
                switch args.popFirst() {
                case "sydney": (options.demoDirectory, options.helsinkiExtract) = (UpOptions().demoDirectory, nil)
                case "helsinki": (options.demoDirectory, options.helsinkiExtract) = (nil, Self.helsinkiExtract)
                default:
                    printError("--demo is sydney (the default: places, tours, no streets) or helsinki (an OpenStreetMap extract: places, streets and addresses)")
                    return 2
                }
            case "--no-web": options.webDirectory = nil
            case "--data-dir", "--listen", "--notify-form", "--strings-dir", "--demo-dir", "--config", "--only", "--keys", "--signing-key", "--web-dir":
                guard let value = args.popFirst() else {
                    printError("\(flag) needs a value")
                    return 2
                }
                switch flag {
                case "--data-dir": options.dataDirectory = value
                case "--listen": options.listen = value
                case "--config": options.config = value
                case "--only": options.only = value.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty }
                case "--keys": options.keys = value
                case "--signing-key": options.signingKey = value
                case "--strings-dir": options.stringsDirectory = value
                case "--demo-dir": (options.demoDirectory, options.helsinkiExtract) = (value, nil)
                case "--web-dir": options.webDirectory = value
                default: options.notifyForm = value
                }
            default:
                printError("unknown option \(flag)\n\(usage)")
                return 2
            }
        }
        if options.config == nil && (options.only != nil || options.keys != nil) {
            printError("--only and --keys need --config FILE: this host's share of a suite is read from the suite file")
            return 2
        }

        // Block the stop signals before any thread or child exists; the loop below takes them.
        var signals = sigset_t()
        sigemptyset(&signals)
        sigaddset(&signals, SIGINT)
        sigaddset(&signals, SIGTERM)
        sigaddset(&signals, SIGHUP)
        pthread_sigmask(SIG_BLOCK, &signals, nil)

        let folder = URL(fileURLWithPath: CommandLine.arguments[0]).resolvingSymlinksInPath().deletingLastPathComponent()
        let built = knownServices.filter { FileManager.default.isExecutableFile(atPath: folder.appendingPathComponent("tourbus-\($0)").path) }
        guard !built.isEmpty, FileManager.default.isExecutableFile(atPath: folder.appendingPathComponent("tourbus-gateway").path) else {
            printError("no tourbus-* executables next to \(CommandLine.arguments[0]); build first (swift build)")
            return 1
        }
        do {
            try FileManager.default.createDirectory(atPath: options.dataDirectory, withIntermediateDirectories: true)
        } catch {
            printError("cannot make \(options.dataDirectory): \(error)")
            return 1
        }
        let members: [SuiteMember]
        do {
            members = try options.config == nil ? localSuite(options, services: built, folder: folder) : hostShare(options, folder: folder)
        } catch {
            printError("\(error)")
            return 2
        }
        let restartLog: RestartLog
        do { restartLog = try RestartLog(dataDirectory: options.dataDirectory) } catch {
            printError("\(error)")
            return 1
        }

        func stopAll() {
            // The gateways first, so no client request arrives at a stopping service.
            for member in members.reversed() {
                member.terminate()
                member.waitForExit(timeout: 10)
            }
        }

        // Each member says it is ready in its ready file, written once it has bound (a port that
        // answers is not proof: another process may hold it).
        for member in members {
            try? FileManager.default.removeItem(atPath: member.readyFile)
            do { try member.start() } catch {
                printError("could not start \(member.name): \(error)")
                stopAll()
                return 1
            }
        }
        // Wait (at most 20 s) until every member is ready. A child that ends meanwhile (a port
        // in use, a bad flag) ends the start: restarting it would only fail again.
        let readyBy = Date().addingTimeInterval(20)
        var waiting = members.filter { !FileManager.default.fileExists(atPath: $0.readyFile) }
        while !waiting.isEmpty && Date() < readyBy {
            if let ended = members.first(where: { $0.process?.isRunning == false }) {
                printError("\(ended.name) stopped while starting (its messages are above); stopping the suite")
                stopAll()
                return 1
            }
            usleep(100_000)
            waiting.removeAll { FileManager.default.fileExists(atPath: $0.readyFile) }
        }
        guard waiting.isEmpty else {
            printError("not ready after 20 s: \(waiting.map(\.name).joined(separator: ", "))")
            stopAll()
            return 1
        }

        if options.config == nil {
            welcome(options, services: built)
        } else {
            print("Tourbus is up on this host: \(members.map(\.name).joined(separator: ", ")) (data in \(options.dataDirectory)).")
            print("A crashed process is restarted; each restart is logged in \(RestartLog.path(options.dataDirectory)). Ctrl-C stops them.")
        }
        fflush(nil)  // every stream: the lines above must show before the long wait

        // Supervise until SIGINT or SIGTERM; a SIGHUP goes on to every member (CURVE key rotation).
        var timeout = timespec(tv_sec: 0, tv_nsec: 200_000_000)
        while true {
            let received = sigtimedwait(&signals, nil, &timeout)
            if received == SIGHUP {
                members.forEach { $0.signal(SIGHUP) }
            } else if received > 0 {
                break
            }
            for member in members {
                if let event = member.superviseOnce() { restartLog.record(event, of: member.name) }
            }
        }
        print("stopping…")
        stopAll()
        return 0
    }

    /// The whole suite on this host: every built service on fixed loopback ports chosen now
    /// (so a restarted service comes back where its peers look), and the gateway at `listen`;
    /// their endpoints written to DATA/endpoints.json for `tourbus admin`.
    static func localSuite(_ options: UpOptions, services: [String], folder: URL) throws -> [SuiteMember] {
        let ports = try FreePorts.take(services.count * 2)
        var rpc: [String: String] = [:]
        var pub: [String: String] = [:]
        for (i, name) in services.enumerated() {
            rpc[name] = "tcp://127.0.0.1:\(ports[2 * i])"
            pub[name] = "tcp://127.0.0.1:\(ports[2 * i + 1])"
        }
        let data = options.dataDirectory
        var members: [SuiteMember] = []
        for name in services {
            var args = ["--data-dir", data, "--bind", rpc[name] ?? "", "--publish", pub[name] ?? ""]
            for peer in services where peer != name {
                args += ["--peer", "\(peer)=\(rpc[peer] ?? "")"]
                if publishers.contains(peer) { args += ["--peer-pub", "\(peer)=\(pub[peer] ?? "")"] }
            }
            if name == "notify", let form = options.notifyForm { args += ["--form", form] }
            if name == "catalog" { args += ["--signing-key", try signingKeyFile(options)] }
            if name == "catalog", let strings = options.stringsDirectory { args += ["--strings-dir", strings] }
            // The demo's places are in Sydney: its events' seasons are Sydney days.
            if name == "catalog", options.demoDirectory != nil { args += ["--default-timezone", "Australia/Sydney"] }
            if name == "catalog", options.helsinkiExtract != nil { args += ["--default-timezone", "Europe/Helsinki"] }
            members.append(SuiteMember(name: name, folder: folder, dataDirectory: data, arguments: args))
        }
        try SuiteEndpoints.write(
            Dictionary(
                uniqueKeysWithValues: services.map { name in
                    (name, SuiteEndpoints.Service(rpc: rpc[name] ?? "", publish: publishers.contains(name) ? pub[name] : nil))
                }), to: data)
        var gatewayArgs = ["--listen", options.listen]
        if let web = options.webDirectory { gatewayArgs += ["--web-dir", URL(fileURLWithPath: web).standardizedFileURL.path] }
        for name in services {
            gatewayArgs += ["--peer", "\(name)=\(rpc[name] ?? "")"]
            // Social's events drop cached sign-ins at once (a logout, a demoted admin); every
            // publisher's pushes reach the clients that subscribed.
            if publishers.contains(name) { gatewayArgs += ["--peer-pub", "\(name)=\(pub[name] ?? "")"] }
        }
        members.append(SuiteMember(name: "gateway", folder: folder, dataDirectory: data, arguments: gatewayArgs))
        return members
    }

    /// The catalog's signing key file: `--signing-key`, else DATA/catalog.sign.key, made
    /// now (mode 0600) when it is not there yet, so the demo's downloads are signed.
    static func signingKeyFile(_ options: UpOptions) throws -> String {
        if let given = options.signingKey { return given }
        let path = (options.dataDirectory as NSString).appendingPathComponent("catalog.sign.key")
        if !FileManager.default.fileExists(atPath: path) {
            try SigningKey.generate().write(keyFile: path, name: "catalog")
            print("made the catalog's signing key \(path)")
        }
        return path
    }

    /// This host's share of a suite described by the suite file: the members `--only` names,
    /// each reading the file (and its key file from `--keys DIR`, `DIR/NAME.key`). A service
    /// named `NAME*N` runs N replicas, the i-th bound only to the i-th of its section's `bind`
    /// endpoints, with its own database (`DATA/NAME-i.sqlite`); they share NAME's key, which
    /// its clients pin. A name starting with `gateway` is a gateway reading that section.
    static func hostShare(_ options: UpOptions, folder: URL) throws(ConfigError) -> [SuiteMember] {
        guard let file = options.config else { return [] }
        guard let only = options.only, !only.isEmpty else {
            throw ConfigError("--config needs --only NAME[,NAME…]: the members this host runs (services, NAME*N for N replicas, gateway, gateway-b, …)")
        }
        let data = options.dataDirectory
        var members: [SuiteMember] = []
        var named = Set<String>()
        // Services run as Raft replicas here (`NAME@N`), which may not also run plain.
        var raftReplicated = Set<String>()
        for item in only {
            if item.contains("@") {
                let member = try raftReplica(item, file: file, data: data, options: options, folder: folder)
                let service = String(item.prefix { $0 != "@" })
                guard named.insert(member.name).inserted, !named.contains(service) else {
                    throw ConfigError("--only names \(item) twice, or beside \(service) itself")
                }
                raftReplicated.insert(service)
                members.append(member)
                continue
            }
            let parts = item.split(separator: "*", omittingEmptySubsequences: false).map(String.init)
            let name = parts[0]
            guard parts.count <= 2 else { throw ConfigError("--only \(item): write NAME, NAME*N or NAME@N") }
            guard named.insert(name).inserted, !raftReplicated.contains(name) else {
                throw ConfigError("--only names \(name) twice: one member each (NAME*N for replicas)")
            }
            let key = options.keys.map { ["--curve-key", ($0 as NSString).appendingPathComponent("\(name).key")] } ?? []
            if name.hasPrefix("gateway") {
                guard parts.count == 1 else { throw ConfigError("--only \(item): a gateway has no replicas; name each (gateway, gateway-b)") }
                members.append(
                    SuiteMember(
                        name: name, executable: "gateway", folder: folder, dataDirectory: data,
                        arguments: ["--config", file, "--name", name] + key))
                continue
            }
            guard knownServices.contains(name) else {
                throw ConfigError("--only \(item): not a service (\(knownServices.joined(separator: ", "))) or a gateway")
            }
            let arguments = serviceArguments(name, file: file, data: data, key: key, options: options)
            guard parts.count == 2 else {
                members.append(SuiteMember(name: name, folder: folder, dataDirectory: data, arguments: arguments))
                continue
            }
            guard let replicas = Int(parts[1]), (1...16).contains(replicas) else {
                throw ConfigError("--only \(item): NAME*N takes N from 1 to 16")
            }
            // A replica has a database of its own: only a copy fed by events (search) may be
            // replicated; a publisher's replicas would each own different data. Search publishes
            // only what each replica answered, on the replica's own event endpoint.
            guard !publishers.contains(name) || replicable.contains(name) else {
                throw ConfigError("--only \(item): \(name) owns its data (it publishes events), so it has no replicas; only search does")
            }
            let section = try ServiceConfig.load(service: name, arguments: ["--config", file] + key, environment: [:])
            guard section.common.metricsListen == nil else {
                throw ConfigError("--only \(item): replicas would all bind services.\(name).metrics_listen; drop it, or run them as separate members")
            }
            let binds = section.bind
            guard binds.count >= replicas else {
                throw ConfigError("--only \(item): services.\(name).bind lists \(binds.count) endpoint(s), one per replica is needed")
            }
            // The i-th replica publishes on the i-th `publish` endpoint, where its followers
            // look for it (the i-th `subscribe`, beside the i-th `connect`).
            let publish = section.publish
            guard publish.count >= replicas else {
                throw ConfigError(
                    "--only \(item): services.\(name).publish lists \(publish.count) endpoint(s), one per replica is needed (each publishes the searches it answered)")
            }
            for i in 1...replicas {
                members.append(
                    SuiteMember(
                        name: "\(name)-\(i)", executable: name, folder: folder, dataDirectory: data,
                        arguments: arguments + [
                            "--bind", binds[i - 1], "--publish", publish[i - 1],
                            "--db", (data as NSString).appendingPathComponent("\(name)-\(i).sqlite"),
                        ]))
            }
        }
        return members
    }

    /// What every member running service `name` from the suite file is given.
    static func serviceArguments(_ name: String, file: String, data: String, key: [String], options: UpOptions) -> [String] {
        var arguments = ["--config", file, "--data-dir", data] + key
        if name == "notify", let form = options.notifyForm { arguments += ["--form", form] }
        if name == "catalog", let signing = options.signingKey { arguments += ["--signing-key", signing] }
        if name == "catalog", let strings = options.stringsDirectory { arguments += ["--strings-dir", strings] }
        return arguments
    }

    /// `NAME@N`: replica N of a service whose section lists its replicas' Raft addresses
    /// (`raft`); it binds the N-th `bind` and `publish` endpoints when the section lists one
    /// per replica (`ServiceConfig`), its database `DATA/NAME-N.sqlite` (its Raft log beside
    /// it, `DATA/NAME-N.raft`).
    static func raftReplica(_ item: String, file: String, data: String, options: UpOptions, folder: URL) throws(ConfigError) -> SuiteMember {
        let parts = item.split(separator: "@", omittingEmptySubsequences: false).map(String.init)
        guard parts.count == 2, let replica = Int(parts[1]), replica >= 1 else { throw ConfigError("--only \(item): write NAME@N, N a replica number from 1") }
        let name = parts[0]
        guard knownServices.contains(name) else { throw ConfigError("--only \(item): not a service (\(knownServices.joined(separator: ", ")))") }
        let key = options.keys.map { ["--curve-key", ($0 as NSString).appendingPathComponent("\(name).key")] } ?? []
        // Read as that replica, as it will read the file itself: a number the section's `raft`
        // does not list, or a section without `raft`, is refused here, before anything starts.
        _ = try ServiceConfig.load(service: name, arguments: ["--config", file, "--replica", String(replica)] + key, environment: [:])
        var arguments = serviceArguments(name, file: file, data: data, key: key, options: options)
        arguments += ["--replica", String(replica)]
        arguments += ["--db", (data as NSString).appendingPathComponent("\(name)-\(replica).sqlite")]
        return SuiteMember(name: "\(name)-\(replica)", executable: name, folder: folder, dataDirectory: data, arguments: arguments)
    }

    /// Where `deploy/local/helsinki-osm` leaves the Helsinki extract, from the repository's root.
    static let helsinkiExtract = ".build/osm/helsinki.osm"

    /// Imports the Helsinki extract into an empty catalog (its places, streets and addresses),
    /// or says why not.
    static func loadHelsinki(_ extract: String, _ catalog: RPCClient) {
        guard FileManager.default.fileExists(atPath: extract) else {
            printError("the Helsinki demo is not loaded: \(extract) is missing (deploy/local/helsinki-osm makes it)")
            return
        }
        do {
            let page = try catalog.request(type: Methods.Catalog.list.name, body: Data(#"{"limit":1}"#.utf8), timeoutMilliseconds: 5_000)
            let places = (try JSONSerialization.jsonObject(with: page.bodyJSON) as? [String: Any])?["places"] as? [Any]
            guard places?.isEmpty == true else { return }
            let report = try sendImport(try importFiles(extract), format: "osm", dryRun: false, client: catalog, timeoutMilliseconds: 300_000)
            let created = ((try JSONSerialization.jsonObject(with: report) as? [String: Any])?["report"] as? [String: Any]).flatMap {
                ($0["places"] as? [String: Any])?["created"] as? Int
            }
            print("imported the Helsinki extract: \(created.map(String.init) ?? "its") places, its streets and addresses (routes are built in a few seconds)")
        } catch {
            printError("the Helsinki demo is not loaded: \(error)")
        }
    }

    /// What to try once the local suite is up.
    static func welcome(_ options: UpOptions, services: [String]) {
        let data = options.dataDirectory
        let context: ZMQContext
        do { context = try ZMQContext() } catch { return }
        let logger = Logger(component: "tourbus", level: .error)
        let endpoints = SuiteEndpoints.read(data) ?? [:]
        var clients: [String: RPCClient] = [:]
        for name in services { clients[name] = try? RPCClient(context: context, endpoints: [endpoints[name]?.rpc ?? ""], logger: logger) }
        defer { clients.values.forEach { $0.close() } }
        var demo: DemoData?
        if let folder = options.demoDirectory {
            do {
                demo = try DemoData.load(from: folder)
            } catch {
                printError("demo data not loaded: \(error)")
            }
        }
        if let demo, let catalog = clients["catalog"] {
            do {
                let loaded = try DemoLoader.loadIfEmpty(catalog, demo)
                if loaded.count > 0 { print("loaded \(loaded.count) Sydney places into the empty catalog") }
                let drawn = try DemoLoader.addDrawings(catalog, demo, ids: loaded)
                if drawn > 0 { print("added the demo's drawings to the \(drawn) most popular places") }
                let tours = try DemoLoader.loadToursIfNone(catalog, demo)
                if tours > 0 { print("loaded \(tours) Sydney walking tours") }
            } catch {
                printError("demo data not loaded: \(error)")
            }
        }
        if let extract = options.helsinkiExtract, let catalog = clients["catalog"] { loadHelsinki(extract, catalog) }
        if let demo, let notify = clients["notify"], let social = clients["social"] {
            do {
                let posted = try DemoLoader.postAnnotationsIfNone(notify, social: social, dataDirectory: data, demo)
                if posted > 0 { print("posted \(posted) Sydney annotations (they expire in 12 h)") }
            } catch {
                printError("demo annotations not posted: \(error)")
            }
        }
        let listen = options.listen
        let (host, port) = (listen.split(separator: ":").dropLast().joined(separator: ":"), listen.split(separator: ":").last ?? "7700")
        let gateway = listen == "127.0.0.1:7700" ? "" : "--gateway \(listen) "
        let routes =
            options.helsinkiExtract == nil
            ? ""
            : """

                  tourbus call \(gateway)geo.search '{"q":"Mannerheimintie 13"}'
                  tourbus call \(gateway)directions.get '{"from":{"lat":60.1710,"lon":24.9414},"to":{"lat":60.1694,"lon":24.9522},"mode":"walking"}'
            """
        print(
            """
            Tourbus is up: \(services.joined(separator: ", ")) and the gateway at \(listen) (data in \(data)).
            Try:  redis-cli -h \(host) -p \(port) catalog.list category museum limit 3
                  tourbus call \(gateway)catalog.categories\(routes)
            A crashed service is restarted; each restart is logged in \(RestartLog.path(data)).
            An admin (catalog writes need one), the password on standard input:
                  tourbus admin create --data-dir \(data) --username admin --email admin@example.org --name Admin
            Ctrl-C stops everything.
            """)
    }
}

/// Loads the Sydney demo places into an empty catalog.
enum DemoLoader {
    struct Failure: Error, CustomStringConvertible {
        let description: String
    }

    /// Creates every demo place when the catalog has none; answers the ids it gave them, in
    /// the order of the demo's places (none when the catalog had places).
    static func loadIfEmpty(_ catalog: RPCClient, _ demo: DemoData) throws -> [Int64] {
        let page = try catalog.request(type: Methods.Catalog.list.name, body: Data(#"{"limit":1}"#.utf8), timeoutMilliseconds: 5_000)
        guard let body = try JSONSerialization.jsonObject(with: page.bodyJSON) as? [String: Any],
            (body["places"] as? [Any])?.isEmpty == true
        else { return [] }
        var created: [Int64] = []
        for place in demo.places {
            let reply = try catalog.request(type: Methods.Catalog.create.name, body: try JSONCoding.encoder.encode(place), timeoutMilliseconds: 5_000)
            created.append(try JSONCoding.decoder.decode(PlaceID.self, from: reply.bodyJSON).id)
        }
        return created
    }

    /// What the demo's drawings say of themselves, wherever a place's photos are shown.
    static let drawingAttribution = "A drawing by the Tourbus demo, not a photograph"
    /// How many places get a drawing: the most popular that are not events.
    static let drawnPlaces = 20

    /// Gives the `drawnPlaces` most popular demo places (not events; ties by their order in the
    /// file) a drawing of their kind (`PlaceDrawing`), hosted by the catalog and labelled as a
    /// drawing; `ids` are the places' ids, in the demo's order. Answers how many it drew.
    static func addDrawings(_ catalog: RPCClient, _ demo: DemoData, ids: [Int64]) throws -> Int {
        guard ids.count == demo.places.count else { return 0 }
        let ranked = zip(demo.places, ids).enumerated()
            .filter { $0.element.0.category != "event" }
            .sorted { ($0.element.0.popularity ?? 0, -$0.offset) > ($1.element.0.popularity ?? 0, -$1.offset) }
            .prefix(drawnPlaces)
        for (_, (place, id)) in ranked {
            let jpeg = try PlaceDrawing.jpeg(category: place.category, seed: place.externalIds?["demo"] ?? String(id))
            let upload = try self.upload(catalog, jpeg)
            _ = try call(
                catalog, Methods.Catalog.photoAdd.name,
                ["place_id": id, "upload_id": upload, "attribution": drawingAttribution, "caption": "\(place.name ?? "The place"), as the demo draws it"])
        }
        return ranked.count
    }

    /// Uploads `jpeg` in chunks (`tours.map.upload.*`) and commits it; answers the upload id.
    private static func upload(_ catalog: RPCClient, _ jpeg: Data) throws -> String {
        guard let upload = try call(catalog, Methods.Tours.mapUploadBegin.name, [:])["upload_id"] as? String else { throw Failure(description: "no upload_id") }
        try TourbusCommand.sendChunks(jpeg) { offset, chunk in
            _ = try call(catalog, Methods.Tours.mapUploadAppend.name, ["upload_id": upload, "offset": offset, "chunk": chunk])
        }
        _ = try call(catalog, Methods.Tours.mapUploadCommit.name, ["upload_id": upload])
        return upload
    }

    /// One catalog request with a JSON object for a body; answers the reply's body.
    @discardableResult
    private static func call(_ catalog: RPCClient, _ type: String, _ body: [String: Any]) throws -> [String: Any] {
        let reply = try catalog.request(type: type, body: try JSONSerialization.data(withJSONObject: body), timeoutMilliseconds: 30_000)
        return (try JSONSerialization.jsonObject(with: reply.bodyJSON) as? [String: Any]) ?? [:]
    }

    /// Creates the demo tours when the catalog has no tour and has every stop of them (found
    /// by their demo external ids, reading at most 100 pages of places); returns how many.
    static func loadToursIfNone(_ catalog: RPCClient, _ demo: DemoData) throws -> Int {
        let existing = try catalog.request(type: Methods.Tours.list.name, body: Data(#"{"limit":1}"#.utf8), timeoutMilliseconds: 5_000)
        guard let body = try JSONSerialization.jsonObject(with: existing.bodyJSON) as? [String: Any],
            (body["tours"] as? [Any])?.isEmpty == true
        else { return 0 }
        var demoIds: [String: Int64] = [:]
        var cursor: String?
        for _ in 0..<100 {
            let request = #"{"limit":100\#(cursor.map { #","cursor":"\#($0)""# } ?? "")}"#
            let page = try catalog.request(type: Methods.Catalog.list.name, body: Data(request.utf8), timeoutMilliseconds: 5_000)
            let list = try JSONCoding.decoder.decode(PlaceList.self, from: page.bodyJSON)
            for place in list.places { if let demo = place.externalIds["demo"] { demoIds[demo] = place.id } }
            guard let next = list.nextCursor else { break }
            cursor = next
        }
        var created = 0
        for demoTour in demo.tours {
            let ids = demoTour.stops.compactMap { demoIds[$0] }
            guard ids.count == demoTour.stops.count else { continue }
            var tour = demoTour.tour
            tour.stops = ids
            let reply = try catalog.request(type: Methods.Tours.create.name, body: try JSONCoding.encoder.encode(tour), timeoutMilliseconds: 5_000)
            let made = try JSONCoding.decoder.decode(Tour.self, from: reply.bodyJSON)
            try setDemoMap(
                catalog, tour: made.id,
                stops: try ids.map { id in
                    let place = try JSONCoding.decoder.decode(
                        Place.self,
                        from: try catalog.request(
                            type: Methods.Catalog.get.name, body: Data(#"{"id":\#(id)}"#.utf8), timeoutMilliseconds: 5_000
                        ).bodyJSON)
                    return Coordinate(uncheckedLatitude: place.lat, longitude: place.lon)
                })
            created += 1
        }
        return created
    }

    /// Draws a demo tour's map (its route through its stops on a blank canvas: no map tiles of
    /// anyone's), uploads it in chunks and places it by the drawing's own control points.
    static func setDemoMap(_ catalog: RPCClient, tour: Int64, stops: [Coordinate]) throws {
        let map = try MapCanvas.draw(stops: stops, width: 2048, height: 1536)
        let upload = try self.upload(catalog, map.jpeg)
        let points = map.controlPoints.map { ["x": $0.x, "y": $0.y, "lat": $0.coordinate.latitude, "lon": $0.coordinate.longitude] }
        try call(catalog, Methods.Tours.mapSet.name, ["tour_id": tour, "upload_id": upload, "points": points])
    }

    /// A page of `catalog.list`, as far as the demo loader reads it.
    private struct PlaceList: Decodable {
        var places: [Place]
        var nextCursor: String?

        enum CodingKeys: String, CodingKey {
            case places
            case nextCursor = "next_cursor"
        }
    }

    /// Where the demo annotations' author's user id is kept, in the data directory.
    static func demoUserFile(_ dataDirectory: String) -> String { dataDirectory + "/demo-user" }

    /// Posts the demo annotations when notify has none live around Sydney, as the demo user
    /// (registered with social on the first run, its id kept in the data directory); how many.
    static func postAnnotationsIfNone(_ notify: RPCClient, social: RPCClient, dataDirectory: String, _ demo: DemoData) throws -> Int {
        let sydney = #"{"bbox":{"south":-34.2,"west":150.5,"north":-33.5,"east":151.5},"limit":1}"#
        let live = try notify.request(type: Methods.Annotations.viewport.name, body: Data(sydney.utf8), timeoutMilliseconds: 5_000)
        guard let page = try JSONSerialization.jsonObject(with: live.bodyJSON) as? [String: Any],
            (page["annotations"] as? [Any])?.isEmpty == true
        else { return 0 }
        let file = demoUserFile(dataDirectory)
        var userId = (try? String(contentsOfFile: file, encoding: .utf8)).flatMap { Int64($0.trimmingCharacters(in: .whitespacesAndNewlines)) }
        if userId == nil {
            // Nobody signs in as it: its password is thrown away.
            let password = "Demo-\(UInt64.random(in: 0...UInt64.max))-Pass-1"
            let body = #"{"username":"sydney_demo","email":"sydney-demo@tourbus.example","name":"Sydney demo","password":"\#(password)"}"#
            let registered = try social.request(type: Methods.Auth.register.name, body: Data(body.utf8), timeoutMilliseconds: 30_000)
            let user = try JSONCoding.decoder.decode(PublicUser.self, from: registered.bodyJSON)
            try String(user.id).write(toFile: file, atomically: true, encoding: .utf8)
            userId = user.id
        }
        let author = Auth(userId: String(userId ?? 0), role: "user")
        for annotation in demo.annotations {
            _ = try notify.request(type: Methods.Annotations.submit.name, body: annotation, auth: author, timeoutMilliseconds: 5_000)
        }
        return demo.annotations.count
    }
}
