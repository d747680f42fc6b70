import Bus
import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// How a child process ended: its exit status, or the signal that killed it.
enum ChildExit: Equatable, Sendable {
    case status(Int32)
    case signal(Int32)

    /// How `process`, which has ended, ended.
    init(_ process: Process) {
        self = process.terminationReason == .uncaughtSignal ? .signal(process.terminationStatus) : .status(process.terminationStatus)
    }

    /// The log field that says it: `status=1` or `signal=SIGKILL`.
    var field: (key: String, value: Any) {
        switch self {
        case .status(let code): (key: "status", value: code)
        case .signal(let number): (key: "signal", value: ChildExit.signalName(number))
        }
    }

    /// `SIGSEGV` for 11: the usual name of a Linux signal, `SIG<n>` for others.
    static func signalName(_ number: Int32) -> String {
        let names: [Int32: String] = [
            SIGHUP: "SIGHUP", SIGINT: "SIGINT", SIGQUIT: "SIGQUIT", SIGILL: "SIGILL", SIGTRAP: "SIGTRAP",
            SIGABRT: "SIGABRT", SIGBUS: "SIGBUS", SIGFPE: "SIGFPE", SIGKILL: "SIGKILL", SIGUSR1: "SIGUSR1",
            SIGSEGV: "SIGSEGV", SIGUSR2: "SIGUSR2", SIGPIPE: "SIGPIPE", SIGALRM: "SIGALRM", SIGTERM: "SIGTERM",
        ]
        return names[number] ?? "SIG\(number)"
    }
}

/// What the supervisor saw or did for one member in one round.
enum SupervisionEvent: Equatable, Sendable {
    /// The member's process ended; it starts again after `delay` seconds.
    case exited(pid: Int32, exit: ChildExit, delay: TimeInterval)
    /// A new process replaced the one that ended.
    case restarted(oldPid: Int32, exit: ChildExit, newPid: Int32, restarts: Int)
    /// Starting a new process failed; the supervisor tries again after the next backoff.
    case restartFailed(oldPid: Int32, exit: ChildExit, error: String)
}

/// One supervised child process of the suite: how to start it and its current process.
final class SuiteMember {
    let name: String
    let executable: URL
    let arguments: [String]
    private(set) var process: Process?
    private(set) var restarts = 0
    private var nextStart: Date = .distantPast
    private var startedAt: Date = .distantPast

    /// Where the member says it is ready (its `--ready-file`).
    let readyFile: String

    /// Member `name`, running `tourbus-<executable>` (its name by default) from `folder` with
    /// `arguments` and a ready file in the data directory.
    init(name: String, executable: String? = nil, folder: URL, dataDirectory: String, arguments: [String]) {
        self.name = name
        self.executable = folder.appendingPathComponent("tourbus-\(executable ?? name)")
        readyFile = (dataDirectory as NSString).appendingPathComponent("\(name).ready.json")
        self.arguments = arguments + ["--ready-file", readyFile]
    }

    func start() throws {
        let process = Process()
        process.executableURL = executable
        process.arguments = arguments
        // One port and one key per process: a suite-wide TOURBUS_METRICS_LISTEN would have every
        // member bind the same port, a TOURBUS_CURVE_KEY would give them all one key.
        var environment = ProcessInfo.processInfo.environment
        environment["TOURBUS_METRICS_LISTEN"] = nil
        environment["TOURBUS_CURVE_KEY"] = nil
        // Swift's crash handler starts a helper (swift-backtrace) that inherits the descriptor
        // Foundation watches for the child's end, and can outlive the child: a crashed member
        // then never looked dead, and was never restarted (a libzmq assertion under a big
        // import showed it). Without it a crash still ends the child at once, with its signal
        // in restarts.log; an operator who sets SWIFT_BACKTRACE keeps theirs.
        if environment["SWIFT_BACKTRACE"] == nil { environment["SWIFT_BACKTRACE"] = "enable=no" }
        process.environment = environment
        process.standardOutput = FileHandle.nullDevice
        try process.run()
        self.process = process
        startedAt = Date()
    }

    /// Restarts the member if it died, with exponential backoff (0.5 s doubling to 30 s,
    /// back to 0.5 s after a minute of good health). Returns what happened, if anything.
    func superviseOnce() -> SupervisionEvent? {
        guard let process, !process.isRunning else { return nil }
        let now = Date()
        let oldPid = process.processIdentifier
        let exit = ChildExit(process)
        if nextStart == .distantPast {
            let healthy = now.timeIntervalSince(startedAt) > 60
            if healthy { restarts = 0 }
            let delay = min(30, 0.5 * pow(2, Double(restarts)))
            nextStart = now.addingTimeInterval(delay)
            return .exited(pid: oldPid, exit: exit, delay: delay)
        }
        guard now >= nextStart else { return nil }
        nextStart = .distantPast
        restarts += 1
        do {
            try start()
            return .restarted(oldPid: oldPid, exit: exit, newPid: self.process?.processIdentifier ?? 0, restarts: restarts)
        } catch {
            return .restartFailed(oldPid: oldPid, exit: exit, error: "\(error)")
        }
    }

