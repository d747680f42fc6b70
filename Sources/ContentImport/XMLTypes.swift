/// A place in an XML text: a line and a column, both counted from 1.
///
/// Lines end at a line feed, a carriage return + line feed, or a carriage return alone.
/// Columns count characters as Unicode scalars (a tab is one, and so is `é` whether it takes
/// two bytes or one), which is what most editors show for text without combining marks.
public struct XMLPosition: Sendable, Hashable, Comparable, CustomStringConvertible {
    /// The line, from 1.
    public let line: Int
    /// The character within the line, from 1.
    public let column: Int

    public init(line: Int, column: Int) {
        self.line = line
        self.column = column
    }

    public static func < (a: XMLPosition, b: XMLPosition) -> Bool {
        (a.line, a.column) < (b.line, b.column)
    }

    /// `line 3, column 7`.
    public var description: String { "line \(line), column \(column)" }
}

/// The bounds an `XMLReader` keeps to; every one is in UTF-8 bytes or a count.
///
/// Only the document's size has no default: the caller knows what it expects to read.
public struct XMLLimits: Sendable, Equatable {
    /// The whole document, checked before anything is read.
    public var maxBytes: Int
    /// Open elements at once; the root is at depth 1.
    public var maxDepth: Int
    /// Attributes on one element (namespace declarations included).
    public var maxAttributes: Int
    /// An element's or attribute's name, and an entity reference's.
    public var maxNameBytes: Int
    /// One attribute's value, after references are replaced.
    public var maxAttributeValueBytes: Int
    /// One text node (the character data between two tags, CDATA sections included), after
    /// references are replaced.
    public var maxTextBytes: Int

    public init(
        maxBytes: Int, maxDepth: Int = 32, maxAttributes: Int = 32, maxNameBytes: Int = 256,
        maxAttributeValueBytes: Int = 16_384, maxTextBytes: Int = 262_144
    ) {
        self.maxBytes = maxBytes
        self.maxDepth = maxDepth
        self.maxAttributes = maxAttributes
        self.maxNameBytes = maxNameBytes
        self.maxAttributeValueBytes = maxAttributeValueBytes
        self.maxTextBytes = maxTextBytes
    }
}

/// One attribute of a start tag, its value with references replaced and white space characters
/// (tab, line feed, carriage return) turned into spaces, as XML 1.0 says.
public struct XMLAttribute: Sendable, Hashable {
    /// The name as written, prefix included (`xml:lang`).
    public let name: String
    public let value: String

    public init(name: String, value: String) {
        self.name = name
        self.value = value
    }
}

extension Array where Element == XMLAttribute {
    /// The value of the attribute called `name`, if the element has it.
    public subscript(_ name: String) -> String? {
        first { $0.name == name }?.value
    }
}

/// What an `XMLReader` reports, in document order.
public enum XMLEvent: Sendable, Hashable {
    /// A start tag (or an empty-element tag `<a/>`, which is followed by its `.end`), at its `<`.
    case start(name: String, attributes: [XMLAttribute], position: XMLPosition)
    /// An end tag, at its `</`; for an empty-element tag, at its `/>`.
    case end(name: String, position: XMLPosition)
    /// Character data between two tags, white space included, at its first character.
    /// References are replaced, CDATA sections are merged in, comments and processing
    /// instructions left out, and line breaks are line feeds.
    case text(String, position: XMLPosition)
}

