import Bus
import Contracts
import Foundation
import ServiceKit
import Storage

/// The `group.position` pushes of each member: at most one a second to each recipient,
/// however many groups they share it through, the latest position winning. A position that
/// comes within the second of the member's last push is held (replacing any held before it)
/// and pushed by the flush once the second has passed.
struct PositionThrottle {
    /// A position waiting for its second, with the connection that sent it.
    struct Held {
        var position: StoredPosition
        var origin: String?
    }

    private var lastSent: [Int64: Int64] = [:]
    private(set) var held: [Int64: Held] = [:]

    /// Whether a push of `user`'s position may go at `now`; if so it is counted as sent.
    mutating func mayPush(_ user: Int64, now: Int64) -> Bool {
        if let last = lastSent[user], now - last < LiveMapRules.pushIntervalMs { return false }
        lastSent[user] = now
        held[user] = nil
        return true
    }

    mutating func hold(_ user: Int64, _ position: Held) { held[user] = position }

    /// The held positions whose second has passed at `now`, counted as sent; and forgets
    /// the times of pushes more than a second old with nothing held.
    mutating func due(now: Int64) -> [(user: Int64, held: Held)] {
        var out: [(user: Int64, held: Held)] = []
        for (user, position) in held where lastSent[user].map({ now - $0 >= LiveMapRules.pushIntervalMs }) ?? true {
            out.append((user, position))
        }
        for (user, _) in out {
            held[user] = nil
            lastSent[user] = now
        }
        lastSent = lastSent.filter { user, last in held[user] != nil || now - last < LiveMapRules.pushIntervalMs }
        return out.sorted { $0.user < $1.user }
    }
}

/// A user's last position as the `positions` table keeps it.
struct StoredPosition: Sendable, Equatable {
    var lat: Double
    var lon: Double
    var accuracyM: Double?
    var headingDeg: Double?
    var speedMps: Double?
    var atMs: Int64
}

/// The rules of the live map.
enum LiveMapRules {
    /// At most one `group.position` push of one member to one recipient in this time.
    static let pushIntervalMs: Int64 = 1_000
    /// Position reports one user sends a second, at most.
    static let positionsPerSecond = 10
    /// `groups.follow` calls one user makes a minute, at most (each may push).
    static let followsPerMinute = 30
    /// A position this old is shown as stale.
    static let staleMs: Int64 = 600_000
    /// A position this old is not shown, and is deleted.
    static let shownMs: Int64 = 3_600_000

    /// The report checked, each field named: `invalid_argument` otherwise.
    static func check(_ report: PositionReport) throws(ServiceError) {
        func within(_ value: Double?, _ field: String, _ range: ClosedRange<Double>) throws(ServiceError) {
            guard let value else { return }
            guard value.isFinite, range.contains(value) else {
                throw .invalid(field, "must be a number in [\(Int(range.lowerBound)), \(Int(range.upperBound))]")
            }
        }
        try within(report.lat, "lat", -90...90)
        try within(report.lon, "lon", -180...180)
        try within(report.accuracyM, "accuracy_m", 0...100_000)
        if let heading = report.headingDeg, !(heading.isFinite && heading >= 0 && heading < 360) {
            throw .invalid("heading_deg", "must be a number of degrees from 0 up to but not including 360")
        }
        try within(report.speedMps, "speed_mps", 0...1_000)
    }
}

/// The live map of a group: positions shared by opt-in, their throttled pushes, and following a member.
final class LiveMapStore: SocialFeature {
    let shared: SocialShared
    let groups: GroupStore
    let blocks: BlockStore
    // What the writer thread keeps in memory (its handlers alone use these): rate windows, and
    // the throttle of position pushes.
    private var positionRate = RateWindow<Int64>(limit: LiveMapRules.positionsPerSecond, windowMs: 1_000)
    private var followRate = RateWindow<Int64>(limit: LiveMapRules.followsPerMinute, windowMs: 60_000)
    private var throttle = PositionThrottle()
    /// When positions older than an hour were last deleted.
    private var lastPurge: Int64 = 0

    init(_ shared: SocialShared, groups: GroupStore, blocks: BlockStore) {
        self.shared = shared
        self.groups = groups
        self.blocks = blocks
    }

