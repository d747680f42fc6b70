import Bus
import Contracts
import Foundation
import Geo
import ServiceKit
import Storage

/// Text search over FTS5 (words folded for case and diacritics, prefix indexes), with typo
/// tolerance from the index's own vocabulary. User input never reaches FTS5 syntax: it is
/// cut into words and each word is quoted.
///
/// A search first gathers its candidates, then orders them. When the words match at most
/// `allMatchesUpTo` places, every match is a candidate. When they match more, reading them all
/// would cost too much, so the candidates are the matches nearest the point (within the
/// radius), or without a point the most popular ones (inside the box), up to the
/// `widerCandidates`-th that has every word in its name (a weaker match read before it is a
/// candidate too, so a name match is not crowded out by address matches): both are found by
/// reading places outward or downward until enough match, never the rest, and at most
/// `readBudget` places; outward from a point, only places having one word of the query are
/// read (`MapQueries.nearest(having:)`), `readBudget` entries of their index at most. When that runs out first, the first `fallbackMatches` matches (by id)
/// are ranked with what it found, and the candidates are taken from both in the same order:
/// with popularity tied (unknown, 0) below what was read, the matches with the lowest ids are
/// the next most popular. So a search reads at most `allMatchesUpTo + 1`
/// matches and probes at most `max(allMatchesUpTo, readBudget + fallbackMatches)` places,
/// however many places its words match.
struct TextQueries {
    let db: Database
    /// The catalog's category ids, when known.
    var knownCategories: Set<String>? = nil
    /// Up to this many matching places are all ranked.
    var allMatchesUpTo = 3_000
    /// Places read in order of distance or popularity, at most, when the words match more.
    var readBudget = 2_000
    /// Matches ranked with them when that budget runs out before enough match.
    static let fallbackMatches = 500
    /// Counts what searches read, when set (tests hold it to the budgets).
    var tally: Tally? = nil

    /// What searches have read: matches from FTS5, and places probed (read to be checked).
    final class Tally {
        var matches = 0
        var probed = 0
    }
    /// Candidates of a search whose words match more places than that.
    static let widerCandidates = 50
    /// Sizes of `search.autocomplete`: 10 suggestions unless asked, at most 20.
    static let maxQuery = 200
    /// Vocabulary words a prefix may stand for before FTS5 merges them itself.
    static let maxPrefixTerms = 30

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

        /// Whether a place's folded word (UTF-8) matches this query word.
        func matches(_ word: UnsafeBufferPointer<UInt8>) -> Bool {
            if prefix ? word.starts(with: typed.utf8) : word.elementsEqual(typed.utf8) { return true }
            return spellings.contains { word.elementsEqual($0.utf8) }
        }

