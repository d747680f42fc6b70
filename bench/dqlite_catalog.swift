// Issue 34's first prototype, "dqlite": the catalog's writes and reads as the catalog would send
// them to a dqlite node over dqlite's wire protocol (docs: canonical.com/dqlite/docs/reference/
// wire-protocol), a small client of our own, since libdqlite has none in C. Run by
// bench/replication against a three-node dqlite cluster on the namespace hosts (go-dqlite's
// dqlite-benchmark nodes serve the protocol), from the leader's host, as the catalog beside its
// own node would be.
//
//   dqlite_catalog SERVERS creates BATCH SECONDS     one writer connection, as the catalog's one
//                                                    writer thread: BEGIN, BATCH creates (each the
//                                                    statements catalog.create runs: its savepoints,
//                                                    the next id, the place row, the outbox row),
//                                                    COMMIT; prints creates/s and ms per batch
//   dqlite_catalog SERVERS gets CONNECTIONS SECONDS  catalog.get's SELECT of one place by id on
//                                                    CONNECTIONS connections; prints gets/s, p50 ms
//
// SERVERS: host:port,… (the leader is asked for). Every loop is bounded by SECONDS.
import Foundation

#if canImport(Glibc)
    import Glibc
#endif

struct WireError: Error, CustomStringConvertible {
    let description: String
}

/// One connection to a dqlite node, one request at a time.
final class Connection {
    private let fd: Int32
    private var database: UInt32 = 0

    init(_ address: String) throws {
        let parts = address.split(separator: ":")
        guard parts.count == 2, let port = UInt16(parts[1]) else { throw WireError(description: "bad address \(address)") }
        fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        var sin = sockaddr_in()
        sin.sin_family = sa_family_t(AF_INET)
        sin.sin_port = port.bigEndian
        sin.sin_addr.s_addr = inet_addr(String(parts[0]))
        let connected = withUnsafePointer(to: &sin) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) } }
        guard connected == 0 else { throw WireError(description: "connect \(address): errno \(errno)") }
        var one: Int32 = 1
        setsockopt(fd, Int32(IPPROTO_TCP), TCP_NODELAY, &one, socklen_t(MemoryLayout<Int32>.size))
        try send(word(1))  // the protocol version
    }

    deinit { close(fd) }

    /// Asks the node for the leader's address.
    func leader() throws -> String {
        let (_, body) = try request(0, word(0))
        var cursor = Cursor(body)
        _ = cursor.u64()
        return cursor.text()
    }

    func open(_ name: String) throws {
        let (type, body) = try request(3, text(name) + word(0) + text(""))
        guard type == 4 else { throw failure(type, body) }
        database = Cursor(body).u32()
    }

    /// EXEC_SQL with parameters: the last insert id.
    @discardableResult
    func exec(_ sql: String, _ parameters: [Any] = []) throws -> Int64 {
        let (type, body) = try request(8, word(UInt64(database)) + text(sql) + tuple(parameters))
        guard type == 6 else { throw failure(type, body) }
        return Int64(bitPattern: Cursor(body).peek64())
    }

    /// QUERY_SQL with parameters: the rows' count and the first row's first integer.
    func query(_ sql: String, _ parameters: [Any] = []) throws -> (rows: Int, first: Int64?) {
        let (type, body) = try request(9, word(UInt64(database)) + text(sql) + tuple(parameters))
        guard type == 7 else { throw failure(type, body) }
        var cursor = Cursor(body)
        let columns = Int(cursor.u64())
        for _ in 0..<columns { _ = cursor.text() }
        var rows = 0
        var first: Int64?
        while cursor.remaining >= 8 {
            let marker = cursor.peek64()
            if marker == 0xffff_ffff_ffff_ffff || marker == 0xeeee_eeee_eeee_eeee { break }
            let headerWords = (columns + 15) / 16
            var types: [UInt8] = []
            for _ in 0..<headerWords {
                let bits = cursor.u64()
                for slot in 0..<16 where types.count < columns { types.append(UInt8((bits >> (4 * UInt64(slot))) & 0xf)) }
            }
            for (index, kind) in types.enumerated() {
                switch kind {
                case 1, 2, 5, 9, 11:
                    let value = Int64(bitPattern: cursor.u64())
                    if rows == 0 && index == 0 && kind == 1 { first = value }
                case 3, 10: _ = cursor.text()
                case 4: cursor.skip(Int(cursor.u64()))
                default: throw WireError(description: "column type \(kind)")
                }
            }
            rows += 1
        }
        return (rows, first)
    }

    private func failure(_ type: UInt8, _ body: [UInt8]) -> WireError {
        guard type == 0 else { return WireError(description: "unexpected response \(type)") }
        var cursor = Cursor(body)
        let code = cursor.u64()
        return WireError(description: "dqlite failure \(code): \(cursor.text())")
    }

    private func request(_ type: UInt8, _ body: [UInt8]) throws -> (UInt8, [UInt8]) {
        var header = [UInt8](repeating: 0, count: 8)
        let words = UInt32(body.count / 8)
        withUnsafeBytes(of: words.littleEndian) { header.replaceSubrange(0..<4, with: $0) }
        header[4] = type
        try send(header + body)
        let reply = try receive(8)
        let size = Int(reply[0]) | Int(reply[1]) << 8 | Int(reply[2]) << 16 | Int(reply[3]) << 24
        return (reply[4], try receive(size * 8))
    }

    private func send(_ bytes: [UInt8]) throws {
        var offset = 0
        while offset < bytes.count {
            let sent = bytes[offset...].withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
            guard sent > 0 else { throw WireError(description: "write: errno \(errno)") }
            offset += sent
        }
    }

    private func receive(_ count: Int) throws -> [UInt8] {
        var bytes = [UInt8](repeating: 0, count: count)
        var offset = 0
        while offset < count {
            let got = bytes[offset...].withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
            guard got > 0 else { throw WireError(description: "read: \(got == 0 ? "closed" : "errno \(errno)")") }
            offset += got
        }
        return bytes
    }
}

