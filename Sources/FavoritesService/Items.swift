import Bus
import Contracts
import Foundation
import Geo
import ServiceKit
import Storage

/// Saved places in lists: toggle, add, remove, visited, contains, and a list's pages.
///
/// Toggle, add and visited may first ask the catalog about a place favorites has not heard of
/// (`ensurePlace`), which can take up to a second. So they are read-kind handlers that write
/// in a short transaction of their own once the place is known, as social's `reviews.add`
/// does, and never hold the one writer thread while they wait.
enum Items {
    /// Page sizes of `favorites.list` and `favorites.shared`.
    /// How far in the future a visit's `at` may be: clocks differ a little.
    static let visitSkewMs: Int64 = 60_000
    /// The longest cursor accepted: a name-sorted cursor holds the place's name.
    static let maxCursorLength = 2_048

    static func register(_ table: inout HandlerTable<FavoritesStore>) {
        table.on(Methods.Favorites.toggle, runsOn: .read) {
            (request: ToggleRequest, caller, context, store) -> ToggleReply in
            try store.toggle(request, caller: caller, context: context)
        }
        table.on(Methods.Favorites.add, runsOn: .read) {
            (request: AddRequest, caller, context, store) -> ItemChanged in
            try store.add(request, caller: caller, context: context)
        }
        table.on(Methods.Favorites.remove) { (request: RemoveRequest, caller, _, store) -> ItemChanged in
            try store.remove(request, caller: caller)
        }
        table.on(Methods.Favorites.visitedAdd, runsOn: .read) {
            (request: VisitedRequest, caller, context, store) -> VisitedReply in
            try store.visit(request, caller: caller, context: context)
        }
        table.onRaw(Methods.Favorites.list) { context, caller, store in
            let request = try context.checkedParams(ListRequest.self)
            return Response(body: try store.page(request, userId: caller.id).body)
        }
        table.on(Methods.Favorites.contains) { (request: ContainsRequest, caller, _, store) -> ContainsReply in
            try store.contains(request.placeIds, userId: caller.id)
        }
    }
}

extension FavoritesStore {
    /// `favorites.toggle`: in or out of the list. With a `request_id` seen in the last
    /// `toggleRecordMs` the first answer comes back and nothing changes; the same id with
    /// another place or list is a `conflict`.
    func toggle(_ request: ToggleRequest, caller: Caller, context: RequestContext) throws -> ToggleReply {
        if let requestId = request.requestId {
            try ToggleRequest.requestIdRule.check(requestId)
            guard !requestId.isEmpty else { throw ServiceError.invalid("request_id", "must not be empty") }
        }
        _ = try findList(request.list, userId: caller.id)
        if let prior = try priorToggle(request, userId: caller.id) { return prior }
        try ensurePlace(request.placeId, context: context)
        let reply = try db.transaction(.immediate) { () throws -> ToggleReply in
            if let prior = try priorToggle(request, userId: caller.id) { return prior }
            let list = try findList(request.list, userId: caller.id)
            let listId = try listId(list, userId: caller.id)
            let saved: Bool
            if try db.queryOne("SELECT 1 FROM items WHERE list_id = ? AND place_id = ?", listId, request.placeId) != nil {
                try db.run("DELETE FROM items WHERE list_id = ? AND place_id = ?", listId, request.placeId)
                if list.isVisited { try publishUnvisit(user: caller.id, place: request.placeId) }
                saved = false
            } else {
                try insertItem(listId: listId, list: list, placeId: request.placeId, note: nil)
                saved = true
            }
            let reply = ToggleReply(saved: saved, list: list.name, count: try itemCount(listId))
            if let requestId = request.requestId { try recordToggle(requestId, request, reply: reply, userId: caller.id) }
            try pushChanged(FavoritesChange(change: saved ? .saved : .removed, list: list.name, placeId: request.placeId), caller: caller)
            return reply
        }
        return reply
    }

