import Bus
import Foundation
import Geo
import Storage

/// A point given with a text search.
public struct Point: Codable, Sendable, Equatable {
    public var lat: Double
    public var lon: Double
}

/// `search.text`: places whose name, category, address or description match `q`.
public struct TextQuery: Decodable, Sendable {
    public var q: String
    public var near: Point?
    public var radiusM: Double?
    public var bbox: BoxBounds?
    public var filters: PlaceFilters
    public var sort: TextSort?
    public var limit: Int?
    public var cursor: String?

    public struct BoxBounds: Codable, Sendable, Equatable {
        public var south: Double
        public var west: Double
        public var north: Double
        public var east: Double
    }

    enum CodingKeys: String, CodingKey {
        case q, near, bbox, sort, limit, cursor, lang
        case radiusM = "radius_m"
    }

    public init(from decoder: Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        q = try c.decode(String.self, forKey: .q)
        near = try c.decodeIfPresent(Point.self, forKey: .near)
        radiusM = try c.decodeIfPresent(Double.self, forKey: .radiusM)
        bbox = try c.decodeIfPresent(BoxBounds.self, forKey: .bbox)
        if let name = try c.decodeIfPresent(String.self, forKey: .sort) {
            guard let order = TextSort(rawValue: name) else {
                throw ServiceError.invalid("sort", "unknown sort '\(name)'; use relevance, distance, rating or popularity")
            }
            sort = order
        }
        limit = try c.decodeIfPresent(Int.self, forKey: .limit)
        cursor = try c.decodeIfPresent(String.self, forKey: .cursor)
        _ = try c.decodeIfPresent(String.self, forKey: .lang)
        filters = try PlaceFilters(from: decoder)
    }
}

/// Orders of `search.text`.
public enum TextSort: String, Sendable {
    case relevance, distance, rating, popularity
}

/// `search.autocomplete`: place names and categories starting with what was typed.
public struct AutocompleteQuery: Codable, Sendable {
    public var prefix: String
    public var near: Point?
    public var limit: Int?
}

/// One autocomplete suggestion, with where the typed words match in `text` (UTF-16 offsets, end exclusive).
public struct Suggestion: Codable, Sendable, Equatable {
    public var kind: String
    public var text: String
    public var id: Int64?
    public var category: String?
    public var distanceM: Double?
    public var highlights: [[Int]]

    enum CodingKeys: String, CodingKey {
        case kind, text, id, category, highlights
        case distanceM = "distance_m"
    }
}

/// The reply of `search.autocomplete`.
public struct Suggestions: Codable, Sendable, Equatable {
    public var suggestions: [Suggestion]
}

/// Text search over FTS5 (words folded for case and diacritics, prefix indexes), with typo
/// tolerance from the index's own vocabulary. User input never reaches FTS5 syntax: it is
/// cut into words and each word is quoted.
struct TextQueries {
    let db: Database
    /// The catalog's category ids, when known.
    var knownCategories: Set<String>? = nil
    static let maxQuery = 200
    /// Most text matches ranked for one query; paging goes no further.
    static let maxCandidates = 2_000

    /// Letters and digits folded as the index folds them, split into words.
    static func words(_ text: String) -> [String] {
        text.folding(options: [.caseInsensitive, .diacriticInsensitive], locale: nil)
            .split { !($0.isLetter || $0.isNumber) }
            .map(String.init)
    }

    /// An FTS5 string literal: the word in double quotes, inner quotes doubled.
    static func quoted(_ word: String) -> String { "\"" + word.replacingOccurrences(of: "\"", with: "\"\"") + "\"" }

    /// The typos a word of this length may have: one from 5 letters, two from 9.
    static func allowedTypos(_ word: String) -> Int { word.count >= 9 ? 2 : word.count >= 5 ? 1 : 0 }

    /// One word of a query: the word as typed, the near spellings it may stand for, and
    /// whether it matches as a prefix (the last word, unless followed by a space).
    struct QueryWord: Equatable {
        var typed: String
        var spellings: [String]
        var prefix: Bool

