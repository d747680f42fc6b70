import Bus
import Foundation

// The `sys.*` requests every service answers (ServiceKit's runtime), and catching up with a
// publisher: the bodies of `sys.replay` and `sys.snapshot`, which every reliable subscriber asks.

/// The paging of the `sys.*` requests every service answers besides its own (`Methods.System`).
public enum SystemRequests {
    /// The page size of `replay` and `snapshot` when a request names none, and the bounds it is clamped to.
    public static let batch = PageLimit(default: 1_000, max: 10_000)
}

/// What `sys.ping` answers: `{"service":"catalog","pong":true,"time":"…"}`.
public struct PingReply: Codable, Sendable {
    public var service: String
    public var pong = true
    /// The service's clock, ISO-8601 UTC with milliseconds.
    public var time: String

    public init(service: String, time: String) {
        self.service = service
        self.time = time
    }
}

/// The event a publisher sends when it has nothing new (its `seq` is the head), so a
/// subscriber notices what it missed.
public enum SystemEvents {
    public static let heartbeat = "sys.heartbeat"
}

/// The reply of `sys.methods`: the service's own request types (not `sys.*`) with one line each.
public struct MethodList: Codable, Sendable, Equatable {
    /// One request type.
    public struct Method: Codable, Sendable, Equatable {
        public var type: String
        public var description: String

        public init(type: String, description: String) {
            self.type = type
            self.description = description
        }
    }

    public var methods: [Method]

    public init(methods: [Method]) { self.methods = methods }
}

/// `sys.replay`: the events after the subscriber's cursor.
public struct ReplayRequest: Codable, Sendable, Equatable {
    /// Send events with a seq greater than this (0 or more).
    public var after: Int64
    /// At most this many events; default 1000, clamped to 1 … 10 000.
    public var limit: Int?

    public init(after: Int64, limit: Int? = nil) {
        self.after = after
        self.limit = limit
    }
}

/// The reply of `sys.replay`; `count` event frames follow it.
public struct ReplayReply: Codable, Sendable, Equatable {
    /// Names the publisher's outbox history.
    public var epoch: String
    /// The highest seq ever assigned.
    public var head: Int64
    /// The lowest seq still stored; absent when the outbox is empty.
    public var first: Int64?
    /// Events after `after` exist but some were deleted: nothing is sent, rebuild from a snapshot.
    public var trimmed: Bool
    public var count: Int

    public init(epoch: String, head: Int64, first: Int64?, trimmed: Bool, count: Int) {
        self.epoch = epoch
        self.head = head
        self.first = first
        self.trimmed = trimmed
        self.count = count
    }
}

/// `sys.snapshot`: one page of the publisher's state, each item as the event that would create it.
public struct SnapshotRequest: Codable, Sendable, Equatable {
    /// The `next` of the previous page (`SnapshotKey`); absent for the first.
    public var after: String?
    /// Items per page; default 1000, clamped to 1 … 10 000.
    public var limit: Int?

    public init(after: String? = nil, limit: Int? = nil) {
        self.after = after
        self.limit = limit
    }
}

/// The reply of `sys.snapshot`; `count` item frames follow it.
public struct SnapshotReply: Codable, Sendable, Equatable {
    public var epoch: String
    /// The head when the page was read.
    public var seq: Int64
    /// The key of the next page; absent on the last.
    public var next: String?
    public var count: Int

    public init(epoch: String, seq: Int64, next: String?, count: Int) {
        self.epoch = epoch
        self.seq = seq
        self.next = next
        self.count = count
    }
}

/// `sys.backup`: where the service writes a copy of its SQLite file.
public struct BackupRequest: Codable, Sendable, Equatable {
    /// An absolute path, at most 4,095 UTF-8 bytes (`DatabaseBackup.maxPathBytes`), in a folder that exists, naming
    /// a file that does not (a backup never overwrites anything).
    public var to: String

    /// The longest `to` accepted, in UTF-8 bytes (Linux's PATH_MAX less its NUL).

    public init(to: String) { self.to = to }
}

/// The reply of `sys.backup`: the file written and the outbox position it holds.
public struct BackupReply: Codable, Sendable, Equatable {
    /// The service that made the copy.
    public var service: String
    /// The file written (the request's `to`).
    public var file: String
    /// Its size in bytes.
    public var bytes: Int64
    /// The epoch of the outbox in the copy; absent for a service that publishes nothing.
    public var epoch: String?
    /// The outbox head in the copy: the last event whose change the copy holds (0 for none;
    /// absent for a service that publishes nothing).
    public var head: Int64?
    /// How long the copy took, in milliseconds.
    public var milliseconds: Int

