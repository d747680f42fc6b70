import Bus
import Contracts
import Foundation
import Sealing

#if canImport(Glibc)
    import Glibc
#endif

/// The `tourbus` command line: `up`, `call`, `admin`, `import`, `keys`, `probe`, `backup`, `restore` and `openrpc`.
public enum TourbusCommand {
    static let usage = """
        usage:
          tourbus up [--data-dir DIR] [--listen HOST:PORT] [--no-demo | --demo-dir DIR | --demo helsinki] [--notify-form FILE] [--strings-dir DIR]
                     [--signing-key FILE] [--no-web | --web-dir DIR]
              start every built service and the gateway, load the Sydney demo (the data files
              of DIR, default deploy/demo, when there) into an empty catalog (and a few
              annotations into notify when none is live), or with --demo helsinki import
              .build/osm/helsinki.osm (deploy/local/helsinki-osm makes it): places, streets
              and addresses, so routes and geo.search work; restart what
              crashes (each restart logged in DIR/restarts.log), stop everything on Ctrl-C;
              notify's first form is FILE (default deploy/notify-form.json, when there);
              the catalog's interface strings are DIR (default i18n, when there); the
              catalog signs packages with FILE, else DIR/catalog.sign.key, made when missing;
              the gateway serves the web app in DIR (default web, when there) at /
          tourbus up --config FILE --only NAME[,NAME…] [--keys DIR] [--data-dir DIR] [--notify-form FILE] [--strings-dir DIR] [--signing-key FILE]
              run this host's share of a suite the file describes, as its supervisor: the
              services named (NAME*N for N replicas, each bound to one of the section's bind
              endpoints with its own DIR/NAME-i.sqlite) and gateways (gateway, gateway-b: the
              section of that name); each reads FILE, its key from DIR/NAME.key with --keys,
              and keeps its data in DIR (--data-dir); no demo data; restarts what crashes
          tourbus call [--gateway HOST:PORT] [--timeout-ms N] METHOD [JSON | key value …]
              call a method through the gateway (default 127.0.0.1:7700, or TOURBUS_GATEWAY);
              the timeout (default 5000) is also sent as the request's deadline; a token from
              auth.login in TOURBUS_TOKEN (never an argument, which `ps` shows) signs it in
          tourbus call --service ENDPOINT [--curve-key FILE --server-key KEY] TYPE [JSON]
              send one request straight to a service's ZeroMQ endpoint; on a secured bus,
              sign with key file FILE (also TOURBUS_CURVE_KEY) and pin the service's public
              key KEY (Z85), which the suite file lists first under its name
          tourbus admin create --username U --email E --name N [--service ENDPOINT | --data-dir DIR]
              create an admin account, the password read from the first line of standard
              input; straight to the social service (the endpoint `tourbus up` wrote in
              DIR/endpoints.json, default ./data), which the gateway never lets clients do
          tourbus import PATH [--format content|osm] [--dry-run] [--service ENDPOINT | --data-dir DIR]
                         [--curve-key FILE --server-key KEY] [--timeout-ms N]
              add what a file holds to the catalog, all of it or nothing: our XML content
              format (Protocols/import.md; PATH a file, or a directory or zip with one .xml
              and the tours' map images) or an OpenStreetMap extract (--format osm); sent to the
              catalog in chunks, read there in the background; prints the report (counts
              created, updated, unchanged, every error with its line), exit 1 if it failed.
              --dry-run reports without writing. The catalog: ENDPOINT, or the one `tourbus
              up` wrote in DIR/endpoints.json (default ./data); N ms to wait (default 600000)
          tourbus keys [--out DIR NAME…]
              print a new CURVE key pair (Z85) for securing links between hosts; with --out,
              write one key file per NAME (DIR/NAME.key, mode 0600, never over an existing
              one) and print the curve.keys section that lists their public keys
          tourbus keys --signing --out DIR NAME
              write a new Ed25519 key pair, which signs the catalog's packages, to
              DIR/NAME.sign.key (mode 0600, never over an existing one; give it to
              tourbus-catalog --signing-key) and print its public key (base64)
          tourbus backup --service ENDPOINT --to DIR [--curve-key FILE --server-key KEY] [--timeout-ms N]
              ask a running service for a consistent copy of its SQLite file, which the
              service writes to DIR/<service>-<UTC time>.sqlite (so DIR must be a folder of
              the service's host too); prints the file, its bytes and the outbox head it holds
          tourbus restore --service NAME --from FILE (--data-dir DIR | --db FILE)
              put a backup back in place of a stopped service's database (DIR/NAME.sqlite),
              refused while anything has it open; its outbox gets a new epoch, so every
              subscriber rebuilds from it
          tourbus openrpc
              print the OpenRPC 1.3 document of every method a client may call through the
              gateway (what rpc.discover answers; Protocols/openrpc.json)
          tourbus probe (--service ENDPOINT | --config FILE --name NAME) [--curve-key FILE]
                        [--server-key KEY] [--timeout-ms N]
              send sys.ping to a service; exit 0 if it answers within N ms (default 2000,
              at most 60000), 1 if not (why on stderr), 2 on bad usage (a malformed
              endpoint too). --config takes the endpoint (the section's connect, else its
              bind with * as 127.0.0.1) and the server key (the first of curve.keys.NAME)
              from the suite file; --service and --server-key override them. On a secured
              bus, sign with FILE (also TOURBUS_CURVE_KEY): any key the suite lists, the
              service's own included
        """