        /// Whether one of `words` (a name's words, say) matches this query word.
        func matches(any words: [String]) -> Bool {
            words.contains { word in word == typed || (prefix && word.hasPrefix(typed)) || spellings.contains(word) }
        }
    }

    /// The query's words with the near spellings of those the index does not know.
    func queryWords(_ words: [String], prefixLast: Bool) throws -> [QueryWord] {
        try words.enumerated().map { i, word in
            let prefix = prefixLast && i == words.count - 1
            let spellings = try TextQueries.allowedTypos(word) > 0 && !known(word, prefix: prefix) ? nearSpellings(word) : []
            return QueryWord(typed: word, spellings: spellings, prefix: prefix)
        }
    }

    /// The MATCH expression: every word must match, through any of its spellings.
    static func expression(_ words: [QueryWord]) -> String {
        words.map { word in
            let alternatives = [quoted(word.typed) + (word.prefix ? " *" : "")] + word.spellings.map(quoted)
            return alternatives.count == 1 ? alternatives[0] : "(" + alternatives.joined(separator: " OR ") + ")"
        }.joined(separator: " AND ")
    }

    /// Whether the index has the word (or, as a prefix, a word starting with it).
    private func known(_ word: String, prefix: Bool) throws -> Bool {
        if prefix {
            return try db.scalarInt("SELECT 1 FROM places_vocab WHERE term >= ? AND term < ? LIMIT 1", word, word + "\u{10FFFF}") != nil
        }
        return try db.scalarInt("SELECT 1 FROM places_vocab WHERE term = ? LIMIT 1", word) != nil
    }

    /// Words of the index within the allowed edit distance of `word`, sharing its first letter.
    private func nearSpellings(_ word: String) throws -> [String] {
        guard let first = word.first else { return [] }
        let allowed = TextQueries.allowedTypos(word)
        let start = String(first), end = String(first) + "\u{10FFFF}"
        var found: [(String, Int)] = []
        for row in try db.query("SELECT term FROM places_vocab WHERE term >= ? AND term < ?", start, end) {
            guard let term = row.string(0), abs(term.count - word.count) <= allowed else { continue }
            let distance = TextQueries.editDistance(Array(word), Array(term), limit: allowed)
            if distance <= allowed { found.append((term, distance)) }
        }
        return found.sorted { $0.1 != $1.1 ? $0.1 < $1.1 : $0.0 < $1.0 }.prefix(20).map(\.0)
    }

