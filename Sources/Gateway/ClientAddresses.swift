import Bus
import ServiceCore
import Synchronization

/// A rate with a burst: `capacity` tokens, refilled at `perSecond`.
struct TokenBucket: Sendable {
    let capacity: Double
    let perSecond: Double
    private(set) var tokens: Double
    private var updated: UInt64

    init(capacity: Int, perSecond: Double, now: UInt64) {
        self.capacity = Double(max(1, capacity))
        self.perSecond = perSecond
        tokens = self.capacity
        updated = now
    }

    private mutating func refill(_ now: UInt64) {
        // A clock read before another thread's later update is not an error: nothing elapsed.
        guard now > updated else { return }
        tokens = min(capacity, tokens + Double(now - updated) / 1e9 * perSecond)
        updated = now
    }

    /// Takes one token if there is one.
    mutating func take(now: UInt64) -> Bool {
        refill(now)
        guard tokens >= 1 else { return false }
        tokens -= 1
        return true
    }

    /// Takes `count` tokens whether or not they are there (a debt, at most one burst deep):
    /// nanoseconds until the bucket is out of debt again.
    mutating func charge(_ count: Int, now: UInt64) -> UInt64 {
        refill(now)
        tokens = max(-capacity, tokens - Double(count))
        return tokens >= 0 ? 0 : UInt64(-tokens / perSecond * 1e9) + 1
    }

    /// Nanoseconds until one token is there (0 when there is one).
    mutating func wait(now: UInt64) -> UInt64 {
        refill(now)
        return tokens >= 1 ? 0 : UInt64((1 - tokens) / perSecond * 1e9) + 1
    }

    /// Whether the bucket is full, so forgetting it changes nothing.
    mutating func isFull(now: UInt64) -> Bool {
        refill(now)
        return tokens >= capacity
    }
}

/// What the gateway shares fairly per client address: connections open, the request rate,
/// calls sent on and not yet answered, and the rates of logins and sign-ups (which cost a
/// password hash each).
final class ClientAddresses: Sendable {
    /// What one address is allowed, and has used.
    private struct Entry {
        var connections = 0
        var requests: TokenBucket
        var logins: TokenBucket
        var registrations: TokenBucket
        /// Calls sent on for the address and not yet answered, whatever became of their connections.
        var inFlight = 0
        /// Connections that stopped reading at `maxInFlightPerAddress`, by key: each is woken
        /// once, when the address's calls drain to `inFlightResume`.
        var waiting: [UInt64: @Sendable () -> Void] = [:]
    }

    /// The kind of sign-in a bucket limits.
    enum SignIn { case login, registration }

    private let limits: GatewayLimits
    private let clock: @Sendable () -> UInt64
    private let entries = Mutex<[String: Entry]>([:])
    /// Entries kept at most for addresses with no connection (their buckets still refilling).
    static let maxIdleEntries = 100_000

    init(limits: GatewayLimits, clock: @escaping @Sendable () -> UInt64 = monotonicNanos) {
        self.limits = limits
        self.clock = clock
    }

    private func fresh(_ now: UInt64) -> Entry {
        Entry(
            requests: TokenBucket(capacity: limits.requestsPerSecondPerAddress, perSecond: Double(limits.requestsPerSecondPerAddress), now: now),
            logins: TokenBucket(capacity: limits.loginsPerMinutePerAddress, perSecond: Double(limits.loginsPerMinutePerAddress) / 60, now: now),
            registrations: TokenBucket(
                capacity: limits.registrationsPerMinutePerAddress,
                perSecond: Double(limits.registrationsPerMinutePerAddress) / 60, now: now))
    }

    /// Connections an address may hold once the gateway is nearly full (its last quarter is
    /// kept for addresses with few connections, so a few addresses cannot fill it).
    var nearlyFullShare: Int { max(1, limits.maxConnectionsPerAddress / 8) }

    /// Whether `open` connections in all leave the gateway nearly full.
    func isNearlyFull(_ open: Int) -> Bool { open > limits.maxConnections * 3 / 4 }

    /// Counts a new connection from `address`, or refuses it when the address has its share:
    /// `maxConnectionsPerAddress`, or `nearlyFullShare` when `open` connections in all (this
    /// one included) leave the gateway nearly full.
    /// A trusted proxy's (`exempt`) is counted but never refused: it carries many clients,
    /// each counted under its own address once the proxy names it (`move`).
    func open(_ address: String, total open: Int, exempt: Bool = false) -> Bool {
        let now = clock()
        return entries.withLock { table in admit(address, in: &table, total: open, exempt: exempt, now: now) }
    }

    /// Counts one more connection of `address` in `table` unless it has its share (or is `exempt`).
    private func admit(_ address: String, in table: inout [String: Entry], total open: Int, exempt: Bool, now: UInt64) -> Bool {
        var entry = table[address] ?? fresh(now)
        guard exempt || entry.connections < share(open) else { return false }
        entry.connections += 1
        table[address] = entry
        return true
    }

    /// Connections an address may hold when `open` are open in all.
    private func share(_ open: Int) -> Int {
        isNearlyFull(open) ? min(nearlyFullShare, limits.maxConnectionsPerAddress) : limits.maxConnectionsPerAddress
    }

