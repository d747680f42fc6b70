/// OpenStreetMap's `opening_hours` tag in its common forms, turned into weekly opening periods.
///
/// Only a small, unambiguous part of the opening_hours specification is read: weekdays and
/// weekday ranges (`Mo-Fr`, `Sa-Mo` wraps), day lists (`Mo,We`), time ranges (`09:00-17:00`,
/// `9:00-17:00`, `22:00-02:00` past midnight, up to `24:00`), several ranges (`10:00-12:00,13:00-18:00`),
/// `off`/`closed`, `24/7`, rules separated by `;` (a later rule replaces the hours of the days it
/// names) or by `,` before a weekday (an additional rule: it adds hours). Anything else — public
/// holidays (`PH`), months and dates, week numbers, sunrise/sunset, open ends (`16:00+`), comments
/// (`"by appointment"`), fallback rules (`||`) — is never guessed: the result says to keep the text.
public enum OpeningHours {
    /// The most UTF-8 bytes read: OpenStreetMap's own limit for a tag value is 255 characters,
    /// at most 4 bytes each.
    public static let maxBytes = 1024
    /// The most periods a result holds (the catalog's bound on `opening_hours`).
    public static let maxPeriods = 50

    /// One opening period in a week, as the catalog stores it: ISO weekday 1 (Monday) to 7,
    /// `open` `HH:MM` from 00:00 to 23:59, `close` `HH:MM` from 00:00 to 24:00; a close earlier
    /// than the open runs past midnight into the next day.
    public struct Period: Equatable, Hashable, Sendable, Codable {
        public var day: Int
        public var open: String
        public var close: String

        public init(day: Int, open: String, close: String) {
            self.day = day
            self.open = open
            self.close = close
        }
    }

    /// Why a value was not turned into periods.
    public enum Unsupported: Error, Equatable, Sendable, CustomStringConvertible {
        /// More than `maxBytes` UTF-8 bytes.
        case tooLong(bytes: Int)
        /// Nothing but white space.
        case empty
        /// More than `maxPeriods` periods would result.
        case tooManyPeriods(Int)
        /// A word or sign outside the supported forms (`PH`, `Jun`, `sunrise`, `"`, `||`, `2017` …).
        case unsupported(String)
        /// The supported words in an order that does not read (`Mo-`, `10:00-`, `25:00`, a missing `;`).
        case syntax(String)

        public var description: String {
            switch self {
            case .tooLong(let bytes): "longer than \(OpeningHours.maxBytes) bytes (\(bytes))"
            case .empty: "empty"
            case .tooManyPeriods(let count): "more than \(OpeningHours.maxPeriods) periods (\(count))"
            case .unsupported(let word): "unsupported: \(word)"
            case .syntax(let message): "syntax: \(message)"
            }
        }
    }

    /// What `parse` made of a value: weekly periods (empty for `off`: closed every day), or the
    /// reason to keep the original text as it is.
    public enum Result: Equatable, Sendable {
        case periods([Period])
        case keptAsText(Unsupported)
    }

    /// Reads `text` (see the type's comment for the forms understood).
    public static func parse(_ text: String) -> Result {
        let bytes = Array(text.utf8)
        guard bytes.count <= maxBytes else { return .keptAsText(.tooLong(bytes: bytes.count)) }
        do {
            var parser = Parser(tokens: try tokenize(bytes))
            let week = try parser.schedule()
            var periods: [Period] = []
            for (index, ranges) in week.enumerated() {
                for range in ranges {
                    periods.append(Period(day: index + 1, open: hhmm(range.open), close: hhmm(range.close)))
                }
            }
            guard periods.count <= maxPeriods else { return .keptAsText(.tooManyPeriods(periods.count)) }
            return .periods(periods)
        } catch {
            return .keptAsText(error)
        }
    }

    /// `HH:MM` of minutes since midnight (0 … 1440).
    static func hhmm(_ minutes: Int) -> String {
        let h = minutes / 60
        let m = minutes % 60
        return (h < 10 ? "0" : "") + String(h) + ":" + (m < 10 ? "0" : "") + String(m)
    }

    /// A word of an opening_hours value.
    enum Token: Equatable {
        /// ISO weekday 1 … 7.
        case day(Int)
        /// Minutes since midnight, 0 … 1440.
        case time(Int)
        case dash, comma, semicolon, off, allWeek
    }

    static let dayNames: [String: Int] = ["Mo": 1, "Tu": 2, "We": 3, "Th": 4, "Fr": 5, "Sa": 6, "Su": 7]

