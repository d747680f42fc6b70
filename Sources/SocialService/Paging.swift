import Bus
import Foundation
import Storage

/// A page of a list being filled: items until `limit` of them, or until the next one would
/// take the page's encoded items past `budget` bytes.
///
/// A page always takes its first item, whatever its size, so paging always moves on (no item
/// the rules accept comes near a budget). Sizes are those of the items as the reply encodes
/// them, with a comma between two.
struct PageFiller<Item> {
    let limit: Int
    let budget: Int
    private(set) var items: [Item] = []
    private(set) var bytes = 0
    /// Whether the page stopped before the rows did, by count or by size: more may follow.
    private(set) var isFull = false

    init(limit: Int, budget: Int) {
        self.limit = limit
        self.budget = budget
    }

    /// Adds `item`, of `size` encoded bytes, if it fits; false once the page is full (this
    /// item left out because it does not fit, or the last to fit).
    mutating func add(_ item: Item, size: Int) -> Bool {
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

/// Stops reading rows once a page is full.
private struct PageIsFull: Error {}

extension SocialStore {
    /// Reads the rows of `sql` (which ends in `LIMIT ?`, given `limit`) one at a time into a
    /// page bounded by `limit` and by `SocialOptions.pageBudgetBytes`, each measured as `wire`
    /// encodes it. Rows after the page are never read, so memory stays near the budget.
    func readPage<Item, Wire: Encodable>(_ sql: String, _ arguments: [(any SQLBindable)?], limit: Int,
                                         item: (Row) throws -> Item, wire: (Item) -> Wire) throws -> PageFiller<Item> {
        var page = PageFiller<Item>(limit: limit, budget: options.pageBudgetBytes)
        do {
            try db.forEachRow(sql, arguments + [limit]) { row in
                let next = try item(row)
                guard page.add(next, size: try JSONCoding.encoder.encode(wire(next)).count) else { throw PageIsFull() }
            }
        } catch is PageIsFull {
            // The page is full: the rest of the rows stay unread.
        }
        return page
    }
}
