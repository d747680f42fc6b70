import Foundation

/// A pull reader of XML 1.0 over UTF-8 bytes, bounded in size, depth and every name, value and
/// text, that refuses every markup declaration.
///
/// Written for files from outside (content imports, OpenStreetMap extracts): it never reads a
/// DTD, so no entity is ever defined, expanded or fetched (billion laughs, external entities),
/// and every fault is an `XMLError` with its line and column. `next()` gives one `XMLEvent` at
/// a time and nil after the root element has closed; after an error it throws that error again.
///
/// What it reads: elements and attributes (either quote), text, CDATA sections, the five
/// predefined entities and character references; comments and processing instructions are
/// skipped, and so is the XML declaration, whose encoding, if named, must be UTF-8. Names are
/// reported as written: ASCII letters, digits, `_ : - .` and any non-ASCII character, not
/// starting with a digit, `-` or `.`. Of namespaces, it follows default namespace
/// declarations (`xmlns="…"`): `namespace` is the one in scope. Prefixes are not resolved
/// (`a:b` is a name like any other).
///
/// It works on the bytes: one pass checks that the whole text is UTF-8 of allowed characters,
/// then names, values and texts become Strings once each, from the input's bytes directly when
/// they hold no reference or carriage return.
public struct XMLReader {
    /// The bounds this reader keeps to.
    public let limits: XMLLimits
    private let bytes: [UInt8]
    /// The next byte to read.
    private var offset = 0
    private var started = false
    private var rootSeen = false
    private var finished = false
    private var failure: XMLError?
    /// The open elements, the root first.
    private var open: [OpenElement] = []
    /// Where the `/>` of an empty-element tag whose `.start` was just given is: its `.end` comes next.
    private var pendingEnd: XMLPosition?
    private var lines = LineCounter()
    /// A text or attribute value being put together.
    private var value = ValueBuilder()
    /// The names of the attributes of the tag being read, for the duplicate check.
    private var attributeNames: [Range<Int>] = []
    /// The same, once there are many.
    private var attributeSet: Set<ArraySlice<UInt8>> = []

    /// An element whose end tag has not come yet.
    private struct OpenElement {
        let name: String
        let nameBytes: Range<Int>
        let position: XMLPosition
        let namespace: String?
    }

    /// A reader of `bytes`, which it does not look at before the first `next()`.
    public init(bytes: [UInt8], limits: XMLLimits) {
        self.bytes = bytes
        self.limits = limits
    }

    /// A reader of `bytes`, which it does not look at before the first `next()`.
    public init(bytes: Data, limits: XMLLimits) {
        self.init(bytes: [UInt8](bytes), limits: limits)
    }

    /// The default namespace (`xmlns="…"`) in scope at the innermost open element: after a
    /// `.start`, that element's; nil where none is declared (or `xmlns=""` undeclares it).
    public var namespace: String? { open.last?.namespace }

    /// Open elements now: after the root's `.start`, 1.
    public var depth: Int { open.count }

    /// The next event, or nil once the root element has closed and only comments, processing
    /// instructions and white space follow.
    public mutating func next() throws(XMLError) -> XMLEvent? {
        if let failure { throw failure }
        do throws(XMLError) {
            return try step()
        } catch {
            failure = error
            throw error
        }
    }

    private mutating func step() throws(XMLError) -> XMLEvent? {
        if !started {
            try begin()
            started = true
        }
        if let at = pendingEnd {
            pendingEnd = nil
            return .end(name: open.removeLast().name, position: at)
        }
        if finished { return nil }
        return open.isEmpty ? try stepOutsideRoot() : try stepInsideRoot()
    }

    // MARK: - The document's start

