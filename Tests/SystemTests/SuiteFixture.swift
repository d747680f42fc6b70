import Bus
import Foundation
import Testing
import TestSupport
#if canImport(Glibc)
import Glibc
#endif

/// A catalog, the social service (with an admin) and a gateway, the real executables, on
/// loopback ports of their own choosing; a search service too when asked.
///
/// No process of the suite may crash, restart or end during a test unless the test says so:
/// each child is a `ChildProcess`, and when the fixture goes away at the end of the test,
/// every child must still be the process it started, unless the test stopped it on purpose
/// (`stopCatalog()`, `stopSearch()`, `stopSocial()`, or a child's own `terminate()`,
/// `stop(with:)` or `expectExit(because:)`). A child that died fails the test, naming it and
/// how it ended; so does one that does not stop cleanly on SIGTERM at teardown.
final class SuiteFixture {
    private let scratch = TemporaryFolder("suite")
    let folder: String
    private(set) var catalog: ChildProcess
    private(set) var search: ChildProcess?
    let social: ChildProcess
    /// With `everything`: the favorites and notify services.
    private(set) var favorites: ChildProcess?
    private(set) var notify: ChildProcess?
    let gateway: ChildProcess
    let catalogEndpoint: String
    /// The catalog's event endpoint, which a catalog started again binds too (its subscribers stay connected to it).
    let catalogEventsEndpoint: String
    /// The gateway's arguments that name the services (and its own extra arguments), so a test can start a second one like it.
    let gatewayArguments: [String]
    /// The admin every suite has, as the docs' transcripts sign in.
    static let admin = (username: "admin", password: "Admin-Pass-1")
    /// With `secured`: every process's CURVE key pair by name, and `operator`'s, the test's own.
    let keys: [String: CurveKeyPair]

    /// A process's own arguments when the suite is secured: the suite file and its key file.
    private static func ownArguments(_ name: String, folder: String, secured: Bool) -> [String] {
        secured ? ["--config", "\(folder)/suite.json", "--curve-key", "\(folder)/\(name).key"] : []
    }
    private func own(_ name: String) -> [String] { SuiteFixture.ownArguments(name, folder: folder, secured: !keys.isEmpty) }

    /// The CURVE keys of a client of `service` signing as `operator`, when the suite is secured.
    func operatorKeys(for service: String) -> CurveClientKeys? {
        guard let own = keys["operator"], let server = keys[service] else { return nil }
        return CurveClientKeys(own, serverKey: server.publicKey)
    }

    var port: UInt16 {
        let listen = gateway.endpoints["listen"] as? String ?? ""
        return UInt16(listen.split(separator: ":").last ?? "") ?? 0
    }

    /// The publishers' request and event endpoints, as a subscriber's arguments.
    private static func publishers(_ publishers: ChildProcess?...) -> [String] {
        publishers.compactMap { $0 }.flatMap { process in
            let name = process.name.replacingOccurrences(of: "tourbus-", with: "")
            return ["--peer", "\(name)=\(process.rpc)", "--peer-pub", "\(name)=\((process.endpoints["publish"] as? [String])?.first ?? "")"]
        }
    }

    /// The shipped annotation form, `deploy/notify-form.json`.
    static let notifyFormPath = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("deploy/notify-form.json").path

    /// The current process of each service, the gateway first (the order teardown stops them in).
    var processes: [ChildProcess] { [gateway, search, favorites, notify, social, catalog].compactMap { $0 } }

