import Bus
import CRaft
import Dispatch
import Foundation
import Synchronization

/// One voter of a Raft cluster: its id (1 and up, the same on every host) and the host:port
/// its replication listens on.
public struct RaftServer: Sendable, Equatable {
    public let id: UInt64
    public let address: String

    public init(id: UInt64, address: String) {
        self.id = id
        self.address = address
    }
}

/// A node's part in its cluster, as `RaftNode.status` reports it.
public enum RaftRole: String, Sendable, CaseIterable {
    case follower, candidate, leader
    /// Not started, or stopping.
    case unavailable
}

/// What a node knows of its cluster, refreshed by its loop every few milliseconds.
public struct RaftStatus: Sendable, Equatable {
    public var role: RaftRole = .unavailable
    public var term: UInt64 = 0
    /// The leader this node knows of, if any (itself when it leads).
    public var leaderID: UInt64 = 0
    public var leaderAddress: String?
    /// The highest entry known to be held by a majority.
    public var commitIndex: UInt64 = 0
    /// The highest entry applied here.
    public var appliedIndex: UInt64 = 0
    /// The highest entry in this node's log.
    public var lastIndex: UInt64 = 0
    /// A leader that has applied every entry of earlier terms (its barrier is through), so
    /// what it writes starts from everything committed before it.
    public var isReadyLeader = false
    /// When a follower last heard from its leader (`monotonicNanos`), so what it has applied is
    /// about this old, give or take a heartbeat; nil unless it follows a known leader whose log
    /// it has matched in this term (its commit index moved on under that leader: a replica
    /// restarted, wiped or cut off has not yet) and has applied all it knows committed.
    public var leaderContact: UInt64?
    /// When a follower last heard from its leader (`monotonicNanos`), caught up or not; nil
    /// unless it follows a known leader.
    public var leaderHeard: UInt64?

    public init() {}
}

/// What a Raft node's commands are applied to. Called on the node's loop thread, in log order,
/// the same commands on every node.
public protocol RaftStateMachine: AnyObject, Sendable {
    /// Applies one committed command; the result goes to the leader's `submit` that made it.
    /// A command that throws is not counted as applied: libraft applies it again after the
    /// next commit (it never skips one).
    func apply(_ command: UnsafeRawBufferPointer) throws(ReplicationError) -> Int
    /// The whole state, for a snapshot (so the log before it can go).
    func snapshot() throws(ReplicationError) -> [UInt8]
    /// Replaces the whole state with a snapshot's.
    func restore(_ snapshot: UnsafeRawBufferPointer) throws(ReplicationError)
}

/// Why a replicated operation did not happen.
public struct ReplicationError: Error, Sendable, CustomStringConvertible {
    public let message: String
    /// A handover named a replica that is not another voter.
    public let isBadTarget: Bool
    public init(_ message: String, isBadTarget: Bool = false) {
        self.message = message
        self.isBadTarget = isBadTarget
    }
    public var description: String { message }
}

