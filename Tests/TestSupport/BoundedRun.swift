import Foundation
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// A command run to its end, but never for longer than `timeout` (then it is killed): its
/// exit, standard output and standard error. Tests run other programs (the CLI, redis-cli,
/// Python) only this way, so none can hang a test.
public struct BoundedRun {
    public var exit: ProcessExit?
    /// Standard output.
    public var output: String
    /// Standard error.
    public var errors: String
    /// Whether it ran over `timeout` and was killed (SIGKILL).
    public var timedOut: Bool

    /// Runs `executable` (a path) with `arguments`; standard input is `input`, or the file at
    /// `inputFile`, or empty. `environment` changes the test's own: a nil value removes a variable.
    public init(_ executable: String, _ arguments: [String], input: String? = nil, inputFile: String? = nil,
         environment changes: [String: String?] = [:], timeout: TimeInterval = 60) throws {
        let scratch = TemporaryFolder("run")
        defer { withExtendedLifetime(scratch) {} }  // the folder lives to the end of the scope
        let outFile = scratch.file("out"), errFile = scratch.file("err"), inFile = inputFile ?? scratch.file("in")
        _ = FileManager.default.createFile(atPath: outFile, contents: nil)
        _ = FileManager.default.createFile(atPath: errFile, contents: nil)
        if inputFile == nil { _ = FileManager.default.createFile(atPath: inFile, contents: Data((input ?? "").utf8)) }

        let process = Process()
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = arguments
        let out = try FileHandle(forWritingTo: URL(fileURLWithPath: outFile))
        let err = try FileHandle(forWritingTo: URL(fileURLWithPath: errFile))
        let inHandle = try FileHandle(forReadingFrom: URL(fileURLWithPath: inFile))
        defer {
            try? out.close()
            try? err.close()
            try? inHandle.close()
        }
        process.standardOutput = out
        process.standardError = err
        process.standardInput = inHandle
        var environment = ProcessInfo.processInfo.environment
        for (key, value) in changes { environment[key] = value }
        process.environment = environment
        try process.run()
        let limit = Date().addingTimeInterval(timeout)
        for _ in 0..<Int(timeout * 100) where process.isRunning && Date() < limit { usleep(10_000) }
        timedOut = process.isRunning
        if timedOut {
            // SIGKILL: a child of a test thread inherits a mask that blocks SIGTERM.
            kill(process.processIdentifier, SIGKILL)
            process.waitUntilExit()
        }
        exit = ProcessExit(process)
        output = String(decoding: FileManager.default.contents(atPath: outFile) ?? Data(), as: UTF8.self)
        errors = String(decoding: FileManager.default.contents(atPath: errFile) ?? Data(), as: UTF8.self)
    }

    /// Exit status 0 within the time.
    public var succeeded: Bool { !timedOut && exit == .status(0) }

    /// How the run ended, in words.
    public var ending: String { timedOut ? "ran over its time and was killed" : exit.map { "ended with \($0)" } ?? "never ended" }

    /// Standard output and error for a failure message: whole when short, else how often each
    /// distinct line came (the most frequent first) and the last lines.
    public var digest: String {
        let lines = (output + (output.isEmpty || output.hasSuffix("\n") ? "" : "\n") + errors).split(separator: "\n")
        guard lines.count > 20 else { return lines.joined(separator: "\n") }
        var counts: [Substring: Int] = [:]
        for line in lines { counts[line, default: 0] += 1 }
        let frequent = counts.sorted { ($0.value, $1.key) > ($1.value, $0.key) }.prefix(5).map { "\($0.value) × \($0.key)" }
        return "\(lines.count) lines, most often:\n" + frequent.joined(separator: "\n") + "\nending:\n" + lines.suffix(5).joined(separator: "\n")
    }
}

/// A failed expectation shows how the run ended, not its whole output (which may be
/// megabytes); messages add `digest`.
extension BoundedRun: CustomTestStringConvertible {
    public var testDescription: String { "a run that \(ending), \(output.utf8.count + errors.utf8.count) bytes of output" }
}
