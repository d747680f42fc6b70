import Bus

// The social service's methods: accounts, profiles and photos, reviews, follows, blocks, groups and their map, chat, devices, people at a place.
// Declared once here; the service binds its handlers to them (see Method.swift).

extension Methods.Auth {
    public static let register = Method<Registration, PublicUser>(
        "auth.register", .social, .anyone, .write,
        "create an account: username, email, name, password",
        errors: [
            .alreadyExists("username", "the username is taken"),
            .alreadyExists("email", "the email already has an account"),
            .unavailable(nil, "every password check is busy"),
        ])
    public static let login = Method<Credentials, LoginReply>(
        "auth.login", .social, .anyone, .write,
        "sign in with username and password; answers a session token",
        errors: [
            .rateLimited("username", "too many failed logins: wait a little, or 15 min after 10"),
            .unavailable(nil, "every password check is busy"),
            .unauthenticated(nil, "wrong username or password"),
        ])
    public static let logout = Method<TokenBody, Empty>(
        "auth.logout", .social, .user, .write,
        "end the session whose token the gateway sends")
    public static let delete = Method<AccountDeletion, AccountDeleted>(
        "auth.delete", .social, .user, .write,
        "delete your account and all of it (reviews, follows, profile, sessions, devices, groups, blocks, chat, photo, visits): password",
        errors: [
            .unavailable(nil, "every password check is busy"),
            .rateLimited("password", "too many wrong passwords for this account"),
            .permissionDenied("password", "wrong password"),
            .unauthenticated(nil, "the account was deleted meanwhile"),
        ])
    public static let validate = Method<TokenBody, TokenOwner>(
        "auth.validate", .social, .internal, .read,
        "gateway: who a session token signs in")
}

extension Methods.Admin {
    public static let create = Method<Registration, PublicUser>(
        "admin.create", .social, .internal, .write,
        "tourbus admin create: create an admin account")
    public static let setRole = Method<RoleChange, PublicUser>(
        "admin.set_role", .social, .admin, .write,
        "make a user a user or an admin (admins only)",
        errors: [.notFound("user_id", "no user has this id")])
}

extension Methods.Profile {
    public static let get = Method<ProfileRequest, Profile>(
        "profile.get", .social, .anyone, .read,
        "a user's profile by user_id, or your own",
        errors: [
            .unauthenticated(nil, "no user_id and not signed in"),
            .notFound("user_id", "no user has this id, or you block them"),
        ])
    public static let update = Method<ProfileUpdate, Profile>(
        "profile.update", .social, .user, .write,
        "change your name, bio, avatar_url, birth_year, language, home_city or discoverable; null clears",
        errors: [.rateLimited("discoverable", "discoverable changed 10 times in the last hour")], retrySafe: true)
    public static let photoUploadBegin = Method<Empty, PhotoUpload>(
        "profile.photo.upload.begin", .social, .user, .write,
        "start uploading your profile photo's JPEG; answers its upload_id",
        errors: [.rateLimited(nil, "3 uploads of yours, or 64 in all, are open (none idle to take back), or 20 were begun from your address in 10 minutes")])
    public static let photoUploadAppend = Method<UploadChunk, PhotoUpload>(
        "profile.photo.upload.append", .social, .user, .write,
        "add the next chunk (base64, at most 512 KiB) to a photo upload; offset guards retries",
        errors: [
            .notFound("upload_id", "you have no upload with this id, or it expired"),
            .conflict("upload_id", "the upload is committed already"),
            .conflict("offset", "the upload holds another number of bytes than offset"),
            .tooLarge("chunk", "the upload would pass 10 MiB"),
        ])
    public static let photoUploadCommit = Method<PhotoUpload, PhotoUpload>(
        "profile.photo.upload.commit", .social, .user, .write,
        "make an upload your photo (JPEG, at most 10 MB and 40 megapixels), kept as 512 and 96 px squares",
        errors: [
            .unavailable(nil, "another photo is being decoded"),
            .notFound("upload_id", "you have no upload with this id, or it expired"),
            .conflict("upload_id", "the upload is committed already"),
            .rateLimited(nil, "10 photo commits in the last hour"),
            .tooLarge("upload_id", "the JPEG is over 10 MiB or has too many pixels"),
            .unauthenticated(nil, "the account was deleted during the decode"),
        ])
    public static let photo = Method<PhotoRequest, PhotoReply>(
        "profile.photo", .social, .anyone, .read,
        "a user's photo (or yours), size 512 or 96: one square JPEG (RESP: raw bytes; JSON-RPC: base64)",
        errors: [
            .unauthenticated(nil, "no user_id and not signed in"),
            .notFound("user_id", "no user has this id, you block them, or they have no photo"),
        ])
    public static let photoDelete = Method<Empty, PhotoDeleted>(
        "profile.photo.delete", .social, .user, .write,
        "delete your profile photo (both sizes)")
}

