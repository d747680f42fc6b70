/// Which OpenStreetMap tags make a place of which Tourbus category: an ordered list of rules,
/// the first that matches deciding.
///
/// The rules are text, one a line (`Protocols/osm-mapping.tsv` is the standard table, and
/// `standard()` is read from a copy of it that a test keeps equal): `key=value` or `key=*`, white
/// space, then a category id or `-` (leave the element out). `#` starts a comment line.
public struct OSMMapping: Sendable, Equatable {
    /// The most bytes a table may have.
    public static let maxBytes = 64 * 1024
    /// The most rules a table may have.
    public static let maxRules = 1000
    /// The most UTF-8 bytes of a key or a value (OpenStreetMap's limit is 255 characters).
    public static let maxTagBytes = 255
    /// The category ids a rule may name: the catalog's categories that places can have.
    public static let categories: Set<String> = [
        "restaurant", "cafe", "bar", "hotel", "hostel", "attraction", "museum", "park", "beach", "viewpoint",
        "shopping", "market", "theatre", "nightlife", "transport",
    ]

    /// One line of the table.
    public struct Rule: Sendable, Equatable {
        public var key: String
        /// nil for `key=*`: any value.
        public var value: String?
        /// nil for `-`: an element this rule matches is left out.
        public var category: String?
    }

    /// A table that cannot be read, with the 1-based line of the fault (0 for the whole table).
    public struct TableError: Error, Equatable, CustomStringConvertible {
        public var line: Int
        public var message: String

        public var description: String { line > 0 ? "osm mapping line \(line): \(message)" : "osm mapping: \(message)" }
    }

    /// The rules in the table's order.
    public let rules: [Rule]

    /// The standard table (`Protocols/osm-mapping.tsv`); a test keeps it readable.
    public static func standard() throws(TableError) -> OSMMapping {
        try OSMMapping(table: standardTable)
    }

    /// Reads a table (see the type's comment), bounded in bytes, rules and tag length.
    public init(table: String) throws(TableError) {
        let bytes = table.utf8.count
        guard bytes <= Self.maxBytes else { throw TableError(line: 0, message: "larger than \(Self.maxBytes) bytes (\(bytes))") }
        var rules: [Rule] = []
        var seen: Set<String> = []
        for (index, rawLine) in table.split(omittingEmptySubsequences: false, whereSeparator: { $0 == "\n" || $0 == "\r\n" }).enumerated() {
            let line = index + 1
            let fields = rawLine.split(whereSeparator: { $0 == " " || $0 == "\t" })
            if fields.isEmpty || fields[0].hasPrefix("#") { continue }
            guard fields.count == 2 else { throw TableError(line: line, message: "expected TAG CATEGORY, found \(fields.count) fields") }
            let tag = fields[0]
            let target = String(fields[1])
            guard let equals = tag.firstIndex(of: "=") else { throw TableError(line: line, message: "expected key=value or key=*") }
            let key = String(tag[..<equals])
            let value = String(tag[tag.index(after: equals)...])
            guard !key.isEmpty, !value.isEmpty else { throw TableError(line: line, message: "key and value must not be empty") }
            guard key.utf8.count <= Self.maxTagBytes, value.utf8.count <= Self.maxTagBytes else {
                throw TableError(line: line, message: "a key or value is longer than \(Self.maxTagBytes) bytes")
            }
            guard target == "-" || Self.categories.contains(target) else {
                throw TableError(line: line, message: "unknown category '\(target)'; known: \(Self.categories.sorted().joined(separator: ", ")), or -")
            }
            guard seen.insert(String(tag)).inserted else { throw TableError(line: line, message: "\(tag) is already mapped above") }
            guard rules.count < Self.maxRules else { throw TableError(line: line, message: "more than \(Self.maxRules) rules") }
            rules.append(Rule(key: key, value: value == "*" ? nil : value, category: target == "-" ? nil : target))
        }
        guard !rules.isEmpty else { throw TableError(line: 0, message: "no rules") }
        self.rules = rules
    }

    /// The category of an element with these tags: that of the first rule it matches, or nil when
    /// none matches or the first match is a `-` rule.
    public func category(for tags: [String: String]) -> String? {
        for rule in rules {
            guard let value = tags[rule.key] else { continue }
            if rule.value == nil || rule.value == value { return rule.category }
        }
        return nil
    }
}
