import Bus
import Foundation
import Geo

// The params and results of the social service's methods (Protocols/social.md): accounts,
// profiles and photos, reviews, follows and blocks, groups and their live map, chat, devices,
// people at a place and share links.

/// `auth.register` and `admin.create`: a new account.
public struct Registration: Codable, Sendable, DeclaredShape {
    /// 3-32 characters of `a-z 0-9 _ .`, stored lower-case (the characters are the handler's).
    public static let usernameRule = TextRule("username", maxCharacters: 32)
    /// `local@domain.tld`, at most 254 characters (1,016 bytes).
    public static let emailRule = TextRule("email", maxCharacters: 254)
    /// 1-100 characters once surrounding white space is trimmed, on one line.
    public static let nameRule = TextRule("name", maxCharacters: 100)
    /// A password's most bytes, checked before anything else (and before any hash).
    public static let maxPasswordBytes = 1_024
    public static let fieldRules: [FieldRule] = [
        FieldRule("username", .characters(3...usernameRule.maxCharacters), .bytes(usernameRule.maxBytes)), .text(emailRule), .text(nameRule, trimmed: true),
        FieldRule("password", .bytes(maxPasswordBytes)),
    ]

    public var username: String
    public var email: String
    public var name: String
    public var password: String

    public init(username: String, email: String, name: String, password: String) {
        self.username = username
        self.email = email
        self.name = name
        self.password = password
    }
}

/// `auth.login`.
public struct Credentials: Codable, Sendable, DeclaredShape {
    public static let fieldRules: [FieldRule] = [
        FieldRule("username", .bytes(Registration.usernameRule.maxBytes)), FieldRule("password", .bytes(Registration.maxPasswordBytes)),
    ]

    public var username: String
    public var password: String

    public init(username: String, password: String) {
        self.username = username
        self.password = password
    }
}

/// `social.block` and `social.unblock`: the user to block or unblock.
public struct BlockRequest: Codable, Sendable, DeclaredShape {
    public var userId: Int64

    enum CodingKeys: String, CodingKey { case userId = "user_id" }

    public init(userId: Int64) {
        self.userId = userId
    }
}

/// The reply of `social.block` and `social.unblock`: whether the caller now blocks the user.
public struct BlockState: Codable, Sendable, Equatable {
    public var userId: Int64
    public var blocked: Bool

    enum CodingKeys: String, CodingKey {
        case blocked
        case userId = "user_id"
    }

    public init(userId: Int64, blocked: Bool) {
        self.userId = userId
        self.blocked = blocked
    }
}

/// `social.blocks`: a page of the users the caller blocks.
public struct ListBlocks: Codable, Sendable, DeclaredShape {
    public var limit: Int?
    public var cursor: String?

    public init(limit: Int? = nil, cursor: String? = nil) {
        self.limit = limit
        self.cursor = cursor
    }

    public static let fieldRules: [FieldRule] = [PageLimit.social.rule]
}

/// `chat.send`: a message to a user (`user:N`) or a group (`group:N`), with the sender's own id
/// for it, which makes a retry safe.
public struct ChatSend: Codable, Sendable, DeclaredShape {
    /// A message: 1 to 2,000 characters of several lines, at most 8,000 UTF-8 bytes.
    public static let textRule = TextRule("text", maxCharacters: 2_000, maxBytes: 8_000, lines: .multiple)
    /// The longest `client_msg_id`, in bytes.
    public static let maxClientMsgIdBytes = 64
    public static let fieldRules: [FieldRule] = [.text(textRule), FieldRule("client_msg_id", .bytes(maxClientMsgIdBytes))]

    public var to: String
    public var text: String
    public var clientMsgId: String

    public init(to: String, text: String, clientMsgId: String) {
        self.to = to
        self.text = text
        self.clientMsgId = clientMsgId
    }

    enum CodingKeys: String, CodingKey {
        case to, text
        case clientMsgId = "client_msg_id"
    }
}

/// The reply of `chat.send`: where the message went, its place there and when.
public struct ChatSent: Codable, Sendable, Equatable {
    public var conversation: String
    public var seq: Int64
    public var at: String
    public var clientMsgId: String

    enum CodingKeys: String, CodingKey {
        case conversation, seq, at
        case clientMsgId = "client_msg_id"
    }

    public init(conversation: String, seq: Int64, at: String, clientMsgId: String) {
        self.conversation = conversation
        self.seq = seq
        self.at = at
        self.clientMsgId = clientMsgId
    }
}

/// Who wrote a message: a user, or someone whose account was deleted.
public enum ChatAuthor: Codable, Sendable, Equatable, SaysItsShape {
    case user(UserSummary)
    case deleted

    /// The author of a deleted account's messages, as every reader sees it.
    private struct Deleted: Codable {
        var deleted = true
        var name = "deleted user"
    }

    private enum Keys: String, CodingKey { case deleted }

    /// A user's summary, or `{deleted: true, name}`.
    public static func shape() throws -> Schema {
        .anyOf([try SchemaProbe.plainShape(of: UserSummary.self), try SchemaProbe.plainShape(of: Deleted.self)])
    }

    public static var example: ChatAuthor { .deleted }

