import Foundation

/// A fresh folder under the system's temporary directory, removed with everything in it when
/// the value goes away. Every test that needs files on disk makes one of these.
public final class TemporaryFolder: Sendable {
    /// The folder's absolute path.
    public let path: String

    /// Makes `<tmp>/tourbus-<label>-<uuid>`.
    public init(_ label: String = "test") {
        path = NSTemporaryDirectory() + "tourbus-\(label)-\(UUID().uuidString)"
        try? FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
    }

    /// A path inside the folder.
    public func file(_ name: String) -> String { path + "/" + name }

    deinit { try? FileManager.default.removeItem(atPath: path) }
}