func word(_ value: UInt64) -> [UInt8] { withUnsafeBytes(of: value.littleEndian) { Array($0) } }

func padded(_ bytes: [UInt8]) -> [UInt8] { bytes + [UInt8](repeating: 0, count: (8 - bytes.count % 8) % 8) }

func text(_ value: String) -> [UInt8] { padded(Array(value.utf8) + [0]) }

/// A tuple of parameters: a count and a type code each, padded to words, then the values.
func tuple(_ values: [Any]) -> [UInt8] {
    guard !values.isEmpty else { return [] }
    var header: [UInt8] = [UInt8(values.count)]
    var body: [UInt8] = []
    for value in values {
        switch value {
        case let number as Int64:
            header.append(1)
            body += word(UInt64(bitPattern: number))
        case let number as Double:
            header.append(2)
            body += word(number.bitPattern)
        case let string as String:
            header.append(3)
            body += text(string)
        default:
            header.append(5)
            body += word(0)
        }
    }
    return padded(header) + body
}

struct Cursor {
    let bytes: [UInt8]
    var offset = 0
    init(_ bytes: [UInt8]) { self.bytes = bytes }
    var remaining: Int { bytes.count - offset }
    func peek64() -> UInt64 { bytes[offset..<offset + 8].enumerated().reduce(0) { $0 | UInt64($1.element) << (8 * UInt64($1.offset)) } }
    mutating func u64() -> UInt64 {
        defer { offset += 8 }
        return peek64()
    }
    func u32() -> UInt32 { UInt32(truncatingIfNeeded: peek64()) }
    mutating func skip(_ count: Int) { offset += (count + 7) / 8 * 8 }
    mutating func text() -> String {
        var end = offset
        while end < bytes.count && bytes[end] != 0 { end += 1 }
        let value = String(decoding: bytes[offset..<end], as: UTF8.self)
        offset = (end + 1 + 7) / 8 * 8
        return value
    }
}

func now() -> Double { Date().timeIntervalSince1970 }

let arguments = CommandLine.arguments
guard arguments.count == 5, let count = Int(arguments[3]), let seconds = Double(arguments[4]) else {
    print("usage: dqlite_catalog SERVERS (creates BATCH | gets CONNECTIONS) SECONDS")
    exit(2)
}
let servers = arguments[1].split(separator: ",").map(String.init)
let leader = try Connection(servers[0]).leader()

