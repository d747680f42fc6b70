import Bus

// The favorites service's methods: saved places and lists, share links, map pins, recent searches.
// Declared once here; the service binds its handlers to them (see Method.swift).

extension Methods.Pins {
    public static let add = Method<PinAdd, PinJSON>(
        "pins.add", .favorites, .user, .write,
        "pin a point of your own: lat, lon, title? (100 characters), note? (500 characters); at most 1000 pins",
        errors: [
            .unauthenticated(nil, "the account was deleted moments ago"),
            .conflict(nil, "you have 1000 pins already"),
        ])
    public static let list = Method<PinListRequest, PinPage>(
        "pins.list", .favorites, .user, .read,
        "your pins: near {lat, lon, radius_m?} nearest first, or inside bbox {south, west, north, east}, or newest first; paged")
    public static let update = Method<PinUpdate, PinJSON>(
        "pins.update", .favorites, .user, .write,
        "change your pin id: lat and lon, title, note (null clears title or note)",
        errors: [.notFound("id", "you have no pin with this id")])
    public static let delete = Method<PinRef, PinDeleted>(
        "pins.delete", .favorites, .user, .write,
        "delete your pin id",
        errors: [.notFound("id", "you have no pin with this id")])
}

extension Methods.Favorites {
    public static let toggle = Method<ToggleRequest, ToggleReply>(
        "favorites.toggle", .favorites, .user, .write,
        "save or unsave a place: place_id, list? (favorites), request_id? (a retry answers as the first)",
        errors: [
            .notFound("list", "you have no list by that name"),
            .conflict("request_id", "this request_id was used for another place or list"),
            .unavailable(nil, "the catalog does not answer, or favorites is busy asking it"),
            .notFound("place_id", "no place has this id"),
            .unauthenticated(nil, "the account was deleted moments ago"),
            .conflict("list", "the list holds 10000 places, or your lists 25000 together"),
        ])
    public static let add = Method<AddRequest, ItemChanged>(
        "favorites.add", .favorites, .user, .write,
        "save a place: place_id, list? (favorites), note? (up to 500 characters); again updates the note",
        errors: [
            .notFound("list", "you have no list by that name"),
            .unavailable(nil, "the catalog does not answer, or favorites is busy asking it"),
            .notFound("place_id", "no place has this id"),
            .unauthenticated(nil, "the account was deleted moments ago"),
            .conflict("list", "the list holds 10000 places, or your lists 25000 together"),
        ], retrySafe: true)
    public static let remove = Method<RemoveRequest, ItemChanged>(
        "favorites.remove", .favorites, .user, .write,
        "unsave a place: place_id, list? (favorites); one not saved is no error",
        errors: [.notFound("list", "you have no list by that name")], retrySafe: true)
    public static let visitedAdd = Method<VisitedRequest, VisitedReply>(
        "favorites.visited.add", .favorites, .user, .write,
        "mark a place visited: place_id, at? (RFC 3339, default now)",
        errors: [
            .unavailable(nil, "the catalog does not answer, or favorites is busy asking it"),
            .notFound("place_id", "no place has this id"),
            .unauthenticated(nil, "the account was deleted moments ago"),
            .conflict(nil, "the list holds 10000 places, or your lists 25000 together"),
        ])
    public static let list = Method<ListRequest, ListPage>(
        "favorites.list", .favorites, .user, .read,
        "a list's places: list?, near? {lat, lon}, sort? (added, name, distance), limit?, cursor?",
        errors: [.notFound("list", "you have no list by that name")])
    public static let contains = Method<ContainsRequest, ContainsReply>(
        "favorites.contains", .favorites, .user, .read,
        "which of place_ids (1-100) you saved, and in which lists")
    public static let countsFlush = Method<Empty, Flushed>(
        "favorites.counts.flush", .favorites, .internal, .write,
        "the service's own, every second: publish the counts of places that changed")
    public static let share = Method<ListShareRequest, ShareReply>(
        "favorites.share", .favorites, .user, .write,
        "a read-only link to one of your lists: list; again answers the live token",
        errors: [
            .notFound("list", "you have no list by that name"),
            .unauthenticated(nil, "the account was deleted moments ago"),
        ])
    public static let shareRevoke = Method<ListShareRequest, Revoked>(
        "favorites.share.revoke", .favorites, .user, .write,
        "end the link to one of your lists: list",
        errors: [.notFound("list", "you have no list by that name")])
    public static let shared = Method<SharedRequest, ListPage>(
        "favorites.shared", .favorites, .anyone, .read,
        "a shared list by its token (no sign-in needed): token, limit?, cursor?",
        errors: [.notFound("token", "no shared list has this token (unknown or revoked)")], ownsTokenParam: true)
    public static let lists = Method<Empty, ListsReply>(
        "favorites.lists", .favorites, .user, .read,
        "your lists with their counts: favorites, visited, want_to_go, then your own")
    public static let listsCreate = Method<ListName, ListInfo>(
        "favorites.lists.create", .favorites, .user, .write,
        "make a list of your own: name (1-100 characters; at most 100 lists)",
        errors: [
            .alreadyExists("name", "a built-in list or one of yours has this name"),
            .unauthenticated(nil, "the account was deleted moments ago"),
            .conflict("name", "you have 100 lists of your own already"),
        ])
    public static let listsRename = Method<RenameRequest, ListInfo>(
        "favorites.lists.rename", .favorites, .user, .write,
        "rename one of your own lists: name, new_name",
        errors: [
            .notFound("name", "you have no list by that name"),
            .alreadyExists("new_name", "a built-in list or another of yours has this name"),
        ])
    public static let listsDelete = Method<ListName, ListDeleted>(
        "favorites.lists.delete", .favorites, .user, .write,
        "delete one of your own lists and its items: name",
        errors: [.notFound("name", "you have no list by that name")])
}

extension Methods.Search {
    public static let recent = Method<RecentRequest, RecentPage>(
        "search.recent", .favorites, .user, .read,
        "your last different text searches, newest first: limit? (1-50, default 50)")
    public static let recentClear = Method<Empty, RecentCleared>(
        "search.recent.clear", .favorites, .user, .write,
        "forget your recent searches")
}

extension Methods {
    /// The methods the favorites service answers.
    static let favoritesOwned: [any DeclaresMethod] = [
        Methods.Pins.add, Methods.Pins.list, Methods.Pins.update,
        Methods.Pins.delete, Methods.Favorites.toggle, Methods.Favorites.add,
        Methods.Favorites.remove, Methods.Favorites.visitedAdd, Methods.Favorites.list,
        Methods.Favorites.contains, Methods.Favorites.countsFlush, Methods.Favorites.share,
        Methods.Favorites.shareRevoke, Methods.Favorites.shared, Methods.Favorites.lists,
        Methods.Favorites.listsCreate, Methods.Favorites.listsRename, Methods.Favorites.listsDelete,
        Methods.Search.recent, Methods.Search.recentClear,
    ]
}
