import Bus
import Contracts
import Foundation
import ServiceKit
import Storage

/// Read-only links to one list: a random token that anyone holding it can read the list with
/// (`favorites.shared`, no sign-in), until the owner revokes it.
///
/// A list has at most one live token; sharing it again answers the live one, so a link sent
/// earlier keeps working. A share shows the list's name and places, never the owner's id nor
/// their notes (notes stay the owner's own).
enum Shares {
    /// Random bytes in a token: 192 bits, written as 32 base64url letters.
    static let tokenBytes = 24
    /// The longest token looked up; a longer one is simply not found.
    static let maxTokenBytes = 64

    static func register(_ table: inout HandlerTable<FavoritesStore>) {
        table.on(Methods.Favorites.share) { (request: ListShareRequest, caller, _, store) -> ShareReply in
            try store.share(request.list, caller: caller)
        }
        table.on(Methods.Favorites.shareRevoke) { (request: ListShareRequest, caller, _, store) -> Revoked in
            try store.revokeShare(request.list, caller: caller)
        }
        table.onRaw(Methods.Favorites.shared) { context, store in
            Response(body: try store.shared(try context.checkedParams(SharedRequest.self)).body)
        }
    }

    /// A new token from the system's random source.
    static func newToken() -> String {
        var generator = SystemRandomNumberGenerator()
        return Base64URL.encode((0..<tokenBytes).map { _ in UInt8.random(in: .min ... .max, using: &generator) })
    }
}

extension FavoritesStore {
    /// `favorites.share`: the list's live token, or a new one.
    func share(_ name: String, caller: Caller) throws -> ShareReply {
        let list = try findList(name, userId: caller.id)
        let listId = try listId(list, userId: caller.id)
        if let token = try db.queryOne("SELECT token FROM shares WHERE list_id = ?", listId) {
            return ShareReply(token: try token.decode("token"), list: list.name)
        }
        let token = Shares.newToken()
        try db.run("INSERT INTO shares (token, list_id, created_at) VALUES (?, ?, ?)", token, listId, now)
        try pushChanged(FavoritesChange(change: .shared, list: list.name), caller: caller)
        return ShareReply(token: token, list: list.name)
    }

    /// `favorites.share.revoke`: ends the list's token; a list not shared is no error.
    func revokeShare(_ name: String, caller: Caller) throws -> Revoked {
        let list = try findList(name, userId: caller.id)
        guard let id = list.id else { return Revoked(list: list.name, revoked: false) }
        try db.run("DELETE FROM shares WHERE list_id = ?", id)
        let revoked = db.changes > 0
        if revoked { try pushChanged(FavoritesChange(change: .unshared, list: list.name), caller: caller) }
        return Revoked(list: list.name, revoked: revoked)
    }

    /// `favorites.shared`: a page of the shared list, newest first, without notes. An unknown,
    /// revoked or malformed token is the same `not_found` (field `token`), so tokens cannot be
    /// probed.
    func shared(_ request: SharedRequest) throws -> ItemPage {
        let limit = try PageLimit.listItems.validated(request.limit)
        let gone = ServiceError(.notFound, "no shared list has this token", field: "token")
        guard request.token.utf8.count <= Shares.maxTokenBytes,
            let row = try db.queryOne("SELECT l.id, l.name FROM shares s JOIN lists l ON l.id = s.list_id WHERE s.token = ?", request.token)
        else {
            throw gone
        }
        let after = try request.cursor.map { cursor throws(ServiceError) in try ItemCursor(cursor, sort: .added) }
        return try itemPage(listId: try row.decode("id"), name: try row.decode("name"), sort: .added, near: nil, after: after, limit: limit, notes: false)
    }
}
