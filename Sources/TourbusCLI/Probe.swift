import Bus
import Contracts
import Foundation
import ServiceCore

/// `tourbus probe`: is a service up? Sends `sys.ping` and reports the answer as an exit status
/// (0 answered, 1 not, 2 bad usage), for supervisors, Kubernetes probes and people.
///
/// The endpoint and the server key come from flags, or from the suite file (`--config FILE
/// --name NAME`), flags winning; on a secured bus the probe signs with a key file the service
/// admits (any key the suite lists: inside a service's own container, its own key will do).
enum ProbeCommand {
    /// The longest `--timeout-ms` accepted: a probe is short.
    static let maxTimeoutMilliseconds = 60_000

    /// What to probe and how, read from the arguments and the environment.
    struct Target: Equatable {
        var endpoint: String
        var curveKeyFile: String?
        var serverKey: String?
        var timeoutMilliseconds: Int
    }

    /// A usage mistake: one line on stderr, exit status 2.
    struct UsageError: Error {
        let message: String
    }

    /// Runs `tourbus probe` with `arguments` (after the command's name) and returns its exit status.
    static func run(_ arguments: [String], environment: [String: String]) -> Int32 {
        let target: Target
        let curve: CurveClientKeys?
        do {
            target = try parse(arguments, environment: environment)
            curve = try keys(of: target)
        } catch {
            TourbusCommand.printError("probe: \(error.message)")
            return 2
        }
        let started = monotonicNanos()
        let client: RPCClient
        do {
            var options = RPCClientOptions()
            options.curve = curve
            client = try RPCClient(
                context: try ZMQContext(), endpoints: [target.endpoint], options: options,
                logger: Logger(component: "tourbus", level: .error))
        } catch {
            // libzmq refuses an endpoint it cannot parse at once (a host name is resolved later).
            TourbusCommand.printError("probe: cannot connect to '\(shown(target.endpoint))': \(error)")
            return 2
        }
        defer { client.close() }
        do {
            _ = try client.request(type: Methods.System.ping.name, body: Data("{}".utf8), timeoutMilliseconds: target.timeoutMilliseconds)
        } catch {
            TourbusCommand.printError("probe: \(target.endpoint) did not answer sys.ping: \(error.description)")
            return 1
        }
        print("\(target.endpoint) answered sys.ping in \((monotonicNanos() - started) / 1_000_000) ms")
        return 0
    }

    /// The target the flags describe: `--service` and `--server-key` win over what the suite
    /// file (`--config` with `--name`) says; the key file is `--curve-key`, else, when there is a
    /// server key, `TOURBUS_CURVE_KEY`.
    static func parse(_ arguments: [String], environment: [String: String]) throws(UsageError) -> Target {
        var values: [String: String] = [:]
        var rest = arguments[...]
        while let flag = rest.popFirst() {
            guard ["--service", "--config", "--name", "--curve-key", "--server-key", "--timeout-ms"].contains(flag) else {
                throw UsageError(message: "unknown option '\(shown(flag))'")
            }
            guard let value = rest.popFirst() else { throw UsageError(message: "\(flag) needs a value") }
            values[String(flag.dropFirst(2))] = value
        }
        var timeout = 2_000
        if let text = values["timeout-ms"] {
            guard let n = Int(text), (1...maxTimeoutMilliseconds).contains(n) else {
                throw UsageError(message: "--timeout-ms takes an integer from 1 to \(maxTimeoutMilliseconds), got '\(shown(text))'")
            }
            timeout = n
        }
        var endpoint = values["service"]
        var serverKey = values["server-key"]
        switch (values["config"], values["name"]) {
        case (let file?, let name?):
            let member: SuiteEntry
            do { member = try SuiteEntry(name: name, configFile: file) } catch { throw UsageError(message: error.message) }
            if endpoint == nil {
                guard let first = member.endpoints.first else {
                    throw UsageError(message: "config file \(file): services.\(name) has no connect or bind endpoint")
                }
                endpoint = first
            }
            serverKey = serverKey ?? member.serverKey
        case (nil, nil): break
        case (_?, nil): throw UsageError(message: "--config needs --name NAME: the service's section")
        case (nil, _?): throw UsageError(message: "--name needs --config FILE: the suite file that describes it")
        }
        guard let endpoint else { throw UsageError(message: "say what to probe: --service ENDPOINT, or --config FILE --name NAME") }
        // TOURBUS_CURVE_KEY signs only where there is a server key to pin (as `call` and `backup`
        // read it): a plain service is probed plainly, whatever the environment holds.
        return Target(
            endpoint: endpoint, curveKeyFile: values["curve-key"] ?? (serverKey == nil ? nil : environment["TOURBUS_CURVE_KEY"]),
            serverKey: serverKey, timeoutMilliseconds: timeout)
    }

    /// `text` cut to its first 64 UTF-8 bytes, as an error message quotes what it was given.
    static func shown(_ text: String) -> String {
        text.utf8.count <= 64 ? text : String(decoding: text.utf8.prefix(64), as: UTF8.self) + "…"
    }

    /// The CURVE keys to connect with: both a server key and a key file, or neither (plain TCP).
    static func keys(of target: Target) throws(UsageError) -> CurveClientKeys? {
        switch (target.serverKey, target.curveKeyFile) {
        case (nil, nil):
            return nil
        case (_?, nil):
            throw UsageError(message: "the service has a CURVE key, so the probe needs a key file it admits: --curve-key FILE or TOURBUS_CURVE_KEY")
        case (nil, _?):
            throw UsageError(message: "a key file needs the service's public key: --server-key KEY, or --config FILE --name NAME on a secured suite")
        case (let text?, let file?):
            guard let key = try? CurveKeyPair.key(z85: text) else {
                throw UsageError(message: "server key '\(shown(text))' is not a 40-character Z85 public key")
            }
            do { return CurveClientKeys(try CurveKeyPair(keyFile: file), serverKey: key) } catch { throw UsageError(message: error.message) }
        }
    }
}