    /// Checks the size, the encoding (a UTF-16 byte order mark, the XML declaration's) and then
    /// every character of the text. The declaration is read before the characters are checked, so
    /// a file in Latin-1 is refused for its encoding rather than for its first byte above 0x7F.
    private mutating func begin() throws(XMLError) {
        guard bytes.count <= limits.maxBytes else {
            throw XMLError(.tooLarge(bytes: bytes.count, limit: limits.maxBytes), at: XMLPosition(line: 1, column: 1))
        }
        if bytes.starts(with: [0xFE, 0xFF]) || bytes.starts(with: [0xFF, 0xFE]) {
            throw XMLError(.unsupportedEncoding("UTF-16"), at: XMLPosition(line: 1, column: 1))
        }
        if bytes.starts(with: [0xEF, 0xBB, 0xBF]) {
            // A byte order mark is no character of the first line.
            offset = 3
            lines = LineCounter(offset: 3)
        }
        if starts(with: "<?xml"), offset + 5 < bytes.count, Self.isWhitespace(bytes[offset + 5]) {
            try readDeclaration()
        }
        if let (at, reason) = bytes.withUnsafeBufferPointer({ Self.firstForbiddenByte(in: $0) }) {
            throw XMLError(reason, at: position(at))
        }
    }

    /// Reads `<?xml version="1.0" encoding="UTF-8" standalone="yes"?>`: the version must be
    /// 1.x, and an encoding, if named, UTF-8.
    private mutating func readDeclaration() throws(XMLError) {
        let start = offset
        offset += 5
        var version: String?
        while true {
            let spaced = skipWhitespace()
            if starts(with: "?>") {
                offset += 2
                break
            }
            guard offset < bytes.count else { throw syntax("the XML declaration is never closed", at: start) }
            guard spaced else { throw syntax("expected white space or '?>' in the XML declaration", at: offset) }
            let name = try readName()
            skipWhitespace()
            guard offset < bytes.count, bytes[offset] == UInt8(ascii: "=") else {
                throw syntax("expected '=' in the XML declaration", at: offset)
            }
            offset += 1
            skipWhitespace()
            guard offset < bytes.count, bytes[offset] == UInt8(ascii: "\"") || bytes[offset] == UInt8(ascii: "'") else {
                throw syntax("expected a quoted value in the XML declaration", at: offset)
            }
            let quote = bytes[offset]
            let valueStart = offset + 1
            var end = valueStart
            while end < bytes.count, bytes[end] != quote, end - valueStart < 64 { end += 1 }
            guard end < bytes.count, bytes[end] == quote else { throw syntax("a value of the XML declaration is never closed or too long", at: offset) }
            let text = String(decoding: bytes[valueStart..<end], as: UTF8.self)
            offset = end + 1
            switch string(name) {
            case "version": version = text
            case "encoding":
                guard ["UTF-8", "UTF8"].contains(text.uppercased()) else {
                    // The name is quoted only if it looks like one: the text is not checked yet.
                    let plain = !text.isEmpty && text.utf8.allSatisfy { Self.isNameCharacter($0) && $0 < 0x80 }
                    throw XMLError(.unsupportedEncoding(plain ? text : "(not a name)"), at: position(valueStart))
                }
            case "standalone": break
            default: throw syntax("unknown item \(string(name)) in the XML declaration", at: name.lowerBound)
            }
        }
        guard let version, version.hasPrefix("1.") else { throw syntax("the XML declaration must say version=\"1.0\"", at: start) }
    }

    // MARK: - Before and after the root

    /// Skips white space, comments and processing instructions before or after the root; gives
    /// the root's `.start`, or nil at the end.
    private mutating func stepOutsideRoot() throws(XMLError) -> XMLEvent? {
        while true {
            skipWhitespace()
            guard offset < bytes.count else {
                guard rootSeen else { throw XMLError(.noRootElement, at: position(offset)) }
                finished = true
                return nil
            }
            guard bytes[offset] == UInt8(ascii: "<") else { throw XMLError(.textOutsideRoot, at: position(offset)) }
            if starts(with: "<!--") {
                try skipComment()
            } else if starts(with: "<?") {
                try skipProcessingInstruction()
            } else if starts(with: "<![CDATA[") {
                throw XMLError(.textOutsideRoot, at: position(offset))
            } else if starts(with: "<!") {
                throw XMLError(.declarationRefused, at: position(offset))
            } else if starts(with: "</") {
                let at = offset
                offset += 2
                throw XMLError(.unexpectedEndTag(string(try readName())), at: position(at))
            } else if rootSeen {
                let at = offset
                offset += 1
                throw XMLError(.secondRootElement(string(try readName())), at: position(at))
            } else {
                rootSeen = true
                return try readStartTag()
            }
        }
    }

