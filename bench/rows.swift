// Row-reading micro-benchmark, built by bench/rows with the Storage sources of a revision.
// Prints the best of several runs of each scan, in ns per row. The "by index" scans are the
// way rows were read before rows were read by name; the others (built only when Storage has
// RowDecoding.swift) read the same rows by name.
import Foundation
import Storage

let rowCount = CommandLine.arguments.count > 1 ? Int(CommandLine.arguments[1]) ?? 100_000 : 100_000
let rounds = 11
let db = try Database(path: ":memory:")
try db.execute("""
    CREATE TABLE places (id INTEGER PRIMARY KEY, name TEXT NOT NULL, category TEXT NOT NULL, address TEXT,
        lat REAL NOT NULL, lon REAL NOT NULL, price_level INTEGER, popularity REAL NOT NULL,
        name_words TEXT NOT NULL, other_words TEXT NOT NULL);
    CREATE TABLE ratings (place_id INTEGER PRIMARY KEY, average REAL NOT NULL, count INTEGER NOT NULL);
    CREATE TABLE search_terms (term TEXT PRIMARY KEY) WITHOUT ROWID;
    """)
try db.transaction {
    for i in 0..<rowCount {
        try db.run("INSERT INTO places VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)", i, "Place \(i)", "restaurant",
                   i % 2 == 0 ? "\(i) George Street" : nil, -33.8 + Double(i) * 1e-6, 151.2 + Double(i) * 1e-6,
                   i % 3 == 0 ? nil : i % 5, Double(i % 1000) / 10, "place \(i)", "restaurant george street")
        if i % 2 == 0 { try db.run("INSERT INTO ratings VALUES (?, ?, ?)", i, 3.5, i % 40) }
        try db.run("INSERT INTO search_terms VALUES (?)", "term\(i)")
    }
}
let probeSQL = "SELECT p.id, p.lat, p.lon, p.popularity, r.average, p.name_words, p.other_words FROM places p LEFT JOIN ratings r ON r.place_id = p.id"
let hitSQL = "SELECT p.id, p.name, p.category, p.address, p.lat, p.lon, p.price_level, p.popularity, r.average, r.count FROM places p LEFT JOIN ratings r ON r.place_id = p.id"
let termSQL = "SELECT term FROM search_terms"

struct Hit { var id: Int64; var name: String; var category: String; var address: String?; var lat: Double; var lon: Double
             var priceLevel: Int?; var popularity: Double; var rating: Double?; var reviewCount: Int? }

/// The scans, measured in turns (each round runs every scan once) so a busy machine slows them alike.
nonisolated(unsafe) var scans: [(label: String, body: () throws -> Int)] = []
func measure(_ label: String, _ body: @escaping () throws -> Int) {
    scans.append((label, body))
}

measure("ring scan, statement by index, unchecked") {
    var sum = 0
    try db.forEachStep(probeSQL) { s in
        sum &+= Int(s.int64(0)) &+ Int(s.double(1) + s.double(2) + s.double(3) + (s.value(4).realValue ?? 0))
        sum &+= s.withUTF8(5) { $0.count } &+ s.withUTF8(6) { $0.count }
    }
    return sum
}
#if ROW_DECODING
measure("ring scan, statement by name found once, checked") {
    var sum = 0
    var found: (Column, Column, Column, Column, Column, Column, Column)?
    try db.forEachStep(probeSQL) { s in
        let c = try found ?? (s.column("id"), s.column("lat"), s.column("lon"), s.column("popularity"), s.column("average"),
                              s.column("name_words"), s.column("other_words"))
        found = c
        sum &+= Int(try s.int64(c.0)) &+ Int(try s.double(c.1) + s.double(c.2) + s.double(c.3) + (s.optionalDouble(c.4) ?? 0))
        try s.requireText(c.5)
        try s.requireText(c.6)
        sum &+= s.withUTF8(c.5.index) { $0.count } &+ s.withUTF8(c.6.index) { $0.count }
    }
    return sum
}
#endif
measure("hits, Row by index, lenient (?? 0)") {
    let hits = try db.query(hitSQL).map { row in
        Hit(id: row.int(0) ?? 0, name: row.string(1) ?? "", category: row.string(2) ?? "", address: row.string(3),
            lat: row.double(4) ?? 0, lon: row.double(5) ?? 0, priceLevel: row.int(6).map { Int($0) },
            popularity: row.double(7) ?? 0, rating: row.double(8), reviewCount: row.int(9).map { Int($0) })
    }
    return hits.count
}
#if ROW_DECODING
measure("hits, Row.decode by name per row") {
    let hits = try db.query(hitSQL).map { row throws(RowError) in
        try Hit(id: row.decode("id"), name: row.decode("name"), category: row.decode("category"), address: row.decode("address"),
                lat: row.decode("lat"), lon: row.decode("lon"), priceLevel: row.decode("price_level"),
                popularity: row.decode("popularity"), rating: row.decode("average"), reviewCount: row.decode("count"))
    }
    return hits.count
}
measure("hits, Row.decode by Column found once") {
    let rows = try db.query(hitSQL)
    let c = try rows[0].columns
    let id = try c.column("id"), name = try c.column("name"), category = try c.column("category"), address = try c.column("address")
    let lat = try c.column("lat"), lon = try c.column("lon"), price = try c.column("price_level"), popularity = try c.column("popularity")
    let average = try c.column("average"), count = try c.column("count")
    let hits = try rows.map { row throws(RowError) in
        try Hit(id: row.decode(id), name: row.decode(name), category: row.decode(category), address: row.decode(address),
                lat: row.decode(lat), lon: row.decode(lon), priceLevel: row.decode(price),
                popularity: row.decode(popularity), rating: row.decode(average), reviewCount: row.decode(count))
    }
    return hits.count
}
#endif
measure("typo vocabulary, Row by index (compactMap string(0))") {
    try db.query(termSQL).compactMap { $0.string(0) }.count
}
#if ROW_DECODING
measure("typo vocabulary, [Row].decode(\"term\")") {
    try db.query(termSQL).decode("term", as: String.self).count
}
#endif

print("rows: \(rowCount), best of \(rounds) rounds, scans taking turns")
var best = [Double](repeating: .infinity, count: scans.count)
var checks = [Int](repeating: 0, count: scans.count)
for _ in 0..<rounds {
    for (index, scan) in scans.enumerated() {
        let start = DispatchTime.now().uptimeNanoseconds
        checks[index] = try scan.body()
        best[index] = min(best[index], Double(DispatchTime.now().uptimeNanoseconds - start))
    }
}
for (index, scan) in scans.enumerated() {
    print("\(scan.label.padding(toLength: 58, withPad: " ", startingAt: 0)) \(String(format: "%7.1f", best[index] / Double(rowCount))) ns/row  (\(checks[index]))")
}