    /// A user's summary, or `{deleted: true, name}`.
    public init(from decoder: any Decoder) throws {
        if try decoder.container(keyedBy: Keys.self).decodeIfPresent(Bool.self, forKey: .deleted) == true {
            self = .deleted
        } else {
            self = .user(try UserSummary(from: decoder))
        }
    }

    public func encode(to encoder: Encoder) throws {
        switch self {
        case .user(let summary): try summary.encode(to: encoder)
        case .deleted: try Deleted().encode(to: encoder)
        }
    }
}

/// A message as readers see it (history, the conversation list, the `chat.message` push).
/// `conversation` is named as the reader names it: `user:N` is the direct conversation with
/// user N, so the two sides of one conversation call it by each other's id.
public struct ChatMessage: Codable, Sendable, Equatable {
    public var seq: Int64
    public var conversation: String
    public var from: ChatAuthor
    public var text: String
    public var at: String
    public var clientMsgId: String

    enum CodingKeys: String, CodingKey {
        case seq, conversation, from, text, at
        case clientMsgId = "client_msg_id"
    }

    public init(seq: Int64, conversation: String, from: ChatAuthor, text: String, at: String, clientMsgId: String) {
        self.seq = seq
        self.conversation = conversation
        self.from = from
        self.text = text
        self.at = at
        self.clientMsgId = clientMsgId
    }
}

/// `chat.history`: a page of a conversation, newest first, before a sequence number.
public struct ChatHistoryRequest: Codable, Sendable, DeclaredShape {
    public var conversation: String
    /// Only messages with a smaller seq: a page's `next_before`, or the seq where a client saw
    /// a gap (a seq, not an opaque cursor, so that a client can ask for any gap it sees).
    public var before: Int64?
    public var limit: Int?

    public init(conversation: String, before: Int64? = nil, limit: Int? = nil) {
        self.conversation = conversation
        self.before = before
        self.limit = limit
    }

    public static let fieldRules: [FieldRule] = [PageLimit.social.rule, .integer("before", 1...Int64.max)]
}

/// The reply of `chat.history`: messages, newest first, and where the next page starts.
public struct ChatHistory: Codable, Sendable, Equatable {
    public var messages: [ChatMessage]
    public var nextBefore: Int64?

    enum CodingKeys: String, CodingKey {
        case messages
        case nextBefore = "next_before"
    }

    public init(messages: [ChatMessage], nextBefore: Int64? = nil) {
        self.messages = messages
        self.nextBefore = nextBefore
    }
}

/// `chat.conversations`: a page of the caller's conversations.
public struct ChatConversationsRequest: Codable, Sendable, DeclaredShape {
    public var cursor: String?
    public var limit: Int?

    public init(cursor: String? = nil, limit: Int? = nil) {
        self.cursor = cursor
        self.limit = limit
    }

    public static let fieldRules: [FieldRule] = [PageLimit.social.rule]
}

/// One conversation of the caller's list: its last message they can see, how many messages
/// of others they have not read, and up to where they read. `with` is the other user of a
/// direct conversation, `group` the group of a group's.
public struct ChatConversation: Codable, Sendable, Equatable {
    public var conversation: String
    public var with: ChatAuthor?
    public var group: GroupName?
    public var lastMessage: ChatMessage
    public var unread: Int64
    public var readUpTo: Int64

    enum CodingKeys: String, CodingKey {
        case conversation, with, group, unread
        case lastMessage = "last_message"
        case readUpTo = "read_up_to"
    }

    public init(conversation: String, with: ChatAuthor? = nil, group: GroupName? = nil, lastMessage: ChatMessage, unread: Int64, readUpTo: Int64) {
        self.conversation = conversation
        self.with = with
        self.group = group
        self.lastMessage = lastMessage
        self.unread = unread
        self.readUpTo = readUpTo
    }
}

/// The reply of `chat.conversations`: the latest conversation first, and the next page's cursor.
public struct ChatConversationList: Codable, Sendable, Equatable {
    public var conversations: [ChatConversation]
    public var nextCursor: String?

    enum CodingKeys: String, CodingKey {
        case conversations
        case nextCursor = "next_cursor"
    }

    public init(conversations: [ChatConversation], nextCursor: String? = nil) {
        self.conversations = conversations
        self.nextCursor = nextCursor
    }
}

/// `chat.read`: the caller has read a conversation up to a sequence number; also the body of
/// the `chat.read` push, by which the reader's other connections learn the new read mark.
public struct ChatReadMark: Codable, Sendable, Equatable, DeclaredShape {
    public var conversation: String
    public var upTo: Int64

    public init(conversation: String, upTo: Int64) {
        self.conversation = conversation
        self.upTo = upTo
    }

    enum CodingKeys: String, CodingKey {
        case conversation
        case upTo = "up_to"
    }
}

/// The reply of `chat.read`: the read mark now (never lower than before) and what is left unread.
public struct ChatReadState: Codable, Sendable, Equatable {
    public var conversation: String
    public var upTo: Int64
    public var unread: Int64

    enum CodingKeys: String, CodingKey {
        case conversation, unread
        case upTo = "up_to"
    }