    /// `groups.position`: keeps the caller's position while anything keeps it and pushes it to
    /// every member of the groups they share with, throttled per member (`PositionThrottle`).
    func report(_ report: PositionReport, caller: Caller) throws -> PositionShared {
        try LiveMapRules.check(report)
        let now = nowMs
        try positionRate.admit(
            caller.id, now: now,
            refusal: ServiceError(.rateLimited, "at most \(LiveMapRules.positionsPerSecond) positions a second; send them less often"))
        let position = StoredPosition(
            lat: report.lat, lon: report.lon, accuracyM: report.accuracyM, headingDeg: report.headingDeg,
            speedMps: report.speedMps, atMs: now)
        let sharedWith = try db.query("SELECT group_id FROM group_members WHERE user_id = ? AND sharing = 1 ORDER BY group_id", caller.id)
            .decode("group_id", as: Int64.self)
        let kept = try groups.keepsPosition(caller.id)
        if kept {
            try db.run(
                """
                INSERT INTO positions (user_id, lat, lon, accuracy_m, heading_deg, speed_mps, at_ms) VALUES (?, ?, ?, ?, ?, ?, ?)
                ON CONFLICT (user_id) DO UPDATE SET lat = excluded.lat, lon = excluded.lon, accuracy_m = excluded.accuracy_m,
                    heading_deg = excluded.heading_deg, speed_mps = excluded.speed_mps, at_ms = excluded.at_ms
                """, caller.id, position.lat, position.lon, position.accuracyM, position.headingDeg, position.speedMps, position.atMs)
        }
        if !sharedWith.isEmpty {
            if throttle.mayPush(caller.id, now: now) {
                try pushPosition(position, of: caller.id, origin: caller.origin)
            } else {
                throttle.hold(caller.id, PositionThrottle.Held(position: position, origin: caller.origin))
            }
        }
        return PositionShared(at: timestamp(Date(timeIntervalSince1970: Double(now) / 1_000)), sharedWith: sharedWith, kept: kept)
    }

    /// Pushes `user`'s position once to each member, not in a block relation with them, of
    /// the groups they share with since before it was taken (themselves too, but not the
    /// connection that sent it), naming the groups each shares it through; with a coalescing
    /// key per member, so that a slow reader keeps only the latest. Whether any group took it.
    @discardableResult
    private func pushPosition(_ position: StoredPosition, of user: Int64, origin: String?) throws -> Bool {
        var recipients: [(user: Int64, groups: [Int64])] = []
        try db.forEachRow(
            """
            SELECT o.user_id, o.group_id FROM group_members m JOIN group_members o ON o.group_id = m.group_id
            WHERE m.user_id = ? AND m.sharing = 1 AND m.sharing_since_ms <= ? AND \(BlockRules.apart("o.user_id"))
            ORDER BY o.user_id, o.group_id
            """, [user, position.atMs, user, user]
        ) { row in
            let recipient: Int64 = try row.decode("user_id")
            let group: Int64 = try row.decode("group_id")
            if recipients.last?.user == recipient { recipients[recipients.count - 1].groups.append(group) } else { recipients.append((recipient, [group])) }
        }
        let id = shared.pushID("p\(user)")
        let at = timestamp(Date(timeIntervalSince1970: Double(position.atMs) / 1_000))
        for (recipient, groupIds) in recipients {
            guard let first = groupIds.first else { continue }
            let body = try Pushes.groupPosition.encode(
                PositionPush(
                    groupId: first, groupIds: groupIds, userId: user, lat: position.lat, lon: position.lon, accuracyM: position.accuracyM,
                    headingDeg: position.headingDeg, speedMps: position.speedMps, at: at))
            worker.push(Push(Pushes.groupPosition, id: id, userId: recipient, coalesce: "\(Pushes.groupPosition.name):\(user)", origin: origin, body: body))
        }
        return !recipients.isEmpty
    }

    /// The flush, every 100 ms: pushes the held positions whose second has passed, to the
    /// groups their member still shares with (since before the position); and once a minute
    /// deletes positions over an hour old.
    func flush() throws -> FlushReply {
        let now = nowMs
        var pushed = 0
        for (user, held) in throttle.due(now: now) {
            if try pushPosition(held.position, of: user, origin: held.origin) { pushed += 1 }
        }
        if now - lastPurge >= 60_000 {
            lastPurge = now
            try db.run("DELETE FROM positions WHERE at_ms < ?", now - LiveMapRules.shownMs)
        }
        return FlushReply(pushed: pushed)
    }

    /// `groups.sharing`: turns the caller's sharing with a group on or off; off, their position
    /// goes when nothing else keeps it (and a held push no longer goes to the group). Turned on,
    /// the group sees only positions from then on (`sharing_since_ms`), none reported before.
    func setSharing(_ request: SharingChange, caller: Caller) throws -> SharingState {
        try db.transaction {
            try groups.member(caller, of: request.groupId)
            try db.run(
                """
                UPDATE group_members SET sharing_since_ms = CASE WHEN ?1 = 0 THEN 0 WHEN sharing = 1 THEN sharing_since_ms ELSE ?2 END, sharing = ?1
                WHERE group_id = ?3 AND user_id = ?4
                """, request.on, nowMs, request.groupId, caller.id)
            if !request.on { try groups.dropPositionUnlessKept(caller.id) }
            return SharingState(groupId: request.groupId, sharing: request.on)
        }
    }

