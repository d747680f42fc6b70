import Bus
import Contracts
import Foundation
import ServiceKit
import Storage

// Chat: direct conversations between two users and group conversations, each totally ordered
// by its own sequence number; the wire types, the rules and the schema. The store's part is in
// ChatStore.swift.

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
        try ChatSend.textRule.check(value)
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
        guard !bytes.isEmpty, bytes.count <= ChatSend.maxClientMsgIdBytes else {
            throw .invalid("client_msg_id", "must be 1 to \(ChatSend.maxClientMsgIdBytes) bytes")
        }
        guard
            bytes.allSatisfy({ byte in
                (UInt8(ascii: "A")...UInt8(ascii: "Z")).contains(byte) || (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(byte)
                    || (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte)
                    || byte == UInt8(ascii: ".") || byte == UInt8(ascii: "_") || byte == UInt8(ascii: ":") || byte == UInt8(ascii: "-")
            })
        else {
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
        Migration(
            domain: "chat", version: 1,
            sql: """
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
                """)
    ]
}
