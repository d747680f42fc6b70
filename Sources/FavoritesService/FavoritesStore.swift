import Bus
import Contracts
import Foundation
import Geo
import ServiceKit
import Storage
import Synchronization

/// The favorites service's tables and the queries over them, on one worker thread's
/// connection. Places (the copy of the catalog's), lists and pins each add their part in
/// their own file.
public final class FavoritesStore: ServiceState {
    public let worker: ServiceWorker
    let options: FavoritesOptions
    /// The catalog lookups under way on all of the service's threads (`ensurePlace`).
    let lookups: ReaderGate
    /// Users erased a moment ago, whose late writes are refused (shared by all threads).
    let erased: RecentlyErased
    var db: Database { worker.db }

    init(worker: ServiceWorker, options: FavoritesOptions, lookups: ReaderGate, erased: RecentlyErased) {
        self.worker = worker
        self.options = options
        self.lookups = lookups
        self.erased = erased
    }

    /// The service clock, in milliseconds since 1970.
    var now: Int64 { options.clock() }

    /// A time in milliseconds as clients read it (RFC 3339, UTC, milliseconds).
    static func timestamp(_ ms: Int64) -> String { Logger.timestamp(Date(timeIntervalSince1970: Double(ms) / 1000)) }

    /// `unauthenticated` when user `id` was erased moments ago (`RecentlyErased`). Call it in
    /// the transaction of any write that makes a row of the user (a list, a pin), so the check
    /// and the write are one with respect to the erasure.
    func refuseErased(_ id: Int64) throws {
        try erased.refuse(id, now: now)
    }

    /// Tells the caller's other connections that their saved things changed
    /// (`favorites.changed`), once the write commits; the connection that made the change does
    /// not hear it.
    func pushChanged(_ change: FavoritesChange, caller: Caller) throws {
        let body = try Pushes.favoritesChanged.encode(change)
        worker.push(
            Push(
                Pushes.favoritesChanged, id: "\(caller.id)-\(now)-\(UUID().uuidString.prefix(8))", userId: caller.id,
                origin: caller.origin, body: body))
    }
}
