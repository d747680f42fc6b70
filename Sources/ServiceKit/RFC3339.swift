import Bus

/// Times clients send (notify's report and import times, favorites' visits), read strictly:
/// Foundation's formatter takes trailing garbage and out-of-range fields.
public enum RFC3339 {
    /// The most bytes a time may take.
    public static let maxBytes = 40

    /// Milliseconds since 1970 of `text`: `YYYY-MM-DD`, `T` (or `t` or a space), `HH:MM:SS`, an
    /// optional fraction (1 to 9 digits, kept to the millisecond), then `Z` (or `z`) or `±HH:MM`;
    /// every field in its range (the day in its month, a leap second 60 as the next second),
    /// nothing after it, at most `maxBytes`. `invalid_argument` naming `field` otherwise.
    public static func milliseconds(_ text: String, field: String) throws(ServiceError) -> Int64 {
        guard let ms = parse(Array(text.utf8)) else { throw ServiceError.invalid(field, "must be a time such as 2026-06-01T08:30:00.250Z") }
        return ms
    }

    private static func parse(_ b: [UInt8]) -> Int64? {
        guard b.count <= maxBytes, b.count >= 20 else { return nil }
        var i = 0
        func number(_ digits: Int) -> Int? {
            guard i + digits <= b.count else { return nil }
            var n = 0
            for _ in 0..<digits {
                guard (0x30...0x39).contains(b[i]) else { return nil }
                n = n * 10 + Int(b[i] - 0x30)
                i += 1
            }
            return n
        }
        func take(_ options: String) -> Bool {
            guard i < b.count, options.utf8.contains(b[i]) else { return false }
            i += 1
            return true
        }
        guard let year = number(4), year >= 1, take("-"), let month = number(2), (1...12).contains(month), take("-"),
            let day = number(2), take("Tt "), let hour = number(2), hour <= 23, take(":"), let minute = number(2), minute <= 59,
            take(":"), let second = number(2), second <= 60
        else { return nil }
        let leap = year % 4 == 0 && (year % 100 != 0 || year % 400 == 0)
        let days = [31, leap ? 29 : 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31][month - 1]
        guard (1...days).contains(day) else { return nil }
        var millis = 0
        if take(".") {
            let first = i
            while i < b.count, (0x30...0x39).contains(b[i]), i - first < 9 { i += 1 }
            guard i > first else { return nil }
            for (k, digit) in b[first..<min(i, first + 3)].enumerated() { millis += Int(digit - 0x30) * [100, 10, 1][k] }
        }
        var offset = 0
        if !take("Zz") {
            guard i < b.count, b[i] == UInt8(ascii: "+") || b[i] == UInt8(ascii: "-") else { return nil }
            let sign = b[i] == UInt8(ascii: "-") ? -1 : 1
            i += 1
            guard let oh = number(2), oh <= 23, take(":"), let om = number(2), om <= 59 else { return nil }
            offset = sign * (oh * 60 + om)
        }
        guard i == b.count else { return nil }
        // Days from 1970-01-01 to the date (the proleptic Gregorian calendar, by era of 400 years).
        let y = month <= 2 ? year - 1 : year
        let era = (y >= 0 ? y : y - 399) / 400
        let yoe = y - era * 400
        let doy = (153 * (month + (month > 2 ? -3 : 9)) + 2) / 5 + day - 1
        let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy
        let epochDays = era * 146_097 + doe - 719_468
        let seconds = Int64(epochDays) * 86_400 + Int64(hour * 3_600 + minute * 60 + second) - Int64(offset * 60)
        return seconds * 1_000 + Int64(millis)
    }
}
