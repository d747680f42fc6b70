import Bus
import Contracts
import Foundation
import Geo
import ServiceKit
import Storage

/// The social service's state on one worker thread: one store per feature over that thread's
/// connection. A store holds its feature's queries and the stores it asks (groups ask blocks;
/// the live map asks groups); what every store shares, the connection, the clock and who a
/// caller is, is `SocialShared`. Deleting an account and the snapshot span every feature, so
/// they are this type's (Erasure.swift and `snapshot(after:limit:)`).
public final class SocialStore: ServiceState, AdmitsCallers, SocialFeature {
    let shared: SocialShared
    let accounts: AccountStore
    let blocks: BlockStore
    let groups: GroupStore
    let people: PeopleStore
    let profiles: ProfileStore
    let photos: PhotoStore
    let reviews: ReviewStore
    let follows: FollowStore
    let liveMap: LiveMapStore
    let chat: ChatStore
    let devices: DeviceStore

    init(
        worker: ServiceWorker, options: SocialOptions, hashing: ReaderGate, photoDecoding: PhotoDecoding,
        peopleAtCalls: SharedRateWindow<Int64>
    ) {
        let shared = SocialShared(worker: worker, options: options)
        self.shared = shared
        accounts = AccountStore(shared, hashing: hashing)
        blocks = BlockStore(shared)
        groups = GroupStore(shared, blocks: blocks)
        people = PeopleStore(shared, groups: groups, calls: peopleAtCalls)
        profiles = ProfileStore(shared, blocks: blocks, people: people)
        photos = PhotoStore(shared, blocks: blocks, decoding: photoDecoding)
        reviews = ReviewStore(shared)
        follows = FollowStore(shared, blocks: blocks)
        liveMap = LiveMapStore(shared, groups: groups, blocks: blocks)
        chat = ChatStore(shared, groups: groups, blocks: blocks)
        devices = DeviceStore(shared)
    }

    public var worker: ServiceWorker { shared.worker }

    public func admit(_ caller: Caller) throws -> Caller { try shared.admit(caller) }

    /// One snapshot page: the rating of each place with reviews after the place id in `after`,
    /// then the devices (keys `d` and a row id), as `social.device.registered` events, then the
    /// discoverable users (keys `p` and a user id), as `social.profile.discoverable` events.
    func snapshot(after: String?, limit: Int) throws -> SnapshotPage {
        if let after, after.hasPrefix("d") {
            let page = try devices.snapshot(after: try SnapshotKey.id(after: String(after.dropFirst())), limit: limit)
            return SnapshotPage(events: page.events, next: SnapshotKey.next(after: page.ids, limit: limit).map { "d" + $0 } ?? "p0")
        }
        if let after, after.hasPrefix("p") {
            let page = try people.snapshot(after: try SnapshotKey.id(after: String(after.dropFirst())), limit: limit)
            return SnapshotPage(events: page.events, next: SnapshotKey.next(after: page.ids, limit: limit).map { "p" + $0 })
        }
        let page = try reviews.snapshot(after: try SnapshotKey.id(after: after), limit: limit)
        return SnapshotPage(events: page.events, next: SnapshotKey.next(after: page.ids, limit: limit) ?? "d0")
    }
}

/// One feature's store: its queries over the service's worker, and what every store shares
/// (`SocialShared`), named as the store's own.
protocol SocialFeature {
    var shared: SocialShared { get }
}

extension SocialFeature {
    var worker: ServiceWorker { shared.worker }
    var db: Database { shared.db }
    var options: SocialOptions { shared.options }
    var nowMs: Int64 { shared.nowMs }
    var currentYear: Int { shared.currentYear }
    func timestamp(_ date: Date? = nil) -> String { shared.timestamp(date) }
    func viewer(_ context: RequestContext) throws -> Int64? { try shared.viewer(context) }
    func subject(_ userId: Int64?, _ context: RequestContext) throws -> Int64 { try shared.subject(userId, context) }
    func placeName(_ id: Int64, _ context: RequestContext) throws -> String { try shared.placeName(id, context) }
    func requireUser(_ id: Int64) throws { try shared.requireUser(id) }
    func requireCaller(_ caller: Caller) throws { try shared.requireCaller(caller) }
    func readPage<Item, Wire: Encodable>(
        _ sql: String, _ arguments: [(any SQLBindable)?], limit: Int, item: (Row) throws -> Item, wire: (Item) -> Wire
    ) throws -> PageFiller<Item> {
        try shared.readPage(sql, arguments, limit: limit, item: item, wire: wire)
    }
}

