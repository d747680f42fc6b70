import Foundation

/// Generated places spread over real towns with a Zipf mix of town sizes, for the synthetic
/// runs at scale (`bench/search`): real place density has a few big cities, many towns and a
/// long tail of villages, not one giant cluster.
///
/// The towns of the CSV are shuffled (seeded), and the town of rank k gets a share of the
/// places proportional to 1/k^`exponent`. With 0.8 over the 144,561 towns, the biggest gets
/// about 2% of all places, the 100th 0.05%, and half the places fall within the top 6,000
/// towns. A place lies around its town on a gaussian whose spread grows with the town's
/// expected number of places (from 500 m for a village to 15 km for a big city).
struct ZipfTowns {
    static let exponent = 0.8
    /// The towns, biggest first.
    let towns: [Town]
    /// Running sums of the towns' shares, for picking a town by binary search.
    private let cumulative: [Double]
    /// Each town's expected number of places when `total` are generated.
    private let expected: [Double]

    init(_ towns: [Town], total: Int, seed: UInt64) {
        var rng = Random(state: seed)
        var shuffled = towns
        for i in stride(from: shuffled.count - 1, to: 0, by: -1) { shuffled.swapAt(i, Int(rng.next() % UInt64(i + 1))) }
        self.towns = shuffled
        let weights = (1...max(1, shuffled.count)).map { pow(Double($0), -ZipfTowns.exponent) }
        let sum = weights.reduce(0, +)
        var running = 0.0
        cumulative = weights.map {
            running += $0 / sum
            return running
        }
        expected = weights.map { $0 / sum * Double(total) }
    }

    /// A town's rank (0 is the biggest), drawn by its share.
    func pick(_ rng: inout Random) -> Int {
        let x = rng.unit()
        var low = 0
        var high = cumulative.count - 1
        while low < high {
            let middle = (low + high) / 2
            if cumulative[middle] < x { low = middle + 1 } else { high = middle }
        }
        return low
    }

    /// A point around the town of `rank`, as far out as its size makes it.
    func point(around rank: Int, _ rng: inout Random) -> (lat: Double, lon: Double) {
        towns[rank].point(spread: min(15_000, max(500, 250 * expected[rank].squareRoot())), &rng)
    }

    /// Place `i` as `catalog.create` takes it ("Lyon Market 12"), its point appended to `points`.
    func place(_ i: Int, _ rng: inout Random, _ points: inout [(lat: Double, lon: Double)]) -> String {
        let rank = pick(&rng)
        let kind = rng.pick(Town.kinds)
        let (lat, lon) = point(around: rank, &rng)
        points.append((lat, lon))
        return Town.json(
            name: "\(towns[rank].name) \(kind.word) \(i)", category: kind.category, lat: lat, lon: lon,
            address: towns[rank].address, popularity: Int(pow(rng.unit(), 3) * 100), priceLevel: Int(rng.next() % 5))
    }
}