    // MARK: - Inside the root

    /// Gives the text up to the next tag, if there is any, or else the tag's event. Comments,
    /// processing instructions and CDATA sections do not end a text.
    private mutating func stepInsideRoot() throws(XMLError) -> XMLEvent? {
        var textStart: Int?
        value.reset()
        while true {
            guard offset < bytes.count else {
                let innermost = open[open.count - 1]
                throw XMLError(.unclosedElement(innermost.name), at: innermost.position)
            }
            if bytes[offset] == UInt8(ascii: "<") {
                // The byte after `<` tells markup that goes on the text from a tag that ends it.
                let next = offset + 1 < bytes.count ? bytes[offset + 1] : 0
                if next == UInt8(ascii: "!") {
                    if starts(with: "<!--") {
                        try skipComment()
                    } else if starts(with: "<![CDATA[") {
                        if textStart == nil { textStart = offset }
                        try readCDATA(textStart: textStart ?? offset)
                    } else {
                        throw XMLError(.declarationRefused, at: position(offset))
                    }
                    continue
                }
                if next == UInt8(ascii: "?") {
                    try skipProcessingInstruction()
                    continue
                }
                if let textStart {
                    return .text(value.string(bytes), position: position(textStart))
                }
                return next == UInt8(ascii: "/") ? try readEndTag() : try readStartTag()
            }
            if textStart == nil { textStart = offset }
            try readTextRun(textStart: textStart ?? offset)
        }
    }

    /// Reads character data from `offset` to the next `<` (or the end), replacing references and
    /// line breaks, into `value`.
    private mutating func readTextRun(textStart: Int) throws(XMLError) {
        let limit = limits.maxTextBytes
        while offset < bytes.count {
            let stop = bytes.withUnsafeBufferPointer { Self.endOfTextRun(in: $0, from: offset) }
            if stop > offset {
                guard value.appendRaw(offset..<stop, of: bytes, limit: limit) else { throw XMLError(.textTooLong(limit: limit), at: position(textStart)) }
                offset = stop
            }
            guard stop < bytes.count else { return }
            switch bytes[stop] {
            case UInt8(ascii: "<"):
                return
            case UInt8(ascii: "&"):
                try readReference(limit: limit, tooLong: .textTooLong(limit: limit), start: textStart)
            case UInt8(ascii: "\r"):
                try appendLineBreak(limit: limit, tooLong: .textTooLong(limit: limit), start: textStart)
            default:
                throw syntax("']]>' is not allowed in text", at: stop)
            }
        }
    }

    /// Reads `<![CDATA[…]]>` at `offset` into `value`.
    private mutating func readCDATA(textStart: Int) throws(XMLError) {
        let start = offset
        let limit = limits.maxTextBytes
        offset += 9
        var run = offset
        while offset < bytes.count {
            let byte = bytes[offset]
            if byte == UInt8(ascii: "]"), offset + 2 < bytes.count, bytes[offset + 1] == UInt8(ascii: "]"), bytes[offset + 2] == UInt8(ascii: ">") {
                guard value.appendRaw(run..<offset, of: bytes, limit: limit) else { throw XMLError(.textTooLong(limit: limit), at: position(textStart)) }
                offset += 3
                return
            }
            if byte == UInt8(ascii: "\r") {
                guard value.appendRaw(run..<offset, of: bytes, limit: limit) else { throw XMLError(.textTooLong(limit: limit), at: position(textStart)) }
                try appendLineBreak(limit: limit, tooLong: .textTooLong(limit: limit), start: textStart)
                run = offset
                continue
            }
            offset += 1
        }
        throw syntax("a CDATA section is never closed", at: start)
    }

    /// At a carriage return: a carriage return + line feed or a carriage return alone is one
    /// line feed (XML 1.0's end-of-line handling).
    private mutating func appendLineBreak(limit: Int, tooLong: XMLError.Reason, start: Int) throws(XMLError) {
        offset += 1
        if offset < bytes.count, bytes[offset] == UInt8(ascii: "\n") { return }  // the line feed is kept
        guard value.append(UInt8(ascii: "\n"), of: bytes, limit: limit) else { throw XMLError(tooLong, at: position(start)) }
    }

