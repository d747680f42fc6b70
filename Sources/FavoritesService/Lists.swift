import Bus
import Contracts
import Foundation
import ServiceKit
import Storage

/// Lists, items, shares and counts: built by the lists engineer.
enum Lists {
    static let migrations: [Migration] = []

    static func register(_ table: inout HandlerTable<FavoritesStore>) {}

    static func erase(user id: Int64, _ scope: EventScope) throws {}
}

extension FavoritesStore {
    func countsSnapshot(after: String?, limit: Int) throws -> SnapshotPage { SnapshotPage(events: [], next: nil) }
}
