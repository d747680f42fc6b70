import Bus
import Contracts
import Foundation
import ServiceKit
import Storage

// Groups of travellers: an owner, members and pending invitations. A group is seen only by
// its members; to anyone else (signed in or not, removed, never invited) it does not exist.
// Users in a block relation with the viewer, either way, are left out of all the viewer sees.

/// The rules and limits of groups.
enum GroupRules {
    /// What anyone who is not a member of a group hears of it, signed in or not.
    static func noGroup(_ id: Int64, field: String = "group_id") -> ServiceError { ServiceError(.notFound, "no group with id \(id)", field: field) }

    /// Members and pending invitations of one group together.
    static let maxMembers = 50
    /// Groups one user is a member of.
    static let maxGroupsPerUser = 20
    /// Invitations waiting for one user's answer.
    static let maxPendingPerUser = 100
    /// Invitations one user sends in `inviteWindowMs`.
    static let invitesPerWindow = 60
    static let inviteWindowMs: Int64 = 60_000

    /// 1-100 characters (400 bytes as sent) once trimmed, on one line.
    static func groupName(_ raw: String) throws(ServiceError) -> String {
        let trimmed = try GroupCreation.nameRule.trimmed(raw)
        guard !trimmed.isEmpty else { throw .invalid("name", "must not be empty") }
        return trimmed
    }

    /// The tables of blocks, groups and positions, in their own migration domain.
    static let migrations: [Migration] = [
        Migration(
            domain: "groups", version: 1,
            sql: """
                CREATE TABLE blocks (
                    id         INTEGER PRIMARY KEY AUTOINCREMENT,
                    blocker_id INTEGER NOT NULL REFERENCES users(id) ON DELETE CASCADE,
                    blocked_id INTEGER NOT NULL REFERENCES users(id) ON DELETE CASCADE,
                    created_at TEXT NOT NULL,
                    UNIQUE (blocker_id, blocked_id)
                );
                CREATE INDEX blocks_by_blocked ON blocks(blocked_id, blocker_id);
                CREATE TABLE groups (
                    id         INTEGER PRIMARY KEY AUTOINCREMENT,
                    name       TEXT NOT NULL,
                    created_at TEXT NOT NULL
                );
                CREATE TABLE group_members (
                    group_id  INTEGER NOT NULL REFERENCES groups(id) ON DELETE CASCADE,
                    user_id   INTEGER NOT NULL REFERENCES users(id) ON DELETE CASCADE,
                    role      TEXT NOT NULL CHECK (role IN ('owner', 'member')),
                    joined_at TEXT NOT NULL,
                    sharing   INTEGER NOT NULL DEFAULT 0 CHECK (sharing IN (0, 1)),
                    PRIMARY KEY (group_id, user_id)
                );
                CREATE INDEX group_members_by_user ON group_members(user_id, group_id);
                CREATE TABLE group_invitations (
                    group_id   INTEGER NOT NULL REFERENCES groups(id) ON DELETE CASCADE,
                    user_id    INTEGER NOT NULL REFERENCES users(id) ON DELETE CASCADE,
                    invited_by INTEGER NOT NULL REFERENCES users(id) ON DELETE CASCADE,
                    created_at TEXT NOT NULL,
                    PRIMARY KEY (group_id, user_id)
                );
                CREATE INDEX group_invitations_by_user ON group_invitations(user_id, group_id);
                CREATE INDEX group_invitations_by_inviter ON group_invitations(invited_by);
                CREATE TABLE group_map_follows (
                    group_id    INTEGER NOT NULL,
                    follower_id INTEGER NOT NULL,
                    followee_id INTEGER NOT NULL,
                    created_at  TEXT NOT NULL,
                    PRIMARY KEY (group_id, follower_id),
                    FOREIGN KEY (group_id, follower_id) REFERENCES group_members(group_id, user_id) ON DELETE CASCADE,
                    FOREIGN KEY (group_id, followee_id) REFERENCES group_members(group_id, user_id) ON DELETE CASCADE
                );
                CREATE INDEX group_map_follows_by_followee ON group_map_follows(group_id, followee_id);
                CREATE TABLE positions (
                    user_id     INTEGER PRIMARY KEY REFERENCES users(id) ON DELETE CASCADE,
                    lat         REAL NOT NULL,
                    lon         REAL NOT NULL,
                    accuracy_m  REAL,
                    heading_deg REAL,
                    speed_mps   REAL,
                    at_ms       INTEGER NOT NULL
                );
                CREATE INDEX positions_by_time ON positions(at_ms);
                """),
        // When each member turned sharing with the group on (0 while off): the group sees no
        // position reported before.
        Migration(
            domain: "groups", version: 2,
            sql: """
                ALTER TABLE group_members ADD COLUMN sharing_since_ms INTEGER NOT NULL DEFAULT 0;
                """),
    ]
}

