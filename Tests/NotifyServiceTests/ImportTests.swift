import Bus
import Foundation
import Testing

/// `annotations.import`: admins load annotations from another system, checked as submissions
/// are, once per external id, all or nothing.
@Suite(.serialized) struct ImportTests {
    static func item(_ externalId: String, createdAt: String = "2026-05-31T20:00:00Z", lat: Double = quay.lat, values: String = quayValues) -> String {
        #"{"lat":\#(lat),"lon":\#(quay.lon),"values":\#(values),"created_at":"\#(createdAt)","external_id":"\#(externalId)"}"#
    }

    @Test func importedOnceByExternalIdAllOrNothingAndSyncedAsNew() throws {
        let f = try NotifyFixture()
        try f.setForm()
        let body = #"{"annotations":[\#(ImportTests.item("x-1")),\#(ImportTests.item("x-2", createdAt: "2026-05-31T23:59:00.500Z"))]}"#
        let first = try f.call("annotations.import", body, as: 1, role: "admin")
        let ids = (first["ids"] as? [NSNumber])?.map(\.int64Value) ?? []
        #expect(ids.count == 2 && first["imported"] as? Int == 2)
        // Kept with their own times.
        let got = try f.call("annotations.get", #"{"id":\#(ids[0])}"#)
        #expect(got["created_at"] as? String == "2026-05-31T20:00:00.000Z" && got["expires_at"] as? String == "2026-06-01T08:00:00.000Z")
        // Again: nothing changes, the same ids answer.
        let again = try f.call("annotations.import", body, as: 1, role: "admin")
        #expect((again["ids"] as? [NSNumber])?.map(\.int64Value) == ids && again["imported"] as? Int == 0)
        #expect(try SyncTests.syncAll(f).changed == ids)
        // One bad among good ones: refused naming it, and none imported.
        let mixed = #"{"annotations":[\#(ImportTests.item("x-3")),\#(ImportTests.item("x-4", values: #"{"kind":"z"}"#))]}"#
        #expect(f.error("annotations.import", mixed, as: 1, role: "admin")?.field == "annotations[1].values.kind")
        #expect(try SyncTests.syncAll(f).changed == ids)
    }

    @Test func everyRefusalNamesItsPlace() throws {
        let f = try NotifyFixture()
        try f.setForm()
        let cases: [(String, String)] = [
            (ImportTests.item("old", createdAt: "2026-05-31T11:59:59Z"), "annotations[0].created_at"),  // 12 h and 1 s ago
            (ImportTests.item("future", createdAt: "2026-06-01T00:00:01Z"), "annotations[0].created_at"),
            (ImportTests.item("odd", createdAt: "yesterday"), "annotations[0].created_at"),
            (ImportTests.item(String(repeating: "e", count: 129)), "annotations[0].external_id"),
            (ImportTests.item(""), "annotations[0].external_id"),
            (ImportTests.item("far", lat: 91), "annotations[0].lat"),
        ]
        for (item, field) in cases {
            #expect(f.error("annotations.import", #"{"annotations":[\#(item)]}"#, as: 1, role: "admin")?.field == field, "\(item)")
        }
        #expect(f.error("annotations.import", #"{"annotations":[]}"#, as: 1, role: "admin")?.field == "annotations")
        let many = (0...500).map { ImportTests.item("m\($0)") }.joined(separator: ",")
        #expect(f.error("annotations.import", #"{"annotations":[\#(many)]}"#, as: 1, role: "admin")?.field == "annotations")
        #expect(f.error("annotations.import", #"{"annotations":[\#(ImportTests.item("u"))]}"#, as: 2)?.code == .permissionDenied)
        // Exactly 12 h old is still within.
        #expect(f.error("annotations.import", #"{"annotations":[\#(ImportTests.item("edge", createdAt: "2026-05-31T12:00:00Z"))]}"#, as: 1, role: "admin") == nil)
    }
}
