import Foundation

/// Polls `condition` every `interval` seconds until it holds, for at most `seconds`: whether
/// it did. Every test that waits for what another thread or process does waits through this
/// one helper, so each such wait is bounded in count and time.
public func eventually(seconds: Double = 10, every interval: Double = 0.05, _ condition: () throws -> Bool) rethrows -> Bool {
    let deadline = Date().addingTimeInterval(seconds)
    while Date() < deadline {
        if try condition() { return true }
        usleep(UInt32(interval * 1_000_000))
    }
    return try condition()
}