/// Groups of travellers: members, owners and invitations, seen by their members only.
final class GroupStore: SocialFeature {
    let shared: SocialShared
    let blocks: BlockStore
    /// Each user's invitations in the last minute (on the writer thread, whose handlers alone use it).
    private var invites = RateWindow<Int64>(limit: GroupRules.invitesPerWindow, windowMs: GroupRules.inviteWindowMs)

    init(_ shared: SocialShared, blocks: BlockStore) {
        self.shared = shared
        self.blocks = blocks
    }

    /// Whether `user` is a member of `group` (pending invitations are not membership).
    func isMember(group: Int64, user: Int64) throws -> Bool {
        try db.queryOne("SELECT 1 FROM group_members WHERE group_id = ? AND user_id = ?", group, user) != nil
    }

    /// The members of `group` (none for a group that does not exist), longest member first.
    func members(of group: Int64) throws -> [Int64] {
        try db.query("SELECT user_id FROM group_members WHERE group_id = ? ORDER BY joined_at, rowid", group).decode("user_id", as: Int64.self)
    }

    /// The caller's role in `group` when they are a member, else `not_found` as if the group
    /// did not exist.
    @discardableResult
    func member(_ caller: Caller, of group: Int64) throws -> String {
        guard
            let role = try db.queryOne("SELECT role FROM group_members WHERE group_id = ? AND user_id = ?", group, caller.id)?
                .decode("role", as: String.self)
        else { throw GroupRules.noGroup(group) }
        return role
    }

    /// `conflict` when `user` is in as many groups as anyone may be.
    private func requireRoomForGroup(_ user: Int64, field: String) throws {
        let count = try db.scalarInt("SELECT count(*) FROM group_members WHERE user_id = ?", user) ?? 0
        guard count < GroupRules.maxGroupsPerUser else {
            throw ServiceError(.conflict, "you are in \(GroupRules.maxGroupsPerUser) groups, the most; leave one (groups.leave) first", field: field)
        }
    }

    /// `groups.create`: a group whose owner is the caller.
    func create(_ request: GroupCreation, caller: Caller) throws -> GroupView {
        let name = try GroupRules.groupName(request.name)
        return try db.transaction {
            try requireRoomForGroup(caller.id, field: "name")
            let now = timestamp()
            try db.run("INSERT INTO groups (name, created_at) VALUES (?, ?)", name, now)
            let id = db.lastInsertRowID
            try db.run("INSERT INTO group_members (group_id, user_id, role, joined_at) VALUES (?, ?, 'owner', ?)", id, caller.id, now)
            return try view(id, viewer: caller.id)
        }
    }