    public init(conversation: String, upTo: Int64, unread: Int64) {
        self.conversation = conversation
        self.upTo = upTo
        self.unread = unread
    }
}

/// `devices.register`: a device of the caller and the X25519 public key it made.
public struct DeviceRegistration: Codable, Sendable, DeclaredShape {
    public var deviceId: String
    public var publicKey: String

    public init(deviceId: String, publicKey: String) {
        self.deviceId = deviceId
        self.publicKey = publicKey
    }

    enum CodingKeys: String, CodingKey {
        case deviceId = "device_id"
        case publicKey = "public_key"
    }
}

/// `devices.revoke`: one of the caller's devices.
public struct DeviceRef: Codable, Sendable, DeclaredShape {
    public var deviceId: String

    public init(deviceId: String) { self.deviceId = deviceId }

    enum CodingKeys: String, CodingKey { case deviceId = "device_id" }
}

/// One registered device, as `devices.register` and `devices.list` answer it.
public struct DeviceInfo: Codable, Sendable, Equatable {
    public var deviceId: String
    public var publicKey: String
    public var createdAt: String

    enum CodingKeys: String, CodingKey {
        case deviceId = "device_id"
        case publicKey = "public_key"
        case createdAt = "created_at"
    }

    public init(deviceId: String, publicKey: String, createdAt: String) {
        self.deviceId = deviceId
        self.publicKey = publicKey
        self.createdAt = createdAt
    }
}

/// The reply of `devices.list`: the caller's devices, oldest first, and how many one may have.
public struct DeviceList: Codable, Sendable, Equatable {
    public var devices: [DeviceInfo]
    public var max: Int

    public init(devices: [DeviceInfo], max: Int) {
        self.devices = devices
        self.max = max
    }
}

/// The reply of `devices.revoke`.
public struct DeviceRevoked: Codable, Sendable, Equatable {
    public var deviceId: String
    public var revoked: Bool

    enum CodingKeys: String, CodingKey {
        case revoked
        case deviceId = "device_id"
    }

    public init(deviceId: String, revoked: Bool) {
        self.deviceId = deviceId
        self.revoked = revoked
    }
}

/// `auth.delete`: the caller's password, asked again before their account and everything
/// of it goes.
public struct AccountDeletion: Codable, Sendable, DeclaredShape {
    public static let fieldRules: [FieldRule] = [FieldRule("password", .bytes(Registration.maxPasswordBytes))]

    public var password: String

    public init(password: String) { self.password = password }
}

/// The reply of `auth.delete`: the id of the account that no longer exists.
public struct AccountDeleted: Codable, Sendable, Equatable {
    public var userId: Int64

    enum CodingKeys: String, CodingKey { case userId = "user_id" }

    public init(userId: Int64) {
        self.userId = userId
    }
}

/// `social.follow` and `social.unfollow`.
public struct FollowRequest: Codable, Sendable, DeclaredShape {
    public var userId: Int64

    public init(userId: Int64) { self.userId = userId }

    enum CodingKeys: String, CodingKey { case userId = "user_id" }
}

/// The reply of `social.follow` and `social.unfollow`: whether the caller now follows the user.
public struct FollowState: Codable, Sendable, Equatable {
    public var userId: Int64
    public var following: Bool

    enum CodingKeys: String, CodingKey {
        case following
        case userId = "user_id"
    }

    public init(userId: Int64, following: Bool) {
        self.userId = userId
        self.following = following
    }
}

/// `social.followers` and `social.following`: a page of someone's (without `user_id`, the caller's) list.
public struct ListUsers: Codable, Sendable, DeclaredShape {
    public var userId: Int64?
    public var limit: Int?
    public var cursor: String?

    public init(userId: Int64? = nil, limit: Int? = nil, cursor: String? = nil) {
        self.userId = userId
        self.limit = limit
        self.cursor = cursor
    }

    enum CodingKeys: String, CodingKey {
        case limit, cursor
        case userId = "user_id"
    }

    public static let fieldRules: [FieldRule] = [PageLimit.social.rule]
}

/// A page of users, the most recently followed first, and the cursor of the next page.
public struct UserPage: Codable, Sendable, Equatable {
    public var users: [UserSummary]
    public var nextCursor: String?

    enum CodingKeys: String, CodingKey {
        case users
        case nextCursor = "next_cursor"
    }

    public init(users: [UserSummary], nextCursor: String? = nil) {
        self.users = users
        self.nextCursor = nextCursor
    }
}

/// `groups.create`.
public struct GroupCreation: Codable, Sendable, DeclaredShape {
    /// 1-100 characters (400 bytes as sent) once trimmed, on one line.
    public static let nameRule = TextRule("name", maxCharacters: 100)
    public static let fieldRules: [FieldRule] = [.text(nameRule, trimmed: true)]

    public var name: String

    public init(name: String) {
        self.name = name
    }
}

/// A request about one group: `groups.get`, `.accept`, `.decline`, `.leave`, `.map`.
public struct GroupRef: Codable, Sendable, DeclaredShape {
    public var groupId: Int64

    enum CodingKeys: String, CodingKey { case groupId = "group_id" }

    public init(groupId: Int64) {
        self.groupId = groupId
    }
}

