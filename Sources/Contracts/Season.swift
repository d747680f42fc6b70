import Bus
import Foundation

/// When a place is on (an event's dates): either a recurring range of days of the year,
/// `{"from":"12-28","to":"01-02"}` (`MM-DD`, running over New Year when `to` comes before
/// `from`), or a dated window, `{"from":"2027-04-09","to":"2027-04-20"}` (`YYYY-MM-DD`). Both
/// ends are inclusive and are days in the place's time zone.
///
/// `02-29` may end a recurring range: in a year without it, a range from `02-29` starts on
/// 1 March and one to `02-29` ends on 28 February (the days are compared as month and day,
/// and no day of such a year is 29 February).
public struct Season: Codable, Sendable, Equatable {
    public var from: String
    public var to: String

    public init(from: String, to: String) {
        self.from = from
        self.to = to
    }

    /// A day as a season writes it: `year` nil for a recurring `MM-DD`.
    public struct Day: Sendable, Equatable, Comparable {
        public var year: Int?
        public var month: Int
        public var day: Int

        public init(year: Int?, month: Int, day: Int) {
            self.year = year
            self.month = month
            self.day = day
        }

        /// `MM-DD` (any day of a leap year, so `02-29` too) or `YYYY-MM-DD` (a day of that year,
        /// years 1970 to 9999), or nil: `02-30`, `13-01`, `2027-02-29` and anything else.
        public init?(_ text: String) {
            // The length first: a long text is refused without being copied.
            guard text.utf8.count == 5 || text.utf8.count == 10 else { return nil }
            let b = Array(text.utf8)
            func digits(_ range: Range<Int>) -> Int? {
                var n = 0
                for i in range {
                    guard (0x30...0x39).contains(b[i]) else { return nil }
                    n = n * 10 + Int(b[i] - 0x30)
                }
                return n
            }
            let dash = UInt8(ascii: "-")
            let start: Int
            if b.count == 10 {
                guard b[4] == dash, let year = digits(0..<4), (1970...9999).contains(year) else { return nil }
                self.year = year
                start = 5
            } else {
                year = nil
                start = 0
            }
            guard b[start + 2] == dash, let month = digits(start..<start + 2), let day = digits(start + 3..<start + 5),
                (1...12).contains(month), day >= 1, day <= Self.days(in: month, of: year)
            else { return nil }
            self.month = month
            self.day = day
        }

        /// The days of `month` of `year` (of a leap year when `year` is nil).
        static func days(in month: Int, of year: Int?) -> Int {
            let leap = year.map { $0 % 4 == 0 && ($0 % 100 != 0 || $0 % 400 == 0) } ?? true
            return [31, leap ? 29 : 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31][month - 1]
        }

        public static func < (a: Day, b: Day) -> Bool {
            (a.year ?? 0, a.month, a.day) < (b.year ?? 0, b.month, b.day)
        }
    }

    /// Whether the season holds the day `year`-`month`-`day` (as it is in the place's zone).
    /// A season whose ends do not read (which the catalog never stores) holds no day.
    public func contains(year: Int, month: Int, day: Int) -> Bool {
        guard let start = Day(from), let end = Day(to), (start.year == nil) == (end.year == nil) else { return false }
        if start.year != nil {
            let today = Day(year: year, month: month, day: day)
            return start <= today && today <= end
        }
        let today = Day(year: nil, month: month, day: day)
        // A range that runs over New Year holds the days from its start and those up to its end.
        return start <= end ? (start <= today && today <= end) : (today >= start || today <= end)
    }

    /// Whether any of `seasons` holds the instant `milliseconds` (since 1970) in `zone`.
    public static func any(_ seasons: [Season], at milliseconds: Int64, in zone: TimeZone) -> Bool {
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = zone
        let parts = calendar.dateComponents([.year, .month, .day], from: Date(timeIntervalSince1970: Double(milliseconds) / 1000))
        guard let year = parts.year, let month = parts.month, let day = parts.day else { return false }
        return seasons.contains { $0.contains(year: year, month: month, day: day) }
    }
}
