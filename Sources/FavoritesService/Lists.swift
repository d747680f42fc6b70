import Bus
import Contracts
import Foundation
import ServiceKit
import Storage

/// Each user's lists of saved places: the built-ins `favorites`, `visited` and `want_to_go`,
/// which every user has (their rows are made at the first write into them), and up to
/// `maxOwnLists` of their own. Items (`Items.swift`), shares (`Shares.swift`) and the counts
/// published for search (`Counts.swift`) hang off these lists.
enum Lists {
    /// The built-in lists, in the order `favorites.lists` shows them.
    static let builtIns = ["favorites", "visited", "want_to_go"]
    /// The list a request means when it names none.
    static let defaultList = "favorites"
    /// The list whose items carry `visited_at`.
    static let visited = "visited"

    static let migrations: [Migration] = [
        Migration(
            domain: "lists", version: 1,
            sql: """
                CREATE TABLE lists (
                    id         INTEGER PRIMARY KEY,
                    user_id    INTEGER NOT NULL,
                    name       TEXT NOT NULL COLLATE NOCASE,
                    builtin    INTEGER NOT NULL CHECK (builtin IN (0, 1)),
                    created_at INTEGER NOT NULL,
                    UNIQUE (user_id, name)
                );
                CREATE TABLE items (
                    list_id    INTEGER NOT NULL REFERENCES lists(id) ON DELETE CASCADE,
                    place_id   INTEGER NOT NULL REFERENCES places(id) ON DELETE CASCADE,
                    note       TEXT,
                    added_at   INTEGER NOT NULL,
                    visited_at INTEGER,
                    PRIMARY KEY (list_id, place_id)
                ) WITHOUT ROWID;
                CREATE INDEX items_place ON items(place_id);
                CREATE INDEX items_added ON items(list_id, added_at, place_id);
                CREATE TABLE shares (
                    token      TEXT PRIMARY KEY,
                    list_id    INTEGER NOT NULL UNIQUE REFERENCES lists(id) ON DELETE CASCADE,
                    created_at INTEGER NOT NULL
                );
                CREATE TABLE toggle_requests (
                    user_id    INTEGER NOT NULL,
                    request_id TEXT NOT NULL,
                    place_id   INTEGER NOT NULL,
                    list       TEXT NOT NULL,
                    reply      TEXT NOT NULL,
                    at         INTEGER NOT NULL,
                    PRIMARY KEY (user_id, request_id)
                ) WITHOUT ROWID;
                CREATE INDEX toggle_requests_user_at ON toggle_requests(user_id, at);
                CREATE INDEX toggle_requests_at ON toggle_requests(at);
                -- Places whose counts are due to be recounted (and published if they changed).
                CREATE TABLE counts_due (place_id INTEGER PRIMARY KEY);
                -- The counts last published of each place with saves or visits, and when a visit
                -- leaves the 30-day window (a recount with no write).
                CREATE TABLE place_counts (
                    place_id   INTEGER PRIMARY KEY,
                    saves      INTEGER NOT NULL,
                    visits_30d INTEGER NOT NULL,
                    recount_at INTEGER
                );
                CREATE INDEX place_counts_recount ON place_counts(recount_at) WHERE recount_at IS NOT NULL;
                -- Every change of an item marks its place due, however it happens: a request, a
                -- list deleted, a user erased, a place the catalog deleted (ON DELETE CASCADE).
                CREATE TRIGGER items_due_insert AFTER INSERT ON items BEGIN
                    INSERT OR IGNORE INTO counts_due (place_id) VALUES (new.place_id);
                END;
                CREATE TRIGGER items_due_delete AFTER DELETE ON items BEGIN
                    INSERT OR IGNORE INTO counts_due (place_id) VALUES (old.place_id);
                END;
                CREATE TRIGGER items_due_visit AFTER UPDATE OF visited_at ON items BEGIN
                    INSERT OR IGNORE INTO counts_due (place_id) VALUES (new.place_id);
                END;
                """)
    ]