/// `groups.invite`: whom to invite, by username.
public struct GroupInvitation: Codable, Sendable, DeclaredShape {
    public var groupId: Int64
    public var username: String

    enum CodingKeys: String, CodingKey {
        case username
        case groupId = "group_id"
    }

    public init(groupId: Int64, username: String) {
        self.groupId = groupId
        self.username = username
    }
}

/// `groups.remove`, `groups.follow`, `groups.unfollow`: a group and one of its members.
public struct GroupMemberRef: Codable, Sendable, DeclaredShape {
    public var groupId: Int64
    public var userId: Int64

    enum CodingKeys: String, CodingKey {
        case groupId = "group_id"
        case userId = "user_id"
    }

    public init(groupId: Int64, userId: Int64) {
        self.groupId = groupId
        self.userId = userId
    }
}

/// A member of a group as a member sees them.
public struct GroupMember: Codable, Sendable, Equatable {
    public var user: UserSummary
    /// `owner` or `member`.
    public var role: String
    public var joinedAt: String
    /// Whether they share their position with this group.
    public var sharing: Bool
    /// `true` to the owner for a member the owner blocks (absent otherwise).
    public var blocked: Bool?

    enum CodingKeys: String, CodingKey {
        case user, role, sharing, blocked
        case joinedAt = "joined_at"
    }

    public init(user: UserSummary, role: String, joinedAt: String, sharing: Bool, blocked: Bool? = nil) {
        self.user = user
        self.role = role
        self.joinedAt = joinedAt
        self.sharing = sharing
        self.blocked = blocked
    }
}

/// A pending invitation to a group, as its members see it.
public struct PendingInvitation: Codable, Sendable, Equatable {
    public var user: UserSummary
    public var invitedBy: UserSummary?
    public var invitedAt: String
    /// `true` to the owner for an invitee the owner blocks (absent otherwise).
    public var blocked: Bool?

    enum CodingKeys: String, CodingKey {
        case user, blocked
        case invitedBy = "invited_by"
        case invitedAt = "invited_at"
    }

    public init(user: UserSummary, invitedBy: UserSummary? = nil, invitedAt: String, blocked: Bool? = nil) {
        self.user = user
        self.invitedBy = invitedBy
        self.invitedAt = invitedAt
        self.blocked = blocked
    }
}

/// A group as `groups.get`, `groups.create` and `groups.accept` answer it, for one member.
public struct GroupView: Codable, Sendable, Equatable {
    public var id: Int64
    public var name: String
    public var createdAt: String
    public var members: [GroupMember]
    public var invitations: [PendingInvitation]
    /// The member the viewer follows on the group's map.
    public var following: UserSummary?
    /// The members who follow the viewer on the group's map.
    public var followedBy: [UserSummary]

    enum CodingKeys: String, CodingKey {
        case id, name, members, invitations, following
        case createdAt = "created_at"
        case followedBy = "followed_by"
    }

    public init(id: Int64, name: String, createdAt: String, members: [GroupMember], invitations: [PendingInvitation], following: UserSummary? = nil, followedBy: [UserSummary]) {
        self.id = id
        self.name = name
        self.createdAt = createdAt
        self.members = members
        self.invitations = invitations
        self.following = following
        self.followedBy = followedBy
    }
}

/// A group's id and name.
public struct GroupName: Codable, Sendable, Equatable {
    public var id: Int64
    public var name: String

    public init(id: Int64, name: String) {
        self.id = id
        self.name = name
    }
}

/// One of the caller's groups in `groups.list`.
public struct GroupListing: Codable, Sendable, Equatable {
    public var id: Int64
    public var name: String
    public var role: String
    public var sharing: Bool
    /// How many members the caller sees: the owner all, others not those they block.
    public var members: Int

    public init(id: Int64, name: String, role: String, sharing: Bool, members: Int) {
        self.id = id
        self.name = name
        self.role = role
        self.sharing = sharing
        self.members = members
    }
}

/// An invitation to the caller in `groups.list`, and the body of the `group.invited` push.
public struct InvitationToMe: Codable, Sendable, Equatable {
    public var group: GroupName
    public var invitedBy: UserSummary?
    public var invitedAt: String

    enum CodingKeys: String, CodingKey {
        case group
        case invitedBy = "invited_by"
        case invitedAt = "invited_at"
    }

    public init(group: GroupName, invitedBy: UserSummary? = nil, invitedAt: String) {
        self.group = group
        self.invitedBy = invitedBy
        self.invitedAt = invitedAt
    }
}

/// The reply of `groups.list`: the caller's groups, then their pending invitations.
public struct GroupList: Codable, Sendable, Equatable {
    public var groups: [GroupListing]
    public var invitations: [InvitationToMe]

    public init(groups: [GroupListing], invitations: [InvitationToMe]) {
        self.groups = groups
        self.invitations = invitations
    }
}

/// The reply of `groups.invite`.
public struct InvitationSent: Codable, Sendable, Equatable {
    public var groupId: Int64
    public var username: String
    public var invited: Bool

    enum CodingKeys: String, CodingKey {
        case username, invited
        case groupId = "group_id"
    }

    public init(groupId: Int64, username: String, invited: Bool) {
        self.groupId = groupId
        self.username = username
        self.invited = invited
    }
}

