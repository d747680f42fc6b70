import Bus

/// What a connection holds for its client, in bytes, and how many more calls that leaves room
/// for: the unsent output, a moving estimate of what each reply owed will add, and the pushes
/// kept (the latest of each coalescing key) while the output is at its bound. A class: the
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

    /// Unsent output and what is held for the client stay within this many bytes.
    let maxPendingBytes: Int
    private(set) var output: [UInt8] = []
    private(set) var sent = 0
    /// Recent replies' average size per call (a moving average), to guess what the calls owed will add.
    private var replyEstimate = OutputBudget.firstReplyEstimate
    /// Calls answered since bytes were last written for them (a batch's answers come out together).
    private var answeredUnwritten = 0
    /// Pushes that did not fit under the bound, oldest first, with their coalescing keys.
    private var queuedPushes: [(key: String?, bytes: [UInt8])] = []
    private var queuedPushBytes = 0
    /// More pushes came than a client that does not read may be kept.
    private(set) var overflowed = false

    init(maxPendingBytes: Int) { self.maxPendingBytes = maxPendingBytes }

    /// Unsent output.
    var pending: Int { output.count - sent }

    /// Calls the bound leaves room for: what the connection holds for its client (`held`:
    /// unsent output and replies its framing holds back), with what the `owed` calls are
    /// likely to add (at least one when none is owed and the bound is not reached).
    func callRoom(held: Int, owed: Int) -> Int {
        guard held < maxPendingBytes else { return 0 }
        let budget = maxPendingBytes - held - owed * replyEstimate
        return max(owed == 0 ? 1 : 0, budget / replyEstimate)
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

    /// A push's bytes: written now, between whole replies, or kept while the output is at its
    /// bound (a later push with the same `key` replaces the one kept).
    func push(_ bytes: [UInt8], key: String?) {
        guard !overflowed else { return }
        if queuedPushes.isEmpty && pending + bytes.count <= maxPendingBytes {
            append(bytes)
            return
        }
        if let key, let index = queuedPushes.firstIndex(where: { $0.key == key }) {
            queuedPushBytes -= queuedPushes[index].bytes.count
            queuedPushes.remove(at: index)
        }
        queuedPushes.append((key, bytes))
        queuedPushBytes += bytes.count
        if queuedPushes.count > OutputBudget.maxQueuedPushes || queuedPushBytes > maxPendingBytes {
            overflowed = true
            dropQueuedPushes()
        }
    }

    /// Forgets the pushes kept (the connection no longer hears them).
    func dropQueuedPushes() {
        queuedPushes = []
        queuedPushBytes = 0
    }

    /// The socket took `count` bytes: pushes kept that now fit go out, oldest first, and a
    /// buffer written out is given back rather than kept for the life of the connection.
    func wrote(_ count: Int) {
        sent += count
        if !queuedPushes.isEmpty {
            var taken = 0
            while taken < queuedPushes.count, pending + queuedPushes[taken].bytes.count <= maxPendingBytes {
                append(queuedPushes[taken].bytes)
                queuedPushBytes -= queuedPushes[taken].bytes.count
                taken += 1
            }
            queuedPushes.removeFirst(taken)
        }
        if sent == output.count {
            output.removeAll(keepingCapacity: output.capacity <= OutputBudget.keptBuffer)
            sent = 0
        } else if sent > 1 << 20 {
            output.removeFirst(sent)
            sent = 0
        }
    }
}
