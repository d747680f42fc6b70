import Foundation

/// Whether `actual` matches `expected` as the transcripts in `Protocols/` mean it: the same
/// keys and values, where "<any>" matches any value and "<ts>" an ISO-8601 timestamp.
public func transcriptMatches(_ expected: Any, _ actual: Any?) -> Bool {
    if let e = expected as? String, e == "<any>" { return actual != nil }
    if let e = expected as? String, e == "<ts>" {
        guard let a = actual as? String else { return false }
        return a.wholeMatch(of: /\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z/) != nil
    }
    switch (expected, actual) {
    case (let e as [String: Any], let a as [String: Any]):
        return Set(e.keys) == Set(a.keys) && e.allSatisfy { transcriptMatches($0.value, a[$0.key]) }
    case (let e as [Any], let a as [Any]):
        return e.count == a.count && zip(e, a).allSatisfy { transcriptMatches($0, $1) }
    case (let e as NSNumber, let a as NSNumber):
        return e == a
    case (let e as String, let a as String):
        return e == a
    case (is NSNull, is NSNull):
        return true
    default:
        return false
    }
}

/// The repository's root folder, found from this source file.
public let packageRoot = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

/// The repository's `Protocols/` folder.
public func protocolsFolder() -> URL { packageRoot.appendingPathComponent("Protocols") }
