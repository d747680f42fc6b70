import Bus
import Contracts
import Foundation
import ServiceKit
import Storage

/// Stops reading rows once a page is full.
private struct PageIsFull: Error {}

extension SocialStore {
    /// Reads the rows of `sql` (which ends in `LIMIT ?`, given `limit`) one at a time into a
    /// page bounded by `limit` and by `SocialOptions.pageBudgetBytes`, each measured as `wire`
    /// encodes it. Rows after the page are never read, so memory stays near the budget.
    func readPage<Item, Wire: Encodable>(
        _ sql: String, _ arguments: [(any SQLBindable)?], limit: Int,
        item: (Row) throws -> Item, wire: (Item) -> Wire
    ) throws -> PageFiller<Item> {
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
