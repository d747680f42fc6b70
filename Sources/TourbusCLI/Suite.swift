import Bus
import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// One supervised child process of the suite: how to start it and its current process.
final class SuiteMember {
    let name: String
    let executable: URL
    let arguments: [String]
    private(set) var process: Process?
    private(set) var restarts = 0
    private var nextStart: Date = .distantPast
    private var startedAt: Date = .distantPast

    init(name: String, executable: URL, arguments: [String]) {
        self.name = name
        self.executable = executable
        self.arguments = arguments
    }

    func start() throws {
        let process = Process()
        process.executableURL = executable
        process.arguments = arguments
        process.standardOutput = FileHandle.nullDevice
        try process.run()
        self.process = process
        startedAt = Date()
    }

    /// Restarts the member if it died, with exponential backoff (0.5 s doubling to 30 s,
    /// back to 0.5 s after a minute of good health). Returns a line to print when something happened.
    func superviseOnce() -> String? {
        guard let process, !process.isRunning else { return nil }
        let now = Date()
        if nextStart == .distantPast {
            let healthy = now.timeIntervalSince(startedAt) > 60
            if healthy { restarts = 0 }
            let delay = min(30, 0.5 * pow(2, Double(restarts)))
            nextStart = now.addingTimeInterval(delay)
            return "\(name) exited (status \(process.terminationStatus)); restarting in \(delay) s"
        }
        guard now >= nextStart else { return nil }
        nextStart = .distantPast
        restarts += 1
        do {
            try start()
            return "\(name) restarted"
        } catch {
            return "\(name) could not be restarted: \(error)"
        }
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