    /// The answer recorded for the caller's `request_id`, if it is still kept.
    private func priorToggle(_ request: ToggleRequest, userId: Int64) throws -> ToggleReply? {
        guard let requestId = request.requestId,
            let row = try db.queryOne(
                "SELECT place_id, list, reply FROM toggle_requests WHERE user_id = ? AND request_id = ? AND at > ?",
                userId, requestId, now - options.toggleRecordMs)
        else { return nil }
        let list = try findList(request.list, userId: userId)
        guard try row.decode("place_id", as: Int64.self) == request.placeId,
            try row.decode("list", as: String.self).caseInsensitiveCompare(list.name) == .orderedSame
        else {
            throw ServiceError(.conflict, "this request_id was used for another place or list", field: "request_id")
        }
        return try JSONCoding.decoder.decode(ToggleReply.self, from: Data(try row.decode("reply", as: String.self).utf8))
    }

    /// Keeps a toggle's answer under its `request_id`, and at most `toggleRecordsPerUser` of the
    /// user's (the oldest go first); those past the window go in the periodic flush.
    private func recordToggle(_ requestId: String, _ request: ToggleRequest, reply: ToggleReply, userId: Int64) throws {
        let text = String(decoding: try JSONCoding.encoder.encode(reply), as: UTF8.self)
        try db.run(
            "INSERT OR REPLACE INTO toggle_requests (user_id, request_id, place_id, list, reply, at) VALUES (?, ?, ?, ?, ?, ?)",
            userId, requestId, request.placeId, reply.list, text, now)
        try db.run(
            """
            DELETE FROM toggle_requests WHERE user_id = ? AND request_id IN (
                SELECT request_id FROM toggle_requests WHERE user_id = ? ORDER BY at DESC, request_id DESC LIMIT -1 OFFSET ?)
            """, userId, userId, options.toggleRecordsPerUser)
    }

    /// Adds a place to list row `listId`, refusing a full list, or a user whose lists hold
    /// `maxItemsPerUser` places together (`conflict` naming `list`, when the request named one).
    private func insertItem(listId: Int64, list: ListRef, placeId: Int64, note: String?, visitedAt: Int64? = nil) throws {
        let field = visitedAt == nil ? "list" : nil
        guard try itemCount(listId) < options.maxItemsPerList else {
            throw ServiceError(.conflict, "list \(list.name) holds \(options.maxItemsPerList) places, the most it may; remove some first", field: field)
        }
        let held =
            try db.scalarInt(
                """
                SELECT count(*) FROM items WHERE list_id IN (SELECT id FROM lists WHERE user_id = (SELECT user_id FROM lists WHERE id = ?))
                """, listId) ?? 0
        guard held < options.maxItemsPerUser else {
            throw ServiceError(
                .conflict, "your lists hold \(options.maxItemsPerUser) places together, the most they may; remove some first",
                field: field)
        }
        guard try db.queryOne("SELECT 1 FROM places WHERE id = ?", placeId) != nil else {
            throw ServiceError(.notFound, "no place with id \(placeId)", field: "place_id")
        }
        let visited = list.isVisited ? (visitedAt ?? now) : nil
        try db.run(
            "INSERT INTO items (list_id, place_id, note, added_at, visited_at) VALUES (?, ?, ?, ?, ?)",
            listId, placeId, note, now, visited)
        if let visited, let user = try db.scalarInt("SELECT user_id FROM lists WHERE id = ?", listId) {
            try publishVisit(user: user, place: placeId, at: visited)
        }
    }

    /// `favorites.add`: saves a place (again: no error; a `note` given replaces the note, an
    /// empty one clears it).
    func add(_ request: AddRequest, caller: Caller, context: RequestContext) throws -> ItemChanged {
        if let note = request.note { try AddRequest.noteRule.check(note) }
        let note = request.note.flatMap { $0.isEmpty ? nil : $0 }
        _ = try findList(request.list, userId: caller.id)
        try ensurePlace(request.placeId, context: context)
        return try db.transaction(.immediate) { () throws -> ItemChanged in
            let list = try findList(request.list, userId: caller.id)
            let listId = try listId(list, userId: caller.id)
            var changed = true
            if try db.queryOne("SELECT 1 FROM items WHERE list_id = ? AND place_id = ?", listId, request.placeId) != nil {
                if request.note != nil {
                    try db.run("UPDATE items SET note = ? WHERE list_id = ? AND place_id = ? AND note IS NOT ?", note, listId, request.placeId, note)
                }
                changed = db.changes > 0 && request.note != nil
            } else {
                try insertItem(listId: listId, list: list, placeId: request.placeId, note: note)
            }
            if changed { try pushChanged(FavoritesChange(change: .saved, list: list.name, placeId: request.placeId), caller: caller) }
            return ItemChanged(placeId: request.placeId, list: list.name, saved: true, changed: changed, count: try itemCount(listId))
        }
    }