    /// `groups.get`: the group as member `viewer` sees it. Its owner sees every member and
    /// invitation, those they block marked `blocked`; any other member sees those they do not
    /// block, and the invitations they sent. A member who blocks the viewer is shown not
    /// sharing, as their positions never reach the viewer.
    func view(_ group: Int64, viewer: Int64) throws -> GroupView {
        guard let row = try db.queryOne("SELECT name, created_at FROM groups WHERE id = ?", group) else { throw GroupRules.noGroup(group) }
        let owner = try db.queryOne("SELECT 1 FROM group_members WHERE group_id = ? AND user_id = ? AND role = 'owner'", group, viewer) != nil
        let youBlock = { (column: String) in "EXISTS (SELECT 1 FROM blocks WHERE blocker_id = ? AND blocked_id = \(column))" }
        let members = try db.query(
            """
            SELECT m.role, m.joined_at, m.sharing AND \(BlockRules.apart("m.user_id")) AS sharing, u.id AS user_id, u.username, u.name,
                   \(youBlock("m.user_id")) AS you_block
            FROM group_members m JOIN users u ON u.id = m.user_id
            WHERE m.group_id = ? AND (? OR \(BlockRules.shown("m.user_id"))) ORDER BY m.joined_at, m.rowid
            """, viewer, viewer, viewer, group, owner, viewer
        ).map { row in
            GroupMember(
                user: try UserSummary(row: row), role: try row.decode("role"), joinedAt: try row.decode("joined_at"), sharing: try row.decode("sharing"),
                blocked: try row.decode("you_block", as: Bool.self) ? true : nil)
        }
        let invitations = try db.query(
            """
            SELECT i.created_at, u.id AS user_id, u.username, u.name, b.id AS by_user_id, b.username AS by_username, b.name AS by_name,
                   (\(BlockRules.shown("i.invited_by"))) AS by_visible, \(youBlock("i.user_id")) AS you_block
            FROM group_invitations i JOIN users u ON u.id = i.user_id JOIN users b ON b.id = i.invited_by
            WHERE i.group_id = ? AND (? OR i.invited_by = ? OR \(BlockRules.shown("i.user_id"))) ORDER BY i.created_at, i.rowid
            """, viewer, viewer, group, owner, viewer, viewer
        ).map { row in
            PendingInvitation(
                user: try UserSummary(row: row), invitedBy: try row.decode("by_visible", as: Bool.self) ? try UserSummary(row: row, prefix: "by_") : nil,
                invitedAt: try row.decode("created_at"), blocked: try row.decode("you_block", as: Bool.self) ? true : nil)
        }
        let following = try db.queryOne(
            """
            SELECT u.id AS user_id, u.username, u.name FROM group_map_follows f JOIN users u ON u.id = f.followee_id
            WHERE f.group_id = ? AND f.follower_id = ? AND \(BlockRules.shown("f.followee_id"))
            """, group, viewer, viewer
        ).map { try UserSummary(row: $0) }
        let followedBy = try db.query(
            """
            SELECT u.id AS user_id, u.username, u.name FROM group_map_follows f JOIN users u ON u.id = f.follower_id
            WHERE f.group_id = ? AND f.followee_id = ? AND \(BlockRules.shown("f.follower_id")) ORDER BY f.created_at, f.rowid
            """, group, viewer, viewer
        ).map { try UserSummary(row: $0) }
        return GroupView(
            id: group, name: try row.decode("name"), createdAt: try row.decode("created_at"), members: members,
            invitations: invitations, following: following, followedBy: followedBy)
    }

    /// `groups.list`: the caller's groups (oldest membership first) and the invitations waiting for them.
    func list(of user: Int64) throws -> GroupList {
        let groups = try db.query(
            """
            SELECT g.id, g.name, m.role, m.sharing,
                   (SELECT count(*) FROM group_members o WHERE o.group_id = g.id AND (m.role = 'owner' OR \(BlockRules.shown("o.user_id")))) AS members
            FROM group_members m JOIN groups g ON g.id = m.group_id WHERE m.user_id = ? ORDER BY m.joined_at, m.rowid
            """, user, user
        ).map { row in
            GroupListing(
                id: try row.decode("id"), name: try row.decode("name"), role: try row.decode("role"), sharing: try row.decode("sharing"),
                members: try row.decode("members"))
        }
        let invitations = try db.query(
            """
            SELECT g.id, g.name, i.created_at, b.id AS user_id, b.username, b.name AS by_name
            FROM group_invitations i JOIN groups g ON g.id = i.group_id JOIN users b ON b.id = i.invited_by
            WHERE i.user_id = ? AND NOT \(Self.unseen("i")) ORDER BY i.created_at, i.rowid
            """, user
        ).map { row in
            InvitationToMe(
                group: GroupName(id: try row.decode("id"), name: try row.decode("name")),
                invitedBy: UserSummary(id: try row.decode("user_id"), username: try row.decode("username"), name: try row.decode("by_name")),
                invitedAt: try row.decode("created_at"))
        }
        return GroupList(groups: groups, invitations: invitations)
    }

