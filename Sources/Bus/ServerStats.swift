import Foundation
import Synchronization

/// Request counters and a window of recent latencies, shared by a server's threads.
public final class ServerStats: Sendable {
    private struct State: ~Copyable {
        /// Per method (request type): requests, errors by code, latency histogram; the
        /// totals `sys.stats` reports are sums of these.
        var methods: [String: MethodMetrics] = [:]
        var latencies = [UInt64](repeating: 0, count: ServerStats.window)
        var recorded = 0
        var inFlight = 0
    }

    /// How many recent latencies the percentiles are computed over.
    static let window = 8192
    private let state = Mutex(State())
    private let started = monotonicNanos()

    /// Empty counters.
    public init() {}

    /// Counts one answered request. `type` must come from the server's own table of request
    /// types, as it becomes a metric label; nil for a request refused before routing (or, in
    /// the gateway, a method no table lists), which counts under `MethodMetrics.unknown`.
    /// `sample` false: a refusal of a known type (overload, a bad deadline), counted under its
    /// type but kept out of the latency window it would only flatter.
    public func record(type: String?, nanoseconds: UInt64, error: ErrorCode?, sample: Bool = true) {
        state.withLock { s in
            s.methods[type ?? MethodMetrics.unknown, default: MethodMetrics()].record(nanoseconds: nanoseconds, error: error)
            if type != nil && sample {
                s.latencies[s.recorded % ServerStats.window] = nanoseconds
                s.recorded += 1
            }
        }
    }

    /// Sets the number of requests accepted and not yet answered.
    public func setInFlight(_ count: Int) { state.withLock { $0.inFlight = count } }

    /// Requests accepted and not yet answered.
    public var inFlight: Int { state.withLock { $0.inFlight } }

    /// Each method's counters and latency histogram (requests refused before routing under
    /// `MethodMetrics.unknown`).
    public func methodMetrics() -> [String: MethodMetrics] { state.withLock { $0.methods } }

    /// A copy of the counters with latency percentiles.
    public func snapshot() -> StatsSnapshot {
        state.withLock { s in
            let samples = s.latencies.prefix(min(s.recorded, ServerStats.window)).sorted()
            func percentile(_ p: Double) -> Int {
                guard !samples.isEmpty else { return 0 }
                let index = min(samples.count - 1, Int((p * Double(samples.count)).rounded(.up)) - 1)
                return Int(samples[max(0, index)] / 1000)
            }
            var requests = 0
            var errors = 0
            var errorsByCode: [String: Int] = [:]
            var byType: [String: Int] = [:]
            for (type, m) in s.methods {
                requests += m.count
                if type != MethodMetrics.unknown { byType[type] = m.count }
                for (code, count) in m.errors {
                    errors += count
                    errorsByCode[code.rawValue, default: 0] += count
                }
            }
            return StatsSnapshot(
                uptimeSeconds: Double(monotonicNanos() - started) / 1e9,
                requests: requests, errors: errors, errorsByCode: errorsByCode, byType: byType,
                inFlight: s.inFlight,
                latencyMicroseconds: .init(p50: percentile(0.5), p90: percentile(0.9), p99: percentile(0.99), max: Int((samples.last ?? 0) / 1000)))
        }
    }
}

/// What `sys.stats` reports about a server.
public struct StatsSnapshot: Codable, Sendable, Equatable {
    /// Percentiles over the most recent requests.
    public struct Latency: Codable, Sendable, Equatable {
        public var p50: Int
        public var p90: Int
        public var p99: Int
        public var max: Int
    }

    public var uptimeSeconds: Double
    public var requests: Int
    public var errors: Int
    public var errorsByCode: [String: Int]
    public var byType: [String: Int]
    public var inFlight: Int
    public var latencyMicroseconds: Latency

    enum CodingKeys: String, CodingKey {
        case requests, errors
        case uptimeSeconds = "uptime_s"
        case errorsByCode = "errors_by_code"
        case byType = "by_type"
        case inFlight = "in_flight"
        case latencyMicroseconds = "latency_us"
    }
}

/// One method's requests, errors by code and latency histogram, for Prometheus metrics.
///
/// The buckets are fixed (`bounds`), so every process exposes the same ones and their
/// number, like the methods and codes, is bounded.
public struct MethodMetrics: Sendable, Equatable {
    /// The method label of requests whose type is not in the server's table (or unread).
    public static let unknown = "unknown"
    /// Upper bounds of the latency buckets, in seconds (0.1 ms to 10 s); `+Inf` follows them.
    public static let bounds: [Double] = [0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10]
    private static let boundNanos: [UInt64] = bounds.map { UInt64(($0 * 1e9).rounded()) }

    /// Requests answered.
    public var count = 0
    /// Requests answered with an error, by code.
    public var errors: [ErrorCode: Int] = [:]
    /// Requests whose latency was at most `bounds[i]`, not cumulative; the last entry counts
    /// those above every bound.
    public var buckets = [Int](repeating: 0, count: MethodMetrics.bounds.count + 1)
    /// Total latency, nanoseconds.
    public var sumNanoseconds: UInt64 = 0

    public init() {}

    /// Counts one request that took `nanoseconds`.
    public mutating func record(nanoseconds: UInt64, error: ErrorCode?) {
        count += 1
        if let error { errors[error, default: 0] += 1 }
        sumNanoseconds &+= nanoseconds
        let index = MethodMetrics.boundNanos.firstIndex { nanoseconds <= $0 } ?? MethodMetrics.bounds.count
        buckets[index] += 1
    }
}
