import Bus
import Foundation

// Every push topic of Tourbus, declared once by the service that pushes it, with the type of
// its body: the services push through these declarations (the compiler checks the body), and
// the OpenRPC document describes them under `x-notifications`.

/// One push topic, as its owner declares it.
public struct PushDeclaration: Sendable {
    /// What clients subscribe to (`notify.alert`).
    public let name: String
    public let owner: MethodOwner
    /// One line: when it is pushed and what its body tells.
    public let summary: String
    /// The key under which a connection that cannot keep up keeps only the latest push, as
    /// a template (`group.position:{user_id}`), or nil when every push is kept.
    public let coalesce: String?
    /// The type its body decodes as, and so its shape.
    public let body: any Decodable.Type
}

/// A push topic with the type of its body.
public struct PushTopic<Body: Codable & Sendable>: Sendable {
    public let declaration: PushDeclaration
    public var name: String { declaration.name }

    init(_ name: String, _ owner: MethodOwner, _ summary: String, coalesce: String? = nil) {
        declaration = PushDeclaration(name: name, owner: owner, summary: summary, coalesce: coalesce, body: Body.self)
    }

    /// `body` as the JSON a push carries: encoded once, it may go to many users.
    public func encode(_ body: Body) throws -> PushBody<Body> {
        PushBody(data: try JSONCoding.encoder.encode(body))
    }
}

/// A push's body, encoded by its topic (`PushTopic.encode`).
public struct PushBody<Body>: Sendable {
    public let data: Data
}

extension Push {
    /// A push on `topic` with a body of its declared type.
    public init<Body>(_ topic: PushTopic<Body>, id: String, userId: Int64, coalesce: String? = nil, origin: String? = nil, body: PushBody<Body>) {
        self.init(topic: topic.name, id: id, userId: userId, coalesce: coalesce, origin: origin, body: body.data)
    }
}

/// Every push topic, by the service that pushes it.
public enum Pushes {
    public static let favoritesChanged = PushTopic<FavoritesChange>(
        "favorites.changed", .favorites, "your saved places, lists, pins or share links changed on another connection: what changed")
    public static let notifyAlert = PushTopic<AlertList>(
        "notify.alert", .notify, "a position you reported (notify.location) came within an annotation's alert radius: the alerts")
    public static let groupInvited = PushTopic<InvitationToMe>(
        "group.invited", .social, "you were invited to a group: the group and who invited you")
    public static let groupPosition = PushTopic<PositionPush>(
        "group.position", .social, "a member of a group you are in shared their position with it: at most one a second each",
        coalesce: "group.position:{user_id}")
    public static let groupFollowed = PushTopic<FollowedPush>(
        "group.followed", .social, "a member's map of a group follows you now: the group and who")
    public static let chatMessage = PushTopic<ChatMessage>(
        "chat.message", .social, "a message in one of your conversations (yours too, on your other connections)")
    public static let chatRead = PushTopic<ChatReadMark>(
        "chat.read", .social, "you marked a conversation read on another connection: its new read mark",
        coalesce: "chat-read-{conversation}")

    /// Every topic, by name.
    public static let all: [PushDeclaration] = [
        favoritesChanged.declaration, notifyAlert.declaration, groupInvited.declaration, groupPosition.declaration,
        groupFollowed.declaration, chatMessage.declaration, chatRead.declaration,
    ].sorted { $0.name < $1.name }
}
