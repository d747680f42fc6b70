import Bus
import Foundation
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// How a child process ended: its exit status, or the signal that killed it.
public enum ProcessExit: Equatable, CustomStringConvertible {
    case status(Int32)
    case signal(Int32)

    /// How `process` ended; nil while it runs.
    public init?(_ process: Process) {
        guard !process.isRunning else { return nil }
        self = process.terminationReason == .uncaughtSignal ? .signal(process.terminationStatus) : .status(process.terminationStatus)
    }

    public var description: String {
        switch self {
        case .status(let code): "exit status \(code)"
        case .signal(let number): "signal \(number) (\(signalName(number)))"
        }
    }
}

/// `SIGSEGV` for 11: the usual name of a Linux signal, `SIG<n>` for others.
public func signalName(_ number: Int32) -> String {
    let names: [Int32: String] = [SIGHUP: "SIGHUP", SIGINT: "SIGINT", SIGQUIT: "SIGQUIT", SIGILL: "SIGILL", SIGTRAP: "SIGTRAP",
                                  SIGABRT: "SIGABRT", SIGBUS: "SIGBUS", SIGFPE: "SIGFPE", SIGKILL: "SIGKILL", SIGUSR1: "SIGUSR1",
                                  SIGSEGV: "SIGSEGV", SIGUSR2: "SIGUSR2", SIGPIPE: "SIGPIPE", SIGALRM: "SIGALRM", SIGTERM: "SIGTERM"]
    return names[number] ?? "SIG\(number)"
}

/// The one launcher of long-running children in tests: a real Tourbus executable (`tourbus-catalog`, `tourbus-gateway`, …) started from the build
/// folder, watched from its start to the end of the test.
///
/// The fixture keeps the child's pid and its start time (from `/proc`, so a reused pid is not
/// taken for it). At teardown — `tearDown()`, which `deinit` calls at the end of the test that
/// made it — the child must still be that same live process, unless the test said it would
/// not be: `terminate()` or `stop(with:)` stop it on purpose, `expectExit(because:)` allows it
/// to end by itself. Otherwise the running test fails with the executable's name, pid and
/// how it ended (`signal 11 (SIGSEGV)`), and the end of its log. Then the child is stopped
/// with SIGTERM and must exit with status 0 within 10 s: a crash or hang while stopping
/// fails the test too.
public final class ChildProcess {
    public let process = Process()
    /// The executable's name, as failures name it.
    public let name: String
    public let folder: String
    public let stderrFile: String
    public let endpoints: [String: Any]
    /// The child's pid, taken when it started.
    public let pid: Int32
    /// The child's start time in clock ticks since boot (`/proc/PID/stat`), which tells it from a later process with the same pid.
    private let startTicks: UInt64?
    /// Why the test does not expect the child to be running at teardown; nil while it must be.
    public private(set) var endedOnPurpose: String?
    private var checked = false
    private var tornDown = false
    /// Where the test made this fixture: its teardown failures point there.
    private let sourceLocation: SourceLocation

    public static func executable(_ name: String) throws -> URL {
        let candidates = [
            URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent(),
            URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
                .appendingPathComponent(".build/debug"),
        ]
        for folder in candidates {
            let url = folder.appendingPathComponent(name)
            if FileManager.default.isExecutableFile(atPath: url.path) { return url }
        }
        throw ServiceError(.notFound, "\(name) is not built next to the tests; run swift build first")
    }

    public init(_ name: String, folder: String, arguments: [String] = [], environment extra: [String: String] = [:],
         sourceLocation: SourceLocation = #_sourceLocation) throws {
        self.name = name
        self.folder = folder
        self.sourceLocation = sourceLocation
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        let ready = folder + "/ready-\(UUID().uuidString).json"
        stderrFile = folder + "/stderr-\(UUID().uuidString).log"
        _ = FileManager.default.createFile(atPath: stderrFile, contents: nil)
        process.executableURL = try ChildProcess.executable(name)
        // Every child writes a ready file; a service also gets its data folder and a quick
        // heartbeat. The gateway keeps nothing on disk and publishes nothing: it refuses those.
        let own = name == "tourbus-gateway" ? [] : ["--data-dir", folder, "--heartbeat-ms", "100"]
        process.arguments = own + ["--ready-file", ready] + arguments
        process.standardOutput = FileHandle.nullDevice
        process.standardError = try FileHandle(forWritingTo: URL(fileURLWithPath: stderrFile))
        var environment = ProcessInfo.processInfo.environment
        environment["LOG_LEVEL"] = "info"
        environment.merge(extra) { _, new in new }
        process.environment = environment
        try process.run()
        pid = process.processIdentifier
        startTicks = ChildProcess.startTicks(of: pid)
        var found: [String: Any]?
        for _ in 0..<500 where found == nil && process.isRunning {
            if let data = FileManager.default.contents(atPath: ready), !data.isEmpty {
                found = try JSONSerialization.jsonObject(with: data) as? [String: Any]
            } else {
                usleep(20_000)
            }
        }
        guard let found else {
            endedOnPurpose = "it never became ready"
            Glibc.kill(pid, SIGKILL)
            process.waitUntilExit()
            tornDown = true
            let log = String(decoding: FileManager.default.contents(atPath: stderrFile) ?? Data(), as: UTF8.self)
            throw ServiceError(.unavailable, "\(name) did not become ready: \(log)")
        }
        endpoints = found
    }

    public var rpc: String { (endpoints["rpc"] as? [String])?.first ?? "" }
    public var log: String { String(decoding: FileManager.default.contents(atPath: stderrFile) ?? Data(), as: UTF8.self) }

