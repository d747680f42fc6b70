import Bus
import Foundation
import Replication
import Storage
import TestSupport
import Testing

/// Three replicas of one database in this process, each with its own VFS, Raft directory and
/// loopback port, talking Raft over real TCP.
final class Cluster {
    let folder: String
    let servers: [RaftServer]
    var replicas: [UInt64: ReplicatedDatabase] = [:]

    let snapshotThreshold: UInt32
    /// With a key pair, Raft goes through each replica's CURVE tunnel, and each has a ZAP
    /// handler admitting that key alone to its Raft port (and `busKeys` to the bus's).
    let pair: CurveKeyPair?
    let busKeys: [[UInt8]]
    var secured: [UInt64: (tunnel: RaftTunnel, authenticator: ZAPAuthenticator)] = [:]

    init(snapshotThreshold: UInt32 = 1024, pair: CurveKeyPair? = nil, busKeys: [[UInt8]] = []) throws {
        self.snapshotThreshold = snapshotThreshold
        self.pair = pair
        self.busKeys = busKeys
        folder = NSTemporaryDirectory() + "replication-\(UUID().uuidString)"
        servers = try (1...3).map { RaftServer(id: UInt64($0), address: "127.0.0.1:\(try HTTPProbe.freePort())") }
        for server in servers { try start(server.id) }
    }

    func start(_ id: UInt64) throws {
        let logger = Logger(component: "replica-\(id)", level: .warn)
        if let pair {
            let context = try ZMQContext()
            let authenticator = try ZAPAuthenticator(context: context, allowed: busKeys, domains: [RaftTunnel.zapDomain: [pair.publicKey]], logger: logger)
            let me = try #require(servers.first { $0.id == id })
            let tunnel = try RaftTunnel(
                context: context, listen: me.address,
                peers: Dictionary(uniqueKeysWithValues: servers.filter { $0.id != id }.map { ($0.id, $0.address) }), keys: pair, logger: logger)
            secured[id] = (tunnel, authenticator)
        }
        replicas[id] = try ReplicatedDatabase(
            name: "test.db", id: id, servers: servers, tunnel: secured[id]?.tunnel, directory: "\(folder)/\(id)",
            logger: Logger(component: "replica-\(id)", level: .warn), slowCommit: .seconds(3), electionMilliseconds: 300,
            snapshotThreshold: snapshotThreshold)
    }

    func stop(_ id: UInt64) {
        replicas[id]?.stop()
        replicas[id] = nil
        secured[id]?.tunnel.stop()
        secured[id]?.authenticator.stop()
        secured[id] = nil
    }

    /// The ready leader, once there is one (within 10 s).
    func leader() -> ReplicatedDatabase? {
        var found: ReplicatedDatabase?
        _ = eventually(seconds: 10) {
            found = replicas.values.first { $0.node.status.isReadyLeader }
            return found != nil
        }
        return found
    }

    func open(_ id: UInt64) throws -> Database {
        let replica = try #require(replicas[id])
        return try Database(path: replica.name, shared: replica.file)
    }

    deinit {
        for id in Array(replicas.keys) { stop(id) }
        try? FileManager.default.removeItem(atPath: folder)
    }
}