    /// `favorites.remove`: takes a place out of a list; one that is not there is no error
    /// (`changed: false`), so a retried swipe does not fail.
    func remove(_ request: RemoveRequest, caller: Caller) throws -> ItemChanged {
        guard request.placeId > 0 else { throw ServiceError.invalid("place_id", "must be a positive place id") }
        let list = try findList(request.list, userId: caller.id)
        var changed = false
        if let id = list.id {
            try db.run("DELETE FROM items WHERE list_id = ? AND place_id = ?", id, request.placeId)
            changed = db.changes > 0
            if changed && list.isVisited { try publishUnvisit(user: caller.id, place: request.placeId) }
        }
        if changed { try pushChanged(FavoritesChange(change: .removed, list: list.name, placeId: request.placeId), caller: caller) }
        return ItemChanged(placeId: request.placeId, list: list.name, saved: false, changed: changed, count: try itemCount(list.id))
    }

    /// `favorites.visited.add`: the place is in the `visited` list with `visited_at` = `at`
    /// (default now; at most `visitSkewMs` ahead of the server). Marking it again sets the new
    /// time, so a wrong date can be corrected.
    func visit(_ request: VisitedRequest, caller: Caller, context: RequestContext) throws -> VisitedReply {
        let now = self.now
        let at = try request.at.map { text throws(ServiceError) in try RFC3339.milliseconds(text, field: "at") } ?? now
        guard at <= now + Items.visitSkewMs else { throw ServiceError.invalid("at", "must not be in the future") }
        guard at >= 0 else { throw ServiceError.invalid("at", "must be after 1970") }
        try ensurePlace(request.placeId, context: context)
        return try db.transaction(.immediate) { () throws -> VisitedReply in
            let list = try findList(Lists.visited, userId: caller.id)
            let listId = try listId(list, userId: caller.id)
            if try db.queryOne("SELECT 1 FROM items WHERE list_id = ? AND place_id = ?", listId, request.placeId) != nil {
                try db.run("UPDATE items SET visited_at = ? WHERE list_id = ? AND place_id = ?", at, listId, request.placeId)
                try publishVisit(user: caller.id, place: request.placeId, at: at)
            } else {
                try insertItem(listId: listId, list: list, placeId: request.placeId, note: nil, visitedAt: at)
            }
            try pushChanged(FavoritesChange(change: .visited, list: list.name, placeId: request.placeId), caller: caller)
            return VisitedReply(placeId: request.placeId, list: list.name, visitedAt: Self.timestamp(at), count: try itemCount(listId))
        }
    }

    /// `favorites.contains`: for each of 1 to 100 place ids the caller saved, the lists it is
    /// in (built-ins first, then own lists as made); places saved nowhere are left out.
    func contains(_ ids: [Int64], userId: Int64) throws -> ContainsReply {
        guard !ids.isEmpty, ids.count <= 100 else { throw ServiceError.invalid("place_ids", "must hold 1 to 100 place ids") }
        var order: [Int64] = []
        var seen = Set<Int64>()
        for id in ids where seen.insert(id).inserted { order.append(id) }
        let marks = Array(repeating: "?", count: order.count).joined(separator: ", ")
        var lists: [Int64: [(rank: Int, name: String)]] = [:]
        try db.forEachRow(
            """
            SELECT i.place_id, l.id, l.name, l.builtin FROM lists l JOIN items i ON i.list_id = l.id
            WHERE l.user_id = ? AND i.place_id IN (\(marks))
            """, [userId] + order
        ) { row in
            let name: String = try row.decode("name")
            let builtin = try row.decode("builtin", as: Int64.self) == 1
            let rank = builtin ? (Lists.builtIns.firstIndex(of: name) ?? 0) : 10 + Int(try row.decode("id", as: Int64.self))
            lists[try row.decode("place_id"), default: []].append((rank, name))
        }
        return ContainsReply(
            saved: order.compactMap { id in
                lists[id].map { Contained(placeId: id, lists: $0.sorted { $0.rank < $1.rank }.map(\.name)) }
            })
    }