/// A Raft node: libraft on its own libuv loop thread, its log and snapshots in a directory, its
/// replication on a TCP port of its own. Owns every C handle it made and frees them after the
/// loop has stopped. Other threads reach it only through messages to the loop (`submit`).
public final class RaftNode: @unchecked Sendable {
    /// This node's id and address.
    public let server: RaftServer
    private let loop: UnsafeMutablePointer<uv_loop_t>
    private let raft: UnsafeMutablePointer<raft>
    private let io: UnsafeMutablePointer<raft_io>
    private var transport: NoDelayTransport?
    private let fsm: UnsafeMutablePointer<raft_fsm>
    private let wake: UnsafeMutablePointer<uv_async_t>
    private let timer: UnsafeMutablePointer<uv_timer_t>
    /// Handover requests, each kept as long as the node: libraft 0.15 may still read one's
    /// send part after calling back (fixed upstream in 0.18), so none is freed before the loop
    /// has ended. Loop-thread state, as is whether a handover is under way.
    fileprivate var handovers: [UnsafeMutablePointer<raft_transfer>] = []
    fileprivate var handoverInFlight = false
    /// Not retained: the machine owns its node.
    fileprivate unowned let machine: any RaftStateMachine
    fileprivate let logger: Logger
    /// Work for the loop thread, posted by `post` and run on the next wake.
    private let inbox = Mutex<[@Sendable (RaftNode) -> Void]>([])
    private let latest = Mutex(RaftStatus())
    private let readyLeader = Atomic<Bool>(false)
    private let stopping = Atomic<Bool>(false)
    /// Loop-thread state: the term whose barrier is through, and whether one is in flight.
    fileprivate var readyTerm: UInt64 = 0
    fileprivate var barrierInFlight = false
    /// Loop-thread state: the leader this node follows, in which term, its commit index when it
    /// began following, and whether that has moved on since (its log matched the leader's).
    private var followed: (leader: UInt64, term: UInt64, commitAtStart: UInt64, matched: Bool) = (0, 0, 0, false)
    private var thread: WorkerThread?
    /// Whether the loop thread was started (else `deinit` only frees the memory: a node that
    /// failed to start leaves what libuv and libraft made behind, as its process is ending).
    private var running = false

