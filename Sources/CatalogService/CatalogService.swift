import Bus
import Contracts
import Foundation
import ServiceKit

/// `catalog.list`: a page of places by id, optionally of one category.
public struct ListPlaces: Codable, Sendable {
    public var category: String?
    public var limit: Int?
    public var cursor: String?

    public init(category: String? = nil, limit: Int? = nil, cursor: String? = nil) {
        self.category = category
        self.limit = limit
        self.cursor = cursor
    }
}

/// A page of places and the cursor of the next page (nil on the last).
public struct PlacePage: Codable, Sendable {
    public var places: [Place]
    public var nextCursor: String?

    enum CodingKeys: String, CodingKey {
        case places
        case nextCursor = "next_cursor"
    }
}

/// The catalog service: places and categories, published as `catalog.place.*` events.
public enum CatalogService {
    /// Page sizes of `catalog.list`.
    static let pageLimit = PageLimit(default: 20, max: 100)
    /// Page cursors of `catalog.list`: the last id seen.
    static let pageCursor = IDCursor(tag: "p", maxLength: 64, minimum: 0)

    /// The definition `ServiceRuntime` runs.
    public static let definition: ServiceDefinition<CatalogStore> = {
        var table = HandlerTable<CatalogStore>()
        // A place's JSON is kept ready in its row: create, update and get answer it as it is.
        table.onRaw(CatalogRequests.create, .write, description: "add a place: name, category, lat, lon and optional details") { context, store in
            // A plainly shaped body is read by spans; any other goes to the decoder, whose answers and errors are the contract.
            let input = try context.scannedBody.flatMap(PlaceInput.init(spans:)) ?? context.body(PlaceInput.self)
            return Response(body: try store.create(input))
        }
        table.onRaw("catalog.update", .write, description: "change some fields of a place by id; null clears an optional field") { context, store in
            Response(body: try store.update(try context.body(PlaceUpdate.self)))
        }
        table.onRaw("catalog.delete", .write, description: "delete a place by id") { context, store in
            let id = try PlaceID.read(scannedBody: context.scannedBody, envelope: context.envelope).id
            try store.delete(id)
            return Response(body: try JSONCoding.encoder.encode(PlaceDeleted(id: id)))
        }
        table.onRaw(CatalogRequests.get, description: "one place by id") { context, store in
            Response(body: try store.json(try PlaceID.read(scannedBody: context.scannedBody, envelope: context.envelope).id))
        }
        table.on("catalog.list", description: "places by id, optionally of one category, paged by cursor") { (request: ListPlaces, _, store) -> PlacePage in
            let limit = try pageLimit.validated(request.limit)
            if let category = request.category { try PlaceRules.category(category, among: store.categoryIds) }
            let after = try request.cursor.map(pageCursor.decode) ?? 0
            let places = try store.list(category: request.category, after: after, limit: limit)
            let next = places.count == limit ? places.last.map { pageCursor.encode($0.id) } : nil
            return PlacePage(places: places, nextCursor: next)
        }
        table.on(CatalogRequests.categories, description: "the categories with how many places each has") { (_: Empty, _, store) in CategoryList(categories: try store.categoryCounts()) }
        return ServiceDefinition(
            name: "catalog", migrations: CatalogSchema.migrations, handlers: table, publishes: true,
            snapshot: { store, after, limit in try store.snapshot(after: after, limit: limit) },
            makeState: { worker in try CatalogStore(worker: worker) })
    }()
}
