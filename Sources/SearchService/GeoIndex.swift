import Bus
import Contracts
import Foundation
import Geo

// The geocoder's index (Protocols/search.md, "Addresses"), built in memory from search's copy
// of the catalog's addresses and replaced whole when they change. `geo.search` matches folded
// words: each query word must match a word of the entry exactly, as the start of one (the last
// word, unless the text ends with a space), or, once per query, with one typo (words of
// `minTypoLetters` or more). `geo.reverse` searches a k-d tree of the houses, pruned by a
// great-circle lower bound, so it is the brute-force nearest anywhere on the Earth.

struct GeoIndex: Sendable {
    /// Query words, at most.
    static let maxWords = 12
    /// The shortest and the longest word a typo is forgiven in.
    static let minTypoLetters = 5
    static let maxTypoLetters = 32
    /// Words an unfinished last word may stand for, at most (the first in sorted order).
    static let maxPrefixWords = 200
    /// Entries ranked for one query, at most: a one-letter query stops there.
    static let maxCandidates = 20_000
    /// How far `geo.reverse` looks, in metres.
    static let reverseReach = 50_000.0

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
    /// The houses, for `geo.reverse`.
    let houses: HouseTree
    /// Streets' and areas' other names, by their local name and city (`nameKey`): a name of one
    /// town is not another's.
    let localNames: [String: [String: String]]

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
                localNames[Self.nameKey(local, city: entry.city), default: [:]].merge(names) { kept, _ in kept }
                other += names.values.sorted()
            }
            let primaryWords = primary.flatMap(split)
            let otherWords = other.compactMap { $0 }.flatMap(split)
            unsorted.append(Words(primary: primaryWords.map(id), other: otherWords.map(id)))
        }
        // Houses are also found by their street's other names (`Mannerheimvägen 13`).
        for (index, entry) in entries.enumerated() where entry.kind == .house {
            guard let street = entry.street, let names = localNames[Self.nameKey(street, city: entry.city)] else { continue }
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
        houses = HouseTree(entries.indices.filter { entries[$0].kind == .house }.map { (Int32($0), entries[$0].lat, entries[$0].lon) })
        self.localNames = localNames
    }

    /// Whether a word has typos forgiven: of `minTypoLetters` to `maxTypoLetters` letters, not all
    /// digits (a word's deletions cost memory with the square of its length).
    static func nameKey(_ name: String, city: String?) -> String { name + "\u{1F}" + (city ?? "") }

    static func typoAllowed(_ word: String) -> Bool { (minTypoLetters...maxTypoLetters).contains(word.count) && !word.allSatisfy(\.isNumber) }

    static func deletionVariants(_ word: String) -> Set<String> {
        let letters = Array(word)
        return Set(letters.indices.map { skip in String(letters[..<skip] + letters[(skip + 1)...]) })
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
        search(try Self.queryWords(text), unfinished: Self.endsInWord(text), near: near, limit: limit)
    }

    /// Whether the last word may be unfinished: the text does not end after it.
    static func endsInWord(_ text: String) -> Bool {
        text.last.map { $0.isLetter || $0.isNumber } ?? false
    }

    /// `stopEarly: false` reads every candidate (the tests check the early stop against it).
    func search(_ queryWords: [String], unfinished: Bool, near: Coordinate?, limit: Int, stopEarly: Bool = true) -> [(entry: Address, distance: Double?)] {
        // A word given twice counts once (the same word of an entry would match it each time).
        var seen = Set<String>()
        let matches = queryWords.enumerated().compactMap { index, word -> WordMatches? in
            let prefix = unfinished && index == queryWords.count - 1
            guard seen.insert(prefix ? word + "*" : word).inserted else { return nil }
            return self.matches(word, prefix: prefix)
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

    /// The nearest house to `point` within `reverseReach`, and its distance; of two as near,
    /// the one of lower id.
    func nearest(_ point: Coordinate) -> (entry: Address, distance: Double)? {
        guard let found = houses.nearest(point, within: Self.reverseReach, tieBreak: { entries[Int($0)].id < entries[Int($1)].id }) else {
            return nil
        }
        return (entries[Int(found.index)], found.distance)
    }
}

/// Points in a k-d tree: each node halves its points at the median of its box's wider side, down
/// to leaves of `leafSize`; a search visits the nearer half first and leaves a node whose box's
/// great-circle lower bound (`Coordinate.distanceLowerBound`) is past the best found.
struct HouseTree: Sendable {
    static let leafSize = 16

    struct Node: Sendable {
        var south: Double, north: Double, west: Double, east: Double
        /// The node's points: `points[range]`.
        var start: Int32, end: Int32
        /// Children's indexes in `nodes`, -1 for a leaf.
        var left: Int32, right: Int32
    }

    private(set) var points: [(index: Int32, lat: Double, lon: Double)]
    private(set) var nodes: [Node] = []

    init(_ points: [(index: Int32, lat: Double, lon: Double)]) {
        self.points = points
        if !points.isEmpty { _ = build(0, points.count) }
    }

    private mutating func build(_ start: Int, _ end: Int) -> Int32 {
        let slice = points[start..<end]
        let (south, north) = (slice.map(\.lat).min() ?? 0, slice.map(\.lat).max() ?? 0)
        let (west, east) = (slice.map(\.lon).min() ?? 0, slice.map(\.lon).max() ?? 0)
        let at = nodes.count
        nodes.append(Node(south: south, north: north, west: west, east: east, start: Int32(start), end: Int32(end), left: -1, right: -1))
        guard end - start > Self.leafSize else { return Int32(at) }
        // The wider side, in metres on the ground (a degree of longitude shrinks with latitude).
        let byLatitude = north - south >= (east - west) * cos((south + north) / 2 * .pi / 180)
        points[start..<end].sort { byLatitude ? $0.lat < $1.lat : $0.lon < $1.lon }
        let middle = (start + end) / 2
        let left = build(start, middle)
        let right = build(middle, end)
        (nodes[at].left, nodes[at].right) = (left, right)
        return Int32(at)
    }

    /// The nearest point within `reach` metres, and its distance; `tieBreak` orders points as near.
    func nearest(_ point: Coordinate, within reach: Double, tieBreak: (Int32, Int32) -> Bool) -> (index: Int32, distance: Double)? {
        guard !nodes.isEmpty else { return nil }
        var best: (index: Int32, distance: Double)?
        func bound(_ node: Node) -> Double { point.distanceLowerBound(south: node.south, north: node.north, west: node.west, east: node.east) }
        // Depth first, nearer child first; every node is visited at most once, so this ends.
        var stack: [(node: Int32, bound: Double)] = [(0, bound(nodes[0]))]
        while let (at, lower) = stack.popLast() {
            if lower > min(best?.distance ?? .infinity, reach) { continue }
            let node = nodes[Int(at)]
            if node.left < 0 {
                for (index, lat, lon) in points[Int(node.start)..<Int(node.end)] {
                    let distance = point.distance(to: Coordinate(uncheckedLatitude: lat, longitude: lon))
                    if let held = best, distance > held.distance || (distance == held.distance && !tieBreak(index, held.index)) { continue }
                    best = (index, distance)
                }
                continue
            }
            let (left, right) = (nodes[Int(node.left)], nodes[Int(node.right)])
            let (leftBound, rightBound) = (bound(left), bound(right))
            // The nearer is pushed last, so it is visited first.
            if leftBound <= rightBound {
                stack.append((node.right, rightBound))
                stack.append((node.left, leftBound))
            } else {
                stack.append((node.left, leftBound))
                stack.append((node.right, rightBound))
            }
        }
        guard let best, best.distance <= reach else { return nil }
        return best
    }
}