/// The reply of `groups.decline`.
public struct GroupDeclined: Codable, Sendable {
    public var groupId: Int64
    public var declined = true

    enum CodingKeys: String, CodingKey {
        case declined
        case groupId = "group_id"
    }

    public init(groupId: Int64) {
        self.groupId = groupId
    }
}

/// The reply of `groups.leave`.
public struct GroupLeft: Codable, Sendable {
    public var groupId: Int64
    public var left = true

    enum CodingKeys: String, CodingKey {
        case left
        case groupId = "group_id"
    }

    public init(groupId: Int64) {
        self.groupId = groupId
    }
}

/// The reply of `groups.remove`: the user is no longer a member or invited.
public struct MemberRemoved: Codable, Sendable, Equatable {
    public var groupId: Int64
    public var userId: Int64
    public var removed: Bool

    enum CodingKeys: String, CodingKey {
        case removed
        case groupId = "group_id"
        case userId = "user_id"
    }

    public init(groupId: Int64, userId: Int64, removed: Bool) {
        self.groupId = groupId
        self.userId = userId
        self.removed = removed
    }
}

/// `groups.position`: where the caller is now.
public struct PositionReport: Codable, Sendable, DeclaredShape {
    public var lat: Double
    public var lon: Double
    public var accuracyM: Double?
    public var headingDeg: Double?
    public var speedMps: Double?

    enum CodingKeys: String, CodingKey {
        case lat, lon
        case accuracyM = "accuracy_m"
        case headingDeg = "heading_deg"
        case speedMps = "speed_mps"
    }

    public init(lat: Double, lon: Double, accuracyM: Double? = nil, headingDeg: Double? = nil, speedMps: Double? = nil) {
        self.lat = lat
        self.lon = lon
        self.accuracyM = accuracyM
        self.headingDeg = headingDeg
        self.speedMps = speedMps
    }
}

/// The body of a `group.position` push: one to each recipient, naming every group of theirs
/// the member shares it with (`group_ids`, ascending; `group_id` is the first of them).
public struct PositionPush: Codable, Sendable {
    public var groupId: Int64
    public var groupIds: [Int64]
    public var userId: Int64
    public var lat: Double
    public var lon: Double
    public var accuracyM: Double?
    public var headingDeg: Double?
    public var speedMps: Double?
    public var at: String

    enum CodingKeys: String, CodingKey {
        case lat, lon, at
        case groupId = "group_id"
        case groupIds = "group_ids"
        case userId = "user_id"
        case accuracyM = "accuracy_m"
        case headingDeg = "heading_deg"
        case speedMps = "speed_mps"
    }

    public init(
        groupId: Int64, groupIds: [Int64], userId: Int64, lat: Double, lon: Double, accuracyM: Double? = nil, headingDeg: Double? = nil, speedMps: Double? = nil, at: String
    ) {
        self.groupId = groupId
        self.groupIds = groupIds
        self.userId = userId
        self.lat = lat
        self.lon = lon
        self.accuracyM = accuracyM
        self.headingDeg = headingDeg
        self.speedMps = speedMps
        self.at = at
    }
}

/// The reply of `groups.position`: the groups it went to, and whether it was kept.
public struct PositionShared: Codable, Sendable {
    public var at: String
    public var sharedWith: [Int64]
    public var kept: Bool

    enum CodingKeys: String, CodingKey {
        case at, kept
        case sharedWith = "shared_with"
    }

    public init(at: String, sharedWith: [Int64], kept: Bool) {
        self.at = at
        self.sharedWith = sharedWith
        self.kept = kept
    }
}

/// `groups.sharing`: share the caller's position with a group, or stop.
public struct SharingChange: Codable, Sendable, DeclaredShape {
    public var groupId: Int64
    public var on: Bool

    enum CodingKeys: String, CodingKey {
        case on
        case groupId = "group_id"
    }

    public init(groupId: Int64, on: Bool) {
        self.groupId = groupId
        self.on = on
    }
}

/// The reply of `groups.sharing`.
public struct SharingState: Codable, Sendable {
    public var groupId: Int64
    public var sharing: Bool

    enum CodingKeys: String, CodingKey {
        case sharing
        case groupId = "group_id"
    }

    public init(groupId: Int64, sharing: Bool) {
        self.groupId = groupId
        self.sharing = sharing
    }
}

/// One member's dot on a group's map.
public struct MapEntry: Codable, Sendable {
    public var user: UserSummary
    public var lat: Double
    public var lon: Double
    public var accuracyM: Double?
    public var headingDeg: Double?
    public var speedMps: Double?
    public var at: String
    public var ageS: Int64
    public var stale: Bool

    enum CodingKeys: String, CodingKey {
        case user, lat, lon, at, stale
        case accuracyM = "accuracy_m"
        case headingDeg = "heading_deg"
        case speedMps = "speed_mps"
        case ageS = "age_s"
    }