/// What every store of the social service shares on one worker thread: the connection, the
/// options and the clock, who a caller is, the users' rows every feature reads, pages, push
/// ids, and the catalog's places.
final class SocialShared {
    let worker: ServiceWorker
    let options: SocialOptions
    /// Numbers the pushes of this thread, so no two have one id (clients may drop a push whose id they saw).
    private var pushes: Int64 = 0

    init(worker: ServiceWorker, options: SocialOptions) {
        self.worker = worker
        self.options = options
    }

    var db: Database { worker.db }
    /// The service's clock in Unix milliseconds.
    var nowMs: Int64 { Int64((options.clock().timeIntervalSince1970 * 1_000).rounded(.down)) }
    /// This year by the service's clock, in UTC.
    var currentYear: Int { Calendar(identifier: .gregorian).dateComponents(in: .gmt, from: options.clock()).year ?? 1970 }

    /// A time (now by default, from the service's clock) as Tourbus writes times.
    func timestamp(_ date: Date? = nil) -> String { Logger.timestamp(date ?? options.clock()) }

    /// A push id never given before by this thread: `prefix`, the time and a number (the time
    /// keeps it apart from the ids of an earlier run).
    func pushID(_ prefix: String) -> String {
        pushes += 1
        return "\(prefix)-\(nowMs)-\(pushes)"
    }

    /// The caller of a request that needs one (`Caller.of`), as `admit` checks it.
    func caller(_ context: RequestContext) throws -> Caller {
        try admit(Caller.of(context))
    }

    /// The caller with the users table's role (not the envelope's: it decides what they may
    /// do), or `unauthenticated` when the account is gone.
    func admit(_ caller: Caller) throws -> Caller {
        guard let role = try db.queryOne("SELECT role FROM users WHERE id = ?", caller.id)?.decode("role", as: String.self) else {
            throw ServiceError(.unauthenticated, "no user with id \(caller.id)")
        }
        guard let known = Role(rawValue: role) else { throw ServiceError(.internal, "user \(caller.id) has an unknown role") }
        return Caller(id: caller.id, role: known, origin: caller.origin)
    }

    /// `unauthenticated` unless the caller's account still exists: for a write whose caller
    /// was checked before a wait (a call to the catalog) that `auth.delete` may have passed.
    func requireCaller(_ caller: Caller) throws {
        guard try db.queryOne("SELECT 1 FROM users WHERE id = ?", caller.id) != nil else {
            throw ServiceError(.unauthenticated, "this account was deleted")
        }
    }

    /// The signed-in caller's id, or nil for a request without identity.
    func viewer(_ context: RequestContext) throws -> Int64? {
        try context.auth.map { _ in try caller(context).id }
    }

    /// `user_id` when given, else the caller's own id (then a signed-in caller is needed).
    func subject(_ userId: Int64?, _ context: RequestContext) throws -> Int64 {
        guard let userId else { return try caller(context).id }
        try requireUser(userId)
        return userId
    }

    /// `not_found` (field `user_id`) unless the user exists.
    func requireUser(_ id: Int64) throws {
        guard try db.queryOne("SELECT 1 FROM users WHERE id = ?", id) != nil else { throw AccountRules.noUser(id) }
    }

    /// The summary of user `id`.
    func summary(of id: Int64) throws -> UserSummary {
        guard let row = try db.queryOne("SELECT id AS user_id, username, name FROM users WHERE id = ?", id) else { throw AccountRules.noUser(id) }
        return try UserSummary(row: row)
    }

    /// The name of a place, from the catalog (`catalogPlace`).
    func placeName(_ id: Int64, _ context: RequestContext) throws -> String {
        struct Named: Decodable { var name: String }
        return try catalogPlace(id, context, as: Named.self).name
    }

    /// The point of a place, from the catalog (`catalogPlace`).
    func placePoint(_ id: Int64, _ context: RequestContext) throws -> Coordinate {
        struct Located: Decodable {
            var lat: Double
            var lon: Double
        }
        let place = try catalogPlace(id, context, as: Located.self)
        do {
            return try Coordinate(latitude: place.lat, longitude: place.lon)
        } catch {
            throw ServiceError(.internal, "the catalog answered a point out of range for place \(id)")
        }
    }

    /// A place from the catalog (`ServiceWorker.catalogPlace`), decoded as `Place`.
    private func catalogPlace<Place: Decodable>(_ id: Int64, _ context: RequestContext, as: Place.Type) throws -> Place {
        try worker.catalogPlace(id, context: context).body(Place.self)
    }
}

/// A snapshot page of one feature's rows: their events, and the row ids they came from.
typealias SnapshotPart = (events: [(type: String, body: Data)], ids: [Int64])

