import Bus
import CRaft
import Foundation
import Storage
import Synchronization

/// A SQLite database that every replica of a Raft cluster holds, committed only once a majority
/// holds each commit.
///
/// The database lives in dqlite's VFS, in memory. When a connection commits a write, the VFS
/// keeps the new pages (WAL frames) out of sight of every other connection; `committed` takes
/// them (`dqlite_vfs_poll`) and submits them to Raft as one command, and the state machine adds
/// them to the WAL of each replica once Raft has committed them (`dqlite_vfs_apply`). So nothing
/// is visible, on the leader or anywhere, before a majority has it. Raft's log and snapshots on
/// disk are what survives a restart: the database is rebuilt from them at start.
///
/// A command says which state it was made from: how many commands had been applied when its
/// transaction began. Every replica applies the same commands in the same order and skips one
/// whose transaction began before the command applied just ahead of it (a write that raced a
/// change of leader), so all agree without asking; its writer is told to try again.
public final class ReplicatedDatabase: RaftStateMachine, @unchecked Sendable {
    /// The file's name in the VFS (connections open this name with `file`).
    public let name: String
    /// What connections to this database open it with.
    public private(set) var file: SharedFile!
    /// The Raft node (set once started).
    public private(set) var node: RaftNode!
    /// This replica's id (the node's, known before the node is).
    private let id: UInt64
    private let vfs: UnsafeMutablePointer<sqlite3_vfs>
    /// The VFS's name, kept for as long as it is registered (dqlite keeps the pointer, not a copy).
    private let vfsName: UnsafeMutablePointer<CChar>
    private let gate = SQLiteGate()
    private let logger: Logger
    private let slowCommit: Duration
    /// Inside the gate: commands applied to the VFS since the database was empty, and the
    /// nonce of this node's own command in flight, if any.
    private var applied: UInt64 = 0
    private var pendingNonce: UInt64?
    private var nextNonce: UInt64 = 1
    /// Loop thread: WAL pages added since the last checkpoint, and the connection that checkpoints.
    private var pagesSinceCheckpoint = 0
    private var checkpointer: Database?
    private let pageSize = 4096

    /// Registers the VFS, opens the database in it, and starts this node of `servers`, with
    /// its Raft log and snapshots in `directory`. A commit that waits longer than `slowCommit`
    /// for a majority says so in the log, and keeps waiting: libraft always answers. `bind`:
    /// where its Raft port listens, when not at its own address in `servers`; `tunnel`: the
    /// CURVE tunnel its Raft links go through (libraft then listens at its `inside` and dials
    /// its entrances).
    public init(
        name: String, id: UInt64, servers: [RaftServer], bind: String? = nil, tunnel: RaftTunnel? = nil, directory: String, logger: Logger,
        slowCommit: Duration = .seconds(5), electionMilliseconds: UInt32 = 1000, snapshotThreshold: UInt32 = 1024
    ) throws {
        self.name = name
        self.id = id
        self.logger = logger
        self.slowCommit = slowCommit
        let vfsName = strdup("tourbus-replicated-\(id)-\(UInt64.random(in: 0..<UInt64.max))")!
        self.vfsName = vfsName
        vfs = .allocate(capacity: 1)
        vfs.initialize(to: sqlite3_vfs())
        var code = dqlite_vfs_init(vfs, vfsName)
        guard code == 0 else {
            vfs.deallocate()
            free(vfsName)
            throw ReplicationError("dqlite_vfs_init: \(code)")
        }
        code = sqlite3_vfs_register(vfs, 0)
        guard code == 0 else {
            dqlite_vfs_close(vfs)
            vfs.deallocate()
            free(vfsName)
            throw ReplicationError("sqlite3_vfs_register: \(code)")
        }
        file = SharedFile(
            vfs: String(cString: vfsName), gate: gate, mayWrite: { [unowned self] () throws(SQLiteError) in try mayWrite() },
            began: { [unowned self] in applied }
        ) { [unowned self] name, began throws(SQLiteError) in
            try replicate(began: began)
        }
        // The database must exist in the VFS before Raft applies anything to it.
        checkpointer = try Database(path: name, busyTimeoutMilliseconds: 0, shared: file)
        var dial: (@Sendable (UInt64) -> String?)?
        if let tunnel { dial = { tunnel.entrance(for: $0) } }
        node = try RaftNode(
            id: id, servers: servers, bind: tunnel?.inside ?? bind, dial: dial,
            directory: directory, machine: self, logger: logger, electionMilliseconds: electionMilliseconds,
            snapshotThreshold: snapshotThreshold)
    }

    deinit {
        node?.stop()
        checkpointer = nil
        sqlite3_vfs_unregister(vfs)
        dqlite_vfs_close(vfs)
        vfs.deallocate()
        free(vfsName)
    }

    /// Stops replicating (commits fail from now on).
    public func stop() { node?.stop() }

    // MARK: the leader's side

