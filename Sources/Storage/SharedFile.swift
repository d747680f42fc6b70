import CSQLite

#if canImport(Glibc)
    import Glibc
#endif

/// Lets one thread at a time into SQLite for every connection to one database.
///
/// A replicated database lives in dqlite's VFS, which keeps its pages and locks in plain memory
/// with no locking of its own: dqlite itself calls it from one thread. Our services read on
/// several threads and apply replicated commits on another, so each SQLite call on such a
/// connection (prepare, step, reset, exec, close) runs inside this gate, and so does each call
/// into the VFS from outside SQLite (taking and applying commits). A call waiting for a SQLite
/// lock leaves the gate while it sleeps (`Database`'s busy handler), so a commit being applied
/// can release the lock it waits for.
///
/// The gate also counts the connections with a transaction open (a read holds one across the
/// steps of its rows): dqlite's VFS adds another replica's commit only when none is open
/// (`awaitNoTransactions`), and while such a commit waits, a new transaction waits up to 200 ms
/// before it begins, so that readers coming one after another cannot starve it.
public final class SQLiteGate: @unchecked Sendable {
    private let mutex: UnsafeMutablePointer<pthread_mutex_t>
    /// Inside the gate: the connections with a transaction open, and whether a commit waits for none.
    fileprivate var open: Set<OpaquePointer> = []
    /// Inside the gate: whether a commit waits for the open transactions to close.
    public fileprivate(set) var commitWaiting = false
    /// Inside the gate: bumped when the file's contents were replaced (a snapshot installed);
    /// each connection drops its page cache before its next transaction.
    public var generation = 0
    /// Inside the gate: how many connections have a transaction open.
    public var openTransactions: Int { open.count }

    public init() {
        mutex = .allocate(capacity: 1)
        mutex.initialize(to: pthread_mutex_t())
        pthread_mutex_init(mutex, nil)
    }

    deinit {
        pthread_mutex_destroy(mutex)
        mutex.deallocate()
    }

    /// Waits for the gate. Pair each call with `leave()` on the same thread.
    public func enter() { pthread_mutex_lock(mutex) }

    /// Leaves the gate.
    public func leave() { pthread_mutex_unlock(mutex) }

    /// Inside the gate: returns (inside it) once no connection has a transaction open; new ones
    /// wait meanwhile. Those still open after `interruptAfter` seconds are interrupted (their
    /// statement fails with SQLITE_INTERRUPT): a replica's Raft loop waits here, and must not
    /// wait long for a slow read. False if some stayed open for `seconds` all the same.
    public func awaitNoTransactions(seconds: Double, interruptAfter: Double) -> Bool {
        guard !open.isEmpty else { return true }
        commitWaiting = true
        defer { commitWaiting = false }
        let started = monotonicNanoseconds()
        var interrupted = false
        while !open.isEmpty {
            let waited = Double(monotonicNanoseconds() - started) / 1e9
            guard waited < seconds else { return false }
            if !interrupted && waited >= interruptAfter {
                // Inside the gate no connection can close meanwhile.
                for connection in open { sqlite3_interrupt(connection) }
                interrupted = true
            }
            leave()
            usleep(100)
            enter()
        }
        return true
    }

    /// Inside the gate: returns (inside it) once no commit waits for transactions to close, or
    /// after 200 ms (a thread may hold a transaction open on another connection: it must not
    /// wait for a commit that waits for it).
    func awaitNoWaitingCommit() {
        let deadline = monotonicNanoseconds() + 200_000_000
        while commitWaiting && monotonicNanoseconds() < deadline {
            leave()
            usleep(100)
            enter()
        }
    }

    /// Runs `body` inside the gate.
    public func pass<Result, Failure: Error>(_ body: () throws(Failure) -> Result) throws(Failure) -> Result {
        enter()
        defer { leave() }
        return try body()
    }
}

