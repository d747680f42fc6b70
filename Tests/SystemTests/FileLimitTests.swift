import Foundation
import Testing
import TestSupport
#if canImport(Glibc)
import Glibc
#endif

/// A gateway whose clients take every file it may open: it neither spins nor stops, and the
/// clients waiting in the listen backlog are served once connections close.
@Suite struct FileLimitTests {
    /// Sets another process's limit on open files (glibc's `prlimit`, which Swift's Glibc module leaves out).
    static func limitFiles(of pid: Int32, to count: Int) -> Bool {
        guard let symbol = dlsym(nil, "prlimit") else { return false }
        let prlimit = unsafeBitCast(symbol, to: (@convention(c) (Int32, Int32, UnsafePointer<rlimit>?, UnsafeMutablePointer<rlimit>?) -> Int32).self)
        var limit = rlimit(rlim_cur: rlim_t(count), rlim_max: rlim_t(count))
        return prlimit(pid, 7 /* RLIMIT_NOFILE */, &limit, nil) == 0
    }

    static func openFiles(_ pid: Int32) -> Int { (try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/fd").count) ?? 0 }

    /// CPU time the process used (user and system), in clock ticks.
    static func cpuTicks(_ pid: Int32) -> Int {
        guard let stat = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8), let close = stat.lastIndex(of: ")") else { return 0 }
        let fields = stat[stat.index(after: close)...].split(separator: " ")
        return fields.count > 12 ? (Int(fields[11]) ?? 0) + (Int(fields[12]) ?? 0) : 0
    }

    @Test func runningOutOfFilesNeitherSpinsNorStopsTheGateway() throws {
        let folder = TemporaryFolder("files")
        defer { withExtendedLifetime(folder) {} }
        // A gateway alone, that no client has left yet: the first close comes when it has no file to spare.
        let gateway = try ChildProcess("tourbus-gateway", folder: folder.path, arguments: ["--listen", "127.0.0.1:0"])
        defer { gateway.stopAtTeardown() }
        let pid = gateway.process.processIdentifier
        let port = UInt16((gateway.endpoints["listen"] as? String ?? "").split(separator: ":").last ?? "") ?? 0
        let spare = 12
        #expect(FileLimitTests.limitFiles(of: pid, to: FileLimitTests.openFiles(pid) + spare))
        // More clients than files: those past the limit wait, connected, in the listen backlog.
        var clients: [GatewayConnection] = []
        for _ in 0..<(spare + 8) {
            let client = try GatewayConnection(port: port, timeoutMilliseconds: 300)
            client.send("PING\r\n")
            clients.append(client)
        }
        var served: [GatewayConnection] = [], waiting: [GatewayConnection] = []
        for client in clients { if client.line() == "+PONG" { served.append(client) } else { waiting.append(client) } }
        clients.removeAll()
        // About `spare`: the gateway may hold a descriptor more or less than when the limit was set.
        #expect(served.count > 4 && served.count <= spare + 2, "\(served.count) of \(spare + 8) answered with \(spare) files to spare")
        // Out of files, the gateway waits: it does not try to accept over and over.
        let ticks = FileLimitTests.cpuTicks(pid)
        usleep(1_000_000)
        let used = FileLimitTests.cpuTicks(pid) - ticks
        #expect(used < sysconf(Int32(_SC_CLK_TCK)) / 4, "\(used) ticks of CPU in 1 s with nothing to do but wait for files")
        // Four clients leave; the gateway stays up and serves the ones that waited, in the files they freed.
        served.removeFirst(4)
        usleep(300_000)
        #expect(gateway.process.isRunning, "the gateway stopped when a client left: \(gateway.log.suffix(400))")
        let later = waiting.filter { $0.line() == "+PONG" }.count
        #expect(later > 0, "none of the \(waiting.count) waiting clients was served after 4 left")
        // Said once while the backlog waits, not again each time a freed file lets one in.
        #expect(gateway.log.components(separatedBy: "cannot accept connections").count - 1 == 1)
        let fresh = try GatewayConnection(port: port, timeoutMilliseconds: 2_000)
        waiting.removeAll()
        usleep(300_000)
        fresh.send("PING\r\n")
        #expect(fresh.line() == "+PONG")
        #expect(gateway.process.isRunning)
    }
}
