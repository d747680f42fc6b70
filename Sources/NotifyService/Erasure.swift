import Bus
import Contracts
import Foundation
import Geo
import ServiceKit
import Storage

/// Erasing a deleted account (`social.user.deleted`): notify keeps no copy of social, only
/// data of users it knows by id, and this is where that data goes when the account does.
enum Erasure {
    /// Follows social for `social.user.deleted` only. Nothing is copied from social, so a
    /// rebuild from its snapshot has nothing to forget (`reset` does nothing); every other
    /// type (ratings, sessions, redacted events) is passed over. The user's late writes are
    /// refused for a while (`erased`, noted before the erasure commits; `NotifyStore.caller`).
    static func socialApplier(clock: @escaping @Sendable () -> Int64, erased: RecentlyErased) -> EventApplier {
        EventApplier(
            apply: { event, scope in
                guard event.header.type == SocialEvents.userDeleted else { return }
                let id = try event.body(UserDeleted.self).userId
                let now = clock()
                erased.note(id, now: now)
                try erase(user: id, scope.db, now: now)
            },
            reset: { _ in },
            types: [SocialEvents.userDeleted])
    }

    /// Deletes every row of user `id`: their annotations (with their places in the R*Tree and
    /// everyone's pairs with them, each recorded in `changes` as deleted so `annotations.sync`
    /// clients drop it), their settings, alert state (`judged`, `pairs`, `zones` and its
    /// R*Tree) and inbox, and the entries of other inboxes that alerted of one of their
    /// annotations (the alert names its author). Idempotent: a second time finds nothing.
    static func erase(user id: Int64, _ db: Database, now: Int64) throws {
        let own = try db.query("SELECT id, lat, lon FROM annotations WHERE user_id = ? ORDER BY id", id)
        for row in own {
            let annotation: Int64 = try row.decode("id")
            try db.run("DELETE FROM pairs WHERE annotation_id = ?", annotation)
            try db.run("DELETE FROM annotations_geo WHERE id = ?", annotation)
            try db.run("DELETE FROM annotations WHERE id = ?", annotation)
            try NotifyStore.recordChange(
                annotation, at: Coordinate(uncheckedLatitude: try row.decode("lat"), longitude: try row.decode("lon")),
                deleted: true, now: now, db)
        }
        try db.run("DELETE FROM inbox WHERE user_id = ? OR json_extract(alert_json, '$.user_id') = ?", id, id)
        try db.run("DELETE FROM pairs WHERE user_id = ?", id)
        try db.run("DELETE FROM zones_geo WHERE id IN (SELECT id FROM zones WHERE user_id = ?)", id)
        try db.run("DELETE FROM zones WHERE user_id = ?", id)
        try db.run("DELETE FROM judged WHERE user_id = ?", id)
        try db.run("DELETE FROM settings WHERE user_id = ?", id)
    }
}
