import Bus
import Contracts
import Foundation
import ServiceCore
import ServiceKit
import Storage

/// Settings of the favorites service that are not the runtime's.
public struct FavoritesOptions: Sendable {
    /// The time in milliseconds since 1970: when items were added, visits, idempotency windows.
    /// Tests move it by hand.
    public var clock: @Sendable () -> Int64 = { Int64((Date().timeIntervalSince1970 * 1000).rounded(.down)) }
    /// The most bytes the items of one page of a list take, encoded: 256 KiB.
    public var pageBudgetBytes = 256 * 1_024
    /// The most places one list holds, and own lists one user has (tests lower them).
    public var maxItemsPerList = 10_000
    public var maxOwnLists = 100
    /// The most places one user holds in all their lists together. Erasing a user deletes
    /// them in one transaction on the writer: 103 full lists (about a million items) held it
    /// about 4 s, every user's favorites writes past their deadline; 25,000 hold it ~0.1 s.
    public var maxItemsPerUser = 25_000
    /// How often the places' counts are recounted and published (`favorites.counts.flush`).
    public var countsFlushIntervalMs = 1_000
    /// How long `favorites.toggle` keeps a `request_id`'s answer, and how many per user.
    public var toggleRecordMs: Int64 = 24 * 3_600_000
    public var toggleRecordsPerUser = 1_000
    /// How long an erased user's writes are refused after `social.user.deleted`: far longer
    /// than a gateway caches a token (2 s) or a request may wait (its deadline).
    public var erasedUserWindowMs: Int64 = 600_000

    public init() {}
}

/// The favorites service (issue 13): each user's saved places in lists (the built-in
/// `favorites`, `visited` and `want_to_go`, and their own), read-only share links to a list,
/// their own map pins, and (issue 16) their recent searches, learned from search's
/// `search.performed`. It keeps a copy of the catalog's places and social's ratings, so a list
/// never calls the catalog per item, and publishes each place's counts
/// (`favorites.place.counted`) for search's popularity.
public enum FavoritesService {
    /// The definition `ServiceRuntime` runs.
    public static func definition(options: FavoritesOptions = FavoritesOptions()) -> ServiceDefinition<FavoritesStore> {
        var table = HandlerTable<FavoritesStore>()
        Lists.register(&table)
        Pins.register(&table)
        Recent.register(&table)
        let erased = RecentlyErased(windowMilliseconds: options.erasedUserWindowMs)
        var definition = ServiceDefinition(
            name: "favorites", migrations: Places.migrations + Lists.migrations + Pins.migrations + Recent.migrations + Visits.migrations, handlers: table, publishes: true,
            snapshot: { store, after, limit in try store.countsSnapshot(after: after, limit: limit) },
            // Social's events: ratings, a deleted user's erasure, and who is discoverable (visits).
            subscriptions: [
                "catalog": Places.catalogApplier,
                "social": EventApplier(features: [Places.ratingEvents, erasureEvents(clock: options.clock, erased: erased), Visits.socialEvents]),
                "search": Recent.searchApplier(clock: options.clock, erased: erased),
            ],
            makeState: { [lookups = ReaderGate()] worker in FavoritesStore(worker: worker, options: options, lookups: lookups, erased: erased) })
        // Every search replica records only the searches it answered: each is a stream of its own.
        definition.perReplica = ["search"]
        definition.periodic = [PeriodicRequest(Methods.Favorites.countsFlush, intervalMilliseconds: options.countsFlushIntervalMs)]
        return definition
    }

    /// Erases a deleted user's data (`social.user.deleted`), refusing their late writes for a
    /// while (`erased`, by `clock`). Social's snapshot holds no deleted user (nothing of them is
    /// kept), so a rebuild cannot erase what a missed deletion left (see Protocols/favorites.md).
    static func erasureEvents(clock: @escaping @Sendable () -> Int64, erased: RecentlyErased) -> EventHandlers {
        EventHandlers([
            SocialEvents.userDeleted: { event, scope in
                try erase(user: try event.body(UserDeleted.self).userId, now: clock(), erased: erased, scope)
            }
        ])
    }

    /// Erases everything of user `id` (`social.user.deleted`): lists, items, shares, pins, recent
    /// searches, and the idempotency records of their requests; publishes the counts of the places they had.
    /// Their late writes are refused for a while (`erased`), noted before the erasure commits.
    static func erase(user id: Int64, now: Int64, erased: RecentlyErased, _ scope: EventScope) throws {
        erased.note(id, now: now)
        try Lists.erase(user: id, scope)
        try Pins.erase(user: id, scope.db)
        try Recent.erase(user: id, scope.db)
        try Visits.erase(user: id, scope.db)
    }
}