    static func register(_ table: inout HandlerTable<FavoritesStore>) {
        Items.register(&table)
        table.on(Methods.Favorites.lists) { (_: Empty, caller, _, store) -> ListsReply in
            try store.lists(of: caller.id)
        }
        table.on(Methods.Favorites.listsCreate) { (request: ListName, caller, _, store) -> ListInfo in
            try store.createList(request.name, caller: caller)
        }
        table.on(Methods.Favorites.listsRename) { (request: RenameRequest, caller, _, store) -> ListInfo in
            try store.renameList(request.name, to: request.newName, caller: caller)
        }
        table.on(Methods.Favorites.listsDelete) { (request: ListName, caller, _, store) -> ListDeleted in
            try store.deleteList(request.name, caller: caller)
        }
        Shares.register(&table)
        Counts.register(&table)
    }

    /// Erases every list, item, share and idempotency record of user `id`; the places they had
    /// are marked due by the items' trigger, so the next flush republishes their counts.
    static func erase(user id: Int64, _ scope: EventScope) throws {
        let db = scope.db
        try db.run("DELETE FROM items WHERE list_id IN (SELECT id FROM lists WHERE user_id = ?)", id)
        try db.run("DELETE FROM shares WHERE list_id IN (SELECT id FROM lists WHERE user_id = ?)", id)
        try db.run("DELETE FROM lists WHERE user_id = ?", id)
        try db.run("DELETE FROM toggle_requests WHERE user_id = ?", id)
    }

    /// The built-in that `name` means (ASCII case ignored, as list names compare), or nil.
    static func builtIn(_ name: String) -> String? {
        builtIns.first { $0.caseInsensitiveCompare(name) == .orderedSame && $0.utf8.count == name.utf8.count }
    }
}

/// One of a user's lists: its row's id (nil for a built-in not yet written to) and its name.
struct ListRef {
    var id: Int64?
    var name: String
    var builtin: Bool

    /// Whether this is the built-in `visited` list, whose items carry `visited_at`.
    var isVisited: Bool { builtin && name == Lists.visited }
}

extension FavoritesStore {
    /// The caller's list `name` (the default list when nil), or `not_found` naming `field`:
    /// a built-in always exists, an own list only once made. Names compare as stored
    /// (ASCII letters without case).
    func findList(_ name: String?, userId: Int64, field: String = "list") throws -> ListRef {
        let name = name ?? Lists.defaultList
        // Bounded before it reaches SQL: no list name is longer.
        guard name.utf8.count <= ListName.nameRule.maxBytes else { throw ServiceError(.notFound, "you have no list by that name", field: field) }
        if let row = try db.queryOne("SELECT id, name, builtin FROM lists WHERE user_id = ? AND name = ?", userId, name) {
            return ListRef(id: try row.decode("id"), name: try row.decode("name"), builtin: try row.decode("builtin", as: Int64.self) == 1)
        }
        if let builtIn = Lists.builtIn(name) { return ListRef(id: nil, name: builtIn, builtin: true) }
        throw ServiceError(.notFound, "you have no list by that name", field: field)
    }

    /// The row id of `list`, making the row of a built-in at its first write. Call it inside
    /// the write's transaction.
    func listId(_ list: ListRef, userId: Int64) throws -> Int64 {
        if let id = list.id { return id }
        try refuseErased(userId)
        try db.run("INSERT OR IGNORE INTO lists (user_id, name, builtin, created_at) VALUES (?, ?, 1, ?)", userId, list.name, now)
        guard let id = try db.scalarInt("SELECT id FROM lists WHERE user_id = ? AND name = ?", userId, list.name) else {
            throw ServiceError(.internal, "built-in list \(list.name) was not made")
        }
        return id
    }

    /// How many items list row `id` holds (0 for a built-in with no row yet).
    func itemCount(_ id: Int64?) throws -> Int {
        guard let id else { return 0 }
        return Int(try db.scalarInt("SELECT count(*) FROM items WHERE list_id = ?", id) ?? 0)
    }