    // MARK: - Tags

    /// Reads a start tag or an empty-element tag at `offset` (its `<`).
    private mutating func readStartTag() throws(XMLError) -> XMLEvent {
        let start = offset
        offset += 1
        let nameBytes = try readName()
        guard open.count < limits.maxDepth else { throw XMLError(.tooDeep(limit: limits.maxDepth), at: position(start)) }
        let name = string(nameBytes)
        var attributes: [XMLAttribute] = []
        var namespace = open.last?.namespace
        if !attributeNames.isEmpty { attributeNames.removeAll(keepingCapacity: true) }
        if !attributeSet.isEmpty { attributeSet.removeAll() }
        var emptyElementEnd: Int?
        while true {
            let spaced = skipWhitespace()
            guard offset < bytes.count else { throw syntax("the text ends inside the tag <\(name)>", at: start) }
            if bytes[offset] == UInt8(ascii: ">") {
                offset += 1
                break
            }
            if bytes[offset] == UInt8(ascii: "/") {
                guard offset + 1 < bytes.count, bytes[offset + 1] == UInt8(ascii: ">") else { throw syntax("expected '>' after '/' in the tag <\(name)>", at: offset) }
                emptyElementEnd = offset
                offset += 2
                break
            }
            guard spaced else { throw syntax("expected white space, '>' or '/>' in the tag <\(name)>", at: offset) }
            guard attributes.count < limits.maxAttributes else { throw XMLError(.tooManyAttributes(limit: limits.maxAttributes), at: position(start)) }
            let attributeStart = offset
            let attributeName = try readName()
            guard noteAttribute(attributeName) else { throw XMLError(.duplicateAttribute(string(attributeName)), at: position(attributeStart)) }
            skipWhitespace()
            guard offset < bytes.count, bytes[offset] == UInt8(ascii: "=") else {
                throw syntax("expected '=' after the attribute \(string(attributeName))", at: offset)
            }
            offset += 1
            skipWhitespace()
            let text = try readAttributeValue()
            if attributeName.count == 5, starts(with: "xmlns", at: attributeName.lowerBound) {
                namespace = text.isEmpty ? nil : text
            }
            attributes.append(XMLAttribute(name: string(attributeName), value: text))
        }
        let at = position(start)
        open.append(OpenElement(name: name, nameBytes: nameBytes, position: at, namespace: namespace))
        if let emptyElementEnd { pendingEnd = position(emptyElementEnd) }
        return .start(name: name, attributes: attributes, position: at)
    }

    /// Notes an attribute of the tag being read; false if it has one of that name already. Few
    /// attributes are compared one by one; past 16 they go into a set, so an element with
    /// thousands of attributes (where the limit allows them) costs no quadratic time.
    private mutating func noteAttribute(_ name: Range<Int>) -> Bool {
        if attributeNames.count < 16 {
            if attributeNames.contains(where: { bytes[$0] == bytes[name] }) { return false }
            attributeNames.append(name)
            return true
        }
        if attributeSet.isEmpty { attributeSet = Set(attributeNames.map { bytes[$0] }) }
        return attributeSet.insert(bytes[name]).inserted
    }

    /// Reads a quoted attribute value at `offset`, replacing references and turning tab, line feed
    /// and carriage return (a carriage return + line feed is one) into spaces.
    private mutating func readAttributeValue() throws(XMLError) -> String {
        let start = offset
        guard offset < bytes.count, bytes[offset] == UInt8(ascii: "\"") || bytes[offset] == UInt8(ascii: "'") else {
            throw syntax("attribute values must be in quotes", at: offset)
        }
        let quote = bytes[offset]
        let limit = limits.maxAttributeValueBytes
        let tooLong = XMLError.Reason.attributeValueTooLong(limit: limit)
        offset += 1
        value.reset()
        while true {
            let stop = bytes.withUnsafeBufferPointer { Self.endOfAttributeRun(in: $0, from: offset, quote: quote) }
            if stop > offset {
                guard value.appendRaw(offset..<stop, of: bytes, limit: limit) else { throw XMLError(tooLong, at: position(start)) }
                offset = stop
            }
            guard stop < bytes.count else { throw syntax("an attribute value is never closed", at: start) }
            switch bytes[stop] {
            case quote:
                offset += 1
                return value.string(bytes)
            case UInt8(ascii: "<"):
                throw syntax("'<' is not allowed in an attribute value (write &lt;)", at: stop)
            case UInt8(ascii: "&"):
                try readReference(limit: limit, tooLong: tooLong, start: start)
            default:
                // Tab, line feed or carriage return: one space.
                if bytes[stop] == UInt8(ascii: "\r"), stop + 1 < bytes.count, bytes[stop + 1] == UInt8(ascii: "\n") { offset += 1 }
                offset += 1
                guard value.append(UInt8(ascii: " "), of: bytes, limit: limit) else { throw XMLError(tooLong, at: position(start)) }
            }
        }
    }