    public init(service: String, file: String, bytes: Int64, epoch: String?, head: Int64?, milliseconds: Int) {
        self.service = service
        self.file = file
        self.bytes = bytes
        self.epoch = epoch
        self.head = head
        self.milliseconds = milliseconds
    }
}

/// Where a subscriber is and what it has done, for tests and `sys.stats`.
public struct SubscriberStatus: Sendable, Equatable, Codable {
    public var source: String
    public var epoch: String?
    public var seq: Int64 = 0
    /// The publisher's outbox head as last heard (a live event's or heartbeat's seq, a replay's head).
    public var head: Int64 = 0
    public var applied = 0
    public var replays = 0
    public var snapshots = 0
    public var skipped = 0
    /// Whether a bulk load is under way (its last step, such as building an index, still to come).
    public var bulk = false
    public var lastError: String?

    enum CodingKeys: String, CodingKey {
        case source, epoch, seq, head, applied, replays, snapshots, skipped, bulk
        case lastError = "last_error"
    }

    /// A subscriber to `source` that has heard nothing yet.
    public init(source: String) {
        self.source = source
    }

    /// Events behind the head last heard (0 when caught up, or when a new epoch's head is lower).
    public var lag: Int64 { max(0, head - seq) }
}

/// `sys.stats`: a service's request counters, its outbox's head, where its subscriptions are,
/// and the CURVE handshakes it decided.
public struct ServiceStats: Codable, Sendable {
    /// Where the outbox is: its epoch, last seq and first seq still kept.
    public struct Outbox: Codable, Sendable {
        public var epoch: String
        public var head: Int64
        public var first: Int64?

        public init(epoch: String, head: Int64, first: Int64?) {
            (self.epoch, self.head, self.first) = (epoch, head, first)
        }
    }

    /// CURVE handshakes the ZAP handler decided, when the bus is secured.
    public struct Curve: Codable, Sendable {
        public var admitted: Int
        public var refused: Int

        public init(admitted: Int, refused: Int) {
            (self.admitted, self.refused) = (admitted, refused)
        }
    }

    /// A replicated service's replica: its part in the Raft cluster and how far it has applied.
    public struct Replication: Codable, Sendable, Equatable {
        /// This replica's number (1 and up).
        public var replica: Int
        /// `leader`, `follower`, `candidate` or `unavailable`.
        public var role: String
        /// Whether it leads and has applied everything before its term (it takes writes).
        public var ready: Bool
        public var term: UInt64
        /// The leader's replica number and Raft address, when one is known.
        public var leader: Int?
        public var leaderAddress: String?
        /// The last entry a majority holds, and the last applied here (lag is the difference).
        public var commitIndex: UInt64
        public var appliedIndex: UInt64

        public init(
            replica: Int, role: String, ready: Bool, term: UInt64, leader: Int?, leaderAddress: String?, commitIndex: UInt64, appliedIndex: UInt64
        ) {
            (self.replica, self.role, self.ready, self.term, self.leader) = (replica, role, ready, term, leader)
            (self.leaderAddress, self.commitIndex, self.appliedIndex) = (leaderAddress, commitIndex, appliedIndex)
        }

        enum CodingKeys: String, CodingKey {
            case replica, role, ready, term, leader
            case leaderAddress = "leader_address"
            case commitIndex = "commit_index"
            case appliedIndex = "applied_index"
        }
    }

    public var service: String
    public var server: StatsSnapshot?
    public var outbox: Outbox?
    public var subscriptions: [SubscriberStatus]?
    public var curve: Curve?
    public var replication: Replication?

    public init(
        service: String, server: StatsSnapshot?, outbox: Outbox?, subscriptions: [SubscriberStatus]?, curve: Curve?, replication: Replication? = nil
    ) {
        (self.service, self.server, self.outbox, self.subscriptions, self.curve) = (service, server, outbox, subscriptions, curve)
        self.replication = replication
    }
}

/// `sys.transfer`: the replica a replicated service's leader hands leadership to.
public struct TransferRequest: Codable, Sendable, Equatable {
    /// A replica number (1 and up) other than the leader's; absent: the most up-to-date follower.
    public var to: Int?

    public init(to: Int? = nil) { self.to = to }
}

/// The reply of `sys.transfer`: the replica that leads once the handover is over (the old
/// leader when it did not take).
public struct TransferReply: Codable, Sendable, Equatable {
    public var leader: Int

    public init(leader: Int) { self.leader = leader }
}

// The runtime's params are internal (never a client's), held to no declared shape.
extension TransferRequest: DeclaredShape {}
extension BackupRequest: DeclaredShape {}
extension ReplayRequest: DeclaredShape {}
extension SnapshotRequest: DeclaredShape {}
