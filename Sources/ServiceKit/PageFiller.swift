/// A page of a list being filled: items until `limit` of them, or until the next one would
/// take the page's encoded items past `budget` bytes.
///
/// A page always takes its first item, whatever its size, so paging always moves on (no item
/// the rules accept comes near a budget). Sizes are those of the items as the reply encodes
/// them, with a comma between two.
public struct PageFiller<Item> {
    public let limit: Int
    public let budget: Int
    public private(set) var items: [Item] = []
    public private(set) var bytes = 0
    /// Whether the page stopped before the rows did, by count or by size: more may follow.
    public private(set) var isFull = false

    public init(limit: Int, budget: Int) {
        self.limit = limit
        self.budget = budget
    }

    /// Adds `item`, of `size` encoded bytes, if it fits; false once the page is full (this
    /// item left out because it does not fit, or the last to fit).
    public mutating func add(_ item: Item, size: Int) -> Bool {
        let size = size + (items.isEmpty ? 0 : 1)
        if !items.isEmpty && bytes + size > budget {
            isFull = true
            return false
        }
        items.append(item)
        bytes += size
        if items.count >= limit { isFull = true }
        return !isFull
    }
}
