import Foundation
import Synchronization

/// Request counters and a window of recent latencies, shared by a server's threads.
public final class ServerStats: Sendable {
    private struct State: ~Copyable {
        var requests = 0
        var errors = 0
        var errorsByCode: [String: Int] = [:]
        var byType: [String: Int] = [:]
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

    /// Counts one answered request (`type` nil for one refused before routing).
    public func record(type: String?, nanoseconds: UInt64, error: ErrorCode?) {
        state.withLock { s in
            s.requests += 1
            if let type { s.byType[type, default: 0] += 1 }
            if let error {
                s.errors += 1
                s.errorsByCode[error.rawValue, default: 0] += 1
            }
            if type != nil {
                s.latencies[s.recorded % ServerStats.window] = nanoseconds
                s.recorded += 1
            }
        }
    }

    /// Sets the number of requests accepted and not yet answered.
    public func setInFlight(_ count: Int) { state.withLock { $0.inFlight = count } }

    /// A copy of the counters with latency percentiles.
    public func snapshot() -> StatsSnapshot {
        state.withLock { s in
            let samples = s.latencies.prefix(min(s.recorded, ServerStats.window)).sorted()
            func percentile(_ p: Double) -> Int {
                guard !samples.isEmpty else { return 0 }
                let index = min(samples.count - 1, Int((p * Double(samples.count)).rounded(.up)) - 1)
                return Int(samples[max(0, index)] / 1000)
            }
            return StatsSnapshot(
                uptimeSeconds: Double(monotonicNanos() - started) / 1e9,
                requests: s.requests, errors: s.errors, errorsByCode: s.errorsByCode, byType: s.byType,
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