@Suite(.serialized)
struct ReplicatedDatabaseTests {
    /// Raft's links through the CURVE tunnels: commits reach every replica (a large one in
    /// many pieces), a replica stopped and started again is dialled anew, and a key the bus
    /// admits but the Raft port does not gets nothing from it.
    @Test func overCurveTunnelsCommitsReachEveryReplicaAndOnlyTheReplicasKeyIsAdmitted() throws {
        let pair = try CurveKeyPair.generate()
        let stranger = try CurveKeyPair.generate()
        let cluster = try Cluster(pair: pair, busKeys: [stranger.publicKey])
        let leaderID = try #require(cluster.leader()).node.server.id
        let db = try cluster.open(leaderID)
        try db.execute("CREATE TABLE places (id INTEGER PRIMARY KEY, name TEXT NOT NULL, photo BLOB)")
        for row in 0..<100 { try db.run("INSERT INTO places (name) VALUES (?)", "place \(row)") }
        // Two mebibytes in one commit: many of the tunnel's 64 KiB messages.
        try db.run("INSERT INTO places (name, photo) VALUES ('big', randomblob(2097152))")
        for id in cluster.servers.map(\.id) where id != leaderID {
            let follower = try cluster.open(id)
            #expect(eventually { (try? follower.scalarInt("SELECT count(*) FROM places")) == 101 }, "replica \(id)")
            #expect(try follower.scalarInt("SELECT length(photo) FROM places WHERE name = 'big'") == 2_097_152)
        }

        // A follower stopped and started again: the others dial it anew through their entrances.
        let followerID = try #require(cluster.servers.map(\.id).first { $0 != leaderID })
        cluster.stop(followerID)
        try db.run("INSERT INTO places (name) VALUES ('while it was away')")
        try cluster.start(followerID)
        let back = try cluster.open(followerID)
        #expect(eventually(seconds: 15) { (try? back.scalarInt("SELECT count(*) FROM places")) == 102 })

        // A key the bus admits is refused at the Raft port: the handshake fails, nothing reaches libraft.
        let authenticator = try #require(cluster.secured[leaderID]).authenticator
        let refusedBefore = authenticator.decisions.refused
        let dealer = try Socket(try ZMQContext(), .dealer)
        try dealer.setCurveClient(publicKey: stranger.publicKey, secretKey: stranger.secretKey, serverKey: pair.publicKey)
        try dealer.connect("tcp://" + (cluster.servers.first { $0.id == leaderID }?.address ?? ""))
        _ = try dealer.send([Data(repeating: 0xff, count: 64)], dontWait: true)
        try dealer.setReceiveTimeout(milliseconds: 1_000)
        #expect(try dealer.receive() == nil)
        #expect(eventually { authenticator.decisions.refused > refusedBefore })
        #expect(try db.scalarInt("SELECT count(*) FROM places") == 102)

        // Another local process is hung up on, at an entrance and at libraft's own listener (past
        // a well-formed libraft handshake: protocol 1, server 2, its address): it can neither
        // speak for this replica nor reach libraft past the tunnel.
        let tunnel = try #require(cluster.secured[leaderID]).tunnel
        let peer = try #require(cluster.servers.first { $0.id != leaderID }).id
        for address in [try #require(tunnel.entrance(for: peer)), tunnel.inside] {
            let port = try #require(address.split(separator: ":").last.map(String.init))
            let run = try BoundedRun(
                "/usr/bin/python3",
                [
                    "-c",
                    """
                    import socket, struct, sys, time
                    s = socket.create_connection(('127.0.0.1', int(sys.argv[1])))
                    s.settimeout(5)
                    began = time.time()
                    s.sendall(struct.pack('<QQQ', 1, 2, 16) + b'127.0.0.1:1'.ljust(16, b'\\0'))
                    try:
                        closed = s.recv(1) == b''
                    except ConnectionResetError:
                        closed = True
                    print(closed, time.time() - began < 4)
                    """, port,
                ],
                timeout: 20)
            #expect(run.output.trimmingCharacters(in: .whitespacesAndNewlines) == "True True", "\(address): \(run.digest)")
        }
        #expect(try db.scalarInt("SELECT count(*) FROM places") == 102)
    }

    @Test func aCommitIsOnEveryReplicaAndAFollowerWritesNothing() throws {
        let cluster = try Cluster()
        let leader = try #require(cluster.leader())
        let leaderID = leader.node.server.id
        let db = try cluster.open(leaderID)
        try db.execute("CREATE TABLE places (id INTEGER PRIMARY KEY, name TEXT NOT NULL)")
        for batch in 0..<20 {
            try db.transaction {
                for row in 0..<50 { try db.run("INSERT INTO places (name) VALUES (?)", "place \(batch)-\(row)") }
            }
        }
        #expect(try db.scalarInt("SELECT count(*) FROM places") == 1000)
        for id in cluster.servers.map(\.id) where id != leaderID {
            let follower = try cluster.open(id)
            #expect(eventually { (try? follower.scalarInt("SELECT count(*) FROM places")) == 1000 }, "replica \(id)")
            #expect(throws: SQLiteError.self) { try follower.run("INSERT INTO places (name) VALUES ('alone')") }
            #expect(try follower.scalarInt("SELECT count(*) FROM places WHERE name = 'alone'") == 0)
        }
        #expect(try db.scalarInt("SELECT count(*) FROM places WHERE name = 'alone'") == 0)
    }