    /// Called inside the gate before a statement that may begin a write: refuses it when this
    /// replica is not the leader that has applied everything before its term, or another
    /// leader's commit waits to be applied (the write would begin before it, and be skipped).
    private func mayWrite() throws(SQLiteError) {
        // Nil until the node is made: its loop may apply before then, never write.
        guard node?.isReadyLeader == true else {
            let status = node?.status ?? RaftStatus()
            let leader = status.leaderAddress.map { "the leader is replica \(status.leaderID), Raft address \($0)" } ?? "no leader is known yet"
            throw SQLiteError.notReplicated("not written: this replica is not the leader (\(leader))")
        }
        guard !gate.commitWaiting else {
            throw SQLiteError.notReplicated("not written: a commit from another leader is being applied here; try again")
        }
    }

    /// Called inside the gate right after a connection committed a write transaction that
    /// began when `began` commands had been applied: submits its pages and waits for them.
    private func replicate(began: UInt64) throws(SQLiteError) {
        var frames: UnsafeMutablePointer<dqlite_vfs_frame>?
        var count: UInt32 = 0
        let code = dqlite_vfs_poll(vfs, name, &frames, &count)
        guard code == 0 else { throw SQLiteError(extendedCode: 10, message: "dqlite_vfs_poll: \(code)", sql: nil) }
        guard let frames, count > 0 else { return }
        let nonce = nextNonce
        nextNonce += 1
        let command = ReplicatedCommit.encode(began: began, origin: id, nonce: nonce, pageSize: pageSize, frames: frames, count: Int(count))
        for index in 0..<Int(count) { sqlite3_free(frames[index].data) }
        sqlite3_free(frames)
        pendingNonce = nonce

        // No deadline: libraft always answers (applied, leadership lost, stopping), and a commit
        // given up here could still be applied later under a write lock released too soon.
        gate.leave()
        let outcome: Result<Int, ReplicationError>
        do {
            outcome = .success(try node.submit(command, sayingEvery: slowCommit))
        } catch {
            outcome = .failure(error)
        }
        gate.enter()
        switch outcome {
        case .success(ReplicatedCommit.applied):
            return
        case .success:
            throw SQLiteError.notReplicated("not committed: the write began before a change made by another leader; try again")
        case .failure(let error):
            if pendingNonce == nonce {
                // Never applied here: release the write lock the poll took, and forget the pages.
                dqlite_vfs_abort(vfs, name)
                pendingNonce = nil
            }
            throw SQLiteError.notReplicated("not committed: \(error.message)")
        }
    }

    // MARK: the state machine (the loop thread)

    public func apply(_ command: UnsafeRawBufferPointer) throws(ReplicationError) -> Int {
        guard let commit = ReplicatedCommit(command, pageSize: pageSize) else {
            logger.error("a replicated command that is not a commit was skipped", ["bytes": command.count])
            return ReplicatedCommit.malformed
        }
        let outcome: Int = try gate.pass { () throws(ReplicationError) -> Int in
            let own = commit.origin == id && commit.nonce == pendingNonce
            guard commit.began == applied else {
                if own {
                    dqlite_vfs_abort(vfs, name)
                    pendingNonce = nil
                }
                return ReplicatedCommit.stale
            }
            if !own {
                // Another leader's commit. The VFS adds its pages for readers to find afresh,
                // which it does only with no transaction open; then, in the same pass of the
                // gate, this node's own commit in flight, if any, loses its write lock (it began
                // before this one and will be skipped).
                awaitNoTransactions()
                if pendingNonce != nil {
                    dqlite_vfs_abort(vfs, name)
                    pendingNonce = nil
                }
            }
            var pageNumbers = commit.pageNumbers
            let code = pageNumbers.withUnsafeMutableBufferPointer { numbers in
                dqlite_vfs_apply(vfs, name, UInt32(numbers.count), numbers.baseAddress, UnsafeMutableRawPointer(mutating: commit.pages.baseAddress))
            }
            // Skipping it would leave this replica apart from the others for good: not counted,
            // libraft applies it again after the next commit (an own commit keeps its lock).
            guard code == 0 else {
                logger.error("dqlite_vfs_apply failed: the commit is applied again after the next one", ["code": code])
                throw ReplicationError("dqlite_vfs_apply: \(code)")
            }
            if own { pendingNonce = nil }
            applied += 1
            return ReplicatedCommit.applied
        }
        if outcome == ReplicatedCommit.applied {
            pagesSinceCheckpoint += commit.pageNumbers.count
            if pagesSinceCheckpoint >= 1000, (try? checkpointer?.checkpointShared(if: { pendingNonce == nil })) == true {
                pagesSinceCheckpoint = 0
            }
        }
        return outcome
    }

    /// Inside the gate: waits for every transaction to close (interrupting those still open after
    /// a second: the Raft loop waits here), saying so each minute it takes.
    private func awaitNoTransactions() {
        while !gate.awaitNoTransactions(seconds: 60, interruptAfter: 1) {
            logger.error("a replicated commit has waited a minute for the transactions open on this replica to close", [:])
        }
    }