    /// Reads an end tag at `offset` (its `</`) and closes the innermost element.
    private mutating func readEndTag() throws(XMLError) -> XMLEvent {
        let start = offset
        offset += 2
        let name = try readName()
        skipWhitespace()
        guard offset < bytes.count, bytes[offset] == UInt8(ascii: ">") else { throw syntax("expected '>' to end the end tag </\(string(name))>", at: offset) }
        offset += 1
        let innermost = open[open.count - 1]
        guard bytes[name] == bytes[innermost.nameBytes] else {
            throw XMLError(.mismatchedEndTag(expected: innermost.name, found: string(name), opened: innermost.position), at: position(start))
        }
        open.removeLast()
        return .end(name: innermost.name, position: position(start))
    }

    // MARK: - References, comments, processing instructions

    /// Reads `&name;`, `&#N;` or `&#xH;` at `offset` and appends the character it stands for.
    private mutating func readReference(limit: Int, tooLong: XMLError.Reason, start: Int) throws(XMLError) {
        let at = offset
        offset += 1
        if offset < bytes.count, bytes[offset] == UInt8(ascii: "#") {
            offset += 1
            let hex = offset < bytes.count && bytes[offset] == UInt8(ascii: "x")
            if hex { offset += 1 }
            var scalar: UInt32 = 0
            var digits = 0
            while offset < bytes.count, let digit = Self.digit(bytes[offset], hex: hex) {
                // Past U+10FFFF it stays invalid: stop growing the number, keep counting digits.
                if scalar <= 0x10FFFF { scalar = scalar * (hex ? 16 : 10) + digit }
                digits += 1
                offset += 1
                guard digits <= 16 else { throw XMLError(.invalidCharacterReference, at: position(at)) }
            }
            guard digits > 0, offset < bytes.count, bytes[offset] == UInt8(ascii: ";"), Self.isXMLCharacter(scalar),
                let character = Unicode.Scalar(scalar)
            else {
                throw XMLError(.invalidCharacterReference, at: position(at))
            }
            offset += 1
            var ok = true
            for byte in character.utf8 { ok = ok && value.append(byte, of: bytes, limit: limit) }
            guard ok else { throw XMLError(tooLong, at: position(start)) }
            return
        }
        guard offset < bytes.count, Self.isNameStart(bytes[offset]) else {
            throw syntax("'&' must start a reference such as &amp; or &#38;", at: at)
        }
        let name = try readName()
        guard offset < bytes.count, bytes[offset] == UInt8(ascii: ";") else { throw syntax("a reference must end with ';'", at: at) }
        offset += 1
        let replacement: UInt8
        switch string(name) {
        case "lt": replacement = UInt8(ascii: "<")
        case "gt": replacement = UInt8(ascii: ">")
        case "amp": replacement = UInt8(ascii: "&")
        case "apos": replacement = UInt8(ascii: "'")
        case "quot": replacement = UInt8(ascii: "\"")
        default: throw XMLError(.undefinedEntity(string(name)), at: position(at))
        }
        guard value.append(replacement, of: bytes, limit: limit) else { throw XMLError(tooLong, at: position(start)) }
    }

