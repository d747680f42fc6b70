import Bus
import Contracts
import Foundation
import ServiceKit
import Storage

/// The order of a page of reviews: by rating or by `updated_at`, then by review id the same way.
/// `default` is the newest first, like `date` `desc`.
struct ReviewOrder {
    let byRating: Bool
    let ascending: Bool

    static let newestFirst = ReviewOrder(byRating: false, ascending: false)

    private init(byRating: Bool, ascending: Bool) {
        self.byRating = byRating
        self.ascending = ascending
    }

    init(sort: String?, order: String?) throws(ServiceError) {
        switch sort ?? "default" {
        case "default", "date": byRating = false
        case "rating": byRating = true
        default: throw .invalid("sort", "must be default, rating or date")
        }
        switch order ?? "desc" {
        case "asc": ascending = true
        case "desc": ascending = false
        default: throw .invalid("order", "must be asc or desc")
        }
    }

    var column: String { byRating ? "r.rating" : "r.updated_at" }
    private var tag: String { (byRating ? "r" : "d") + (ascending ? "a" : "d") }

    /// The cursor after `review`: this order's tag, the review's key and id.
    func cursor(after review: Review) -> String {
        OpaqueCursor.encode("\(tag)|\(byRating ? String(review.rating) : review.updatedAt)|\(review.id)")
    }

    /// The key and id a cursor of this order holds.
    func position(_ cursor: String) throws(ServiceError) -> (key: any SQLBindable, id: Int64) {
        let parts = try OpaqueCursor.decode(cursor).split(separator: "|", omittingEmptySubsequences: false)
        guard parts.count == 3, let id = Int64(parts[2]) else { throw OpaqueCursor.invalid }
        guard parts[0] == tag else { throw .invalid("cursor", "this cursor belongs to another sort or order") }
        if !byRating { return (String(parts[1]), id) }
        guard let rating = Int64(parts[1]) else { throw OpaqueCursor.invalid }
        return (rating, id)
    }
}

/// Reviews of places, and the ratings published from them.
final class ReviewStore: SocialFeature {
    let shared: SocialShared

    init(_ shared: SocialShared) { self.shared = shared }

    private static let reviewColumns = """
        SELECT r.id, r.place_id, r.user_id, u.username, u.name, r.rating, r.text, r.created_at, r.updated_at
        FROM reviews r JOIN users u ON u.id = r.user_id
        """

    /// Adds or replaces the caller's review of a place the catalog knows, publishing the place's
    /// new rating in the same transaction. Nothing is stored when the catalog cannot say.
    func add(_ input: ReviewInput, caller: Caller, context: RequestContext) throws -> Review {
        let text = input.text ?? ""
        try ReviewInput.textRule.check(text)
        _ = try placeName(input.placeId, context)
        return try db.transaction {
            // The caller was checked before the catalog's answer, which may take a second: an
            // account deleted meanwhile is refused as deleted, not as a foreign-key failure.
            try requireCaller(caller)
            let now = timestamp()
            // Replace the caller's review if there is one (an upsert would use up an id each time).
            let id: Int64
            if let replaced = try db.scalarInt(
                "UPDATE reviews SET rating = ?, text = ?, updated_at = ? WHERE user_id = ? AND place_id = ? RETURNING id",
                input.rating, text, now, caller.id, input.placeId)
            {
                id = replaced
            } else {
                try db.run(
                    "INSERT INTO reviews (place_id, user_id, rating, text, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?)",
                    input.placeId, caller.id, input.rating, text, now, now)
                id = db.lastInsertRowID
            }
            try publishRating(of: input.placeId)
            return try review(id)
        }
    }

    /// Deletes a review: its author or an admin may.
    func delete(_ id: Int64, caller: Caller) throws {
        try db.transaction {
            guard let row = try db.queryOne("SELECT user_id, place_id FROM reviews WHERE id = ?", id) else {
                throw ServiceError(.notFound, "no review with id \(id)", field: "review_id")
            }
            let placeId: Int64 = try row.decode("place_id")
            guard try row.decode("user_id", as: Int64.self) == caller.id || caller.isAdmin else {
                throw ServiceError(.permissionDenied, "only its author or an admin may delete review \(id)")
            }
            try db.run("DELETE FROM reviews WHERE id = ?", id)
            try publishRating(of: placeId)
        }
    }