    /// An SQL condition that holds when the invitation `alias` is one its invitee never sees:
    /// they block its inviter. It binds nothing.
    static func unseen(_ alias: String) -> String {
        "EXISTS (SELECT 1 FROM blocks WHERE blocker_id = \(alias).user_id AND blocked_id = \(alias).invited_by)"
    }

    /// `groups.invite`: any member invites a user by username; the invitee hears `group.invited`.
    /// An invitation to a user who blocks the caller is answered, stored, counted and shown to
    /// the group as any other, but its invitee never sees it (no push, not in their list,
    /// `not_found` to accept or decline) while they block the caller.
    func invite(_ request: GroupInvitation, caller: Caller) throws -> InvitationSent {
        try member(caller, of: request.groupId)
        let username = try AccountRules.username(request.username)
        try invites.admit(
            caller.id, now: nowMs,
            refusal: ServiceError(.rateLimited, "at most \(GroupRules.invitesPerWindow) invitations a minute; try again in a moment"))
        let sent = InvitationSent(groupId: request.groupId, username: username, invited: true)
        return try db.transaction {
            guard let invitee = try db.queryOne("SELECT id FROM users WHERE username = ?", username)?.decode("id", as: Int64.self) else {
                throw ServiceError(.notFound, "no user named \(username)", field: "username")
            }
            guard invitee != caller.id else { throw ServiceError.invalid("username", "you are a member already") }
            if try blocks.contains(blocker: caller.id, blocked: invitee) { throw BlockRules.youBlock(invitee, field: "username") }
            let unseen = try blocks.contains(blocker: invitee, blocked: caller.id)
            // Already invited or a member, before whether the group is full.
            if try db.queryOne("SELECT 1 FROM group_invitations WHERE group_id = ? AND user_id = ?", request.groupId, invitee) != nil { return sent }
            if try isMember(group: request.groupId, user: invitee) {
                // A member who blocks the caller is not there for them: answered as sent.
                if unseen { return sent }
                throw ServiceError(.alreadyExists, "\(username) is a member already", field: "username")
            }
            let taken =
                try db.scalarInt(
                    """
                    SELECT (SELECT count(*) FROM group_members WHERE group_id = ?1) + (SELECT count(*) FROM group_invitations WHERE group_id = ?1)
                    """, request.groupId) ?? 0
            guard taken < GroupRules.maxMembers else {
                throw ServiceError(.conflict, "group \(request.groupId) has \(GroupRules.maxMembers) members and invitations, the most", field: "group_id")
            }
            // Only the invitations the invitee sees count towards their limit.
            let pending = try db.scalarInt("SELECT count(*) FROM group_invitations i WHERE i.user_id = ? AND NOT \(Self.unseen("i"))", invitee) ?? 0
            guard pending < GroupRules.maxPendingPerUser else {
                throw ServiceError(.conflict, "\(username) has \(GroupRules.maxPendingPerUser) invitations waiting, the most", field: "username")
            }
            let now = timestamp()
            try db.run(
                "INSERT INTO group_invitations (group_id, user_id, invited_by, created_at) VALUES (?, ?, ?, ?)",
                request.groupId, invitee, caller.id, now)
            guard !unseen else { return sent }
            guard let group = try db.queryOne("SELECT name FROM groups WHERE id = ?", request.groupId)?.decode("name", as: String.self) else {
                throw GroupRules.noGroup(request.groupId)
            }
            let body = InvitationToMe(group: GroupName(id: request.groupId, name: group), invitedBy: try shared.summary(of: caller.id), invitedAt: now)
            worker.push(
                Push(
                    Pushes.groupInvited, id: shared.pushID("i\(request.groupId)"), userId: invitee,
                    body: try Pushes.groupInvited.encode(body)))
            return sent
        }
    }

    /// `not_found` (field `group_id`) unless `user` has an invitation to `group` they see.
    private func requireInvitation(_ group: Int64, _ user: Int64) throws {
        guard try db.queryOne("SELECT 1 FROM group_invitations i WHERE i.group_id = ? AND i.user_id = ? AND NOT \(Self.unseen("i"))", group, user) != nil else {
            throw ServiceError(.notFound, "no invitation to group \(group)", field: "group_id")
        }
    }

