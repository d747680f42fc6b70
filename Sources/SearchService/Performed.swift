import Bus
import Contracts
import Foundation
import ServiceKit
import Storage

/// `search.performed`: what search tells of the searches signed-in users make, so favorites can
/// keep each user's recent searches (Protocols/search.md#events-published).
///
/// A search is a read, answered on a reader thread; recording it must not make it wait for a
/// write. So the handler hands the event to `DeferredEvents`, and the runtime's writer appends
/// groups of them to the outbox, each group in one transaction. Search keeps no state of these
/// events but its outbox, so its `sys.snapshot` is what the outbox still holds of them.
enum PerformedSearches {
    /// How long searches of a user erased a moment ago are not recorded: far longer than a
    /// gateway vouches for a token it checked (2 s) or a request waits.
    static let erasedWindowMs: Int64 = 600_000

    /// The clock of the erasure window, in milliseconds since 1970.
    static func now() -> Int64 { Int64((Date().timeIntervalSince1970 * 1_000).rounded(.down)) }

    /// Whether user `id` was erased within the window.
    static func isErased(_ id: Int64, _ erased: RecentlyErased) -> Bool {
        (try? erased.refuse(id, now: now())) == nil
    }

    /// The queue of the service's `search.performed` events: appended in groups, except those of
    /// a user erased meanwhile (checked in the appending transaction, after the erasure noted them).
    ///
    /// A group gathers for 250 ms: every commit to search's file makes each reader connection
    /// drop its page cache at its next search (WAL mode), and committing every 10 ms under load
    /// cost a signed-in search about half again its CPU time (`tourbus-bench performed`); four
    /// commits a second cost nothing measurable. A crash loses at most those 250 ms of searches.
    static func queue(erased: RecentlyErased) -> DeferredEvents {
        DeferredEvents(
            gatherMilliseconds: 250,
            keep: { _, body in
                guard erased.any(now: now()) else { return true }  // the common case: no body to read
                struct Subject: Decodable {
                    var userId: Int64
                    enum CodingKeys: String, CodingKey { case userId = "user_id" }
                }
                guard let subject = try? JSONCoding.decoder.decode(Subject.self, from: body) else { return true }
                return !isErased(subject.userId, erased)
            })
    }

    /// Erases user `id` from search (`social.user.deleted`), in the applying transaction: their
    /// events still in the outbox become `search.redacted` with body `{}` (the seqs stay, so
    /// replays have no gaps and followers ignore them), and their searches are not recorded
    /// for a while (`erased`, noted first so the deferred writer sees it).
    static func erase(user id: Int64, erased: RecentlyErased, _ db: Database) throws {
        erased.note(id, now: now())
        try Outbox(database: db).redact(user: id, types: [SearchEvents.performed], as: SearchEvents.redacted)
    }

    /// Hands `search.performed` over for a `search.text` answered to `caller`: only a signed-in
    /// one (`Caller.optional`; a malformed `auth` records nothing, and the search is answered
    /// all the same), never an anonymous one; only a first page (a `cursor` continues a search
    /// already recorded); not for a user erased a moment ago.
    static func record(_ query: TextQuery, caller: Caller?, into events: DeferredEvents, erased: RecentlyErased) {
        guard let userId = caller?.id, query.cursor == nil, !isErased(userId, erased) else { return }
        let near = query.near.map { SearchPerformed.Point(lat: $0.lat, lon: $0.lon) }
        let body = SearchPerformed(userId: userId, q: query.q, near: near, at: Logger.timestamp())
        // A full queue refuses it; the writer counts and logs refusals (one line, not one per search).
        events.hand(SearchEvents.performed, json: body.json)
    }

    /// A page of `sys.snapshot`: the `search.performed` events the outbox still holds, by seq,
    /// after key `after` (the last seq of the page before, in decimal).
    static func snapshot(_ db: Database, after: String?, limit: Int) throws -> SnapshotPage {
        var from: Int64 = 0
        if let after {
            guard after.utf8.count <= 20, let seq = Int64(after), seq >= 0 else {
                throw ServiceError.invalid("after", "not a snapshot key from this service")
            }
            from = seq
        }
        let rows = try db.query(
            "SELECT seq, body FROM outbox WHERE seq > ? AND type = ? ORDER BY seq LIMIT ?",
            from, SearchEvents.performed, limit)
        var events: [(type: String, body: Data)] = []
        var last = from
        for row in rows {
            last = try row.decode("seq")
            events.append((SearchEvents.performed, try row.decode("body", as: Data.self)))
        }
        return SnapshotPage(events: events, next: rows.count == limit ? String(last) : nil)
    }
}