    /// Starts a node of the cluster `servers` (which lists this one): bootstraps the directory
    /// the first time, then loads its log and snapshot and joins in. `electionMilliseconds` is
    /// the base election timeout (a leader that hears no majority for that long steps down).
    public init(
        id: UInt64, servers: [RaftServer], bind: String? = nil, dial: (@Sendable (UInt64) -> String?)? = nil, directory: String,
        machine: RaftStateMachine, logger: Logger,
        electionMilliseconds: UInt32 = 1000, heartbeatMilliseconds: UInt32 = 100, snapshotThreshold: UInt32 = 1024
    ) throws(ReplicationError) {
        guard let me = servers.first(where: { $0.id == id }) else { throw ReplicationError("node \(id) is not one of the cluster's servers") }
        server = me
        self.machine = machine
        self.logger = logger
        loop = .allocate(capacity: 1)
        raft = .allocate(capacity: 1)
        io = .allocate(capacity: 1)
        fsm = .allocate(capacity: 1)
        wake = .allocate(capacity: 1)
        timer = .allocate(capacity: 1)
        loop.initialize(to: uv_loop_t())
        raft.initialize(to: CRaft.raft())
        io.initialize(to: raft_io())
        wake.initialize(to: uv_async_t())
        timer.initialize(to: uv_timer_t())
        fsm.initialize(to: raft_fsm())

        do {
            try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        } catch {
            throw ReplicationError("cannot make the Raft directory \(directory): \(error)")
        }
        // libuv writes to its sockets with write(2): a peer that went away would raise SIGPIPE,
        // whose default ends the process. The error comes back from the write instead.
        signal(SIGPIPE, SIG_IGN)
        var code = uv_loop_init(loop)
        guard code == 0 else { throw ReplicationError("uv_loop_init: \(String(cString: uv_strerror(code)))") }
        let transport = try NoDelayTransport(loop: loop, bind: bind, dial: dial)
        self.transport = transport
        code = raft_uv_init(io, loop, directory, transport.outer)
        guard code == 0 else { throw ReplicationError("raft_uv_init \(directory): \(RaftNode.message(io))") }
        // libraft learns that a link ended only when a write to it fails, and that message is
        // lost; it dials again after this delay (1 s by default, a whole election round).
        raft_uv_set_connect_retry_delay(io, 100)
        fsm.pointee.version = 1
        fsm.pointee.data = Unmanaged.passUnretained(self).toOpaque()
        fsm.pointee.apply = { fsm, buffer, result in
            guard let fsm, let buffer, let data = fsm.pointee.data else { return RAFT_INVALID }
            let machine = Unmanaged<RaftNode>.fromOpaque(data).takeUnretainedValue().machine
            guard let outcome = try? machine.apply(UnsafeRawBufferPointer(start: buffer.pointee.base, count: buffer.pointee.len)) else {
                return RAFT_IOERR
            }
            result?.pointee = UnsafeMutableRawPointer(bitPattern: outcome)
            return 0
        }
        fsm.pointee.snapshot = { fsm, buffers, count in
            guard let fsm, let buffers, let count, let data = fsm.pointee.data else { return RAFT_INVALID }
            let machine = Unmanaged<RaftNode>.fromOpaque(data).takeUnretainedValue().machine
            guard let bytes = try? machine.snapshot() else { return RAFT_IOERR }
            guard let base = raft_malloc(max(1, bytes.count)), let array = raft_malloc(MemoryLayout<raft_buffer>.stride) else { return RAFT_NOMEM }
            bytes.withUnsafeBytes { base.copyMemory(from: $0.baseAddress!, byteCount: bytes.count) }
            let list = array.bindMemory(to: raft_buffer.self, capacity: 1)
            list.initialize(to: raft_buffer(base: base, len: bytes.count))
            buffers.pointee = list
            count.pointee = 1
            return 0
        }
        fsm.pointee.restore = { fsm, buffer in
            guard let fsm, let buffer, let data = fsm.pointee.data else { return RAFT_INVALID }
            let machine = Unmanaged<RaftNode>.fromOpaque(data).takeUnretainedValue().machine
            // The snapshot's memory is ours once restored; on failure libraft frees it.
            do {
                try machine.restore(UnsafeRawBufferPointer(start: buffer.pointee.base, count: buffer.pointee.len))
                raft_free(buffer.pointee.base)
                return 0
            } catch {
                return RAFT_IOERR
            }
        }
        code = raft_init(raft, io, fsm, id, me.address)
        guard code == 0 else { throw ReplicationError("raft_init: \(RaftNode.message(raft))") }
        raft.pointee.data = Unmanaged.passUnretained(self).toOpaque()
        raft_set_election_timeout(raft, electionMilliseconds)
        raft_set_heartbeat_timeout(raft, heartbeatMilliseconds)
        raft_set_snapshot_threshold(raft, snapshotThreshold)
        raft_set_snapshot_trailing(raft, max(64, snapshotThreshold / 4))
        raft_set_pre_vote(raft, true)
        // A follower busy taking its own snapshot refuses one sent to it without a word, and the
        // leader waits this long before sending again (libraft's default is 30 s).
        raft_set_install_snapshot_timeout(raft, 10_000)

        var configuration = raft_configuration()
        raft_configuration_init(&configuration)
        defer { raft_configuration_close(&configuration) }
        for server in servers {
            code = raft_configuration_add(&configuration, server.id, server.address, RAFT_VOTER)
            guard code == 0 else { throw ReplicationError("raft_configuration_add \(server.address): \(String(cString: raft_strerror(code)))") }
        }
        code = raft_bootstrap(raft, &configuration)
        guard code == 0 || code == RAFT_CANTBOOTSTRAP else { throw ReplicationError("raft_bootstrap: \(RaftNode.message(raft))") }

        wake.pointee.data = Unmanaged.passUnretained(self).toOpaque()
        uv_async_init(loop, wake) { handle in
            guard let handle, let data = handle.pointee.data else { return }
            Unmanaged<RaftNode>.fromOpaque(data).takeUnretainedValue().runInbox()
        }
        timer.pointee.data = Unmanaged.passUnretained(self).toOpaque()
        uv_timer_init(loop, timer)
        uv_timer_start(
            timer,
            { handle in
                guard let handle, let data = handle.pointee.data else { return }
                Unmanaged<RaftNode>.fromOpaque(data).takeUnretainedValue().refresh()
            }, 10, 10)
        code = raft_start(raft)
        guard code == 0 else { throw ReplicationError("raft_start: \(RaftNode.message(raft))") }
        nonisolated(unsafe) let loop = loop  // Run by the loop thread alone from here on.
        thread = WorkerThread(name: "raft-\(id)") {
            uv_run(loop, UV_RUN_DEFAULT)
        }
        running = true
    }

