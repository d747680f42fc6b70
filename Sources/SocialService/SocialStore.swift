import Bus
import Contracts
import Foundation
import Geo
import ServiceKit
import Storage

/// The social service's tables and the queries over them, on one worker thread's connection.
/// Accounts, profiles, reviews and follows each add their part in their own file.
public final class SocialStore: ServiceState, AdmitsCallers {
    public let worker: ServiceWorker
    let options: SocialOptions
    let decoy: DecoyHash
    /// Password hashing (slow, and 64 MiB each at the production cost) on all reader threads
    /// but one, so checking tokens, which every signed-in request through the gateway waits
    /// on, always finds a thread free.
    let hashing: ReaderGate
    /// Photo decoding's own gate and commit budget, so photos never take the hashes' slots.
    let photoDecoding: PhotoDecoding
    /// Rate windows and the throttle of live positions (used on the writer thread only).
    let live = LiveState()
    /// The `social.people_at` calls of each user, counted across all threads.
    let peopleAtCalls: SharedRateWindow
    /// A hash that finds every slot taken.
    static let busyHashing = ServiceError(.unavailable, "busy checking other passwords; try again in a moment")
    var db: Database { worker.db }
    /// The service's clock in Unix milliseconds.
    var nowMs: Int64 { Int64((options.clock().timeIntervalSince1970 * 1_000).rounded(.down)) }

    init(
        worker: ServiceWorker, options: SocialOptions, decoy: DecoyHash, hashing: ReaderGate, photoDecoding: PhotoDecoding,
        peopleAtCalls: SharedRateWindow
    ) {
        self.worker = worker
        self.peopleAtCalls = peopleAtCalls
        self.options = options
        self.decoy = decoy
        self.hashing = hashing
        self.photoDecoding = photoDecoding
    }

    /// A time (now by default, from the service's clock) as Tourbus writes times.
    func timestamp(_ date: Date? = nil) -> String { Logger.timestamp(date ?? options.clock()) }

    /// The caller of a request that needs one (`Caller.of`), as `admit` checks it.
    func caller(_ context: RequestContext) throws -> Caller {
        try admit(Caller.of(context))
    }

    /// The caller with the users table's role (not the envelope's: it decides what they may
    /// do), or `unauthenticated` when the account is gone.
    public func admit(_ caller: Caller) throws -> Caller {
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
        guard try db.queryOne("SELECT 1 FROM users WHERE id = ?", id) != nil else { throw Self.noUser(id) }
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
    ]
}
