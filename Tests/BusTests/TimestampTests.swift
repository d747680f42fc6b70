import Bus
import Foundation
import Testing
import TestSupport

/// `Logger.timestamp` formats by hand what `String(format:)` formatted before: the same text
/// for every instant from 1970 to past the year 9999 (five-digit years included).
@Suite struct TimestampTests {
    private static func formatted(_ date: Date) -> String {
        let millis = Int64((date.timeIntervalSince1970 * 1000).rounded(.down))
        var seconds = time_t(millis / 1000)
        var parts = tm()
        gmtime_r(&seconds, &parts)
        return String(format: "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", Int(parts.tm_year) + 1900, Int(parts.tm_mon) + 1,
                      Int(parts.tm_mday), Int(parts.tm_hour), Int(parts.tm_min), Int(parts.tm_sec), Int(millis % 1000))
    }

    @Test func sameTextAsStringFormat() {
        var random = SplitMix64(seed: 11)
        let edges: [TimeInterval] = [0, 0.001, 0.999, 59.999, 86_399.999, 951_782_400, 1_700_000_000.123, 4_102_444_799.999,
                                     253_402_300_799.999, 253_402_300_800, 300_000_000_000.5]
        let instants = edges + (0..<5_000).map { _ in TimeInterval(random.next() % 300_000_000_000_000) / 1000 }
        for instant in instants {
            let date = Date(timeIntervalSince1970: instant)
            #expect(Logger.timestamp(date) == Self.formatted(date), "at \(instant)")
        }
        #expect(Logger.timestamp(Date(timeIntervalSince1970: 253_402_300_800)) == "10000-01-01T00:00:00.000Z")
    }
}