    /// `favorites.list`: one page of the caller's list.
    func page(_ request: ListRequest, userId: Int64) throws -> ItemPage {
        let limit = try PageLimit.listItems.validated(request.limit)
        let near = try request.near.map { point throws(GeoError) in try Coordinate(latitude: point.lat, longitude: point.lon) }
        let sort = try ItemOrder(request.sort ?? "added", near: near)
        let list = try findList(request.list, userId: userId)
        let after = try request.cursor.map { cursor throws(ServiceError) in try ItemCursor(cursor, sort: sort) }
        guard let id = list.id else { return ItemPage(list: list.name, items: [], nextCursor: nil) }
        return try itemPage(listId: id, name: list.name, sort: sort, near: near, after: after, limit: limit, notes: true)
    }

    /// A page of list row `listId` in `sort` order after `after`, at most `limit` items and
    /// `pageBudgetBytes` bytes of them; `notes` false leaves the owner's notes out (a share).
    func itemPage(listId: Int64, name: String, sort: ItemOrder, near: Coordinate?, after: ItemCursor?, limit: Int, notes: Bool) throws -> ItemPage {
        let select = """
            SELECT \(PlaceCard.columns), i.note, i.added_at, i.visited_at
            FROM items i JOIN places p ON p.id = i.place_id LEFT JOIN ratings r ON r.place_id = p.id
            """
        var rows: [Row]
        switch sort {
        case .added:
            // Newest first.
            let key = after ?? ItemCursor(sort: .added, added: .max, distance: 0, placeId: .max, name: nil)
            rows = try db.query(
                """
                \(select) WHERE i.list_id = ? AND (i.added_at < ? OR (i.added_at = ? AND i.place_id < ?))
                ORDER BY i.added_at DESC, i.place_id DESC LIMIT ?
                """, listId, key.added, key.added, key.placeId, limit + 1)
        case .name:
            let key = after ?? ItemCursor(sort: .name, added: 0, distance: 0, placeId: 0, name: "")
            rows = try db.query(
                """
                \(select) WHERE i.list_id = ? AND (p.name > ? COLLATE NOCASE OR (p.name = ? COLLATE NOCASE AND p.id > ?))
                ORDER BY p.name COLLATE NOCASE, p.id LIMIT ?
                """, listId, key.name ?? "", key.name ?? "", key.placeId, limit + 1)
        case .distance:
            // Every item's point (at most maxItemsPerList), read column by column without
            // making rows; those after the cursor's key are sorted by distance, and only the
            // page's are then read whole.
            guard let near else { throw ServiceError.invalid("sort", "distance needs near") }
            var points: [(distance: Double, id: Int64)] = []
            try db.forEachStep("SELECT p.id, p.lat, p.lon FROM items i JOIN places p ON p.id = i.place_id WHERE i.list_id = ?", [listId]) { step in
                let point = (distance: near.distance(to: Coordinate(uncheckedLatitude: step.double(1), longitude: step.double(2))), id: step.int64(0))
                if let key = after, point <= (key.distance, key.placeId) { return }
                points.append(point)
            }
            points.sort { $0 < $1 }
            // The page's rows in one query, put back in distance order.
            let page = points.prefix(limit + 1).map(\.id)
            var byId: [Int64: Row] = [:]
            if !page.isEmpty {
                let marks = Array(repeating: "?", count: page.count).joined(separator: ",")
                for row in try db.query("\(select) WHERE i.list_id = ? AND i.place_id IN (\(marks))", [listId] + page.map { $0 as (any SQLBindable)? }) {
                    byId[try row.decode("id")] = row
                }
            }
            rows = page.compactMap { byId[$0] }
        }
        var filler = PageFiller<ItemCursor>(limit: limit, budget: options.pageBudgetBytes)
        var items: [UInt8] = []
        var item: [UInt8] = []
        for row in rows where !filler.isFull {
            let card = try PlaceCard(row: row)
            let distance = near.map { $0.distance(to: Coordinate(uncheckedLatitude: card.lat, longitude: card.lon)) }
            let addedAt: Int64 = try row.decode("added_at")
            item.removeAll(keepingCapacity: true)
            ListItem(
                place: card, note: notes ? try row.decode("note", as: String?.self) : nil,
                addedAt: Self.timestamp(addedAt), visitedAt: try row.decode("visited_at", as: Int64?.self).map(Self.timestamp),
                distanceM: distance
            ).appendJSON(to: &item)
            let key = ItemCursor(sort: sort, added: addedAt, distance: distance ?? 0, placeId: card.id, name: sort == .name ? card.name : nil)
            let taken = filler.items.count
            _ = filler.add(key, size: item.count)
            guard filler.items.count > taken else { break }
            if taken > 0 { items.append(UInt8(ascii: ",")) }
            items += item
        }
        // limit + 1 rows were read: any row left out means more follow.
        let more = rows.count > filler.items.count
        return ItemPage(list: name, items: items, nextCursor: more ? filler.items.last?.encoded : nil)
    }
}