    /// Stops the child on purpose with SIGTERM and waits (bounded) for it; its exit status,
    /// or nil if it still runs after `timeout`.
    public func terminate(timeout: TimeInterval = 10, sourceLocation: SourceLocation = #_sourceLocation) -> Int32? {
        switch stop(with: SIGTERM, timeout: timeout, sourceLocation: sourceLocation) {
        case .status(let code)?: code
        case .signal(let number)?: 128 + number
        case nil: nil
        }
    }

    /// Sends `signal` to the child on purpose (SIGKILL to play a crash) and waits (bounded)
    /// for it to end; how it ended, or nil if it still runs after `timeout`.
    @discardableResult
    public func stop(with signal: Int32, timeout: TimeInterval = 10, sourceLocation: SourceLocation = #_sourceLocation) -> ProcessExit? {
        // A child that already died is a failure the stop must not hide.
        if let problem = unexpectedEnd() { Issue.record(Comment(rawValue: problem), sourceLocation: sourceLocation) }
        if endedOnPurpose == nil { endedOnPurpose = "the test sent it \(signalName(signal))" }
        if process.isRunning { Glibc.kill(pid, signal) }
        return waitForExit(timeout: timeout)
    }

    /// Declares that the test makes the child end by itself (bad input meant to stop it, say):
    /// teardown then does not count its end as a failure.
    public func expectExit(because reason: String) {
        if endedOnPurpose == nil { endedOnPurpose = reason }
    }

    /// How the child ended, once Foundation has reaped it, waiting at most `timeout`.
    public func waitForExit(timeout: TimeInterval) -> ProcessExit? {
        let limit = Date().addingTimeInterval(timeout)
        while process.isRunning && Date() < limit { usleep(10_000) }
        return ProcessExit(process)
    }

    /// Why the child is not the live process the test started, when nothing excuses it; nil
    /// while it runs or when the test ended it on purpose.
    public func unexpectedEnd() -> String? {
        guard endedOnPurpose == nil else { return nil }
        if process.isRunning, let ticks = startTicks, ChildProcess.startTicks(of: pid) == ticks, !ChildProcess.isZombie(pid) { return nil }
        // Gone or a zombie: give Foundation a moment (bounded) to reap it and tell how it ended.
        guard let exit = waitForExit(timeout: 2) else {
            return "\(name) (pid \(pid)) is no longer the process the test started"
        }
        return "\(name) (pid \(pid)) ended during the test with \(exit), and the test did not stop it on purpose\(logTail())"
    }

    /// The teardown check, then a graceful stop: records an issue on the running test for a
    /// child that ended unexpectedly, or that does not stop cleanly on SIGTERM. Runs once.
    public func tearDown() {
        checkAtTeardown()
        stopAtTeardown()
    }

    /// Records an issue on the running test if the child ended and the test did not say it
    /// would. Runs once; a fixture with several children checks them all before stopping any.
    public func checkAtTeardown() {
        guard !checked && !tornDown else { return }
        checked = true
        if let problem = unexpectedEnd() { Issue.record(Comment(rawValue: problem), sourceLocation: sourceLocation) }
    }

    /// SIGTERM to a child still running, which must exit with status 0 within 10 s (else SIGKILL and an issue).
    public func stopAtTeardown() {
        guard !tornDown else { return }
        tornDown = true
        guard process.isRunning else { return }
        Glibc.kill(pid, SIGTERM)
        let exit = waitForExit(timeout: 10)
        if exit == nil {
            Glibc.kill(pid, SIGKILL)
            _ = waitForExit(timeout: 5)
        }
        if exit != .status(0) {
            let how = exit.map { "ended with \($0)" } ?? "still ran after 10 s (killed)"
            Issue.record(Comment(rawValue: "\(name) (pid \(pid)) did not stop cleanly on SIGTERM at teardown: it \(how)\(logTail())"),
                         sourceLocation: sourceLocation)
        }
    }

    /// For a failure message: the child's crash report (Swift's backtrace) if its log has
    /// one, else the last lines of its log.
    private func logTail(lines: Int = 30) -> String {
        let all = log.split(separator: "\n", omittingEmptySubsequences: false)
        if let crash = all.firstIndex(where: { $0.hasPrefix("*** Signal ") || $0.hasPrefix("*** Program crashed") }) {
            // The report's head, then the thread that crashed (which need not be the first).
            var report = Array(all[crash...].prefix(4))
            if let thread = all[crash...].firstIndex(where: { $0.hasPrefix("Thread ") && $0.hasSuffix("crashed:") }) {
                report += ["…"] + all[thread...].prefix(lines)
            } else {
                report = Array(all[crash...].prefix(lines))
            }
            return "; its log has a crash report:\n" + report.joined(separator: "\n")
        }
        let tail = all.suffix(lines).joined(separator: "\n")
        return tail.isEmpty ? "" : "; the end of its log:\n\(tail)"
    }

    /// Field 22 of `/proc/PID/stat`, the start time; nil when there is no such process.
    public static func startTicks(of pid: Int32) -> UInt64? {
        statFields(pid).flatMap { $0.count > 19 ? UInt64($0[19]) : nil }
    }

    /// Whether `pid` has exited and waits for its parent to reap it.
    public static func isZombie(_ pid: Int32) -> Bool { statFields(pid)?.first == "Z" }

    /// The fields of `/proc/PID/stat` after the command name, from the state (field 3) on.
    private static func statFields(_ pid: Int32) -> [Substring]? {
        guard let stat = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
              let close = stat.lastIndex(of: ")") else { return nil }
        return stat[stat.index(after: close)...].split(separator: " ")
    }

    deinit { tearDown() }
}