extension UserSummary {
    /// The user summary of a row with `user_id`, `username` and `name` (or of columns with the prefix).
    init(row: Row, prefix: String = "") throws(RowError) {
        self.init(id: try row.decode(prefix + "user_id"), username: try row.decode(prefix + "username"), name: try row.decode(prefix + "name"))
    }
}

/// The social service's schema, in order. Never edit a shipped migration: add the next one.
enum SocialSchema {
    static let migrations: [Migration] = [
        Migration(
            domain: "social", version: 1,
            sql: """
                CREATE TABLE users (
                    id            INTEGER PRIMARY KEY AUTOINCREMENT,
                    username      TEXT NOT NULL UNIQUE,
                    email         TEXT NOT NULL,
                    name          TEXT NOT NULL,
                    password_hash TEXT NOT NULL,
                    role          TEXT NOT NULL CHECK (role IN ('user', 'admin')),
                    bio           TEXT,
                    avatar_url    TEXT,
                    birth_year    INTEGER,
                    language      TEXT,
                    home_city     TEXT,
                    created_at    TEXT NOT NULL
                );
                CREATE UNIQUE INDEX users_by_email ON users(lower(email));
                CREATE TABLE sessions (
                    token_hash TEXT PRIMARY KEY,
                    user_id    INTEGER NOT NULL REFERENCES users(id) ON DELETE CASCADE,
                    created_at TEXT NOT NULL,
                    expires_at TEXT NOT NULL
                );
                CREATE INDEX sessions_by_user ON sessions(user_id, expires_at);
                CREATE INDEX sessions_by_expiry ON sessions(expires_at);
                CREATE TABLE login_failures (
                    username        TEXT PRIMARY KEY,
                    failures        INTEGER NOT NULL,
                    last_failure_ms INTEGER NOT NULL
                );
                CREATE INDEX login_failures_by_time ON login_failures(last_failure_ms);
                CREATE TABLE reviews (
                    id         INTEGER PRIMARY KEY AUTOINCREMENT,
                    place_id   INTEGER NOT NULL,
                    user_id    INTEGER NOT NULL REFERENCES users(id) ON DELETE CASCADE,
                    rating     INTEGER NOT NULL CHECK (rating BETWEEN 1 AND 5),
                    text       TEXT NOT NULL,
                    created_at TEXT NOT NULL,
                    updated_at TEXT NOT NULL,
                    UNIQUE (user_id, place_id)
                );
                CREATE INDEX reviews_by_place_date ON reviews(place_id, updated_at, id);
                CREATE INDEX reviews_by_place_rating ON reviews(place_id, rating, id);
                CREATE INDEX reviews_by_user_date ON reviews(user_id, updated_at, id);
                CREATE TABLE follows (
                    id          INTEGER PRIMARY KEY AUTOINCREMENT,
                    follower_id INTEGER NOT NULL REFERENCES users(id) ON DELETE CASCADE,
                    followee_id INTEGER NOT NULL REFERENCES users(id) ON DELETE CASCADE,
                    created_at  TEXT NOT NULL,
                    UNIQUE (follower_id, followee_id)
                );
                CREATE INDEX follows_by_follower ON follows(follower_id, id);
                CREATE INDEX follows_by_followee ON follows(followee_id, id);
                """),
        // When each reviewed place's count of reviews of the last 30 days next changes by itself
        // (its oldest recent review leaves the window), for `social.ratings.sweep`. Ratings
        // published before said no `reviews_30d`: the sweep sends every reviewed place's again.
        Migration(
            domain: "social", version: 2,
            sql: """
                CREATE TABLE rating_windows (
                    place_id   INTEGER PRIMARY KEY,
                    recount_at TEXT NOT NULL
                );
                CREATE INDEX rating_windows_due ON rating_windows(recount_at, place_id);
                INSERT INTO rating_windows (place_id, recount_at) SELECT DISTINCT place_id, '' FROM reviews;
                """),
        // The addresses each user logged in from lately: failed logins from them are counted
        // apart from everyone else's, so others cannot lock a user out where they log in.
        Migration(
            domain: "social", version: 3,
            sql: """
                CREATE TABLE sign_in_addresses (
                    user_id    INTEGER NOT NULL,
                    client     TEXT NOT NULL,
                    last_at_ms INTEGER NOT NULL,
                    PRIMARY KEY (user_id, client)
                ) WITHOUT ROWID;
                """),
        // The outbox rows that name a user, so erasing an account reads its own rows, not the
        // whole outbox, inside its transaction.
        OutboxSchema.userIndex(domain: "social", version: 4),
    ]
}
