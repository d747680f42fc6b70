import Bus
import Contracts
import Foundation
import Geo

// The geocoder's index (Protocols/search.md, "Addresses"), built in memory from search's copy
// of the catalog's addresses and replaced whole when they change. `geo.search` matches folded
// words: each query word must match a word of the entry exactly, as the start of one (the last
// word, unless the text ends with a space), or, once per query, with one typo (words of
// `minTypoLetters` or more). `geo.reverse` walks a grid of the houses outwards from the point.

struct GeoIndex: Sendable {
    /// Query words, at most.
    static let maxWords = 12
    /// The shortest word a typo is forgiven in.
    static let minTypoLetters = 5
    /// Words an unfinished last word may stand for, at most (the first in sorted order).
    static let maxPrefixWords = 200
    /// Entries ranked for one query, at most: a one-letter query stops there.
    static let maxCandidates = 20_000
    /// How far `geo.reverse` looks, in metres.
    static let reverseReach = 50_000.0
    /// The grid's cell, in degrees.
    static let cellDegrees = 0.01

    /// An entry's words as indexes into `vocabulary`: those of what it is (a house's street and
    /// number, a street's or area's name, a postcode), then the others (city, area, postcode,
    /// other languages' names).
    struct Words: Sendable {
        /// Distinct, at most 64.
        var primary: [Int32]
        var other: [Int32]
    }

    let entries: [Address]
    let words: [Words]
    /// Every word of every entry, sorted; a word's index is its id.
    let vocabulary: [String]
    /// Per word, the entries that have it, ascending.
    let postings: [[Int32]]
    /// Each word of `minTypoLetters` or more, and each of its one-letter deletions, to the words.
    let deletions: [String: [Int32]]
    /// Houses by grid cell.
    let grid: [Cell: [Int32]]
    let rows: ClosedRange<Int32>
    let columns: ClosedRange<Int32>
    /// Streets' and areas' other names, by their local name.
    let localNames: [String: [String: String]]

    struct Cell: Hashable, Sendable {
        var row: Int32
        var column: Int32
    }

    init(_ entries: [Address]) {
        self.entries = entries
        var ids: [String: Int32] = [:]
        var texts: [String] = []
        func id(_ word: String) -> Int32 {
            if let known = ids[word] { return known }
            let next = Int32(texts.count)
            ids[word] = next
            texts.append(word)
            return next
        }
        // Street, city and area names repeat across entries: each text is split once.
        var splitTexts: [String: [String]] = [:]
        func split(_ text: String) -> [String] {
            if let known = splitTexts[text] { return known }
            let words = SearchIndex.words(text)
            splitTexts[text] = words
            return words
        }
        var unsorted: [Words] = []
        var localNames: [String: [String: String]] = [:]
        for entry in entries {
            let primary: [String]
            var other: [String?] = [entry.city]
            switch entry.kind {
            case .house:
                // `13A` is found by `13` too, below a house numbered `13` itself.
                let digits = entry.housenumber.map { String($0.prefix { $0.isNumber }) }
                primary = [entry.street, entry.housenumber, digits == entry.housenumber ? nil : digits].compactMap { $0 }.filter { !$0.isEmpty }
                other += [entry.postcode, entry.area]
            case .street:
                primary = [entry.street].compactMap { $0 }
                other += [entry.area]
            case .area:
                primary = [entry.area].compactMap { $0 }
            case .postcode:
                primary = [entry.postcode].compactMap { $0 }
            }
            if let names = entry.names, let local = entry.kind == .street ? entry.street : entry.area {
                localNames[local, default: [:]].merge(names) { kept, _ in kept }
                other += names.values.sorted()
            }
            let primaryWords = primary.flatMap(split)
            let otherWords = other.compactMap { $0 }.flatMap(split)
            unsorted.append(Words(primary: primaryWords.map(id), other: otherWords.map(id)))
        }
        // Houses are also found by their street's other names (`Mannerheimvägen 13`).
        for (index, entry) in entries.enumerated() where entry.kind == .house {
            guard let street = entry.street, let names = localNames[street] else { continue }
            unsorted[index].other += names.values.sorted().flatMap(split).map(id)
        }
        // Ids in sorted order, so a prefix is a range.
        let order = texts.indices.sorted { texts[$0] < texts[$1] }
        var rank = [Int32](repeating: 0, count: texts.count)
        for (position, index) in order.enumerated() { rank[index] = Int32(position) }
        vocabulary = order.map { texts[$0] }
        var postings = [[Int32]](repeating: [], count: texts.count)
        words = unsorted.enumerated().map { index, words in
            // Each primary word once, 64 at most (a bit each while scoring).
            var primary: [Int32] = []
            for word in words.primary.map({ rank[Int($0)] }) where !primary.contains(word) && primary.count < 64 { primary.append(word) }
            let mapped = Words(primary: primary, other: words.other.map { rank[Int($0)] })
            for word in Set(mapped.primary + mapped.other) { postings[Int(word)].append(Int32(index)) }
            return mapped
        }
        self.postings = postings
        var deletions: [String: [Int32]] = [:]
        for (id, word) in vocabulary.enumerated() where Self.typoAllowed(word) {
            deletions[word, default: []].append(Int32(id))
            for variant in Self.deletionVariants(word) { deletions[variant, default: []].append(Int32(id)) }
        }
        self.deletions = deletions
        var grid: [Cell: [Int32]] = [:]
        for (index, entry) in entries.enumerated() where entry.kind == .house {
            grid[Self.cell(lat: entry.lat, lon: entry.lon), default: []].append(Int32(index))
        }
        self.grid = grid
        rows = (grid.keys.map(\.row).min() ?? 0)...(grid.keys.map(\.row).max() ?? 0)
        columns = (grid.keys.map(\.column).min() ?? 0)...(grid.keys.map(\.column).max() ?? 0)
        self.localNames = localNames
    }

