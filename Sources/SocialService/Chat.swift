import Bus
import Contracts
import Foundation
import ServiceKit
import Storage

// Chat: direct conversations between two users and group conversations, each totally ordered
// by its own sequence number; the wire types, the rules and the schema. The store's part is in
// ChatStore.swift.

/// `chat.send`: a message to a user (`user:N`) or a group (`group:N`), with the sender's own id
/// for it, which makes a retry safe.
struct ChatSend: Codable, Sendable, DeclaredShape {
    var to: String
    var text: String
    var clientMsgId: String

    init(to: String, text: String, clientMsgId: String) {
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
struct ChatSent: Codable, Sendable, Equatable {
    var conversation: String
    var seq: Int64
    var at: String
    var clientMsgId: String

    enum CodingKeys: String, CodingKey {
        case conversation, seq, at
        case clientMsgId = "client_msg_id"
    }
}

/// Who wrote a message: a user, or someone whose account was deleted.
enum ChatAuthor: Encodable, Sendable, Equatable {
    case user(UserSummary)
    case deleted

    /// The author of a deleted account's messages, as every reader sees it.
    private struct Deleted: Encodable {
        var deleted = true
        var name = "deleted user"
    }

    func encode(to encoder: Encoder) throws {
        switch self {
        case .user(let summary): try summary.encode(to: encoder)
        case .deleted: try Deleted().encode(to: encoder)
        }
    }
}

/// A message as readers see it (history, the conversation list, the `chat.message` push).
/// `conversation` is named as the reader names it: `user:N` is the direct conversation with
/// user N, so the two sides of one conversation call it by each other's id.
struct ChatMessage: Encodable, Sendable, Equatable {
    var seq: Int64
    var conversation: String
    var from: ChatAuthor
    var text: String
    var at: String
    var clientMsgId: String

    enum CodingKeys: String, CodingKey {
        case seq, conversation, from, text, at
        case clientMsgId = "client_msg_id"
    }
}

/// `chat.history`: a page of a conversation, newest first, before a sequence number.
struct ChatHistoryRequest: Codable, Sendable, DeclaredShape {
    var conversation: String
    var before: Int64?
    var limit: Int?

    init(conversation: String, before: Int64? = nil, limit: Int? = nil) {
        self.conversation = conversation
        self.before = before
        self.limit = limit
    }
}

/// The reply of `chat.history`: messages, newest first, and where the next page starts.
struct ChatHistory: Encodable, Sendable, Equatable {
    var messages: [ChatMessage]
    var nextBefore: Int64?

    enum CodingKeys: String, CodingKey {
        case messages
        case nextBefore = "next_before"
    }
}

/// `chat.conversations`: a page of the caller's conversations.
struct ChatConversationsRequest: Codable, Sendable, DeclaredShape {
    var cursor: String?
    var limit: Int?

    init(cursor: String? = nil, limit: Int? = nil) {
        self.cursor = cursor
        self.limit = limit
    }
}

/// One conversation of the caller's list: its last message they can see, how many messages
/// of others they have not read, and up to where they read. `with` is the other user of a
/// direct conversation, `group` the group of a group's.
struct ChatConversation: Encodable, Sendable, Equatable {
    var conversation: String
    var with: ChatAuthor?
    var group: GroupName?
    var lastMessage: ChatMessage
    var unread: Int64
    var readUpTo: Int64

    enum CodingKeys: String, CodingKey {
        case conversation, with, group, unread
        case lastMessage = "last_message"
        case readUpTo = "read_up_to"
    }
}

/// The reply of `chat.conversations`: the latest conversation first, and the next page's cursor.
struct ChatConversationList: Encodable, Sendable, Equatable {
    var conversations: [ChatConversation]
    var nextCursor: String?

    enum CodingKeys: String, CodingKey {
        case conversations
        case nextCursor = "next_cursor"
    }
}

/// `chat.read`: the caller has read a conversation up to a sequence number; also the body of
/// the `chat.read` push, by which the reader's other connections learn the new read mark.
struct ChatReadMark: Codable, Sendable, Equatable, DeclaredShape {
    var conversation: String
    var upTo: Int64

    init(conversation: String, upTo: Int64) {
        self.conversation = conversation
        self.upTo = upTo
    }

    enum CodingKeys: String, CodingKey {
        case conversation
        case upTo = "up_to"
    }
}

/// The reply of `chat.read`: the read mark now (never lower than before) and what is left unread.
struct ChatReadState: Codable, Sendable, Equatable {
    var conversation: String
    var upTo: Int64
    var unread: Int64

    enum CodingKeys: String, CodingKey {
        case conversation, unread
        case upTo = "up_to"
    }
}

/// A conversation's name on the wire: `user:N` (the direct conversation with user N, as the
/// caller names it) or `group:N`.
enum ConversationName: Equatable {
    case user(Int64)
    case group(Int64)

    /// The most bytes a name takes: `group:` and a 19-digit id.
    static let maxBytes = 32

    /// Reads `text`, or `invalid_argument` naming `field`: bounded in bytes, then the exact
    /// form (a positive decimal id without sign or leading zeros).
    init(_ text: String, field: String) throws(ServiceError) {
        let refusal = ServiceError.invalid(field, #"must be "user:<id>" or "group:<id>""#)
        guard text.utf8.count <= Self.maxBytes, let colon = text.firstIndex(of: ":") else { throw refusal }
        let digits = text[text.index(after: colon)...]
        guard let id = Int64(digits), id > 0, String(id) == digits else { throw refusal }
        switch text[..<colon] {
        case "user": self = .user(id)
        case "group": self = .group(id)
        default: throw refusal
        }
    }

    var text: String {
        switch self {
        case .user(let id): "user:\(id)"
        case .group(let id): "group:\(id)"
        }
    }
}

/// The rules of chat: sizes and rates.
enum ChatRules {
    /// A message: 1 to 2,000 characters of several lines, at most 8,000 UTF-8 bytes.
    static let text = TextRule("text", maxCharacters: 2_000, maxBytes: 8_000, lines: .multiple)
    /// The longest `client_msg_id`, in bytes.
    static let maxClientMsgIdBytes = 64
    /// What one sender may send: 20 messages in any 10 seconds, and 60 in any minute.
    static let rates: [(count: Int, milliseconds: Int64, span: String)] = [(20, 10_000, "10 seconds"), (60, 60_000, "a minute")]
    /// What one group conversation takes from all its members together: 30 messages in any
    /// 10 seconds, so one busy group cannot fill every member's pushes.
    static let groupRate = (count: 30, milliseconds: Int64(10_000), span: "10 seconds")

    /// `try again in N second(s)`: when the oldest of the messages a rate counts, sent at
    /// `oldest`, leaves its span of `within` ms (at least a second from `now`).
    static func tryAgain(oldest: Int64, within: Int64, now: Int64) -> String {
        let seconds = max(1, (oldest + within - now + 999) / 1_000)
        return "try again in \(seconds) second\(seconds == 1 ? "" : "s")"
    }
    /// How many direct conversations one user may start in any hour.
    static let newConversationsPerHour = 30

    /// `invalid_argument` (field `text`) unless the text is 1 to 2,000 characters (bytes first)
    /// with at least one visible character. Line and paragraph separators (U+2028, U+2029)
    /// are white space: accepted between visible characters, as new lines are.
    static func checkText(_ value: String) throws(ServiceError) {
        try text.check(value)
        guard value.unicodeScalars.contains(where: isVisible) else {
            throw .invalid("text", "must hold at least one visible character (not only white space or invisible characters)")
        }
    }

    /// Hangul fillers and the blank Braille pattern: letters and symbols that draw nothing.
    private static let blanks: Set<UInt32> = [0x115F, 0x1160, 0x3164, 0xFFA0, 0x2800]

    /// Whether `scalar` draws something: not white space, not a format character (Cf: zero
    /// widths, bidi marks, tags, U+FEFF), not a control, not default-ignorable (variation
    /// selectors, the combining grapheme joiner, Khmer and Mongolian invisibles), not a blank letter.
    static func isVisible(_ scalar: Unicode.Scalar) -> Bool {
        let properties = scalar.properties
        guard !properties.isWhitespace, !properties.isDefaultIgnorableCodePoint, !blanks.contains(scalar.value) else { return false }
        switch properties.generalCategory {
        case .format, .control, .spaceSeparator, .lineSeparator, .paragraphSeparator, .unassigned, .surrogate: return false
        default: return true
        }
    }

    /// `invalid_argument` (field `client_msg_id`) unless the id is 1 to 64 bytes of
    /// `A-Z a-z 0-9 . _ : -`.
    static func checkClientMsgId(_ id: String) throws(ServiceError) {
        let bytes = id.utf8
        guard !bytes.isEmpty, bytes.count <= maxClientMsgIdBytes else {
            throw .invalid("client_msg_id", "must be 1 to \(maxClientMsgIdBytes) bytes")
        }
        guard bytes.allSatisfy({ byte in
            (UInt8(ascii: "A")...UInt8(ascii: "Z")).contains(byte) || (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(byte)
                || (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte)
                || byte == UInt8(ascii: ".") || byte == UInt8(ascii: "_") || byte == UInt8(ascii: ":") || byte == UInt8(ascii: "-")
        }) else {
            throw .invalid("client_msg_id", "may hold only A-Z, a-z, 0-9, '.', '_', ':' and '-'")
        }
    }

    /// The tables of chat, in a migration domain of their own.
    ///
    /// - `chat_conversations`: one row a conversation (`group_id` null for a direct one; a
    ///   group's goes with the group), the last sequence number it gave, and who started a
    ///   direct one when (for the hourly bound).
    /// - `chat_participants`: a user's seat in a conversation: whom a direct one is with
    ///   (`peer_id`), the sequence number at which they joined a group's (they see what comes
    ///   after), their read mark, their unread count and the last message they can see.
    /// - `chat_messages`: the messages; `sender_id` null once the sender's account is deleted.
    /// - `chat_hidden`: a message a block keeps from one participant.
    static let migrations: [Migration] = [
        Migration(domain: "chat", version: 1, sql: """
            CREATE TABLE chat_conversations (
                id         INTEGER PRIMARY KEY AUTOINCREMENT,
                group_id   INTEGER UNIQUE REFERENCES groups(id) ON DELETE CASCADE,
                last_seq   INTEGER NOT NULL DEFAULT 0,
                started_by INTEGER REFERENCES users(id) ON DELETE SET NULL,
                started_ms INTEGER NOT NULL
            );
            CREATE INDEX chat_conversations_by_starter ON chat_conversations(started_by, started_ms);
            CREATE TABLE chat_participants (
                conversation_id INTEGER NOT NULL REFERENCES chat_conversations(id) ON DELETE CASCADE,
                user_id         INTEGER NOT NULL REFERENCES users(id) ON DELETE CASCADE,
                peer_id         INTEGER,
                joined_seq      INTEGER NOT NULL,
                read_seq        INTEGER NOT NULL,
                unread          INTEGER NOT NULL DEFAULT 0,
                last_message_id INTEGER,
                PRIMARY KEY (conversation_id, user_id),
                UNIQUE (user_id, peer_id)
            );
            CREATE INDEX chat_participants_by_last ON chat_participants(user_id, last_message_id);
            CREATE TABLE chat_messages (
                id              INTEGER PRIMARY KEY AUTOINCREMENT,
                conversation_id INTEGER NOT NULL REFERENCES chat_conversations(id) ON DELETE CASCADE,
                seq             INTEGER NOT NULL,
                sender_id       INTEGER REFERENCES users(id) ON DELETE SET NULL,
                client_msg_id   TEXT NOT NULL,
                text            TEXT NOT NULL,
                at              TEXT NOT NULL,
                at_ms           INTEGER NOT NULL,
                UNIQUE (conversation_id, seq)
            );
            CREATE UNIQUE INDEX chat_messages_by_client_id ON chat_messages(sender_id, client_msg_id);
            CREATE INDEX chat_messages_by_sender_time ON chat_messages(sender_id, at_ms);
            CREATE TABLE chat_hidden (
                user_id    INTEGER NOT NULL REFERENCES users(id) ON DELETE CASCADE,
                message_id INTEGER NOT NULL REFERENCES chat_messages(id) ON DELETE CASCADE,
                PRIMARY KEY (user_id, message_id)
            ) WITHOUT ROWID;
            CREATE INDEX chat_hidden_by_message ON chat_hidden(message_id);
            """),
    ]
}
