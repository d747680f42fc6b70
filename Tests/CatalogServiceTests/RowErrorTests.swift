import Bus
import CatalogService
import Foundation
import Storage
import Testing
import TestSupport

/// A row the catalog cannot read is an `internal` error with the column named in the log,
/// never a place with a made-up value.
@Suite struct RowErrorTests {
    @Test func aMistypedColumnIsAnInternalErrorNamedInTheLog() throws {
        let lines = Locked<[String]>([])
        let logger = Logger(component: "catalog-test", level: .error) { line in lines.withLock { $0.append(line) } }
        let catalog = try CatalogFixture(logger: logger)
        let place = try catalog.create("Harbour Café")
        // Text where the version's integer belongs: SQLite keeps it as TEXT in an INTEGER column.
        // Without its stored JSON (as a row from before catalog/3), the get reads the columns.
        try Database(path: catalog.config.resolvedDatabasePath).run("UPDATE places SET version = 'one', json = NULL WHERE id = ?", place.id)
        let error = try #require(throws: ServiceError.self) { try catalog.raw("catalog.get", #"{"id":\#(place.id)}"#) }
        #expect(error.code == .internal)
        #expect(!error.message.contains("version"))  // The client is told nothing of the schema…
        let logged = lines.withLock { $0.joined() }
        #expect(logged.contains("column 'version' holds TEXT, expected INTEGER"))  // …the log says what broke.
    }
}