/// The orders of `favorites.list`: newest first, by place name, or nearest first.
enum ItemOrder: String {
    case added, name, distance

    /// The order `sort` names; `distance` needs a `near` point.
    init(_ sort: String, near: Coordinate?) throws(ServiceError) {
        guard sort.utf8.count <= 16, let order = ItemOrder(rawValue: sort) else { throw .invalid("sort", "must be added, name or distance") }
        if order == .distance && near == nil { throw .invalid("sort", "distance needs near {lat, lon}") }
        self = order
    }
}

/// Where a page of a list ends: the last item's sort key and place id, so the next page
/// starts right after it whatever was added or removed meanwhile (keyset paging).
struct ItemCursor {
    var sort: ItemOrder
    /// `added_at` in milliseconds (the added order).
    var added: Int64
    /// The distance in metres (the distance order).
    var distance: Double
    var placeId: Int64
    /// The place's name (the name order).
    var name: String?

    init(sort: ItemOrder, added: Int64, distance: Double, placeId: Int64, name: String?) {
        self.sort = sort
        self.added = added
        self.distance = distance
        self.placeId = placeId
        self.name = name
    }

    /// The cursor a client sent; `invalid_argument` on `cursor` when it is not one of this
    /// order's.
    init(_ text: String, sort: ItemOrder) throws(ServiceError) {
        guard text.utf8.count <= Items.maxCursorLength else { throw OpaqueCursor.invalid }
        let plain = try OpaqueCursor.decode(text, maxLength: Items.maxCursorLength)
        let parts = plain.split(separator: "|", maxSplits: 3, omittingEmptySubsequences: false)
        guard parts.count == 4, parts[0] == sort.rawValue, let placeId = Int64(parts[2]) else { throw OpaqueCursor.invalid }
        switch sort {
        case .added:
            guard let added = Int64(parts[1]) else { throw OpaqueCursor.invalid }
            self.init(sort: sort, added: added, distance: 0, placeId: placeId, name: nil)
        case .distance:
            guard let distance = Double(parts[1]), distance.isFinite else { throw OpaqueCursor.invalid }
            self.init(sort: sort, added: 0, distance: distance, placeId: placeId, name: nil)
        case .name:
            self.init(sort: sort, added: 0, distance: 0, placeId: placeId, name: String(parts[3]))
        }
    }

    /// The opaque text clients hand back: `added|ms|id|`, `distance|m|id|`, `name|0|id|name`.
    var encoded: String {
        let number =
            switch sort {
            case .added: String(added)
            case .distance: "\(distance)"
            case .name: "0"
            }
        return OpaqueCursor.encode("\(sort.rawValue)|\(number)|\(placeId)|\(name ?? "")")
    }
}