    /// Skips `<!-- … -->` at `offset`; `--` may not appear inside.
    private mutating func skipComment() throws(XMLError) {
        let start = offset
        var index = offset + 4
        while index + 1 < bytes.count {
            if bytes[index] == UInt8(ascii: "-"), bytes[index + 1] == UInt8(ascii: "-") {
                guard index + 2 < bytes.count, bytes[index + 2] == UInt8(ascii: ">") else {
                    throw syntax("'--' is not allowed inside a comment", at: index)
                }
                offset = index + 3
                return
            }
            index += 1
        }
        throw syntax("a comment is never closed", at: start)
    }

    /// Skips `<?target …?>` at `offset`. Its target may not be `xml` in any case: the XML
    /// declaration comes only first.
    private mutating func skipProcessingInstruction() throws(XMLError) {
        let start = offset
        offset += 2
        guard offset < bytes.count, Self.isNameStart(bytes[offset]) else { throw syntax("expected a processing instruction's target after '<?'", at: offset) }
        let target = try readName()
        if string(target).lowercased() == "xml" { throw syntax("the XML declaration may appear only at the very start", at: start) }
        var index = offset
        while index + 1 < bytes.count {
            if bytes[index] == UInt8(ascii: "?"), bytes[index + 1] == UInt8(ascii: ">") {
                offset = index + 2
                return
            }
            index += 1
        }
        throw syntax("a processing instruction is never closed", at: start)
    }

    // MARK: - Names and small helpers

    /// Reads a name at `offset`, bounded by `maxNameBytes`.
    private mutating func readName() throws(XMLError) -> Range<Int> {
        let start = offset
        guard offset < bytes.count, Self.isNameStart(bytes[offset]) else { throw syntax("expected a name", at: offset) }
        offset += 1
        while offset < bytes.count, Self.isNameCharacter(bytes[offset]) {
            offset += 1
            guard offset - start <= limits.maxNameBytes else { throw XMLError(.nameTooLong(limit: limits.maxNameBytes), at: position(start)) }
        }
        return start..<offset
    }

    /// Skips white space at `offset`; true if there was any.
    @discardableResult
    private mutating func skipWhitespace() -> Bool {
        let start = offset
        while offset < bytes.count, Self.isWhitespace(bytes[offset]) { offset += 1 }
        return offset > start
    }

    private func starts(with text: StaticString, at index: Int? = nil) -> Bool {
        let from = index ?? offset
        let count = text.utf8CodeUnitCount
        guard from + count <= bytes.count else { return false }
        let pointer = text.utf8Start
        for i in 0..<count where bytes[from + i] != pointer[i] { return false }
        return true
    }

    private func string(_ range: Range<Int>) -> String {
        String(decoding: bytes[range], as: UTF8.self)
    }

    private mutating func syntax(_ what: String, at index: Int) -> XMLError {
        XMLError(.syntax(what), at: position(index))
    }

    /// The line and column of the byte at `index`. Positions are asked for in document order,
    /// so counting goes on from the last one; an earlier one (only ever for an error) counts again.
    private mutating func position(_ index: Int) -> XMLPosition {
        if index < lines.offset { lines = LineCounter(offset: bytes.starts(with: [0xEF, 0xBB, 0xBF]) ? 3 : 0) }
        bytes.withUnsafeBufferPointer { lines.advance(to: index, in: $0) }
        return XMLPosition(line: lines.line, column: lines.column)
    }

    static func isWhitespace(_ byte: UInt8) -> Bool {
        byte == 0x20 || byte == 0x0A || byte == 0x09 || byte == 0x0D
    }

    static func isNameStart(_ byte: UInt8) -> Bool {
        (byte | 0x20) >= UInt8(ascii: "a") && (byte | 0x20) <= UInt8(ascii: "z") || byte == UInt8(ascii: "_") || byte == UInt8(ascii: ":") || byte >= 0x80
    }