    /// Starts the suite; a child's failure at teardown points at `sourceLocation`, the test's line that made it.
    /// `everything` starts search, favorites and notify too, each following the publishers it
    /// follows in `tourbus up`.
    /// `secured` gives every process a CURVE key, lists them (and an `operator` key for the
    /// test) in a suite file's `curve.keys`, and so secures every bus link.
    init(gatewayArguments: [String] = [], socialArguments: [String] = [], catalogArguments: [String] = [], withSearch: Bool = false, everything: Bool = false,
         secured: Bool = false, passwordCost: String = "minimum", sourceLocation: SourceLocation = #_sourceLocation) throws {
        folder = scratch.path
        var keys: [String: CurveKeyPair] = [:]
        if secured {
            for name in ["catalog", "social", "search", "favorites", "notify", "gateway", "operator"] {
                let pair = try CurveKeyPair.generate()
                try pair.write(keyFile: "\(scratch.path)/\(name).key", name: name)
                keys[name] = pair
            }
            let listed = try keys.mapValues { [try CurveKeyPair.z85($0.publicKey)] }
            try JSONSerialization.data(withJSONObject: ["curve": ["keys": listed]]).write(to: URL(fileURLWithPath: "\(scratch.path)/suite.json"))
        }
        self.keys = keys
        let path = scratch.path
        func keyed(_ name: String) -> [String] { SuiteFixture.ownArguments(name, folder: path, secured: secured) }
        catalog = try ChildProcess("tourbus-catalog", folder: folder, arguments: keyed("catalog") + catalogArguments, sourceLocation: sourceLocation)
        catalogEndpoint = catalog.rpc
        // Passwords hashed at the cheapest cost unless asked: tests sign in often.
        let catalogEvents = (catalog.endpoints["publish"] as? [String])?.first ?? ""
        catalogEventsEndpoint = catalogEvents
        // Social follows favorites (its visits) and favorites follows social: so favorites'
        // endpoints are chosen first, as `tourbus up` does, and social is told them before
        // favorites is up (its subscriber retries until favorites answers).
        let favoritesEndpoints = (rpc: "tcp://127.0.0.1:\(try HTTPProbe.freePort())", publish: "tcp://127.0.0.1:\(try HTTPProbe.freePort())")
        let followsFavorites = everything ? ["--peer", "favorites=\(favoritesEndpoints.rpc)", "--peer-pub", "favorites=\(favoritesEndpoints.publish)"] : []
        social = try ChildProcess("tourbus-social", folder: folder,
                                    arguments: keyed("social") + ["--peer", "catalog=\(catalogEndpoint)", "--peer-pub", "catalog=\(catalogEvents)"]
                                        + followsFavorites + socialArguments,
                                    environment: ["TOURBUS_PASSWORD_COST": passwordCost], sourceLocation: sourceLocation)
        var peers = ["--peer", "catalog=\(catalogEndpoint)", "--peer", "social=\(social.rpc)",
                     "--peer-pub", "social=\((social.endpoints["publish"] as? [String])?.first ?? "")"]
        search = nil
        var favorites: ChildProcess?
        // Search follows favorites (its counts) and favorites follows search (its searches): so
        // search's endpoints are chosen first, as `tourbus up` does, and favorites is told them
        // before search is up (its subscriber retries until search answers).
        let searchEndpoints = (rpc: "tcp://127.0.0.1:\(try HTTPProbe.freePort())", publish: "tcp://127.0.0.1:\(try HTTPProbe.freePort())")
        if everything {
            let started = try ChildProcess("tourbus-favorites", folder: folder,
                                           arguments: keyed("favorites") + ["--bind", favoritesEndpoints.rpc, "--publish", favoritesEndpoints.publish]
                                               + SuiteFixture.publishers(catalog, social)
                                               + ["--peer", "search=\(searchEndpoints.rpc)", "--peer-pub", "search=\(searchEndpoints.publish)"],
                                           sourceLocation: sourceLocation)
            let notify = try ChildProcess("tourbus-notify", folder: folder,
                                            arguments: keyed("notify") + SuiteFixture.publishers(social) + ["--form", SuiteFixture.notifyFormPath], sourceLocation: sourceLocation)
            peers += SuiteFixture.publishers(started, notify)
            favorites = started
            self.notify = notify
        }
        if withSearch || everything {
            let search = try ChildProcess("tourbus-search", folder: folder,
                                          arguments: keyed("search") + ["--bind", searchEndpoints.rpc, "--publish", searchEndpoints.publish]
                                              + SuiteFixture.publishers(catalog, social, favorites),
                                          sourceLocation: sourceLocation)
            peers += ["--peer", "search=\(search.rpc)"]
            self.search = search
        }
        self.favorites = favorites
        self.gatewayArguments = keyed("gateway") + peers + gatewayArguments
        gateway = try ChildProcess("tourbus-gateway", folder: folder, arguments: ["--listen", "127.0.0.1:0"] + self.gatewayArguments,
                                     sourceLocation: sourceLocation)
        let context = try ZMQContext()
        var options = RPCClientOptions()
        options.curve = keys["operator"].map { CurveClientKeys($0, serverKey: keys["social"]?.publicKey ?? []) }
        let client = try RPCClient(context: context, endpoints: [social.rpc], options: options, logger: Logger(component: "test", level: .error))
        defer { client.close() }
        _ = try client.request(type: "admin.create", body: Data(#"{"username":"\#(SuiteFixture.admin.username)","email":"admin@example.org","name":"Admin","password":"\#(SuiteFixture.admin.password)"}"#.utf8),
                               timeoutMilliseconds: 5_000)
        // Wait (bounded) until the gateway has seen every service up, so `help` names none unavailable.
        for _ in 0..<100 {
            let status = try? GatewayConnection(port: port).call(#"{"jsonrpc":"2.0","id":0,"method":"help"}"#)
            if let status, status.contains("catalog.get"), status.contains("reviews.list"), status.contains(#""unavailable":[]"#),
               !everything || (status.contains("favorites.list") && status.contains("annotations.form")) { break }
            usleep(50_000)
        }
    }

    /// Stops the catalog process on purpose (SIGTERM); `startCatalog()` starts a new one in its place.
    func stopCatalog(sourceLocation: SourceLocation = #_sourceLocation) { _ = catalog.terminate(sourceLocation: sourceLocation) }

    /// Stops the search process on purpose (SIGTERM); `startSearch()` starts a new one in its place.
    func stopSearch(sourceLocation: SourceLocation = #_sourceLocation) { _ = search?.terminate(sourceLocation: sourceLocation) }

    /// Stops the social service on purpose (SIGTERM) for the rest of the test.
    func stopSocial(sourceLocation: SourceLocation = #_sourceLocation) { _ = social.terminate(sourceLocation: sourceLocation) }

    /// Starts a new search process, bound to the old one's request and event endpoints, on the same index
    /// file. The old process must have ended (`stopSearch()`); the fixture then watches the new one.
    func startSearch(sourceLocation: SourceLocation = #_sourceLocation) throws {
        guard let old = search else { return }
        let publish = (old.endpoints["publish"] as? [String])?.first.map { ["--publish", $0] } ?? []
        search = try ChildProcess("tourbus-search", folder: folder, arguments: own("search") + ["--bind", old.rpc] + publish + SuiteFixture.publishers(catalog, social, favorites),
                                    sourceLocation: sourceLocation)
    }

    /// Starts a new catalog process, bound to the old one's request and event endpoints, on the
    /// same data. The old process must have ended (`stopCatalog()`); the fixture then watches the new one.
    /// `followingSocial`: the new one follows social's events (`--peer`/`--peer-pub social=…`),
    /// which the first cannot, being started before social.
    /// `extraArguments` go to the new catalog as they are (`--signing-key FILE`).
    func startCatalog(followingSocial: Bool = false, extraArguments: [String] = [], sourceLocation: SourceLocation = #_sourceLocation) throws {
        let following = followingSocial ? SuiteFixture.publishers(social) : []
        catalog = try ChildProcess("tourbus-catalog", folder: folder,
                                   arguments: own("catalog") + ["--bind", catalogEndpoint, "--publish", catalogEventsEndpoint] + following + extraArguments,
                                   sourceLocation: sourceLocation)
    }

    /// Creates `count` parks with a 4,900-byte description each, as the admin: pages of
    /// `catalog.list limit 100` of about 250 KB, for tests of clients that do not read.
    func createHeavyPlaces(_ count: Int) throws {
        let writer = try adminConnection()
        let description = String(repeating: "d", count: 4_900)
        for i in 0..<count {
            _ = writer.call(#"{"jsonrpc":"2.0","id":\#(i),"method":"catalog.create","params":{"name":"P\#(i)","category":"park","lat":-33.9,"lon":151.2,"description":"\#(description)"}}"#)
        }
    }

    /// A connection signed in as the admin (catalog writes need one).
    func adminConnection(timeoutMilliseconds: Int = 5_000) throws -> GatewayConnection {
        let c = try GatewayConnection(port: port, timeoutMilliseconds: timeoutMilliseconds)
        let reply = c.call(#"{"jsonrpc":"2.0","id":0,"method":"auth.login","params":{"username":"\#(SuiteFixture.admin.username)","password":"\#(SuiteFixture.admin.password)"}}"#) ?? ""
        guard reply.contains("\"token\"") else { throw ServiceError(.unauthenticated, "the admin could not sign in: \(reply)") }
        return c
    }

    /// Teardown: first every child must still be the process it started (or have been
    /// stopped on purpose), then each stops on SIGTERM, the gateway first, with status 0.
    deinit {
        let children = processes
        children.forEach { $0.checkAtTeardown() }
        children.forEach { $0.stopAtTeardown() }
    }
}

/// A plain TCP connection to the gateway, from 127.0.0.1 or another loopback source address
/// (127.0.0.2, …), so one test can be several clients as the gateway counts them. Every read
/// and write is bounded in time: a call gives up after the connection's timeout (nil, false,
/// or fewer bytes sent).
final class GatewayConnection {
    let fd: Int32
    private var buffer: [UInt8] = []
    /// How long one call (a send, a line, a reply, waiting for the close) may take.
    let timeout: TimeInterval

    /// `receiveBuffer`: the socket's receive buffer, set before connecting (a client that reads
    /// little takes little into its kernel).
    init(port: UInt16, from source: String? = nil, timeoutMilliseconds: Int = 5_000, receiveBuffer: Int32? = nil) throws {
        timeout = Double(timeoutMilliseconds) / 1000
        do {
            fd = try LoopbackSocket.connect(port: port, from: source, timeoutMilliseconds: timeoutMilliseconds, receiveBuffer: receiveBuffer)
        } catch {
            throw ServiceError(.unavailable, "cannot connect from \(source ?? "127.0.0.1") to 127.0.0.1:\(port): \(error)")
        }
    }

    /// The end of a call that starts now.
    private var deadline: Date { Date().addingTimeInterval(timeout) }

    deinit { close(fd) }

    func send(_ text: String) { send(Array(text.utf8)) }

    func send(_ bytes: [UInt8]) {
        var offset = 0
        let limit = deadline
        while offset < bytes.count && Date() < limit {
            let n = bytes.withUnsafeBufferPointer { Glibc.send(fd, $0.baseAddress! + offset, bytes.count - offset, Int32(MSG_NOSIGNAL)) }
            if n <= 0 { return }
            offset += n
        }
    }

    /// Reads more input; false at end of stream, or when `limit` has passed or the socket's timeout did.
    private func fill(until limit: Date) -> Bool {
        guard Date() < limit else { return false }
        var chunk = [UInt8](repeating: 0, count: 65_536)
        let n = chunk.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
        guard n > 0 else { return false }
        buffer += chunk[0..<n]
        return true
    }

    /// The next line without its CR LF, or nil when the connection ended or timed out.
    func line() -> String? {
        let limit = deadline
        while true {
            if let newline = buffer.firstIndex(of: 0x0A) {
                var line = Array(buffer[..<newline])
                buffer.removeFirst(newline + 1)
                if line.last == 0x0D { line.removeLast() }
                return String(decoding: line, as: UTF8.self)
            }
            guard fill(until: limit) else { return nil }
        }
    }

    /// One RESP reply: a simple string, error or integer line, or a bulk string's content (prefixed "$").
    func respReply() -> String? {
        guard let head = line() else { return nil }
        guard head.hasPrefix("$"), let size = Int(head.dropFirst()), size >= 0 else { return head }
        let limit = deadline
        while buffer.count < size + 2 { guard fill(until: limit) else { return nil } }
        let body = String(decoding: buffer[0..<size], as: UTF8.self)
        buffer.removeFirst(size + 2)
        return "$" + body
    }

    /// One RESP bulk string's bytes, as they came (a map tile); nil for any other reply.
    func respBytes() -> [UInt8]? {
        guard let head = line(), head.hasPrefix("$"), let size = Int(head.dropFirst()), size >= 0 else { return nil }
        let limit = deadline
        while buffer.count < size + 2 { guard fill(until: limit) else { return nil } }
        let body = Array(buffer[0..<size])
        buffer.removeFirst(size + 2)
        return body
    }

    /// An HTTP response: its status, headers (names lowercased, the last of each) and body.
    struct HTTPResponse {
        var statusLine: String
        var status: Int
        /// The header lines as sent, in order.
        var headerLines: [String]
        var headers: [String: String]
        var body: [UInt8]
        var text: String { String(decoding: body, as: UTF8.self) }
    }

    /// The next HTTP response (its body framed by `Content-Length`; none for 1xx, 204 and 304,
    /// or for `head`, the answer to HEAD), or nil when it did not come whole.
    func httpResponse(head: Bool = false) -> HTTPResponse? {
        guard let statusLine = line(), statusLine.hasPrefix("HTTP/1.1 "), let status = Int(statusLine.split(separator: " ")[1]) else { return nil }
        var headers: [String: String] = [:]
        var headerLines: [String] = []
        while let header = line(), !header.isEmpty {
            guard let colon = header.firstIndex(of: ":") else { return nil }
            headers[header[..<colon].lowercased()] = header[header.index(after: colon)...].trimmingCharacters(in: .whitespaces)
            headerLines.append(header)
        }
        let size = head || status < 200 || status == 204 || status == 304 ? 0 : Int(headers["content-length"] ?? "") ?? -1
        guard size >= 0 else { return nil }
        let limit = deadline
        while buffer.count < size { guard fill(until: limit) else { return nil } }
        let body = Array(buffer[0..<size])
        buffer.removeFirst(size)
        return HTTPResponse(statusLine: statusLine, status: status, headerLines: headerLines, headers: headers, body: body)
    }

    /// A `POST /rpc` request with `body`, and `headers` (whole lines) after the content type.
    static func post(_ body: String, headers: [String] = []) -> String {
        let extra = headers.map { $0 + "\r\n" }.joined()
        return "POST /rpc HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n\(extra)Content-Length: \(body.utf8.count)\r\n\r\n\(body)"
    }

    /// Whether the gateway closed the connection (reads end of stream within the timeout).
    func isClosedByPeer() -> Bool {
        let limit = deadline
        while fill(until: limit) {}
        var probe = [UInt8](repeating: 0, count: 1)
        return probe.withUnsafeMutableBytes { recv(fd, $0.baseAddress, 1, Int32(MSG_DONTWAIT)) } == 0
    }

    /// Sends a JSON-RPC line and returns the answer line.
    func call(_ json: String) -> String? {
        send(json + "\n")
        return line()
    }

    /// Sends a JSON-RPC line and reads the answer into types.
    func reply(_ json: String) -> RPCReply { RPCReply(call(json)) }

    /// Calls `method` with `params` (JSON text) as request `id`.
    func rpc(_ method: String, _ params: String = "{}", id: Int = 1) -> RPCReply {
        reply(#"{"jsonrpc":"2.0","id":\#(id),"method":"\#(method)","params":\#(params)}"#)
    }

    /// A RESP array command.
    static func resp(_ words: [String]) -> [UInt8] {
        var out = Array("*\(words.count)\r\n".utf8)
        for word in words { out += Array("$\(word.utf8.count)\r\n\(word)\r\n".utf8) }
        return out
    }
}

/// Parses a JSON text for assertions.
func json(_ text: String?) -> [String: Any] {
    guard let text, let object = try? JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any] else { return [:] }
    return object
}

func errorCode(_ text: String?) -> Int? { (json(text)["error"] as? [String: Any])?["code"] as? Int }