    @Test func anotherLeadersCommitWaitsForAReadHeldOpenOnAFollower() throws {
        let cluster = try Cluster()
        let leaderID = try #require(cluster.leader()).node.server.id
        let db = try cluster.open(leaderID)
        try db.execute("CREATE TABLE places (id INTEGER PRIMARY KEY, name TEXT NOT NULL)")
        for row in 0..<10 { try db.run("INSERT INTO places (name) VALUES (?)", "place \(row)") }
        let followerID = try #require(cluster.servers.map(\.id).first { $0 != leaderID })
        let follower = try cluster.open(followerID)
        #expect(eventually { (try? follower.scalarInt("SELECT count(*) FROM places")) == 10 })
        // A read stays open across its rows while the leader commits (a majority without this
        // follower): the follower adds the commit only once the read is over.
        var seenInside: Int64?
        var rows = 0
        try follower.forEachStep("SELECT id FROM places ORDER BY id") { _ in
            rows += 1
            guard rows == 1 else { return }
            try db.run("INSERT INTO places (name) VALUES ('while reading')")
            usleep(300_000)
            seenInside = try follower.scalarInt("SELECT count(*) FROM places")
        }
        #expect(rows == 10)
        #expect(seenInside == 10)
        #expect(eventually { (try? follower.scalarInt("SELECT count(*) FROM places")) == 11 })
        // A thread holding a read open on one connection may begin one on another while the
        // commit waits: it waits a little, not for ever.
        try follower.forEachStep("SELECT id FROM places ORDER BY id LIMIT 1") { _ in
            try db.run("INSERT INTO places (name) VALUES ('while reading, twice')")
            usleep(100_000)
            #expect(try cluster.open(followerID).scalarInt("SELECT count(*) FROM places") == 11)
        }
        #expect(eventually { (try? follower.scalarInt("SELECT count(*) FROM places")) == 12 })
    }

    @Test func aReplicaFarBehindTakesTheLeadersSnapshotUnderItsOpenConnections() throws {
        // Snapshots every 16 commands, keeping 64: a replica more than 64 behind gets a snapshot.
        let cluster = try Cluster(snapshotThreshold: 16)
        let leaderID = try #require(cluster.leader()).node.server.id
        let db = try cluster.open(leaderID)
        try db.execute("CREATE TABLE places (id INTEGER PRIMARY KEY, name TEXT NOT NULL)")
        for row in 0..<50 { try db.run("INSERT INTO places (name) VALUES (?)", "early \(row)") }
        let behindID = try #require(cluster.servers.map(\.id).first { $0 != leaderID })
        #expect(eventually { (try? cluster.open(behindID).scalarInt("SELECT count(*) FROM places")) == 50 })
        cluster.stop(behindID)
        for row in 0..<300 { try db.run("INSERT INTO places (name) VALUES (?)", "late \(row)") }
        try cluster.start(behindID)
        // Connections open from its start, one reading in a transaction held open: the snapshot
        // replaces the database under them.
        let behind = try cluster.open(behindID)
        let reader = try cluster.open(behindID)
        var read = 0
        do {
            try reader.forEachStep("SELECT name FROM places ORDER BY id") { _ in
                read += 1
                if read == 1 { usleep(1_500_000) }
            }
        } catch let error as SQLiteError {
            #expect(error.code == .interrupt, "\(error)")
        }
        #expect(eventually(seconds: 15) { (try? behind.scalarInt("SELECT count(*) FROM places")) == 350 })
        #expect(try reader.scalarInt("SELECT count(*) FROM places WHERE name LIKE 'late %'") == 300)
        #expect(try behind.scalarInt("SELECT count(*) FROM places WHERE id = 350 AND name = 'late 299'") == 1)
        #expect(try behind.scalarInt("SELECT count(*) FROM pragma_quick_check WHERE quick_check = 'ok'") == 1)
    }