    deinit {
        if running {
            stop()
            // The loop has stopped: libraft's I/O and transport free what they hold, then the loop.
            raft_uv_close(io)
            transport?.release()
            uv_run(loop, UV_RUN_DEFAULT)
            uv_loop_close(loop)
        }
        for pointer in [
            UnsafeMutableRawPointer(loop), UnsafeMutableRawPointer(raft), UnsafeMutableRawPointer(io),
            UnsafeMutableRawPointer(fsm), UnsafeMutableRawPointer(wake), UnsafeMutableRawPointer(timer),
        ] + handovers.map { UnsafeMutableRawPointer($0) } {
            pointer.deallocate()
        }
    }

    /// The node's view of its cluster, at most 10 ms old.
    public var status: RaftStatus { latest.withLock { $0 } }

    /// `status.isReadyLeader`, without copying the rest: asked before every request and write.
    public var isReadyLeader: Bool { readyLeader.load(ordering: .relaxed) }

    /// Appends `command` to the log and waits until it is applied here (`RaftStateMachine.apply`'s
    /// result), or throws: not the leader, leadership lost before the command committed (it may
    /// still commit later), or stopping. libraft always answers one of those, so this waits for
    /// it, saying in the log each `sayingEvery` that it still does.
    public func submit(_ command: [UInt8], sayingEvery: Duration) throws(ReplicationError) -> Int {
        let done = Completion()
        let box = Unmanaged.passRetained(done)
        let posted = post { node in
            guard let base = raft_malloc(max(1, command.count)) else { return box.takeRetainedValue().finish(.failure(ReplicationError("out of memory"))) }
            command.withUnsafeBytes { base.copyMemory(from: $0.baseAddress!, byteCount: command.count) }
            var buffer = raft_buffer(base: base, len: command.count)
            let request = UnsafeMutablePointer<raft_apply>.allocate(capacity: 1)
            request.initialize(to: raft_apply())
            request.pointee.data = box.toOpaque()
            let code = raft_apply(node.raft, request, &buffer, 1) { request, status, result in
                guard let request, let data = request.pointee.data else { return }
                let done = Unmanaged<Completion>.fromOpaque(data).takeRetainedValue()
                request.deallocate()
                if status == 0 {
                    done.finish(.success(Int(bitPattern: result)))
                } else {
                    done.finish(.failure(ReplicationError(RaftNode.refusal(status))))
                }
            }
            if code != 0 {
                raft_free(base)
                request.deallocate()
                box.takeRetainedValue().finish(.failure(ReplicationError(RaftNode.refusal(code))))
            }
        }
        guard posted else {
            box.release()
            throw ReplicationError(RaftNode.refusal(RAFT_SHUTDOWN))
        }
        while true {
            if let result = done.wait(sayingEvery) { return try result.get() }
            logger.warn("a commit still waits for a majority", ["waited_at_least": "\(sayingEvery)"])
        }
    }

    /// Hands leadership to voter `id` (0: the most up-to-date follower), for an operator who
    /// is about to stop this host. Waits until libraft says it is over (the target leads, or an
    /// election timeout passed) and answers the leader then; throws when this node does not
    /// lead or `id` is not another voter.
    public func transfer(to id: UInt64) throws(ReplicationError) -> UInt64 {
        let done = Completion()
        let box = Unmanaged.passRetained(done)
        let posted = post { node in
            let done = box.takeRetainedValue()
            guard !node.handoverInFlight else { return done.finish(.failure(ReplicationError("a handover is under way already"))) }
            let request = UnsafeMutablePointer<raft_transfer>.allocate(capacity: 1)
            request.initialize(to: raft_transfer())
            node.handovers.append(request)
            let context = Unmanaged.passRetained(LoopContext(node: node, done))
            request.pointee.data = context.toOpaque()
            let code = raft_transfer(node.raft, request, id) { request in
                guard let request, let data = request.pointee.data else { return }
                request.pointee.data = nil
                // The request itself stays (see `handovers`).
                let context = Unmanaged<LoopContext<Completion>>.fromOpaque(data).takeRetainedValue()
                context.node.handoverInFlight = false
                context.value.finish(.success(0))
            }
            if code != 0 {
                request.pointee.data = nil
                context.release()
                done.finish(.failure(ReplicationError(RaftNode.refusal(code), isBadTarget: code == RAFT_BADID)))
            } else {
                node.handoverInFlight = true
            }
        }
        guard posted else {
            box.release()
            throw ReplicationError(RaftNode.refusal(RAFT_SHUTDOWN))
        }
        // libraft answers within an election timeout (one second); ten are waited for.
        guard let result = done.wait(.seconds(10)) else { throw ReplicationError("the handover had no answer within 10 s") }
        _ = try result.get()
        // The status the loop copies lags by up to 10 ms.
        usleep(20_000)
        return status.leaderID
    }

