import Bus
import Foundation

/// The bounds of one text field a client sends: its size in UTF-8 bytes and in characters,
/// and the characters it may not hold.
///
/// Characters are Swift `Character`s (grapheme clusters), which have no size limit of their
/// own: `"e"` followed by 5,000 combining accents is one character. So every field is bounded
/// in bytes too, and the bytes are checked first, before anything costs more than the
/// length of the string (counting characters, trimming, lower-casing, matching).
///
/// Refused everywhere: C0 controls (U+0000–U+001F, NUL included), DEL (U+007F), C1 controls
/// (U+0080–U+009F) and the bidirectional formatting characters (U+061C, U+200E, U+200F,
/// U+202A–U+202E, U+2066–U+2069), which can make text display as something else.
/// Single-line fields also refuse the line and paragraph separators U+2028 and U+2029;
/// multi-line fields (a bio, a review) keep line feed, tab, and carriage return before a
/// line feed.
public struct TextRule: Sendable {
    /// Whether a field is one line (names, emails, URLs) or free text with line breaks.
    public enum Lines: Sendable {
        /// No line break at all.
        case single
        /// Line feed, carriage return + line feed and tab allowed.
        case multiple
    }

    /// The bytes a field may take per character of its character limit, unless it says otherwise:
    /// the longest UTF-8 encoding of one scalar.
    public static let bytesPerCharacter = 4

    /// The field named in a refusal.
    public let field: String
    /// At most this many characters.
    public let maxCharacters: Int
    /// At most this many UTF-8 bytes.
    public let maxBytes: Int
    /// One line or several.
    public let lines: Lines

    /// A rule for `field`: at most `maxCharacters` characters and `maxBytes` bytes
    /// (default `bytesPerCharacter` per character).
    public init(_ field: String, maxCharacters: Int, maxBytes: Int? = nil, lines: Lines = .single) {
        self.field = field
        self.maxCharacters = maxCharacters
        self.maxBytes = maxBytes ?? maxCharacters * Self.bytesPerCharacter
        self.lines = lines
    }

    /// The refusal of a string with a character this rule does not allow.
    public var forbiddenCharacterMessage: String {
        switch lines {
        case .single: "must be one line without control or bidirectional formatting characters"
        case .multiple: "must not contain control or bidirectional formatting characters other than line breaks and tabs"
        }
    }

    /// Checks the size in bytes, then the characters: the cheap checks, whose work is bounded
    /// by the byte limit. `invalid_argument` naming the field.
    public func checkBytesAndCharacters(_ value: String) throws(ServiceError) {
        guard value.utf8.count <= maxBytes else { throw .invalid(field, "must be at most \(maxBytes) bytes") }
        guard !Self.hasForbiddenScalar(value, lines: lines) else { throw .invalid(field, forbiddenCharacterMessage) }
    }

    /// Checks the bytes and characters, then counts the characters.
    public func check(_ value: String) throws(ServiceError) {
        try checkBytesAndCharacters(value)
        guard value.count <= maxCharacters else { throw .invalid(field, "must be at most \(maxCharacters) characters") }
    }

    /// `check`, when there is a value.
    public func check(_ value: String?) throws(ServiceError) {
        if let value { try check(value) }
    }

    /// `value` without surrounding white space, line breaks and invisible characters, checked:
    /// the bytes of the value as sent first (so a huge value is refused before it is trimmed),
    /// then the trimmed value. A name of invisible characters only trims to nothing.
    public func trimmed(_ value: String) throws(ServiceError) -> String {
        guard value.utf8.count <= maxBytes else { throw .invalid(field, "must be at most \(maxBytes) bytes") }
        let trimmed = Self.trimmingInvisible(value)
        try check(trimmed)
        return trimmed
    }

    /// The characters that show nothing by themselves: Unicode's default-ignorable code points
    /// (zero-width spaces and joiners, the soft hyphen, the word joiner and invisible
    /// operators, the byte order mark, Hangul and Khmer fillers, every variation selector,
    /// tag characters, shorthand format controls, and the unassigned code points reserved as
    /// such), every other format character (Egyptian hieroglyph joiners, interlinear
    /// annotation marks), and the braille blank; but not the bidirectional formatting
    /// characters, which are refused anyway, not trimmed. Beside white space, a name of these
    /// only looks empty, and one inside a word makes it look like another word.
    public static func isInvisible(_ scalar: Unicode.Scalar) -> Bool {
        switch scalar.value {
        case 0x061C, 0x200E, 0x200F, 0x202A...0x202E, 0x2066...0x2069: return false
        case 0x2800: return true
        default: return scalar.properties.isDefaultIgnorableCodePoint || scalar.properties.generalCategory == .format
        }
    }

    /// White space and line breaks as Foundation's `.whitespacesAndNewlines` has them: the
    /// space, line and paragraph separators, tab to carriage return, and next line.
    public static func isBlank(_ scalar: Unicode.Scalar) -> Bool {
        switch scalar.value {
        case 0x09...0x0D, 0x85: return true
        default:
            switch scalar.properties.generalCategory {
            case .spaceSeparator, .lineSeparator, .paragraphSeparator: return true
            default: return false
            }
        }
    }

    /// `value` without white space, line breaks and invisible characters around it, scalar
    /// by scalar.
    public static func trimmingInvisible(_ value: String) -> String {
        let scalars = value.unicodeScalars
        func kept(_ scalar: Unicode.Scalar) -> Bool { !isBlank(scalar) && !isInvisible(scalar) }
        guard let first = scalars.firstIndex(where: kept), let last = scalars.lastIndex(where: kept) else { return "" }
        return String(scalars[first...last])
    }

    /// Whether `value` holds a scalar a field of `lines` may not hold.
    public static func hasForbiddenScalar(_ value: String, lines: Lines) -> Bool {
        var previous: Unicode.Scalar = " "
        for scalar in value.unicodeScalars {
            defer { previous = scalar }
            if previous == "\r" && scalar != "\n" && lines == .multiple { return true }  // a carriage return alone
            switch scalar.value {
            case 0x0A, 0x09, 0x0D: if lines == .single { return true }
            case 0x00...0x1F, 0x7F...0x9F: return true
            case 0x061C, 0x200E, 0x200F, 0x202A...0x202E, 0x2066...0x2069: return true
            case 0x2028, 0x2029: if lines == .single { return true }
            default: continue
            }
        }
        return lines == .multiple && previous == "\r"
    }
}