    public init(user: UserSummary, lat: Double, lon: Double, accuracyM: Double? = nil, headingDeg: Double? = nil, speedMps: Double? = nil, at: String, ageS: Int64, stale: Bool) {
        self.user = user
        self.lat = lat
        self.lon = lon
        self.accuracyM = accuracyM
        self.headingDeg = headingDeg
        self.speedMps = speedMps
        self.at = at
        self.ageS = ageS
        self.stale = stale
    }
}

/// The reply of `groups.map`.
public struct GroupMap: Codable, Sendable {
    public var groupId: Int64
    public var positions: [MapEntry]

    enum CodingKeys: String, CodingKey {
        case positions
        case groupId = "group_id"
    }

    public init(groupId: Int64, positions: [MapEntry]) {
        self.groupId = groupId
        self.positions = positions
    }
}

/// The reply of `groups.follow` and `groups.unfollow`.
public struct MapFollowState: Codable, Sendable {
    public var groupId: Int64
    public var userId: Int64
    public var following: Bool

    enum CodingKeys: String, CodingKey {
        case following
        case groupId = "group_id"
        case userId = "user_id"
    }

    public init(groupId: Int64, userId: Int64, following: Bool) {
        self.groupId = groupId
        self.userId = userId
        self.following = following
    }
}

/// The body of a `group.followed` push: who follows the member on which group's map.
public struct FollowedPush: Codable, Sendable {
    public var groupId: Int64
    public var user: UserSummary

    enum CodingKeys: String, CodingKey {
        case user
        case groupId = "group_id"
    }

    public init(groupId: Int64, user: UserSummary) {
        self.groupId = groupId
        self.user = user
    }
}

/// The reply of the flush: how many held positions were pushed (each to its member's recipients).
public struct FlushReply: Codable, Sendable {
    public var pushed: Int

    public init(pushed: Int) {
        self.pushed = pushed
    }
}

/// `social.people_at`: a catalog place (`place_id`), or a circle (`lat`, `lon`, `radius_m`).
public struct PeopleAtRequest: Codable, Sendable, DeclaredShape {
    public var placeId: Int64?
    /// The centre of a circle of `radius_m`, instead of a place.
    public var near: Point?
    public var radiusM: Double?
    public var limit: Int?

    /// The radii of a circle, in metres: at least a grid cell's, at most a neighbourhood's.
    public static let radii = 200.0...2_000.0

    public init(placeId: Int64? = nil, near: Point? = nil, radiusM: Double? = nil, limit: Int? = nil) {
        self.placeId = placeId
        self.near = near
        self.radiusM = radiusM
        self.limit = limit
    }

    enum CodingKeys: String, CodingKey {
        case near, limit
        case placeId = "place_id"
        case radiusM = "radius_m"
    }

    public static let fieldRules: [FieldRule] = [PageLimit.peopleAt.rule, .number("radius_m", radii), .integer("place_id", 1...Int64.max)]
}

/// One person `social.people_at` lists: who, their age group (as their profile shows it to
/// others), whether they are there now, when they last marked the place (or one in the
/// circle) visited, and the conversation that messages them.
public struct PersonHere: Codable, Sendable, Equatable {
    public var user: UserSummary
    public var ageGroup: String?
    public var hereNow: Bool
    public var visitedAt: String?
    /// The chat conversation id with them, as the caller names it: `user:N`.
    public var message: String

    enum CodingKeys: String, CodingKey {
        case user, message
        case ageGroup = "age_group"
        case hereNow = "here_now"
        case visitedAt = "visited_at"
    }

    public init(user: UserSummary, ageGroup: String? = nil, hereNow: Bool, visitedAt: String? = nil, message: String) {
        self.user = user
        self.ageGroup = ageGroup
        self.hereNow = hereNow
        self.visitedAt = visitedAt
        self.message = message
    }
}

/// The reply of `social.people_at`: those there now first (the latest position first), then
/// those who visited (the latest visit first); `more` when some were left out by the limit or
/// the page's bytes.
public struct PeopleHere: Codable, Sendable, Equatable {
    public var people: [PersonHere]
    public var more: Bool

    public init(people: [PersonHere], more: Bool) {
        self.people = people
        self.more = more
    }
}

/// `profile.photo.upload.commit`'s body, and the reply of begin and append: an upload and the
/// bytes it holds; after commit, the photo it became.
public struct PhotoUpload: Codable, Sendable, DeclaredShape {
    public var uploadId: String
    public var bytes: Int?
    public var photo: PhotoStamp?

    enum CodingKeys: String, CodingKey {
        case bytes, photo
        case uploadId = "upload_id"
    }

    public init(uploadId: String, bytes: Int? = nil, photo: PhotoStamp? = nil) {
        self.uploadId = uploadId
        self.bytes = bytes
        self.photo = photo
    }
}

/// That a user has a photo, in their profile: when it was last set (a client's cache key).
public struct PhotoStamp: Codable, Sendable, Equatable {
    public var updatedAt: String

    enum CodingKeys: String, CodingKey { case updatedAt = "updated_at" }

    public init(updatedAt: String) {
        self.updatedAt = updatedAt
    }
}

/// `profile.photo`: one size of a user's photo (without `user_id`, the caller's own).
public struct PhotoRequest: Decodable, Sendable, DeclaredShape {
    public var userId: Int64?
    public var size: Int

    enum CodingKeys: String, CodingKey {
        case size
        case userId = "user_id"
    }