    static func isNameCharacter(_ byte: UInt8) -> Bool {
        isNameStart(byte) || (byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "9")) || byte == UInt8(ascii: "-") || byte == UInt8(ascii: ".")
    }

    static func digit(_ byte: UInt8, hex: Bool) -> UInt32? {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): UInt32(byte - UInt8(ascii: "0"))
        case UInt8(ascii: "a")...UInt8(ascii: "f") where hex: UInt32(byte - UInt8(ascii: "a") + 10)
        case UInt8(ascii: "A")...UInt8(ascii: "F") where hex: UInt32(byte - UInt8(ascii: "A") + 10)
        default: nil
        }
    }

    /// XML 1.0's `Char`: tab, line feed, carriage return, and U+0020 up, less surrogates, U+FFFE and U+FFFF.
    static func isXMLCharacter(_ scalar: UInt32) -> Bool {
        switch scalar {
        case 0x09, 0x0A, 0x0D, 0x20...0xD7FF, 0xE000...0xFFFD, 0x10000...0x10FFFF: true
        default: false
        }
    }

    // MARK: - Byte loops

    /// The first byte from `start` that ends a run of plain text: `<`, `&`, a carriage return, or
    /// the `]` of a `]]>`; `bytes.count` if none.
    static func endOfTextRun(in bytes: UnsafeBufferPointer<UInt8>, from start: Int) -> Int {
        var index = start
        let count = bytes.count
        guard let base = bytes.baseAddress else { return count }
        let raw = UnsafeRawPointer(base)
        while index < count {
            // Eight bytes none of which is `<`, `&`, a carriage return or `]` are passed at once.
            if index + 8 <= count {
                let word = raw.loadUnaligned(fromByteOffset: index, as: UInt64.self)
                if !hasByte(UInt8(ascii: "<"), in: word), !hasByte(UInt8(ascii: "&"), in: word),
                    !hasByte(UInt8(ascii: "\r"), in: word), !hasByte(UInt8(ascii: "]"), in: word)
                {
                    index += 8
                    continue
                }
            }
            let byte = bytes[index]
            if byte == UInt8(ascii: "<") || byte == UInt8(ascii: "&") || byte == UInt8(ascii: "\r") { return index }
            if byte == UInt8(ascii: "]"), index + 2 < count, bytes[index + 1] == UInt8(ascii: "]"), bytes[index + 2] == UInt8(ascii: ">") { return index }
            index += 1
        }
        return count
    }

    /// The first byte from `start` that ends a run of plain attribute value: the quote, `<`, `&`,
    /// tab, line feed or carriage return; `bytes.count` if none.
    static func endOfAttributeRun(in bytes: UnsafeBufferPointer<UInt8>, from start: Int, quote: UInt8) -> Int {
        var index = start
        let count = bytes.count
        while index < count {
            let byte = bytes[index]
            if byte == quote || byte == UInt8(ascii: "<") || byte == UInt8(ascii: "&") || byte < 0x20 { return index }
            index += 1
        }
        return count
    }

    /// The first byte that is not UTF-8 or starts a character XML 1.0 does not allow, and why; nil if
    /// there is none. One pass; runs of ASCII go eight bytes at a time.
    static func firstForbiddenByte(in bytes: UnsafeBufferPointer<UInt8>) -> (Int, XMLError.Reason)? {
        var index = 0
        let count = bytes.count
        guard let base = bytes.baseAddress else { return nil }
        let raw = UnsafeRawPointer(base)
        while index < count {
            // Eight ASCII bytes, none below 0x20, pass at once.
            if index + 8 <= count {
                let word = raw.loadUnaligned(fromByteOffset: index, as: UInt64.self)
                let high: UInt64 = 0x8080_8080_8080_8080
                let belowSpace = (word &- 0x2020_2020_2020_2020) & ~word & high
                if word & high == 0, belowSpace == 0 {
                    index += 8
                    continue
                }
            }
            let byte = bytes[index]
            if byte < 0x80 {
                if byte < 0x20, byte != 0x09, byte != 0x0A, byte != 0x0D { return (index, .forbiddenCharacter(UInt32(byte))) }
                index += 1
                continue
            }
            let length: Int
            var scalar: UInt32
            let smallest: UInt32
            switch byte {
            case 0xC0...0xDF: (length, scalar, smallest) = (2, UInt32(byte & 0x1F), 0x80)
            case 0xE0...0xEF: (length, scalar, smallest) = (3, UInt32(byte & 0x0F), 0x800)
            case 0xF0...0xF7: (length, scalar, smallest) = (4, UInt32(byte & 0x07), 0x10000)
            default: return (index, .invalidUTF8)
            }
            guard index + length <= count else { return (index, .invalidUTF8) }
            for next in 1..<length {
                let continuation = bytes[index + next]
                guard continuation & 0xC0 == 0x80 else { return (index, .invalidUTF8) }
                scalar = scalar << 6 | UInt32(continuation & 0x3F)
            }
            guard scalar >= smallest, scalar <= 0x10FFFF, !(0xD800...0xDFFF).contains(scalar) else { return (index, .invalidUTF8) }
            if scalar == 0xFFFE || scalar == 0xFFFF { return (index, .forbiddenCharacter(scalar)) }
            index += length
        }
        return nil
    }
}