extension Methods.Reviews {
    public static let add = Method<ReviewInput, Review>(
        "reviews.add", .social, .user, .write,
        "review a place: place_id, rating 1-5, text; again replaces your review",
        errors: [
            .notFound("place_id", "no place has this id"),
            .unavailable(nil, "the catalog does not answer"),
            .unauthenticated(nil, "the account was deleted moments ago"),
        ])
    public static let delete = Method<ReviewRef, ReviewDeleted>(
        "reviews.delete", .social, .user, .write,
        "delete a review by review_id (its author or an admin)",
        errors: [
            .notFound("review_id", "no review has this id"),
            .permissionDenied(nil, "the caller is neither its author nor an admin"),
        ])
    public static let list = Method<ListReviews, ReviewPage>(
        "reviews.list", .social, .anyone, .read,
        "a place's reviews by sort (default, rating, date) and order, paged by cursor")
}

extension Methods.Social {
    public static let ratingsSweep = Method<Empty, RatingSweep>(
        "social.ratings.sweep", .social, .internal, .write,
        "the service's own, every minute: publish the ratings whose recent reviews aged out")
    public static let follow = Method<FollowRequest, FollowState>(
        "social.follow", .social, .user, .write,
        "follow a user by user_id",
        errors: [
            .notFound("user_id", "no user has this id"),
            .conflict("user_id", "you block this user: unblock first"),
        ], retrySafe: true)
    public static let unfollow = Method<FollowRequest, FollowState>(
        "social.unfollow", .social, .user, .write,
        "stop following a user by user_id",
        errors: [.notFound("user_id", "no user has this id")], retrySafe: true)
    public static let followers = Method<ListUsers, UserPage>(
        "social.followers", .social, .anyone, .read,
        "who follows a user (or you), newest first, paged",
        errors: [
            .unauthenticated(nil, "no user_id and not signed in"),
            .notFound("user_id", "no user has this id, or you block them"),
        ])
    public static let following = Method<ListUsers, UserPage>(
        "social.following", .social, .anyone, .read,
        "whom a user (or you) follows, newest first, paged",
        errors: [
            .unauthenticated(nil, "no user_id and not signed in"),
            .notFound("user_id", "no user has this id, or you block them"),
        ])
    public static let feed = Method<FeedRequest, ReviewPage>(
        "social.feed", .social, .user, .read,
        "the latest reviews of the people you follow, paged")
    public static let block = Method<BlockRequest, BlockState>(
        "social.block", .social, .user, .write,
        "block a user by user_id: each is hidden from the other; follows between you end",
        errors: [
            .notFound("user_id", "no user has this id"),
            .conflict("user_id", "you block 1000 users already"),
        ], retrySafe: true)
    public static let unblock = Method<BlockRequest, BlockState>(
        "social.unblock", .social, .user, .write,
        "stop blocking a user by user_id",
        errors: [.notFound("user_id", "no user has this id")], retrySafe: true)
    public static let blocks = Method<ListBlocks, UserPage>(
        "social.blocks", .social, .user, .read,
        "the users you block, newest first, paged")
    public static let peopleAt = Method<PeopleAtRequest, PeopleHere>(
        "social.people_at", .social, .user, .read,
        "discoverable people at a place now or who visited it: place_id, or near and radius_m (200 to 2000)",
        errors: [
            .rateLimited(nil, "more than 30 calls in a minute"),
            .notFound("place_id", "no place has this id"),
            .unavailable(nil, "the catalog does not answer"),
        ])
}