    private func review(_ id: Int64) throws -> Review {
        guard let row = try db.queryOne("\(Self.reviewColumns) WHERE r.id = ?", id) else {
            throw ServiceError(.notFound, "no review with id \(id)", field: "review_id")
        }
        return try Self.review(row)
    }

    /// A page of a place's reviews. A signed-in `viewer` sees no review by a user they block
    /// (the place's rating still counts it).
    func reviews(of placeId: Int64, viewer: Int64?, order: ReviewOrder, cursor: String?, limit: Int) throws -> ReviewPage {
        guard let viewer else {
            return try reviewPage("\(Self.reviewColumns) WHERE r.place_id = ?", [placeId], order: order, cursor: cursor, limit: limit)
        }
        return try reviewPage(
            "\(Self.reviewColumns) WHERE r.place_id = ? AND \(BlockRules.shown("r.user_id"))", [placeId, viewer],
            order: order, cursor: cursor, limit: limit)
    }

    /// A page of the reviews of the people `follower` follows, newest first.
    func feed(of follower: Int64, cursor: String?, limit: Int) throws -> ReviewPage {
        try reviewPage(
            "\(Self.reviewColumns) JOIN follows f ON f.followee_id = r.user_id WHERE f.follower_id = ?", [follower],
            order: .newestFirst, cursor: cursor, limit: limit)
    }

    /// Runs `query` (ending in a WHERE clause) from the cursor's position in `order`, one page
    /// (`limit` reviews, fewer when they would take more than the page budget).
    private func reviewPage(_ query: String, _ arguments: [(any SQLBindable)?], order: ReviewOrder, cursor: String?, limit: Int) throws -> ReviewPage {
        var sql = query
        var arguments = arguments
        let direction = order.ascending ? "ASC" : "DESC"
        if let cursor {
            let position = try order.position(cursor)
            sql += " AND (\(order.column), r.id) \(order.ascending ? ">" : "<") (?, ?)"
            arguments += [position.key, position.id]
        }
        sql += " ORDER BY \(order.column) \(direction), r.id \(direction) LIMIT ?"
        let page = try readPage(sql, arguments, limit: limit, item: Self.review, wire: { $0 })
        return ReviewPage(reviews: page.items, nextCursor: page.isFull ? page.items.last.map(order.cursor(after:)) : nil)
    }

    /// A review from a row of `reviewColumns`.
    private static func review(_ row: Row) throws(RowError) -> Review {
        try Review(
            id: row.decode("id"), placeId: row.decode("place_id"),
            user: UserSummary(id: row.decode("user_id"), username: row.decode("username"), name: row.decode("name")),
            rating: row.decode("rating"), text: row.decode("text"), createdAt: row.decode("created_at"), updatedAt: row.decode("updated_at"))
    }

    /// Emits the place's rating as it now stands; call inside the transaction that changed it.
    /// Follows the catalog's deletions: a deleted place takes its reviews with it, and its
    /// rating goes to nothing (`count` 0). Reviews are this service's own, not a copy of the
    /// catalog's, so a rebuild from the catalog's snapshot forgets nothing (`reset` does
    /// nothing); a place deleted while this service could not follow keeps its reviews.
    static let catalogApplier = EventApplier(
        apply: { event, scope in
            guard event.header.type == CatalogEvents.deleted else { return }
            let id = try event.body(PlaceDeleted.self).id
            guard try scope.db.scalarInt("SELECT 1 FROM reviews WHERE place_id = ? LIMIT 1", id) != nil else { return }
            try scope.db.run("DELETE FROM reviews WHERE place_id = ?", id)
            try scope.db.run("DELETE FROM rating_windows WHERE place_id = ?", id)
            try scope.emit(SocialEvents.ratingUpdated, RatingUpdated(placeId: id, average: 0, count: 0, reviews30d: 0))
        },
        reset: { _ in },
        types: [CatalogEvents.deleted])