    /// `favorites.lists`: the built-ins first, in their order, then the own lists as made.
    func lists(of userId: Int64) throws -> ListsReply {
        var rows: [String: ListInfo] = [:]
        var own: [ListInfo] = []
        try db.forEachRow(
            """
            SELECT l.name, l.builtin, (SELECT count(*) FROM items i WHERE i.list_id = l.id) AS count,
                EXISTS (SELECT 1 FROM shares s WHERE s.list_id = l.id) AS shared
            FROM lists l WHERE l.user_id = ? ORDER BY l.id
            """, [userId]
        ) { row in
            let info = ListInfo(
                name: try row.decode("name"), builtin: try row.decode("builtin", as: Int64.self) == 1,
                count: Int(try row.decode("count", as: Int64.self)), shared: try row.decode("shared", as: Int64.self) == 1)
            if info.builtin { rows[info.name] = info } else { own.append(info) }
        }
        let builtIns = Lists.builtIns.map { rows[$0] ?? ListInfo(name: $0, builtin: true, count: 0, shared: false) }
        return ListsReply(lists: builtIns + own)
    }

    /// A checked new list name: trimmed, 1 to 100 characters, with no invisible character
    /// (`Fav\u{200B}orites` would pass for `favorites`), not a built-in's, not taken by another
    /// of the user's lists (`except` the one being renamed).
    private func checkedNewName(_ raw: String, rule: TextRule, userId: Int64, except: Int64? = nil) throws -> String {
        let name = try rule.trimmed(raw)
        guard !name.isEmpty else { throw ServiceError.invalid(rule.field, "must not be empty") }
        guard !name.unicodeScalars.contains(where: TextRule.isInvisible) else {
            throw ServiceError.invalid(rule.field, "must not contain invisible characters (zero-width spaces and joiners, soft hyphens and the like)")
        }
        if Lists.builtIn(name) != nil { throw ServiceError(.alreadyExists, "\(name) is a built-in list", field: rule.field) }
        if let other = try db.scalarInt("SELECT id FROM lists WHERE user_id = ? AND name = ?", userId, name), other != except {
            throw ServiceError(.alreadyExists, "you already have a list by that name", field: rule.field)
        }
        return name
    }

    /// `favorites.lists.create`: a new own list, at most `maxOwnLists` of them.
    func createList(_ raw: String, caller: Caller) throws -> ListInfo {
        let name = try checkedNewName(raw, rule: ListName.nameRule, userId: caller.id)
        try refuseErased(caller.id)
        let own = try db.scalarInt("SELECT count(*) FROM lists WHERE user_id = ? AND builtin = 0", caller.id) ?? 0
        guard own < options.maxOwnLists else {
            throw ServiceError(.conflict, "you have \(options.maxOwnLists) lists of your own, the most there may be; delete one first", field: "name")
        }
        try db.run("INSERT INTO lists (user_id, name, builtin, created_at) VALUES (?, ?, 0, ?)", caller.id, name, now)
        try pushChanged(FavoritesChange(change: .listCreated, list: name), caller: caller)
        return ListInfo(name: name, builtin: false, count: 0, shared: false)
    }

    /// The caller's own list `name`: `not_found` when there is none, `invalid_argument` for a
    /// built-in (which can be neither renamed nor deleted).
    private func ownList(_ name: String, userId: Int64, doing: String) throws -> (id: Int64, name: String) {
        let list = try findList(name, userId: userId, field: "name")
        guard !list.builtin, let id = list.id else { throw ServiceError.invalid("name", "\(list.name) is a built-in list, which cannot be \(doing)") }
        return (id, list.name)
    }

    /// `favorites.lists.rename`: gives an own list a new name (a change of case alone is one).
    func renameList(_ name: String, to raw: String, caller: Caller) throws -> ListInfo {
        let list = try ownList(name, userId: caller.id, doing: "renamed")
        let newName = try checkedNewName(raw, rule: RenameRequest.newNameRule, userId: caller.id, except: list.id)
        try db.run("UPDATE lists SET name = ? WHERE id = ?", newName, list.id)
        try pushChanged(FavoritesChange(change: .listRenamed, list: newName), caller: caller)
        let shared = try db.queryOne("SELECT 1 FROM shares WHERE list_id = ?", list.id) != nil
        return ListInfo(name: newName, builtin: false, count: try itemCount(list.id), shared: shared)
    }

    /// `favorites.lists.delete`: an own list goes with its items and its share.
    func deleteList(_ name: String, caller: Caller) throws -> ListDeleted {
        let list = try ownList(name, userId: caller.id, doing: "deleted")
        try db.run("DELETE FROM lists WHERE id = ?", list.id)
        try pushChanged(FavoritesChange(change: .listDeleted, list: list.name), caller: caller)
        return ListDeleted(name: list.name)
    }
}