    /// Stops the node: closes Raft (failing what is in flight) and joins the loop thread. Later
    /// calls do nothing.
    public func stop() {
        guard running else { return }
        // The last work the loop takes: no post comes after it (the flag is set under the same lock).
        let first = inbox.withLock { inbox -> Bool in
            guard !stopping.exchange(true, ordering: .sequentiallyConsistent) else { return false }
            inbox.append { node in
                uv_timer_stop(node.timer)
                raft_close(node.raft) { raft in
                    guard let raft, let data = raft.pointee.data else { return }
                    let node = Unmanaged<RaftNode>.fromOpaque(data).takeUnretainedValue()
                    uv_close(UnsafeMutableRawPointer(node.wake).assumingMemoryBound(to: uv_handle_t.self), nil)
                    uv_close(UnsafeMutableRawPointer(node.timer).assumingMemoryBound(to: uv_handle_t.self), nil)
                }
            }
            uv_async_send(wake)
            return true
        }
        guard first else { return }
        thread?.join()
        readyLeader.store(false, ordering: .relaxed)
        latest.withLock {
            $0.role = .unavailable
            $0.isReadyLeader = false
        }
    }

    /// Runs `work` on the loop thread; false (and nothing run) once the node is stopping. The
    /// wake is sent under the inbox's lock, so never after the stop closed its handle.
    private func post(_ work: @escaping @Sendable (RaftNode) -> Void) -> Bool {
        inbox.withLock { inbox in
            guard !stopping.load(ordering: .sequentiallyConsistent) else { return false }
            inbox.append(work)
            uv_async_send(wake)
            return true
        }
    }

    private func runInbox() {
        let work = inbox.withLock { inbox in
            defer { inbox.removeAll() }
            return inbox
        }
        for item in work { item(self) }
        refresh()
    }

    /// Copies what other threads read (`status`), and starts a new leader's barrier.
    private func refresh() {
        var status = RaftStatus()
        let state = raft_state(raft)
        status.role =
            switch Int32(state) {
            case Int32(RAFT_LEADER): .leader
            case Int32(RAFT_CANDIDATE): .candidate
            case Int32(RAFT_FOLLOWER): .follower
            default: .unavailable
            }
        var leaderID: raft_id = 0
        var address: UnsafePointer<CChar>?
        raft_leader(raft, &leaderID, &address)
        status.leaderID = leaderID
        status.leaderAddress = address.map { String(cString: $0) }
        status.term = raft.pointee.current_term
        status.commitIndex = raft.pointee.commit_index
        status.appliedIndex = raft_last_applied(raft)
        status.lastIndex = raft_last_index(raft)
        if status.role == .leader && readyTerm != status.term && !barrierInFlight {
            startBarrier(term: status.term)
        }
        status.isReadyLeader = status.role == .leader && readyTerm == status.term
        if status.role == .follower && leaderID != 0 {
            if leaderID != followed.leader || status.term != followed.term {
                // From the commit index known before this leader was (libraft may learn both
                // from one message): a log matched moves it on.
                followed = (leaderID, status.term, latest.withLock { $0.commitIndex }, false)
            }
            if status.commitIndex > followed.commitAtStart { followed.matched = true }
        } else {
            followed = (0, 0, 0, false)
        }
        if status.role == .follower && leaderID != 0, let time = raft.pointee.io.pointee.time {
            // libraft restarts a follower's election timer at each message from its leader.
            let now = time(raft.pointee.io)
            let start = raft.pointee.election_timer_start
            status.leaderHeard = monotonicNanos() &- (now > start ? now - start : 0) &* 1_000_000
            if followed.matched && status.appliedIndex >= status.commitIndex { status.leaderContact = status.leaderHeard }
        }
        readyLeader.store(status.isReadyLeader, ordering: .relaxed)
        let before = latest.withLock { previous in
            defer { previous = status }
            return previous
        }
        if before.role != status.role || before.leaderID != status.leaderID {
            logger.info("raft role", ["role": status.role.rawValue, "term": status.term, "leader": status.leaderID, "commit": status.commitIndex])
        }
    }