    /// Damerau-Levenshtein (optimal string alignment) distance, stopping early past `limit`.
    static func editDistance(_ a: [Character], _ b: [Character], limit: Int) -> Int {
        if a.isEmpty { return b.count }
        if b.isEmpty { return a.count }
        var previous2 = [Int](repeating: 0, count: b.count + 1)
        var previous = Array(0...b.count)
        var current = [Int](repeating: 0, count: b.count + 1)
        for i in 1...a.count {
            current[0] = i
            var rowMinimum = i
            for j in 1...b.count {
                let cost = a[i - 1] == b[j - 1] ? 0 : 1
                var value = min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + cost)
                if i > 1, j > 1, a[i - 1] == b[j - 2], a[i - 2] == b[j - 1] { value = min(value, previous2[j - 2] + 1) }
                current[j] = value
                rowMinimum = min(rowMinimum, value)
            }
            if rowMinimum > limit { return limit + 1 }
            (previous2, previous, current) = (previous, current, previous2)
        }
        return previous[b.count]
    }

    func search(_ q: TextQuery) throws -> SearchPage {
        guard q.q.count <= TextQueries.maxQuery else { throw ServiceError.invalid("q", "must be at most \(TextQueries.maxQuery) characters") }
        let words = TextQueries.words(q.q)
        guard !words.isEmpty else { throw ServiceError.invalid("q", "needs at least one letter or digit") }
        try q.filters.validate(knownCategories: knownCategories)
        let limit = try MapQueries.limit(q.limit)
        let after = try q.cursor.map(SearchCursor.decode)
        var center: Coordinate?
        if let near = q.near {
            do { center = try Coordinate(latitude: near.lat, longitude: near.lon) } catch { throw error.serviceError }
        }
        if let radius = q.radiusM {
            guard center != nil else { throw ServiceError.invalid("radius_m", "needs near") }
            guard radius.isFinite, radius >= 1, radius <= MapQueries.maxRadius else { throw ServiceError.invalid("radius_m", "must be 1 to 50000 metres") }
        }
        var box: BoundingBox?
        if let b = q.bbox {
            do { box = try BoundingBox(south: b.south, west: b.west, north: b.north, east: b.east) } catch { throw error.serviceError }
            guard (box?.widthDegrees ?? 0) <= 180 else { throw ServiceError.invalid("bbox", "the box may be at most 180 degrees wide") }
        }
        let sort = q.sort ?? .relevance
        if sort == .distance && center == nil { throw ServiceError.invalid("sort", "distance needs near") }

        let prefixLast = !(q.q.last.map { $0.isWhitespace } ?? false)
        let query = try queryWords(words, prefixLast: prefixLast)

        // The places whose words match: row ids only, which FTS5 gives cheaply.
        var ids = try matchingIds(TextQueries.expression(query))
        // A radius or box narrows them through the R*Tree before any row is read.
        let radiusBox = try center.flatMap { c in try q.radiusM.map { try BoundingBox.around(c, radiusMeters: $0) } }
        if let area = radiusBox ?? box {
            let inside = Set(try area.parts.flatMap { try MapQueries(db: db).ids(in: $0) })
            ids = ids.filter(inside.contains)
        }
        guard !ids.isEmpty else { return SearchPage(hits: [], nextCursor: nil) }
        // Rows of at most `maxCandidates` of them, the most popular when there are more.
        var sql = """
            SELECT \(MapQueries.hitColumns), p.opening_hours, p.timezone
            FROM places p LEFT JOIN ratings r ON r.place_id = p.id
            WHERE p.id IN (SELECT value FROM json_each(?))
            """
        var args: [SQLBindable?] = ["[" + ids.map(String.init).joined(separator: ",") + "]"]
        MapQueries.appendFilters(q.filters, to: &sql, &args)
        sql += " ORDER BY p.popularity DESC, p.id LIMIT \(TextQueries.maxCandidates)"
        var hits: [(hit: SearchHit, score: Double)] = []
        for row in MapQueries.openFilter(q.filters, try db.query(sql, args)) {
            var hit = MapQueries.hit(row)
            let coordinate = Coordinate(uncheckedLatitude: hit.lat, longitude: hit.lon)
            if let box, !box.contains(coordinate) { continue }
            if let center {
                let d = coordinate.distance(to: center)
                if let radius = q.radiusM, d > radius { continue }
                hit.distanceM = d
            }
            // Text score: a word found in the name counts three, elsewhere one.
            let nameWords = TextQueries.words(hit.name)
            hits.append((hit, query.reduce(0.0) { $0 + ($1.matches(any: nameWords) ? 3 : 1) }))
        }
        // Relevance: the text score, lifted by popularity and, with a point, by nearness.
        let relevance: [Int64: Double] = Dictionary(uniqueKeysWithValues: hits.map { entry in
            var value = entry.score * (1 + 0.1 * log1p(max(entry.hit.popularity, 0)))
            if let d = entry.hit.distanceM { value /= 1 + d / 1_000 }
            return (entry.hit.id, value)
        })
        let mapSort: SortOrder? = switch sort {
        case .relevance: nil
        case .distance: .distance
        case .rating: .rating
        case .popularity: .popularity
        }
        return MapQueries.page(hits.map(\.hit), limit: limit, after: after) { hit in
            mapSort.map { MapQueries.key(hit, $0) } ?? -(relevance[hit.id] ?? 0)
        }
    }

    func autocomplete(_ q: AutocompleteQuery) throws -> Suggestions {
        guard q.prefix.count <= TextQueries.maxQuery else { throw ServiceError.invalid("prefix", "must be at most \(TextQueries.maxQuery) characters") }
        let words = TextQueries.words(q.prefix)
        guard !words.isEmpty else { return Suggestions(suggestions: []) }
        let limit = q.limit ?? 10
        guard (1...20).contains(limit) else { throw ServiceError.invalid("limit", "must be 1 to 20") }
        var center: Coordinate?
        if let near = q.near {
            do { center = try Coordinate(latitude: near.lat, longitude: near.lon) } catch { throw error.serviceError }
        }
        var suggestions: [Suggestion] = []
        if words.count == 1, let word = words.first {
            for row in try db.query("SELECT DISTINCT category FROM places WHERE category >= ? AND category < ? ORDER BY category LIMIT 5",
                                    word, word + "\u{10FFFF}") {
                let category = row.string(0) ?? ""
                suggestions.append(Suggestion(kind: "category", text: category, id: nil, category: nil, distanceM: nil,
                                              highlights: [[0, word.utf16.count]]))
            }
        }
        // Names only, every word a prefix of a name word; nearest first with a point, else most popular.
        var ids = try matchingIds("name : (" + words.map { TextQueries.quoted($0) + " *" }.joined(separator: " AND ") + ")")
        if let center {
            // Prefer what is within 20 km when there is enough of it.
            let around = try BoundingBox.around(center, radiusMeters: 20_000)
            let inside = Set(try around.parts.flatMap { try MapQueries(db: db).ids(in: $0) })
            let close = ids.filter(inside.contains)
            if close.count >= limit { ids = close }
        }
        guard !ids.isEmpty else { return Suggestions(suggestions: Array(suggestions.prefix(limit))) }
        var places: [(Suggestion, Double)] = []
        for row in try db.query("""
            SELECT p.id, p.name, p.category, p.lat, p.lon, p.popularity FROM places p
            WHERE p.id IN (SELECT value FROM json_each(?)) ORDER BY p.popularity DESC, p.id LIMIT 500
            """, "[" + ids.map(String.init).joined(separator: ",") + "]") {
            let name = row.string(1) ?? ""
            var distance: Double?
            if let center { distance = Coordinate(uncheckedLatitude: row.double(3) ?? 0, longitude: row.double(4) ?? 0).distance(to: center) }
            let suggestion = Suggestion(kind: "place", text: name, id: row.int(0), category: row.string(2), distanceM: distance,
                                        highlights: TextQueries.highlights(words, in: name))
            places.append((suggestion, distance ?? -(row.double(5) ?? 0)))
        }
        places.sort { $0.1 != $1.1 ? $0.1 < $1.1 : ($0.0.id ?? 0) < ($1.0.id ?? 0) }
        suggestions += places.map(\.0)
        return Suggestions(suggestions: Array(suggestions.prefix(limit)))
    }

    /// The ids of the places matching an FTS5 expression, in id order.
    private func matchingIds(_ expression: String) throws -> [Int64] {
        var ids: [Int64] = []
        let matching = try db.statement("SELECT rowid FROM places_text WHERE places_text MATCH ?")
        defer { matching.reset() }
        try matching.bind([expression])
        while try matching.step() {
            if case .integer(let id) = matching.value(0) { ids.append(id) }
        }
        return ids
    }

    /// Where each typed word starts a word of `text`, as UTF-16 offsets [start, end).
    static func highlights(_ words: [String], in text: String) -> [[Int]] {
        var ranges: [[Int]] = []
        var index = text.startIndex
        while index < text.endIndex {
            guard text[index].isLetter || text[index].isNumber else {
                index = text.index(after: index)
                continue
            }
            var end = index
            while end < text.endIndex, text[end].isLetter || text[end].isNumber { end = text.index(after: end) }
            let word = String(text[index..<end]).folding(options: [.caseInsensitive, .diacriticInsensitive], locale: nil)
            if let typed = words.filter({ word.hasPrefix($0) }).max(by: { $0.count < $1.count }) {
                // Walk as many characters of the original word as the typed word has.
                let matchEnd = text.index(index, offsetBy: min(typed.count, text.distance(from: index, to: end)))
                ranges.append([text.utf16.distance(from: text.utf16.startIndex, to: index),
                               text.utf16.distance(from: text.utf16.startIndex, to: matchEnd)])
            }
            index = end
        }
        return ranges
    }
}
