import Bus
import Contracts
import Foundation
#if canImport(Glibc)
import Glibc
#endif

extension TourbusCommand {
    /// The services `up` starts when their executables are built, in start order.
    static let knownServices = ["catalog", "search", "favorites", "social", "notify"]
    /// Services that publish events.
    static let publishers: Set<String> = ["catalog", "social", "notify", "favorites"]

    static func up(_ arguments: [String]) -> Int32 {
        var dataDirectory = ProcessInfo.processInfo.environment["TOURBUS_DATA_DIR"] ?? "data"
        var listen = ProcessInfo.processInfo.environment["TOURBUS_GATEWAY_LISTEN"] ?? "127.0.0.1:7700"
        var loadDemo = true
        // The notify service's form when its database has none: the shipped one, from the
        // repository's root (where ./deploy/local/run starts), unless another is named.
        var notifyForm: String? = FileManager.default.fileExists(atPath: "deploy/notify-form.json") ? "deploy/notify-form.json" : nil
        var args = arguments[...]
        while let flag = args.popFirst() {
            switch flag {
            case "--no-demo": loadDemo = false
            case "--data-dir", "--listen", "--notify-form":
                guard let value = args.popFirst() else {
                    printError("\(flag) needs a value")
                    return 2
                }
                switch flag {
                case "--data-dir": dataDirectory = value
                case "--listen": listen = value
                default: notifyForm = value
                }
            default:
                printError("unknown option \(flag)\n\(usage)")
                return 2
            }
        }

        // Block the stop signals before any thread or child exists; the loop below takes them.
        var signals = sigset_t()
        sigemptyset(&signals)
        sigaddset(&signals, SIGINT)
        sigaddset(&signals, SIGTERM)
        pthread_sigmask(SIG_BLOCK, &signals, nil)

        let folder = URL(fileURLWithPath: CommandLine.arguments[0]).resolvingSymlinksInPath().deletingLastPathComponent()
        let services = knownServices.filter { FileManager.default.isExecutableFile(atPath: folder.appendingPathComponent("tourbus-\($0)").path) }
        guard !services.isEmpty, FileManager.default.isExecutableFile(atPath: folder.appendingPathComponent("tourbus-gateway").path) else {
            printError("no tourbus-* executables next to \(CommandLine.arguments[0]); build first (swift build)")
            return 1
        }

        // Fixed loopback ports for the whole run, so a restarted service comes back where its peers look.
        let ports: [UInt16]
        do { ports = try FreePorts.take(services.count * 2) } catch {
            printError("\(error)")
            return 1
        }
        var rpc: [String: String] = [:]
        var pub: [String: String] = [:]
        for (i, name) in services.enumerated() {
            rpc[name] = "tcp://127.0.0.1:\(ports[2 * i])"
            pub[name] = "tcp://127.0.0.1:\(ports[2 * i + 1])"
        }
        var members: [SuiteMember] = []
        for name in services {
            var args = ["--data-dir", dataDirectory, "--bind", rpc[name] ?? "", "--publish", pub[name] ?? ""]
            for peer in services where peer != name {
                args += ["--peer", "\(peer)=\(rpc[peer] ?? "")"]
                if publishers.contains(peer) { args += ["--peer-pub", "\(peer)=\(pub[peer] ?? "")"] }
            }
            if name == "notify", let notifyForm { args += ["--form", notifyForm] }
            members.append(SuiteMember(name: name, executable: folder.appendingPathComponent("tourbus-\(name)"), arguments: args))
        }
        do {
            try FileManager.default.createDirectory(atPath: dataDirectory, withIntermediateDirectories: true)
            try SuiteEndpoints.write(Dictionary(uniqueKeysWithValues: services.map { name in
                (name, SuiteEndpoints.Service(rpc: rpc[name] ?? "", publish: publishers.contains(name) ? pub[name] : nil))
            }), to: dataDirectory)
        } catch {
            printError("could not write \(SuiteEndpoints.path(dataDirectory)): \(error)")
            return 1
        }
        let restartLog: RestartLog
        do { restartLog = try RestartLog(dataDirectory: dataDirectory) } catch {
            printError("\(error)")
            return 1
        }
        // The gateway says it is listening in this file (written once its port is bound): a
        // port that answers is not proof, since another process may hold it.
        let gatewayReady = (dataDirectory as NSString).appendingPathComponent("gateway.ready.json")
        try? FileManager.default.removeItem(atPath: gatewayReady)
        var gatewayArgs = ["--listen", listen, "--ready-file", gatewayReady]
        for name in services {
            gatewayArgs += ["--peer", "\(name)=\(rpc[name] ?? "")"]
            // Social's events drop cached sign-ins at once (a logout, a demoted admin); every
            // publisher's pushes reach the clients that subscribed.
            if publishers.contains(name) { gatewayArgs += ["--peer-pub", "\(name)=\(pub[name] ?? "")"] }
        }
        members.append(SuiteMember(name: "gateway", executable: folder.appendingPathComponent("tourbus-gateway"), arguments: gatewayArgs))

        func stopAll() {
            // The gateway first, so no client request arrives at a stopping service.
            for member in members.reversed() {
                member.terminate()
                member.waitForExit(timeout: 10)
            }
        }

        for member in members {
            do { try member.start() } catch {
                printError("could not start \(member.name): \(error)")
                stopAll()
                return 1
            }
        }

        let logger = Logger(component: "tourbus", level: .error)
        let context: ZMQContext
        do { context = try ZMQContext() } catch {
            printError("\(error)")
            stopAll()
            return 1
        }
        var clients: [String: RPCClient] = [:]
        for name in services { clients[name] = try? RPCClient(context: context, endpoints: [rpc[name] ?? ""], logger: logger) }
        defer { clients.values.forEach { $0.close() } }

        // Wait (at most 20 s) until every service answers sys.ping and the gateway has bound its
        // port and answers ping there. A child that ends meanwhile (a port in use, a bad flag)
        // ends the start: restarting it would only fail again.
        let readyBy = Date().addingTimeInterval(20)
        var waiting = Set(services + ["gateway"])
        while !waiting.isEmpty && Date() < readyBy {
            if let ended = members.first(where: { $0.process?.isRunning == false }) {
                printError("\(ended.name) stopped while starting (its messages are above); stopping the suite")
                stopAll()
                return 1
            }
            for name in waiting {
                if name == "gateway" {
                    let ping = Data(#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#.utf8 + [0x0A])
                    if FileManager.default.fileExists(atPath: gatewayReady),
                       (try? LineClient(endpoint: listen, timeoutMilliseconds: 500).exchange(ping)) != nil { waiting.remove(name) }
                } else if (try? clients[name]?.request(type: SystemRequests.ping, body: Data("{}".utf8), timeoutMilliseconds: 500)) != nil {
                    waiting.remove(name)
                }
            }
            if !waiting.isEmpty { usleep(100_000) }
        }
        guard waiting.isEmpty else {
            printError("not ready after 20 s: \(waiting.sorted().joined(separator: ", "))")
            stopAll()
            return 1
        }

        if loadDemo, let catalog = clients["catalog"] {
            do {
                let loaded = try DemoLoader.loadIfEmpty(catalog)
                if loaded > 0 { print("loaded \(loaded) Sydney places into the empty catalog") }
            } catch {
                printError("demo data not loaded: \(error)")
            }
        }
        if loadDemo, let notify = clients["notify"], let social = clients["social"] {
            do {
                let posted = try DemoLoader.postAnnotationsIfNone(notify, social: social, dataDirectory: dataDirectory)
                if posted > 0 { print("posted \(posted) Sydney annotations (they expire in 12 h)") }
            } catch {
                printError("demo annotations not posted: \(error)")
            }
        }

        let (host, port) = (listen.split(separator: ":").dropLast().joined(separator: ":"), listen.split(separator: ":").last ?? "7700")
        print("""
            Tourbus is up: \(services.joined(separator: ", ")) and the gateway at \(listen) (data in \(dataDirectory)).
            Try:  redis-cli -h \(host) -p \(port) catalog.list category museum limit 3
                  tourbus call catalog.categories
            A crashed service is restarted; each restart is logged in \(RestartLog.path(dataDirectory)).
            An admin (catalog writes need one), the password on standard input:
                  tourbus admin create --data-dir \(dataDirectory) --username admin --email admin@example.org --name Admin
            Ctrl-C stops everything.
            """)
        fflush(nil)  // every stream: the lines above must show before the long wait

        // Supervise until SIGINT or SIGTERM.
        var timeout = timespec(tv_sec: 0, tv_nsec: 200_000_000)
        while true {
            if sigtimedwait(&signals, nil, &timeout) > 0 { break }
            for member in members {
                if let event = member.superviseOnce() { restartLog.record(event, of: member.name) }
            }
        }
        print("stopping…")
        stopAll()
        return 0
    }
}

/// Loads the Sydney demo places into an empty catalog.
enum DemoLoader {
    struct Failure: Error, CustomStringConvertible {
        let description: String
    }

