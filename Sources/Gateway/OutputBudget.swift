import Bus
import Contracts
import Synchronization

/// Bytes held for clients across the gateway, against one bound: pushes waiting
/// (`--max-queued-push-bytes`), or the replies connections hold and are owed
/// (`--max-unsent-reply-bytes`). Past it, a connection that holds more than its fair share
/// (the bound over the connections holding any) gives way: it sheds pushes, or reads no more
/// calls until its client takes some.
final class SharedOutput: Sendable {
    let budget: Int
    private let total = Atomic<Int>(0)
    private let holders = Atomic<Int>(0)

    init(budget: Int) { self.budget = max(1, budget) }

    /// Bytes held, across the gateway.
    var waiting: Int { total.load(ordering: .relaxed) }

    /// What one connection may hold once the gateway is over its bound.
    var fairShare: Int { budget / max(1, holders.load(ordering: .relaxed)) }

    var isOver: Bool { total.load(ordering: .relaxed) > budget }

    func add(_ bytes: Int, firstOfItsConnection: Bool) {
        total.add(bytes, ordering: .relaxed)
        if firstOfItsConnection { holders.add(1, ordering: .relaxed) }
    }

    func remove(_ bytes: Int, lastOfItsConnection: Bool) {
        total.subtract(bytes, ordering: .relaxed)
        if lastOfItsConnection { holders.subtract(1, ordering: .relaxed) }
    }

    /// A connection's claim changes from `old` bytes to `new`.
    func claim(from old: Int, to new: Int) {
        guard old != new else { return }
        if new > old { add(new - old, firstOfItsConnection: old == 0) } else { remove(old - new, lastOfItsConnection: new == 0) }
    }

    /// What a connection that claims `own` bytes may claim: what the others leave of the
    /// bound, and at least its fair share (counting itself).
    func allowance(own: Int) -> Int {
        let holding = holders.load(ordering: .relaxed) + (own == 0 ? 1 : 0)
        return max(budget - (waiting - own), budget / max(1, holding))
    }
}

/// The gateway's two bounds on what it holds for clients, shared by every connection.
struct OutputMemory: Sendable {
    let pushes: SharedOutput
    let replies: SharedOutput

    init(limits: GatewayLimits) {
        pushes = SharedOutput(budget: limits.maxQueuedPushBytes)
        replies = SharedOutput(budget: limits.maxUnsentReplyBytes)
    }
}

/// How a connection's framing writes a push (one message, by topic name when the pattern is
/// nil), and the notice of pushes it shed.
struct PushWriter {
    var message: (_ push: Push, _ pattern: String?) -> [UInt8]
    var shed: (_ count: Int) -> [UInt8]
}

/// What a connection holds for its client, in bytes, and how many more calls that leaves room
/// for: the unsent output, a moving estimate of what each reply owed will add, and the pushes
/// waiting (the latest of each coalescing key). A push waits as itself, its body shared with
/// every connection it waits for, and is written one message at a time (one per pattern it
/// matches, as Redis does) while the unsent output is under `pushWindow`. A class: the
/// session reads it on every request, and a struct in a class's property is copied to be read.
final class OutputBudget {
    /// What a reply is assumed to weigh before any was written: a new connection starts with
    /// a few calls in flight (16 at the default bound) and widens to the window as small
    /// replies come back.
    static let firstReplyEstimate = 64 << 10
    /// Capacity of an emptied buffer that is kept for the next bytes; a larger one is freed.
    static let keptBuffer = 4 << 10
    /// Pushes kept for a client whose unsent output is at its bound; past this, or past that
    /// bound in bytes, the connection is to be closed (`overflowed`).
    static let maxQueuedPushes = 1_024
    /// Pushes are written into the unsent output only while it holds less than this: the rest
    /// wait as pushes, not as their messages' bytes.
    static let pushWindow = 64 << 10
    /// What a waiting push is counted as beside its body and names.
    static let pushOverhead = 64

    /// A push waiting for room, and the messages of it still to write (nil: by topic name).
    private struct Waiting {
        var push: Push
        var messages: ArraySlice<String?>
        var key: String?
        var weight: Int
    }

    /// Unsent output and what is held for the client stay within this many bytes.
    let maxPendingBytes: Int
    private(set) var output: [UInt8] = []
    private(set) var sent = 0
    /// Recent replies' average size per call (a moving average), to guess what the calls owed will add.
    private var replyEstimate = OutputBudget.firstReplyEstimate
    /// Calls answered since bytes were last written for them (a batch's answers come out together).
    private var answeredUnwritten = 0
    /// Pushes waiting, oldest first.
    private var waiting: [Waiting] = []
    private var waitingBytes = 0
    /// Pushes shed since the client was last told.
    private(set) var shedUntold = 0
    /// More pushes came than a client that does not read may be kept.
    private(set) var overflowed = false
    private let memory: SharedOutput
    private let replies: SharedOutput
    /// What this connection last claimed of `replies`.
    private var claimed = 0

    init(maxPendingBytes: Int, memory: OutputMemory = OutputMemory(limits: GatewayLimits())) {
        self.maxPendingBytes = maxPendingBytes
        self.memory = memory.pushes
        replies = memory.replies
    }