    /// Counts a connection under `to` instead of `from` (a trusted proxy named its client), or
    /// refuses when `to` has its share with `open` connections in all (never when `to` is the
    /// trusted proxy's own address, `exempt`).
    func move(from: String, to: String, total open: Int, exempt: Bool = false) -> Bool {
        let now = clock()
        return entries.withLock { table in
            guard admit(to, in: &table, total: open, exempt: exempt, now: now) else { return false }
            table[from]?.connections -= 1
            return true
        }
    }

    /// Whether an entry still says something: a connection open, a call in flight, or a sign-in bucket refilling.
    private static func worthKeeping(_ entry: Entry, _ now: UInt64) -> Bool {
        var entry = entry
        return entry.connections > 0 || entry.inFlight > 0 || !entry.logins.isFull(now: now) || !entry.registrations.isFull(now: now)
    }

    /// Takes up to `count` of the room `address` has for calls in flight: the calls it may read.
    /// With none (or while other connections of the address wait for room), `wake` is kept
    /// under `key` and called once the address's calls drain to `inFlightResume`, so a
    /// connection that stops reading here reads again then.
    func takeInFlight(_ address: String, _ count: Int, key: UInt64, wake: @escaping @Sendable () -> Void) -> Int {
        let now = clock()
        return entries.withLock { table in
            var entry = table[address] ?? fresh(now)
            defer { table[address] = entry }
            // While connections wait for room, the others take none either: the waiting go first
            // once the calls drain, instead of watching busy ones take each place freed.
            let taken = entry.waiting.isEmpty ? max(0, min(count, limits.maxInFlightPerAddress - entry.inFlight)) : 0
            entry.inFlight += taken
            if taken == 0 { entry.waiting[key] = wake }
            return taken
        }
    }

    /// Calls in flight of an address at which the connections that stopped reading at
    /// `maxInFlightPerAddress` are woken: a quarter below it, so they wake once per many answers.
    var inFlightResume: Int { limits.maxInFlightPerAddress - max(1, limits.maxInFlightPerAddress / 4) }

    /// `count` calls of `address` were answered, or never sent on (negative: more were read than
    /// taken, as a batch that goes whole). From any thread, whether or not their connection is open.
    func giveInFlight(_ address: String, _ count: Int) {
        guard count != 0 else { return }
        let now = clock()
        let woken: [@Sendable () -> Void] = entries.withLock { table in
            // Nothing to give back to an address with nothing counted.
            guard table[address] != nil || count < 0 else { return [] }
            var entry = table[address] ?? fresh(now)
            defer { table[address] = entry }
            entry.inFlight = max(0, entry.inFlight - count)
            guard entry.inFlight <= inFlightResume, !entry.waiting.isEmpty else { return [] }
            defer { entry.waiting = [:] }
            return Array(entry.waiting.values)
        }
        woken.forEach { $0() }
    }

    /// The connection `key` of `address` closed: it waits for no room any more.
    func stopWaiting(_ address: String, key: UInt64) {
        entries.withLock { table in _ = table[address]?.waiting.removeValue(forKey: key) }
    }

    /// A connection from `address` closed.
    func close(_ address: String) {
        let now = clock()
        entries.withLock { table in
            table[address]?.connections -= 1
            // Forget addresses that have nothing left to remember, now and then.
            if table.count > ClientAddresses.maxIdleEntries / 2 {
                table = table.filter { ClientAddresses.worthKeeping($0.value, now) }
            }
        }
    }

    /// Counts `count` requests read from `address`: nanoseconds its connections should wait
    /// before reading more (0 while it is within its rate).
    func charge(_ address: String, requests count: Int) -> UInt64 {
        let now = clock()
        return entries.withLock { table in
            guard var entry = table[address] else { return 0 }
            let wait = entry.requests.charge(count, now: now)
            table[address] = entry
            return wait
        }
    }

    /// Requests' worth of the address's rate that a refused sign-in costs: 10 ms of it, so an
    /// address is refused at most about 100 times a second before it is read more slowly.
    var refusalCost: Int { max(1, limits.requestsPerSecondPerAddress / 100) }

    /// Charges `address` for a refused sign-in (see `refusalCost`).
    func chargeRefusal(_ address: String) { _ = charge(address, requests: refusalCost) }

    /// Takes a login or sign-up permit for `address`; nil when it has one, else seconds to wait.
    /// An address not yet known when the table is full (of addresses still refilling) is refused.
    func signInPermit(_ address: String, _ kind: SignIn) -> Int? {
        let now = clock()
        return entries.withLock { table in
            if table[address] == nil && table.count >= ClientAddresses.maxIdleEntries {
                table = table.filter { ClientAddresses.worthKeeping($0.value, now) }
                guard table.count < ClientAddresses.maxIdleEntries else { return 60 }
            }
            var entry = table[address] ?? fresh(now)
            defer { table[address] = entry }
            let bucket: WritableKeyPath<Entry, TokenBucket> = kind == .login ? \.logins : \.registrations
            if entry[keyPath: bucket].take(now: now) { return nil }
            return Int(entry[keyPath: bucket].wait(now: now) / 1_000_000_000) + 1
        }
    }

}
