import Bus
import Foundation
import Testing
import TestSupport
#if canImport(Glibc)
import Glibc
#endif

/// What a stranger can hold of a server before its handshake: a connection for at most
/// `Socket.serverHandshakeMilliseconds`, and on a service's event socket no frame bigger than 4 KiB.
@Suite struct HandshakeBoundsTests {
    /// A raw TCP connection to a `tcp://127.0.0.1:PORT` endpoint.
    func rawConnect(_ endpoint: String) throws -> Int32 {
        let port = UInt16(endpoint.split(separator: ":").last ?? "") ?? 0
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = port.bigEndian
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let ok = withUnsafePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) == 0 } }
        #expect(ok)
        return fd
    }

    /// Seconds until the server closes `fd` (reading and discarding what it sends), or nil if still open after `limit`.
    func closedWithin(_ fd: Int32, seconds limit: Double) -> Double? {
        let start = monotonicNanos()
        var buffer = [UInt8](repeating: 0, count: 4_096)
        while Double(monotonicNanos() - start) / 1e9 < limit {
            var poller = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            guard poll(&poller, 1, 100) > 0 else { continue }
            if read(fd, &buffer, buffer.count) <= 0 { return Double(monotonicNanos() - start) / 1e9 }
        }
        return nil
    }

    @Test func anIdleStrangerIsDroppedAfterTheHandshakeInterval() throws {
        let scratch = TemporaryFolder("handshake")
        let catalog = try ChildProcess("tourbus-catalog", folder: scratch.path)
        let fd = try rawConnect(catalog.rpc)
        defer { close(fd) }
        let closed = closedWithin(fd, seconds: Double(Socket.serverHandshakeMilliseconds) / 1_000 + 3)
        #expect(closed != nil && closed! >= Double(Socket.serverHandshakeMilliseconds) / 1_000 - 0.5, "closed after \(String(describing: closed)) s")
    }

    @Test func anEventSocketDropsABigFrameBeforeItIsRead() throws {
        let scratch = TemporaryFolder("bigframe")
        let catalog = try ChildProcess("tourbus-catalog", folder: scratch.path)
        let fd = try rawConnect(try #require((catalog.endpoints["publish"] as? [String])?.first))
        defer { close(fd) }
        // A ZMTP 3.0 greeting (NULL mechanism), then a frame announcing 1 GiB, then 64 KiB of it.
        var greeting = [UInt8](repeating: 0, count: 64)
        greeting[0] = 0xFF; greeting[9] = 0x7F; greeting[10] = 3
        for (i, byte) in "NULL".utf8.enumerated() { greeting[12 + i] = byte }
        let header: [UInt8] = [0x02, 0, 0, 0, 0, 0x40, 0, 0, 0]
        let payload = [UInt8](repeating: 0, count: 65_536)
        for part in [greeting, header, payload] { _ = part.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) } }
        #expect(closedWithin(fd, seconds: 3) != nil)
    }
}