    /// `groups.map`: the members who share with the group and whose position is at most an hour
    /// old and no older than their sharing with it, as the viewer may see them.
    func map(_ group: Int64, caller: Caller) throws -> GroupMap {
        let viewer = caller
        try groups.member(caller, of: group)
        let now = nowMs
        let entries = try db.query(
            """
            SELECT u.id AS user_id, u.username, u.name, p.lat, p.lon, p.accuracy_m, p.heading_deg, p.speed_mps, p.at_ms
            FROM group_members m JOIN users u ON u.id = m.user_id JOIN positions p ON p.user_id = m.user_id
            WHERE m.group_id = ? AND m.sharing = 1 AND p.at_ms >= ? AND p.at_ms >= m.sharing_since_ms AND \(BlockRules.apart("m.user_id"))
            ORDER BY m.joined_at, m.rowid
            """, group, now - LiveMapRules.shownMs, viewer.id, viewer.id
        ).map { row in
            let at: Int64 = try row.decode("at_ms")
            let age = max(0, now - at)
            return MapEntry(
                user: try UserSummary(row: row), lat: try row.decode("lat"), lon: try row.decode("lon"), accuracyM: try row.decode("accuracy_m"),
                headingDeg: try row.decode("heading_deg"), speedMps: try row.decode("speed_mps"),
                at: timestamp(Date(timeIntervalSince1970: Double(at) / 1_000)), ageS: age / 1_000, stale: age > LiveMapRules.staleMs)
        }
        return GroupMap(groupId: group, positions: entries)
    }

    /// `not_found` (field `user_id`) unless `user` is a member of `group` the viewer does not block.
    private func requireVisibleMember(_ user: Int64, of group: Int64, viewer: Int64) throws {
        guard try groups.isMember(group: group, user: user), try !blocks.contains(blocker: viewer, blocked: user) else {
            throw ServiceError(.notFound, "no member \(user) in group \(group)", field: "user_id")
        }
    }

    /// `groups.follow`: the caller's map of the group follows `user_id` (one member at a time);
    /// the member hears who follows them (`group.followed`), once per new follow, unless they
    /// block the caller, who is answered and shown the follow as usual (it brings no position).
    func follow(_ request: GroupMemberRef, caller: Caller) throws -> MapFollowState {
        try db.transaction {
            try groups.member(caller, of: request.groupId)
            guard request.userId != caller.id else { throw ServiceError.invalid("user_id", "cannot follow yourself") }
            try requireVisibleMember(request.userId, of: request.groupId, viewer: caller.id)
            try followRate.admit(
                caller.id, now: nowMs,
                refusal: ServiceError(.rateLimited, "at most \(LiveMapRules.followsPerMinute) follows a minute; try again in a moment"))
            let current = try db.queryOne("SELECT followee_id FROM group_map_follows WHERE group_id = ? AND follower_id = ?", request.groupId, caller.id)?
                .decode("followee_id", as: Int64.self)
            if current != request.userId {
                try db.run(
                    """
                    INSERT INTO group_map_follows (group_id, follower_id, followee_id, created_at) VALUES (?, ?, ?, ?)
                    ON CONFLICT (group_id, follower_id) DO UPDATE SET followee_id = excluded.followee_id, created_at = excluded.created_at
                    """, request.groupId, caller.id, request.userId, timestamp())
                if try blocks.contains(blocker: request.userId, blocked: caller.id) {
                    return MapFollowState(groupId: request.groupId, userId: request.userId, following: true)
                }
                let body = FollowedPush(groupId: request.groupId, user: try shared.summary(of: caller.id))
                worker.push(
                    Push(
                        Pushes.groupFollowed, id: shared.pushID("f\(request.groupId)"), userId: request.userId,
                        body: try Pushes.groupFollowed.encode(body)))
            }
            return MapFollowState(groupId: request.groupId, userId: request.userId, following: true)
        }
    }

    /// `groups.unfollow`: the caller's map stops following `user_id` (nothing to do if it did not).
    func unfollow(_ request: GroupMemberRef, caller: Caller) throws -> MapFollowState {
        try db.transaction {
            try groups.member(caller, of: request.groupId)
            try db.run("DELETE FROM group_map_follows WHERE group_id = ? AND follower_id = ? AND followee_id = ?", request.groupId, caller.id, request.userId)
            return MapFollowState(groupId: request.groupId, userId: request.userId, following: false)
        }
    }
}
