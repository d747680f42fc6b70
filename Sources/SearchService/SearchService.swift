import Bus
import Contracts
import Foundation
import ServiceKit
import Storage

/// One worker thread's view of the index.
public final class SearchStore: ServiceState {
    public let worker: ServiceWorker
    /// The service's copy of what nearby searches read (shared by its threads).
    let nearbyMemory: NearbyMemory
    private var categories: Set<String>?
    private var categoriesFetched: UInt64 = 0

    var maps: MapQueries { MapQueries(db: worker.db, knownCategories: knownCategories(), memory: nearbyMemory) }
    var text: TextQueries { TextQueries(db: worker.db, knownCategories: knownCategories()) }

    init(worker: ServiceWorker, nearbyMemory: NearbyMemory) {
        self.worker = worker
        self.nearbyMemory = nearbyMemory
    }

    /// Runs a search in one read transaction: all its statements see one state of the index,
    /// even while the subscriber commits changes to it (a bulk load drops and builds an index).
    func snapshot<Result>(_ search: () throws -> Result) throws -> Result {
        try worker.db.transaction(.deferred, search)
    }

    /// The catalog's category ids, asked for at most once a minute per thread (quickly, so a
    /// slow catalog costs a search 200 ms at worst); nil while the catalog cannot say, and
    /// then categories are not checked.
    private func knownCategories() -> Set<String>? {
        let now = monotonicNanos()
        let stale = categories == nil ? 5_000_000_000 : 60_000_000_000 as UInt64
        guard now - categoriesFetched > stale || categoriesFetched == 0 else { return categories }
        categoriesFetched = now
        if let list = try? worker.peers.client("catalog").call(Methods.Catalog.categories.name, Empty(), as: CategoryList.self, timeoutMilliseconds: 200) {
            categories = Set(list.categories.map(\.id))
        }
        return categories
    }
}

/// The search service: its own index of the catalog's places (social's ratings and the
/// favorites service's counts), fed by their events, answering map searches; it publishes the
/// text searches of signed-in users (`search.performed`).
public enum SearchService {
    /// A definition for `ServiceRuntime` to run: each one makes a service with its own
    /// `NearbyMemory`, which its appliers keep in step and its threads read.
    public static func definition() -> ServiceDefinition<SearchStore> {
        let memory = NearbyMemory()
        var table = HandlerTable<SearchStore>()
        table.onRaw(Methods.Search.nearby) {
            context, store in
            // A plain body by span, any other through the decoder; the reply is written, not encoded.
            let query = try context.scannedBody.flatMap(NearbyQuery.init(spans:)) ?? context.checkedParams(NearbyQuery.self)
            let maps = store.maps  // outside the transaction: it may ask the catalog for its categories
            if maps.answersFromMemory(query) {
                // Filled (once) in a transaction of its own; a load that fails leaves it empty, and
                // the index answers (and says what is wrong with it, if anything).
                try? store.nearbyMemory.load(from: store.worker.db)
                if let reply = try maps.nearbyFromMemory(query) { return Response(body: reply) }
            }
            // Memory has had its turn: the index answers, memory's work not done again.
            return Response(body: try store.snapshot { try maps.nearbyFromIndex(query) })
        }
        table.on(Methods.Search.viewport) {
            (query: ViewportQuery, _, store) in
            let maps = store.maps  // outside the transaction: it may ask the catalog for its categories
            return try store.snapshot { try maps.viewport(query) }
        }
        // A signed-in caller's search is told to favorites (`search.performed`), handed to the
        // deferred writer once answered: the read never waits for a write.
        let erased = RecentlyErased(windowMilliseconds: PerformedSearches.erasedWindowMs)
        let performed = PerformedSearches.queue(erased: erased)
        table.on(Methods.Search.text) {
            (query: TextQuery, context, store) in
            let text = store.text  // outside the transaction: it may ask the catalog for its categories
            let page = try store.snapshot { try text.search(query) }
            PerformedSearches.record(query, caller: (try? Caller.optional(context)) ?? nil, into: performed, erased: erased)
            return page
        }
        table.on(Methods.Search.autocomplete) {
            (query: AutocompleteQuery, _, store) in
            let text = store.text  // outside the transaction: it may ask the catalog for its categories
            return try store.snapshot { try text.autocomplete(query) }
        }
        table.on(Methods.Search.popular) {
            (query: PopularQuery, _, store) in
            let maps = store.maps  // outside the transaction: it may ask the catalog for its categories
            return try store.snapshot { try PopularQueries(maps: maps).popular(query) }
        }
        // Directions: routes over the catalog's street networks, built by a thread of their own
        // (StreetRoutes.swift), or estimates that say why (Directions.swift).
        let routes = StreetRoutes()
        let routeTexts = RouteTexts()
        table.on(Methods.Directions.get) {
            (query: DirectionsQuery, _, store) in
            var queries = DirectionQueries(db: store.worker.db, routes: routes)
            // Asked before the read transaction: a slow catalog holds no snapshot open.
            queries.texts = routeTexts.texts(query.lang) { try store.worker.peers.client("catalog") }
            return try store.snapshot { try queries.directions(query) }
        }
        table.on(Methods.Directions.matrix) {
            (query: MatrixQuery, _, store) in
            try DirectionQueries(db: store.worker.db, routes: routes).matrix(query)
        }
        table.on(Methods.Directions.plan) {
            (query: TripQuery, _, store) in
            try store.snapshot { try DirectionQueries(db: store.worker.db, routes: routes).plan(query) }
        }
        // Addresses: the copy of the catalog's, and the geocoder built from it (AddressBook.swift).
        let addresses = AddressBook()
        table.on(Methods.Geo.search) { (query: GeoSearchQuery, _, _) in try addresses.search(query) }
        table.on(Methods.Geo.reverse) { (query: GeoReverseQuery, _, _) in try addresses.reverse(query) }
        var definition = ServiceDefinition(
            name: "search", migrations: SearchSchema.migrations + StreetRoutes.migrations + AddressBook.migrations, handlers: table, publishes: true,
            snapshot: { store, after, limit in try PerformedSearches.snapshot(store.worker.db, after: after, limit: limit) },
            subscriptions: [
                "catalog": SearchIndex.catalogApplier(memory: memory, streets: routes.signal, addresses: addresses),
                "social": SearchIndex.socialApplier(memory: memory, erased: erased),
                "favorites": Popularity.favoritesApplier(),
            ],
            // The index is read at random: a larger page cache keeps the trees' upper levels in
            // memory, and reading the file through a map saves a read call per page. Catching
            // up writes much: fewer, larger checkpoints.
            tuning: DatabaseTuning(cacheMebibytes: 64, mapMebibytes: 2_048, checkpointPages: 10_000),
            makeState: { worker in SearchStore(worker: worker, nearbyMemory: memory) })
        definition.deferredEvents = performed
        definition.background = [routes.work(), addresses.work()]
        return definition
    }
}