    /// Runs the command line and returns the exit status.
    public static func main(_ arguments: [String]) -> Int32 {
        guard let command = arguments.first else {
            print(usage)
            return 2
        }
        let rest = Array(arguments.dropFirst())
        switch command {
        case "up": return up(rest)
        case "call": return call(rest)
        case "admin": return admin(rest)
        case "keys": return keys(rest)
        case "backup": return backup(rest)
        case "import": return importCommand(rest)
        case "restore": return restore(rest)
        case "probe": return ProbeCommand.run(rest, environment: ProcessInfo.processInfo.environment)
        case "openrpc" where rest.isEmpty:
            FileHandle.standardOutput.write(OpenRPC.indentedDocument + Data("\n".utf8))
            return 0
        case "help", "--help", "-h":
            print(usage)
            return 0
        default:
            printError("unknown command '\(command)'\n\(usage)")
            return 2
        }
    }

    static func printError(_ message: String) {
        FileHandle.standardError.write(Data("tourbus: \(message)\n".utf8))
    }

    // MARK: call

    static func call(_ arguments: [String]) -> Int32 {
        var args = arguments
        var gateway = ProcessInfo.processInfo.environment["TOURBUS_GATEWAY"] ?? "127.0.0.1:7700"
        var service: String?
        var timeout = 5_000
        var curveKeyFile = ProcessInfo.processInfo.environment["TOURBUS_CURVE_KEY"]
        var serverKey: String?
        let token = ProcessInfo.processInfo.environment["TOURBUS_TOKEN"]
        while let first = args.first, first.hasPrefix("--") {
            args.removeFirst()
            guard let value = args.first else {
                printError("\(first) needs a value")
                return 2
            }
            args.removeFirst()
            switch first {
            case "--gateway": gateway = value
            case "--service": service = value
            case "--timeout-ms": timeout = Int(value) ?? timeout
            case "--curve-key": curveKeyFile = value
            case "--server-key": serverKey = value
            default:
                printError("unknown option \(first)\n\(usage)")
                return 2
            }
        }
        guard let method = args.first else {
            printError("call needs a METHOD\n\(usage)")
            return 2
        }
        var params: Data
        switch CommandArguments.params(args.dropFirst().map { Array($0.utf8) }) {
        case .success(let p): params = p
        case .failure(let error):
            printError(error.message)
            return 2
        }
        if let token, service == nil, var object = (try? JSONSerialization.jsonObject(with: params)) as? [String: Any] {
            object["token"] = token
            params = (try? JSONSerialization.data(withJSONObject: object)) ?? params
        }
        if let service {
            let curve: CurveClientKeys?
            switch curveKeys(keyFile: curveKeyFile, serverKey: serverKey) {
            case .success(let keys): curve = keys
            case .failure(let status): return status.code
            }
            return callService(endpoint: service, curve: curve, type: method, body: params, timeout: timeout)
        }
        return callGateway(gateway, method: method, params: params, timeout: timeout)
    }

    static func callService(endpoint: String, curve: CurveClientKeys? = nil, type: String, body: Data, timeout: Int) -> Int32 {
        withService(endpoint: endpoint, curve: curve) { client in
            try client.request(type: type, body: body, timeoutMilliseconds: timeout).bodyJSON
        }
    }

    /// Talks to one service straight over the bus (signing with `curve` on a secured one):
    /// prints the JSON `exchange` returns and exits 0, or prints why it failed and exits 1.
    static func withService(endpoint: String, curve: CurveClientKeys?, _ exchange: (RPCClient) throws -> Data) -> Int32 {
        do {
            var options = RPCClientOptions()
            options.curve = curve
            let client = try RPCClient(context: try ZMQContext(), endpoints: [endpoint], options: options, logger: Logger(component: "tourbus", level: .error))
            defer { client.close() }
            printJSON(try exchange(client))
            return 0
        } catch let error as ServiceError {
            printError(error.description)
            return 1
        } catch {
            printError("\(error)")
            return 1
        }
    }