    /// Splits a value into tokens, refusing any word or sign outside the supported forms.
    static func tokenize(_ bytes: [UInt8]) throws(Unsupported) -> [Token] {
        var tokens: [Token] = []
        var i = 0
        func isDigit(_ b: UInt8) -> Bool { b >= 0x30 && b <= 0x39 }
        func isLetter(_ b: UInt8) -> Bool { (b | 0x20) >= 0x61 && (b | 0x20) <= 0x7A }
        while i < bytes.count {
            let b = bytes[i]
            switch b {
            case 0x20, 0x09: i += 1
            case 0x2D:
                tokens.append(.dash)
                i += 1
            case 0x2C:
                tokens.append(.comma)
                i += 1
            case 0x3B:
                tokens.append(.semicolon)
                i += 1
            case _ where isLetter(b):
                var j = i
                while j < bytes.count, isLetter(bytes[j]) { j += 1 }
                let word = String(decoding: bytes[i..<j], as: UTF8.self)
                if let day = dayNames[word] {
                    tokens.append(.day(day))
                } else if word == "off" || word == "closed" {
                    tokens.append(.off)
                } else {
                    throw .unsupported(word)
                }
                i = j
            case _ where isDigit(b):
                var j = i
                while j < bytes.count, isDigit(bytes[j]) { j += 1 }
                let hours = bytes[i..<j]
                if hours.elementsEqual("24".utf8), j + 1 < bytes.count, bytes[j] == 0x2F, bytes[j + 1] == 0x37 {
                    // "24/7", unless more digits follow ("24/70").
                    guard j + 2 >= bytes.count || !isDigit(bytes[j + 2]) else { throw .syntax("24/7 followed by digits") }
                    tokens.append(.allWeek)
                    i = j + 2
                    continue
                }
                guard hours.count <= 2, j < bytes.count, bytes[j] == 0x3A else {
                    throw .unsupported(String(decoding: bytes[i..<min(j + 1, bytes.count)], as: UTF8.self))
                }
                let minutesStart = j + 1
                var k = minutesStart
                while k < bytes.count, isDigit(bytes[k]) { k += 1 }
                guard k - minutesStart == 2 else { throw .syntax("minutes must be two digits") }
                let h = Int(hours.reduce(0) { $0 * 10 + Int($1 - 0x30) })
                let m = Int(bytes[minutesStart] - 0x30) * 10 + Int(bytes[minutesStart + 1] - 0x30)
                guard m < 60, h < 24 || (h == 24 && m == 0) else {
                    throw .syntax("time \(String(decoding: bytes[i..<k], as: UTF8.self)) is past 24:00")
                }
                tokens.append(.time(h * 60 + m))
                i = k
            default:
                // Quotes (comments), "|" (fallback rules), "+" (open end), "[", "/", ":" and every other sign.
                var j = i + 1
                while j < bytes.count, bytes[j] & 0xC0 == 0x80 { j += 1 }
                throw .unsupported(String(decoding: bytes[i..<j], as: UTF8.self))
            }
        }
        return tokens
    }

    /// A time range of one day, in minutes since midnight; `close` below `open` runs past midnight.
    struct Range: Equatable {
        var open: Int
        var close: Int
    }

    /// Reads rules from tokens into seven days of ranges, Monday first.
    struct Parser {
        let tokens: [Token]
        var position = 0

        init(tokens: [Token]) { self.tokens = tokens }

        var next: Token? { position < tokens.count ? tokens[position] : nil }

        mutating func take() -> Token? {
            defer { position += 1 }
            return next
        }

        /// The whole value: rules separated by `;` (replacing) or `,` (adding, before a weekday).
        mutating func schedule() throws(Unsupported) -> [[Range]] {
            var week = [[Range]](repeating: [], count: 7)
            var additional = false
            var rules = 0
            while true {
                // Empty rules (";;", a trailing ";") say nothing.
                while next == .semicolon { position += 1 }
                guard next != nil else { break }
                try rule(into: &week, additional: additional)
                rules += 1
                switch take() {
                case nil: return week
                case .semicolon: additional = false
                case .comma: additional = true  // rule() leaves a comma here only before a weekday
                default: throw .syntax("expected ; between rules")
                }
            }
            guard rules > 0 else { throw .empty }
            return week
        }

        /// One rule: optional weekdays, then `off`, `24/7` or time ranges.
        mutating func rule(into week: inout [[Range]], additional: Bool) throws(Unsupported) {
            var days: [Int] = []
            if case .day = next {
                days = try daySelector()
            }
            let explicitDays = !days.isEmpty
            if !explicitDays { days = Array(1...7) }
            var ranges: [Range] = []
            switch take() {
            case .off:
                break
            case .allWeek where !explicitDays:
                ranges = [Range(open: 0, close: 24 * 60)]
            case .time(let open):
                ranges.append(try range(from: open))
                // More ranges after commas; a comma before a weekday ends the rule instead.
                while next == .comma, position + 1 < tokens.count, case .time(let start) = tokens[position + 1] {
                    position += 2
                    ranges.append(try range(from: start))
                }
            default:
                throw .syntax("expected a time range, off or 24/7")
            }
            if next == .comma {
                guard position + 1 < tokens.count, case .day = tokens[position + 1] else { throw .syntax("a comma must be followed by a time or a weekday") }
            }
            for day in days {
                if !additional || ranges.isEmpty { week[day - 1] = [] }
                for r in ranges where !week[day - 1].contains(r) { week[day - 1].append(r) }
            }
        }

        /// `open-close` after its open time has been taken.
        mutating func range(from open: Int) throws(Unsupported) -> Range {
            guard open < 24 * 60 else { throw .syntax("a range cannot open at 24:00") }
            guard take() == .dash, case .time(let close) = take() else { throw .syntax("expected HH:MM-HH:MM") }
            guard close != open else { throw .syntax("a range must not close when it opens") }
            return Range(open: open, close: close)
        }

        /// `Mo`, `Mo-Fr`, `Sa-Mo` (wrapping), and lists of these separated by commas.
        mutating func daySelector() throws(Unsupported) -> [Int] {
            var days: [Int] = []
            while true {
                guard case .day(let first) = take() else { throw .syntax("expected a weekday") }
                var last = first
                if next == .dash {
                    position += 1
                    guard case .day(let end) = take() else { throw .syntax("expected a weekday after -") }
                    last = end
                }
                // From first to last, wrapping after Sunday: at most the seven days.
                var day = first
                for _ in 0..<7 {
                    if !days.contains(day) { days.append(day) }
                    if day == last { break }
                    day = day % 7 + 1
                }
                guard next == .comma, position + 1 < tokens.count, case .day = tokens[position + 1] else { return days }
                position += 1
            }
        }
    }
}
