import Bus
import Contracts
import Foundation
import Sealing
import ServiceCore
import ServiceKit
import Uploads

/// Settings of the social service that are not the runtime's.
public struct SocialOptions: Sendable {
    /// The argon2id cost of new password hashes.
    public var passwordCost = PasswordCost.interactive
    /// How long a session token from `auth.login` lives, in seconds (30 days).
    public var sessionLifetime: TimeInterval = 30 * 86_400
    /// Where a shared place links to: this followed by the place id.
    public var placeLinkBase = "https://tourbus.example/places/"
    /// The most bytes the items of one page of a list take, encoded (reviews, followers,
    /// following, the feed): a page stops before the item that would go past it. 256 KiB.
    public var pageBudgetBytes = 256 * 1_024
    /// How often ratings whose recent reviews left the 30-day window are published again
    /// (`social.ratings.sweep`), in milliseconds: a minute.
    public var ratingsSweepIntervalMs = 60_000
    /// How often positions held by the throttle of `group.position` pushes are looked at
    /// (`groups.position.flush`), in milliseconds: a held one goes at most this late.
    public var positionFlushIntervalMs = 100
    /// The time, for sessions, login throttling, review times and ages; tests move it by hand.
    public var clock: @Sendable () -> Date = { Date() }

    public init() {}

    /// The defaults, with what the environment sets: `TOURBUS_PASSWORD_COST` = `interactive`
    /// (the default), `moderate` or `minimum`.
    public init(environment: [String: String]) throws(ConfigError) {
        self.init()
        if let cost = environment["TOURBUS_PASSWORD_COST"] {
            guard let known = PasswordCost(rawValue: cost) else {
                throw ConfigError("TOURBUS_PASSWORD_COST must be interactive, moderate or minimum, got '\(cost)'")
            }
            passwordCost = known
        }
    }
}

/// The social service: accounts and sessions, profiles, reviews (published as
/// `social.rating.updated`), follows, blocks, groups and their live map, chat, sharing, and
/// people at a place (`social.people_at`, from a copy of favorites' visits of discoverable users).
///
/// Handlers that first wait on something slow — a password hash, the catalog — are read
/// handlers: they run on a reader thread and then write in their own short transaction, so
/// the one writer thread is never held up by them. The rest of the writes run on the writer.
public enum SocialService {
    /// Page sizes of every list.

