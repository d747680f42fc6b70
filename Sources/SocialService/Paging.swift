import Bus
import Contracts
import Foundation
import ServiceKit
import Storage

/// Stops reading rows once a page is full.
private struct PageIsFull: Error {}

extension SocialShared {
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

    /// A page of users from `sql`, which selects `page_id` (what `cursor` encodes, descending)
    /// and a user summary's columns, and ends in `LIMIT ?`.
    func userPage(_ sql: String, _ arguments: [(any SQLBindable)?], cursor: IDCursor, limit: Int) throws -> UserPage {
        let page = try readPage(
            sql, arguments, limit: limit,
            item: { row throws -> (key: Int64, user: UserSummary) in (key: try row.decode("page_id"), user: try UserSummary(row: row)) },
            wire: \.user)
        let next = page.isFull ? page.items.last.map { cursor.encode($0.key) } : nil
        return UserPage(users: page.items.map(\.user), nextCursor: next)
    }
}