extension Methods.Groups {
    public static let create = Method<GroupCreation, GroupView>(
        "groups.create", .social, .user, .write,
        "create a group you own: name; at most 20 groups each",
        errors: [.conflict("name", "you are in 20 groups already")])
    public static let get = Method<GroupRef, GroupView>(
        "groups.get", .social, .user, .read,
        "a group of yours by group_id: members, invitations, who follows you on its map",
        errors: [.notFound("group_id", "no group of yours has this id")])
    public static let list = Method<Empty, GroupList>(
        "groups.list", .social, .user, .read,
        "your groups and the invitations waiting for you")
    public static let invite = Method<GroupInvitation, InvitationSent>(
        "groups.invite", .social, .user, .write,
        "invite a user to a group of yours: group_id, username; at most 50 members and invitations",
        errors: [
            .notFound("group_id", "no group of yours has this id"),
            .rateLimited(nil, "60 invitations in the last minute"),
            .notFound("username", "no user has this name"),
            .conflict("username", "you block the user, or 100 invitations wait for them"),
            .alreadyExists("username", "the user is a member already"),
            .conflict("group_id", "the group has 50 members and invitations"),
        ])
    public static let accept = Method<GroupRef, GroupView>(
        "groups.accept", .social, .user, .write,
        "accept an invitation to a group by group_id",
        errors: [
            .notFound("group_id", "no invitation to this group waits for you"),
            .conflict("group_id", "you are in 20 groups already"),
        ])
    public static let decline = Method<GroupRef, GroupDeclined>(
        "groups.decline", .social, .user, .write,
        "decline an invitation to a group by group_id",
        errors: [.notFound("group_id", "no invitation to this group waits for you")])
    public static let leave = Method<GroupRef, GroupLeft>(
        "groups.leave", .social, .user, .write,
        "leave a group by group_id (an owner passes it to the longest member)",
        errors: [.notFound("group_id", "no group of yours has this id")])
    public static let remove = Method<GroupMemberRef, MemberRemoved>(
        "groups.remove", .social, .user, .write,
        "remove a member or cancel an invitation (owner only): group_id, user_id",
        errors: [
            .notFound("group_id", "no group of yours has this id"),
            .permissionDenied(nil, "the caller does not own the group"),
            .notFound("user_id", "the user is neither a member nor invited"),
        ])
    public static let position = Method<PositionReport, PositionShared>(
        "groups.position", .social, .user, .write,
        "share where you are (lat, lon, accuracy_m?, heading_deg?, speed_mps?) with the groups you share with",
        errors: [.rateLimited(nil, "more than 10 positions a second")])
    public static let sharing = Method<SharingChange, SharingState>(
        "groups.sharing", .social, .user, .write,
        "share your position with a group, or stop: group_id, on (off by default)",
        errors: [.notFound("group_id", "no group of yours has this id")], retrySafe: true)
    public static let map = Method<GroupRef, GroupMap>(
        "groups.map", .social, .user, .read,
        "a group's map: the last position of each member sharing with it, its age, stale after 10 min",
        errors: [.notFound("group_id", "no group of yours has this id")])
    public static let follow = Method<GroupMemberRef, MapFollowState>(
        "groups.follow", .social, .user, .write,
        "make your map of a group follow a member: group_id, user_id; they are told",
        errors: [
            .notFound("group_id", "no group of yours has this id"),
            .notFound("user_id", "not a member of the group, or you block them"),
            .rateLimited(nil, "more than 30 follows in a minute"),
        ])
    public static let unfollow = Method<GroupMemberRef, MapFollowState>(
        "groups.unfollow", .social, .user, .write,
        "stop following a member on a group's map: group_id, user_id",
        errors: [.notFound("group_id", "no group of yours has this id")])
    public static let positionFlush = Method<Empty, FlushReply>(
        "groups.position.flush", .social, .internal, .write,
        "the service's own, every 100 ms: push the held positions whose second has passed")
}

