import Foundation

/// Latencies in buckets whose bounds grow by 2% each, from 1 µs to about 1,000 s: any
/// percentile is known to within 2% of the value, in a fixed 4 KB of counters, whatever the
/// number of samples. The largest sample is kept exactly.
public struct LogHistogram: Sendable, Equatable {
    /// Each bucket's upper bound is this much more than its lower one.
    static let growth = 1.02
    static let bucketCount = Int((log(1e9) / log(growth)).rounded(.up)) + 1
    private var counts = [UInt32](repeating: 0, count: LogHistogram.bucketCount)
    /// Samples recorded.
    public private(set) var count = 0
    /// The largest sample, in nanoseconds.
    public private(set) var max: UInt64 = 0

    public init() {}

    /// The bucket of `nanoseconds`: values up to 1 µs share the first.
    static func bucket(_ nanoseconds: UInt64) -> Int {
        guard nanoseconds > 1_000 else { return 0 }
        return Swift.min(bucketCount - 1, Int((log(Double(nanoseconds) / 1_000) / log(growth)).rounded(.up)))
    }

    /// The upper bound of bucket `index`, in nanoseconds.
    static func upperBound(_ index: Int) -> UInt64 { UInt64(1_000 * pow(growth, Double(index))) }

    public mutating func record(_ nanoseconds: UInt64) {
        counts[LogHistogram.bucket(nanoseconds)] &+= 1
        count += 1
        max = Swift.max(max, nanoseconds)
    }

    public mutating func merge(_ other: LogHistogram) {
        for i in counts.indices { counts[i] &+= other.counts[i] }
        count += other.count
        max = Swift.max(max, other.max)
    }

    /// The value at or below which a fraction `p` (0...1) of the samples lie: the upper
    /// bound of its bucket (never above the largest sample); 0 when empty.
    public func percentile(_ p: Double) -> UInt64 {
        guard count > 0 else { return 0 }
        let rank = Swift.max(1, Int((p * Double(count)).rounded(.up)))
        var seen = 0
        for (index, n) in counts.enumerated() {
            seen += Int(n)
            if seen >= rank { return Swift.min(max, LogHistogram.upperBound(index)) }
        }
        return max
    }
}