    /// Passes a signal on to the member's process (SIGHUP: read the configuration again).
    func signal(_ number: Int32) {
        if let process, process.isRunning { kill(process.processIdentifier, number) }
    }

    /// Asks the member to stop (SIGTERM).
    func terminate() {
        if let process, process.isRunning { kill(process.processIdentifier, SIGTERM) }
    }

    /// Waits until the member exited, killing it after `timeout` seconds.
    func waitForExit(timeout: TimeInterval) {
        guard let process else { return }
        let limit = Date().addingTimeInterval(timeout)
        while process.isRunning && Date() < limit { usleep(20_000) }
        if process.isRunning {
            kill(process.processIdentifier, SIGKILL)
            process.waitUntilExit()
        }
    }
}

/// Free TCP ports on loopback, found by binding port 0 and letting go.
enum FreePorts {
    static func take(_ count: Int) throws -> [UInt16] {
        var sockets: [Int32] = []
        defer { sockets.forEach { close($0) } }
        var ports: [UInt16] = []
        for _ in 0..<count {
            let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
            guard fd >= 0 else { throw SystemError(operation: "socket", errno: errno) }
            sockets.append(fd)
            var address = sockaddr_in()
            address.sin_family = sa_family_t(AF_INET)
            address.sin_addr.s_addr = inet_addr("127.0.0.1")
            address.sin_port = 0
            var length = socklen_t(MemoryLayout<sockaddr_in>.size)
            let bound = withUnsafeMutablePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { pointer in
                    bind(fd, pointer, length) == 0 && getsockname(fd, pointer, &length) == 0
                }
            }
            guard bound else { throw SystemError(operation: "bind 127.0.0.1:0", errno: errno) }
            ports.append(UInt16(bigEndian: address.sin_port))
        }
        return ports
    }
}

/// Where `tourbus up` tells of restarts: one logfmt line per restart (or failed restart) of a
/// child, on its standard error and appended to `<data-dir>/restarts.log`, so an operator (and
/// a test) can see every one after the fact.
///
/// `ts=… level=warn component=up msg=restarted service=catalog old_pid=4242 signal=SIGKILL new_pid=4250 restarts=1`
/// (`status=N` instead of `signal=…` for a process that exited by itself). A process's exit is
/// also logged, on standard error only, when it is seen (`msg="exited; restarting"`).
struct RestartLog {
    /// `<data-dir>/restarts.log`.
    let path: String
    /// Standard error and the file; always written, whatever `LOG_LEVEL` says.
    private let both: Logger
    /// Standard error only.
    private let console: Logger

    static func path(_ dataDirectory: String) -> String { dataDirectory + "/restarts.log" }

    /// Creates the file if it is missing, so it is there (empty) from the start.
    init(dataDirectory: String) throws {
        let path = RestartLog.path(dataDirectory)
        self.path = path
        let fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0o644)
        guard fd >= 0 else { throw SystemError(operation: "open \(path)", errno: errno) }
        close(fd)
        console = Logger(component: "up", level: .info)
        both = Logger(component: "up", level: .info) { line in
            var bytes = Array(line.utf8)
            _ = bytes.withUnsafeMutableBytes { write(STDERR_FILENO, $0.baseAddress, $0.count) }
            let fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0o644)
            guard fd >= 0 else {
                let complaint = Array("tourbus up: cannot append to \(path): \(String(cString: strerror(errno)))\n".utf8)
                _ = complaint.withUnsafeBytes { write(STDERR_FILENO, $0.baseAddress, $0.count) }
                return
            }
            _ = bytes.withUnsafeMutableBytes { write(fd, $0.baseAddress, $0.count) }  // one write: O_APPEND keeps lines whole
            close(fd)
        }
    }

    /// Logs what the supervisor saw for `service`.
    func record(_ event: SupervisionEvent, of service: String) {
        switch event {
        case .exited(let pid, let exit, let delay):
            console.log(
                .warn, "exited; restarting",
                fields: [
                    (key: "service", value: service), (key: "pid", value: pid), exit.field,
                    (key: "restart_in_s", value: delay),
                ])
        case .restarted(let oldPid, let exit, let newPid, let restarts):
            both.log(
                .warn, "restarted",
                fields: [
                    (key: "service", value: service), (key: "old_pid", value: oldPid), exit.field,
                    (key: "new_pid", value: newPid), (key: "restarts", value: restarts),
                ])
        case .restartFailed(let oldPid, let exit, let error):
            both.log(
                .error, "restart failed",
                fields: [
                    (key: "service", value: service), (key: "old_pid", value: oldPid), exit.field,
                    (key: "error", value: error),
                ])
        }
    }
}