/// The catalog's tables a create touches, as its migrations make them (places, outbox).
let schema = """
    CREATE TABLE IF NOT EXISTS places (
        id INTEGER PRIMARY KEY AUTOINCREMENT, name TEXT NOT NULL, category TEXT NOT NULL, lat REAL NOT NULL,
        lon REAL NOT NULL, address TEXT, phone TEXT, website TEXT, price_level INTEGER, description TEXT,
        opening_hours TEXT NOT NULL DEFAULT '[]', photos TEXT NOT NULL DEFAULT '[]', popularity REAL NOT NULL DEFAULT 0,
        external_ids TEXT NOT NULL DEFAULT '{}', created_at TEXT NOT NULL, updated_at TEXT NOT NULL,
        version INTEGER NOT NULL DEFAULT 1, json TEXT NOT NULL);
    CREATE INDEX IF NOT EXISTS places_by_category ON places(category, id);
    CREATE TABLE IF NOT EXISTS outbox (seq INTEGER PRIMARY KEY AUTOINCREMENT, type TEXT NOT NULL, ts TEXT NOT NULL, body BLOB NOT NULL);
    """

let json = #"{"id":0,"name":"Bench cafe","category":"cafe","lat":48.85,"lon":2.35,"opening_hours":[],"photos":[],"popularity":0}"#
let stamp = "2026-12-04T16:00:00.000Z"

switch arguments[2] {
case "creates":
    let connection = try Connection(leader)
    try connection.open("catalog")
    try connection.exec(schema)
    var creates = 0
    var batches = 0
    let started = now()
    while now() - started < seconds {
        try connection.exec("BEGIN IMMEDIATE")
        try connection.exec("SAVEPOINT batch")
        for _ in 0..<count {
            try connection.exec("SAVEPOINT create_one")
            let next = try connection.query("SELECT coalesce((SELECT seq FROM sqlite_sequence WHERE name = 'places'), 0) + 1").first ?? 1
            try connection.exec(
                "INSERT INTO places (id, name, category, lat, lon, created_at, updated_at, json) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                [next, "Bench cafe", "cafe", 48.85, 2.35, stamp, stamp, json])
            try connection.exec("INSERT INTO outbox (type, ts, body) VALUES ('catalog.place.upserted', ?, ?)", [stamp, json])
            try connection.exec("RELEASE create_one")
            creates += 1
        }
        try connection.exec("RELEASE batch")
        try connection.exec("COMMIT")
        batches += 1
    }
    let elapsed = now() - started
    print(String(format: "creates %d in %.1f s: %.0f/s, %.2f ms per batch of %d", creates, elapsed, Double(creates) / elapsed, elapsed * 1000 / Double(batches), count))
case "gets":
    let setup = try Connection(leader)
    try setup.open("catalog")
    let highest = try setup.query("SELECT max(id) FROM places").first ?? 0
    guard highest >= 5 else { throw WireError(description: "no places to get: run creates first") }
    let results = Latencies()
    let threads = (0..<count).map { _ in
        Thread {
            do {
                let connection = try Connection(leader)
                try connection.open("catalog")
                var latencies: [Double] = []
                let started = now()
                while now() - started < seconds {
                    let begun = now()
                    let found = try connection.query("SELECT json FROM places WHERE id = ?", [Int64(5)])
                    guard found.rows == 1 else { throw WireError(description: "place 5 not found") }
                    latencies.append(now() - begun)
                }
                results.append(latencies)
            } catch {
                print("a reader failed: \(error)")
            }
        }
    }
    let started = now()
    threads.forEach { $0.start() }
    while results.count < count && now() - started < seconds + 30 { usleep(50_000) }
    let all = results.values.sorted()
    guard !all.isEmpty else { throw WireError(description: "no gets") }
    print(String(format: "gets %d on %d connections in %.1f s: %.0f/s, p50 %.3f ms, p99 %.3f ms", all.count, count, seconds, Double(all.count) / seconds,
                 all[all.count / 2] * 1000, all[all.count * 99 / 100] * 1000))
default:
    print("usage: dqlite_catalog SERVERS (creates BATCH | gets CONNECTIONS) SECONDS")
    exit(2)
}

/// The readers' latencies, gathered across threads.
final class Latencies: @unchecked Sendable {
    private let lock = NSLock()
    private var lists: [[Double]] = []

    func append(_ list: [Double]) {
        lock.lock()
        lists.append(list)
        lock.unlock()
    }

    var count: Int {
        lock.lock()
        defer { lock.unlock() }
        return lists.count
    }

    var values: [Double] {
        lock.lock()
        defer { lock.unlock() }
        return lists.flatMap { $0 }
    }
}