    public init(userId: Int64? = nil, size: Int) {
        self.userId = userId
        self.size = size
    }
}

/// The body of `profile.photo`'s reply; the JPEG is its one attachment.
public struct PhotoReply: Codable, Sendable {
    public var contentType = "image/jpeg"
    public var userId: Int64
    public var size: Int
    public var bytes: Int
    public var updatedAt: String

    enum CodingKeys: String, CodingKey {
        case size, bytes
        case contentType = "content_type"
        case userId = "user_id"
        case updatedAt = "updated_at"
    }

    public init(userId: Int64, size: Int, bytes: Int, updatedAt: String) {
        self.userId = userId
        self.size = size
        self.bytes = bytes
        self.updatedAt = updatedAt
    }
}

/// The reply of `profile.photo.delete`: whether there was a photo to delete.
public struct PhotoDeleted: Codable, Sendable {
    public var deleted: Bool

    public init(deleted: Bool) {
        self.deleted = deleted
    }
}

/// A user's profile. The owner sees their `email` and `birth_year`; anyone else sees only an
/// `age_group` derived from the birth year.
public struct Profile: Codable, Sendable, Equatable {
    public var id: Int64
    public var username: String
    public var name: String
    public var role: String
    public var bio: String?
    public var avatarUrl: String?
    public var language: String?
    public var homeCity: String?
    public var email: String?
    public var birthYear: Int?
    public var ageGroup: String?
    /// Whether `social.people_at` lists this user; shown to the owner only.
    public var discoverable: Bool?
    public var followers: Int
    public var following: Int
    public var createdAt: String
    /// Set when the user has uploaded a photo (`profile.photo` serves it).
    public var photo: PhotoStamp?

    enum CodingKeys: String, CodingKey {
        case id, username, name, role, bio, language, email, followers, following, discoverable, photo
        case avatarUrl = "avatar_url"
        case homeCity = "home_city"
        case birthYear = "birth_year"
        case ageGroup = "age_group"
        case createdAt = "created_at"
    }

    public init(
        id: Int64, username: String, name: String, role: String, bio: String? = nil, avatarUrl: String? = nil, language: String? = nil, homeCity: String? = nil,
        email: String? = nil, birthYear: Int? = nil, ageGroup: String? = nil, discoverable: Bool? = nil, followers: Int, following: Int, createdAt: String, photo: PhotoStamp? = nil
    ) {
        self.id = id
        self.username = username
        self.name = name
        self.role = role
        self.bio = bio
        self.avatarUrl = avatarUrl
        self.language = language
        self.homeCity = homeCity
        self.email = email
        self.birthYear = birthYear
        self.ageGroup = ageGroup
        self.discoverable = discoverable
        self.followers = followers
        self.following = following
        self.createdAt = createdAt
        self.photo = photo
    }
}

/// `profile.get`: someone's profile, or without `user_id` the caller's own.
public struct ProfileRequest: Codable, Sendable, DeclaredShape {
    public var userId: Int64?

    public init(userId: Int64? = nil) { self.userId = userId }

    enum CodingKeys: String, CodingKey { case userId = "user_id" }
}

/// `profile.update`: only the fields to change; `null` clears one (except `name`).
public struct ProfileUpdate: Decodable, Sendable, DeclaredShape {
    public static let bioRule = TextRule("bio", maxCharacters: 500, lines: .multiple)
    public static let avatarURLRule = TextRule("avatar_url", maxCharacters: 500)
    public static let languageRule = TextRule("language", maxCharacters: 35)
    public static let homeCityRule = TextRule("home_city", maxCharacters: 100)
    public static let fieldRules: [FieldRule] = [
        .text(Registration.nameRule, trimmed: true), .text(bioRule), .text(avatarURLRule), .text(languageRule), .text(homeCityRule),
    ]

    public var name: Patch<String> = .absent
    public var bio: Patch<String> = .absent
    public var avatarUrl: Patch<String> = .absent
    public var birthYear: Patch<Int> = .absent
    public var language: Patch<String> = .absent
    public var homeCity: Patch<String> = .absent
    /// Whether `social.people_at` may list the caller (off until they turn it on).
    public var discoverable: Patch<Bool> = .absent

    enum CodingKeys: String, CodingKey {
        case name, bio, language, discoverable
        case avatarUrl = "avatar_url"
        case birthYear = "birth_year"
        case homeCity = "home_city"
    }

    public init(from decoder: Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        name = try c.decodePatch(String.self, forKey: .name)
        bio = try c.decodePatch(String.self, forKey: .bio)
        avatarUrl = try c.decodePatch(String.self, forKey: .avatarUrl)
        birthYear = try c.decodePatch(Int.self, forKey: .birthYear)
        language = try c.decodePatch(String.self, forKey: .language)
        homeCity = try c.decodePatch(String.self, forKey: .homeCity)
        discoverable = try c.decodePatch(Bool.self, forKey: .discoverable)
    }

