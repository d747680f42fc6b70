import Bus
import Contracts
import Foundation
import Storage

/// `tourbus backup` and `tourbus restore`: a running service copies its own SQLite file
/// (`sys.backup`), and a stopped one gets a copy back (`DatabaseBackup.restore`).
extension TourbusCommand {
    /// Reads `--flag value` pairs into a dictionary; nil (after printing why) for an unknown
    /// flag, a missing value or a repeated flag.
    static func options(_ arguments: [String], allowed: Set<String>) -> [String: String]? {
        var found: [String: String] = [:]
        var args = arguments[...]
        while let flag = args.first {
            args.removeFirst()
            guard allowed.contains(flag) else {
                printError("unknown option \(flag)\n\(usage)")
                return nil
            }
            guard let value = args.first else {
                printError("\(flag) needs a value")
                return nil
            }
            args.removeFirst()
            guard found[flag] == nil else {
                printError("\(flag) is given twice")
                return nil
            }
            found[flag] = value
        }
        return found
    }

    /// The CURVE keys of a client signing with `keyFile` and pinning `serverKey`; nil without
    /// `serverKey` (a plain bus). When they are not usable, prints why and fails with the exit status.
    static func curveKeys(keyFile: String?, serverKey: String?) -> Result<CurveClientKeys?, ExitStatus> {
        guard let serverKey else { return .success(nil) }
        guard let keyFile else {
            printError("--server-key needs --curve-key FILE (or TOURBUS_CURVE_KEY): the key this call signs with")
            return .failure(ExitStatus(code: 2))
        }
        guard let key = try? CurveKeyPair.key(z85: serverKey) else {
            printError("--server-key takes a 40-character Z85 public key")
            return .failure(ExitStatus(code: 2))
        }
        do {
            return .success(CurveClientKeys(try CurveKeyPair(keyFile: keyFile), serverKey: key))
        } catch {
            printError(error.message)
            return .failure(ExitStatus(code: 2))
        }
    }

    /// `--timeout-ms` of a command that may take long (a backup, an import): 1 to 3,600,000,
    /// default 600,000; nil (after printing why) for anything else.
    static func longTimeout(_ flags: [String: String]) -> Int? {
        guard let text = flags["--timeout-ms"] else { return 600_000 }
        guard let value = Int(text), (1...3_600_000).contains(value) else {
            printError("--timeout-ms takes 1 to 3600000")
            return nil
        }
        return value
    }

    /// An exit status as an error, for a step of a command that has already said why it failed.
    struct ExitStatus: Error { let code: Int32 }

    /// The backup's file name: `<service>-<UTC time, to the second>.sqlite`.
    static func backupName(service: String, at date: Date) -> String {
        let format = DateFormatter()
        format.locale = Locale(identifier: "en_US_POSIX")
        format.timeZone = TimeZone(identifier: "UTC")
        format.dateFormat = "yyyyMMdd'T'HHmmss'Z'"
        return "\(service)-\(format.string(from: date)).sqlite"
    }

    // MARK: backup

    static func backup(_ arguments: [String]) -> Int32 {
        guard let flags = options(arguments, allowed: ["--service", "--to", "--curve-key", "--server-key", "--timeout-ms"]) else { return 2 }
        guard let endpoint = flags["--service"], let to = flags["--to"] else {
            printError("backup needs --service ENDPOINT and --to DIR\n\(usage)")
            return 2
        }
        guard let timeout = longTimeout(flags) else { return 2 }
        // The service writes the file, so it gets an absolute path (from this command's folder).
        let folder = to.hasPrefix("/") ? to : FileManager.default.currentDirectoryPath + "/" + to
        var isFolder: ObjCBool = false
        guard FileManager.default.fileExists(atPath: folder, isDirectory: &isFolder), isFolder.boolValue else {
            printError("--to \(to): no such folder (the service writes the file there: this host's folder must be the service's)")
            return 2
        }
        let curve: CurveClientKeys?
        switch curveKeys(keyFile: flags["--curve-key"] ?? ProcessInfo.processInfo.environment["TOURBUS_CURVE_KEY"], serverKey: flags["--server-key"]) {
        case .success(let keys): curve = keys
        case .failure(let status): return status.code
        }
        return withService(endpoint: endpoint, curve: curve) { client in
            let name = try client.request(type: Methods.System.ping.name, body: Data("{}".utf8), timeoutMilliseconds: 5_000).body(PingReply.self).service
            let path = (folder as NSString).standardizingPath + "/" + backupName(service: name, at: Date())
            let body = try JSONCoding.encoder.encode(BackupRequest(to: path))
            return try client.request(type: Methods.System.backup.name, body: body, timeoutMilliseconds: timeout).bodyJSON
        }
    }

    // MARK: restore

    /// What `tourbus restore` prints.
    struct RestoreReport: Encodable {
        var service: String
        var file: String
        var from: String
        var bytes: Int64
        var epoch: String?
        var previousEpoch: String?
        var head: Int64?

        enum CodingKeys: String, CodingKey {
            case service, file, from, bytes, epoch, head
            case previousEpoch = "previous_epoch"
        }
    }

    static func restore(_ arguments: [String]) -> Int32 {
        guard let flags = options(arguments, allowed: ["--service", "--from", "--data-dir", "--db"]) else { return 2 }
        guard let name = flags["--service"], let from = flags["--from"] else {
            printError("restore needs --service NAME and --from FILE\n\(usage)")
            return 2
        }
        guard !name.isEmpty, name.utf8.count <= 64, name.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "-" || $0 == "_") }) else {
            printError("--service takes a service name: 1 to 64 letters, digits, '-' or '_'")
            return 2
        }
        let target: String
        switch (flags["--data-dir"], flags["--db"]) {
        case (let folder?, nil):
            target = (folder as NSString).appendingPathComponent("\(name).sqlite")
            // A replicated service's replicas keep NAME-N.raft there, and no NAME.sqlite.
            let replicas = ((try? FileManager.default.contentsOfDirectory(atPath: folder)) ?? []).filter {
                $0.hasPrefix("\(name)-") && $0.hasSuffix(".raft") && Int($0.dropFirst(name.count + 1).dropLast(5)) != nil
            }
            if !replicas.isEmpty {
                printError(
                    "restore refused: \(folder) holds replicas of a replicated \(name) (\(replicas.sorted().joined(separator: ", "))), "
                        + "which rebuild from their Raft logs; a replicated service is not restored from a backup yet")
                return 1
            }
        case (nil, let file?): target = file
        default:
            printError("restore needs exactly one of --data-dir DIR and --db FILE: where the service keeps its database")
            return 2
        }
        do {
            let restored = try DatabaseBackup.restore(from: from, onto: target)
            let report = RestoreReport(
                service: name, file: target, from: from, bytes: restored.bytes, epoch: restored.epoch,
                previousEpoch: restored.previousEpoch, head: restored.head)
            printJSON(try JSONCoding.encoder.encode(report))
            return 0
        } catch let error as BackupError {
            printError("restore refused: \(error)")
            return 1
        } catch {
            printError("restore failed: \(error)")
            return 1
        }
    }
}
