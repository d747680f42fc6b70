import Bus
import Foundation
import ServiceCore
import ServiceKit
import Storage
import Synchronization
import Testing
import TestSupport

/// A source's applier composed of the features that follow it: each event reaches every
/// feature that handles its type, in order, and none other; resets and bulk ends reach each.
@Suite struct EventHandlersTests {
    @Test func featuresAreComposedByEventType() throws {
        let heard = Mutex<[String]>([])
        func note(_ what: String) -> EventHandlers.Handler { { event, _ in heard.withLock { $0.append("\(what) \(event.header.type)") } } }
        let library = EventHandlers(["a.deleted": note("library"), "a.device": note("library")],
                                    reset: { _ in heard.withLock { $0.append("library reset") } })
        let walks = EventHandlers(["a.deleted": note("walks")], finishBulk: { _ in heard.withLock { $0.append("walks finished") } })
        let applier = EventApplier(features: [library, walks])
        #expect(applier.types == ["a.deleted", "a.device"] && !applier.wants("a.other"))

        let folder = TemporaryFolder("handlers")
        defer { withExtendedLifetime(folder) {} }
        let db = try Database(path: folder.file("db.sqlite"))
        let scope = EventScope(db: db)
        for (seq, type) in [(1, "a.device"), (2, "a.deleted"), (3, "a.other")] {
            let envelope = EnvelopeCoding.event(seq: Int64(seq), type: type, ts: "2026-01-01T00:00:00.000Z", epoch: "e", body: Data("{}".utf8))
            try applier.apply(try ReceivedEvent(envelope: envelope), scope)
        }
        try applier.reset(db)
        try applier.finishBulk?(db)
        #expect(heard.withLock { $0 } == ["library a.device", "library a.deleted", "walks a.deleted", "library reset", "walks finished"])
        // No feature finishes a bulk load: neither does the source's applier.
        #expect(EventApplier(features: [library]).finishBulk == nil)
    }
}