    /// A new leader's barrier: once through, every entry of earlier terms is applied here.
    private func startBarrier(term: UInt64) {
        let request = UnsafeMutablePointer<raft_barrier>.allocate(capacity: 1)
        request.initialize(to: raft_barrier())
        let context = Unmanaged.passRetained(LoopContext(node: self, term))
        request.pointee.data = context.toOpaque()
        barrierInFlight = true
        let code = raft_barrier(raft, request) { request, status in
            guard let request, let data = request.pointee.data else { return }
            let context = Unmanaged<LoopContext<UInt64>>.fromOpaque(data).takeRetainedValue()
            request.deallocate()
            // Only flags: libraft calls back from inside a change of role, where starting
            // another request would touch the leader's state it is freeing. The timer does the rest.
            context.node.barrierInFlight = false
            if status == 0 { context.node.readyTerm = context.value }
        }
        if code != 0 {
            context.release()
            request.deallocate()
            barrierInFlight = false
        }
    }

    private static func message(_ raft: UnsafeMutablePointer<raft>) -> String {
        String(cString: raft_errmsg(raft))
    }

    private static func message(_ io: UnsafeMutablePointer<raft_io>) -> String {
        withUnsafeBytes(of: io.pointee.errmsg) { String(decoding: $0.prefix(while: { $0 != 0 }), as: UTF8.self) }
    }

    private static func refusal(_ code: Int32) -> String {
        switch code {
        case RAFT_NOTLEADER: "not the leader"
        case RAFT_BADID: "no other voter has that id"
        case RAFT_NOTFOUND: "no follower to hand leadership to"
        case RAFT_LEADERSHIPLOST: "leadership lost before the write was committed (it may still be)"
        case RAFT_SHUTDOWN, RAFT_CANCELED: "the replica is stopping"
        default: String(cString: raft_strerror(code))
        }
    }
}

/// A submit's result, handed from the loop thread to the waiting one.
private final class Completion: @unchecked Sendable {
    private let signal = DispatchSemaphore(value: 0)
    private let result = Mutex<Result<Int, ReplicationError>?>(nil)

    func finish(_ outcome: Result<Int, ReplicationError>) {
        result.withLock { $0 = outcome }
        signal.signal()
    }

    /// The result, or nil when none came within `timeout`.
    func wait(_ timeout: Duration) -> Result<Int, ReplicationError>? {
        let (seconds, attoseconds) = timeout.components
        let nanoseconds = Int(seconds) * 1_000_000_000 + Int(attoseconds / 1_000_000_000)
        guard signal.wait(timeout: .now() + .nanoseconds(nanoseconds)) == .success else { return nil }
        return result.withLock { $0 ?? .failure(ReplicationError("no result")) }
    }
}

/// What a libraft callback needs: the node, and what its request was for (a handover's
/// waiter, a barrier's term).
private final class LoopContext<Value> {
    unowned let node: RaftNode
    let value: Value
    init(node: RaftNode, _ value: Value) {
        self.node = node
        self.value = value
    }
}