    /// Emits the place's rating as it now stands, and notes when its count of recent reviews
    /// next changes by itself (`rating_windows`: when the oldest of them leaves the window),
    /// for `sweepRatings`; call inside the transaction that changed it.
    func publishRating(of placeId: Int64) throws {
        let (rating, oldestRecent) = try rating(of: placeId)
        if let oldestRecent {
            let leaves = try RFC3339.milliseconds(oldestRecent, field: "updated_at") + Self.reviewWindowMs
            try db.run(
                "INSERT OR REPLACE INTO rating_windows (place_id, recount_at) VALUES (?, ?)",
                placeId, timestamp(Date(timeIntervalSince1970: Double(leaves) / 1000)))
        } else {
            try db.run("DELETE FROM rating_windows WHERE place_id = ?", placeId)
        }
        try worker.emit(SocialEvents.ratingUpdated, rating)
    }

    /// How long a review counts as recent (`reviews_30d`): 30 days from when it was written or last replaced.
    static let reviewWindowMs: Int64 = 30 * 86_400_000
    /// The most places one sweep publishes again; the rest wait for the next.
    static let sweepBatch = 500

    /// Publishes again the rating of each place whose oldest recent review has left the
    /// window since, so `reviews_30d` follows time without any write (at most `sweepBatch`).
    func sweepRatings() throws -> RatingSweep {
        let due = try db.query(
            "SELECT place_id FROM rating_windows WHERE recount_at <= ? ORDER BY recount_at, place_id LIMIT ?",
            timestamp(), Self.sweepBatch
        ).decode("place_id", as: Int64.self)
        for id in due { try publishRating(of: id) }
        return RatingSweep(published: due.count)
    }

    /// The place's rating, and when the oldest of its reviews of the last 30 days was written.
    private func rating(of placeId: Int64) throws -> (RatingUpdated, oldestRecent: String?) {
        let since = timestamp(Date(timeIntervalSince1970: options.clock().timeIntervalSince1970 - Double(Self.reviewWindowMs) / 1000))
        // An aggregate without GROUP BY always gives its one row; none would mean no reviews.
        let row = try db.queryOne(
            """
            SELECT count(*) AS count, coalesce(sum(rating), 0) AS sum, coalesce(sum(updated_at > ?), 0) AS recent,
                   min(CASE WHEN updated_at > ? THEN updated_at END) AS oldest
            FROM reviews WHERE place_id = ?
            """, since, since, placeId)
        let count: Int64 = try row?.decode("count") ?? 0
        let sum: Int64 = try row?.decode("sum") ?? 0
        let recent: Int64 = try row?.decode("recent") ?? 0
        let rating = RatingUpdated(
            placeId: placeId, average: count == 0 ? 0 : Double(sum) / Double(count), count: Int(count),
            reviews30d: Int(recent))
        return (rating, try row?.decode("oldest", as: String?.self) ?? nil)
    }

    /// One snapshot page: the rating of each place with reviews after place id `after`, as
    /// `social.rating.updated` events.
    func snapshot(after: Int64, limit: Int) throws -> SnapshotPart {
        let places = try db.query("SELECT DISTINCT place_id FROM reviews WHERE place_id > ? ORDER BY place_id LIMIT ?", after, limit)
            .decode("place_id", as: Int64.self)
        let events = try places.map { (type: SocialEvents.ratingUpdated, body: try JSONCoding.encoder.encode(try rating(of: $0).0)) }
        return (events, places)
    }

    /// The reviews of user `id`, publishing each place's new rating: part of erasing an
    /// account, in its transaction.
    func erase(of id: Int64) throws {
        let places = try db.query("SELECT DISTINCT place_id FROM reviews WHERE user_id = ? ORDER BY place_id", id).decode("place_id", as: Int64.self)
        try db.run("DELETE FROM reviews WHERE user_id = ?", id)
        for place in places { try publishRating(of: place) }
    }
}