    /// `groups.accept`: the caller's invitation becomes membership (sharing off).
    func accept(_ group: Int64, caller: Caller) throws -> GroupView {
        return try db.transaction {
            try requireInvitation(group, caller.id)
            try requireRoomForGroup(caller.id, field: "group_id")
            try db.run("DELETE FROM group_invitations WHERE group_id = ? AND user_id = ?", group, caller.id)
            try db.run("INSERT INTO group_members (group_id, user_id, role, joined_at) VALUES (?, ?, 'member', ?)", group, caller.id, timestamp())
            return try view(group, viewer: caller.id)
        }
    }

    /// `groups.decline`: the caller's invitation goes.
    func decline(_ group: Int64, caller: Caller) throws -> GroupDeclined {
        return try db.transaction {
            try requireInvitation(group, caller.id)
            try db.run("DELETE FROM group_invitations WHERE group_id = ? AND user_id = ?", group, caller.id)
            return GroupDeclined(groupId: group)
        }
    }

    /// `groups.leave`.
    func leave(_ group: Int64, caller: Caller) throws -> GroupLeft {
        try db.transaction {
            try member(caller, of: group)
            try removeMember(caller.id, from: group)
            return GroupLeft(groupId: group)
        }
    }

    /// `groups.remove`: the owner removes any member or cancels any invitation of the group,
    /// whatever blocks there are between them.
    func remove(_ request: GroupMemberRef, caller: Caller) throws -> MemberRemoved {
        try db.transaction {
            let role = try member(caller, of: request.groupId)
            guard role == "owner" else { throw ServiceError(.permissionDenied, "only the group's owner may remove members or invitations") }
            guard request.userId != caller.id else { throw ServiceError.invalid("user_id", "cannot remove yourself; leave the group (groups.leave)") }
            let absent = ServiceError(.notFound, "user \(request.userId) is neither a member of group \(request.groupId) nor invited", field: "user_id")
            if try isMember(group: request.groupId, user: request.userId) {
                try removeMember(request.userId, from: request.groupId)
            } else {
                try db.run("DELETE FROM group_invitations WHERE group_id = ? AND user_id = ?", request.groupId, request.userId)
                guard db.changes > 0 else { throw absent }
            }
            return MemberRemoved(groupId: request.groupId, userId: request.userId, removed: true)
        }
    }

    /// Takes `user` out of `group`, in the caller's transaction: an owner who goes passes the
    /// group to the member who joined first; the last member's going deletes the group with
    /// its invitations. The user's position goes too when nothing keeps it any more.
    func removeMember(_ user: Int64, from group: Int64) throws {
        let role = try db.queryOne("SELECT role FROM group_members WHERE group_id = ? AND user_id = ?", group, user)?.decode("role", as: String.self)
        try db.run("DELETE FROM group_members WHERE group_id = ? AND user_id = ?", group, user)
        if let next = try members(of: group).first {
            if role == "owner" { try db.run("UPDATE group_members SET role = 'owner' WHERE group_id = ? AND user_id = ?", group, next) }
        } else {
            try db.run("DELETE FROM groups WHERE id = ?", group)
        }
        try dropPositionUnlessKept(user)
    }

    /// Whether `user`'s last position is kept: while they share it with a group, or are
    /// discoverable (`social.people_at` lists who is at a place now).
    func keepsPosition(_ user: Int64) throws -> Bool {
        try db.queryOne("SELECT 1 FROM group_members WHERE user_id = ? AND sharing = 1 LIMIT 1", user) != nil
            || db.queryOne("SELECT 1 FROM users WHERE id = ? AND discoverable = 1", user) != nil
    }

    /// Forgets `user`'s last position when nothing keeps it any more.
    func dropPositionUnlessKept(_ user: Int64) throws {
        if try !keepsPosition(user) { try db.run("DELETE FROM positions WHERE user_id = ?", user) }
    }

    /// Removes `user` from every group, their invitations (to them and from them) and their
    /// position: part of erasing an account, in its transaction.
    func erase(of user: Int64) throws {
        for group in try db.query("SELECT group_id FROM group_members WHERE user_id = ? ORDER BY group_id", user).decode("group_id", as: Int64.self) {
            try removeMember(user, from: group)
        }
        try db.run("DELETE FROM group_invitations WHERE user_id = ? OR invited_by = ?", user, user)
        try db.run("DELETE FROM positions WHERE user_id = ?", user)
    }
}