    static func callGateway(_ gateway: String, method: String, params: Data, timeout: Int) -> Int32 {
        var request = Data(#"{"jsonrpc":"2.0","id":1,"method":"#.utf8)
        request.append((try? JSONCoding.encoder.encode(method)) ?? Data("\"\"".utf8))
        request.append(Data(#","deadline_ms":\#(timeout),"params":"#.utf8))
        request.append(params)
        request.append(Data("}\n".utf8))
        let line: Data
        do {
            line = try LineClient(endpoint: gateway, timeoutMilliseconds: timeout).exchange(request)
        } catch {
            printError("cannot reach the gateway at \(gateway): \(error)")
            return 1
        }
        guard let reply = try? JSONSerialization.jsonObject(with: line) as? [String: Any] else {
            printError("the gateway answered something that is not JSON")
            return 1
        }
        if let error = reply["error"] as? [String: Any] {
            let data = error["data"] as? [String: Any]
            let field = (data?["field"] as? String).map { " (field \($0))" } ?? ""
            printError("\(data?["code"] as? String ?? "error"): \(error["message"] as? String ?? "")\(field)")
            return 1
        }
        if let result = reply["result"], let data = try? JSONSerialization.data(withJSONObject: result, options: [.fragmentsAllowed]) {
            printJSON(data)
        }
        return 0
    }

    static func printJSON(_ data: Data) {
        if let object = try? JSONSerialization.jsonObject(with: data, options: [.fragmentsAllowed]),
            let pretty = try? JSONSerialization.data(withJSONObject: object, options: [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes, .fragmentsAllowed])
        {
            print(String(decoding: pretty, as: UTF8.self))
        } else {
            print(String(decoding: data, as: UTF8.self))
        }
    }

    // MARK: admin

    static func admin(_ arguments: [String]) -> Int32 {
        guard arguments.first == "create" else {
            printError("admin needs a subcommand: create\n\(usage)")
            return 2
        }
        var fields: [String: String] = [:]
        var service: String?
        var dataDirectory = ProcessInfo.processInfo.environment["TOURBUS_DATA_DIR"] ?? "data"
        var args = arguments.dropFirst()
        while let option = args.first {
            args.removeFirst()
            guard let value = args.first else {
                printError("\(option) needs a value")
                return 2
            }
            args.removeFirst()
            switch option {
            case "--username", "--email", "--name": fields[String(option.dropFirst(2))] = value
            case "--service": service = value
            case "--data-dir": dataDirectory = value
            default:
                printError("unknown option \(option)\n\(usage)")
                return 2
            }
        }
        guard fields.count == 3 else {
            printError("admin create needs --username, --email and --name")
            return 2
        }
        // Never on the command line, where other users' `ps` would show it.
        guard let password = readLine(strippingNewline: true), !password.isEmpty else {
            printError("admin create reads the password from the first line of standard input")
            return 2
        }
        fields["password"] = password
        guard let endpoint = service ?? SuiteEndpoints.read(dataDirectory)?["social"]?.rpc else {
            printError("no social service: give --service ENDPOINT, or --data-dir of a running `tourbus up`")
            return 2
        }
        guard let body = try? JSONSerialization.data(withJSONObject: fields) else { return 2 }
        return callService(endpoint: endpoint, type: Methods.Admin.create.name, body: body, timeout: 10_000)
    }

    // MARK: keys

    static func keys(_ arguments: [String]) -> Int32 {
        if arguments.first == "--signing" { return signingKeys(Array(arguments.dropFirst())) }
        guard let first = arguments.first else {
            do {
                let pair = try CurveKeyPair.generate()
                print("public: \(try CurveKeyPair.z85(pair.publicKey))")
                print("secret: \(try CurveKeyPair.z85(pair.secretKey))")
                return 0
            } catch {
                printError("\(error)")
                return 1
            }
        }
        guard first == "--out", arguments.count >= 3 else {
            printError("keys takes no arguments, or --out DIR NAME…\n\(usage)")
            return 2
        }
        let folder = arguments[1]
        let names = Array(arguments.dropFirst(2))
        guard Set(names).count == names.count else {
            printError("keys --out names a key twice: one file per name")
            return 2
        }
        if let bad = names.first(where: { $0.isEmpty || $0.utf8.count > 64 || !$0.allSatisfy { $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "-" || $0 == "_") } }) {
            printError("key name '\(bad.prefix(64))' must be 1 to 64 letters, digits, '-' or '_'")
            return 2
        }
        // Every file free before any is written: a failure halfway would leave keys nobody listed.
        if let taken = names.first(where: { FileManager.default.fileExists(atPath: (folder as NSString).appendingPathComponent("\($0).key")) }) {
            printError("\((folder as NSString).appendingPathComponent("\(taken).key")) exists; keys are never overwritten")
            return 1
        }
        var listed: [String: [String]] = [:]
        do {
            try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
            for name in names {
                let pair = try CurveKeyPair.generate()
                try pair.write(keyFile: (folder as NSString).appendingPathComponent("\(name).key"), name: name)
                listed[name] = [try CurveKeyPair.z85(pair.publicKey)]
            }
        } catch {
            printError("\(error)")
            return 1
        }
        // Z85 has no quote or backslash, so each key goes into the JSON as it is.
        let lines = listed.keys.sorted().map { #"    "\#($0)": ["\#(listed[$0]?.first ?? "")"]"# }
        print("{\"curve\": {\"keys\": {\n" + lines.joined(separator: ",\n") + "\n}}}")
        return 0
    }
}

extension TourbusCommand {
    /// `tourbus keys --signing --out DIR NAME`: a new Ed25519 key pair in DIR/NAME.sign.key
    /// (mode 0600, never over an existing file), its public key printed.
    static func signingKeys(_ arguments: [String]) -> Int32 {
        guard arguments.count == 3, arguments[0] == "--out" else {
            printError("keys --signing takes --out DIR NAME\n\(usage)")
            return 2
        }
        let folder = arguments[1]
        let name = arguments[2]
        guard !name.isEmpty, name.utf8.count <= 64, name.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "-" || $0 == "_") }) else {
            printError("key name '\(name.prefix(64))' must be 1 to 64 letters, digits, '-' or '_'")
            return 2
        }
        let path = (folder as NSString).appendingPathComponent("\(name).sign.key")
        do {
            try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
            let key = try SigningKey.generate()
            try key.write(keyFile: path, name: name)
            print("\(path)\npublic: \(key.publicKeyBase64)")
            return 0
        } catch let error as SigningKeyError where FileManager.default.fileExists(atPath: path) && error.message.contains("File exists") {
            printError("\(path) exists; keys are never overwritten")
            return 1
        } catch {
            printError("\(error)")
            return 1
        }
    }
}