/// Why an XML text is refused, and where.
///
/// Messages quote names (bounded by `XMLLimits.maxNameBytes`), never text or values.
public struct XMLError: Error, Sendable, Hashable, CustomStringConvertible {
    /// What is wrong.
    public enum Reason: Sendable, Hashable {
        /// The document is larger than the limit; reported at line 1, column 1 before reading.
        case tooLarge(bytes: Int, limit: Int)
        /// An element opens deeper than the limit.
        case tooDeep(limit: Int)
        /// An element has more attributes than the limit.
        case tooManyAttributes(limit: Int)
        /// A name (element, attribute, entity) is longer than the limit in bytes.
        case nameTooLong(limit: Int)
        /// An attribute value is longer than the limit in bytes.
        case attributeValueTooLong(limit: Int)
        /// A text node is longer than the limit in bytes.
        case textTooLong(limit: Int)
        /// A document type declaration or any other markup declaration (`<!DOCTYPE`,
        /// `<!ENTITY`, `<!ELEMENT`…): refused, never read, so no entity is ever defined or expanded.
        case declarationRefused
        /// `&name;` where name is none of `lt gt amp apos quot`.
        case undefinedEntity(String)
        /// `&#…;` or `&#x…;` that is malformed or names a character XML does not allow.
        case invalidCharacterReference
        /// Bytes that are not UTF-8 (overlong forms, surrogates, above U+10FFFF, cut short).
        case invalidUTF8
        /// A character XML 1.0 does not allow: a control character other than tab, line feed
        /// and carriage return, or U+FFFE, U+FFFF.
        case forbiddenCharacter(UInt32)
        /// An end tag that does not close the element open there.
        case mismatchedEndTag(expected: String, found: String, opened: XMLPosition)
        /// The text ends while an element is open (reported where it opened).
        case unclosedElement(String)
        /// An end tag with no element open.
        case unexpectedEndTag(String)
        /// An element with two attributes of one name.
        case duplicateAttribute(String)
        /// Character data before or after the root element.
        case textOutsideRoot
        /// The text has no element at all.
        case noRootElement
        /// A second element after the root closed.
        case secondRootElement(String)
        /// The XML declaration names an encoding other than UTF-8, or the text starts with a
        /// UTF-16 byte order mark.
        case unsupportedEncoding(String)
        /// Any other fault of XML syntax, described.
        case syntax(String)
    }

    public let reason: Reason
    public let position: XMLPosition

    public init(_ reason: Reason, at position: XMLPosition) {
        self.reason = reason
        self.position = position
    }

    public var line: Int { position.line }
    public var column: Int { position.column }

    /// What is wrong, without the position.
    public var message: String {
        switch reason {
        case .tooLarge(let bytes, let limit): "the document is \(bytes) bytes, over the limit of \(limit)"
        case .tooDeep(let limit): "elements nested deeper than \(limit) levels"
        case .tooManyAttributes(let limit): "more than \(limit) attributes on one element"
        case .nameTooLong(let limit): "a name longer than \(limit) bytes"
        case .attributeValueTooLong(let limit): "an attribute value longer than \(limit) bytes"
        case .textTooLong(let limit): "a text longer than \(limit) bytes"
        case .declarationRefused: "document type and entity declarations (<!DOCTYPE, <!ENTITY) are refused"
        case .undefinedEntity(let name): "undefined entity &\(name); (only &lt; &gt; &amp; &apos; &quot; and character references are read)"
        case .invalidCharacterReference: "a character reference that is malformed or names a character XML does not allow"
        case .invalidUTF8: "bytes that are not UTF-8"
        case .forbiddenCharacter(let scalar): "character U+\(hex(scalar)) is not allowed in XML"
        case .mismatchedEndTag(let expected, let found, let opened): "end tag </\(found)> does not close <\(expected)> (opened at \(opened))"
        case .unclosedElement(let name): "element <\(name)> is never closed"
        case .unexpectedEndTag(let name): "end tag </\(name)> with no element open"
        case .duplicateAttribute(let name): "attribute \(name) appears twice"
        case .textOutsideRoot: "text outside the root element"
        case .noRootElement: "no root element"
        case .secondRootElement(let name): "element <\(name)> after the root element closed (a document has one root)"
        case .unsupportedEncoding(let encoding): "encoding \(encoding) is not read: the text must be UTF-8"
        case .syntax(let what): what
        }
    }

    /// `line 3, column 7: attribute id appears twice`.
    public var description: String { "\(position): \(message)" }

    private func hex(_ value: UInt32) -> String {
        let digits = String(value, radix: 16, uppercase: true)
        return String(repeating: "0", count: max(0, 4 - digits.count)) + digits
    }
}