    static func typoAllowed(_ word: String) -> Bool { word.count >= minTypoLetters && !word.allSatisfy(\.isNumber) }

    static func deletionVariants(_ word: String) -> Set<String> {
        let letters = Array(word)
        return Set(letters.indices.map { skip in String(letters[..<skip] + letters[(skip + 1)...]) })
    }

    static func cell(lat: Double, lon: Double) -> Cell {
        Cell(row: Int32((lat / cellDegrees).rounded(.down)), column: Int32((lon / cellDegrees).rounded(.down)))
    }

    // MARK: Search

    /// How the vocabulary's words matched one query word: per word a code, 0 when it did not,
    /// else `typo` < `unfinished` < `whole` (so a higher code is a better match); and the words
    /// that matched. A dense table: a lookup while scoring is one load.
    struct WordMatches {
        static let (none, typo, unfinished, whole): (UInt8, UInt8, UInt8, UInt8) = (0, 1, 2, 3)
        static let weights: [Double] = [0, 0.6, 0.9, 1]

        var codes: [UInt8]
        var words: [Int32] = []
        /// The best code of any word.
        var best = Self.none

        mutating func note(_ word: Int, _ code: UInt8) {
            guard codes[word] == Self.none else { return }
            codes[word] = code
            words.append(Int32(word))
            best = max(best, code)
        }
    }

    /// The folded words of a query's text; `invalid_argument` on `q` when it has none, or too many.
    static func queryWords(_ text: String) throws(ServiceError) -> [String] {
        let words = SearchIndex.words(text)
        guard !words.isEmpty else { throw .invalid("q", "must hold a letter or a digit") }
        guard words.count <= maxWords else { throw .invalid("q", "must hold at most \(maxWords) words") }
        return words
    }

    /// The entries matching `text`, best first: by match, then by distance from `near`.
    func search(_ text: String, near: Coordinate?, limit: Int) throws(ServiceError) -> [(entry: Address, distance: Double?)] {
        // The last word may be unfinished unless the text ends after it.
        search(try Self.queryWords(text), unfinished: text.last.map { $0.isLetter || $0.isNumber } ?? false, near: near, limit: limit)
    }