/// One TCP exchange with the gateway: send a line, read one line back.
struct LineClient {
    let endpoint: String
    let timeoutMilliseconds: Int

    struct Failure: Error, CustomStringConvertible {
        let description: String
    }

    func exchange(_ line: Data) throws -> Data {
        guard let colon = endpoint.lastIndex(of: ":"), let port = UInt16(endpoint[endpoint.index(after: colon)...]) else {
            throw Failure(description: "not HOST:PORT")
        }
        let host = String(endpoint[..<colon])
        var hints = addrinfo()
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        var info: UnsafeMutablePointer<addrinfo>?
        guard getaddrinfo(host, String(port), &hints, &info) == 0, let first = info else { throw Failure(description: "unknown host \(host)") }
        defer { freeaddrinfo(info) }
        let fd = socket(first.pointee.ai_family, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw Failure(description: String(cString: strerror(errno))) }
        defer { close(fd) }
        var timeout = timeval(tv_sec: timeoutMilliseconds / 1000, tv_usec: Int((timeoutMilliseconds % 1000) * 1000))
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        guard connect(fd, first.pointee.ai_addr, first.pointee.ai_addrlen) == 0 else {
            throw Failure(description: String(cString: strerror(errno)))
        }
        let sent = line.withUnsafeBytes { send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
        guard sent == line.count else { throw Failure(description: "send failed") }
        var received = Data()
        var buffer = [UInt8](repeating: 0, count: 65_536)
        while !received.contains(0x0A) {
            let n = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            if n < 0 && errno == EINTR { continue }
            guard n > 0 else { throw Failure(description: n == 0 ? "connection closed" : "no answer within \(timeoutMilliseconds) ms") }
            received.append(contentsOf: buffer[0..<n])
        }
        return received.prefix { $0 != 0x0A }
    }
}

/// Where `tourbus up` put each service, written to `DIR/endpoints.json` for other commands.
enum SuiteEndpoints {
    struct Service: Codable, Equatable {
        var rpc: String
        var publish: String?
    }

    static func path(_ dataDirectory: String) -> String { dataDirectory + "/endpoints.json" }

    static func write(_ services: [String: Service], to dataDirectory: String) throws {
        let data = try JSONCoding.encoder.encode(services)
        try data.write(to: URL(fileURLWithPath: path(dataDirectory)), options: .atomic)
    }

    static func read(_ dataDirectory: String) -> [String: Service]? {
        guard let data = FileManager.default.contents(atPath: path(dataDirectory)) else { return nil }
        return try? JSONCoding.decoder.decode([String: Service].self, from: data)
    }
}
