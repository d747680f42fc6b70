import Bus
import Foundation
import ServiceKit
import Storage

/// Pins: built by the pins engineer.
enum Pins {
    static let migrations: [Migration] = []

    static func register(_ table: inout HandlerTable<FavoritesStore>) {}

    static func erase(user id: Int64, _ db: Database) throws {}
}