    /// Creates every demo place when the catalog has none; returns how many were created.
    static func loadIfEmpty(_ catalog: RPCClient) throws -> Int {
        let page = try catalog.request(type: "catalog.list", body: Data(#"{"limit":1}"#.utf8), timeoutMilliseconds: 5_000)
        guard let body = try JSONSerialization.jsonObject(with: page.bodyJSON) as? [String: Any],
              (body["places"] as? [Any])?.isEmpty == true else { return 0 }
        let places: [PlaceInput]
        do {
            places = try JSONCoding.decoder.decode([PlaceInput].self, from: Data(DemoData.sydneyPlacesJSON.utf8))
        } catch {
            throw Failure(description: "the demo data is not a list of places as catalog.create takes them: \(error)")
        }
        var created = 0
        for place in places {
            _ = try catalog.request(type: CatalogRequests.create, body: try JSONCoding.encoder.encode(place), timeoutMilliseconds: 5_000)
            created += 1
        }
        return created
    }

    /// Where the demo annotations' author's user id is kept, in the data directory.
    static func demoUserFile(_ dataDirectory: String) -> String { dataDirectory + "/demo-user" }

    /// Posts the demo annotations when notify has none live around Sydney, as the demo user
    /// (registered with social on the first run, its id kept in the data directory); how many.
    static func postAnnotationsIfNone(_ notify: RPCClient, social: RPCClient, dataDirectory: String) throws -> Int {
        let sydney = #"{"south":-34.2,"west":150.5,"north":-33.5,"east":151.5,"limit":1}"#
        let live = try notify.request(type: "annotations.viewport", body: Data(sydney.utf8), timeoutMilliseconds: 5_000)
        guard let page = try JSONSerialization.jsonObject(with: live.bodyJSON) as? [String: Any],
              (page["annotations"] as? [Any])?.isEmpty == true else { return 0 }
        let file = demoUserFile(dataDirectory)
        var userId = (try? String(contentsOfFile: file, encoding: .utf8)).flatMap { Int64($0.trimmingCharacters(in: .whitespacesAndNewlines)) }
        if userId == nil {
            // Nobody signs in as it: its password is thrown away.
            let password = "Demo-\(UInt64.random(in: 0...UInt64.max))-Pass-1"
            let body = #"{"username":"sydney_demo","email":"sydney-demo@tourbus.example","name":"Sydney demo","password":"\#(password)"}"#
            let registered = try social.request(type: AuthRequests.register, body: Data(body.utf8), timeoutMilliseconds: 30_000)
            let user = try JSONCoding.decoder.decode(PublicUser.self, from: registered.bodyJSON)
            try String(user.id).write(toFile: file, atomically: true, encoding: .utf8)
            userId = user.id
        }
        let author = Auth(userId: String(userId ?? 0), role: "user")
        for annotation in DemoData.sydneyAnnotations {
            _ = try notify.request(type: "annotations.submit", body: Data(annotation.utf8), auth: author, timeoutMilliseconds: 5_000)
        }
        return DemoData.sydneyAnnotations.count
    }
}