/// A database file that is not a plain file: the SQLite VFS it lives in, the gate its
/// connections share, and what must happen when one of them commits a write.
///
/// A replicated database's commit is not over when SQLite says so: its pages are held back
/// (no other connection sees them) until a majority of replicas have them. Inside the gate:
/// `mayWrite` is called before a statement that may begin a write transaction, and throws when
/// this replica may not write (it is not the leader); `began` once the transaction holds the
/// write lock, and what it returns is handed to `committed`, called right after a statement
/// ends that transaction. `committed` returns once the commit is visible, or throws when it was not
/// replicated: then the transaction is undone, though SQLite had reported it done.
public struct SharedFile: Sendable {
    /// The VFS the file is opened with.
    public let vfs: String
    /// The gate every connection to the file shares.
    public let gate: SQLiteGate
    /// Refuses a write about to begin, or lets it (called inside the gate).
    public let mayWrite: @Sendable () throws(SQLiteError) -> Void
    /// Marks the start of a write transaction (called inside the gate).
    public let began: @Sendable () -> UInt64
    /// Finishes a commit (called inside the gate, with the file's name and `began`'s mark).
    public let committed: @Sendable (_ name: String, _ began: UInt64) throws(SQLiteError) -> Void

    public init(
        vfs: String, gate: SQLiteGate, mayWrite: @escaping @Sendable () throws(SQLiteError) -> Void, began: @escaping @Sendable () -> UInt64,
        committed: @escaping @Sendable (_ name: String, _ began: UInt64) throws(SQLiteError) -> Void
    ) {
        self.vfs = vfs
        self.gate = gate
        self.mayWrite = mayWrite
        self.began = began
        self.committed = committed
    }
}

/// A connection's link to its shared file: the file, and the mark of the write transaction
/// it has open. Shared by the connection's statements (one thread).
final class SharedConnection {
    let file: SharedFile
    var writeBegan: UInt64?
    /// Whether this connection has a transaction open, as the gate counts it.
    private var counted: OpaquePointer?
    /// The gate's generation this connection's page cache belongs to.
    private var generation = 0
    init(file: SharedFile) { self.file = file }

    /// Inside the gate, after a call that may open or close a transaction (nil: the connection
    /// closed): counts it.
    func settle(_ connection: OpaquePointer?) {
        let open = connection.map { sqlite3_txn_state($0, nil) != SQLITE_TXN_NONE } ?? false
        if let counted, !open {
            file.gate.open.remove(counted)
            self.counted = nil
        } else if counted == nil, open, let connection {
            file.gate.open.insert(connection)
            counted = connection
        }
    }

    /// Inside the gate, before a step: a step that would begin a transaction waits while a
    /// commit waits for transactions to close, and drops its page cache if the file's contents
    /// were replaced since its last one.
    func mayBegin(_ connection: OpaquePointer) {
        guard counted == nil else { return }
        if file.gate.commitWaiting { file.gate.awaitNoWaitingCommit() }
        if generation != file.gate.generation {
            _ = sqlite3_db_release_memory(connection)
            generation = file.gate.generation
        }
    }
}

private func monotonicNanoseconds() -> UInt64 {
    var now = timespec()
    clock_gettime(CLOCK_MONOTONIC, &now)
    return UInt64(now.tv_sec) * 1_000_000_000 + UInt64(now.tv_nsec)
}

/// Where a service's database is, and how its connections open it: a plain file, or a file
/// in a replicated database's VFS.
public struct DatabaseFile: Sendable {
    /// The file's path (or its name in the shared file's VFS).
    public let path: String
    /// The VFS, gate and commit step, when it is not a plain file.
    public let shared: SharedFile?

    public init(path: String, shared: SharedFile? = nil) {
        self.path = path
        self.shared = shared
    }

    /// A new connection to the file.
    public func open(readOnly: Bool = false, busyTimeoutMilliseconds: Int32 = 5000) throws(SQLiteError) -> Database {
        try Database(path: path, readOnly: readOnly, busyTimeoutMilliseconds: busyTimeoutMilliseconds, shared: shared)
    }
}