    @Test func aSnapshotShorterThanTheReplicasOwnLogIsReadAfresh() throws {
        let cluster = try Cluster(snapshotThreshold: 16)
        let leaderID = try #require(cluster.leader()).node.server.id
        let db = try cluster.open(leaderID)
        try db.execute("CREATE TABLE pages (id INTEGER PRIMARY KEY, body TEXT NOT NULL)")
        let behindID = try #require(cluster.servers.map(\.id).first { $0 != leaderID })
        // About 800 pages of log everywhere, none checkpointed yet (at 1,000 pages).
        let big = String(repeating: "x", count: 2_000)
        for _ in 0..<25 { try db.transaction { for _ in 0..<64 { try db.run("INSERT INTO pages (body) VALUES (?)", big) } } }
        #expect(eventually { (try? cluster.open(behindID).scalarInt("SELECT count(*) FROM pages")) == 1_600 })
        // The replica stops; the others checkpoint (their log starts over, short) and go on
        // more than 64 commands.
        cluster.stop(behindID)
        for _ in 0..<10 { try db.transaction { for _ in 0..<64 { try db.run("INSERT INTO pages (body) VALUES (?)", big) } } }
        for row in 0..<100 { try db.run("INSERT INTO pages (body) VALUES (?)", "small \(row)") }
        // Back, it rebuilds its long log from its own disk, reads it, then is sent the
        // leader's snapshot with a short one.
        try cluster.start(behindID)
        let behind = try cluster.open(behindID)
        _ = try? behind.scalarInt("SELECT count(*) FROM pages")
        // (A replica busy taking its own snapshot refuses the leader's; the leader sends it
        // again 10 s later.)
        #expect(eventually(seconds: 30) { (try? behind.scalarInt("SELECT count(*) FROM pages")) == 2_340 })
        #expect(try behind.scalarInt("SELECT count(*) FROM pages WHERE body = 'small 99'") == 1)
        #expect(try behind.scalarInt("SELECT count(*) FROM pragma_quick_check WHERE quick_check = 'ok'") == 1)
    }

    @Test func aNewLeaderHasEveryCommitAndAReplicaRebuildsFromItsLog() throws {
        let cluster = try Cluster()
        let first = try #require(cluster.leader()).node.server.id
        do {
            let db = try cluster.open(first)
            try db.execute("CREATE TABLE places (id INTEGER PRIMARY KEY, name TEXT NOT NULL)")
            for row in 0..<300 { try db.run("INSERT INTO places (name) VALUES (?)", "before \(row)") }
        }
        cluster.stop(first)
        let second = try #require(cluster.leader()).node.server.id
        #expect(second != first)
        do {
            let db = try cluster.open(second)
            #expect(try db.scalarInt("SELECT count(*) FROM places") == 300)
            for row in 0..<100 { try db.run("INSERT INTO places (name) VALUES (?)", "after \(row)") }
        }
        // The stopped replica comes back from its own Raft log and catches up.
        try cluster.start(first)
        let back = try cluster.open(first)
        #expect(eventually { (try? back.scalarInt("SELECT count(*) FROM places")) == 400 })
    }

    /// A replica's backup (`sys.backup`) is a plain SQLite file, whole and as of one commit,
    /// from the leader or a follower, taken while the leader goes on committing.
    @Test func aReplicaIsBackedUpToAPlainFileAsOfOneCommitWhileWritesGoOn() throws {
        let cluster = try Cluster()
        let leader = try #require(cluster.leader())
        let leaderID = leader.node.server.id
        let db = try cluster.open(leaderID)
        try db.execute("CREATE TABLE places (id INTEGER PRIMARY KEY, name TEXT NOT NULL, batch INTEGER NOT NULL)")
        let written = Locked<Int>(0)
        let writer = Thread {
            guard let db = try? Database(path: leader.name, shared: leader.file) else { return }
            for batch in 0..<60 {
                do {
                    try db.transaction {
                        for row in 0..<50 { try db.run("INSERT INTO places (name, batch) VALUES (?, ?)", "place \(row)", batch) }
                    }
                } catch {
                    return
                }
                written.withLock { $0 = batch + 1 }
            }
        }
        writer.start()
        #expect(eventually { written.withLock { $0 } >= 5 })
        let followerID = try #require(cluster.servers.map(\.id).first { $0 != leaderID })
        for id in [followerID, leaderID] {
            let path = "\(cluster.folder)/backup-\(id).sqlite"
            let bytes = try DatabaseBackup.write(from: try cluster.open(id), to: path)
            let copy = try Database(path: path, readOnly: true)
            #expect(bytes > 0)
            #expect(try copy.scalarInt("SELECT count(*) FROM pragma_quick_check WHERE quick_check = 'ok'") == 1)
            // Whole commits only: every batch it has, all 50 rows of it.
            let rows = try copy.scalarInt("SELECT count(*) FROM places") ?? 0
            let batches = try copy.scalarInt("SELECT count(DISTINCT batch) FROM places") ?? 0
            #expect(rows > 0 && rows == batches * 50, "replica \(id): \(rows) rows in \(batches) batches")
            #expect(throws: BackupError.self) { try DatabaseBackup.write(from: try cluster.open(id), to: path) }
        }
        #expect(eventually(seconds: 30) { written.withLock { $0 } == 60 })
    }
}
