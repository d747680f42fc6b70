import Bus

// The search service's methods: places near a point, in a box, by words, popular now; directions.
// Declared once here; the service binds its handlers to them (see Method.swift).

extension Methods.Search {
    public static let nearby = Method<NearbyQuery, SearchPage>(
        "search.nearby", .search, .anyone, .read,
        "places within radius_m of lat/lon, by distance (or rating, popularity), filtered, paged")
    public static let viewport = Method<ViewportQuery, SearchPage>(
        "search.viewport", .search, .anyone, .read,
        "places inside a map box south/west/north/east (may cross the 180th meridian), paged")
    public static let text = Method<TextQuery, SearchPage>(
        "search.text", .search, .anyone, .read,
        "places matching words q (typos forgiven), optionally near a point or in a box, by relevance, paged")
    public static let autocomplete = Method<AutocompleteQuery, Suggestions>(
        "search.autocomplete", .search, .anyone, .read,
        "place names and categories starting with prefix, with match offsets")
    public static let popular = Method<PopularQuery, PopularPage>(
        "search.popular", .search, .anyone, .read,
        "the places to show at `at` (default now), near a point or in a box: events in season first, then by popularity")
}

extension Methods.Directions {
    public static let get = Method<DirectionsQuery, Directions>(
        "directions.get", .search, .anyone, .read,
        "the route from a point to a place or point by mode: length, time, polyline and steps, or an estimate that says why",
        errors: [.notFound("to", "no place has this id")])
    public static let matrix = Method<MatrixQuery, TravelMatrix>(
        "directions.matrix", .search, .anyone, .read,
        "routed times and lengths from up to 25 sources to up to 25 destinations, by mode",
        errors: [.invalid("sources", "must hold 1 to 25 points"), .invalid("destinations", "must hold 1 to 25 points")])
    public static let plan = Method<TripQuery, TripPlan>(
        "directions.plan", .search, .anyone, .read,
        "the order of up to 25 places from a start that makes the trip quickest by routed times (exact up to 12), with its legs",
        errors: [.notFound("place_ids[i]", "no place has this id")])
}

extension Methods {
    /// The methods the search service answers.
    static let searchOwned: [any DeclaresMethod] = [
        Methods.Search.nearby, Methods.Search.viewport, Methods.Search.text,
        Methods.Search.autocomplete, Methods.Search.popular, Methods.Directions.get,
        Methods.Directions.matrix, Methods.Directions.plan, Methods.Geo.search, Methods.Geo.reverse,
    ]
}