    public func snapshot() throws(ReplicationError) -> [UInt8] {
        try gate.pass { () throws(ReplicationError) -> [UInt8] in
            var data: UnsafeMutableRawPointer?
            var size = 0
            let code = dqlite_vfs_snapshot(vfs, name, &data, &size)
            guard code == 0, let data else { throw ReplicationError("dqlite_vfs_snapshot: \(code)") }
            defer { raft_free(data) }  // dqlite 1.11 makes it with raft_malloc
            var bytes = [UInt8]()
            bytes.reserveCapacity(8 + size)
            withUnsafeBytes(of: applied.littleEndian) { bytes.append(contentsOf: $0) }
            bytes.append(contentsOf: UnsafeRawBufferPointer(start: data, count: size))
            return bytes
        }
    }

    public func restore(_ snapshot: UnsafeRawBufferPointer) throws(ReplicationError) {
        do {
            try replace(with: snapshot)
        } catch {
            logger.error("a snapshot was not installed", ["error": error.message, "bytes": snapshot.count])
            throw error
        }
    }

    /// Replaces the database with a snapshot's (`restore`).
    private func replace(with snapshot: UnsafeRawBufferPointer) throws(ReplicationError) {
        guard snapshot.count > 8 else { throw ReplicationError("a snapshot of \(snapshot.count) bytes") }
        try gate.pass { () throws(ReplicationError) in
            let count = snapshot.loadUnaligned(as: UInt64.self).littleEndian
            awaitNoTransactions()
            if pendingNonce != nil { dqlite_vfs_abort(vfs, name) }
            let code = dqlite_vfs_restore(vfs, name, snapshot.baseAddress! + 8, snapshot.count - 8)
            guard code == 0 else { throw ReplicationError("dqlite_vfs_restore: \(code)") }
            // dqlite 1.11 leaves the WAL index as it was: every connection must build it anew
            // and drop the pages it cached.
            do { try checkpointer?.forgetWALIndex() } catch { throw ReplicationError("after a restore: \(error)") }
            gate.generation += 1
            applied = count
            pendingNonce = nil
        }
        pagesSinceCheckpoint = 0
    }
}

/// One replicated commit as it travels in the Raft log: little-endian, a header then the page
/// numbers then the pages. Its length is a multiple of 8: libraft 0.15 reads entries of other
/// lengths back from its log misplaced.
struct ReplicatedCommit {
    static let magic: UInt32 = 0x5442_5731  // "TBW1"
    static let headerBytes = 4 + 8 + 8 + 8 + 4 + 4 + 4
    /// `apply`'s results.
    static let applied = 0
    static let stale = 1
    static let malformed = 2

    let began: UInt64
    let origin: UInt64
    let nonce: UInt64
    let pageNumbers: [UInt]
    let pages: UnsafeRawBufferPointer

    /// Reads a command (nil when it is not one); `pages` points into `bytes`.
    init?(_ bytes: UnsafeRawBufferPointer, pageSize: Int) {
        guard bytes.count >= Self.headerBytes, bytes.loadUnaligned(as: UInt32.self).littleEndian == Self.magic else { return nil }
        began = bytes.loadUnaligned(fromByteOffset: 4, as: UInt64.self).littleEndian
        origin = bytes.loadUnaligned(fromByteOffset: 12, as: UInt64.self).littleEndian
        nonce = bytes.loadUnaligned(fromByteOffset: 20, as: UInt64.self).littleEndian
        let size = Int(bytes.loadUnaligned(fromByteOffset: 28, as: UInt32.self).littleEndian)
        let count = Int(bytes.loadUnaligned(fromByteOffset: 32, as: UInt32.self).littleEndian)
        guard size == pageSize, count > 0, bytes.count == Self.headerBytes + count * (8 + size) else { return nil }
        pageNumbers = (0..<count).map { UInt(bytes.loadUnaligned(fromByteOffset: Self.headerBytes + 8 * $0, as: UInt64.self).littleEndian) }
        pages = UnsafeRawBufferPointer(rebasing: bytes[(Self.headerBytes + 8 * count)...])
    }

    static func encode(
        began: UInt64, origin: UInt64, nonce: UInt64, pageSize: Int, frames: UnsafeMutablePointer<dqlite_vfs_frame>, count: Int
    ) -> [UInt8] {
        var bytes = [UInt8]()
        bytes.reserveCapacity(headerBytes + count * (8 + pageSize))
        func put<T: FixedWidthInteger>(_ value: T) { withUnsafeBytes(of: value.littleEndian) { bytes.append(contentsOf: $0) } }
        put(magic)
        put(began)
        put(origin)
        put(nonce)
        put(UInt32(pageSize))
        put(UInt32(count))
        put(UInt32(0))
        for index in 0..<count { put(UInt64(frames[index].page_number)) }
        for index in 0..<count { bytes.append(contentsOf: UnsafeRawBufferPointer(start: frames[index].data, count: pageSize)) }
        return bytes
    }
}