/// Counts lines and columns up to a byte, going on from where it last stopped.
private struct LineCounter {
    /// The byte whose position `line` and `column` are.
    var offset = 0
    var line = 1
    var column = 1

    init(offset: Int = 0) { self.offset = offset }

    /// Moves to the byte at `target`: a line feed, or a carriage return not followed by one,
    /// starts a line; every byte that starts a UTF-8 character is a column.
    mutating func advance(to target: Int, in bytes: UnsafeBufferPointer<UInt8>) {
        var index = offset
        let end = min(target, bytes.count)
        guard let base = bytes.baseAddress else { return }
        let raw = UnsafeRawPointer(base)
        while index < end {
            // Eight ASCII bytes with no line feed or carriage return are eight columns.
            if index + 8 <= end {
                let word = raw.loadUnaligned(fromByteOffset: index, as: UInt64.self)
                if word & 0x8080_8080_8080_8080 == 0, !hasByte(0x0A, in: word), !hasByte(0x0D, in: word) {
                    column += 8
                    index += 8
                    continue
                }
            }
            let byte = bytes[index]
            if byte == 0x0A || (byte == 0x0D && (index + 1 >= bytes.count || bytes[index + 1] != 0x0A)) {
                line += 1
                column = 1
            } else if byte & 0xC0 != 0x80, byte != 0x0D {
                column += 1
            }
            index += 1
        }
        offset = max(offset, end)
    }

}

/// Whether one of the eight bytes of `word` is `byte` (below 0x80). Exact: the borrow that can
/// mark a byte above a zero one wrongly only happens when there is a zero byte below it.
@inline(__always)
private func hasByte(_ byte: UInt8, in word: UInt64) -> Bool {
    let x = word ^ (0x0101_0101_0101_0101 &* UInt64(byte))
    return (x &- 0x0101_0101_0101_0101) & ~x & 0x8080_8080_8080_8080 != 0
}

/// A text or attribute value being read: while it is one run of the input's bytes it stays a
/// range of them, and becomes a String straight from there; anything more goes through one
/// reused buffer.
private struct ValueBuilder {
    /// The value so far, while it is one run of the input.
    private var run: Range<Int>?
    /// The value so far, once it is more than one run.
    private var buffer: [UInt8] = []
    /// Bytes so far.
    private(set) var count = 0

    mutating func reset() {
        run = nil
        count = 0
        if !buffer.isEmpty { buffer.removeAll(keepingCapacity: true) }
    }

    /// Adds `bytes[range]`; false if that would pass `limit`.
    mutating func appendRaw(_ range: Range<Int>, of bytes: [UInt8], limit: Int) -> Bool {
        guard count + range.count <= limit else { return false }
        if count == 0 {
            run = range
        } else {
            moveToBuffer(bytes)
            buffer.append(contentsOf: bytes[range])
        }
        count += range.count
        return true
    }

    /// Adds one byte that is not the input's as it stands (a replaced reference, a line break
    /// made a line feed or a space); false if that would pass `limit`.
    mutating func append(_ byte: UInt8, of bytes: [UInt8], limit: Int) -> Bool {
        guard count < limit else { return false }
        moveToBuffer(bytes)
        buffer.append(byte)
        count += 1
        return true
    }

    private mutating func moveToBuffer(_ bytes: [UInt8]) {
        if let run {
            buffer.append(contentsOf: bytes[run])
            self.run = nil
        }
    }

    /// The value as a String; the builder is empty again after.
    mutating func string(_ bytes: [UInt8]) -> String {
        defer { reset() }
        if let run { return String(decoding: bytes[run], as: UTF8.self) }
        return String(decoding: buffer, as: UTF8.self)
    }
}