extension Methods.Devices {
    public static let register = Method<DeviceRegistration, DeviceInfo>(
        "devices.register", .social, .user, .write,
        "register a device of yours: device_id and the X25519 public_key it made (base64); at most 5",
        errors: [
            .conflict("public_key", "the device is registered with another key"),
            .conflict("device_id", "you have 5 devices already"),
        ], retrySafe: true)
    public static let list = Method<Empty, DeviceList>(
        "devices.list", .social, .user, .read,
        "your registered devices, oldest first")
    public static let revoke = Method<DeviceRef, DeviceRevoked>(
        "devices.revoke", .social, .user, .write,
        "revoke a device of yours by device_id: it gets no new download",
        errors: [.notFound("device_id", "you have no device with this id")])
}

extension Methods.Chat {
    public static let send = Method<ChatSend, ChatSent>(
        "chat.send", .social, .user, .write,
        "send a message: to (user:N or group:N), text (1-2,000 characters), client_msg_id (a retry answers the first)",
        errors: [
            .conflict("client_msg_id", "the id was used for another message"),
            .notFound("to", "no user has this id, or no group of yours"),
            .conflict("to", "you block the recipient"),
            .rateLimited(nil, "too many messages from you, or in the group, just now"),
            .rateLimited("to", "30 new conversations in the last hour"),
        ], retrySafe: true)
    public static let history = Method<ChatHistoryRequest, ChatHistory>(
        "chat.history", .social, .user, .read,
        "a conversation's messages, newest first, paged by before (a seq)",
        errors: [.notFound("conversation", "no group of yours, or no user with this id")])
    public static let conversations = Method<ChatConversationsRequest, ChatConversationList>(
        "chat.conversations", .social, .user, .read,
        "your conversations, latest message first, each with its last message and unread count; paged")
    public static let read = Method<ChatReadMark, ChatReadState>(
        "chat.read", .social, .user, .write,
        "mark a conversation read up_to a seq (never backwards); answers what is left unread",
        errors: [.notFound("conversation", "no group of yours, or no user with this id")], retrySafe: true)
}

extension Methods.Share {
    public static let place = Method<ShareRequest, ShareLink>(
        "share.place", .social, .anyone, .read,
        "text and URL that share a place on twitter, facebook or by email",
        errors: [
            .notFound("place_id", "no place has this id"),
            .unavailable(nil, "the catalog does not answer"),
        ])
}

extension Methods {
    /// The methods the social service answers.
    static let socialOwned: [any DeclaresMethod] = [
        Methods.Auth.register, Methods.Auth.login, Methods.Auth.logout,
        Methods.Auth.delete, Methods.Auth.validate, Methods.Admin.create,
        Methods.Admin.setRole, Methods.Profile.get, Methods.Profile.update,
        Methods.Profile.photoUploadBegin, Methods.Profile.photoUploadAppend, Methods.Profile.photoUploadCommit,
        Methods.Profile.photo, Methods.Profile.photoDelete, Methods.Reviews.add,
        Methods.Reviews.delete, Methods.Reviews.list, Methods.Social.ratingsSweep,
        Methods.Social.follow, Methods.Social.unfollow, Methods.Social.followers,
        Methods.Social.following, Methods.Social.feed, Methods.Social.block,
        Methods.Social.unblock, Methods.Social.blocks, Methods.Social.peopleAt,
        Methods.Groups.create, Methods.Groups.get, Methods.Groups.list,
        Methods.Groups.invite, Methods.Groups.accept, Methods.Groups.decline,
        Methods.Groups.leave, Methods.Groups.remove, Methods.Groups.position,
        Methods.Groups.sharing, Methods.Groups.map, Methods.Groups.follow,
        Methods.Groups.unfollow, Methods.Groups.positionFlush, Methods.Devices.register,
        Methods.Devices.list, Methods.Devices.revoke, Methods.Chat.send,
        Methods.Chat.history, Methods.Chat.conversations, Methods.Chat.read,
        Methods.Share.place,
    ]
}