    deinit {
        dropQueuedPushes()
        replies.claim(from: claimed, to: 0)
    }

    /// Pushes waiting.
    var waitingPushes: Int { waiting.count }

    /// Whether pushes, or the notice of pushes shed, wait to be written.
    var hasPushesToWrite: Bool { !waiting.isEmpty || shedUntold > 0 }

    /// Unsent output.
    var pending: Int { output.count - sent }

    /// Calls the bound leaves room for: what the connection holds for its client (`held`:
    /// unsent output and replies its framing holds back), with what the `owed` calls are
    /// likely to add (at least one when none is owed and the bound is not reached). That sum
    /// is the connection's claim on the gateway's bound for replies: past that bound, a
    /// connection over its fair share has room for none.
    func callRoom(held: Int, owed: Int) -> Int {
        let claim = held + owed * replyEstimate
        replies.claim(from: claimed, to: claim)
        claimed = claim
        let bound = min(maxPendingBytes, replies.allowance(own: claim))
        guard held < bound else { return 0 }
        return max(owed == 0 ? 1 : 0, (bound - claim) / replyEstimate)
    }

    /// Whether a connection that holds `held` bytes for its client is at its bound: its own
    /// (`maxPendingBytes`), or past the gateway's bound for replies, its share of that. Calls
    /// read wait then, however small the replies were so far (a reply-size estimate taught
    /// by small replies would otherwise let many large ones run).
    func isFull(held: Int) -> Bool {
        held >= min(maxPendingBytes, replies.allowance(own: claimed))
    }

    /// Bytes to send.
    func append(_ bytes: [UInt8]) {
        guard !bytes.isEmpty else { return }
        output += bytes
    }

    /// A call's answer: the reply bytes it made ready (none while a batch or an earlier reply
    /// holds them), which teach the estimate what a reply weighs.
    func reply(_ bytes: [UInt8]) {
        answeredUnwritten += 1
        if !bytes.isEmpty {
            replyEstimate = max(64, (replyEstimate * 7 + bytes.count / answeredUnwritten) / 8)
            answeredUnwritten = 0
        }
        append(bytes)
    }

    /// A push, to be written as `messages` (nil: by topic name; else once per matching
    /// pattern): written now, between whole replies, or kept while the output is at its window
    /// (a later push with the same `key` replaces the one kept). Past the gateway's bound, a
    /// connection over its fair share sheds its own waiting pushes, oldest coalescable first.
    func push(_ push: Push, messages: [String?], key: String?, writer: PushWriter) {
        guard !overflowed, !messages.isEmpty else { return }
        if let key, let index = waiting.firstIndex(where: { $0.key == key }) {
            release(waiting.remove(at: index).weight)
        }
        let weight = push.body.count + push.topic.utf8.count + push.id.utf8.count + OutputBudget.pushOverhead
        waiting.append(Waiting(push: push, messages: messages[...], key: key, weight: weight))
        waitingBytes += weight
        memory.add(weight, firstOfItsConnection: waiting.count == 1)
        if waiting.count > OutputBudget.maxQueuedPushes || waitingBytes > maxPendingBytes {
            overflowed = true
            dropQueuedPushes()
            return
        }
        if memory.isOver { shedToFairShare() }
        writePushes(writer)
    }

    /// Over the gateway's bound: sheds this connection's waiting pushes, coalescable ones
    /// first (a later one of their kind says as much), then the oldest, down to its fair
    /// share, keeping the newest.
    private func shedToFairShare() {
        let share = memory.fairShare
        while waitingBytes > share, waiting.count > 1 {
            let index = waiting.dropLast().firstIndex { $0.key != nil } ?? 0
            release(waiting.remove(at: index).weight)
            shedUntold += 1
        }
    }

    private func release(_ weight: Int) {
        waitingBytes -= weight
        memory.remove(weight, lastOfItsConnection: waiting.isEmpty)
    }

    /// Writes waiting pushes, one message at a time, while the unsent output is under the
    /// window: first the notice of any shed.
    func writePushes(_ writer: PushWriter) {
        let window = min(maxPendingBytes, OutputBudget.pushWindow)
        if shedUntold > 0, pending < window {
            append(writer.shed(shedUntold))
            shedUntold = 0
        }
        while pending < window, !waiting.isEmpty {
            let pattern = waiting[0].messages.removeFirst()
            append(writer.message(waiting[0].push, pattern))
            if waiting[0].messages.isEmpty {
                let done = waiting.removeFirst()
                release(done.weight)
            }
        }
    }

    /// Forgets the pushes kept (the connection no longer hears them).
    func dropQueuedPushes() {
        guard !waiting.isEmpty else { return }
        memory.remove(waitingBytes, lastOfItsConnection: true)
        waiting = []
        waitingBytes = 0
    }

    /// The socket took `count` bytes (the session then writes waiting pushes), and a buffer
    /// written out is given back rather than kept for the life of the connection.
    func wrote(_ count: Int) {
        sent += count
        if sent == output.count {
            output.removeAll(keepingCapacity: output.capacity <= OutputBudget.keptBuffer)
            sent = 0
        } else if sent > 1 << 20 {
            output.removeFirst(sent)
            sent = 0
        }
    }
}
