import Bus
import Foundation
import ServiceKit

/// Event types the catalog publishes.
public enum CatalogEvents {
    /// Body: the whole `Place` after the change.
    public static let upserted = "catalog.place.upserted"
    /// Body: `PlaceDeleted`.
    public static let deleted = "catalog.place.deleted"
}

/// Body of `catalog.place.deleted` and the reply of `catalog.delete`.
public struct PlaceDeleted: Codable, Sendable, Equatable {
    public var id: Int64
    public init(id: Int64) { self.id = id }
}

/// A category of places, with how many places it has when listed.
public struct Category: Codable, Sendable, Equatable {
    public var id: String
    public var name: String
    public var count: Int?
}

/// `catalog.get` and `catalog.delete`.
public struct PlaceID: Codable, Sendable {
    public var id: Int64
    public init(id: Int64) { self.id = id }
}

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

/// The reply of `catalog.categories`.
public struct CategoryList: Codable, Sendable {
    public var categories: [Category]
}

/// The catalog service: places and categories, published as `catalog.place.*` events.
public enum CatalogService {
    /// Page size bounds of `catalog.list`.
    static let defaultLimit = 20, maxLimit = 100

    /// The definition `ServiceRuntime` runs.
    public static let definition: ServiceDefinition<CatalogStore> = {
        var table = HandlerTable<CatalogStore>()
        table.on("catalog.create", .write, description: "add a place: name, category, lat, lon and optional details") { (input: PlaceInput, _, store) in try store.create(input) }
        table.on("catalog.update", .write, description: "change some fields of a place by id; null clears an optional field") { (update: PlaceUpdate, _, store) in try store.update(update) }
        table.on("catalog.delete", .write, description: "delete a place by id") { (request: PlaceID, _, store) -> PlaceDeleted in
            try store.delete(request.id)
            return PlaceDeleted(id: request.id)
        }
        table.on("catalog.get", description: "one place by id") { (request: PlaceID, _, store) in try store.get(request.id) }
        table.on("catalog.list", description: "places by id, optionally of one category, paged by cursor") { (request: ListPlaces, _, store) -> PlacePage in
            let limit = request.limit ?? defaultLimit
            guard (1...maxLimit).contains(limit) else { throw ServiceError.invalid("limit", "must be 1 to \(maxLimit)") }
            if let category = request.category { try PlaceRules.category(category, among: store.categoryIds) }
            let after = try request.cursor.map(PageCursor.decode) ?? 0
            let places = try store.list(category: request.category, after: after, limit: limit)
            let next = places.count == limit ? places.last.map { PageCursor.encode($0.id) } : nil
            return PlacePage(places: places, nextCursor: next)
        }
        table.on("catalog.categories", description: "the categories with how many places each has") { (_: Empty, _, store) in CategoryList(categories: try store.categoryCounts()) }
        return ServiceDefinition(
            name: "catalog", migrations: CatalogSchema.migrations, handlers: table, publishes: true,
            snapshot: { store, after, limit in try store.snapshot(after: after, limit: limit) },
            makeState: { worker in try CatalogStore(worker: worker) })
    }()
}

/// Page cursors of `catalog.list`: the last id seen.
enum PageCursor {
    static func encode(_ id: Int64) -> String { OpaqueCursor.encode("p\(id)") }

    static func decode(_ cursor: String) throws(ServiceError) -> Int64 {
        let text = try OpaqueCursor.decode(cursor, maxLength: 64)
        guard text.hasPrefix("p"), let id = Int64(text.dropFirst()), id >= 0 else {
            throw ServiceError.invalid("cursor", "not a cursor from this service")
        }
        return id
    }
}