    /// `stopEarly: false` reads every candidate (the tests check the early stop against it).
    func search(_ queryWords: [String], unfinished: Bool, near: Coordinate?, limit: Int, stopEarly: Bool = true) -> [(entry: Address, distance: Double?)] {
        let matches = queryWords.enumerated().map { index, word in
            self.matches(word, prefix: unfinished && index == queryWords.count - 1)
        }
        // Candidates: the entries every word matches (typos counted below), as bit sets, the
        // word with the fewest first, so that the later ones only narrow it.
        let order = matches.indices.sorted { cost(matches[$0]) < cost(matches[$1]) }
        var survivors: [UInt64]?
        for index in order {
            var bits = [UInt64](repeating: 0, count: (entries.count + 63) / 64)
            for word in matches[index].words {
                for entry in postings[Int(word)] { bits[Int(entry) >> 6] |= 1 << (UInt64(entry) & 63) }
            }
            if let held = survivors {
                for i in bits.indices { bits[i] &= held[i] }
            }
            survivors = bits
            if bits.allSatisfy({ $0 == 0 }) { return [] }
        }
        // The best `limit`, kept in order as the candidates are scored (limit is small).
        var best: [(index: Int32, score: Double, distance: Double?)] = []
        func before(_ a: (index: Int32, score: Double, distance: Double?), _ b: (index: Int32, score: Double, distance: Double?)) -> Bool {
            if a.score != b.score { return a.score > b.score }
            if let x = a.distance, let y = b.distance, x != y { return x < y }
            return entries[Int(a.index)].id < entries[Int(b.index)].id
        }
        // Without `near`, ties go by id, the order read: once `limit` hits have the best score
        // any entry can have, none read later can come before them.
        // (Summed in the order `score` sums, so the two are equal to the last bit.)
        let ceiling = matches.reduce(0) { $0 + WordMatches.weights[Int($1.best)] } + 0.5
        var scored = 0
        reading: for (block, var bits) in (survivors ?? []).enumerated() where bits != 0 {
            while bits != 0, scored < Self.maxCandidates {
                if stopEarly, near == nil, best.count == limit, best.last?.score == ceiling { break reading }
                let index = block << 6 + bits.trailingZeroBitCount
                bits &= bits - 1
                scored += 1
                guard let score = self.score(index, matches) else { continue }
                let entry = entries[index]
                let distance = near.map { $0.distance(to: Coordinate(uncheckedLatitude: entry.lat, longitude: entry.lon)) }
                let candidate = (index: Int32(index), score: score, distance: distance)
                if best.count == limit, let last = best.last, !before(candidate, last) { continue }
                let at = best.firstIndex { before(candidate, $0) } ?? best.count
                best.insert(candidate, at: at)
                if best.count > limit { best.removeLast() }
            }
        }
        return best.map { (entries[Int($0.index)], $0.distance) }
    }

    /// The entries a query word's matches stand for, counted with repeats.
    private func cost(_ matches: WordMatches) -> Int { matches.words.reduce(0) { $0 + postings[Int($1)].count } }

    /// The vocabulary's words a query word matches, and how well.
    func matches(_ word: String, prefix: Bool) -> WordMatches {
        var found = WordMatches(codes: [UInt8](repeating: WordMatches.none, count: vocabulary.count))
        let start = lowerBound(word)
        if start < vocabulary.count, vocabulary[start] == word { found.note(start, WordMatches.whole) }
        if prefix {
            var index = start
            while index < vocabulary.count, index - start < Self.maxPrefixWords, vocabulary[index].hasPrefix(word) {
                found.note(index, WordMatches.unfinished)
                index += 1
            }
        }
        if Self.typoAllowed(word) {
            let letters = Array(word)
            for variant in Self.deletionVariants(word).union([word]) {
                for id in deletions[variant] ?? [] where found.codes[Int(id)] == WordMatches.none {
                    if TextQueries.editDistance(Array(vocabulary[Int(id)]), letters, limit: 1) <= 1 { found.note(Int(id), WordMatches.typo) }
                }
            }
        }
        return found
    }