    public init(
        name: Patch<String> = .absent, bio: Patch<String> = .absent, avatarUrl: Patch<String> = .absent, birthYear: Patch<Int> = .absent, language: Patch<String> = .absent,
        homeCity: Patch<String> = .absent, discoverable: Patch<Bool> = .absent
    ) {
        self.name = name
        self.bio = bio
        self.avatarUrl = avatarUrl
        self.birthYear = birthYear
        self.language = language
        self.homeCity = homeCity
        self.discoverable = discoverable
    }
}

/// Who wrote something, as shown beside it.
public struct UserSummary: Codable, Sendable, Equatable {
    public var id: Int64
    public var username: String
    public var name: String

    public init(id: Int64, username: String, name: String) {
        self.id = id
        self.username = username
        self.name = name
    }
}

/// A review of a place: one per user and place.
public struct Review: Codable, Sendable, Equatable {
    public var id: Int64
    public var placeId: Int64
    public var user: UserSummary
    /// 1 to 5.
    public var rating: Int
    /// Stored and returned exactly as written (HTML included): escaping is the client's job.
    public var text: String
    public var createdAt: String
    /// When the review was last written; the key of the `date` order.
    public var updatedAt: String

    enum CodingKeys: String, CodingKey {
        case id, user, rating, text
        case placeId = "place_id"
        case createdAt = "created_at"
        case updatedAt = "updated_at"
    }

    public init(id: Int64, placeId: Int64, user: UserSummary, rating: Int, text: String, createdAt: String, updatedAt: String) {
        self.id = id
        self.placeId = placeId
        self.user = user
        self.rating = rating
        self.text = text
        self.createdAt = createdAt
        self.updatedAt = updatedAt
    }
}

/// `reviews.add`: the caller's review of a place (a second one replaces the first).
public struct ReviewInput: Codable, Sendable, DeclaredShape {
    public var placeId: Int64
    public var rating: Int
    public var text: String?

    public init(placeId: Int64, rating: Int, text: String?) {
        self.placeId = placeId
        self.rating = rating
        self.text = text
    }

    enum CodingKeys: String, CodingKey {
        case rating, text
        case placeId = "place_id"
    }

    /// A review's text: at most 5,000 characters and 20,000 bytes, line breaks and tabs allowed.
    public static let textRule = TextRule("text", maxCharacters: 5_000, lines: .multiple)
    /// A rating is an integer from 1 to 5; 2.5, "five", 0 and 6 each name the field.
    public static let fieldRules: [FieldRule] = [.integer("rating", 1...5), .text(textRule)]
}

/// `reviews.delete`.
public struct ReviewRef: Codable, Sendable, DeclaredShape {
    public var reviewId: Int64

    public init(reviewId: Int64) { self.reviewId = reviewId }

    enum CodingKeys: String, CodingKey { case reviewId = "review_id" }
}

/// The reply of `reviews.delete`.
public struct ReviewDeleted: Codable, Sendable, Equatable {
    public var id: Int64

    public init(id: Int64) {
        self.id = id
    }
}

/// `reviews.list`: a page of one place's reviews in a chosen order.
public struct ListReviews: Codable, Sendable, DeclaredShape {
    public var placeId: Int64
    public var sort: String?
    public var order: String?
    public var limit: Int?
    public var cursor: String?

    public init(placeId: Int64, sort: String? = nil, order: String? = nil, limit: Int? = nil, cursor: String? = nil) {
        self.placeId = placeId
        self.sort = sort
        self.order = order
        self.limit = limit
        self.cursor = cursor
    }

    enum CodingKeys: String, CodingKey {
        case sort, order, limit, cursor
        case placeId = "place_id"
    }

    public static let fieldRules: [FieldRule] = [PageLimit.social.rule]
}

/// `social.feed`: a page of the reviews of the people the caller follows.
public struct FeedRequest: Codable, Sendable, DeclaredShape {
    public var limit: Int?
    public var cursor: String?

    public init(limit: Int? = nil, cursor: String? = nil) {
        self.limit = limit
        self.cursor = cursor
    }

    public static let fieldRules: [FieldRule] = [PageLimit.social.rule]
}

/// A page of reviews and the cursor of the next page (nil on a page that is not full).
public struct ReviewPage: Codable, Sendable, Equatable {
    public var reviews: [Review]
    public var nextCursor: String?

    enum CodingKeys: String, CodingKey {
        case reviews
        case nextCursor = "next_cursor"
    }

    public init(reviews: [Review], nextCursor: String? = nil) {
        self.reviews = reviews
        self.nextCursor = nextCursor
    }
}

/// `social.ratings.sweep`'s reply: how many places' ratings were published again.
public struct RatingSweep: Codable, Sendable {
    public var published: Int

    public init(published: Int) {
        self.published = published
    }
}

/// `share.place`: a place and where to share it.
public struct ShareRequest: Codable, Sendable, DeclaredShape {
    public var placeId: Int64
    public var network: String

    public init(placeId: Int64, network: String) {
        self.placeId = placeId
        self.network = network
    }

    enum CodingKeys: String, CodingKey {
        case network
        case placeId = "place_id"
    }
}

/// The reply of `share.place`: the text to post and the URL that posts it.
public struct ShareLink: Codable, Sendable, Equatable {
    public var text: String
    public var url: String

    public init(text: String, url: String) {
        self.text = text
        self.url = url
    }
}
