import Foundation

/// Runs `body` with a fresh empty directory under the system temp directory, removed afterwards.
func withTemporaryDirectory<Result>(_ body: (URL) throws -> Result) throws -> Result {
    let directory = FileManager.default.temporaryDirectory
        .appendingPathComponent("storage-tests-\(UUID().uuidString)", isDirectory: true)
    try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
    defer { try? FileManager.default.removeItem(at: directory) }
    return try body(directory)
}

/// Runs `body` with the path of a not-yet-existing database file in a temporary directory.
func withTemporaryDatabasePath<Result>(_ body: (String) throws -> Result) throws -> Result {
    try withTemporaryDirectory { directory in
        try body(directory.appendingPathComponent("test.sqlite").path)
    }
}
