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
    static let pageLimit = PageLimit(default: 20, max: 50)

    /// The definition `ServiceRuntime` runs.
    public static func definition(options: SocialOptions = SocialOptions()) -> ServiceDefinition<SocialStore> {
        var table = HandlerTable<SocialStore>()

        // Accounts and sessions.
        table.on(AuthRequests.register, description: "create an account: username, email, name, password") { (request: Registration, _, store) in
            try store.register(request, role: .user)
        }
        table.on(AuthRequests.login, description: "sign in with username and password; answers a session token") { (request: Credentials, _, store) in
            try store.login(request)
        }
        table.on(AuthRequests.logout, .write, description: "end the session whose token the gateway sends") { (request: TokenBody, context, store) -> Empty in
            try store.logout(request.token, caller: try store.caller(context))
            return Empty()
        }
        table.on(SocialStore.deleteAccountType, description: "delete your account and all of it (reviews, follows, profile, sessions, devices, groups, blocks, chat, photo, visits): password") {
            (request: AccountDeletion, context, store) in
            try store.deleteAccount(request, caller: try store.caller(context))
        }
        table.on(AuthRequests.validate, description: "internal (gateway): who a session token signs in") { (request: TokenBody, _, store) in
            try store.validate(request.token)
        }
        table.on("admin.create", description: "internal (tourbus admin create): create an admin account") { (request: Registration, _, store) in
            try store.register(request, role: .admin)
        }
        table.on("admin.set_role", .write, description: "make a user a user or an admin (admins only)") { (request: RoleChange, context, store) in
            try store.setRole(request, caller: try store.caller(context))
        }

        // Profiles.
        table.on("profile.get", description: "a user's profile by user_id, or your own") { (request: ProfileRequest, context, store) -> Profile in
            let viewer = try store.viewer(context)
            guard let id = request.userId ?? viewer else { throw ServiceError(.unauthenticated, "profile.get needs a user_id or a signed-in user") }
            return try store.profile(id, viewer: viewer)
        }
        table.on("profile.update", .write, description: "change your name, bio, avatar_url, birth_year, language, home_city or discoverable; null clears") {
            (request: ProfileUpdate, context, store) in
            try store.updateProfile(request, caller: try store.caller(context))
        }

        // Profile photos: begin and append write on the writer; commit decodes on a reader.
        table.on("profile.photo.upload.begin", .write, description: "start uploading your profile photo's JPEG; answers its upload_id") {
            (_: Empty, context, store) in try store.beginPhotoUpload(caller: try store.caller(context))
        }
        table.on("profile.photo.upload.append", .write, description: "add the next chunk (base64, at most 512 KiB) to a photo upload; offset guards retries") {
            (request: UploadChunk, context, store) in try store.appendPhotoUpload(request, caller: try store.caller(context))
        }
        table.on("profile.photo.upload.commit", description: "make an upload your photo (JPEG, at most 10 MB and 40 megapixels), kept as 512 and 96 px squares") {
            (request: PhotoUpload, context, store) in try store.commitPhoto(request.uploadId, caller: try store.caller(context))
        }
        table.onRaw("profile.photo", description: "a user's photo (or yours), size 512 or 96: one square JPEG (RESP: raw bytes; JSON-RPC: base64)") { context, store in
            let photo = try store.photo(try context.body(PhotoRequest.self), viewer: try store.viewer(context))
            return Response(body: try JSONCoding.encoder.encode(photo.reply), attachments: [photo.jpeg])
        }
        table.on("profile.photo.delete", .write, description: "delete your profile photo (both sizes)") { (_: Empty, context, store) in
            try store.deletePhoto(caller: try store.caller(context))
        }

        // Reviews.
        table.on("reviews.add", description: "review a place: place_id, rating 1-5, text; again replaces your review") {
            (request: ReviewInput, context, store) in
            try store.addReview(request, caller: try store.caller(context), context: context)
        }
        table.on("reviews.delete", .write, description: "delete a review by review_id (its author or an admin)") { (request: ReviewRef, context, store) -> ReviewDeleted in
            try store.deleteReview(request.reviewId, caller: try store.caller(context))
            return ReviewDeleted(id: request.reviewId)
        }
        table.on("reviews.list", description: "a place's reviews by sort (default, rating, date) and order, paged by cursor") {
            (request: ListReviews, context, store) in
            let order = try ReviewOrder(sort: request.sort, order: request.order)
            return try store.reviews(of: request.placeId, viewer: try store.viewer(context), order: order, cursor: request.cursor,
                                     limit: try limit(request.limit))
        }

        table.on(SocialStore.sweepType, .write, description: "internal (the service's own, every minute): publish the ratings whose recent reviews aged out") {
            (_: Empty, _, store) in try store.sweepRatings()
        }

        // Follows.
        table.on("social.follow", .write, description: "follow a user by user_id") { (request: FollowRequest, context, store) in
            try store.follow(request.userId, caller: try store.caller(context))
        }
        table.on("social.unfollow", .write, description: "stop following a user by user_id") { (request: FollowRequest, context, store) in
            try store.unfollow(request.userId, caller: try store.caller(context))
        }
        table.on("social.followers", description: "who follows a user (or you), newest first, paged") { (request: ListUsers, context, store) in
            try store.follows(of: try store.subject(request.userId, context), viewer: try store.viewer(context), followers: true,
                              cursor: request.cursor, limit: try limit(request.limit))
        }
        table.on("social.following", description: "whom a user (or you) follows, newest first, paged") { (request: ListUsers, context, store) in
            try store.follows(of: try store.subject(request.userId, context), viewer: try store.viewer(context), followers: false,
                              cursor: request.cursor, limit: try limit(request.limit))
        }
        table.on("social.feed", description: "the latest reviews of the people you follow, paged") { (request: FeedRequest, context, store) in
            try store.feed(of: try store.caller(context).id, cursor: request.cursor, limit: try limit(request.limit))
        }

        // Blocks.
        table.on("social.block", .write, description: "block a user by user_id: each is hidden from the other; follows between you end") {
            (request: BlockRequest, context, store) in try store.block(request.userId, caller: try store.caller(context))
        }
        table.on("social.unblock", .write, description: "stop blocking a user by user_id") { (request: BlockRequest, context, store) in
            try store.unblock(request.userId, caller: try store.caller(context))
        }
        table.on("social.blocks", description: "the users you block, newest first, paged") { (request: ListBlocks, context, store) in
            try store.blockList(of: try store.caller(context).id, cursor: request.cursor, limit: try limit(request.limit))
        }

        // Groups, seen by their members only.
        table.on("groups.create", .write, description: "create a group you own: name; at most 20 groups each") { (request: GroupCreation, context, store) in
            try store.createGroup(request, caller: try store.caller(context))
        }
        table.on("groups.get", description: "a group of yours by group_id: members, invitations, who follows you on its map") {
            (request: GroupRef, context, store) in
            try store.groupView(request.groupId, viewer: try store.member(context, of: request.groupId).caller.id)
        }
        table.on("groups.list", description: "your groups and the invitations waiting for you") { (_: Empty, context, store) in
            try store.groupList(of: try store.caller(context).id)
        }
        table.on("groups.invite", .write, description: "invite a user to a group of yours: group_id, username; at most 50 members and invitations") {
            (request: GroupInvitation, context, store) in try store.invite(request, context: context)
        }
        table.on("groups.accept", .write, description: "accept an invitation to a group by group_id") { (request: GroupRef, context, store) in
            try store.accept(request.groupId, context: context)
        }
        table.on("groups.decline", .write, description: "decline an invitation to a group by group_id") { (request: GroupRef, context, store) in
            try store.decline(request.groupId, context: context)
        }
        table.on("groups.leave", .write, description: "leave a group by group_id (an owner passes it to the longest member)") {
            (request: GroupRef, context, store) in try store.leave(request.groupId, context: context)
        }
        table.on("groups.remove", .write, description: "remove a member or cancel an invitation (owner only): group_id, user_id") {
            (request: GroupMemberRef, context, store) in try store.remove(request, context: context)
        }

        // The live map of a group: positions shared by opt-in, throttled pushes, following a member.
        table.on("groups.position", .write, description: "share where you are (lat, lon, accuracy_m?, heading_deg?, speed_mps?) with the groups you share with") {
            (request: PositionReport, context, store) in try store.reportPosition(request, context: context)
        }
        table.on("groups.sharing", .write, description: "share your position with a group, or stop: group_id, on (off by default)") {
            (request: SharingChange, context, store) in try store.setSharing(request, context: context)
        }
        table.on("groups.map", description: "a group's map: the last position of each member sharing with it, its age, stale after 10 min") {
            (request: GroupRef, context, store) in try store.groupMap(request.groupId, context: context)
        }
        table.on("groups.follow", .write, description: "make your map of a group follow a member: group_id, user_id; they are told") {
            (request: GroupMemberRef, context, store) in try store.followOnMap(request, context: context)
        }
        table.on("groups.unfollow", .write, description: "stop following a member on a group's map: group_id, user_id") {
            (request: GroupMemberRef, context, store) in try store.unfollowOnMap(request, context: context)
        }
        table.on(LiveMapRules.flushType, .write, description: "internal (the service's own, every 100 ms): push the held positions whose second has passed") {
            (_: Empty, _, store) in try store.flushPositions()
        }

        // Devices, whose public keys the catalog seals downloads to.
        table.on("devices.register", .write, description: "register a device of yours: device_id and the X25519 public_key it made (base64); at most 5") {
            (request: DeviceRegistration, context, store) in try store.registerDevice(request, caller: try store.caller(context))
        }
        table.on("devices.list", description: "your registered devices, oldest first") { (_: Empty, context, store) in
            try store.devices(of: try store.caller(context).id)
        }
        table.on("devices.revoke", .write, description: "revoke a device of yours by device_id: it gets no new download") {
            (request: DeviceRef, context, store) in try store.revokeDevice(request, caller: try store.caller(context))
        }

        // Chat: direct and group conversations, each ordered by its own sequence number.
        table.on("chat.send", .write, description: "send a message: to (user:N or group:N), text (1-2,000 characters), client_msg_id (a retry answers the first)") {
            (request: ChatSend, context, store) in try store.sendChat(request, context: context)
        }
        table.on("chat.history", description: "a conversation's messages, newest first, paged by before (a seq)") {
            (request: ChatHistoryRequest, context, store) in try store.chatHistory(request, context: context)
        }
        table.on("chat.conversations", description: "your conversations, latest message first, each with its last message and unread count; paged") {
            (request: ChatConversationsRequest, context, store) in try store.chatConversations(request, context: context)
        }
        table.on("chat.read", .write, description: "mark a conversation read up_to a seq (never backwards); answers what is left unread") {
            (request: ChatReadMark, context, store) in try store.readChat(request, context: context)
        }

        // People at a place: a read handler, as it may first ask the catalog where the place is.
        table.on("social.people_at", description: "discoverable people at a place now or who visited it: place_id, or lat, lon and radius_m (at most 2000)") {
            (request: PeopleAtRequest, context, store) in try store.peopleAt(request, caller: try store.caller(context), context: context)
        }

        // Sharing.
        let linkBase = options.placeLinkBase
        table.on("share.place", description: "text and URL that share a place on twitter, facebook or by email") { (request: ShareRequest, context, store) -> ShareLink in
            let network = try ShareNetwork(name: request.network)
            let name = try store.placeName(request.placeId, context)
            let text = "\(name) on Tourbus"
            return ShareLink(text: text, url: network.url(text: text, link: linkBase + String(request.placeId)))
        }

        let decoy = DecoyHash(cost: options.passwordCost)
        let hashing = ReaderGate(), photoDecoding = PhotoDecoding()
        let peopleAtCalls = SharedRateWindow(limit: PeopleRules.callsPerMinute, windowMs: 60_000)
        var definition = ServiceDefinition(
            name: "social", migrations: SocialSchema.migrations + DeviceRules.migrations + GroupRules.migrations + ChatRules.migrations
                + PeopleRules.migrations + PhotoRules.migrations,
            handlers: table, publishes: true,
            snapshot: { store, after, limit in try store.snapshot(after: after, limit: limit) },
            subscriptions: ["catalog": SocialStore.catalogApplier, "favorites": PeopleRules.favoritesApplier],
            makeState: { worker in
                try Sodium.ready()
                _ = try decoy.value()  // made at start, so no login pays for it
                return SocialStore(worker: worker, options: options, decoy: decoy, hashing: hashing, photoDecoding: photoDecoding,
                                   peopleAtCalls: peopleAtCalls)
            })
        definition.periodic = [PeriodicRequest(type: SocialStore.sweepType, intervalMilliseconds: options.ratingsSweepIntervalMs),
                               PeriodicRequest(type: LiveMapRules.flushType, intervalMilliseconds: options.positionFlushIntervalMs)]
        return definition
    }

    /// A page size: `limit` (default 20), 1 to 50.
    static func limit(_ value: Int?) throws(ServiceError) -> Int { try pageLimit.validated(value) }
}