    private func lowerBound(_ word: String) -> Int {
        var (low, high) = (0, vocabulary.count)
        while low < high {
            let mid = (low + high) / 2
            if vocabulary[mid] < word { low = mid + 1 } else { high = mid }
        }
        return low
    }

    /// An entry's score when every query word matches one of its words with one typo at most in
    /// all: the words' weights, and more the more of what it is (`Words.primary`) they cover.
    private func score(_ index: Int, _ matches: [WordMatches]) -> Double? {
        let words = self.words[index]
        var total = 0.0
        var typos = 0
        // The primary words matched, a bit each by position.
        var covered: UInt64 = 0
        for match in matches {
            var (code, position) = (WordMatches.none, -1)
            for (at, candidate) in words.primary.enumerated() where match.codes[Int(candidate)] > code {
                (code, position) = (match.codes[Int(candidate)], at)
            }
            // A primary word of the same code is the better match.
            for candidate in words.other where match.codes[Int(candidate)] > code {
                (code, position) = (match.codes[Int(candidate)], -1)
            }
            guard code != WordMatches.none else { return nil }
            total += WordMatches.weights[Int(code)]
            if code == WordMatches.typo { typos += 1 }
            if position >= 0 { covered |= 1 << UInt64(position) }
        }
        guard typos <= 1 else { return nil }
        return total + (words.primary.isEmpty ? 0 : 0.5 * Double(covered.nonzeroBitCount) / Double(words.primary.count))
    }

    // MARK: Reverse

    /// The nearest house to `point` within `reverseReach`, and its distance.
    func nearest(_ point: Coordinate) -> (entry: Address, distance: Double)? {
        guard !grid.isEmpty else { return nil }
        let center = Self.cell(lat: point.latitude, lon: point.longitude)
        // A cell r rings out is at least (r - 1) cells away; a cell's narrowest side is its
        // width at the highest latitude within reach.
        let reachDegrees = Self.reverseReach / 111_195
        let highest = min(89.9, abs(point.latitude) + reachDegrees + Self.cellDegrees)
        let cellMetres = Self.cellDegrees * 111_195 * cos(highest * .pi / 180)
        var best: (index: Int32, distance: Double)?
        var ring: Int32 = 0
        while true {
            let bound = Double(max(ring - 1, 0)) * cellMetres
            if bound > min(best?.distance ?? .infinity, Self.reverseReach) { break }
            let rowRange = (center.row - ring)...(center.row + ring)
            let columnRange = (center.column - ring)...(center.column + ring)
            // Past the grid's every side, no ring has anything more.
            if rowRange.lowerBound < rows.lowerBound && rowRange.upperBound > rows.upperBound && columnRange.lowerBound < columns.lowerBound
                && columnRange.upperBound > columns.upperBound
            {
                break
            }
            func visit(_ row: Int32, _ column: Int32) {
                for house in grid[Cell(row: row, column: column)] ?? [] {
                    let entry = entries[Int(house)]
                    let distance = point.distance(to: Coordinate(uncheckedLatitude: entry.lat, longitude: entry.lon))
                    if let held = best, distance > held.distance || (distance == held.distance && entry.id > entries[Int(held.index)].id) { continue }
                    best = (house, distance)
                }
            }
            let (firstRow, lastRow) = (max(rowRange.lowerBound, rows.lowerBound), min(rowRange.upperBound, rows.upperBound))
            let (firstColumn, lastColumn) = (max(columnRange.lowerBound, columns.lowerBound), min(columnRange.upperBound, columns.upperBound))
            if firstRow <= lastRow, firstColumn <= lastColumn {
                for row in firstRow...lastRow {
                    if row == rowRange.lowerBound || row == rowRange.upperBound {
                        for column in firstColumn...lastColumn { visit(row, column) }
                    } else {
                        // Between the ring's top and bottom rows, only its two sides are new.
                        for column in Set([columnRange.lowerBound, columnRange.upperBound]) where columns.contains(column) { visit(row, column) }
                    }
                }
            }
            ring += 1
        }
        guard let best, best.distance <= Self.reverseReach else { return nil }
        return (entries[Int(best.index)], best.distance)
    }
}