        /// Whether one of the space-separated folded words of `text` (UTF-8) matches.
        func found(in text: UnsafeBufferPointer<UInt8>) -> Bool {
            var start = 0
            while start < text.count {
                var end = start
                while end < text.count, text[end] != UInt8(ascii: " ") { end += 1 }
                if end > start, matches(UnsafeBufferPointer(rebasing: text[start..<end])) { return true }
                start = end + 1
            }
            return false
        }
    }

    /// A place's text score, from the folded words it is indexed by: per query word, 3 when
    /// its name has the word and 1 when only its category, address or description do; nil
    /// when some query word is missing.
    static func score(_ query: [QueryWord], name: UnsafeBufferPointer<UInt8>, other: UnsafeBufferPointer<UInt8>) -> Double? {
        var score = 0.0
        for word in query {
            if word.found(in: name) { score += 3 } else if word.found(in: other) { score += 1 } else { return nil }
        }
        return score
    }

    /// The query's words with the near spellings of those the index does not know. Once the
    /// words before one that needs them match no place together, neither can the whole query:
    /// the rest are left as typed, without looking for near spellings.
    func queryWords(_ words: [String], prefixLast: Bool) throws -> [QueryWord] {
        var query: [QueryWord] = []
        var matchesNothing = false
        for (i, word) in words.enumerated() {
            let prefix = prefixLast && i == words.count - 1
            var spellings: [String] = []
            if !matchesNothing, TextQueries.allowedTypos(word) > 0, try !known(word, prefix: prefix) {
                matchesNothing = try !query.isEmpty && db.scalarInt("SELECT rowid FROM places_text WHERE places_text MATCH ? LIMIT 1", try expression(query)) == nil
                if !matchesNothing { spellings = try nearSpellings(word) }
            }
            query.append(QueryWord(typed: word, spellings: spellings, prefix: prefix))
        }
        return query
    }

    /// The key of `place_terms` (see `PlaceTerms`) that every place matching the query has: a
    /// whole word's own when one is known as typed (the longest), else the first three letters
    /// of a prefix (the longest), else the first letter of a misspelled word, which its near
    /// spellings share.
    static func walkKey(_ query: [QueryWord]) -> String {
        if let word = query.filter({ !$0.prefix && $0.spellings.isEmpty }).max(by: { $0.typed.count < $1.typed.count }) { return word.typed }
        if let word = query.filter({ $0.spellings.isEmpty }).max(by: { min($0.typed.count, 3) < min($1.typed.count, 3) }) {
            return PlaceTerms.prefixKey(word.typed)
        }
        return PlaceTerms.prefixKey(String(query.first?.typed.prefix(1) ?? ""))
    }

    /// The MATCH expression: every word must match, through any of its spellings.
    func expression(_ words: [QueryWord]) throws -> String {
        try words.map { word in
            let alternatives = try prefixTerms(word) + word.spellings.map(TextQueries.quoted)
            return alternatives.count == 1 ? alternatives[0] : "(" + alternatives.joined(separator: " OR ") + ")"
        }.joined(separator: " AND ")
    }

    /// How FTS5 should look a word up. A prefix of up to 3 letters has its own index; a longer
    /// one FTS5 would merge from every word it starts, so it is spelled out as the vocabulary's
    /// words when they are few.
    private func prefixTerms(_ word: QueryWord) throws -> [String] {
        let quoted = TextQueries.quoted(word.typed)
        guard word.prefix else { return [quoted] }
        guard word.typed.count > 3, !word.typed.allSatisfy(\.isNumber) else { return [quoted + " *"] }
        let terms = try db.query(
            "SELECT term FROM search_terms WHERE term >= ? AND term < ? LIMIT \(TextQueries.maxPrefixTerms + 1)",
            word.typed, word.typed + "\u{10FFFF}"
        ).decode("term", as: String.self)
        guard terms.count <= TextQueries.maxPrefixTerms else { return [quoted + " *"] }
        return terms.isEmpty ? [quoted] : terms.map(TextQueries.quoted)
    }

    /// Whether some place has the word (or, as a prefix, a word starting with it) now. The
    /// vocabulary keeps words no place has any more, so each word it offers is asked of FTS5
    /// (a word's first match is cheap to find; a prefix query would merge every match first).
    private func known(_ word: String, prefix: Bool) throws -> Bool {
        let candidates =
            prefix
            ? try db.query(
                "SELECT term FROM search_terms WHERE term >= ? AND term < ? LIMIT \(TextQueries.maxPrefixTerms + 1)",
                word, word + "\u{10FFFF}"
            ).decode("term", as: String.self)
            : [word]
        // So many words start so: some place surely has one.
        if candidates.count > TextQueries.maxPrefixTerms { return true }
        return try candidates.contains { term in
            try db.scalarInt("SELECT rowid FROM places_text WHERE places_text MATCH ? LIMIT 1", TextQueries.quoted(term)) != nil
        }
    }

    /// Words of the index within the allowed edit distance of `word`, sharing its first letter:
    /// read from the words of its first letter whose length is within the distance (one
    /// index range per length), never the rest of the vocabulary.
    private func nearSpellings(_ word: String) throws -> [String] {
        guard let first = word.first else { return [] }
        let allowed = TextQueries.allowedTypos(word)
        let start = String(first)
        let end = String(first) + "\u{10FFFF}"
        let ascii = word.utf8.allSatisfy { $0 < 0x80 }
        let typed = Array(word)
        let typedBytes = Array(word.utf8)
        var found: [(String, Int)] = []
        for letters in (word.count - allowed)...(word.count + allowed) {
            try db.forEachStep("SELECT term FROM search_terms WHERE letters = ? AND term >= ? AND term < ?", [letters, start, end]) { statement in
                // Bytes when both are ASCII (a letter is then a byte), else characters.
                let near: (String, Int)? = statement.withUTF8(0) { term in
                    let distance =
                        ascii && term.allSatisfy({ $0 < 0x80 })
                        ? typedBytes.withUnsafeBufferPointer { TextQueries.editDistance($0, term, limit: allowed) }
                        : TextQueries.editDistance(typed, Array(String(decoding: term, as: UTF8.self)), limit: allowed)
                    return distance <= allowed ? (String(decoding: term, as: UTF8.self), distance) : nil
                }
                if let near { found.append(near) }
            }
        }
        return found.sorted { $0.1 != $1.1 ? $0.1 < $1.1 : $0.0 < $1.0 }.prefix(20).map(\.0)
    }

    /// Damerau-Levenshtein (optimal string alignment) distance, stopping early past `limit`;
    /// its three rows live on the stack (it runs for every word of about the typed length).
    static func editDistance<Word: RandomAccessCollection>(_ a: Word, _ b: Word, limit: Int) -> Int
    where Word.Element: Equatable, Word.Index == Int {
        if a.isEmpty { return b.count }
        if b.isEmpty { return a.count }
        let width = b.count + 1
        return withUnsafeTemporaryAllocation(of: Int.self, capacity: 3 * width) { rows in
            // Rows i-2, i-1 and i, rotated by offset.
            var (previous2, previous, current) = (0, width, 2 * width)
            for j in 0..<width { rows[previous + j] = j }
            for i in 1...a.count {
                let x = a[a.startIndex + i - 1]
                rows[current] = i
                var rowMinimum = i
                for j in 1...b.count {
                    let y = b[b.startIndex + j - 1]
                    var value = min(rows[previous + j] + 1, rows[current + j - 1] + 1, rows[previous + j - 1] + (x == y ? 0 : 1))
                    if i > 1, j > 1, x == b[b.startIndex + j - 2], a[a.startIndex + i - 2] == y { value = min(value, rows[previous2 + j - 2] + 1) }
                    rows[current + j] = value
                    rowMinimum = min(rowMinimum, value)
                }
                if rowMinimum > limit { return limit + 1 }
                (previous2, previous, current) = (previous, current, previous2)
            }
            return rows[previous + b.count]
        }
    }

    /// A place worth ranking, with what ranking it needs.
    struct Candidate {
        var id: Int64
        var score: Double
        var distance: Double?
        var popularity: Double
        var rating: Double?
    }

    /// The candidates of a query (see the type's comment): places passing the filters whose
    /// words `score` gives a score, within the radius or box. A score of at least `strong`
    /// (every word in the name) is what a reading in order of distance or popularity counts
    /// toward `want`; weaker matches read before the `want`-th strong one are candidates too.
    private func candidates(
        _ expression: String, key: String, near center: Coordinate?, within radius: Double?, box: BoundingBox?,
        want: Int, strong: Double, _ filters: PlaceFilters,
        score: (UnsafeBufferPointer<UInt8>, UnsafeBufferPointer<UInt8>) -> Double?
    ) throws -> [Candidate] {
        let maps = MapQueries(db: db)
        var found: [Int64: Candidate] = [:]
        func accept(_ place: MapQueries.Probe) -> Bool {
            if let box, !box.contains(place.coordinate) { return false }
            if let center, let radius, place.coordinate.distance(to: center) > radius { return false }
            guard let value = place.withWords(score) else { return false }
            found[place.id] = Candidate(
                id: place.id, score: value, distance: center.map { place.coordinate.distance(to: $0) },
                popularity: place.popularity, rating: place.rating)
            return value >= strong
        }
        let ids = try matchingIds(expression, limit: allMatchesUpTo + 1)
        tally?.matches += ids.count
        func rankFirstMatches(_ ids: ArraySlice<Int64>) throws {
            let probed = try maps.probe(ids: Array(ids), filters) { _ = accept($0) }
            tally?.probed += probed
        }
        if ids.count <= allMatchesUpTo {
            try rankFirstMatches(ids[...])
            return Array(found.values)
        }
        let budget = ReadBudget(readBudget)
        defer { tally?.probed += budget.spent }
        let chosen: Int
        if let center {
            // The places of the query's most telling word or prefix, outward from the point, as
            // far as the radius goes or the whole Earth.
            chosen = try maps.nearest(having: key, center, within: radius ?? 20_040_000, want: want, budget: budget, filters, accept: accept).count
        } else if let box {
            chosen = try maps.mostPopular(in: box, want: want, after: nil, budget: budget, filters, accept: accept).count
        } else {
            chosen = try maps.mostPopular(want: want, budget: budget, filters, accept: accept).count
        }
        if chosen < want, budget.ranOut {
            // The budget ran out first: the best of what it read and of the first matches.
            try rankFirstMatches(ids.prefix(min(TextQueries.fallbackMatches, allMatchesUpTo)))
        }
        // In reading order (nearest first with a point, else most popular first; ties by id), up
        // to the `want`-th strong match: what the reading found in its order, wherever it stopped.
        let ordered = found.values.sorted { a, b in
            let (x, y) = (a.distance ?? -a.popularity, b.distance ?? -b.popularity)
            return x != y ? x < y : a.id < b.id
        }
        var strongSeen = 0
        let cut = ordered.firstIndex { candidate in
            if candidate.score >= strong { strongSeen += 1 }
            return strongSeen == want
        }
        return cut.map { Array(ordered[...$0]) } ?? ordered
    }

    func search(_ q: TextQuery) throws -> SearchPage {
        // Bytes first: one character may be thousands of bytes (a letter and its accents).
        guard q.q.utf8.count <= SearchPerformed.maxQueryBytes, q.q.count <= TextQueries.maxQuery else {
            throw ServiceError.invalid("q", "must be at most \(TextQueries.maxQuery) characters and \(SearchPerformed.maxQueryBytes) UTF-8 bytes")
        }
        let words = SearchIndex.words(q.q)
        guard !words.isEmpty else { throw ServiceError.invalid("q", "needs at least one letter or digit") }
        try q.filters.validate(knownCategories: knownCategories)
        let limit = try MapQueries.limit(q.limit)
        let after = try q.cursor.map(SearchCursor.decode)
        var center: Coordinate?
        if let near = q.near {
            center = try Coordinate(latitude: near.lat, longitude: near.lon)
        }
        if q.radiusM != nil, center == nil { throw ServiceError.invalid("radius_m", "needs near") }
        var box: BoundingBox?
        if let b = q.bbox {
            box = try b.boundingBox(field: "bbox")
            guard (box?.widthDegrees ?? 0) <= 180 else { throw ServiceError.invalid("bbox", "the box may be at most 180 degrees wide") }
        }
        let sort = q.sort ?? .relevance
        if sort == .distance && center == nil { throw ServiceError.invalid("sort", "distance needs near") }

        let prefixLast = !(q.q.last.map { $0.isWhitespace } ?? false)
        let query = try queryWords(words, prefixLast: prefixLast)
        let found = try candidates(
            try expression(query), key: TextQueries.walkKey(query), near: center, within: q.radiusM, box: box,
            want: TextQueries.widerCandidates, strong: 3 * Double(query.count), q.filters
        ) { name, other in
            TextQueries.score(query, name: name, other: other)
        }
        let keyed = found.map { candidate -> (key: Double, id: Int64) in
            switch sort {
            case .distance: return (candidate.distance ?? 0, candidate.id)
            case .rating: return (-(candidate.rating ?? -1), candidate.id)
            case .popularity: return (-candidate.popularity, candidate.id)
            case .relevance:
                // The text score, lifted by popularity and, with a point, by nearness.
                var value = candidate.score * (1 + 0.1 * log1p(max(candidate.popularity, 0)))
                if let d = candidate.distance { value /= 1 + d / 1_000 }
                return (-value, candidate.id)
            }
        }
        let (page, next) = MapQueries.page(keyed, limit: limit, after: after)
        return SearchPage(hits: try MapQueries(db: db).hits(ids: page.map(\.id), from: center, lang: q.lang), nextCursor: next)
    }

    func autocomplete(_ q: AutocompleteQuery) throws -> Suggestions {
        guard q.prefix.count <= TextQueries.maxQuery else { throw ServiceError.invalid("prefix", "must be at most \(TextQueries.maxQuery) characters") }
        let words = SearchIndex.words(q.prefix)
        guard !words.isEmpty else { return Suggestions(suggestions: []) }
        let limit = try PageLimit.suggestions.validated(q.limit)
        var center: Coordinate?
        if let near = q.near {
            center = try Coordinate(latitude: near.lat, longitude: near.lon)
        }
        var suggestions: [Suggestion] = []
        if words.count == 1, let word = words.first {
            // Category ids starting with the word, one index probe each.
            var last: String?
            while suggestions.count < 5,
                let category = try db.queryOne(
                    "SELECT category FROM places WHERE category \(last == nil ? ">=" : ">") ? AND category < ? ORDER BY category LIMIT 1",
                    last ?? word, word + "\u{10FFFF}")?.decode("category", as: String.self)
            {
                suggestions.append(
                    Suggestion(
                        kind: "category", text: category, id: nil, category: nil, distanceM: nil,
                        highlights: [[0, word.utf16.count]]))
                last = category
            }
        }
        // Names only, every typed word starting a word of the name; nearest first with a point, else most popular.
        let query = words.map { QueryWord(typed: $0, spellings: [], prefix: true) }
        let expression =
            "name_words : ("
            + (try query.map { word in
                let terms = try prefixTerms(word)
                return terms.count == 1 ? terms[0] : "(" + terms.joined(separator: " OR ") + ")"
            }).joined(separator: " AND ") + ")"
        let found = try candidates(expression, key: TextQueries.walkKey(query), near: center, within: nil, box: nil, want: limit, strong: 1, PlaceFilters()) { name, _ in
            query.allSatisfy { $0.found(in: name) } ? 1 : nil
        }
        let keyed = found.map { ($0.distance ?? -$0.popularity, $0.id) }
        let (page, _) = MapQueries.page(keyed, limit: limit, after: nil)
        let maps = MapQueries(db: db)
        let names = try q.lang.map { _ in try maps.names(ids: page.map(\.id)) } ?? [:]
        suggestions += try maps.hits(ids: page.map(\.id), from: center).map { hit in
            var suggestion = Suggestion(
                kind: hit.kind.rawValue, text: hit.name, id: hit.entityId, category: hit.category, distanceM: hit.distanceM,
                highlights: TextQueries.highlights(words, in: hit.name))
            if let lang = q.lang {
                // The name in lang when the typed words begin its words, else the first other name they do
                // (by tag, its own name last).
                let texts = names[hit.id] ?? [:]
                let picked = lang.pick(texts)
                let choices = [(picked?.tag, picked?.value ?? hit.name)] + texts.sorted { $0.key < $1.key }.map { ($0.key, $0.value) } + [(nil, hit.name)]
                let chosen =
                    choices.first { choice in
                        let own = SearchIndex.words(choice.1)
                        return words.allSatisfy { typed in own.contains { $0.hasPrefix(typed) } }
                    } ?? choices[0]
                suggestion.text = chosen.1
                suggestion.highlights = TextQueries.highlights(words, in: chosen.1)
                suggestion.lang = TextLanguages(name: chosen.0)
            }
            return suggestion
        }
        return Suggestions(suggestions: Array(suggestions.prefix(limit)))
    }

    /// The ids of the places matching an FTS5 expression, at most `limit` of them.
    private func matchingIds(_ expression: String, limit: Int) throws -> [Int64] {
        var ids: [Int64] = []
        let matching = try db.statement("SELECT rowid AS id FROM places_text WHERE places_text MATCH ? LIMIT ?")
        defer { matching.reset() }
        try matching.bind([expression, Int64(limit)])
        let id = try matching.column("id")
        while try matching.step() {
            ids.append(try matching.int64(id))
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
            let word = SearchIndex.words(String(text[index..<end])).joined()
            if let typed = words.filter({ word.hasPrefix($0) }).max(by: { $0.count < $1.count }) {
                // Walk as many characters of the original word as the typed word has.
                let matchEnd = text.index(index, offsetBy: min(typed.count, text.distance(from: index, to: end)))
                ranges.append([
                    text.utf16.distance(from: text.utf16.startIndex, to: index),
                    text.utf16.distance(from: text.utf16.startIndex, to: matchEnd),
                ])
            }
            index = end
        }
        return ranges
    }
}