    /// The definition `ServiceRuntime` runs.
    public static func definition(options: SocialOptions = SocialOptions()) -> ServiceDefinition<SocialStore> {
        var table = HandlerTable<SocialStore>()

        // Accounts and sessions.
        table.on(Methods.Auth.register, runsOn: .read) { (request: Registration, _, store) in
            try store.accounts.register(request, role: .user)
        }
        table.on(Methods.Auth.login, runsOn: .read) { (request: Credentials, context, store) in
            try store.accounts.login(request, client: context.client)
        }
        table.on(Methods.Auth.logout) { (request: TokenBody, caller, _, store) -> Empty in
            try store.accounts.logout(request.token, caller: caller)
            return Empty()
        }
        table.on(Methods.Auth.delete, runsOn: .read) { (request: AccountDeletion, caller, context, store) in
            try store.deleteAccount(request, caller: caller, client: context.client)
        }
        table.on(Methods.Auth.validate) { (request: TokenBody, _, store) in
            try store.accounts.validate(request.token)
        }
        table.on(Methods.Admin.create, runsOn: .read) { (request: Registration, _, store) in
            try store.accounts.register(request, role: .admin)
        }
        // Bound with its caller, so only an admin (by the users table's role) gets here.
        table.on(Methods.Admin.setRole) { (request: RoleChange, _: Caller, _, store) in
            try store.accounts.setRole(request)
        }

        // Profiles.
        table.on(Methods.Profile.get) { (request: ProfileRequest, context, store) -> Profile in
            let viewer = try store.viewer(context)
            guard let id = request.userId ?? viewer else { throw ServiceError(.unauthenticated, "profile.get needs a user_id or a signed-in user") }
            return try store.profiles.profile(id, viewer: viewer)
        }
        table.on(Methods.Profile.update) { (request: ProfileUpdate, caller, _, store) in
            try store.profiles.updateProfile(request, caller: caller)
        }

        // Profile photos: begin and append write on the writer; commit decodes on a reader.
        table.on(Methods.Profile.photoUploadBegin) { (_: Empty, caller, context, store) in
            try store.photos.beginUpload(caller: caller, client: context.client)
        }
        table.on(Methods.Profile.photoUploadAppend) { (request: UploadChunk, caller, _, store) in try store.photos.appendUpload(request, caller: caller) }
        table.on(Methods.Profile.photoUploadCommit, runsOn: .read) { (request: PhotoUpload, caller, _, store) in try store.photos.commit(request.uploadId, caller: caller) }
        table.onRaw(Methods.Profile.photo) { context, store in
            let photo = try store.photos.photo(try context.checkedParams(PhotoRequest.self), viewer: try store.viewer(context))
            return Response(body: try JSONCoding.encoder.encode(photo.reply), attachments: [photo.jpeg])
        }
        table.on(Methods.Profile.photoDelete) { (_: Empty, caller, _, store) in
            try store.photos.delete(caller: caller)
        }

        // Reviews.
        table.on(Methods.Reviews.add, runsOn: .read) { (request: ReviewInput, caller, context, store) in
            try store.reviews.add(request, caller: caller, context: context)
        }
        table.on(Methods.Reviews.delete) { (request: ReviewRef, caller, _, store) -> ReviewDeleted in
            try store.reviews.delete(request.reviewId, caller: caller)
            return ReviewDeleted(id: request.reviewId)
        }
        table.on(Methods.Reviews.list) {
            (request: ListReviews, context, store) in
            let order = try ReviewOrder(sort: request.sort, order: request.order)
            return try store.reviews.reviews(
                of: request.placeId, viewer: try store.viewer(context), order: order, cursor: request.cursor,
                limit: try limit(request.limit))
        }

        table.on(Methods.Social.ratingsSweep) {
            (_: Empty, _, store) in try store.reviews.sweepRatings()
        }

        // Follows.
        table.on(Methods.Social.follow) { (request: FollowRequest, caller, _, store) in
            try store.follows.follow(request.userId, caller: caller)
        }
        table.on(Methods.Social.unfollow) { (request: FollowRequest, caller, _, store) in
            try store.follows.unfollow(request.userId, caller: caller)
        }
        table.on(Methods.Social.followers) { (request: ListUsers, context, store) in
            try store.follows.follows(
                of: try store.subject(request.userId, context), viewer: try store.viewer(context), followers: true,
                cursor: request.cursor, limit: try limit(request.limit))
        }
        table.on(Methods.Social.following) { (request: ListUsers, context, store) in
            try store.follows.follows(
                of: try store.subject(request.userId, context), viewer: try store.viewer(context), followers: false,
                cursor: request.cursor, limit: try limit(request.limit))
        }
        table.on(Methods.Social.feed) { (request: FeedRequest, caller, _, store) in
            try store.reviews.feed(of: caller.id, cursor: request.cursor, limit: try limit(request.limit))
        }

        // Blocks.
        table.on(Methods.Social.block) { (request: BlockRequest, caller, _, store) in try store.blocks.block(request.userId, caller: caller) }
        table.on(Methods.Social.unblock) { (request: BlockRequest, caller, _, store) in
            try store.blocks.unblock(request.userId, caller: caller)
        }
        table.on(Methods.Social.blocks) { (request: ListBlocks, caller, _, store) in
            try store.blocks.blockList(of: caller.id, cursor: request.cursor, limit: try limit(request.limit))
        }

        // Groups, seen by their members only.
        table.on(Methods.Groups.create) { (request: GroupCreation, caller, _, store) in
            try store.groups.create(request, caller: caller)
        }
        table.on(Methods.Groups.get) { (request: GroupRef, caller, _, store) in
            try store.groups.member(caller, of: request.groupId)
            return try store.groups.view(request.groupId, viewer: caller.id)
        }
        table.on(Methods.Groups.list) { (_: Empty, caller, _, store) in
            try store.groups.list(of: caller.id)
        }
        table.on(Methods.Groups.invite) {
            (request: GroupInvitation, caller, _, store) in try store.groups.invite(request, caller: caller)
        }
        table.on(Methods.Groups.accept) { (request: GroupRef, caller, _, store) in
            try store.groups.accept(request.groupId, caller: caller)
        }
        table.on(Methods.Groups.decline) { (request: GroupRef, caller, _, store) in
            try store.groups.decline(request.groupId, caller: caller)
        }
        table.on(Methods.Groups.leave) {
            (request: GroupRef, caller, _, store) in try store.groups.leave(request.groupId, caller: caller)
        }
        table.on(Methods.Groups.remove) {
            (request: GroupMemberRef, caller, _, store) in try store.groups.remove(request, caller: caller)
        }

        // The live map of a group: positions shared by opt-in, throttled pushes, following a member.
        table.on(Methods.Groups.position) {
            (request: PositionReport, caller, _, store) in try store.liveMap.report(request, caller: caller)
        }
        table.on(Methods.Groups.sharing) {
            (request: SharingChange, caller, _, store) in try store.liveMap.setSharing(request, caller: caller)
        }
        table.on(Methods.Groups.map) {
            (request: GroupRef, caller, _, store) in try store.liveMap.map(request.groupId, caller: caller)
        }
        table.on(Methods.Groups.follow) {
            (request: GroupMemberRef, caller, _, store) in try store.liveMap.follow(request, caller: caller)
        }
        table.on(Methods.Groups.unfollow) {
            (request: GroupMemberRef, caller, _, store) in try store.liveMap.unfollow(request, caller: caller)
        }
        table.on(Methods.Groups.positionFlush) {
            (_: Empty, _, store) in try store.liveMap.flush()
        }

        // Devices, whose public keys the catalog seals downloads to.
        table.on(Methods.Devices.register) { (request: DeviceRegistration, caller, _, store) in try store.devices.register(request, caller: caller) }
        table.on(Methods.Devices.list) { (_: Empty, caller, _, store) in
            try store.devices.list(of: caller.id)
        }
        table.on(Methods.Devices.revoke) { (request: DeviceRef, caller, _, store) in try store.devices.revoke(request, caller: caller) }

        // Chat: direct and group conversations, each ordered by its own sequence number.
        table.on(Methods.Chat.send) {
            (request: ChatSend, caller, _, store) in try store.chat.send(request, caller: caller)
        }
        table.on(Methods.Chat.history) {
            (request: ChatHistoryRequest, caller, _, store) in try store.chat.history(request, caller: caller)
        }
        table.on(Methods.Chat.conversations) {
            (request: ChatConversationsRequest, caller, _, store) in try store.chat.conversations(request, caller: caller)
        }
        table.on(Methods.Chat.read) {
            (request: ChatReadMark, caller, _, store) in try store.chat.read(request, caller: caller)
        }

        // People at a place: a read handler, as it may first ask the catalog where the place is.
        table.on(Methods.Social.peopleAt) { (request: PeopleAtRequest, caller, context, store) in try store.people.peopleAt(request, caller: caller, context: context) }

        // Sharing.
        let linkBase = options.placeLinkBase
        table.on(Methods.Share.place) { (request: ShareRequest, context, store) -> ShareLink in
            let network = try ShareNetwork(name: request.network)
            let name = try store.placeName(request.placeId, context)
            let text = "\(name) on Tourbus"
            return ShareLink(text: text, url: network.url(text: text, link: linkBase + String(request.placeId)))
        }

        // One hash at a time: at most one core, whatever the readers.
        let hashing = ReaderGate(most: 1)
        let photoDecoding = PhotoDecoding()
        let peopleAtCalls = SharedRateWindow<Int64>(limit: PeopleRules.callsPerMinute, windowMs: 60_000)
        var definition = ServiceDefinition(
            name: "social",
            migrations: SocialSchema.migrations + DeviceRules.migrations + GroupRules.migrations + ChatRules.migrations
                + PeopleRules.migrations + PhotoRules.migrations,
            handlers: table, publishes: true,
            snapshot: { store, after, limit in try store.snapshot(after: after, limit: limit) },
            subscriptions: ["catalog": ReviewStore.catalogApplier, "favorites": PeopleRules.favoritesApplier],
            makeState: { worker in
                try Sodium.ready()
                return SocialStore(
                    worker: worker, options: options, hashing: hashing, photoDecoding: photoDecoding,
                    peopleAtCalls: peopleAtCalls)
            })
        definition.periodic = [
            PeriodicRequest(Methods.Social.ratingsSweep, intervalMilliseconds: options.ratingsSweepIntervalMs),
            PeriodicRequest(Methods.Groups.positionFlush, intervalMilliseconds: options.positionFlushIntervalMs),
        ]
        return definition
    }

    /// A page size: `limit` (default 20), 1 to 50.
    static func limit(_ value: Int?) throws(ServiceError) -> Int { try PageLimit.social.validated(value) }
}
