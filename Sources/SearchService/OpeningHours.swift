import Bus
import Contracts
import Foundation

/// Whether a place is open at a moment, from its weekly periods in its own time zone.
enum OpeningHours {
    /// Open at `date`: a period of today contains the local time, or one of yesterday runs past
    /// midnight into it. A place without hours or time zone is never open (it cannot be said).
    static func isOpen(hoursJSON: String?, timezone: String?, at date: Date) -> Bool {
        guard let hoursJSON, let timezone, let zone = TimeZone(identifier: timezone),
            let periods = try? JSONCoding.decoder.decode([OpeningPeriod].self, from: Data(hoursJSON.utf8)), !periods.isEmpty
        else { return false }
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = zone
        let parts = calendar.dateComponents([.weekday, .hour, .minute], from: date)
        // Calendar weekdays run Sunday = 1 … Saturday = 7; the catalog's run Monday = 1 … Sunday = 7.
        let today = ((parts.weekday ?? 1) + 5) % 7 + 1
        let yesterday = today == 1 ? 7 : today - 1
        let now = (parts.hour ?? 0) * 60 + (parts.minute ?? 0)
        return periods.contains { period in
            guard let open = OpeningPeriod.minutes(period.open), let close = OpeningPeriod.minutes(period.close) else { return false }
            if close > open { return period.day == today && now >= open && now < close }
            // Closes after midnight (or at 00:00 the next day).
            return (period.day == today && now >= open) || (period.day == yesterday && now < close)
        }
    }
}
